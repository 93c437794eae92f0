"""The cost model's shape path (issue 72): operators that state their GEMM's `rows` take
their efficiency from it, the calibration holds against the published training runs
vendored in data/calibration/, and the batch path (DiviML's calibration) is unchanged."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from partdsl import parse
from partdsl.core.errors import PartError
from partdsl.dsl.printer import to_part
from partdsl.generators.layer_calibration import layer_cost
from partdsl.importers.cost_model import profile
from partdsl.importers.graph_formats import graph_from_json, graph_to_json
from partdsl.importers.onnx_import import import_onnx
from partdsl.importers.torch_export import import_torch_export

from tests.support import EXAMPLES, run_part

ROOT = Path(__file__).resolve().parents[2]
RUNS = json.loads((ROOT / "data" / "calibration" / "published_llm_runs.json").read_text())["runs"]
TOLERANCE = 0.25  # the goal: every row within 25% of the measurement beside it


@pytest.mark.parametrize("run", RUNS, ids=lambda r: r["run"])
def test_a_published_run_s_utilisation_is_predicted_within_25_percent(run: dict) -> None:
    c = layer_cost(run["profile"], run["hidden"], run["heads"], run["seq"], run["dtype"])
    assert abs(c.utilisation / run["measured"] - 1) <= TOLERANCE, (c, run["measured"])
    # the layer's time is its FLOPs at that utilisation: the two columns of the table agree
    assert c.ms == pytest.approx(c.flops / (c.utilisation * profile(run["profile"]).peak(run["dtype"])) * 1e3)


def test_a_llama_8b_shaped_layer_costs_what_published_utilisation_implies() -> None:
    """The issue's first finding: 103.6 ms on an A100 and 44.9 ms on an H100 for a layer that
    published runs put near 13 ms and 5.5 ms (36-52% of peak on A100s; 41-47% on H100s, from
    2B to 462B parameters)."""
    a100 = layer_cost("a100", 4096, 32, 4096)
    h100 = layer_cost("h100_sxm", 4096, 32, 4096)
    assert 0.36 * 0.75 <= a100.utilisation <= 0.52 * 1.25 and a100.ms < 20
    assert 0.41 * 0.75 <= h100.utilisation <= 0.47 * 1.25 and h100.ms < 8


def test_efficiency_follows_the_rows_and_the_batch_path_is_unchanged() -> None:
    a100 = profile("a100")
    per_row = [a100.time_ms(2e9 * r, 0.0, 0.0, 1, "bf16", float(r)) / r for r in (16, 256, 4096)]
    assert per_row[0] > per_row[1] > per_row[2]  # a taller GEMM runs nearer its sustained rate
    assert a100.time_ms(2e9 * 256, 0.0, 0.0, 4, "bf16", 256.0) == pytest.approx(
        a100.time_ms(2e9 * 1024, 0.0, 0.0, 1, "bf16", 1024.0), rel=1e-9)  # rows x micro-batch is what counts
    # a GEMM of one row (a decode step, a classifier at batch 1) is never costed below the batch model's rate
    assert a100.time_ms(2e9, 0.0, 0.0, 1, "bf16", 1.0) == pytest.approx(a100.time_ms(2e9, 0.0, 0.0, 1, "bf16"))
    # without rows: the batch model, t = overhead + flops (b + batch_half) / (peak efficiency)
    t = a100.time_ms(1e12, 0.0, 0.0, 2)
    compute = 1e12 * (2 + a100.batch_half) / (a100.peak_flops * a100.efficiency)
    assert t == pytest.approx((a100.overhead + compute) * 1e3)


def test_rows_in_the_language_the_printer_and_json() -> None:
    text = """graph g { node a { flops 2 GFLOP; rows 4096; out 1 MB; dtype bf16 }  node b { flops 1 GFLOP }  a -> b }
platform { device gpu[1] { profile a100 } }
minimize latency
"""
    spec = parse(text)
    a = spec.graph.nodes[0]
    assert a.rows == 4096 and spec.graph.nodes[1].rows is None
    assert spec.dense.work[0, 0] == pytest.approx(profile("a100").time_ms(2e9, 0.0, 1e6, 1, "bf16", 4096.0))
    assert parse(to_part(spec)).graph.nodes[0].rows == 4096
    assert graph_from_json(graph_to_json(spec.graph), "g").nodes[0].rows == 4096
    with pytest.raises(PartError) as e:
        parse(text.replace("rows 4096", "rows 4 KB"))
    assert "rows needs a number" in e.value.message and e.value.span.column == 40  # under the quantity
    with pytest.raises(PartError, match="rows must be positive"):
        parse(text.replace("rows 4096", "rows 0"))


def test_importers_give_matrix_products_their_rows_and_leave_a_cnn_s_batch_path() -> None:
    llama = import_torch_export(EXAMPLES / "llama_tiny.pt2", "llama")
    linear = [nd for nd in llama.nodes if nd.name.startswith("linear")]
    assert linear and all(nd.rows == 16 for nd in linear)  # 16 tokens, batch 1
    norms = [nd for nd in llama.nodes if nd.name.startswith(("mul", "rsqrt"))]
    assert norms and all(nd.rows is not None for nd in norms)  # no convolution: element-wise ops by their rows
    onnx_llama = {nd.name: nd for nd in import_onnx(EXAMPLES / "llama_tiny.onnx", "l").nodes}
    assert onnx_llama["node_linear"].rows == 16 and onnx_llama["node_rsqrt"].rows == 16
    mixed = import_onnx(EXAMPLES / "cnn_transformer.onnx", "c").nodes  # a convolution stem, then attention
    assert all(nd.rows is None for nd in mixed)  # costed by the batch throughout, as DiviML's calibration has it


def test_the_docs_table_is_what_the_cost_model_gives_today() -> None:
    """docs/cost_model.md's calibration table, row by row, against layer_cost: a change to the
    profiles or the shape model that leaves the table stale fails here."""
    lines = (ROOT / "docs" / "cost_model.md").read_text().splitlines()
    rows = {ln.split(" | ")[0].lstrip("| "): ln.split(" | ") for ln in lines if ln.startswith("| ") and "%" in ln}
    for run in RUNS:
        cells = rows[run["run"]]
        c = layer_cost(run["profile"], run["hidden"], run["heads"], run["seq"], run["dtype"])
        assert cells[3] == f"{c.ms:.2f}" and cells[4] == f"{100 * c.utilisation:.1f}%", run["run"]
        assert cells[5] == f"{100 * run['measured']:.1f}%"


def test_check_says_how_far_each_cost_was_checked() -> None:
    from partdsl.cli.report import cost_provenance

    text = """graph g { node a { flops 2 GFLOP; rows 4096 }  node b { flops 1 GFLOP }  node c { work 1 ms }
  a -> b -> c }
platform { device gpu[1] { profile a100 }  device l4[1] { profile l4 } }
minimize latency
"""
    said = cost_provenance(parse(text))
    assert "gpu (a100): 1 operator by shape (calibrated against published training runs), 1 operator by batch " \
           "(calibrated to DiviML Table II)" in said
    assert "l4 (l4): 1 operator by shape (not calibrated), 1 operator by batch (not calibrated)" in said
    assert said.startswith("1 operator's times as written (where measured not said")  # c
    bare = text.replace("{ profile a100 }", "{ }").replace("{ profile l4 }", "{ }")
    bare = bare.replace("flops 2 GFLOP; rows 4096", "work 1 ms").replace("flops 1 GFLOP", "work 2 ms")
    assert cost_provenance(parse(bare)).startswith("3 operators' times as written")
    assert "cost model" not in cost_provenance(parse(bare))
    measured = bare.replace("graph g {", 'graph g measured "by hand on a stopwatch" {')
    assert cost_provenance(parse(measured)) == "3 operators' times measured by hand on a stopwatch"


def test_convert_warns_once_per_class_whose_model_was_never_checked(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from partdsl.cli.report import uncalibrated

    text = """graph g { node a { flops 2 GFLOP; rows 4096 }  node b { flops 1 GFLOP }  node c { work 1 ms }
  a -> b -> c }
platform { device gpu[1] { profile a100 }  device l4[2] { profile l4 }  device cpu[1] { profile xeon } }
minimize latency
"""
    said = uncalibrated(parse(text))
    assert said == ["device class 'l4' (profile l4): 1 operator by shape and 1 operator by batch costed by a model "
                    "not checked against measurements on this device (docs/cost_model.md); measure the layers with "
                    "`part profile`, or give their work",
                    "device class 'cpu' (profile xeon): 1 operator by shape costed by a model not checked against "
                    "measurements on this device (docs/cost_model.md); measure the layers with `part profile`, or "
                    "give their work"]
    spec = tmp_path / "g.part"
    spec.write_text(text)
    r = run_part("convert", str(spec), "-o", str(tmp_path / "out.part"))
    assert r.returncode == 0 and r.stderr.count("warning: device class") == 2, r.stderr

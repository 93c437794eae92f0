"""One record of what each device did (evaluator/device_record.py) behind the CLI's plan
table, the HTML report's plan table, the picture's legend and the Gantt chart, checked
against each other per objective (issue 76, item 1: a host CPU's row said 0 while the
Gantt showed it busy; devices running only pieces of split nodes said "nodes 0"); and
the pipeline's step and bubble against a simulation of the pipeline."""
from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from partdsl import parse_file, solve  # noqa: E402
from partdsl.cli.common import answer_of  # noqa: E402
from partdsl.cli.html_plan import plan_section  # noqa: E402
from partdsl.cli.report import evaluation_report  # noqa: E402
from partdsl.core.assignment import to_array  # noqa: E402
from partdsl.core.schedule import Piece, Schedule  # noqa: E402
from partdsl.evaluator.device_record import Pipeline, device_records  # noqa: E402
from partdsl.viz import figures  # noqa: E402

from tests.support import EXAMPLES  # noqa: E402

CASES = [("tiny.part", "dp"), ("latency.part", "latency_search"), ("rwnn_latency.part", "heft"),
         ("onnx_cnn.part", "heft"), ("diviml_batched.part", "heft")]


def _cli_counts(text: str, devices: tuple[str, ...]) -> dict[str, int]:
    rows = {ln.split()[0]: ln.split() for ln in text.splitlines() if ln.split() and ln.split()[0] in devices}
    return {name: int(cells[1]) for name, cells in rows.items()}


def _html_counts(doc: str, devices: tuple[str, ...]) -> dict[str, int]:
    out = {}
    for row in re.findall(r"<tr>(.*?)</tr>", doc):
        cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
        names = [c for c in cells if c in devices]
        if names:
            out[names[0]] = int(cells[cells.index(names[0]) + 1].replace(",", ""))
    return out


def _gantt_rows(ax) -> set[int]:  # type: ignore[no-untyped-def]
    """The rows of the Gantt with a bar of positive width."""
    return {round(p.get_y() + p.get_height() / 2) for p in ax.patches if p.get_width() > 0}


@pytest.mark.parametrize("example,method", CASES)
def test_the_tables_the_legend_and_the_gantt_agree(example: str, method: str) -> None:
    spec = parse_file(EXAMPLES / example)
    r = solve(spec, method=method, time_limit=5)
    assert r.evaluation is not None
    dev, bound = answer_of(spec, r)
    records = device_records(spec, r.evaluation, dev)
    names = spec.dense.devices
    want = {x.device: x.nodes for x in records}
    assert _cli_counts(evaluation_report(spec, r.evaluation, dev), names) == want
    assert _html_counts(plan_section(spec, r, dev), names) == want
    fig = figures.answer_figure(spec, r.evaluation, dev, r.evaluation.subgraph, bound)
    top, bottom = fig.axes[:2]
    legend = [t.get_text() for t in top.get_legend().get_texts()]
    assert {x.device for x in records if x.used} == {t.split(" (")[0] for t in legend if t.split(" (")[0] in names}
    if spec.objective.kind != "bottleneck":
        assert _gantt_rows(bottom) == {j for j, x in enumerate(records) if x.used}
    else:
        assert all((x.load > 0) == x.used for x in records)
    matplotlib.pyplot.close(fig)


def test_pieces_of_split_nodes_count_on_each_device_they_run_on() -> None:
    """A schedule that splits every node of onnx_cnn over two devices: both rows count
    every node, as the Gantt shows them both busy."""
    spec = parse_file(EXAMPLES / "onnx_cnn.part")
    d = spec.dense
    ops = [v for v in range(d.n) if spec.graph.nodes[v].tensor_of is None]
    gpu0, gpu1 = d.devices.index("gpu[0]"), d.devices.index("gpu[1]")
    B = spec.objective.batch
    half = tuple(range(B // 2)), tuple(range(B // 2, B))
    pieces = tuple(Piece(v, j, s) for v in d.topo.tolist() if v in set(ops) for j, s in ((gpu0, half[0]), (gpu1, half[1])))
    from partdsl.evaluator.schedule_eval import evaluate_schedule

    ev = evaluate_schedule(spec, Schedule(pieces, B))
    dev = ev.schedule.node_devices(d.n)
    recs = {x.device: x.nodes for x in device_records(spec, ev, dev)}
    assert recs["gpu[0]"] == recs["gpu[1]"] == len(ops) and recs["cpu[0]"] == 0
    assert _cli_counts(evaluation_report(spec, ev, dev), d.devices) == recs


def _simulated_step(times: list[float], m: int) -> float:
    """A flush pipeline, stage by stage: micro-batch i enters stage s when stage s-1 has
    passed it on and stage s has finished micro-batch i-1."""
    done = np.zeros(len(times))
    for _ in range(m):
        t = 0.0
        for s, w in enumerate(times):
            t = max(t, done[s]) + w
            done[s] = t
    return float(done[-1]) if len(times) else 0.0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.01, 100.0), min_size=1, max_size=8), st.integers(1, 40))
def test_the_step_and_the_bubble_are_those_of_the_pipeline(times: list[float], m: int) -> None:
    p = Pipeline(tuple(f"s{i}" for i in range(len(times))), tuple(times), m, flush=True)
    assert p.step_ms == pytest.approx(_simulated_step(times, m), rel=1e-9)
    busy = m * sum(times)
    assert p.bubble == pytest.approx(1 - busy / (len(times) * p.step_ms), abs=1e-12)
    if max(times) == min(times):  # equal stages: GPipe's (S - 1) / (m + S - 1)
        S = len(times)
        assert p.bubble == pytest.approx((S - 1) / (m + S - 1), abs=1e-9)


def test_the_report_counts_the_layers_of_an_imported_model() -> None:
    """llama_tiny lists each device's layers (embedding, model_layers_0..3, head), not 30
    operator names."""
    spec = parse_file(EXAMPLES / "llama_tiny.part")
    r = solve(spec, method="dp", time_limit=20)
    recs = device_records(spec, r.evaluation, to_array(spec, r.assignment))
    layers = [x.layers for x in recs if x.used]
    assert sum(len(x) for x in layers) <= 8 and any("model_layers" in y for x in layers for y in x)


def test_a_plan_that_sends_tensors_back_is_not_called_a_linear_pipeline() -> None:
    """tiny.part's optimum (acyclic) is a linear pipeline; blocks alternating between two
    GPUs send tensors back to an earlier stage, and the pipeline says how many."""
    from partdsl.evaluator.device_record import pipeline
    from partdsl.evaluator.evaluate import evaluate

    spec = parse_file(EXAMPLES / "tiny.part")
    r = solve(spec, method="dp")
    dev = to_array(spec, r.assignment)
    assert pipeline(spec, device_records(spec, r.evaluation, dev), dev).back_edges == 0
    d = spec.dense
    zigzag = dev.copy()
    blocks = [i for i, name in enumerate(d.names) if name.startswith("block[")]
    for k, v in enumerate(blocks):
        zigzag[v] = d.devices.index("gpu[0]" if k % 2 == 0 else "gpu[1]")
    ev = evaluate(spec, zigzag)
    p = pipeline(spec, device_records(spec, ev, zigzag), zigzag)
    assert p.back_edges == (len(blocks) - 1) // 2  # each gpu[1] -> gpu[0] hop between blocks


def test_the_rate_of_an_answer_without_a_finite_value_is_a_dash() -> None:
    """A throughput of 0 (nothing scheduled) or an empty pipeline gave a ZeroDivisionError
    or max() of nothing in the report's rate line."""
    import dataclasses
    import math

    from partdsl.cli.html_plan import _rate

    spec = parse_file(EXAMPLES / "diviml_batched.part")
    r = solve(spec, method="heft")
    assert _rate(spec, r, None).startswith(f"{r.objective:.4g} samples/s")
    for value in (0.0, math.inf):
        assert _rate(spec, dataclasses.replace(r, evaluation=None, objective=value), None) == "-"
    tiny = parse_file(EXAMPLES / "tiny.part")
    assert _rate(tiny, solve(tiny, method="dp"), Pipeline((), (), 4, flush=True)) == "-"

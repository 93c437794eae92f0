"""ONNX import and device profiles: a small CNN with branches and a transformer block,
written as ONNX here (examples/make_onnx_example.py's builders), imported, checked,
solved under all three objectives and plotted; FLOPs of the analytic model against hand
counts; the dynamic batch; fusion; profile overrides and their errors."""
from __future__ import annotations

import math
import sys

import numpy as np
import onnx
import pytest
from partdsl import parse, parse_file, solve
from partdsl.core.errors import PartError
from partdsl.importers.cost_model import profile
from partdsl.importers.onnx_import import import_onnx

from tests.support import EXAMPLES, ROOT, run_part

sys.path.insert(0, str(ROOT / "examples"))
import make_onnx_example as mk  # noqa: E402


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):  # type: ignore[no-untyped-def]
    path = tmp_path_factory.mktemp("onnx") / "cnn_transformer.onnx"
    onnx.save(mk.cnn_transformer(), str(path))
    return path


def _spec(path, objective: str, extra: str = "", fmt: str = "onnx") -> str:  # type: ignore[no-untyped-def]
    return f"""graph g = import "{path}" as {fmt}
platform {{
  device gpu[2] {{ profile a100 {extra} }}
  device cpu[1] {{ profile xeon }}
}}
{objective}
subject to {{ memory hard }}
"""


def test_import_counts_flops_bytes_and_params(model_path) -> None:  # type: ignore[no-untyped-def]
    g = import_onnx(model_path, "g")
    by = {nd.name: nd for nd in g.nodes}
    assert len(g.nodes) == 26  # every operator (the constants fold into their consumers)
    # stem: 3x3 conv, stride 2, 3 -> 32 channels on 32x32: output 32x16x16 per sample
    assert by["stem"].flops == 2 * 32 * 16 * 16 * 3 * 3 * 3
    assert by["stem"].out == 32 * 16 * 16 * 4 and by["stem"].params == 32 * 3 * 3 * 3 * 4
    assert by["branch3x3"].flops == 2 * 32 * 16 * 16 * 32 * 9
    assert by["branch1x1"].flops == 2 * 32 * 16 * 16 * 32
    # attention on 64 tokens of width 32: q = x Wq, scores = q k^T, attend = softmax v
    assert by["q"].flops == 2 * 64 * 32 * 32 and by["q"].params == 32 * 32 * 4
    assert by["scores"].flops == 2 * 64 * 64 * 32 and by["scores"].out == 64 * 64 * 4
    assert by["attend"].flops == 2 * 64 * 32 * 64
    assert by["mlp_up"].flops == 2 * 64 * 128 * 32
    assert by["softmax"].flops == 5 * 64 * 64
    assert by["to_tokens"].flops == 0 and [w.time for w in by["to_tokens"].work] == [0.0]  # a view: free
    names = {(g.nodes[a].name, g.nodes[b].name) for a, b in g.edges}
    assert {("stem_relu", "branch3x3"), ("stem_relu", "branch1x1"), ("branch3x3_relu", "merge"),
            ("branch1x1", "merge"), ("ln1", "q"), ("ln1", "k"), ("ln1", "v"), ("tokens", "residual1")} <= names


def test_the_batch_dimension_is_per_sample(tmp_path, model_path) -> None:  # type: ignore[no-untyped-def]
    fixed = tmp_path / "b1.onnx"
    onnx.save(mk.cnn_transformer(batch=1), str(fixed))
    a, b = import_onnx(model_path, "g"), import_onnx(fixed, "g")
    assert [(n.name, n.flops, n.out, n.params) for n in a.nodes] == [(n.name, n.flops, n.out, n.params) for n in b.nodes]


def test_fusion_merges_the_usual_chains(model_path) -> None:  # type: ignore[no-untyped-def]
    plain, fused = import_onnx(model_path, "g"), import_onnx(model_path, "g", fuse=True)
    assert len(fused.nodes) < len(plain.nodes)
    names = [n.name for n in fused.nodes]
    assert "stem_batchnormalization_relu" in names and "branch3x3_relu" in names
    assert math.isclose(sum(n.flops for n in fused.nodes), sum(n.flops for n in plain.nodes))
    assert math.isclose(sum(n.params for n in fused.nodes), sum(n.params for n in plain.nodes))


@pytest.mark.parametrize("objective", ["minimize bottleneck", "minimize latency", "minimize latency by tasks",
                                       "maximize throughput batch 8 split 2"])
def test_imported_models_solve_under_every_objective(model_path, objective: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    spec = parse(_spec(model_path, objective))
    assert spec.dense.n == 26 and np.isfinite(spec.dense.work).all()
    r = solve(spec, time_limit=3)
    assert r.evaluation is not None and r.evaluation.feasible, r.log
    f = tmp_path / "s.part"
    f.write_text(_spec(model_path, objective))
    p = run_part("plot", str(f), "-o", str(tmp_path / "p.png"), "--time-limit", "2")
    assert p.returncode == 0 and (tmp_path / "p.png").stat().st_size > 10_000, p.stderr


def test_profile_times_and_overrides(model_path) -> None:  # type: ignore[no-untyped-def]
    spec = parse(_spec(model_path, "minimize latency by tasks"))
    slow = parse(_spec(model_path, "minimize latency by tasks", "{ overhead 1 ms }"))
    a100 = profile("a100")
    d = spec.dense
    i = d.names.index("scores")
    nd = spec.graph.nodes[i]
    act = nd.out + sum(spec.graph.nodes[a].out for a, b in spec.graph.edges if b == i)
    assert nd.rows is None  # a model with convolutions: costed by the batch throughout (issue 72)
    assert d.work[i, 0] == pytest.approx(a100.time_ms(nd.flops, nd.params, act, 1, nd.dtype, nd.rows))
    assert slow.dense.work[i, 0] == pytest.approx(d.work[i, 0] - a100.overhead * 1e3 + 1.0)
    assert slow.dense.work[i, 1] == d.work[i, 1]  # the cpu keeps its own profile
    assert d.memory[0] == a100.memory and not d.host[0] and d.host[1]
    # an fp16 node runs at the fp16 peak
    fast = parse(_spec(model_path, "minimize latency by tasks").replace(
        'graph g = import', 'graph g = import').replace("profile a100 ", "profile a100 { peak_fp16 1 PFLOP/s } "))
    assert fast.dense.work[i, 0] == d.work[i, 0]  # fp32 nodes do not use it


def test_profiles_in_the_language_and_their_errors(tmp_path) -> None:  # type: ignore[no-untyped-def]
    base = """graph g { node a { flops 2 GFLOP; out 1 MB; dtype fp16 }  node b { flops 1 GFLOP; out 4 KB }  a -> b }
platform { device gpu[1] { PROFILE } device cpu[1] { profile xeon } }
minimize latency by tasks
"""
    s = parse(base.replace("PROFILE", "profile t4"))
    t4 = profile("t4")
    assert s.dense.work[0, 0] == pytest.approx(t4.time_ms(2e9, 0, 1e6, 1, "fp16"))
    assert s.dense.work[0, 0] < t4.time_ms(2e9, 0, 1e6, 1)  # fp16 is faster on a T4
    for bad, what in (("profile t5", "unknown device profile 't5'"),
                      ("profile t4 { overhed 1 ms }", "did you mean 'overhead'"),
                      ("profile t4 { peak 3 GB/s }", "needs a FLOP rate")):
        with pytest.raises(PartError) as e:
            parse(base.replace("PROFILE", bad))
        assert what in str(e.value) and e.value.span is not None
    with pytest.raises(PartError) as e:
        parse(base.replace("PROFILE", "profile t4").replace("dtype fp16", "dtype fp8"))
    assert "unknown dtype 'fp8'" in str(e.value)


def test_convert_and_bad_files(tmp_path, model_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "m.part"
    p = run_part("convert", str(model_path), "--fuse", "--objective", "throughput", "-o", str(out))
    assert p.returncode == 0, p.stderr
    spec = parse_file(out)
    assert spec.objective.kind == "throughput" and spec.dense.n == len(import_onnx(model_path, "g", fuse=True).nodes)
    assert solve(spec, time_limit=10).evaluation.feasible
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    f = tmp_path / "b.part"
    f.write_text(_spec(bad, "minimize latency by tasks"))
    p = run_part("check", str(f))
    assert p.returncode == 2 and "is not a valid ONNX model" in p.stderr and "^" in p.stderr


def test_the_bundled_onnx_example_is_the_script_output() -> None:
    """examples/cnn_transformer.onnx is what examples/make_onnx_example.py writes."""
    shipped = onnx.load(str(EXAMPLES / "cnn_transformer.onnx"))
    assert shipped.SerializeToString() == mk.cnn_transformer().SerializeToString()


def test_profiles_from_python() -> None:
    from partdsl.dsl.builder import GraphBuilder, SpecBuilder

    g = GraphBuilder("g").node("a", flops=2e9, out="1 MB").node("b", flops=1e9, out="4 KB", work={"cpu": "1 ms"})
    g.chain("a", "b")
    spec = (SpecBuilder(g).device("gpu", 2, profile="a100", profile_fields={"overhead": 2e-5})
            .device("cpu", 1, profile="xeon").minimize("latency").build())
    a100 = profile("a100", overhead=2e-5)
    assert spec.dense.work[0, 0] == pytest.approx(a100.time_ms(2e9, 0, 1e6, 1))
    assert spec.dense.work[1, 1] == 1.0  # an explicit work entry wins over the profile
    assert spec.dense.host[1] and solve(spec).evaluation.feasible
    with pytest.raises(PartError):
        SpecBuilder(g).device("gpu", 1, profile="a100", profile_fields={"overhed": 1.0})


def test_a_spec_importing_onnx_without_the_extra_exits_5_with_the_hint() -> None:
    """Issue 28, defect 7: a missing optional package is not a bug (exit 5, the pip extra)."""
    p = run_part("check", str(EXAMPLES / "onnx_cnn.part"), without="onnx")
    assert p.returncode == 5, p.stderr
    assert "internal error" not in p.stderr and "partdsl[onnx]" in p.stderr


def test_a_tied_embedding_is_one_shared_weight_held_once_per_device(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Issue 71.6: GPT-2's LM head reads the embedding's weight. The two readers `share`
    it: one copy on a device running both, one on each of two (it counted in each), and
    the spec written by `part convert` reads back with the same memory."""
    from onnx import TensorProto, helper, numpy_helper
    from partdsl.evaluator.evaluate import evaluate

    from tests.support.onnx_models import save

    vocab, hidden = 1024, 512  # 2 MiB of fp32
    wte = numpy_helper.from_array(np.ones((vocab, hidden), dtype=np.float32), "wte")
    path = save(tmp_path / "tied.onnx", [
        helper.make_node("Gather", ["wte", "ids"], ["x"], name="embed"),
        helper.make_node("Relu", ["x"], ["h"], name="layer"),
        helper.make_node("Transpose", ["wte"], ["wt"], name="head_t", perm=[1, 0]),
        helper.make_node("MatMul", ["h", "wt"], ["logits"], name="head")],
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, 8])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 8, vocab])], [wte])
    g = import_onnx(path, "g")
    size = vocab * hidden * 4
    assert {nd.name: nd.shares for nd in g.nodes if nd.shares} == {"embed": (("wte", size),), "head_t": (("wte", size),)}
    r = run_part("convert", str(path), "--devices", "a100=2", "--objective", "bottleneck", "-o", str(tmp_path / "t.part"))
    assert r.returncode == 0, r.stderr
    spec = parse_file(tmp_path / "t.part")
    names = [nd.name for nd in spec.graph.nodes]
    together = np.zeros(len(names), dtype=np.int64)
    apart = np.array([0 if n in ("embed", "layer") else 1 for n in names])
    assert evaluate(spec, together).parts["a100[0]"]["memory"] == size
    assert [evaluate(spec, apart).parts[f"a100[{k}]"]["memory"] for k in range(2)] == [size, size]


def test_reshapes_cost_nothing_where_transposes_copy() -> None:
    """Issue 72, item 3: Reshape, Squeeze and the like are views (no kernel), with their shape
    constant still held; Transpose, Slice and Concat copy in ONNX Runtime and keep their cost."""
    from partdsl.convert.to_part import onnx_to_part

    spec = parse(onnx_to_part(EXAMPLES / "llama_tiny.onnx", "bottleneck", devices={"a100": 2}))
    d, nodes = spec.dense, spec.graph.nodes
    reshapes = [i for i, nd in enumerate(nodes) if nd.name.startswith(("node_Reshape", "node_view"))]
    transposes = [i for i, nd in enumerate(nodes) if nd.name.startswith("node_transpose")]
    assert len(reshapes) >= 20 and (d.work[reshapes] == 0).all()
    assert all(nodes[i].params > 0 for i in reshapes)  # the shape tensor it reads
    assert transposes and (d.work[transposes, 0] >= profile("a100").overhead * 1e3).all()

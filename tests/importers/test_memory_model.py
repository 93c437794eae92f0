"""Memory per device for LLM plans (issue 31, item 4; importers/memory_model.py and the memory
fields of convert/layer_profile.py): the optimizer factor against ZeRO's count, a KV cache
for serving, tensor-parallel variants, and plans that change because of them."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
from partdsl.dsl.parser import parse_file
from partdsl.evaluator.evaluate import evaluate
from partdsl.importers.memory_model import factor, with_optimizer

from tests.support import EXAMPLES, run_part
from tests.support.files import PROFILE
from tests.support.files import convert_profile as convert


def test_the_factor_is_zeros_count() -> None:
    # Rajbhandari et al. sec. 3.1: mixed-precision Adam holds 2 + 2 + 12 = 16 bytes per parameter
    assert factor("adam", "bf16") * 2 == factor("adam", "fp16") * 2 == 16
    assert factor("adam", "fp32") * 4 == 4 + 4 + 8  # weights, gradients, m and v; no master copy
    assert factor("sgd", "bf16") * 2 == 2 + 2 + 4 and factor("momentum", "bf16") * 2 == 2 + 2 + 4 + 4
    assert factor("none", "bf16") == factor("none", None) == 1


def test_adam_scales_the_weights_and_moves_the_plan(tmp_path: Path) -> None:
    """Weights of 2 x 1.05 GB + 6 x 0.43 GB and 1.2 GB of stashed activations fit on one
    30 GB GPU; with Adam's 16 bytes per bf16 parameter (37.4 GB of weights and state) not."""
    doc = training(PROFILE)
    doc["devices"]["a100"]["memory_bytes"] = 30e9
    r, plain = convert(tmp_path, doc)
    assert r.returncode == 0, r.stderr
    adam = tmp_path / "adam.part"
    r = run_part("convert", str(tmp_path / "profile.json"), "--from", "layers", "--optimizer", "adam", "-o", str(adam))
    assert r.returncode == 0, r.stderr
    a, b = parse_file(plain), parse_file(adam)
    for x, y in zip(a.graph.nodes, b.graph.nodes):
        assert y.params == pytest.approx(x.params * (1 if x.backward else 8)), x.name
    one_a100 = np.full(a.dense.n, a.platform.devices.index("a100[0]"))
    assert evaluate(a, one_a100).feasible and not evaluate(b, one_a100).feasible
    r = run_part("solve", str(adam), "--json", "--time-limit", "10")
    assert r.returncode == 0, r.stderr
    placed = json.loads(r.stdout)["assignment"]
    dev = np.array([b.platform.devices.index(placed[nd.name]) for nd in b.graph.nodes])
    assert evaluate(b, dev).feasible and len(set(dev.tolist())) >= 2


def before_after(tmp_path: Path, example: str, *flags: str):  # type: ignore[no-untyped-def]
    """An example converted plainly and with `flags`, both parsed."""
    plain, flagged = tmp_path / "plain.part", tmp_path / "flagged.part"
    assert run_part("convert", str(EXAMPLES / example), "-o", str(plain)).returncode == 0
    r = run_part("convert", str(EXAMPLES / example), *flags, "-o", str(flagged))
    assert r.returncode == 0, r.stderr
    return parse_file(plain), parse_file(flagged)


def training(doc: dict) -> dict:
    """The profile with backward times (equal to the forward ones)."""
    doc = copy.deepcopy(doc)
    for layer in doc["layers"]:
        layer["backward_ms"] = layer["forward_ms"]
    return doc


@pytest.mark.slow  # a long solve (conftest.py: the tiers)
def test_an_onnx_import_counts_optimizer_state_by_its_dtype(tmp_path: Path) -> None:
    a, b = before_after(tmp_path, "llama_tiny.onnx", "--optimizer", "adam")
    weighted = [(x, y) for x, y in zip(a.graph.nodes, b.graph.nodes) if x.params]
    assert weighted and all(y.params == pytest.approx(x.params * factor("adam", x.dtype)) for x, y in weighted)
    assert with_optimizer(a, "none") is a


@pytest.mark.slow  # a long solve (conftest.py: the tiers)
def test_activations_stash_each_operators_output_under_1f1b(tmp_path: Path) -> None:
    """Issue 71.8: the stash is held once per micro-batch in flight (`training pipedream`),
    not added to the parameters as one micro-batch."""
    a, b = before_after(tmp_path, "llama_tiny.onnx", "--objective", "bottleneck", "--optimizer", "adam", "--activations")
    for x, y in zip(a.graph.nodes, b.graph.nodes):
        assert y.params == pytest.approx(x.params * factor("adam", x.dtype)), x.name
        assert y.stash == pytest.approx(x.out or 0), x.name
    assert b.objective.training == "pipedream" and b.dense.stashed is not None
    _, c = before_after(tmp_path, "llama_tiny.onnx", "--activations")  # latency: one micro-batch, held like params
    assert c.objective.kind == "latency" and c.dense.stashed is None
    assert c.dense.params == pytest.approx(a.dense.params + a.dense.out_bytes)
    r, out = convert(tmp_path, training(PROFILE), "--activations")
    assert r.returncode == 2 and "--activations is for forward graphs" in r.stderr, r.stderr


def test_a_kv_cache_is_spread_over_the_decoder_layers(tmp_path: Path) -> None:
    from partdsl.plans.units import units

    a, b = before_after(tmp_path, "llama_tiny.pt2", "--kv-cache", "4MB")
    u = units(b)
    added = b.dense.params - a.dense.params
    assert added.sum() == pytest.approx(4e6)
    per_layer = np.bincount(u.unit[u.unit >= 0], added[u.unit >= 0], minlength=u.tail + 1)
    assert per_layer[0] == per_layer[-1] == 0 and np.allclose(per_layer[1:-1], 1e6)  # 4 layers, 1 MB each


def test_a_serving_profile_holds_its_kv_cache(tmp_path: Path) -> None:
    doc = copy.deepcopy(PROFILE)
    for layer in doc["layers"][1:-1]:
        layer["kv_cache_bytes"] = 5e8
    r, out = convert(tmp_path, doc, "--objective", "latency")
    assert r.returncode == 0, r.stderr
    g = parse_file(out).graph
    assert g.nodes[g.index["layers_3"]].params == 4.3e8 + 5e8 and g.nodes[g.index["embed"]].params == 1.05e9


def tensor_parallel(doc: dict) -> dict:
    doc = copy.deepcopy(doc)
    for layer in doc["layers"]:
        half = {k: (v / 1.6 if not isinstance(v, dict) else {m: t / 1.6 for m, t in v.items()})
                for k, v in layer["forward_ms"].items()}
        layer["tensor_parallel"] = {"2": {"forward_ms": half, "params_bytes": layer["params_bytes"] / 2,
                                          "output_bytes": layer["output_bytes"]}}
    return doc


def test_a_tensor_parallel_variant_makes_ranks_of_two_gpus(tmp_path: Path) -> None:
    r, out = convert(tmp_path, tensor_parallel(PROFILE), "--tp", "2")
    assert r.returncode == 0, r.stderr
    spec = parse_file(out)
    assert {k.name: k.count for k in spec.platform.classes} == {"h100": 1, "a100": 1}
    layer = spec.graph.nodes[spec.graph.index["layers_0"]]
    assert layer.params == 4.3e8 / 2 and {(w.on, w.batch): w.time for w in layer.work}[("h100", 1)] == 5 / 1.6


@pytest.mark.parametrize("doc,args,says", [
    (PROFILE, ["--tp", "2"], "layers[0]: missing field 'tensor_parallel'"),
    (tensor_parallel(PROFILE), ["--tp", "4"], "layers[0].tensor_parallel: no variant for tp 4"),
    (dict(tensor_parallel(PROFILE), devices={"h100": {"count": 3}, "a100": {"count": 2}}), ["--tp", "2"],
     "devices.h100.count: 3 GPUs do not form groups of tp 2"),
    (dict(PROFILE, dtype="fp8"), [], "dtype: unknown dtype 'fp8'"),
    (PROFILE, ["--tp", "0"], "--tp 0: the tensor-parallel degree is a positive integer"),
], ids=["no-variant", "no-degree", "count", "dtype", "tp0"])
def test_memory_and_tp_mistakes(tmp_path: Path, doc: dict, args: list[str], says: str) -> None:
    r, out = convert(tmp_path, doc, *args)
    assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not out.exists()


def test_tp_is_refused_for_an_operator_graph(tmp_path: Path) -> None:
    r = run_part("convert", str(EXAMPLES / "llama_tiny.onnx"), "--tp", "2", "-o", str(tmp_path / "x.part"))
    assert r.returncode == 2 and "--tp goes with --from layers or metis, not onnx" in r.stderr, r.stderr


def test_metis_tp_files_make_ranks_of_tp_gpus(tmp_path: Path) -> None:
    from tests.support.files import metis_files

    folder = tmp_path / "gpt"
    metis_files(folder)
    out = tmp_path / "m.part"
    args = ["convert", str(folder), "--from", "metis", "--output-bytes", "16MB", "--tp", "2", "-o", str(out)]
    r = run_part(*args, "--devices", "A100=4,H100=2")
    assert r.returncode == 0, r.stderr
    spec = parse_file(out)
    assert {k.name: k.count for k in spec.platform.classes} == {"A100": 2, "H100": 1}
    assert {w.on: w.time for w in spec.graph.nodes[1].work} == {"A100": 10.0, "H100": 4.0}
    r = run_part(*args, "--devices", "A100=3,H100=2")
    assert r.returncode == 2 and "A100=3 is not a multiple of 2" in r.stderr, r.stderr


@pytest.mark.parametrize("args,says", [
    (["llama_tiny.onnx", "--to", "layers", "--optimizer", "adam"], "--to layers writes what a profiler measures"),
    (["llama_tiny.onnx", "--backward", "2"], "--backward goes with --to layers"),
    (["llama_tiny.onnx", "--to", "layers", "--backward", "-1"], "--backward -1.0: not a non-negative ratio"),
    (["tiny.part", "--to", "layers"], "no node of graph"),
    (["bert24_training.part", "--to", "layers"], "--to layers reads a forward graph"),
    (["llama_tiny.pt2", "--devices", "h100=4,b200=2"], "--devices: 'b200' is not a device profile"),
    (["llama_tiny.pt2", "--devices", "h100"], "'h100' is not TYPE=COUNT"),
    (["llama_tiny.pt2", "--kv-cache", "3ms"], "--kv-cache 3ms: not a size"),
    (["tiny.part", "--kv-cache", "1GB"], "no node of graph"),
], ids=["optimizer", "backward", "ratio", "no-layers", "training", "profile", "count", "kv-unit", "kv-no-layers"])
def test_profile_out_and_devices_mistakes(tmp_path: Path, args: list[str], says: str) -> None:
    out = tmp_path / "out"
    r = run_part("convert", str(EXAMPLES / args[0]), *args[1:], "-o", str(out))
    assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not out.exists()

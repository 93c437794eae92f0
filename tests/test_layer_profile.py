"""Per-layer profiles in (dsl/layer_profile.py, `part convert profile.json --from layers`):
the spec they give, the plan that comes out with the profile's module names, and every
mistake refused with the file and the field, exit 2, nothing written."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from conftest import run_part
from partdsl.dsl.parser import parse_file

PROFILE = {
    "format": "partdsl-layers", "version": 1, "model": "llama-8b",
    "devices": {"h100": {"count": 2, "memory_bytes": 80e9, "link_bytes_per_s": 50e9},
                "a100": {"count": 2, "memory_bytes": 40e9, "link_bytes_per_s": 25e9}},
    "layers": [{"name": "embed", "module": "model.embed_tokens", "forward_ms": {"h100": 0.4, "a100": 0.7},
                "params_bytes": 1.05e9, "output_bytes": 3.4e7}]
    + [{"name": f"layers.{i}", "module": f"model.layers.{i}", "forward_ms": {"h100": 5, "a100": {"1": 9, "4": 30}},
        "params_bytes": 4.3e8, "activation_bytes": 2e8, "output_bytes": 3.4e7} for i in range(6)]
    + [{"name": "head", "module": "lm_head", "forward_ms": {"h100": 6, "a100": 11}, "params_bytes": 1.05e9,
        "output_bytes": 1e9}],
}


def convert(tmp_path: Path, doc: dict, *extra: str):  # type: ignore[no-untyped-def]
    src, out = tmp_path / "profile.json", tmp_path / "p.part"
    src.write_text(json.dumps(doc))
    return run_part("convert", str(src), "--from", "layers", "-o", str(out), *extra), out


def test_a_profile_becomes_a_chain_of_layers_on_its_devices(tmp_path: Path) -> None:
    r, out = convert(tmp_path, PROFILE)
    assert r.returncode == 0, r.stderr
    spec = parse_file(out)
    g = spec.graph
    assert [nd.name for nd in g.nodes] == ["embed"] + [f"layers_{i}" for i in range(6)] + ["head"]
    assert len(g.edges) == 7 and not g.is_training
    assert [k.name for k in spec.platform.classes] == ["h100", "a100"]
    layer = g.nodes[1]
    assert layer.module == "model.layers.0" and layer.params == 4.3e8  # forward only: activations not stashed
    assert {(w.on, w.batch): w.time for w in layer.work} == {("h100", 1): 5.0, ("a100", 1): 9.0, ("a100", 4): 30.0}


def test_backward_times_make_a_training_graph(tmp_path: Path) -> None:
    doc = copy.deepcopy(PROFILE)
    for layer in doc["layers"]:
        layer["backward_ms"] = {d: 2 * (t if not isinstance(t, dict) else t["1"]) for d, t in layer["forward_ms"].items()}
    r, out = convert(tmp_path, doc)
    assert r.returncode == 0, r.stderr
    spec = parse_file(out)
    g = spec.graph
    assert g.is_training and spec.constraints.colocate
    bw = g.nodes[g.index["layers_2_bw"]]
    assert bw.backward and bw.group == "layers_2" and {w.on: w.time for w in bw.work} == {"h100": 10, "a100": 18}
    assert g.nodes[g.index["layers_2"]].params == 4.3e8 + 2e8  # stashed activations count as its memory
    names = [nd.name for nd in g.nodes]
    edges = {(names[a], names[b]) for a, b in g.edges}
    assert ("head", "head_bw") in edges and ("layers_0_bw", "embed_bw") in edges


def test_a_profile_plans_with_its_module_names(tmp_path: Path) -> None:
    r, out = convert(tmp_path, PROFILE, "--group-by", "layer")  # one unit per layer, and `acyclic`: a pipeline
    assert r.returncode == 0, r.stderr
    plan = tmp_path / "plan.json"
    r = run_part("solve", str(out), "--json", "--time-limit", "5")
    assert r.returncode == 0, r.stderr
    plan.write_text(r.stdout)
    assert json.loads(r.stdout)["status"] == "optimal"
    r = run_part("export", str(out), "--plan", str(plan), "--format", "fqn", "--json")
    assert r.returncode == 0, r.stderr
    flat = [m for chunk in json.loads(r.stdout)["module_fqns_per_model_part"] for m in chunk]
    assert flat == ["model.embed_tokens"] + [f"model.layers.{i}" for i in range(6)] + ["lm_head"]


def broken(change) -> dict:  # type: ignore[no-untyped-def]
    doc = copy.deepcopy(PROFILE)
    change(doc)
    return doc


@pytest.mark.parametrize("doc,says", [
    (broken(lambda d: d["layers"][2].pop("output_bytes")), "layers[2]: missing field 'output_bytes'"),
    (broken(lambda d: d["layers"][3]["forward_ms"].update(h100=-1)), "layers[3].forward_ms.h100: -1 is not a non-negative"),
    (broken(lambda d: d["layers"][1]["forward_ms"].update(h200=1)), "unknown device type 'h200'"),
    (broken(lambda d: d["layers"][1]["forward_ms"]["a100"].update({"0": 1})), "micro-batch size '0'"),
    (broken(lambda d: d.update(version=2)), "version 2 is not 1"),
    (broken(lambda d: d.update(format="other")), "not a partdsl-layers file"),
    (broken(lambda d: d["devices"]["a100"].update(count=0)), "devices.a100.count: 0 is not a positive integer"),
    (broken(lambda d: d.update(layers=[])), "expected a list of layers"),
    (broken(lambda d: d["layers"][0].update(module=3)), "layers[0].module: 3 is not a module path"),
], ids=["missing", "negative", "device", "micro-batch", "version", "format", "count", "empty", "module"])
def test_mistakes_name_the_file_and_the_field(tmp_path: Path, doc: dict, says: str) -> None:
    r, out = convert(tmp_path, doc)
    assert r.returncode == 2, r.stderr
    assert says in r.stderr and "profile.json" in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()


def test_every_gpu_generation_has_a_cited_profile_and_mixes_in_one_platform() -> None:
    import numpy as np
    from partdsl.core.evaluate import evaluate
    from partdsl.dsl.cost_model import names
    from partdsl.dsl.parser import parse

    kinds = ["a100", "a100_80", "h100", "h200", "l4", "l40s", "v100", "mi250x", "mi300x"]
    assert set(kinds) <= set(names())
    devices = "\n".join(f"  device {k}[1] {{ profile {k} }}" for k in kinds)
    spec = parse(f"graph g {{\n  node a {{ flops 1 TFLOP; dtype bf16; out 1 MB }}\n}}\nplatform {{\n{devices}\n}}\n"
                 "minimize bottleneck\n")
    times = [evaluate(spec, np.array([i])).objective for i in range(len(kinds))]
    by = dict(zip(kinds, times))
    assert by["h200"] < by["h100"] < by["a100"] and by["mi300x"] < by["mi250x"]  # faster generations are faster
    assert [k.memory for k in spec.platform.classes][kinds.index("mi300x")] == 192e9

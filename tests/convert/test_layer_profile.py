"""Per-layer profiles in (convert/layer_profile.py, `part convert profile.json --from layers`):
the spec they give, the plan that comes out with the profile's module names, and every
mistake refused with the file and the field, exit 2, nothing written."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from partdsl.dsl.parser import parse_file

from tests.support import run_part
from tests.support.files import PROFILE, metis_files
from tests.support.files import convert_profile as convert


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


def test_where_the_times_were_measured_goes_into_the_graph_and_part_check_says_it(tmp_path: Path) -> None:
    doc = dict(PROFILE, measured={"by": "part profile", "device": "NVIDIA H100 80GB HBM3", "torch_device": "cuda",
                                  "torch": "2.13.0", "threads": 8, "tokens": 4096, "date": "2026-12-04T19:00:00+00:00"})
    r, out = convert(tmp_path, doc)
    assert r.returncode == 0, r.stderr
    where = ("by part profile on NVIDIA H100 80GB HBM3 (cuda, torch 2.13.0, 8 threads, 4096 tokens, "
             "2026-12-04T19:00:00+00:00)")
    assert parse_file(out).graph.measured == where
    said = run_part("check", str(out), "--table", "--json")
    assert said.returncode == 0, said.stderr
    table = json.loads(said.stdout)
    assert table["costs"] == f"8 operators' times measured {where}"
    assert {x["times"] for x in table["nodes"]} == {"measured"}
    r, out = convert(tmp_path, PROFILE)  # a profile that does not say where it was measured
    assert parse_file(out).graph.measured == ""
    assert "8 operators' times as written (where measured not said" in run_part("check", str(out)).stdout


def test_backward_times_make_a_training_graph(tmp_path: Path) -> None:
    r, out = convert(tmp_path, with_backward())
    assert r.returncode == 0, r.stderr
    spec = parse_file(out)
    g = spec.graph
    assert g.is_training and spec.constraints.colocate
    bw = g.nodes[g.index["layers_2_bw"]]
    assert bw.backward and bw.group == "layers_2" and {w.on: w.time for w in bw.work} == {"h100": 10, "a100": 18}
    layer = g.nodes[g.index["layers_2"]]
    assert layer.params == 4.3e8 and layer.stash == 2e8  # its weights, and the activations it stashes (issue 71.8:
    assert bw.params == 0 and spec.dense.stashed is not None  # held once per micro-batch in flight under 1F1B)
    names = [nd.name for nd in g.nodes]
    edges = {(names[a], names[b]) for a, b in g.edges}
    assert ("head", "head_bw") in edges and ("layers_0_bw", "embed_bw") in edges


def with_backward() -> dict:
    doc = copy.deepcopy(PROFILE)
    for layer in doc["layers"]:
        layer["backward_ms"] = {d: 2 * (t if not isinstance(t, dict) else t["1"]) for d, t in layer["forward_ms"].items()}
    return doc


@pytest.mark.parametrize("doc,args", [(PROFILE, ["--group-by", "layer"]), (PROFILE, []), (with_backward(), [])],
                         ids=["grouped", "as-is", "training"])
def test_a_profile_plans_with_its_module_names(tmp_path: Path, doc: dict, args: list[str]) -> None:
    """As converted, with or without `--group-by layer`, a bottleneck spec asks for `acyclic`
    (its stages a pipeline), so its optimal plan exports; before, one without the flag could
    put model.norm and lm_head out of pipeline order and export refused it."""
    r, out = convert(tmp_path, doc, *args)
    assert r.returncode == 0, r.stderr
    assert parse_file(out).constraints.acyclic
    plan = tmp_path / "plan.json"
    r = run_part("solve", str(out), "--json", "--time-limit", "5")
    assert r.returncode == 0, r.stderr
    plan.write_text(r.stdout)
    assert json.loads(r.stdout)["status"] == "optimal"
    r = run_part("export", str(out), "--plan", str(plan), "--format", "fqn", "--json")
    assert r.returncode == 0, r.stderr
    flat = [m for chunk in json.loads(r.stdout)["module_paths_per_model_part"] for m in chunk]
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
    from partdsl.dsl.parser import parse
    from partdsl.evaluator.evaluate import evaluate
    from partdsl.importers.cost_model import names

    kinds = ["a100", "a100_80", "h100", "h200", "l4", "l40s", "v100", "mi250x", "mi300x"]
    assert set(kinds) <= set(names())
    devices = "\n".join(f"  device {k}[1] {{ profile {k} }}" for k in kinds)
    spec = parse(f"graph g {{\n  node a {{ flops 1 TFLOP; dtype bf16; out 1 MB }}\n}}\nplatform {{\n{devices}\n}}\n"
                 "minimize bottleneck\n")
    times = [evaluate(spec, np.array([i])).objective for i in range(len(kinds))]
    by = dict(zip(kinds, times))
    assert by["h200"] < by["h100"] < by["a100"] and by["mi300x"] < by["mi250x"]  # faster generations are faster
    assert [k.memory for k in spec.platform.classes][kinds.index("mi300x")] == 192e9


def test_metis_profiles_plan_as_layers(tmp_path: Path) -> None:
    folder = tmp_path / "gpt"
    metis_files(folder)
    out = tmp_path / "m.part"
    r = run_part("convert", str(folder), "--from", "metis", "--devices", "A100=2,H100=2", "--output-bytes", "16MB",
                 "--group-by", "layer", "-o", str(out))
    assert r.returncode == 0, r.stderr
    spec = parse_file(out)
    g = spec.graph
    assert [nd.name for nd in g.nodes] == ["embedding"] + [f"layers_{i}" for i in range(6)] + ["post_process"]
    layer = g.nodes[1]
    assert {w.on: w.time for w in layer.work} == {"A100": 20.0, "H100": 8.0}
    assert layer.params == 1000 * 2**20 and layer.out == 16e6
    assert {k.name: k.count for k in spec.platform.classes} == {"A100": 2, "H100": 2}
    plan = tmp_path / "plan.json"
    r = run_part("solve", str(out), "--json", "--time-limit", "5")
    assert r.returncode == 0 and json.loads(r.stdout)["status"] == "optimal", r.stderr
    plan.write_text(r.stdout)
    r = run_part("export", str(out), "--plan", str(plan), "--format", "megatron", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["num_layers"] == 6


@pytest.mark.parametrize("args,says", [
    (["--devices", "A100=2", "--output-bytes", "1MB"], "the profiles are of A100, H100, the devices given A100"),
    (["--devices", "A100=2,H100=2", "--output-bytes", "1MB", "--tp", "4"], "no DeviceType.<GPU>_tp4_bs1.json"),
    (["--devices", "A100=2,H100=2"], "needs --devices and --output-bytes"),
    (["--devices", "A100=x", "--output-bytes", "1MB"], "'A100=x' is not TYPE=COUNT"),
    (["--devices", "A100=2,H100=2", "--output-bytes", "3ms"], "not a size"),
], ids=["devices", "tp", "output-bytes", "count", "unit"])
def test_metis_mistakes(tmp_path: Path, args: list[str], says: str) -> None:
    folder = tmp_path / "gpt"
    metis_files(folder)
    r = run_part("convert", str(folder), "--from", "metis", *args, "-o", str(tmp_path / "m.part"))
    assert r.returncode == 2 and says in r.stderr, r.stderr
    assert not (tmp_path / "m.part").exists()


def test_metis_files_that_disagree_or_lack_a_field(tmp_path: Path) -> None:
    from partdsl.core.errors import PartError
    from partdsl.importers.metis_profile import metis_layers

    folder = tmp_path / "gpt"
    metis_files(folder)
    path = folder / "DeviceType.H100_tp1_bs1.json"
    doc = json.loads(path.read_text())
    doc["execution_time"]["layer_compute_total_ms"].pop()
    path.write_text(json.dumps(doc))
    with pytest.raises(PartError, match="different numbers of layers"):
        metis_layers(folder, 1, 1, 1e6, {"A100": 1, "H100": 1})
    del doc["execution_memory"]
    path.write_text(json.dumps(doc))
    with pytest.raises(PartError, match="DeviceType.H100_tp1_bs1.json: missing field 'execution_memory.layer_memory_total_mb'"):
        metis_layers(folder, 1, 1, 1e6, {"A100": 1, "H100": 1})

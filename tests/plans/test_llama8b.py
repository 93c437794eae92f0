"""The end-to-end LLM example (issue 31, item 6; docs/plans.md): transformers' Llama 3 8B
shape as torch.export and ONNX programs (examples/llama8b.*, weights left out), converted
with Adam's memory and grouped by layer on four H100s and four A100s, planned for training
throughput and for serving latency, exported as Megatron's layout and torchtitan's module
lists; the plan is never worse than the splits users make today."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from partdsl.dsl.parser import parse_file
from partdsl.evaluator.evaluate import evaluate

from tests.support import EXAMPLES, run_part

DEVICES = "h100=4,a100=4"


def convert(tmp_path: Path, src: str, objective: str, *more: str) -> Path:
    out = tmp_path / f"{Path(src).stem}_{objective}{len(more)}.part"
    extra = ["--optimizer", "adam"] if objective == "bottleneck" else []
    r = run_part("convert", str(EXAMPLES / src), "--objective", objective, "--devices", DEVICES, *extra, *more,
                 "--group-by", "layer", "-o", str(out))
    assert r.returncode == 0, r.stderr
    return out


@pytest.mark.slow  # a long solve (conftest.py: the tiers)
def test_both_programs_are_the_same_8b_model(tmp_path: Path) -> None:
    pt2, onnx = (parse_file(convert(tmp_path, f"llama8b.{x}", "latency")) for x in ("pt2", "onnx"))
    for spec in (pt2, onnx):
        params = sum(nd.params for nd in spec.graph.nodes)
        assert params == pytest.approx(8.03e9 * 2, rel=1e-3)  # Llama 3 8B's parameters, bf16
        # a forward pass of 4,096 tokens: 2 FLOPs per parameter and token (bar the embedding's gather),
        # plus the attention's 4 s^2 h per layer
        flops = sum(nd.flops or 0 for nd in spec.graph.nodes)
        assert flops == pytest.approx(2 * (8.03e9 - 128256 * 4096) * 4096 + 32 * 4 * 4096**2 * 4096, rel=0.02)
        assert len({nd.group for nd in spec.graph.nodes}) == 34  # the embedding, 32 layers, norm and head
    assert [k.name for k in pt2.platform.classes] == ["h100", "a100"]


def never_worse(spec, assignment: dict) -> float:  # type: ignore[no-untyped-def]
    """The plan's objective by the evaluator, checked against uniform, vLLM's and DeepSpeed's
    `parameters` splits, each over the order of the GPUs that suits it best."""
    from partdsl.plans.baselines import BASELINES, best_ranks
    from partdsl.plans.units import units

    ours = evaluate(spec, np.array([spec.platform.devices.index(assignment[nd.name]) for nd in spec.graph.nodes]))
    assert ours.feasible
    u = units(spec)
    for kind in BASELINES:
        theirs = evaluate(spec, best_ranks(spec, u, kind)[1])
        assert not theirs.feasible or theirs.objective >= ours.objective - 1e-6, kind
    return ours.objective


def test_training_throughput_plan_is_proven_and_beats_todays_splits(tmp_path: Path) -> None:
    spec_path = convert(tmp_path, "llama8b.pt2", "bottleneck")
    r = run_part("solve", str(spec_path), "--time-limit", "30", "--json")
    assert r.returncode == 0, r.stderr
    answer = json.loads(r.stdout)
    assert answer["status"] == "optimal"
    plan = tmp_path / "plan.json"
    plan.write_text(r.stdout)
    spec = parse_file(spec_path)
    assert never_worse(spec, answer["assignment"]) == pytest.approx(answer["objective"])
    r = run_part("export", str(spec_path), "--plan", str(plan), "--format", "megatron", "--json")
    assert r.returncode == 0, r.stderr
    layout = json.loads(r.stdout)["pipeline_model_parallel_layout"]
    stages = layout.split("|")
    assert len(stages) == 8 and stages[0].startswith("E") and stages[-1].endswith("L")
    assert sum(int(s.split("*")[1].rstrip("L")) if "*" in s else s.count("t") for s in stages) == 32
    r = run_part("export", str(spec_path), "--plan", str(plan), "--format", "fqn", "--json")
    assert r.returncode == 0, r.stderr
    parts = json.loads(r.stdout)["module_paths_per_model_part"]
    assert parts[0][0] == "model.embed_tokens" and parts[-1][-2:] == ["model.norm", "lm_head"]


def test_serving_latency_plan_holds_its_certificate(tmp_path: Path) -> None:
    """Serving 64 sequences of 8,192 tokens: a KV cache of 64 GiB (2 x 8 heads x 128 x 2 B
    x 32 layers = 128 KiB per token) beside 16 GB of weights fits no single GPU."""
    plain = parse_file(convert(tmp_path, "llama8b.pt2", "latency"))
    spec_path = convert(tmp_path, "llama8b.pt2", "latency", "--kv-cache", "64GiB")
    spec = parse_file(spec_path)
    assert spec.dense.params.sum() == pytest.approx(plain.dense.params.sum() + 64 * 2**30)
    assert evaluate(plain, np.zeros(plain.dense.n, dtype=np.int64)).feasible  # the weights alone fit an H100
    assert not evaluate(spec, np.zeros(spec.dense.n, dtype=np.int64)).feasible  # with the cache they do not
    r = run_part("solve", str(spec_path), "--method", "fill", "--time-limit", "30", "--json")  # ends when all candidates are tried (8 s)
    assert r.returncode == 0, r.stderr
    answer = json.loads(r.stdout)
    dev = np.array([spec.platform.devices.index(answer["assignment"][nd.name]) for nd in spec.graph.nodes])
    ours = evaluate(spec, dev)
    assert ours.feasible and ours.objective == pytest.approx(answer["objective"])
    assert answer["bound"] <= answer["objective"] and len(set(dev.tolist())) >= 2


def test_its_layer_profile_sums_the_operators_and_plans_as_layers(tmp_path: Path) -> None:
    """`--to layers` writes the 8B's partdsl-layers profile (what a profiler would measure,
    estimated): per class, its layers' times add up to the operators'; it converts back
    with backward times and Adam's memory into a training spec whose plan exports."""
    profile = tmp_path / "llama8b_layers.json"
    r = run_part("convert", str(EXAMPLES / "llama8b.pt2"), "--devices", DEVICES, "--to", "layers",
                 "--backward", "2", "-o", str(profile))
    assert r.returncode == 0, r.stderr
    doc = json.loads(profile.read_text())
    names = [layer["name"] for layer in doc["layers"]]
    assert names[:3] == ["model.embed_tokens", "model.rotary_emb", "model.layers.0"]
    assert names[-3:] == ["model.layers.31", "model.norm", "lm_head"]
    ops = parse_file(convert(tmp_path, "llama8b.pt2", "latency"))
    for c, k in enumerate(ops.platform.classes):
        assert sum(layer["forward_ms"][k.name] for layer in doc["layers"]) == pytest.approx(ops.dense.work[:, c].sum())
    assert sum(layer["params_bytes"] for layer in doc["layers"]) == pytest.approx(ops.dense.params.sum())
    hidden = 4096 * 4096 * 2  # bf16 activations of 4,096 tokens
    assert doc["layers"][-3]["output_bytes"] == hidden  # after the last layer only the hidden state crosses
    assert all(layer["backward_ms"]["h100"] == 2 * layer["forward_ms"]["h100"] for layer in doc["layers"])
    spec = tmp_path / "train.part"
    r = run_part("convert", str(profile), "--from", "layers", "--optimizer", "adam", "--group-by", "layer",
                 "-o", str(spec))
    assert r.returncode == 0, r.stderr
    train = parse_file(spec)
    group = {nd.name: nd.group for nd in train.graph.nodes}
    assert all(group[nd.name] == group[nd.name[:-3]] for nd in train.graph.nodes if nd.backward)  # with its layer
    assert group["model_embed_tokens_bw"] == group["model_rotary_emb"] == "embedding"
    r = run_part("solve", str(spec), "--time-limit", "10", "--json", "-o", str(tmp_path / "plan.json"))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["status"] == "optimal"  # backward layers ride with their forward ones: the DP proves it
    plan = json.loads((tmp_path / "plan.json").read_text())["assignment"]
    never_worse(train, plan)
    in_flight_memory(train, plan)
    r = run_part("export", str(spec), "--plan", str(tmp_path / "plan.json"), "--format", "vllm", "--json")
    assert r.returncode == 0, r.stderr
    assert sum(map(int, json.loads(r.stdout)["VLLM_PP_LAYER_PARTITION"].split(","))) == 32


def in_flight_memory(spec, plan: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    """Issue 71.8: under 1F1B rank s of P holds its weights and P - s micro-batches of its
    layers' stashes (1.84 GB a layer), and the proven plan fits them; counted once, as
    before, the optimum put 98.4 GB on an 80 GB H100."""
    from partdsl.plans.stages import pipeline
    from partdsl.plans.units import units

    d = spec.dense
    dev = np.array([spec.platform.devices.index(plan[name]) for name in d.names])
    line = pipeline(spec, dev, units(spec))
    ev = evaluate(spec, dev)
    assert ev.feasible
    for s, rank in enumerate(line.ranks):
        k = spec.platform.devices.index(rank)
        on = dev == k
        held = d.params[on].sum() + (line.size - s) * d.stashed[on].sum()
        assert ev.parts[rank]["memory"] == pytest.approx(held, rel=1e-12)
        assert held <= d.memory[d.dev_class[k]]

"""Tarnawski et al.'s baselines against the authors' own code (msr-fiddle/dnn-partitioning,
`throughput-dp/dp.cpp` at b207b6a, built with g++ -O3): `dpl` is its `-linearize`, `pipedream`
its `-pipeDream`, an expert split scored as its `-expert`. The values it printed on every
bundled throughput input are in data/dnn-partitioning/reference/outputs.json
(benchmarks/reference_outputs.py writes them). Where the paper's Table 1 differs from the
code as shipped, ours gives the paper's value and the test says which and why."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from partdsl import PartError, evaluate, parse, parse_file, solve
from partdsl.convert.to_part import dnn_partitioning_to_part
from partdsl.core.ir import Spec
from partdsl.kernels.bottleneck.reference_chain import class_ids, reference_chain
from partdsl.runtime.files import read_assignment

from tests.support import DATA

REFERENCE = json.loads((DATA / "reference" / "outputs.json").read_text())["values"]
THROUGHPUT = sorted(k for k in REFERENCE if k.startswith("throughput"))
# dp.cpp's fillDccIdsWithBiconnectedComponent leaves out the edges out of these original node ids,
# chosen by the graph's node count (BERT-24: 32 or 64 nodes; GNMT: 96 or 192)
SHIPPED_SKIP = {"bert24": (4, 37), "gnmt": (2, 100, 40, 137, 46, 142)}
# Table 1's values where the shipped code prints another (see the test that uses them)
PUBLISHED = {("throughput/bert24_training", "pipedream"): 41.75, ("throughput/gnmt_training", "pipedream"): 107.35}


def _spec(tmp_path: Path, key: str, split: str = "contiguous") -> Spec:
    folder, stem = key.split("/")
    out = tmp_path / f"{stem}.part"
    out.write_text(dnn_partitioning_to_part(DATA / folder / f"{stem}.json", split=split, relative_to=tmp_path))
    return parse_file(out)


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-6 * max(1.0, abs(b))


def shipped_vertices(spec: Spec, ids: tuple[int, ...]) -> list[str]:
    """The node names of the contracted vertices the shipped code skips: it compares its list of
    original ids with the ids of the contracted graph, where a forward vertex is its colour
    class and a backward one the largest class + 1 + its class's rank. On inference files the
    two agree; on training files 37, 100 and 137 fall on other classes' backward vertices."""
    cls = class_ids(spec)
    classes = np.unique(cls)
    back = spec.dense.backward.astype(bool)
    names = []
    for x in ids:
        if x <= classes[-1]:
            hit = (cls == x) & ~back
        else:
            hit = (cls == classes[x - classes[-1] - 1]) & back
        names += [spec.dense.names[i] for i in np.flatnonzero(hit)]
    return names


@pytest.mark.slow  # the real workloads (conftest.py: the tiers)
@pytest.mark.parametrize("key", THROUGHPUT)
def test_dpl_pipedream_and_expert_are_the_references(tmp_path: Path, key: str) -> None:
    """The code's values on every throughput input: DPL (its line followed to its hash map's
    order of sources: GNMT inference gives its 33.03, where the paper prints 32.91), PipeDream
    with the vertices the code's list of inputs hits, and an expert split as it scores it."""
    spec = _spec(tmp_path, key)
    ref = REFERENCE[key]
    r = solve(spec, method="dpl")
    assert _close(r.objective, ref["dpl"]), ("dpl", r.objective, ref["dpl"])
    model = key.split("/")[1].split("_")[0]
    skip = shipped_vertices(spec, SHIPPED_SKIP[model]) if key.startswith("throughput/") and model in SHIPPED_SKIP else []
    r = solve(spec, method="pipedream", options={"ignore": ",".join(skip)} if skip else None)
    assert _close(r.objective, ref["pipedream"]), ("pipedream", r.objective, ref["pipedream"])
    if "expert" in ref:  # training files without their own split take the inference one (112.108, 213.654)
        ev = evaluate(spec, read_assignment(spec, DATA / "human-experts" / ref["expert_split"]))
        assert ev.feasible and abs(ev.objective - ref["expert"]) <= 1e-4 * ref["expert"]


@pytest.mark.slow  # the real workloads (conftest.py: the tiers)
@pytest.mark.parametrize("key", ["throughput/bert24_training", "throughput/gnmt_training"])
def test_pipedream_with_the_nodes_the_reference_names_gives_the_published_value(tmp_path: Path, key: str) -> None:
    """The shipped code's list names the input nodes and their gradients (BERT-24: node4 and
    node4grad = 37); skipping those gives Table 1's value (41.75, 107.35) where the code as
    shipped prints 187.91 and 294.90."""
    spec = _spec(tmp_path, key)
    names = ",".join(f"n{i}" for i in SHIPPED_SKIP[key.split("/")[1].split("_")[0]])
    r = solve(spec, method="pipedream", options={"ignore": names})
    assert round(r.objective, 2) == PUBLISHED[key, "pipedream"]
    assert REFERENCE[key]["pipedream"] > 1.7 * r.objective


DIAMOND = """
graph g {
  node a { work 4 ms on acc; out 1 MB }
  node b { work 4 ms on acc; out 1 MB }
  node c { work 4 ms on acc; out 1 MB }
  node d { work 4 ms on acc; out 1 MB }
  node e { work 4 ms on acc; out 1 MB }
  node z { work 0 ms on acc }
  a -> b -> d -> e
  a -> c -> d
  z -> a
}
platform { device acc[3] { link 1 GB/s } }
minimize bottleneck
subject to { contiguous }
"""


def test_pipedream_fuses_the_tails_of_a_branching() -> None:
    """The diamond's biconnected component a-b-c-d has tails a, b and c: one position; d and e
    are their own; z (no work, one neighbour) joins a. DPL keeps b and c apart."""
    spec = parse(DIAMOND)
    fine, U = reference_chain(spec, pipedream=True)
    at = dict(zip(spec.dense.names, fine.tolist()))
    assert U == 3 and at["z"] == at["a"] == at["b"] == at["c"] < at["d"] < at["e"]
    fine, U = reference_chain(spec)
    at = dict(zip(spec.dense.names, fine.tolist()))
    assert U == 5 and at["z"] == at["a"] and len({at["a"], at["b"], at["c"], at["d"], at["e"]}) == 5
    dev = solve(spec, method="pipedream").assignment
    assert dev["a"] == dev["b"] == dev["c"]
    # a's edges left out, b -> d <- c is no cycle: every edge is its own component, nothing fuses
    assert reference_chain(spec, pipedream=True, ignore=["a"])[1] == 5


def test_pipedream_refuses_an_unknown_ignore_name() -> None:
    with pytest.raises(PartError, match="bogus"):
        solve(parse(DIAMOND), method="pipedream", options={"ignore": "a,bogus"})


def test_an_expert_split_may_leave_out_colocated_nodes_but_not_split_them() -> None:
    """A node the split leaves out takes its colocated nodes' device; if they are on two, the
    error names it."""
    grouped = DIAMOND
    for name in "abc":
        grouped = grouped.replace(f"node {name} {{", f"node {name} {{ group g;")
    spec = parse(grouped.replace("subject to { contiguous }", "subject to { contiguous; colocate by group }"))
    assert _placed(spec, {"fpgas": [{"nodes": ["a", "c", "d", "e", "z"]}]})["b"] == "acc[0]"
    with pytest.raises(PartError, match="node b is not listed.*colocated"):
        _placed(spec, {"fpgas": [{"nodes": ["a", "d", "e", "z"]}, {"nodes": ["c"]}]})


def _placed(spec: Spec, data: dict) -> dict[str, str]:
    from partdsl.core.assignment import parse_assignment

    dev = parse_assignment(spec, data)
    return {n: spec.platform.devices[j] for n, j in zip(spec.dense.names, dev.tolist())}


@pytest.mark.slow  # the real workloads (conftest.py: the tiers)
@pytest.mark.parametrize("key", ["latency/bert24_inference", "latency/gnmt_inference",
                                 "latency-operators/bert_l-3_inference", "latency-operators/resnet50_inference"])
def test_fill_is_the_reference_latency_greedy(tmp_path: Path, key: str) -> None:
    """Table 4's greedy (greedy.cpp): the operator rows' 416.20 and 839.54 as published."""
    folder, stem = key.split("/")
    out = tmp_path / f"{stem}.part"
    out.write_text(dnn_partitioning_to_part(DATA / folder / f"{stem}.json", "latency", relative_to=tmp_path))
    r = solve(parse_file(out), method="fill")
    assert _close(r.objective, REFERENCE[key]["greedy"]), (r.objective, REFERENCE[key]["greedy"])


@pytest.mark.slow  # the real workloads (conftest.py: the tiers)
@pytest.mark.parametrize("key", ["latency/bert24_inference", "latency/gnmt_inference",
                                 "latency-operators/bert_l-3_inference", "latency-operators/bert_l-6_inference"])
def test_maxload_dp_scores_the_reference_split(tmp_path: Path, key: str) -> None:
    """Table 4's max-load DP: the split dp.cpp returns, as greedy.cpp -computeLatency scores it
    (the operator graphs' 414.44 and 444.02, where the paper prints 415.90 and 445.48)."""
    folder, stem = key.split("/")
    out = tmp_path / f"{stem}.part"
    out.write_text(dnn_partitioning_to_part(DATA / folder / f"{stem}.json", "latency", relative_to=tmp_path))
    r = solve(parse_file(out), method="maxload_dp")
    # greedy.cpp prints six significant digits
    assert abs(r.objective - REFERENCE[key]["maxload_dp"]) <= 1e-5 * r.objective, (r.objective, REFERENCE[key]["maxload_dp"])


@pytest.mark.slow  # the real workloads (conftest.py: the tiers)
def test_local_search_on_accelerators_stays_off_the_cpu(tmp_path: Path) -> None:
    """The authors' local search moves nodes between accelerators only (dp.cpp -localSearch):
    -O devices=accelerators never places a node on the CPU; every device may, and does here."""
    spec = _spec(tmp_path, "throughput-operators/bert_l-3_inference", split="any")
    host = {d for d, j in zip(spec.platform.devices, spec.dense.dev_class.tolist()) if spec.dense.host[j]}
    opts = {"start": "random", "restarts": 2, "step": "best"}
    acc = solve(spec, method="local_search", options=opts | {"devices": "accelerators"})
    assert acc.assignment and not set(acc.assignment.values()) & host
    free = solve(spec, method="local_search", options=opts)
    assert set(free.assignment.values()) & host
    with pytest.raises(PartError, match="unknown devices 'gpus'"):
        solve(spec, method="local_search", options={"devices": "gpus"})


SCOTCH_GRAPHS = DATA / "reference" / "scotch"  # the scotch.grf the authors' dp.cpp -scotch wrote for each input


def _objective(folder: str) -> str:
    return "latency" if folder.startswith("latency") else "bottleneck"


def test_every_input_has_the_authors_scotch_graph() -> None:
    assert len(list(SCOTCH_GRAPHS.glob("*.grf"))) == 24


@pytest.mark.slow  # the real workloads (conftest.py: the tiers)
@pytest.mark.parametrize("name", sorted(p.stem for p in SCOTCH_GRAPHS.glob("*.grf")))
def test_the_scotch_graph_is_the_one_the_authors_code_writes(tmp_path: Path, name: str) -> None:
    """Byte for byte: the vertices in the order the code's hash maps list them, weights
    truncated as it truncates them, the training graphs' backward-only classes fused."""
    from partdsl.kernels.peers.scotch_reference import grf_text, reference_graph

    folder, stem = name.split("--")
    out = tmp_path / f"{stem}.part"
    out.write_text(dnn_partitioning_to_part(DATA / folder / f"{stem}.json", _objective(folder), split="any",
                                            relative_to=tmp_path))
    assert grf_text(reference_graph(parse_file(out))) == (SCOTCH_GRAPHS / f"{name}.grf").read_text()


@pytest.mark.slow  # the real workloads (conftest.py: the tiers)
@pytest.mark.parametrize("name", ["throughput--bert24_inference", "throughput-operators--bert_l-3_training"])
def test_scotch_graph_tarnawski_maps_scotchs_parts_of_that_graph_to_the_accelerators(tmp_path: Path, name: str) -> None:
    """The method's split is Scotch's partition of the authors' graph (read back from the
    authors' file, labels and all), part i on accelerator i, whatever Scotch release is
    installed; its value is the evaluator's."""
    from dataclasses import replace

    from partdsl.kernels.peers.runners import load

    folder, stem = name.split("--")
    spec = _spec(tmp_path, f"{folder}/{stem}", split="any")
    # the authors' run ignores memory and places classes whole: the spec without those constraints
    free = replace(spec, constraints=replace(spec.constraints, memory="ignore", colocate=False))
    r = solve(free, method="scotch", options={"graph": "tarnawski"})
    tok = (SCOTCH_GRAPHS / f"{name}.grf").read_text().split()
    V = int(tok[1])
    labels, vw, xadj, adj, ew, at = [], [], [0], [], [], 5
    for _ in range(V):
        labels.append(int(tok[at]))
        vw.append(int(tok[at + 1]))
        deg = int(tok[at + 2])
        pairs = tok[at + 3: at + 3 + 2 * deg]
        ew += [int(x) for x in pairs[0::2]]
        adj += [int(x) for x in pairs[1::2]]
        xadj.append(len(adj))
        at += 3 + 2 * deg
    index = {lab: i for i, lab in enumerate(labels)}
    scotch = load("scotch")
    dt = scotch.get_scotch_dtype()
    g = scotch.Graph()
    g.build(np.array(xadj, dtype=dt), np.array([index[x] for x in adj], dtype=dt), np.array(vw, dtype=dt),
            np.array(ew, dtype=dt))
    arch = scotch.Architecture()
    arch.complete(spec.platform.classes[0].count)
    strat = scotch.Strategy()
    strat.request_mapping(scotch.StrategyFlags.DEFAULT, balance=0.01)
    scotch.random_reset()
    part = dict(zip(labels, np.asarray(g.map(arch, strat)).tolist()))
    from partdsl.kernels.peers.scotch_reference import reference_graph

    ours = reference_graph(spec)  # each node's vertex (its class after the code's cycle fusion)
    label = ours.labels[ours.vertex]
    acc = spec.platform.classes[0].name
    assert r.assignment == {n: f"{acc}[{part[int(c)]}]" for n, c in zip(spec.dense.names, label.tolist())}
    assert r.objective == pytest.approx(evaluate(free, read_assignment_dict(free, r.assignment)).objective)


def read_assignment_dict(spec: Spec, mapping: dict[str, str]) -> np.ndarray:
    from partdsl.core.assignment import to_array

    return to_array(spec, mapping, "test")

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
# dp.cpp's fillDccIdsWithBiconnectedComponent leaves out the edges out of these original node ids,
# chosen by the graph's node count (BERT-24: 32 or 64 nodes; GNMT: 96 or 192)
SHIPPED_SKIP = {"bert24": (4, 37), "gnmt": (2, 100, 40, 137, 46, 142)}
# Table 1's values where the shipped code prints another (see the tests that use them)
PUBLISHED = {("throughput/gnmt_inference", "dpl"): 32.91, ("throughput/bert24_training", "pipedream"): 41.75,
             ("throughput/gnmt_training", "pipedream"): 107.35}


def _spec(tmp_path: Path, key: str) -> Spec:
    folder, stem = key.split("/")
    out = tmp_path / f"{stem}.part"
    out.write_text(dnn_partitioning_to_part(DATA / folder / f"{stem}.json", relative_to=tmp_path))
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


@pytest.mark.parametrize("key", sorted(REFERENCE))
def test_dpl_is_the_reference_linearize(tmp_path: Path, key: str) -> None:
    r = solve(_spec(tmp_path, key), method="dpl")
    if (key, "dpl") in PUBLISHED:
        # GNMT has several sources; the shipped code stacks them in its hash map's order (libstdc++'s),
        # ours in increasing id order, which gives the paper's 32.91 where the shipped code gives 33.03
        assert round(r.objective, 2) == PUBLISHED[key, "dpl"] and round(REFERENCE[key]["dpl"], 2) == 33.03
        return
    assert _close(r.objective, REFERENCE[key]["dpl"]), (r.objective, REFERENCE[key]["dpl"])


@pytest.mark.parametrize("key", sorted(REFERENCE))
def test_pipedream_is_the_reference_pipedream(tmp_path: Path, key: str) -> None:
    spec = _spec(tmp_path, key)
    model = key.split("/")[1].split("_")[0]
    skip = shipped_vertices(spec, SHIPPED_SKIP[model]) if key.startswith("throughput/") and model in SHIPPED_SKIP else []
    r = solve(spec, method="pipedream", options={"ignore": ",".join(skip)} if skip else None)
    assert _close(r.objective, REFERENCE[key]["pipedream"]), (r.objective, REFERENCE[key]["pipedream"])


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


@pytest.mark.parametrize("key", [k for k in sorted(REFERENCE) if "expert" in REFERENCE[k]])
def test_expert_splits_score_as_the_reference_scores_them(tmp_path: Path, key: str) -> None:
    """Training files without their own split take the inference split, each backward node
    with its forward node (the reference's 112.108 and 213.654)."""
    spec = _spec(tmp_path, key)
    ev = evaluate(spec, read_assignment(spec, DATA / "human-experts" / REFERENCE[key]["expert_split"]))
    assert ev.feasible and abs(ev.objective - REFERENCE[key]["expert"]) <= 1e-4 * REFERENCE[key]["expert"]


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

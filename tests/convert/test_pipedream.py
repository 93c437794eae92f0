"""PipeDream's profiles in (issue 30, item 6) and its optimizer as the reference of the
replicated-stage cost model (item 7, one level): `part convert graph.txt --from pipedream`,
the evaluator scoring PipeDream's own plans (data/pipedream: its profiles, the plans its
optimizer wrote and the time per stage it printed) at that time per stage, `topo`
finding a plan at least as good and `dp` proving the optimum."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from partdsl import PartError, parse, solve
from partdsl.convert.pipedream_profile import pipedream_spec, plan, read_profile
from partdsl.evaluator.evaluate import evaluate

from tests.support import run_part

DATA = Path(__file__).resolve().parents[2] / "data" / "pipedream"
RUNS = json.loads((DATA / "pipedream_runs.json").read_text())["runs"]
TWO_LEVEL = json.loads((DATA / "pipedream_runs.json").read_text())["two_level_runs"]
PROVEN_ON_LEVELS = {"alexnet_gpus8_levels.txt", "vgg16_gpus4_levels.txt", "vgg16_gpus2x4_levels.txt",
                    "squeezenet1_0_gpus2x4_levels.txt"}  # measured 2026-12-01 (docs/importers.md)


@pytest.mark.parametrize("run", RUNS, ids=lambda r: r["profile"])
def test_the_evaluator_scores_pipedreams_plan_at_its_time_per_stage(run: dict) -> None:
    spec = pipedream_spec(DATA / run["profile"], run["machines"], run["bandwidth"])
    dev, reps = plan(spec, DATA / run["plan"], run["replication_factors"])
    ev = evaluate(spec, dev, replicas_of=reps)
    assert ev.feasible
    assert ev.objective == pytest.approx(run["time_per_stage_s"] * 1e3, rel=1e-6)
    ours = solve(spec, method="topo")  # PipeDream's splits are splits of one order of its antichains
    assert ours.evaluation.feasible and ours.objective <= ev.objective * (1 + 1e-9)
    # the DP over ideals searches every acyclic split and factor, a superset of PipeDream's
    # space, and proves it: PipeDream's plan is optimal on these two (so is every run of
    # docs/importers.md's table)
    dp = solve(spec, method="dp")
    assert dp.status.value == "optimal" and dp.evaluation.feasible
    assert dp.objective == pytest.approx(ev.objective, rel=1e-9) and dp.bound <= ev.objective * (1 + 1e-9)


@pytest.mark.parametrize("run", TWO_LEVEL, ids=lambda r: r["plan"].split(".")[0])
def test_pipedreams_plans_on_levels_score_at_its_value_and_dp_is_at_most_it(run: dict) -> None:
    """PipeDream's hierarchical optimizer (-n M1 M2 .. -b B1 B2 ..): its inner stages fill
    the servers in order, and the evaluator scores its plan at the time per stage it
    printed, also where its first top-level stage is replicated across servers (vgg16 on 4
    servers of 2 GPUs: 4 replicas on 2 servers; squeezenet1_0: 6 on 3; alexnet on three
    levels), whose hierarchical AllReduce PipeDream charges (evaluator/replicas.allreduce_rate).
    The DP over ideals places stages in device order on levels, a superset of those plans:
    at most PipeDream's value (squeezenet1_0 on 8 x 2: 17.9407 ms against its 18.0978); its
    bound is the DP's relaxation to each stage's cheapest placement."""
    spec = pipedream_spec(DATA / run["profile"], run["machines"], run["bandwidth"])
    assert spec.platform.hierarchical and spec.constraints.acyclic
    dev, reps = plan(spec, DATA / run["plan"], run["replication_factors"])
    ev = evaluate(spec, dev, replicas_of=reps)
    assert ev.feasible and ev.objective == pytest.approx(run["time_per_stage_s"] * 1e3, rel=1e-6)
    dp = solve(spec, method="dp")
    assert dp.evaluation.feasible and dp.objective <= ev.objective * (1 + 1e-9)
    # its bound: the same DP with each stage at its cheapest placement, which meets its value
    # (a proof over every placement) on four of the six, and is within 1% on the others
    assert dp.bound <= dp.objective * (1 + 1e-9) and dp.objective <= dp.bound * 1.01
    proven = run["plan"] in PROVEN_ON_LEVELS
    assert dp.status.value == ("optimal" if proven else "feasible"), (dp.status, dp.objective, dp.bound)
    assert proven or "device order" in " ".join(dp.log)


def test_the_dp_without_a_start_assigns_every_node_of_squeezenet() -> None:
    """The DP over ideals orders ideals by their cheapest compute. Summed in ms in different
    orders, squeezenet1_0's zero-cost last layer put the full set before one of its subsets,
    so the DP's "full" ideal lacked a unit: its plan left two nodes without a device (the
    topo start hid it). Summed in whole steps (ideal_chains._whole) the full set is last."""
    from partdsl.kernels.bottleneck.ideal_chains import Chains
    from partdsl.kernels.bottleneck.ideal_dp import chain_split, units
    from partdsl.kernels.bottleneck.ideals import enumerate_ideals
    from partdsl.runtime.deadline import NEVER

    spec = pipedream_spec(DATA / "squeezenet1_0_graph.txt", 8)
    u = units(spec)
    chains = Chains.build(spec, u, enumerate_ideals(u.count, u.src, u.dst, deadline=NEVER), NEVER)
    assert chains.size[-1] == u.count
    value, dev, _, reps = chain_split(spec, np.inf, NEVER, None, u)
    ev = evaluate(spec, dev, replicas_of=reps)
    assert ev.feasible and ev.objective == pytest.approx(value, rel=1e-9)
    assert value == pytest.approx(35.963061, rel=1e-6)  # PipeDream's own 8-machine value, docs/importers.md


def test_convert_writes_a_training_spec_with_mirrored_backward_nodes(tmp_path: Path) -> None:
    out = tmp_path / "alexnet.part"
    r = run_part("convert", str(DATA / "alexnet_graph.txt"), "--from", "pipedream", "--machines", "4",
                 "--bandwidths", "1e9", "-o", str(out))
    assert r.returncode == 0, r.stderr
    spec = parse(out.read_text())
    nodes, edges, _ = read_profile(DATA / "alexnet_graph.txt")
    assert len(spec.graph.nodes) == 2 * len(nodes) and len(spec.graph.edges) == 2 * len(edges) + 1
    conv = spec.graph.nodes[spec.graph.index["node10"]]  # Conv2d(384, 256): 4.423 ms forward, 7.197 backward
    assert conv.work[0].time == 4.423 and conv.params == 3539968.0 and conv.group == "node10"
    bw = spec.graph.nodes[spec.graph.index["node10_bw"]]
    assert bw.backward and bw.work[0].time == 7.197 and bw.group == "node10"
    assert spec.graph.nodes[spec.graph.index["node1"]].work[0].time == 0.0  # the Input costs nothing
    assert spec.objective.training == "pipedream" and spec.constraints.replicate == 4
    assert spec.platform.classes[0].count == 4 and spec.platform.classes[0].link == 1e9
    moved = pipedream_spec(DATA / "alexnet_graph.txt", 4, transfers=True)
    assert moved.graph.nodes[moved.graph.index["node10"]].out == 44302336.0


def test_levels_import_as_servers_and_exact_plans_any_split_on_them(tmp_path: Path) -> None:
    """--machines 4,2 --split any: 2 servers of 4 GPUs (`server node[2]`), each level's
    bandwidth its fabric, replicas up to all 8. With one bandwidth on both levels the
    levels cost what a flat platform costs, so `exact` proves the flat 8-machine optimum
    (11.62 ms, PipeDream's own value for its acyclic plan, docs/importers.md); with a
    faster fabric inside the servers, stages replicated inside one sync faster and the
    optimum is lower."""
    out = tmp_path / "alexnet.part"
    r = run_part("convert", str(DATA / "alexnet_graph.txt"), "--from", "pipedream", "--machines", "4,2",
                 "--bandwidths", "1e9,1e9", "--split", "any", "-o", str(out))
    assert r.returncode == 0, r.stderr
    spec = parse(out.read_text())
    p = spec.platform
    assert p.hierarchical and len(p.devices) == 8 and [s.name for s in p.servers] == ["node"]
    assert p.servers[0].count == 2 and p.servers[0].link == 1e9 and p.link == 1e9
    assert not spec.constraints.acyclic and spec.constraints.replicate == 8
    # 40 s, not more: `exact` gives a fifth of its limit to the heuristics before the MIP proves
    # the optimum, so a longer limit only lengthens the run (120 s: 27 s here, 40 s: about 15 s)
    same = solve(spec, method="exact", gap=0.0, time_limit=40)
    assert same.status.value == "optimal" and same.objective == pytest.approx(11.62, rel=1e-6)
    fast = pipedream_spec(DATA / "alexnet_graph.txt", [4, 2], [1e10, 1e9], acyclic=False)
    r = solve(fast, method="exact", time_limit=5)
    assert r.evaluation.feasible and r.objective < 11.62 and r.bound <= r.objective
    assert any(k > 1 for k in (r.replicas or {}).values())


def test_levels_import_acyclic_by_default_and_auto_plans_them(tmp_path: Path) -> None:
    """Without --split any the levels import under `acyclic`, PipeDream's stage order: `exact`
    does not model levels there (Archer's MTPP MIP), so auto's answer is the load search's or
    the DP's (stages in device order), with replicas placed on the levels. With one bandwidth on both levels it finds 11.62 ms, the
    optimum `exact` proves without `acyclic` (so the acyclic optimum too: PipeDream's plan is
    acyclic and scores 11.62)."""
    out = tmp_path / "alexnet.part"
    r = run_part("convert", str(DATA / "alexnet_graph.txt"), "--from", "pipedream", "--machines", "4,2",
                 "--bandwidths", "1e9,1e9", "-o", str(out))
    assert r.returncode == 0, r.stderr
    spec = parse(out.read_text())
    assert spec.constraints.acyclic and spec.platform.hierarchical and spec.constraints.replicate == 8
    found = solve(spec, time_limit=30)
    assert found.chosen in ("load_search", "dp") and found.evaluation.feasible
    assert found.objective == pytest.approx(11.62, rel=1e-6) and found.replicas


@pytest.mark.parametrize("args,what", [
    (["--machines", "4,2", "--bandwidths", "1e10", "--split", "any"], "1 values for 2 levels"),
    (["--machines", "2.5"], "whole number"),
    (["--machines", "4", "--bandwidths", "fast"], "expected numbers"),
])
def test_convert_refuses_what_it_cannot_model(args: list[str], what: str) -> None:
    r = run_part("convert", str(DATA / "alexnet_graph.txt"), "--from", "pipedream", *args)
    assert r.returncode == 2 and what in r.stderr, r.stderr


def test_a_malformed_profile_names_its_line(tmp_path: Path) -> None:
    bad = tmp_path / "graph.txt"
    bad.write_text("node1 -- Input -- forward_compute_time=1.0, backward_compute_time=0.0, activation_size=4.0, "
                   "parameter_size=0.0\nnode2 -- Linear -- forward_compute_time=fast, backward_compute_time=1.0, "
                   "activation_size=4.0, parameter_size=8.0\n\tnode1 -- node2\n")
    with pytest.raises(PartError, match=r"graph.txt:2: forward_compute_time: 'fast' is not a number"):
        read_profile(bad)
    bad.write_text("node1 -- Input -- forward_compute_time=1.0, backward_compute_time=0.0, activation_size=4.0, "
                   "parameter_size=0.0\n\tnode1 -- node9\n")
    with pytest.raises(PartError, match="graph.txt:2: an edge names a node not declared"):
        read_profile(bad)
    r = run_part("convert", str(DATA / "alexnet_graph.txt"), "--machines", "4")
    assert r.returncode == 2 and "go with --from pipedream" in r.stderr

"""The DP over ideals proves training graphs (kernels/bottleneck/ideal_dp.py, exact_for):
on random tiny training graphs under `acyclic` whose backward nodes are each colocated
with a forward node, its proven value equals the brute-force optimum over the
evaluator's whole space (under GPipe too: max FW + max BW), and it claims no proof when a
backward node is an orphan."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from partdsl.core.errors import PartError
from partdsl.core.validate import validate
from partdsl.evaluator.evaluate import evaluate
from partdsl.kernels.bottleneck.ideal_dp import exact_for, ideal_split
from partdsl.methods.solve import ABS_TOL, solve

from tests.support.oracle import oracle
from tests.support.strategies import specs


@st.composite
def training_specs(draw, orphans: bool = False, forms: tuple = (None, "pipedream", "gpipe")):  # type: ignore[no-untyped-def]
    spec = draw(specs(max_nodes=5, kinds=("bottleneck",)))
    g = spec.graph
    fw = [i for i, nd in enumerate(g.nodes) if not nd.backward]
    bw = [i for i, nd in enumerate(g.nodes) if nd.backward]
    assume(fw and bw)
    groups: list[str | None] = [None] * len(g.nodes)
    for i in fw:
        groups[i] = draw(st.sampled_from([None, f"f{i}"]))
    for i in bw:  # each backward node rides with a forward partner (or, for orphans, alone)
        partner = draw(st.sampled_from(fw))
        groups[i] = f"f{partner}" if not orphans else f"b{i}"
        if groups[partner] is None:
            groups[partner] = f"f{partner}"
    nodes = tuple(replace(nd, group=grp) for nd, grp in zip(g.nodes, groups))
    spec = replace(spec, graph=replace(g, nodes=nodes),
                   constraints=replace(spec.constraints, acyclic=True, colocate=True, colocate_sets=(), replicate=1),
                   objective=replace(spec.objective, training=draw(st.sampled_from(forms))),
                   solve=replace(spec.solve, method=None, options=(), time_limit=None, gap=None))
    try:
        validate(spec)
    except PartError:
        assume(False)
    from partdsl.kernels import brute_force

    assume(brute_force.count(spec) <= 20_000)
    return spec


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(training_specs())
def test_the_dp_proves_training_graphs_with_partners(spec) -> None:  # type: ignore[no-untyped-def]
    assert exact_for(spec) or any(t for _, t in spec.constraints.pins + spec.constraints.forbids)
    opt, feasible = oracle(spec)
    r = solve(spec, method="dp", time_limit=20)
    if not feasible:
        assert r.status.value != "optimal"
        return
    assert r.bound is None or r.bound <= opt + max(ABS_TOL, 1e-6 * abs(opt)), (r.bound, opt)
    if r.status.value == "optimal":
        assert r.objective == pytest.approx(opt, rel=1e-6, abs=ABS_TOL)


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(training_specs(orphans=True))
def test_orphans_get_no_proof_from_the_dp(spec) -> None:  # type: ignore[no-untyped-def]
    assert not exact_for(spec)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(training_specs(forms=("gpipe",)))
def test_the_dp_optimizes_gpipe_and_equals_the_mip(spec) -> None:  # type: ignore[no-untyped-def]
    """Under GPipe the DP minimizes max FW + max BW itself (Tarnawski App. A; it used to
    minimize the PipeDream load and only re-score). Its space is the chains of forward
    ideals, which holds every feasible split (and, where backward edges run against the
    forward order, some that are not): its value is at most the brute-force optimum, and
    equal to it when its split is feasible. The max-load IP with its two phases (`exact`,
    which models contiguity but not `acyclic`) proves the optimum of contiguous splits,
    never above a DP split that is contiguous too. (A split can be acyclic and not
    contiguous: a path from a device's forward part through a backward node back into it
    leaves no cycle among forward parts, and contiguity counts it.)"""
    opt, feasible = oracle(spec)
    dp = solve(spec, method="dp", time_limit=60)
    assert dp.bound is None or dp.bound <= opt + max(ABS_TOL, 1e-6 * abs(opt)), (dp.bound, opt)
    if not feasible:
        assert not dp.status.has_solution()
        return
    if dp.status.value == "optimal":
        assert dp.objective == pytest.approx(opt, rel=1e-6, abs=ABS_TOL)
    if any(t for _, t in spec.constraints.pins + spec.constraints.forbids):
        return  # device-level pins: the DP does not model them
    value, arr, _ = ideal_split(spec)  # the sweep by itself, without topo's incumbent
    assert value <= opt + max(ABS_TOL, 1e-6 * abs(opt))
    if arr is not None and evaluate(spec, arr).feasible:
        assert value == pytest.approx(opt, rel=1e-6, abs=ABS_TOL)
        contiguous = replace(spec, constraints=replace(spec.constraints, acyclic=False, contiguous=True,
                                                       max_stages=None))
        mip = solve(contiguous, method="exact", time_limit=60)
        copt, cfeasible = oracle(contiguous)
        if not cfeasible:  # `acyclic` ignores edges between forward and backward nodes; contiguity does not
            assert mip.status.value == "infeasible"
            return
        assert mip.status.value == "optimal" and mip.objective == pytest.approx(copt, rel=1e-6, abs=ABS_TOL)
        if evaluate(contiguous, arr).feasible:  # the DP's split is contiguous too
            assert mip.objective <= value + ABS_TOL


def _order_splits(spec, pos: "np.ndarray", P: int):  # type: ignore[no-untyped-def]
    """Every split of the order into segments, each on its own device: the evaluator's
    best GPipe score over them (inf if none is feasible)."""
    import itertools

    D = len(spec.platform.devices)
    best = float("inf")
    for cuts in itertools.product([False, True], repeat=P - 1):
        starts = [0] + [i + 1 for i, c in enumerate(cuts) if c]
        bounds = list(zip(starts, starts[1:] + [P]))
        for devs in itertools.permutations(range(D), len(bounds)):
            dev = np.empty(len(pos), dtype=np.int64)
            for (lo, hi), d in zip(bounds, devs):
                dev[(pos >= lo) & (pos < hi)] = d
            ev = evaluate(spec, dev)
            if ev.feasible:
                best = min(best, ev.objective)
    return best


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(training_specs(forms=("gpipe",)))
def test_topo_optimizes_gpipe_over_the_splits_of_its_order(spec) -> None:  # type: ignore[no-untyped-def]
    """The GPipe sweep of the segmentation DP (kernels/bottleneck/order_gpipe.py) finds the
    least max FW + max BW over every split of a fixed order into segments, and each value
    it states is the evaluator's score (a sweep stopped after one round fails this). As
    the DP over ideals, it does not see a forward/backward cycle that an edge from a
    backward to a forward node closes: its least value is then at most the optimum, and
    equal to it when its split has no such cycle."""
    from partdsl.kernels.bottleneck.order_gpipe import gpipe_splits
    from partdsl.kernels.bottleneck.topo_split import assign, orders

    _, pos, P = next(orders(spec, 0))
    assume(P <= 6)
    counts = [k.count for k in spec.platform.classes]
    splits = gpipe_splits(spec, pos, P, counts, spec.constraints.max_stages)
    got = min(splits, key=lambda s: s.value, default=None)
    want = _order_splits(spec, pos, P)
    if np.isfinite(want):
        assert got is not None and got.value <= want + 1e-9
        if evaluate(spec, assign(spec, got, pos)).feasible:
            assert got.value == pytest.approx(want, rel=1e-9, abs=1e-9)
    for s in splits:
        ev = evaluate(spec, assign(spec, s, pos))
        assert not ev.feasible or ev.objective == pytest.approx(s.value, rel=1e-9, abs=1e-9)


GPIPE_CHAIN = """
graph g {
  node f0 { work 4 ms; group g0 }  node b0 { work 1 ms; group g0; backward }
  node f1 { work 5 ms; group g1 }  node b1 { work 2 ms; group g1; backward }
  node f2 { work 7 ms; group g2 }  node b2 { work 7 ms; group g2; backward }
  node f3 { work 8 ms; group g3 }  node b3 { work 8 ms; group g3; backward }
  f0 -> f1 -> f2 -> f3 -> b3 -> b2 -> b1 -> b0
}
platform { device gpu[2] }
minimize bottleneck training gpipe
subject to { colocate by group; acyclic }
"""


def test_topo_walks_past_the_least_max_forward_split() -> None:
    """Layers 0-1 | 2-3 have the least max FW (15), but BW 15 too: 30. Layers 0-2 | 3
    (FW 16, BW 10) is the GPipe optimum, 26, which the sweep's second round finds."""
    from partdsl import parse

    spec = parse(GPIPE_CHAIN)
    topo, brute = solve(spec, method="topo"), solve(spec, method="brute")
    assert brute.objective == pytest.approx(26.0) and topo.objective == pytest.approx(26.0)
    assert {topo.assignment[f"f{i}"] for i in range(3)} != {topo.assignment["f3"]}

"""The DP over ideals proves training graphs (kernels/bottleneck/ideal_dp.py, exact_for):
on random tiny training graphs under `acyclic` whose backward nodes are each colocated
with a forward node, its proven value equals the brute-force optimum over the
evaluator's whole space (under GPipe too: max FW + max BW), and it claims no proof when a
backward node is an orphan."""
from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from oracle import oracle
from partdsl.core.errors import PartError
from partdsl.core.evaluate import evaluate
from partdsl.core.validate import validate
from partdsl.kernels.bottleneck.ideal_dp import exact_for, ideal_split
from partdsl.methods.solve import ABS_TOL, solve

from tests.strategies import specs


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
                   constraints=replace(spec.constraints, acyclic=True, colocate=True, colocate_sets=()),
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
    never above a feasible DP split's."""
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
        assert mip.status.value == "optimal" and mip.objective == pytest.approx(oracle(contiguous)[0], rel=1e-6,
                                                                                abs=ABS_TOL)
        assert mip.objective <= value + ABS_TOL

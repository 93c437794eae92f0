"""Stashes per micro-batch in flight (issue 71, defect 8): under 1F1B stage s of P holds
P - s micro-batches' stashes (evaluator/activations.in_flight). On random layer chains
(forward and backward nodes colocated by layer, as `--group-by layer` makes them) the DP
over ideals proves the brute-force optimum over the evaluator's whole space; off a chain
of units it steps aside by name, and the evaluator-driven methods still answer."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from partdsl.core.errors import PartError
from partdsl.dsl.builder import GraphBuilder, SpecBuilder
from partdsl.evaluator.evaluate import evaluate
from partdsl.kernels.bottleneck.ideal_dp import chained
from partdsl.methods.solve import ABS_TOL, solve

from tests.support.oracle import oracle

GB = 1e9


def layer_chain(fw: list[float], stash: list[float], params: list[float], counts: tuple[int, int],
                memory: float, side: bool = False):  # type: ignore[no-untyped-def]
    """Layers f0 -> f1 -> ... with backward nodes b_i (2 x the forward time) in f_i's
    group; `side`: f0 also feeds the last layer directly (still a chain of units)."""
    g = GraphBuilder("layers")
    L = len(fw)
    for i in range(L):
        g.node(f"f{i}", work={"a": fw[i], "b": 1.5 * fw[i]}, params=params[i] * GB, stash=stash[i] * GB,
               out=1e6, group=f"l{i}")
        g.node(f"b{i}", work={"a": 2 * fw[i], "b": 3 * fw[i]}, backward=True, out=1e6, group=f"l{i}")
    g.chain(*[f"f{i}" for i in range(L)], *[f"b{i}" for i in reversed(range(L))])
    if side and L > 2:
        g.edge("f0", f"f{L - 1}")
    sb = SpecBuilder(g.build())
    sb.device("a", counts[0], memory=memory * GB, link="10 GB/s")
    sb.device("b", counts[1], memory=memory * GB, link="10 GB/s")
    return sb.minimize("bottleneck").subject_to(acyclic=True, memory="hard", colocate=True).build()


@st.composite
def chains(draw):  # type: ignore[no-untyped-def]
    L = draw(st.integers(2, 4))
    ms = st.floats(0.5, 8.0, allow_nan=False)
    gb = st.sampled_from([0.0, 1.0, 2.0, 3.0])
    try:
            spec = layer_chain([draw(ms) for _ in range(L)], [draw(gb) for _ in range(L)], [draw(gb) for _ in range(L)],
                           (draw(st.integers(1, 2)), draw(st.integers(0, 2))), draw(st.sampled_from([6.0, 9.0, 14.0])),
                           side=draw(st.booleans()))
    except PartError:  # more memory than the devices hold
        assume(False)
    from partdsl.kernels import brute_force

    assume(brute_force.count(spec) <= 20_000)
    return spec


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(chains())
def test_the_dp_proves_the_brute_force_optimum_with_stashes_in_flight(spec) -> None:  # type: ignore[no-untyped-def]
    assert chained(spec)
    opt, feasible = oracle(spec)
    r = solve(spec, method="dp", time_limit=30)
    if not feasible:
        assert r.status.value != "optimal" and r.assignment is None
        return
    assert r.status.value == "optimal"
    assert r.objective == pytest.approx(opt, rel=1e-6, abs=ABS_TOL)
    assert evaluate(spec, np.array([spec.platform.devices.index(r.assignment[n]) for n in spec.dense.names])).feasible


def test_stage_s_of_p_holds_p_minus_s_stashes() -> None:
    """Three layers on three devices: 3, 2 and 1 micro-batches in flight; the plan that
    fits one micro-batch's stashes (9 GB each) does not fit 1F1B's (13 GB on the first)."""
    spec = layer_chain([1.0, 1.0, 1.0], [4.0, 4.0, 4.0], [1.0, 1.0, 1.0], (3, 0), 12.0)
    ev = evaluate(spec, np.array([0, 0, 1, 1, 2, 2]))
    assert [round(ev.parts[f"a[{k}]"]["memory"] / GB, 6) for k in range(3)] == [13.0, 9.0, 5.0]
    assert not ev.feasible and [v.kind for v in ev.violations] == ["memory"]
    r = solve(spec, method="dp", time_limit=30)
    assert r.status.value == "optimal" and r.objective == pytest.approx(oracle(spec)[0])
    assert len(set(r.assignment.values())) == 2  # two stages: 9 and 10 GB (6 ms of compute and 0.2 ms of transfers)


def test_off_a_chain_the_dp_steps_aside_and_the_search_answers() -> None:
    """Two branches (f0 -> f1, f0 -> f2): a split's stages need not each feed the next, so
    the DP's count of stages downstream is not the evaluator's; it refuses by name."""
    g = GraphBuilder("fork")
    for name, grp in (("f0", "x"), ("f1", "y"), ("f2", "z"), ("b1", "y"), ("b2", "z"), ("b0", "x")):
        g.node(name, work={"a": 1.0}, params=GB, stash=(0.0 if name[0] == "b" else 3 * GB), out=1e6, group=grp,
               backward=name[0] == "b")
    g.chain("f0", "f1", "b1", "b0").chain("f0", "f2", "b2", "b0")
    spec = (SpecBuilder(g.build()).device("a", 3, memory=10 * GB, link="10 GB/s").minimize("bottleneck")
            .subject_to(acyclic=True, memory="hard", colocate=True).build())
    assert not chained(spec)
    with pytest.raises(PartError, match="stashes off a chain"):
        solve(spec, method="dp", time_limit=10)
    r = solve(spec, method="load_search", time_limit=5)
    opt, _ = oracle(spec)
    assert r.assignment is not None and r.objective >= opt - ABS_TOL

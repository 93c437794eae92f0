"""The DiviML MILP's valid inequalities and twin symmetry rows (models/diviml_cuts.py):
the optimum stays brute force's, MIP starts are relabelled to fit them, and the LP
relaxation they give lies between the critical path and the optimum."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from partdsl.core.ir import Constraints, DeviceClass, Graph, Node, Objective, Platform, Spec, Work
from partdsl.core.schedule import Piece, Schedule, share_times
from partdsl.evaluator.schedule_eval import evaluate_schedule, list_schedule
from partdsl.methods.solve import solve
from partdsl.models import diviml, diviml_nodes
from partdsl.solvers.dispatch import solve_matrix

from tests.support.effort import examples
from tests.support.oracle import brute_schedules


def fan(n_twins: int, twin_ms: float, sink: bool, gpus: int, out: float, extra: bool = False,
        chains: bool = False) -> Spec:
    """A source, `n_twins` interchangeable nodes after it, a sink after them (optional)
    and optionally a node after the source that is no twin; with `chains`, each twin is
    followed by a node of its own (so the twins are no longer twins, but the branches are
    still interchangeable)."""
    nodes = [Node("src", (Work(1.0, "gpu"), Work(3.0, "cpu")), out=out)]
    nodes += [Node(f"t{k}", (Work(twin_ms, "gpu"), Work(2 * twin_ms, "cpu")), out=out) for k in range(n_twins)]
    edges = [(0, k + 1) for k in range(n_twins)]
    if chains:
        nodes += [Node(f"c{k}", (Work(0.5, "gpu"), Work(1.5, "cpu")), out=out) for k in range(n_twins)]
        edges += [(k + 1, n_twins + 1 + k) for k in range(n_twins)]
    if extra:
        nodes.append(Node("odd", (Work(0.5, "gpu"), Work(0.7, "cpu")), out=out))
        edges.append((0, len(nodes) - 1))
    if sink:
        nodes.append(Node("sink", (Work(0.5, "gpu"), Work(1.0, "cpu"))))
        edges += [(k + 1 + (n_twins if chains else 0), len(nodes) - 1) for k in range(n_twins)]
    platform = Platform((DeviceClass("gpu", gpus, link=1e9), DeviceClass("cpu", 1, host=True)))
    return Spec(Graph("g", tuple(nodes), tuple(edges)), platform, Objective("task_latency"),
                Constraints(memory="hard"))


def symmetry(spec: Spec, release: np.ndarray | None = None) -> diviml_nodes.NodeSymmetry:
    return diviml_nodes.find(spec, share_times(spec), diviml._transfer_table(spec), release)


def test_twins_are_nodes_with_the_same_neighbours_and_costs() -> None:
    spec = fan(3, 1.0, True, 1, 1e6, extra=True)
    sym = symmetry(spec)
    assert sym.twins == ((1, 2, 3),)
    assert len(sym.autos) == 6 and sym.chain == ((1, (2, 3)), (2, (3,)))
    release = np.zeros((spec.dense.n, spec.dense.D))
    release[2, 0] = 0.5  # a twin that may start later than the others is no twin of theirs
    assert symmetry(spec, release).twins == ((1, 3),)


def test_interchangeable_branches_are_automorphisms_but_not_twins() -> None:
    spec = fan(3, 1.0, True, 1, 1e6, chains=True)  # src -> t_k -> c_k -> sink, k = 0, 1, 2
    sym = symmetry(spec)
    assert sym.twins == () and len(sym.autos) == 6
    assert sym.chain == ((1, (2, 3)), (2, (3,)))  # the branch heads; their tails follow them


@settings(max_examples=examples(6), deadline=None, suppress_health_check=list(HealthCheck))
@given(st.integers(2, 3), st.sampled_from([0.5, 1.0, 2.0]), st.booleans(), st.integers(1, 2),
       st.sampled_from([0.0, 1e6, 4e6]), st.sampled_from(["", "extra", "chains"]))
def test_the_milp_with_its_cuts_equals_brute_force_on_graphs_with_twins(
        n_twins: int, twin_ms: float, sink: bool, gpus: int, out: float, shape: str) -> None:
    spec = fan(n_twins, twin_ms, sink, gpus, out, shape == "extra" and n_twins == 2, shape == "chains" and n_twins == 2)
    opt = brute_schedules(spec)
    for solver in ("highs", "scip"):
        r = solve(spec, method="exact", solver=solver, time_limit=60, gap=0.0)
        assert r.status.value == "optimal"
        assert r.objective == pytest.approx(opt, rel=1e-6, abs=1e-6), solver
        assert r.bound <= opt + 1e-6


@pytest.mark.parametrize("chains", [False, True])
def test_a_start_with_its_twins_out_of_order_is_relabelled_and_fits(chains: bool) -> None:
    spec = fan(3, 1.0, True, 2, 1e6, chains=chains)
    # the twins in reverse: t2 first on gpu[0], t1 on gpu[1], t0 last on gpu[0] (their chains on the cpu)
    order = [Piece(0, 0, (0,)), Piece(3, 0, (0,)), Piece(2, 1, (0,)), Piece(1, 0, (0,))]
    order += [Piece(v, 2, (0,)) for v in (6, 5, 4)] if chains else []
    order.append(Piece(spec.dense.n - 1, 0, (0,)))
    s = evaluate_schedule(spec, list_schedule(spec, Schedule(tuple(order), 1), piece_order=range(len(order)))).schedule
    mip, vm = diviml.build(spec, 100.0)
    x0 = diviml.encode(spec, vm, s)
    assert x0 is not None
    lhs = mip.A @ x0
    assert (lhs >= mip.row_lo - 1e-9).all() and (lhs <= mip.row_hi + 1e-9).all()
    assert (x0 >= mip.col_lo - 1e-9).all() and (x0 <= mip.col_hi + 1e-9).all()
    assert x0[vm.C] == pytest.approx(evaluate_schedule(spec, s).objective)


def test_the_lp_relaxation_lies_between_the_critical_path_and_the_optimum() -> None:
    """Without the cuts the LP's makespan is about one share's time; with them it is at
    least the critical path at each node's fastest time."""
    spec = fan(3, 2.0, True, 1, 1e6)
    opt = brute_schedules(spec)
    mip, vm = diviml.build(spec, opt + 1.0)
    lp = solve_matrix(replace(mip, integer=np.zeros_like(mip.integer)), "highs", 30, None, 1)
    fastest = 1.0 + 2.0 + 0.5  # src, a twin, sink, each on the GPU
    assert fastest - 1e-9 <= lp.objective <= opt + 1e-9

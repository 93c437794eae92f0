"""The Pyomo reference models and the matrix models are one formulation: on every
conformance problem both give the same optimum, for Archer's exact MIP and each of its
relaxations and for Tarnawski's IP (with GPipe, overflow, overlap, contiguity...), and a
decoded Pyomo solution scores its objective under the evaluator."""
from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from partdsl import evaluate, parse, solve
from partdsl.core.ir import Spec
from partdsl.models import maxload, mtpp, pyomo_maxload, pyomo_mtpp
from partdsl.solvers.highs_matrix import solve_highs
from partdsl.solvers.pyomo_adapter import solve_pyomo
from partdsl.solvers.registry import DISPLAY_NAMES as NAMES

from tests.support.strategies import mtpp_specs, specs


def cases(n: int) -> settings:
    return settings(max_examples=n, deadline=None,
                    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])


def same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)


def matrix_value(mip) -> tuple[str, float]:  # type: ignore[no-untyped-def]
    out = solve_highs(mip, gap=0.0)
    return out.status, out.objective


@cases(40)
@given(mtpp_specs(max_nodes=5, max_k=3), st.data())
def test_mtpp_pyomo_equals_matrix_for_every_variant(spec: Spec, data) -> None:
    k = spec.platform.classes[0].count
    variant = data.draw(st.sampled_from([mtpp.EXACT, mtpp.Variant("bottleneck")]
                                        + [mtpp.Variant("guess", j) for j in range(1, k + 1)]))
    status, value = matrix_value(mtpp.build(spec, variant)[0])
    m = pyomo_mtpp.build(spec, variant)
    out = solve_pyomo(m, "highs", gap=0.0)
    assert out.status == status, (variant, out, status)
    if status == "optimal":
        assert same(out.objective, value), (variant, out.objective, value)
        if variant == mtpp.EXACT:  # a decoded solution costs what the MIP says
            ev = evaluate(spec, pyomo_mtpp.decode(spec, m))
            assert ev.feasible and same(ev.objective, value)


@cases(60)
@given(st.data())
def test_maxload_pyomo_equals_matrix_equals_brute_force(data) -> None:
    """GPipe and overflow included; the matrix model also breaks symmetry (-O symmetry=1)."""
    spec: Spec = data.draw(specs(max_nodes=5, kinds=("bottleneck",), max_devices=3))
    c = spec.constraints
    assume(not c.acyclic and c.max_stages is None)  # replicas too (models/maxload_replicas.py)
    brute = solve(spec, method="brute", gap=0.0, time_limit=1e6)
    status, value = matrix_value(maxload.build(spec, symmetry=True)[0])
    m = pyomo_maxload.build(spec)
    out = solve_pyomo(m, "highs", gap=0.0)
    assert out.status == status
    if brute.status.value == "optimal":
        assert status == "optimal" and same(value, brute.objective) and same(out.objective, brute.objective)
        dev, reps = pyomo_maxload.decode(spec, m)
        ev = evaluate(spec, dev, replicas_of=reps)
        assert ev.feasible and same(ev.objective, brute.objective)
    else:
        assert status == "infeasible"


@cases(40)
@given(mtpp_specs(max_nodes=6, max_k=3))
def test_exact_mtpp_with_overflow_equals_brute_force(spec: Spec) -> None:
    """Archer eq. 2 linearized: ov[b] >= (params(b) - M) / B."""
    assume(spec.constraints.memory == "overflow")
    brute = solve(spec, method="brute", gap=0.0)
    ex = solve(spec, method="exact", gap=0.0)
    assert ex.status == brute.status
    if brute.status.value == "optimal":
        assert same(ex.objective, brute.objective)


def test_symmetry_breaking_keeps_the_optimum_and_the_start() -> None:
    """Four identical accelerators: with and without symmetry rows, one optimum; the
    canonical relabelling of any start satisfies the rows (HiGHS accepts it as is)."""
    from partdsl.core.ir import Constraints, DeviceClass, Objective, Platform
    from partdsl.generators.regal import regal_graph

    g = regal_graph(9, "er", 5)
    spec = Spec(g, Platform((DeviceClass("acc", 4, link=1e9),)), Objective("bottleneck"),
                Constraints(contiguous=False, memory="ignore"))  # any start is feasible
    with_rows, vm = maxload.build(spec, symmetry=True)
    without, _ = maxload.build(spec, symmetry=False)
    assert vm.groups == ((0, 1, 2, 3),) and with_rows.A.shape[0] > without.A.shape[0]
    a, b = matrix_value(with_rows), matrix_value(without)
    assert a[0] == b[0] == "optimal" and same(a[1], b[1])
    import numpy as np

    rng = np.random.default_rng(0)
    for _ in range(20):
        dev = rng.integers(0, 4, spec.dense.n)
        x = maxload.encode(spec, vm, dev)
        viol = np.maximum(with_rows.A @ x - with_rows.row_hi, with_rows.row_lo - with_rows.A @ x)
        assert viol.max() <= 1e-9 and (x <= with_rows.col_hi + 1e-9).all()


SMALL = """graph g {
  node a { work 4 ms; out 2 GB; params 2 GB }  node b { work 3 ms; out 1 GB; params 1 GB }
  node c { work 5 ms; out 1 GB }  node d { work 2 ms; out 3 GB }  node e { work 6 ms }
  a -> {b, c}  b -> d  c -> d  d -> e
}
platform { device stage[3] { memory 2.5 GB; link 10 GB/s } }
subject to { acyclic; memory %s }
"""


MAXLOAD_SMALL = """graph g {
  node a { work 9 ms on acc, 6 ms on cpu; params 1 GB; out 10 MB }
  node b { work 1 ms on acc, 9 ms on cpu; params 1 GB; out 20 MB }
  node c { work 7 ms on acc; params 1 GB; out 10 MB }
  node d { work 11 ms on acc, 4 ms on cpu; out 30 MB }
  node e { work 4 ms on acc, 8 ms on cpu }
  node f { work 3 ms on acc, 5 ms on cpu; out 10 MB }
  a -> {b, c}  b -> d  c -> d  d -> e  f -> e
}
platform { device acc[2] { memory 2.5 GB; link 10 GB/s }  device cpu[1] { host } }
minimize bottleneck
subject to { contiguous; memory %s }
"""
# the contiguous optimum (13 ms, hard memory) is above the non-contiguous one (12 ms) and above the
# contiguous path bound (12 ms; f, beside every long path, is what it does not see), so the IP runs
SOLVERS = ["highs", "scip", "cbc", "gurobi", "cplex"]  # Gurobi and CPLEX: their size-limited pip editions


@pytest.mark.parametrize("memory", ["hard", "overflow"])
@pytest.mark.parametrize("text", [SMALL, MAXLOAD_SMALL], ids=["mtpp", "maxload"])
@pytest.mark.parametrize("solver", SOLVERS)
def test_every_pyomo_solver_finds_the_optimum(solver: str, text: str, memory: str) -> None:
    """HiGHS (appsi), SCIP and Gurobi (contrib direct interfaces), CBC and CPLEX (classic
    SolverFactory) through Pyomo, and the direct matrix path, agree with brute force on
    Archer's MIP and on Tarnawski's contiguous IP (with its non-contiguous relaxation run
    first, as a time limit is set); the result names its solver."""
    spec = parse(text % memory)
    brute = solve(spec, method="brute")
    r = solve(spec, method="exact", solver=solver, options={"pyomo": 1}, gap=0.0, time_limit=300)
    direct = solve(spec, method="exact", solver="highs", gap=0.0)
    assert r.solver == solver and r.status.value == "optimal"
    assert same(r.objective, brute.objective) and same(direct.objective, brute.objective)
    assert any("via Pyomo" in line for line in r.log) or r.stopped == "bound reached"
    words = {"highs": "MIP has", "scip": "presolving", "cbc": "CBC MILP Solver", "gurobi": "Gurobi Optimizer",
             "cplex": "Version identifier"}  # each solver's own log is kept
    assert f"==== {NAMES[solver]} via Pyomo" in r.solver_log and words[solver] in r.solver_log
    if text is MAXLOAD_SMALL:  # the relaxation's bound (12) is proven, below the optimum (13)
        assert any(line.startswith("proven bound 12:") and "non-contiguous relaxation" in line for line in r.log)


@pytest.mark.parametrize("solver", ["appsi_highs", "gurobi_persistent", "cplex_persistent", "gurobi_direct_v2"])
@pytest.mark.parametrize("text", [SMALL, MAXLOAD_SMALL], ids=["mtpp", "maxload"])
def test_any_other_pyomo_solver_name_works(solver: str, text: str) -> None:
    """A name outside our table that Pyomo's SolverFactory knows goes through its classic
    interface (persistent solvers get their instance set first) and is certified the same."""
    spec = parse(text % "hard")
    brute = solve(spec, method="brute")
    r = solve(spec, method="exact", solver=solver, gap=0.0, time_limit=300)
    assert r.solver == solver and r.status.value == "optimal" and same(r.objective, brute.objective)
    assert any(line.startswith("proven bound") and f"{solver} via Pyomo" in line for line in r.log)

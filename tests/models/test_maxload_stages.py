"""`acyclic` and `stages <= k` in Tarnawski's max-load IP (models/maxload_stages.py; issue 75,
defect 1): the IP's optimum equals brute force over the evaluator's whole space on any
platform (classes, host devices, pins, replicas, training parts), on both matrix solvers
and the Pyomo twin; a feasible split's MIP start satisfies every row; `exact` and
`part export` work on every bundled example."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from partdsl import parse_file
from partdsl.core.assignment import to_array
from partdsl.core.ir import Spec
from partdsl.evaluator.evaluate import evaluate
from partdsl.kernels import brute_force
from partdsl.methods.solve import solve
from partdsl.models import maxload
from partdsl.models.formulations import MAXLOAD, formulation_for
from partdsl.solvers.dispatch import solve_matrix

from tests.support import EXAMPLES, run_part
from tests.support.effort import examples
from tests.support.strategies import specs, valid

TOL = 1e-6


@st.composite
def staged(draw) -> Spec:  # type: ignore[no-untyped-def]
    """A small bottleneck spec under `acyclic`, a stage limit, or both (and sometimes replicas)."""
    spec = draw(specs(max_nodes=6, kinds=("bottleneck",), max_devices=4))
    acyclic = draw(st.booleans())
    stages = draw(st.sampled_from([None, 1, 2])) if acyclic else draw(st.sampled_from([1, 2]))
    c = replace(spec.constraints, acyclic=acyclic, max_stages=stages, replicate=draw(st.sampled_from([1, 1, 2])))
    spec = replace(spec, constraints=c)
    valid(spec)
    assume(brute_force.count(spec) <= brute_force.LIMIT)
    return spec


def _ip_value(spec: Spec, solver: str) -> float | None:
    """The max-load IP's optimum on the matrix path, re-scored by the evaluator (None: infeasible)."""
    mip, vm = maxload.build(spec)
    out = solve_matrix(mip, solver, None, 0.0, 1)
    if not out.status.has_solution():
        assert out.status.value == "infeasible", out.why
        return None
    assert out.status.value == "optimal", out.why
    dev, reps = maxload.decode(spec, vm, out.x)
    ev = evaluate(spec, dev, replicas_of=reps)
    assert ev.feasible, ev.violations
    assert math.isclose(ev.objective, out.objective, rel_tol=1e-5, abs_tol=1e-6), (ev.objective, out.objective)
    return ev.objective


def _start_fits(spec: Spec, dev: np.ndarray, reps: np.ndarray | None) -> None:
    """A feasible split's MIP start satisfies every row and column bound of the IP."""
    mip, vm = maxload.build(spec)
    x = maxload.encode(spec, vm, dev, reps)
    assert x is not None
    ax = mip.A @ x
    bad = np.flatnonzero((ax < mip.row_lo - 1e-6) | (ax > mip.row_hi + 1e-6))
    assert not len(bad), [mip.row_names()[r] for r in bad[:5]]
    assert ((x >= mip.col_lo - 1e-9) & (x <= mip.col_hi + 1e-9)).all()


@settings(max_examples=examples(60), deadline=None, suppress_health_check=list(HealthCheck))
@given(staged(), st.sampled_from(["highs", "scip"]))
def test_the_ip_with_stage_rows_equals_brute_force(spec: Spec, solver: str) -> None:
    brute = solve(spec, method="brute", gap=0.0, time_limit=1e6)
    got = _ip_value(spec, solver)
    if brute.status.value != "optimal":
        assert got is None
        return
    assert got is not None and math.isclose(got, brute.objective, rel_tol=TOL, abs_tol=TOL), (got, brute.objective)
    _start_fits(spec, to_array(spec, brute.assignment),
                None if brute.replicas is None else np.array([brute.replicas.get(d, 1) for d in spec.dense.devices]))
    ex = solve(spec, method="exact", solver=solver, gap=0.0, time_limit=1e6)  # the row formulation_for picks
    assert ex.status.value == "optimal" and math.isclose(ex.objective, brute.objective, rel_tol=TOL, abs_tol=TOL)


@settings(max_examples=examples(12), deadline=None, suppress_health_check=list(HealthCheck))
@given(staged())
def test_the_pyomo_twin_has_the_same_optimum(spec: Spec) -> None:
    brute = solve(spec, method="brute", gap=0.0, time_limit=1e6)
    r = solve(spec, method="exact", solver="highs", gap=0.0, time_limit=1e6, options={"pyomo": 1})
    if brute.status.value != "optimal":
        assert not r.status.has_solution()
        return
    assert r.status.value == "optimal" and math.isclose(r.objective, brute.objective, rel_tol=TOL, abs_tol=TOL)


def test_tiny_has_an_exact_model_with_host_and_class_pin() -> None:
    """Defect 1: examples/tiny.part (acyclic, contiguous, a host CPU, a class pin) was refused
    by `exact`; the max-load IP now proves the DP's optimum."""
    spec = parse_file(EXAMPLES / "tiny.part")
    assert formulation_for(spec) is MAXLOAD
    dp, ex = solve(spec, method="dp"), solve(spec, method="exact", time_limit=120)
    assert ex.status.value == "optimal" and ex.objective == pytest.approx(dp.objective, rel=1e-9)
    cyclic = evaluate(spec, np.array([0, 1, 0] + [2] * 11, dtype=np.int64))  # gpu0 -> gpu1 -> gpu0
    assert not cyclic.feasible


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.part")))
def test_exact_and_mps_export_take_every_example(example: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "m.mps"
    r = run_part("export", str(EXAMPLES / example), "--mps", str(out))
    assert r.returncode == 0, r.stderr
    assert out.read_text().startswith("NAME")
    spec = parse_file(EXAMPLES / example)
    formulation_for(spec).check(spec)  # what `exact` runs takes the spec

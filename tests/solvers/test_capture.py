"""What the solver libraries do around a solve, checked on the real libraries: nothing
reaches stdout, a solver's claims agree with the solution it returns (HiGHS 1.16 with a
MIP start did not), and runs with different thread counts follow each other."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from partdsl import parse, solve
from partdsl.models import mtpp
from partdsl.runtime.capture import captured_stdout
from partdsl.solvers.highs_matrix import solve_highs
from partdsl.solvers.scip_matrix import solve_scip

# Found by the HiGHS = SCIP = brute-force property test: with the MIP start that `topo`
# gives, HiGHS 1.16.0 reported "Optimal" with objective and dual bound 0.1 for a solution
# worth 1.1 (presolve's aggregator moves 1.0 into an objective offset that the start's
# reduced-space objective leaves out).
MISSCORED_START = """
graph g {
  node v0 { work 0 ms }
  node v1 { work 0 ms }
  node v2 { work 0 ms; params 3 GB; out 1 MB }
  node v3 { work 0 ms; params 3 GB; out 50 MB }
  node v4 { work 1 ms }
  v0 -> v1  v0 -> v2  v0 -> v3  v0 -> v4  v1 -> v2  v1 -> v3  v1 -> v4  v2 -> v3  v3 -> v4
}
platform { device stage[2] { memory 4 GB; link 10 GB/s } }
minimize bottleneck
subject to { acyclic; memory overflow }
"""


@pytest.mark.parametrize("adapter", [solve_highs, solve_scip], ids=["highs", "scip"])
def test_every_mip_start_leaves_the_solvers_claims_true(adapter) -> None:  # type: ignore[no-untyped-def]
    """From every assignment that makes a start: the objective the adapter hands back is
    c.x of its solution, an optimum is the brute-force optimum, and the bound is below it."""
    spec = parse(MISSCORED_START)
    best = solve(spec, method="brute").objective
    mip, vm = mtpp.build(spec)
    starts = [s for dev in itertools.product(range(2), repeat=len(spec.graph.nodes))
              if (s := mtpp.encode(spec, vm, np.array(dev))) is not None]
    assert len(starts) >= 8
    for start in starts:
        out = adapter(mip, start=start)
        assert out.x is not None and math.isclose(out.objective, float(mip.c @ out.x), rel_tol=1e-6, abs_tol=1e-6)
        assert out.status == "optimal" and math.isclose(out.objective, best, rel_tol=1e-6), out.log
        assert out.bound <= best + 1e-6


@pytest.mark.parametrize("solver,pyomo", [("highs", 0), ("highs", 1), ("scip", 0), ("scip", 1)])
def test_exact_with_its_mip_start_proves_the_brute_force_optimum(solver: str, pyomo: int) -> None:
    spec = parse(MISSCORED_START)
    best = solve(spec, method="brute").objective
    r = solve(spec, method="exact", solver=solver, options={"pyomo": pyomo})
    assert r.status.value == "optimal", r.log
    assert math.isclose(r.objective, best, rel_tol=1e-9) and best - 1e-6 <= r.bound <= best + 1e-6


def test_highs_runs_with_different_thread_counts_in_one_process() -> None:
    """HiGHS keeps one scheduler per process: after a 2-thread run, a 1-thread run failed
    ("already been initialized to use 2 threads") and had been reported as no answer."""
    spec = parse(MISSCORED_START)
    for threads in (None, 1, 2, 1, None, 2):
        r = solve(spec, method="exact", threads=threads)
        assert r.status.value == "optimal" and math.isclose(r.objective, 1.1), (threads, r.log)


def test_native_stdout_goes_to_the_solver_log(capfd: pytest.CaptureFixture[str]) -> None:
    """C-level writes to descriptor 1 inside a capture land in its text, not on stdout."""
    import ctypes
    import os

    libc = ctypes.CDLL(None)
    with captured_stdout() as outer:
        os.write(1, b"outer ")
        with captured_stdout() as inner:
            libc.puts(b"from C")
            libc.fflush(None)
        os.write(1, b"again")
    assert inner.text == "from C\n" and outer.text == "outer again"
    assert capfd.readouterr().out == ""
    spec = parse(MISSCORED_START)
    for solver in ("highs", "scip"):
        r = solve(spec, method="exact", solver=solver)
        assert r.status.value == "optimal"
    assert capfd.readouterr().out == ""


def test_captures_on_threads_leave_stdout_intact(capfd: pytest.CaptureFixture[str]) -> None:
    """Solver runs on a thread pool (bottleneck-guess can use one) open and close captures
    out of order; descriptor 1 must still be stdout afterwards."""
    import os
    import threading

    first_in, second_in, first_may_leave = threading.Event(), threading.Event(), threading.Event()
    texts: dict[str, str] = {}

    def first() -> None:
        with captured_stdout() as got:
            first_in.set()
            second_in.wait(5)
            os.write(1, b"one")
            first_may_leave.wait(5)
        texts["first"] = got.text

    def second() -> None:
        first_in.wait(5)
        with captured_stdout() as got:
            second_in.set()
            first_may_leave.set()  # the first leaves while the second is still open
            threading.Event().wait(0.2)
            os.write(1, b"two")
        texts["second"] = got.text

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert "one" in texts["first"] + texts["second"] and "two" in texts["second"]
    capfd.readouterr()
    os.write(1, b"visible")
    assert capfd.readouterr().out == "visible"

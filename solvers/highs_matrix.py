"""HiGHS through highspy on a MatrixMIP: time limit, relative gap, threads, MIP start.

Why it stopped (HiGHS's model status) is kept apart from what it has (a primal solution,
the dual bound, HiGHS's log), as in Pyomo's results (solvers/outcome.py). The caller
re-scores any solution with the evaluator; a time limit with no solution is
"no_solution", never an optimum.

HiGHS has been seen to overrun its own time limit by 5-9 s (presolve, the root LP), so
the caller's wall-clock deadline is also enforced through HiGHS's interrupt callbacks,
which fire inside simplex, IPM and branch-and-bound; they also stop it on Ctrl-C
(runtime/interrupt.py) and once the user's gap is met by our definition
(`gap_reached`). New incumbents are reported live through `progress`. A model with no
integer column is solved as an LP; its optimum is its bound.

The objective HiGHS reports is checked against c.x of the solution it returns. HiGHS
1.16.0 with a MIP start can disagree: its presolve's aggregator moves part of the
objective into an offset, the start's objective in the reduced space leaves that offset
out, and HiGHS then reports that value (0.1 for a start worth 1.1) as both its objective
and its dual bound, "Optimal". Such a run's status and bound are not trusted: the model is
solved again without the start (the caller still has the start as a candidate).
HiGHS's stdout (its banner, since 1.16) is captured for the whole session and put at the
head of its log (runtime/capture.py)."""
from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Callable

import numpy as np
from partdsl.core.result import Status
from partdsl.models.matrix import MatrixMIP
from partdsl.runtime import interrupt
from partdsl.runtime.capture import captured_stdout, solver_call
from partdsl.runtime.deadline import Deadline
from partdsl.solvers.outcome import (
    GAP_REACHED,
    REPORT_EVERY,
    MipOutcome,
    NativeSolverError,
    checked,
    gap_reached,
    mip_status_line,
    outcome,
    solver_gap,
)

# HiGHS (1.12 to 1.16 at least; ERGO-Code/HiGHS issues 2782, 2808) can end a MIP with "MIP
# solver claims optimality, but with num/max/sum primal(1/1e-06/1e-06) infeasibilities" and
# a Solve error: its final check finds a violation at its own feasibility tolerance. One
# re-solve with a tighter tolerance lands inside it (the answer is re-scored anyway).
CLAIMS_OPTIMALITY = "claims optimality, but with"
RETRY_TOLERANCE = 1e-7

# HiGHS 1.16's feasibility jump heuristic, run once before the root LP, does not stop at the
# time limit on large models: a 440-node DiviML module (1,165,407 nonzeros, BN-Inception at
# B = 1) ran 12.9 s at a 4 s limit and 14.8 s at 8 s with it, 4.3 s and 8.3 s without;
# GoogLeNet's 126-node module (173,919) kept its limits either way. Above this size it is off
# (our MIPs above it come with a MIP start or a heuristic's incumbent anyway).
JUMP_MAX_NONZEROS = 250_000


def size_options(mip: MatrixMIP) -> dict[str, float | str | bool]:
    """HiGHS options chosen by the model's size (see JUMP_MAX_NONZEROS)."""
    return {"mip_heuristic_run_feasibility_jump": False} if mip.A.nnz > JUMP_MAX_NONZEROS else {}


def solve_highs(mip: MatrixMIP, time_limit: Deadline | float | None = None, gap: float | None = None,
                threads: int | None = None, start: np.ndarray | None = None,
                progress: Callable[[str], None] | None = None) -> MipOutcome:
    """`time_limit`: a Deadline, or seconds from now (None: no limit)."""
    deadline = Deadline.of(time_limit)
    with captured_stdout() as printed:
        out = checked("HiGHS", lambda until, use_start: _run(mip, until, gap, threads, start if use_start else None,
                                                             progress),
                      lambda o: float(mip.c @ o.x) if o.x is not None else None, deadline, start is not None,
                      progress)
    return replace(out, log=printed.text + out.log)


def _run(mip: MatrixMIP, deadline: Deadline, gap: float | None, threads: int | None,
         start: np.ndarray | None, progress: Callable[[str], None] | None) -> MipOutcome:
    """One HiGHS run, checked where HiGHS is known to be wrong, each time solved once more
    in the time left: its "claims optimality" Solve error, with a tighter feasibility
    tolerance; an "infeasible" verdict, with presolve off, since its MIP presolve has
    declared feasible models infeasible (HiGHS issues 1958, 2388, 3090; 1.16 on a latency
    IP with a 1e-6 work, tests/models/test_latency.py) and only an agreeing second run is kept."""
    try:
        out = _run_once(mip, deadline, gap, threads, start, progress, {})
    except NativeSolverError as e:
        if CLAIMS_OPTIMALITY not in str(e):
            raise
        out = _run_once(mip, deadline, gap, threads, start, progress, {"mip_feasibility_tolerance": RETRY_TOLERANCE})
        return replace(out, log=f"{e}; solved again with mip_feasibility_tolerance {RETRY_TOLERANCE:g}\n" + out.log)
    if out.status != Status.INFEASIBLE or not mip.integer.any():
        return out
    again = _run_once(mip, deadline, gap, threads, start, progress, {"presolve": "off"})
    note = "HiGHS said infeasible; solved again with presolve off: " + (
        "infeasible too" if again.status == Status.INFEASIBLE else f"{again.status.value} ({again.why})")
    return replace(again, log=out.log + "\n" + note + "\n" + again.log)


def _run_once(mip: MatrixMIP, deadline: Deadline, gap: float | None, threads: int | None,
              start: np.ndarray | None, progress: Callable[[str], None] | None,
              options: dict[str, float | str | bool]) -> MipOutcome:
    import highspy

    h = highspy.Highs()
    h.setOptionValue("log_to_console", False)  # its log is kept in the outcome instead
    log: list[str] = []
    h.cbLogging += lambda e: log.append(e.message)
    limit = deadline.seconds()  # the one conversion: HiGHS's own limit, in seconds
    if limit is not None:
        h.setOptionValue("time_limit", float(limit))
    at_gap = _enforce(h, deadline, gap, progress)
    # HiGHS stops at its own relative gap (default 1e-4) or absolute gap (1e-6)
    h.setOptionValue("mip_rel_gap", solver_gap(gap))
    h.setOptionValue("mip_abs_gap", 0.0)
    if threads is not None:
        h.setOptionValue("threads", int(threads))
    for name, value in {**size_options(mip), **options}.items():
        h.setOptionValue(name, value)  # an option this HiGHS lacks is an error status, not an exception
    pass_model(h, mip)
    if start is not None:
        sol = highspy.HighsSolution()
        sol.col_value = list(start)
        sol.value_valid = True
        h.setSolution(sol)
    fit_scheduler(threads)
    with solver_call():
        ran = h.run()
    if ran == highspy.HighsStatus.kError:
        raise NativeSolverError("HiGHS: " + (" ".join(ln.strip() for ln in log if "ERROR" in ln) or
                                             h.modelStatusToString(h.getModelStatus())))
    ms = h.getModelStatus()
    info = h.getInfo()
    why = h.modelStatusToString(ms)
    ours = ms == highspy.HighsModelStatus.kInterrupt and not interrupt.requested()
    by_gap = ours and at_gap[0]
    if ours:  # our gap check or our wall-clock deadline interrupted it, not the user
        why = GAP_REACHED if by_gap else "Time limit reached"
    has = info.primal_solution_status == 2  # kSolutionStatusFeasible
    x = np.array(h.getSolution().col_value) if has else None
    obj = info.objective_function_value if has else np.inf
    bound = info.mip_dual_bound if mip.integer.any() else (obj if ms == highspy.HighsModelStatus.kOptimal
                                                             else -np.inf)
    return outcome(why, ms == highspy.HighsModelStatus.kOptimal or by_gap,
                   ms == highspy.HighsModelStatus.kInfeasible,
                   has, x, obj, bound, "".join(log))


_scheduler = {"threads": None}  # the thread count HiGHS's process-wide scheduler was last set up for
_scheduler_lock = threading.Lock()


def fit_scheduler(threads: int | None) -> None:
    """HiGHS runs its parallel parts on one scheduler per process, set up by the first run;
    a later run that asks for another thread count fails ("the scheduler has already been
    initialized to use 2 threads": HiGHS 1.16's MIP is parallel by default, so any run
    sets it up). Reset it when an explicit count differs from the one it has. A run
    without `threads` takes whatever scheduler there is. Used by the Pyomo path too."""
    import highspy

    with _scheduler_lock:
        if threads is not None and _scheduler["threads"] != int(threads):
            highspy.Highs.resetGlobalScheduler(True)
        _scheduler["threads"] = int(threads) if threads is not None else (_scheduler["threads"] or 0)


def pass_model(h, mip: MatrixMIP) -> None:  # type: ignore[no-untyped-def]
    """Hand the matrices to a highspy.Highs instance (column-wise, no copy through Python rows)."""
    import highspy

    A = mip.A.tocsc()
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = A.shape[1], A.shape[0]
    lp.col_cost_ = mip.c
    lp.col_lower_, lp.col_upper_ = mip.col_lo, mip.col_hi
    lp.row_lower_, lp.row_upper_ = mip.row_lo, mip.row_hi
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = A.indptr.astype(np.int32)
    lp.a_matrix_.index_ = A.indices.astype(np.int32)
    lp.a_matrix_.value_ = A.data
    lp.integrality_ = [highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous
                       for i in mip.integer]
    h.passModel(lp)


def _enforce(h, deadline: Deadline, gap: float | None,  # type: ignore[no-untyped-def]
             progress: Callable[[str], None] | None) -> list[bool]:
    """Interrupt HiGHS at the wall-clock deadline, on Ctrl-C, or once our gap is met
    (`gap_reached`); report improving solutions, and the bound every REPORT_EVERY seconds
    in between. Returns a flag list, [True] once the gap stopped it."""
    at_gap = [False]

    def stop(e) -> None:  # type: ignore[no-untyped-def]
        if deadline.passed() or interrupt.requested():
            e.interrupt()

    h.cbSimplexInterrupt += stop
    h.cbIpmInterrupt += stop
    last = [time.monotonic()]

    def report(e, force: bool) -> None:  # type: ignore[no-untyped-def]
        now = time.monotonic()
        if progress is not None and (force or now - last[0] >= REPORT_EVERY):
            last[0] = now
            out = e.data_out
            progress(mip_status_line("HiGHS", out.mip_primal_bound if not force else out.objective_function_value,
                                     out.mip_dual_bound, out.mip_node_count))

    def mip(e) -> None:  # type: ignore[no-untyped-def]
        stop(e)
        if gap_reached(e.data_out.mip_primal_bound, e.data_out.mip_dual_bound, gap):
            at_gap[0] = True
            e.interrupt()
        report(e, False)

    h.cbMipInterrupt += mip
    if progress is not None:
        h.cbMipImprovingSolution += lambda e: report(e, True)
    return at_gap

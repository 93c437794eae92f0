"""SCIP through PySCIPOpt on a MatrixMIP: time limit, gap, threads, MIP start.

SCIP's own relative gap divides by min(|primal|, |dual|); partdsl reports one gap,
|incumbent - bound| / |incumbent|, computed by solve() from the re-scored incumbent and
the dual bound returned here, never from SCIP's incumbent value (which has been seen to
be a placeholder such as 100000 at a time limit). SCIP's "no bound yet" is its infinity
(1e20), returned here as -inf so that it is never reported as a proven bound.

SCIP's symmetry detection (nauty) is not interrupted by the time limit: on
inceptionv3_training it searched 116 s under a 30 s limit and then handled 1 of the 1500
generators it found. Its search depth is capped at 100 levels (SCIP's default: 10000):
there nauty gave up after 0.03 s (as at 1000 levels). Whether small models lose useful
symmetry handling by the cap was not measured; the HiGHS/SCIP agreement tests pass. The time limit is set after the model is
built, to what is left of the caller's budget."""
from __future__ import annotations

import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

import numpy as np
from partdsl.models.matrix import MatrixMIP
from partdsl.runtime import interrupt
from partdsl.runtime.capture import captured_stdout, solver_call
from partdsl.runtime.deadline import Deadline
from partdsl.solvers.outcome import (
    GAP_REACHED,
    REPORT_EVERY,
    MipOutcome,
    gap_reached,
    mip_status_line,
    outcome,
    solver_gap,
)

NAUTY_MAX_LEVEL = 100


def solve_scip(mip: MatrixMIP, time_limit: Deadline | float | None = None, gap: float | None = None,
               threads: int | None = None, start: np.ndarray | None = None,
               progress: Callable[[str], None] | None = None) -> MipOutcome:
    """`time_limit`: a Deadline, or seconds from now (None: no limit)."""
    with captured_stdout() as printed:  # the whole session: SCIP prints on stdout even with output hidden
        out = _solve(mip, Deadline.of(time_limit), gap, threads, start, progress)
    return replace(out, log=printed.text + out.log)


def _solve(mip: MatrixMIP, deadline: Deadline, gap: float | None, threads: int | None,
           start: np.ndarray | None, progress: Callable[[str], None] | None) -> MipOutcome:
    m, xs = scip_model(mip)
    m.setParam("propagating/symmetry/nautymaxlevel", NAUTY_MAX_LEVEL)
    m.setParam("limits/gap", solver_gap(gap))
    m.setParam("limits/absgap", 0.0)
    m.setParam("numerics/feastol", 1e-7)  # the dual bound must not lag the evaluator-scored incumbent
    if threads is not None:
        m.setParam("parallel/maxnthreads", int(threads))
    if start is not None:
        sol = m.createSol()
        for x, v in zip(xs, start):
            m.setSolVal(sol, x, float(v))
        m.addSol(sol, free=True)
    limit = deadline.seconds()  # the one conversion: SCIP's own limit, in seconds
    if limit is not None:
        m.setParam("limits/time", limit)
    watch = _watch(deadline, gap, progress)
    m.includeEventhdlr(watch, "partdsl", "wall-clock deadline, Ctrl-C, progress")
    with tempfile.TemporaryDirectory() as tmp:
        logfile = os.path.join(tmp, "scip.log")
        m.setLogfile(logfile)  # written even with the console output hidden
        with solver_call():  # SCIP catches Ctrl-C itself (misc/catchctrlc) and stops with "userinterrupt"
            m.optimize()
        m.setLogfile(None)
        log = Path(logfile).read_text(errors="replace") if os.path.exists(logfile) else ""
    status = m.getStatus()
    at_gap = status == "userinterrupt" and watch.at_gap
    if status == "userinterrupt" and not (watch.at_deadline or at_gap):  # Ctrl-C, not our checks
        interrupt.request()
    if at_gap:
        status = GAP_REACHED
    has = m.getNSols() > 0
    x = np.array([m.getVal(v) for v in xs]) if has else None
    bound = m.getDualbound()
    if m.isInfinity(abs(bound)):
        bound = -np.inf if bound < 0 else np.inf
    return outcome(status, status == "optimal" or at_gap, status == "infeasible", has, x,
                   m.getObjVal() if has else None, bound, log)


def scip_model(mip: MatrixMIP):  # type: ignore[no-untyped-def]
    """A PySCIPOpt model of the matrices (output hidden) and its variables, in column order."""
    from pyscipopt import Model, quicksum

    m = Model()
    m.hideOutput()
    xs = [m.addVar(lb=None if np.isinf(lo) else float(lo), ub=None if np.isinf(hi) else float(hi),
                   vtype="I" if integer else "C", obj=float(c))
          for lo, hi, integer, c in zip(mip.col_lo, mip.col_hi, mip.integer, mip.c)]
    A = mip.A.tocsr()
    for r in range(A.shape[0]):
        lo, hi = mip.row_lo[r], mip.row_hi[r]
        cols, vals = A.indices[A.indptr[r]:A.indptr[r + 1]], A.data[A.indptr[r]:A.indptr[r + 1]]
        expr = quicksum(float(v) * xs[c] for c, v in zip(cols, vals))
        if np.isfinite(lo) and np.isfinite(hi) and lo == hi:
            m.addCons(expr == float(lo))
        else:
            if np.isfinite(lo):
                m.addCons(expr >= float(lo))
            if np.isfinite(hi):
                m.addCons(expr <= float(hi))
    return m, xs


def _watch(deadline: Deadline, gap: float | None,  # type: ignore[no-untyped-def]
           progress: Callable[[str], None] | None):
    """An event handler: stop SCIP at the wall-clock deadline (its own limit is checked
    between its steps), when Ctrl-C was flagged, or once the user's gap is met by our
    definition (`gap_reached`); report new incumbents, and the bound every REPORT_EVERY
    seconds."""
    from pyscipopt import SCIP_EVENTTYPE, Eventhdlr

    events = SCIP_EVENTTYPE.BESTSOLFOUND | SCIP_EVENTTYPE.NODESOLVED

    class Watch(Eventhdlr):  # type: ignore[misc]
        at_deadline = False
        at_gap = False
        last = time.monotonic()

        def eventinit(self) -> None:
            self.model.catchEvent(events, self)

        def eventexit(self) -> None:
            self.model.dropEvent(events, self)

        def eventexec(self, event) -> None:  # type: ignore[no-untyped-def]
            now = time.monotonic()
            if deadline.passed() or interrupt.requested():
                self.at_deadline = not interrupt.requested()
                self.model.interruptSolve()
            found = event.getType() == SCIP_EVENTTYPE.BESTSOLFOUND
            report = progress is not None and (found or now - self.last >= REPORT_EVERY)
            if not (gap or report):  # nothing to read at this node
                return
            m = self.model  # at this event getPrimalbound() still holds the previous incumbent
            primal = m.getSolObjVal(m.getBestSol()) if found else m.getPrimalbound()
            dual = m.getDualbound()
            if not self.at_gap and gap_reached(primal, dual, gap):
                self.at_gap = True
                m.interruptSolve()
            if report:
                self.last = now
                progress(mip_status_line("SCIP", primal, dual, m.getNNodes()))

    return Watch()

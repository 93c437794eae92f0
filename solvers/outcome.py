"""What every MIP adapter hands back (HiGHS, SCIP, any Pyomo solver): why it stopped,
kept apart from what it has (a primal solution, the dual bound), as in Pyomo's results,
with the solver's own log. Plus what the adapters share: the gap to ask for and the
progress line of a running MIP."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np
from partdsl.core.result import Status, relative_gap
from partdsl.runtime.deadline import Deadline

REPORT_EVERY = 10.0  # seconds between progress lines of a MIP that finds no new incumbent


@dataclass(frozen=True)
class MipOutcome:
    status: Status  # what it has: optimal | feasible | infeasible | no_solution
    why: str  # the solver's own word for why it stopped
    x: np.ndarray | None  # the solution (matrix path; the Pyomo path leaves it in the model)
    objective: float  # the solver's value: never reported, the evaluator re-scores the solution
    bound: float  # its dual bound (-inf if none)
    log: str = ""  # the solver's own log


def outcome(why: str, optimal: bool, infeasible: bool, has: bool, x: np.ndarray | None,
            objective: float | None, bound: float, log: str = "") -> MipOutcome:
    """Map a solver's answer to a MipOutcome: a stop without a solution is "no_solution",
    never an optimum."""
    if infeasible:
        return MipOutcome(Status.INFEASIBLE, why, None, math.inf, math.inf, log)
    obj = float(objective) if has and objective is not None else math.inf
    status = Status.OPTIMAL if optimal and has else Status.FEASIBLE if has else Status.NO_SOLUTION
    return MipOutcome(status, why, x if has else None, obj, bound, log)


class NativeSolverError(RuntimeError):
    """A solver reported an error instead of an answer (its own words in the message);
    solvers/backends.failures turns it into SolverFailed, as a solver's exception."""


GAP_REACHED = "Gap reached"  # why, when our own gap check stopped a solver (not its own)


def gap_reached(primal: float, dual: float, gap: float | None) -> bool:
    """Our gap, |primal - dual| / |primal| (core/result.py), within 99% of the target:
    the adapters stop a solver there themselves. Solvers are asked for half the gap
    (`solver_gap`) because they measure theirs differently, so without this check a run
    that met the user's target went on, up to its time limit (SCIP on gnmt_training, any
    split: 0.84% against a 1% target, 20 minutes). Gap 0 is left to the solver."""
    if not gap or abs(primal) >= 1e19 or abs(dual) >= 1e19:  # no target, or a solver's infinity
        return False
    return relative_gap(primal, dual) <= 0.99 * gap


def solver_gap(gap: float | None) -> float:
    """The relative gap to ask a MIP solver for. Ours is |incumbent - bound| / |incumbent|
    <= max(gap, 1e-9); solvers measure theirs slightly differently, so ask for half."""
    return 0.5 * max(float(gap or 0.0), 1e-9)


def mip_status_line(solver: str, primal: float, dual: float, nodes: int) -> str:
    """One progress line of a running MIP (a solver's infinities shown as 'none')."""
    def show(v: float) -> str:
        return f"{v:.6g}" if abs(v) < 1e19 else "none"

    return f"{solver}: incumbent {show(primal)}, bound {show(dual)}, {nodes:,} nodes"


def checked(name: str, run: Callable[[Deadline, bool], MipOutcome], value: Callable[[MipOutcome], float | None],
            deadline: Deadline, started: bool, progress: Callable[[str], None] | None = None) -> MipOutcome:
    """`run(deadline, use_start)`, trusting the solver's claims only if its objective
    matches `value(out)`, the objective of the solution it returned (None: no solution).
    With a MIP start a mismatch means a mis-scored start (HiGHS 1.16's presolve aggregator
    reported "Optimal 0.1" for a 1.1 solution): solve again without it, in the time left.
    A mismatch that remains, or that no time is left to re-solve (less than the first run
    took), keeps the solution but drops the status and bound."""
    from partdsl.runtime import interrupt

    def agrees(out: MipOutcome) -> bool:
        ours = value(out)
        return ours is None or math.isclose(ours, out.objective, rel_tol=1e-6, abs_tol=1e-6)

    began = time.monotonic()
    out = run(deadline, started)
    took = time.monotonic() - began
    # again only with at least the first run's time left: a run past its limit in presolve (which
    # HiGHS does not interrupt) ran 4 s more, then 4 s of presolve again (a 941-node DiviML module,
    # --time-limit 10: 14 s)
    if started and not agrees(out) and not interrupt.requested() and deadline.left() >= took:
        note = (f"partdsl: {name} reported objective {out.objective:.9g} for a solution whose objective is "
                f"{value(out):.9g}; with a MIP start its status and bound cannot be trusted (seen with HiGHS "
                "1.16's presolve aggregator), so it was solved again without the start\n")
        if progress is not None:
            progress(f"{name}: its objective disagrees with its solution; solving again without the MIP start")
        again = run(deadline, False)
        out = replace(again, log=out.log + note + again.log)
    if not agrees(out):
        out = replace(out, status=Status.FEASIBLE, bound=-math.inf,
                      log=out.log + f"partdsl: {name}'s objective disagrees with its solution; its bound is not used\n")
    return out

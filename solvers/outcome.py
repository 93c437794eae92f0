"""What every MIP adapter hands back (HiGHS, SCIP, any Pyomo solver): why it stopped,
kept apart from what it has (a primal solution, the dual bound), as in Pyomo's results,
with the solver's own log. Plus what the adapters share: the gap to ask for and the
progress line of a running MIP."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .result import relative_gap

REPORT_EVERY = 10.0  # seconds between progress lines of a MIP that finds no new incumbent


@dataclass(frozen=True)
class MipOutcome:
    status: str  # optimal | feasible | infeasible | no_solution
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
        return MipOutcome("infeasible", why, None, math.inf, math.inf, log)
    obj = float(objective) if has and objective is not None else math.inf
    status = "optimal" if optimal and has else "feasible" if has else "no_solution"
    return MipOutcome(status, why, x if has else None, obj, bound, log)


class NativeSolverError(RuntimeError):
    """A solver reported an error instead of an answer (its own words in the message);
    solvers/backends.failures turns it into SolverFailed, as a solver's exception."""


GAP_REACHED = "Gap reached"  # why, when our own gap check stopped a solver (not its own)


def gap_reached(primal: float, dual: float, gap: float | None) -> bool:
    """Our gap, |primal - dual| / |primal| (solvers/result.py), within 99% of the target:
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

"""solvers/outcome.checked: a solver's answer whose objective disagrees with its solution
under a MIP start is solved again without the start, but only with at least the first
run's time left (a run that overran its limit in presolve would overrun it again); either
way a disagreement left standing keeps the solution and drops the status and bound."""
from __future__ import annotations

import time

import numpy as np
from partdsl.core.result import Status
from partdsl.runtime.deadline import Deadline
from partdsl.solvers.outcome import MipOutcome, checked, outcome


def _runs(first_takes: float) -> tuple[list[bool], object]:
    calls: list[bool] = []

    def run(deadline: Deadline, use_start: bool) -> MipOutcome:
        calls.append(use_start)
        if use_start:
            time.sleep(first_takes)  # the first run, with the start: its objective is mis-scored (1.0 for 2.0)
        return outcome("Optimal", True, False, True, np.array([2.0]), 1.0 if use_start else 2.0, 0.5)

    return calls, run


def _value(o: MipOutcome) -> float | None:
    return None if o.x is None else float(o.x[0])


def test_a_mis_scored_answer_under_a_start_is_solved_again_with_time_left() -> None:
    calls, run = _runs(0.0)
    out = checked("HiGHS", run, _value, Deadline.after(60.0), True)
    assert calls == [True, False] and out.status is Status.OPTIMAL and out.objective == 2.0


def test_without_the_first_runs_time_left_it_is_kept_without_status_or_bound() -> None:
    calls, run = _runs(0.3)
    out = checked("HiGHS", run, _value, Deadline.after(0.2), True)
    assert calls == [True]
    assert out.status is Status.FEASIBLE and out.bound == -np.inf and "disagrees" in out.log

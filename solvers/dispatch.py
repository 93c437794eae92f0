"""Run a model on a solver by name: a MatrixMIP on HiGHS or SCIP (the matrix adapters),
a Pyomo model on any solver Pyomo knows (solvers/pyomo_adapter.py). A solver library's
own exception becomes SolverFailed here (solvers/registry.failures)."""
from __future__ import annotations

from typing import Callable

import numpy as np
from partdsl.models.matrix import MatrixMIP
from partdsl.runtime.deadline import Deadline
from partdsl.solvers.outcome import MipOutcome
from partdsl.solvers.registry import DEFAULT_SOLVER, SOLVERS, failures


def solve_matrix(mip: MatrixMIP, solver: str | None, time_limit: Deadline | float | None, gap: float | None,
                 threads: int | None, start: np.ndarray | None = None,
                 progress: Callable[[str], None] | None = None) -> MipOutcome:
    """A MatrixMIP on the adapter the solver's row names (solvers/registry.py; HiGHS by default)."""
    name = solver or DEFAULT_SOLVER
    with failures(name, *mip.A.shape):
        return SOLVERS[name].solve_matrix()(mip, time_limit, gap, threads, start, progress)


def solve_pyomo_model(m, solver: str, time_limit: Deadline | float | None,  # type: ignore[no-untyped-def]
                      gap: float | None, threads: int | None, warm: bool = False) -> MipOutcome:
    """A Pyomo model on any solver Pyomo knows (solvers/pyomo_adapter.py)."""
    from partdsl.solvers.pyomo_adapter import solve_pyomo

    with failures(solver, m.nconstraints(), m.nvariables()):
        return solve_pyomo(m, solver, time_limit, gap, threads, warm)

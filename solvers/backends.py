"""MIP solver backends known by name, and whether each is installed (checked without
importing the solver, as CVXPY does). HiGHS and SCIP come from pip; Gurobi, CPLEX and
CBC work through Pyomo when installed."""
from __future__ import annotations

import importlib.util
import shutil

from ..core.errors import PartError

BACKENDS: dict[str, tuple[str, str]] = {
    # name: (how to detect, install hint)
    "highs": ("module:highspy", "pip install highspy"),
    "scip": ("module:pyscipopt", "pip install pyscipopt"),
    "gurobi": ("module:gurobipy", "pip install gurobipy (and a Gurobi license)"),
    "cplex": ("module:cplex", "pip install cplex (and a CPLEX license)"),
    "cbc": ("exe:cbc", "install the cbc executable (e.g. apt-get install coinor-cbc) or pip install pulp"),
}


class SolverUnavailable(Exception):
    def __init__(self, name: str) -> None:
        super().__init__(f"solver '{name}' is not installed")
        self.name = name
        self.hint = BACKENDS[name][1]


def is_installed(name: str) -> bool:
    how = BACKENDS[name][0]
    kind, what = how.split(":", 1)
    if kind == "module":
        return importlib.util.find_spec(what) is not None
    if what == "cbc":
        from .pyomo_adapter import cbc_executable

        return cbc_executable() is not None
    return shutil.which(what) is not None


def require(name: str) -> None:
    """Raise PartError for an unknown solver name, SolverUnavailable if not installed."""
    if name not in BACKENDS:
        raise PartError(f"unknown solver '{name}'", None, "solvers: " + ", ".join(BACKENDS))
    if not is_installed(name):
        raise SolverUnavailable(name)

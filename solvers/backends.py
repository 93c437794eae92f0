"""MIP solver backends known by name, and whether each is installed (checked without
importing the solver, as CVXPY does). HiGHS and SCIP come from pip; Gurobi, CPLEX and
CBC work through Pyomo when installed. Any other name Pyomo's SolverFactory knows (glpk,
xpress_direct, mosek_direct, gurobi_persistent, ...) is taken too, through Pyomo's
classic interface, when Pyomo finds it available."""
from __future__ import annotations

import importlib.util
import shutil
from contextlib import contextmanager
from typing import Iterator

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
    """A solver (or a peer partitioner, kernels/peers.py) that is not installed: exit 5."""

    def __init__(self, name: str, hint: str | None = None, what: str = "solver") -> None:
        super().__init__(f"{what} '{name}' is not installed")
        self.name = name
        self.hint = hint or (BACKENDS[name][1] if name in BACKENDS else (
            f"Pyomo knows '{name}' but does not find it: install it (and its license) where Pyomo looks"))


class SolverFailed(Exception):
    """A solver stopped with an error of its own (a license or size limit, a crash), not a
    bug of partdsl's and not a mistake in the spec: its message is passed on as it is."""

    def __init__(self, name: str, error: BaseException, rows: int, columns: int) -> None:
        super().__init__(f"solver '{name}' failed on a model of {rows:,} rows x {columns:,} columns: "
                         f"{type(error).__name__}: {error}")
        self.name = name
        limited = any(w in str(error).lower() for w in ("license", "size limit", "size-limit"))
        self.hint = (f"{name}'s license limits the model size (the pip editions of Gurobi and CPLEX take "
                     "2,000 and 1,000 variables or rows): use --solver highs or --solver scip, or a full "
                     "license" if limited else "the solver's own message is above; --solver highs or "
                     "--solver scip may get further")


# the Python packages of the solvers: an exception raised from one of them is the solver's;
# PySCIPOpt raises built-in exceptions whose message starts with "SCIP:"
SOLVER_LIBRARIES = ("gurobipy", "cplex", "pyscipopt", "highspy")


@contextmanager
def failures(name: str, rows: int, columns: int) -> Iterator[None]:
    """Turn a solver library's own exception into SolverFailed; anything else stays a bug."""
    from pyomo.common.errors import ApplicationError  # Pyomo's "the solver run failed"

    from .outcome import NativeSolverError

    try:
        yield
    except Exception as e:
        if (type(e).__module__.split(".")[0] in SOLVER_LIBRARIES or isinstance(e, (ApplicationError, NativeSolverError))
                or str(e).startswith("SCIP:")):
            raise SolverFailed(name, e, rows, columns) from e
        raise


def pyomo_names() -> list[str]:
    """The solver names Pyomo's SolverFactory knows (the internal ones, `_...`, left out)."""
    import pyomo.environ  # noqa: F401  (registers the solver plugins)
    from pyomo.opt import SolverFactory

    return sorted(n for n in SolverFactory if not n.startswith("_"))


def is_installed(name: str) -> bool:
    if name not in BACKENDS:  # another Pyomo solver: Pyomo says whether it finds it
        from pyomo.opt import SolverFactory

        try:
            return SolverFactory(name).available(exception_flag=False) is True
        except Exception:  # a plugin that cannot even check (a missing library)
            return False
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
    if name not in BACKENDS and name not in pyomo_names():
        raise PartError(f"unknown solver '{name}'", None, "solvers: " + ", ".join(BACKENDS)
                        + ", or any name Pyomo's SolverFactory knows (glpk, xpress_direct, mosek_direct, ...)")
    if not is_installed(name):
        raise SolverUnavailable(name)

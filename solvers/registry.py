"""The one solver registry: each MIP solver's facts live here once (name, display name,
Python library, how to detect it without importing it, install hint, matrix or Pyomo
path and its adapter, Pyomo interface), as linopy's `solver_capabilities.py` does. HiGHS and SCIP come
from pip and take the direct matrix path; Gurobi, CPLEX and CBC work through Pyomo when
installed. Any other name Pyomo's SolverFactory knows (glpk, xpress_direct, ...) is taken
too, through Pyomo's classic interface, when Pyomo finds it available."""
from __future__ import annotations

import importlib.metadata
import importlib.util
import shutil
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from partdsl.core.errors import PartError, close_names
from partdsl.core.solver_errors import SolverFailed, SolverUnavailable


@dataclass(frozen=True)
class SolverInfo:
    name: str  # what --solver takes
    display: str  # how logs and reports name it
    library: str | None  # its Python package (None: an executable); its exceptions are the solver's
    detect: str  # "module:NAME" or "exe:NAME", checked without importing the solver
    hint: str  # how to install it
    adapter: str | None  # its matrix-path adapter, "module:function" (scipy.sparse -> the solver's own API);
    # None: the Pyomo path only
    pyomo: tuple[str, str]  # (Pyomo interface kind, Pyomo solver name) on the Pyomo path
    gap_threads: tuple[str, str] | None = None  # classic interface: option names for (relative gap, threads)

    @property
    def matrix(self) -> bool:
        """Takes the direct matrix path."""
        return self.adapter is not None

    def solve_matrix(self) -> Callable[..., Any]:
        """The adapter's function, imported when first used: (mip, time_limit, gap, threads,
        start, progress) -> MipOutcome."""
        assert self.adapter is not None, self.name
        module, _, function = self.adapter.partition(":")
        return getattr(importlib.import_module(f"partdsl.{module}"), function)


SOLVERS: dict[str, SolverInfo] = {s.name: s for s in (
    SolverInfo("highs", "HiGHS", "highspy", "module:highspy", "pip install highspy",
               "solvers.highs_matrix:solve_highs", ("appsi", "appsi_highs")),
    SolverInfo("scip", "SCIP", "pyscipopt", "module:pyscipopt", "pip install pyscipopt",
               "solvers.scip_matrix:solve_scip", ("contrib", "scip_direct")),
    SolverInfo("gurobi", "Gurobi", "gurobipy", "module:gurobipy", "pip install gurobipy (and a Gurobi license)",
               None, ("contrib", "gurobi_direct")),
    SolverInfo("cplex", "CPLEX", "cplex", "module:cplex", "pip install cplex (and a CPLEX license)", None,
               ("classic", "cplex_direct"), ("mip_tolerances_mipgap", "threads")),
    SolverInfo("cbc", "CBC", None, "exe:cbc",
               "install the cbc executable (e.g. apt-get install coinor-cbc) or pip install pulp", None,
               ("classic", "cbc"), ("ratioGap", "threads")),
)}
DEFAULT_SOLVER = "highs"
MATRIX_SOLVERS = tuple(n for n, s in SOLVERS.items() if s.matrix)
DISPLAY_NAMES = {n: s.display for n, s in SOLVERS.items()}
# the Python packages of the solvers: an exception raised from one of them is the solver's;
# PySCIPOpt raises built-in exceptions whose message starts with "SCIP:"
SOLVER_LIBRARIES = tuple(s.library for s in SOLVERS.values() if s.library)


def display(name: str, via_pyomo: bool = False) -> str:
    """How logs name a solver run: "HiGHS", "SCIP via Pyomo", "glpk via Pyomo"."""
    return (SOLVERS[name].display if name in SOLVERS else name) + (" via Pyomo" if via_pyomo else "")


def uses_matrix(name: str | None, pyomo: bool = False) -> bool:
    """Whether a run of `name` takes the matrix path (HiGHS, SCIP unless Pyomo is asked for)."""
    return not pyomo and (name or DEFAULT_SOLVER) in MATRIX_SOLVERS


def pyomo_interface(name: str) -> tuple[str, str]:
    """(interface kind, Pyomo solver name): any other Pyomo solver goes through its classic interface."""
    return SOLVERS[name].pyomo if name in SOLVERS else ("classic", name)


def install_hint(name: str) -> str:
    if name in SOLVERS:
        return SOLVERS[name].hint
    return f"Pyomo knows '{name}' but does not find it: install it (and its license) where Pyomo looks"


def version(name: str) -> str | None:
    """The installed version of a solver's Python package (None: not installed, or no package)."""
    lib = SOLVERS[name].library if name in SOLVERS else None
    try:
        return importlib.metadata.version({"pyscipopt": "PySCIPOpt"}.get(lib, lib)) if lib else None
    except importlib.metadata.PackageNotFoundError:
        return None


@contextmanager
def failures(name: str, rows: int, columns: int) -> Iterator[None]:
    """Turn a solver library's own exception into SolverFailed; anything else stays a bug."""
    from partdsl.solvers.outcome import NativeSolverError

    try:
        yield
    except Exception as e:
        # Pyomo's "the solver run failed", looked up only if Pyomo is loaded: the matrix path
        # never imports it (importing Pyomo after SciPy imports scipy.stats too: 0.9 s per process)
        pyomo_errors = sys.modules.get("pyomo.common.errors")
        pyomo_failed = pyomo_errors is not None and isinstance(e, pyomo_errors.ApplicationError)
        if (type(e).__module__.split(".")[0] in SOLVER_LIBRARIES or isinstance(e, NativeSolverError)
                or pyomo_failed or str(e).startswith("SCIP:")):
            raise SolverFailed(name, e, rows, columns) from e
        raise


def pyomo_names() -> list[str]:
    """The solver names Pyomo's SolverFactory knows (the internal ones, `_...`, left out)."""
    import pyomo.environ  # noqa: F401  (registers the solver plugins)
    from pyomo.opt import SolverFactory

    return sorted(n for n in SolverFactory if not n.startswith("_"))


def is_installed(name: str) -> bool:
    if name not in SOLVERS:  # another Pyomo solver: Pyomo says whether it finds it
        from pyomo.opt import SolverFactory

        try:
            return SolverFactory(name).available(exception_flag=False) is True
        except Exception:  # a plugin that cannot even check (a missing library)
            return False
    kind, what = SOLVERS[name].detect.split(":", 1)
    if kind == "module":
        return importlib.util.find_spec(what) is not None
    if what == "cbc":


        return cbc_executable() is not None
    return shutil.which(what) is not None


def require(name: str) -> None:
    """Raise PartError for an unknown solver name, SolverUnavailable if not installed."""
    if name not in SOLVERS and name not in pyomo_names():
        close = close_names(name, SOLVERS)
        raise PartError(f"unknown solver '{name}'", None,
                        (close + " " if close else "") + "solvers: " + ", ".join(SOLVERS)
                        + ", or any name Pyomo's SolverFactory knows (glpk, xpress_direct, mosek_direct, ...)")
    if not is_installed(name):
        raise SolverUnavailable(name, install_hint(name))


def cbc_executable() -> str | None:
    """cbc on PATH, else the binary PuLP ships."""
    found = shutil.which("cbc")
    if found:
        return found
    import warnings

    try:
        from pulp.apis import PULP_CBC_CMD
    except ImportError:
        return None
    with warnings.catch_warnings():  # PuLP 3 warns that version 4 moves the binary to pulp[cbc]
        warnings.simplefilter("ignore", DeprecationWarning)
        cmd = PULP_CBC_CMD()
    return cmd.path if cmd.available() else None

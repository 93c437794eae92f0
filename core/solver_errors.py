"""Errors of an outside library, not of the spec and not of partdsl: a solver (or a peer
partitioner, a plotting or import library) that is not installed (exit 5), and a solver
that failed on its own (exit 6). The solver registry (solvers/registry.py) passes the
install hint in."""
from __future__ import annotations


class SolverUnavailable(Exception):
    """A library that is not installed: exit 5, with how to install it."""

    def __init__(self, name: str, hint: str, what: str = "solver") -> None:
        super().__init__(f"{what} '{name}' is not installed")
        self.name = name
        self.hint = hint


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


def optional(module: str, extra: str, what: str, name: str | None = None):  # type: ignore[no-untyped-def]
    """Import an optional dependency (`module`, the pip package of the same name) or raise
    SolverUnavailable (exit 5) naming the partdsl extra that installs it. The one way every
    importer, plot, executor and peer partitioner asks for its package."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise SolverUnavailable(name or module, hint=f"pip install 'partdsl[{extra}]' (or pip install {module})",
                                what=what) from None

"""Vectorized NumPy heuristics that return assignments (re-scored by the evaluator)."""

from typing import NamedTuple


class Proven(NamedTuple):
    """A kernel's proof: no feasible assignment is better than `bound`."""

    bound: float
    why: str


class Progress(NamedTuple):
    """A kernel's progress message for long runs (shown by `part solve` on stderr)."""

    message: str


class SolverLog(NamedTuple):
    """A MIP solver's own log, kept in the Result (`part solve --solver-log FILE`)."""

    solver: str
    text: str

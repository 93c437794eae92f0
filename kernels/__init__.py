"""Vectorized NumPy heuristics that return assignments (re-scored by the evaluator)."""

from typing import NamedTuple


class Proven(NamedTuple):
    """A kernel's proof: no feasible assignment is better than `bound`."""

    bound: float
    why: str

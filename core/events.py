"""What a method yields to `solve` as it runs: candidates to score, proofs (bounds),
progress messages and MIP solver logs. `solve` (methods/solve.py) re-scores every
Candidate with the evaluator; nothing a method claims about a candidate is trusted."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple, Union

import numpy as np

if TYPE_CHECKING:
    from partdsl.core.schedule import Schedule


class Proven(NamedTuple):
    """A kernel's proof: no feasible assignment is better than `bound`."""

    bound: float
    why: str


class Progress(NamedTuple):
    """A kernel's progress message for long runs (shown by `part solve` on stderr)."""

    message: str


class BudgetSpent(NamedTuple):
    """A search stopped by the budget a portfolio gives long searches when there is no time
    limit (methods/auto.py): the run ends as "search budget", not "all candidates tried"."""

    message: str


class SolverLog(NamedTuple):
    """A MIP solver's own log, kept in the Result (`part solve --solver-log FILE`)."""

    solver: str
    text: str


@dataclass(frozen=True)
class Candidate:
    """An answer to score: a device per node (and, under latency, a subgraph number per
    node), or a DiviML schedule (pieces with their starts). Exactly one of `devices`
    and `schedule` is given."""

    label: str
    devices: np.ndarray | None = None
    subgraphs: np.ndarray | None = None
    schedule: Schedule | None = None
    method: str = ""  # the portfolio member that found it (method `auto`)
    replicas: np.ndarray | None = None  # per device: its stage's replication factor (evaluator/replicas.py)

    def __post_init__(self) -> None:
        if (self.devices is None) == (self.schedule is None):
            raise ValueError("a Candidate holds either devices or a schedule")


Event = Union[Candidate, Proven, Progress, SolverLog, BudgetSpent]

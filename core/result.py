"""Result of a solve: why it stopped (status) separated from what it has (assignment,
objective re-scored by the evaluator, proven bound, gap), as in Pyomo's results."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum

from partdsl.core.evaluation import Evaluation, json_number


class Termination(str, Enum):
    """Why a run stopped (kept apart from what it has, `Status`), as Pyomo's results do."""

    ALL_TRIED = "all candidates tried"  # the method ran to its end: no proof unless exhaustive
    EXHAUSTED = "exhausted"  # an exhaustive method tried every assignment: a proof
    BOUND_REACHED = "bound reached"  # the incumbent met the proven bound within the gap asked for
    TIME_LIMIT = "time limit"
    BUDGET = "search budget"  # no time limit: auto's budget for long searches cut one short
    INTERRUPTED = "interrupted"  # Ctrl-C: the best answer so far is kept

    def __str__(self) -> str:
        return self.value


class Status(str, Enum):
    OPTIMAL = "optimal"  # incumbent meets the proven bound (within the gap asked for)
    FEASIBLE = "feasible"  # an incumbent that satisfies every constraint, optimality not proven
    INFEASIBLE = "infeasible"  # proven: no assignment satisfies the constraints
    NO_SOLUTION = "no_solution"  # stopped (limit or method exhausted) without a feasible incumbent

    def has_solution(self) -> bool:
        return self in (Status.OPTIMAL, Status.FEASIBLE)


def relative_gap(incumbent: float, bound: float) -> float:
    """One definition for every backend: |incumbent - bound| / |incumbent|."""
    if not (math.isfinite(incumbent) and math.isfinite(bound)):
        return math.inf
    if incumbent == bound:
        return 0.0
    return abs(incumbent - bound) / abs(incumbent) if incumbent else math.inf


@dataclass(frozen=True)
class Result:
    status: Status
    method: str
    solver: str
    objective: float  # evaluator score of the incumbent (inf / 0 if none)
    bound: float  # proven bound on the optimum (lower for min, upper for max)
    gap: float
    sense: str
    unit: str
    wall_time_s: float
    assignment: dict[str, str] | None
    evaluation: Evaluation | None
    log: tuple[str, ...] = field(default=(), repr=False)
    stopped: Termination = Termination.ALL_TRIED  # why it stopped
    solver_log: str = field(default="", repr=False)  # the MIP solvers' own logs, one section per run
    subgraphs: dict[str, int] | None = None  # latency with `subgraphs <= q`: each accelerator node's subgraph
    schedule: list[dict] | None = None  # scheduled objectives (DiviML): the pieces with their starts, JSON form
    chosen: str | None = None  # method `auto`: the portfolio member whose answer this is
    replicas: dict[str, int] | None = None  # `replicate <= r`: the stages run data parallel, by lead device

    @property
    def lower_bound(self) -> float:
        return self.bound if self.sense == "min" else self.objective

    @property
    def upper_bound(self) -> float:
        return self.objective if self.sense == "min" else self.bound

    def to_json(self) -> dict:
        ev = self.evaluation
        return {"status": self.status.value, "objective": json_number(self.objective), "sense": self.sense,
                "unit": self.unit, "lower_bound": json_number(self.lower_bound),
                "upper_bound": json_number(self.upper_bound), "bound": json_number(self.bound),
                "gap": json_number(self.gap), "method": self.method,
                **({"chosen": self.chosen} if self.chosen is not None else {}), "solver": self.solver,
                "wall_time_s": round(self.wall_time_s, 6), "stopped": self.stopped.value,
                "assignment": self.assignment,
                **({"subgraphs": self.subgraphs} if self.subgraphs is not None else {}),
                **({"replicas": self.replicas} if self.replicas is not None else {}),
                **({"schedule": self.schedule} if self.schedule is not None else {}),
                "loads": {d: json_number(v) for d, v in ev.loads.items()} if ev else {},
                "violations": [v.to_json() for v in ev.violations] if ev else []}

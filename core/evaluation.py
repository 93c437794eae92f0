"""What the evaluator hands back: an Evaluation (objective, loads, per-device parts, every
violated constraint) and its Violations, with their JSON forms."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from partdsl.core.schedule import Schedule


@dataclass(frozen=True)
class Violation:
    kind: str  # unassigned | unsupported | placement | memory | colocate | contiguous | acyclic | stages | deadlock | batch
    message: str
    nodes: tuple[str, ...] = ()
    device: str | None = None

    def __str__(self) -> str:
        """What a person reads (issue 71: export messages showed the dataclass repr)."""
        return f"{self.kind}: {self.message}"

    def to_json(self) -> dict:
        d: dict = {"kind": self.kind, "message": self.message}
        if self.nodes:
            d["nodes"] = list(self.nodes)
        if self.device:
            d["device"] = self.device
        return d


@dataclass(frozen=True)
class Evaluation:
    objective: float
    sense: str  # min | max
    unit: str  # ms | samples/s
    loads: dict[str, float]
    parts: dict[str, dict[str, float]] = field(default_factory=dict)  # device -> compute/in/out/overflow/fw/bw/memory
    violations: tuple[Violation, ...] = ()
    subgraph: np.ndarray | None = field(default=None, compare=False)  # latency: each node's subgraph number
    schedule: Schedule | None = field(default=None, compare=False)  # scheduled objectives: the timed schedule

    @property
    def feasible(self) -> bool:
        return not self.violations and bool(np.isfinite(self.objective))

    def to_json(self) -> dict:
        return {"objective": json_number(self.objective), "sense": self.sense, "unit": self.unit,
                "feasible": self.feasible,
                "loads": {d: json_number(v) for d, v in self.loads.items()},
                "parts": {d: {k: json_number(v) for k, v in p.items()} for d, p in self.parts.items()},
                "violations": [v.to_json() for v in self.violations]}


def json_number(x: float) -> float | str | None:
    x = float(x)
    return x if np.isfinite(x) else ("inf" if x > 0 else "-inf")


def short_list(names: tuple[str, ...], k: int = 5) -> str:
    return ", ".join(names[:k]) + (f" and {len(names) - k} more" if len(names) > k else "")

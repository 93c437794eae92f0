"""The objectives as one entity: each kind's sense, unit, whether it is scored on a
schedule, its title and how the language writes it. The layers keep tables keyed by
`Kind.name` (methods, formulations, bounds, printers); tests/core/test_objectives.py checks
that every such table has a row for every kind. Adding an objective starts here.

- bottleneck: pipelined max device load (Archer et al. MTPP; Tarnawski et al. sec. 3);
- latency: single stream, accelerator subgraphs invoked whole (Tarnawski sec. 4);
- task_latency: single stream, tasks scheduled on devices (DiviML sec. III-IV, L = 1);
- throughput: a batch's samples per second (DiviML sec. III), maximized.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Kind:
    name: str  # Objective.kind
    sense: str  # "min" or "max"
    unit: str  # of the objective's value
    scheduled: bool  # scored on a schedule of pieces with start times (core/schedule.py)
    title: str  # what the report and `part check` call it
    written: str  # how a spec says it (the printer adds batch, split, training, overlap)
    short: str = ""  # what a plot's title calls it (the name when empty)
    batched: bool = False  # a batch of samples per run (`batch`, `split`), valued per second
    takes: tuple[str, ...] = ()  # the constraints only this objective takes (core/validate.py)

    @property
    def label(self) -> str:
        """Its short name, for a plot's title."""
        return self.short or self.name


KINDS: tuple[Kind, ...] = (
    Kind("bottleneck", "min", "ms", False, "bottleneck (max device load)", "minimize bottleneck",
         takes=("replicate",)),
    Kind("latency", "min", "ms", False, "latency (single stream, subgraph invocations)", "minimize latency",
         takes=("subgraphs",)),
    Kind("task_latency", "min", "ms", True, "latency (single stream, tasks scheduled on devices)",
         "minimize latency by tasks", short="latency"),
    Kind("throughput", "max", "samples/s", True, "batched throughput", "maximize throughput", batched=True),
)
BY_NAME: dict[str, Kind] = {k.name: k for k in KINDS}
NAMES: tuple[str, ...] = tuple(BY_NAME)
SCHEDULED: tuple[str, ...] = tuple(k.name for k in KINDS if k.scheduled)


def taking(constraint: str) -> Kind:
    """The objective that takes a constraint of its own (`subgraphs`, `replicate`)."""
    return next(k for k in KINDS if constraint in k.takes)


def kind(name: str) -> Kind:
    return BY_NAME[name]

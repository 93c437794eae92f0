"""What the reproduction tables share: a table, one timed solve as a row's cells, and the
ratio of ours to the published value."""
from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "dnn-partitioning"


@dataclass
class Figure:
    """A figure drawn beside the document (benchmarks/repro_figures.py): its file stem, caption
    and what `kind` of picture it is ("steps", "bars", "splits", "scatter") with that kind's `data`."""

    key: str
    caption: str
    kind: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class Table:
    """One table of a paper, reproduced: `head` names the columns, `notes` say what differs."""

    key: str
    title: str
    about: str
    head: tuple[str, ...]
    rows: list[tuple[str, ...]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float | None = 0.0  # None: computed with the table before it
    figures: list[Figure] = field(default_factory=list)  # drawn beside the document, shown under the table

    def markdown(self) -> str:
        out = [f"## {self.title}", "", self.about, "",
               "| " + " | ".join(self.head) + " |", "|" + "|".join("---" for _ in self.head) + "|"]
        out += ["| " + " | ".join(r) + " |" for r in self.rows]
        if self.notes:
            out += [""] + [f"- {n}" for n in self.notes]
        out += ["", f"_{self.seconds:.0f} s to compute._" if self.seconds is not None
                else "_Computed with the table above._", ""]
        return "\n".join(out)


@dataclass(frozen=True)
class Run:
    """One method's answer: its value (re-scored by the evaluator), proven bound, status, time."""

    value: float
    bound: float
    status: str
    seconds: float
    feasible: bool = True
    sense: str = "min"
    timeline: tuple[tuple[float, float], ...] = ()  # (seconds, value) of each new incumbent
    assignment: tuple[str, ...] = ()  # the device of each node, in the graph's order

    @property
    def certificate(self) -> str:
        if self.status.startswith("refused"):
            return self.status
        if not math.isfinite(self.bound) or self.bound == 0 and self.sense == "min":
            return self.status
        if not math.isfinite(self.value):  # no solution: a bound, no gap
            return f"{self.status}, bound {num(self.bound)}"
        gap = abs(self.value - self.bound) / max(abs(self.value), 1e-12)
        if self.status == "optimal" or gap < 1e-9:
            return f"optimal (bound {num(self.bound)})"
        return f"{self.status}, bound {num(self.bound)}, gap {100 * gap:.1f}%"


def solved(spec: Any, method: str, time_limit: float | None = None, **options: object) -> Run:
    """`method` on `spec` (seed 0) as a Run; a method that cannot run is an error for the caller."""
    from partdsl import solve
    from partdsl.core.errors import PartError
    from partdsl.core.solver_errors import SolverUnavailable

    t = time.monotonic()
    try:
        r = solve(spec, method=method, seed=0, time_limit=time_limit, options=options or None)
    except PartError as e:  # the method refuses this spec (a feature it does not model): the row says so
        return Run(math.nan, math.nan, f"refused: {e.message}", time.monotonic() - t, False)
    except SolverUnavailable as e:  # an optional package (a peer, a commercial solver) is not installed
        return Run(math.nan, math.nan, f"not run: {e} ({e.hint})", time.monotonic() - t, False)
    ev = r.evaluation
    timeline = tuple((float(m.group(1)), float(m.group(2))) for m in map(INCUMBENT.match, r.log) if m)
    where = tuple(r.assignment[n.name] for n in spec.graph.nodes) if r.assignment else ()
    return Run(r.objective, r.bound, r.status.value, time.monotonic() - t, ev is not None and ev.feasible, r.sense,
               timeline, where)


INCUMBENT = re.compile(r"^\s*([\d.]+)s\s+incumbent (\S+)")  # solve's timed log line of a new incumbent


def num(x: float | None, digits: int = 2) -> str:
    if x is None:
        return "-"
    return f"{x:.{digits}f}" if math.isfinite(x) else "inf"


def sig(x: float) -> str:
    """Four significant digits, without an exponent."""
    if math.isnan(x):
        return "-"
    if not math.isfinite(x):
        return "inf"
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


def ratio(ours: float | None, published: float | None) -> str:
    if ours is None or published is None or not math.isfinite(ours) or published == 0:
        return "-"
    return f"{ours / published:.3f}"


def row(workload: str, method: str, published: float | None, run: Run | None, note: str = "",
        digits: int = 2) -> tuple[str, ...]:
    """The cells: workload, method, published, ours, ours / published, seconds, certificate."""
    if run is None or math.isnan(run.value):
        why = "; ".join(x for x in (note, run.status if run is not None else "") if x)
        return (workload, method, num(published, digits), "-", "-", "-", why)
    value = num(run.value, digits) + ("" if run.feasible else " (infeasible)")
    cert = run.certificate + (f"; {note}" if note else "")
    return (workload, method, num(published, digits), value, ratio(run.value, published), f"{run.seconds:.1f}", cert)


ROW_HEAD = ("workload", "method", "published", "ours", "ours / published", "seconds", "certificate")


def geomean(xs: list[float]) -> float:
    return math.exp(sum(math.log(max(x, 1e-12)) for x in xs) / len(xs)) if xs else math.nan


def mean_cell(xs: list[float], total: int, digits: int) -> str:
    """The geometric mean of `xs` for a table cell, saying over how many of the `total` runs
    it is when some gave no value (a bound not solved within the limit); - when none did."""
    if not xs:
        return "-"
    return f"{geomean(xs):.{digits}f}" + (f" ({len(xs)} of {total})" if len(xs) < total else "")

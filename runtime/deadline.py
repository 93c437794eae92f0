"""One wall-clock budget from the command line to the solver adapters. `solve` turns the
user's seconds into a Deadline once; methods and kernels pass it down, take a share of
it for their heuristics, and ask it whether it has passed; each solver adapter converts it
once, into the seconds its solver's own time limit option takes."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable, Iterator

MIN_SOLVER_SECONDS = 0.01  # the least time limit handed to a solver (some refuse 0)
UNTIMED_SHARE_SECONDS = 60.0  # a share of an unlimited run (MIP starts): this many seconds


@dataclass(frozen=True)
class Deadline:
    """A point on time.monotonic()'s clock; `at` = inf: no limit."""

    at: float = math.inf

    @classmethod
    def after(cls, seconds: float | None) -> Deadline:
        """A deadline `seconds` from now (None: no limit)."""
        return cls(math.inf if seconds is None else time.monotonic() + max(float(seconds), 0.0))

    @classmethod
    def of(cls, limit: Deadline | float | None) -> Deadline:
        """A Deadline as it is, or seconds from now (None: no limit): how adapters called
        directly with a time limit in seconds take it."""
        return limit if isinstance(limit, Deadline) else cls.after(limit)

    @property
    def limited(self) -> bool:
        return math.isfinite(self.at)

    def passed(self) -> bool:
        return time.monotonic() > self.at

    def left(self) -> float:
        """Seconds left (inf: no limit; negative once passed)."""
        return self.at - time.monotonic()

    def seconds(self) -> float | None:
        """The time limit to hand a solver: None for no limit, else the seconds left, at
        least MIN_SOLVER_SECONDS."""
        return None if not self.limited else max(self.left(), MIN_SOLVER_SECONDS)

    def share(self, fraction: float, untimed: float = UNTIMED_SHARE_SECONDS) -> Deadline:
        """A deadline `fraction` of the time left from now (of `untimed` seconds when
        there is no limit): the budget of a MIP start's heuristics, of a relaxation."""
        left = self.left() if self.limited else untimed
        return Deadline(time.monotonic() + max(left, 0.0) * fraction)


NEVER = Deadline()


@dataclass(frozen=True)
class Stalling(Deadline):
    """A deadline that also passes once a search has stalled: nothing better for
    max(`least` seconds, `fraction` of the time since `origin`), counted from the later of
    `since` (when this search started) and `better()` (when the best value last improved).
    `auto` gives one to its improvement searches when the run has no time limit: they stop
    when more time would likely buy nothing, instead of always spending the whole budget.
    `left()` and `seconds()` still give the hard limit `at` (a solver cannot be asked to
    stop at a stall)."""

    since: float = 0.0
    origin: float = 0.0
    better: Callable[[], float] = lambda: -math.inf
    least: float = 0.5
    fraction: float = 0.25

    def passed(self) -> bool:
        now = time.monotonic()
        if now > self.at:
            return True
        idle = now - max(self.since, self.better())
        return idle > max(self.least, self.fraction * (now - self.origin))


def timed_chunks(total: int, deadline: Deadline, first: int = 1, target: float = 0.2) -> Iterator[tuple[int, int]]:
    """(start, end) ranges covering 0 .. total, each sized from the last one's time to take
    about `target` seconds (a row costs 10 us at 1,000 units and 0.1 s at 100,000), so
    that the deadline is checked often at any size. Stops early once the deadline passes."""
    i0, size = 0, max(1, first)
    while i0 < total:
        if deadline.passed():
            return
        t = time.monotonic()
        i1 = min(total, i0 + size)
        yield i0, i1
        took = time.monotonic() - t
        size = max(1, min(4 * size, int(size * target / took) if took > 0 else 4 * size))
        i0 = i1

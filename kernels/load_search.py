"""Iterated local search for the bottleneck objective (max device load), any split: the
method `load_search`, and the polish `exact` applies to its MIP start.

Tarnawski et al. (sec. 6, "local search") move single nodes while the max load drops;
the max is flat for most moves, so that search stalls early. Here a move is scored by
(objective, sum of squared loads): unloading any device counts, and the search walks
the plateaus of the max. Moves carry whole colocation units. Each step takes the best
move of a unit on a critical device (the most loaded one, per phase under GPipe); when
none improves, every unit is tried. Loads come from the evaluator's own cost model
(`core.evaluate.bottleneck_loads`); memory is checked per move, and under contiguity,
acyclicity or a stage limit the evaluator's `violations` vets a move before it is taken.
At a local optimum the best assignment is perturbed (a few units of a critical device
sent to random allowed devices) and the descent restarts, until `stall` perturbations
in a row bring nothing or the deadline passes.
"""
from __future__ import annotations

import math
import time
from typing import Callable, Iterator

import numpy as np

from ..core.evaluate import bottleneck_loads, memory_used, violations
from ..core.ir import Spec
from .units import contract

Candidate = tuple[str, np.ndarray]
Score = tuple[float, float]


class Search:
    """Moves of colocation units between devices, scored by the evaluator's load table."""

    def __init__(self, spec: Spec, dev: np.ndarray) -> None:
        d = spec.dense
        self.spec, self.d = spec, d
        u = contract(d)
        self.unit, self.count = u.unit, u.count
        order = np.argsort(u.unit, kind="stable")
        bounds = np.searchsorted(u.unit[order], np.arange(u.count + 1))
        self.members = [order[bounds[k]:bounds[k + 1]] for k in range(u.count)]
        allowed = np.ones((u.count, d.D), dtype=bool)
        np.logical_and.at(allowed, u.unit, d.allowed)
        self.options = [np.flatnonzero(a) for a in allowed]
        self.params = np.bincount(u.unit, weights=d.params, minlength=u.count)
        hard = spec.constraints.memory == "hard"
        self.cap = d.memory[d.dev_class] * (1 + 1e-12) if hard else np.full(d.D, np.inf)
        c = spec.constraints
        self.vetted = bool(c.contiguous or c.acyclic or c.max_stages is not None)
        self.dev = np.asarray(dev, dtype=np.int64).copy()
        self.mem = memory_used(d, self.dev)
        self.score = self.rate(self.dev)
        self.evaluations = 0

    def rate(self, dev: np.ndarray) -> Score:
        value, table = bottleneck_loads(self.spec, self.d, dev)
        return value, float(np.square(table).sum())

    def critical(self) -> np.ndarray:
        _, table = bottleneck_loads(self.spec, self.d, self.dev)
        table = table.reshape(self.d.D, -1)
        return np.unique(table.argmax(axis=0))

    def units_on(self, devices: np.ndarray) -> np.ndarray:
        on = np.isin(self.dev, devices)
        return np.unique(self.unit[on])

    def feasible(self, dev: np.ndarray) -> bool:
        return not self.vetted or not violations(self.spec, self.d, dev)

    def move(self, k: int, to: int) -> None:
        m = self.members[k]
        here = self.dev[m[0]]
        self.mem[here] -= self.params[k]
        self.mem[to] += self.params[k]
        self.dev[m] = to

    def descend_once(self, units: np.ndarray, deadline: float, tries: int = 8) -> bool:
        """Take the best improving move of `units` that the constraints allow."""
        found: list[tuple[Score, int, int]] = []
        trial = self.dev.copy()
        for k in units:
            m = self.members[k]
            here = trial[m[0]]
            for j in self.options[k]:
                if j == here or self.mem[j] + self.params[k] > self.cap[j]:
                    continue
                trial[m] = j
                s = self.rate(trial)
                self.evaluations += 1
                if _better(s, self.score):
                    found.append((s, int(k), int(j)))
            trial[m] = here
            if time.monotonic() > deadline:
                break
        found.sort()
        for s, k, j in found[:tries]:
            trial = self.dev.copy()
            trial[self.members[k]] = j
            if self.feasible(trial):
                self.move(k, j)
                self.score = s
                return True
        return False

    def descend(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            if self.descend_once(self.units_on(self.critical()), deadline):
                continue
            if not self.descend_once(np.arange(self.count), deadline):
                return

    def perturb(self, rng: np.random.Generator, size: int) -> None:
        pool = self.units_on(self.critical())
        for k in rng.permutation(pool)[:size]:
            here = self.dev[self.members[k][0]]
            fits = [j for j in self.options[k] if j != here and self.mem[j] + self.params[k] <= self.cap[j]]
            if not fits:
                continue
            j = int(rng.choice(fits))
            trial = self.dev.copy()
            trial[self.members[k]] = j
            if self.feasible(trial):
                self.move(int(k), j)
        self.score = self.rate(self.dev)

    def reset(self, dev: np.ndarray, score: Score) -> None:
        self.dev = dev.copy()
        self.mem = memory_used(self.d, self.dev)
        self.score = score


def _better(a: Score, b: Score) -> bool:
    """Lower objective, or the same objective (to 1e-12 relative) and a lower spread."""
    tol = 1e-12 * max(1.0, abs(b[0]))
    return a[0] < b[0] - tol or (a[0] <= b[0] + tol and a[1] < b[1] - 1e-9 * max(1.0, b[1]))


def improve(spec: Spec, start: np.ndarray, deadline: float = math.inf, seed: int = 0, stall: int = 30,
            progress: Callable[[str], None] | None = None) -> Iterator[Candidate]:
    """Yield each assignment better than `start` (which must satisfy the constraints)."""
    s = Search(spec, start)
    rng = np.random.default_rng(seed)
    best_dev, best = s.dev.copy(), s.score
    idle = 0
    rounds = 0
    while idle < stall and time.monotonic() < deadline:
        s.descend(deadline)
        rounds += 1
        if _better(s.score, best) and s.score[0] < best[0] - 1e-12 * max(1.0, best[0]):
            best_dev, best, idle = s.dev.copy(), s.score, 0
            if progress:
                progress(f"load search: {best[0]:.6g} after {rounds} descents, {s.evaluations} moves scored")
            yield f"load search (descent {rounds})", best_dev.copy()
        else:
            idle += 1
            if _better(s.score, best):  # same max, less spread: keep walking from here
                best_dev, best = s.dev.copy(), s.score
        s.reset(best_dev, best)
        s.perturb(rng, 1 + int(rng.integers(1 + min(idle, 5))))


def run(spec: Spec, seed: int = 0, deadline: float = math.inf, progress: Callable[[str], None] | None = None,
        stall: float = 30, **_: object) -> Iterator[Candidate]:
    """Method `load_search`: the best topo split (dp's under contiguity when it beats it),
    then improve() from it."""
    from ..core.evaluate import evaluate
    from .topo_split import best_split

    _, dev = best_split(spec, seed, deadline)
    if dev is None:
        return
    yield "load search: start (topo)", dev
    if spec.objective.kind != "bottleneck" or not evaluate(spec, dev).feasible:
        return
    yield from improve(spec, dev, deadline, seed, int(stall), progress)

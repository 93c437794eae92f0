"""The local-search baseline (Tarnawski et al. sec. 6, after Michiels et al. [MKA07]):
single-node moves between devices while the score (violated constraints, then objective)
improves, any split, with restarts; the best of the restarts is returned.

- start: SliceGraph on a random order (`slicegraph`, feasible for contiguity and
  acyclicity), or a random allowed device per colocation unit (`random`, the paper's
  "starts from a random split"; it may start infeasible).
- step: `first` sweeps the units in a random order and moves each to its best device
  when that improves; `best` makes the best single-node reassignment of all, one at a
  time (the paper's "repeatedly makes the best single-node reassignment").
- passes: sweeps (`first`) or moves (`best`) per restart; by default until no move
  improves, a local optimum, as the paper runs it.

Moves carry whole colocation units and are scored by kernels/bottleneck/move_scores.py.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np
from partdsl.core.errors import PartError
from partdsl.core.events import Candidate
from partdsl.core.ir import Spec
from partdsl.kernels.bottleneck.move_scores import MoveScores
from partdsl.runtime.deadline import NEVER, Deadline

Score = tuple[int, float]
STARTS = ("slicegraph", "random")
STEPS = ("first", "best")
DEVICES = ("all", "accelerators")  # -O devices=: where units may start and move


def _better(s: Score, cur: Score) -> bool:
    """Fewer violations, or as many and a lower objective (beyond rounding)."""
    tol = 1e-12 * max(1.0, abs(cur[1])) if np.isfinite(cur[1]) else 0.0
    return s[0] < cur[0] or (s[0] == cur[0] and s[1] < cur[1] - tol)


class Descent:
    """Moves of one restart; `dev` and `cur` (its score) change in place."""

    def __init__(self, score: MoveScores, options: list[np.ndarray], dev: np.ndarray) -> None:
        self.score, self.options, self.dev = score, options, dev
        self.members = score.members
        self.cur = score.scores(dev)

    def _take(self, ks: np.ndarray, js: np.ndarray) -> bool:
        """The best of the moves ks[i] -> js[i], if it improves."""
        if not len(ks):
            return False
        viol, obj = self.score.moves(self.dev, ks, js)
        fewest = viol == viol.min()
        low = obj[fewest].min()
        tol = 1e-12 * max(1.0, abs(low)) if np.isfinite(low) else 0.0
        i = int(np.flatnonzero(fewest & (obj <= low + tol))[0])  # of equals (to rounding), the first
        s = (int(viol[i]), float(obj[i]))
        if not _better(s, self.cur):
            return False
        self.dev[self.members[ks[i]]] = js[i]
        self.cur = s
        return True

    def _moves(self, units: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every move of `units` to another allowed device."""
        if not len(units):
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
        sizes = [len(self.options[k]) for k in units]
        ks = np.repeat(units, sizes).astype(np.int64)
        js = np.concatenate([self.options[k] for k in units]).astype(np.int64)
        keep = js != np.repeat(self.dev[[self.members[k][0] for k in units]], sizes)
        return ks[keep], js[keep]

    def sweep(self, order: np.ndarray, deadline: Deadline) -> bool:
        """step=first: each unit in `order` to its best device, when that improves."""
        improved = False
        for k in order:
            if deadline.passed():
                break
            improved |= self._take(*self._moves(np.array([k])))
        return improved

    def best_move(self) -> bool:
        """step=best: the best move of every unit that can lower the score."""
        units = self.score.touching(self.dev)
        return self._take(*self._moves(np.arange(len(self.options)) if units is None else units))


def local_search(spec: Spec, seed: int = 0, deadline: Deadline = NEVER, restarts: float = 5,
                 passes: float = np.inf, start: object = "slicegraph", step: object = "first",
                 devices: object = "all", **_: object) -> Iterator[Candidate]:
    """Each restart's local optimum, when it is better than the previous restarts' best. With
    `devices="accelerators"` units start and move on non-host devices only (a unit no
    accelerator may hold keeps its hosts), as the authors' local search does (Tarnawski
    sec. 6; dnn-partitioning dp.cpp -localSearch)."""
    if start not in STARTS:
        raise PartError(f"local_search: unknown start '{start}'", None,
                        "write -O start=slicegraph (the default) or -O start=random")
    if step not in STEPS:
        raise PartError(f"local_search: unknown step '{step}'", None,
                        "write -O step=first (the default: each unit in turn) or -O step=best (the best move of all)")
    if devices not in DEVICES:
        raise PartError(f"local_search: unknown devices '{devices}'", None,
                        "write -O devices=all (the default) or -O devices=accelerators (non-host devices only)")
    from partdsl.kernels.bottleneck.order_search import Decoder

    d = spec.dense
    rng = np.random.default_rng(seed)
    dec = Decoder(spec)
    u = dec.units
    score = MoveScores(spec, u)
    options = [np.flatnonzero(d.allowed[m].all(axis=0)) for m in score.members]
    if devices == "accelerators":
        accel = ~d.host[d.dev_class]
        options = [o[accel[o]] if accel[o].any() else o for o in options]
    if any(len(opts) == 0 for opts in options):  # a unit no device may hold whole: nothing to search
        return
    best: Score = (np.iinfo(np.int64).max, np.inf)
    for r in range(int(restarts)):
        dev = None if start == "random" else dec.decode(rng.random(dec.U))[1]
        if dev is None:
            dev = np.array([opts[rng.integers(len(opts))] for opts in options])[u.unit]
        run = Descent(score, options, dev)
        done = 0
        while done < passes and not deadline.passed():
            done += 1
            if not (run.sweep(rng.permutation(u.count), deadline) if step == "first" else run.best_move()):
                break
        if run.cur < best:
            best = run.cur
            yield Candidate(f"local search (restart {r + 1})", run.dev.copy())
        if deadline.passed():
            return

"""Which devices the load search's data-parallel stages take (Tarnawski App. C.2, the rules
of evaluator/replicas.py): a replication factor per lead device (the one that holds the stage's
nodes) and, for each other device, the lead whose replica it is (-1: none).

On server levels a stage on device j with r replicas takes devices j .. j + r - 1, so its
replicas grow into j + r and shrink from j + r - 1. On a flat platform any device of the
class that holds nothing will do. The factor moves of kernels/bottleneck/load_search.py
(grow, absorb a neighbouring stage, release a replica) are made on copies of a layout, so
a rejected move leaves the search's own untouched. (Folding the pipeline onto stages of k
replicas each, k = 2, 4, .., and descending from there found nothing the factor moves
missed on generated decoders, and its descents took 10-110 s on 563 operators.)
"""
from __future__ import annotations

import numpy as np
from partdsl.core.dense import Dense
from partdsl.evaluator.replicas import placeable, used_devices


class Layout:
    """Replication factors r[D] (1 for a device that leads no replicated stage) and the
    owner[D] of each replica device (-1 for a lead or a free device)."""

    def __init__(self, dense: Dense, limit: int, r: np.ndarray | None = None, owner: np.ndarray | None = None) -> None:
        self.d, self.limit = dense, limit
        self.levels = dense.path_bw is not None
        self.r = np.ones(dense.D, dtype=np.int64) if r is None else np.asarray(r, dtype=np.int64).copy()
        self.owner = np.full(dense.D, -1, dtype=np.int64) if owner is None else owner.copy()

    def copy(self) -> Layout:
        return Layout(self.d, self.limit, self.r, self.owner)

    @classmethod
    def of(cls, dense: Dense, limit: int, dev: np.ndarray, factors: np.ndarray | None) -> Layout | None:
        """The layout of an assignment with its factors, or None when they cannot be placed
        (a factor over the limit, replicas on devices that hold nodes, or past the class)."""
        lay = cls(dense, limit)
        if factors is None:
            return lay
        used = used_devices(dense, dev)
        for j in np.flatnonzero(used & (np.asarray(factors) > 1)):
            k = int(factors[j])
            if k > limit:
                return None
            for _ in range(k - 1):
                b = lay.grow_target(int(j), used)
                if b < 0:
                    return None
                lay.grow(int(j), b)
        return lay

    def free(self, used: np.ndarray) -> np.ndarray:
        """[D] bool: devices that hold no node and are nobody's replica."""
        return ~used & (self.owner < 0)

    def grow_target(self, j: int, used: np.ndarray) -> int:
        """The device the stage on j would take as one more replica (-1: none)."""
        if self.r[j] >= self.limit:
            return -1
        if self.levels:
            b = j + int(self.r[j])
            ok = placeable(self.d, j, int(self.r[j]) + 1) and not used[b] and self.owner[b] < 0
            return b if ok else -1
        pool = np.flatnonzero(self.free(used) & (self.d.dev_class == self.d.dev_class[j]))
        pool = pool[pool != j]
        return int(pool[-1]) if len(pool) else -1

    def grow(self, j: int, b: int) -> None:
        self.r[j] += 1
        self.owner[b] = j

    def shrink(self, j: int) -> int:
        """Give back the stage's last replica device; returns it."""
        b = int(np.flatnonzero(self.owner == j).max())
        self.owner[b] = -1
        self.r[j] -= 1
        return b

    def absorbable(self, j: int, b: int) -> bool:
        """Whether the stage on j can take over the stage on b with all its replicas."""
        if self.d.dev_class[j] != self.d.dev_class[b] or self.r[j] + self.r[b] > self.limit:
            return False
        return not self.levels or b == j + int(self.r[j])  # on levels: b's span follows j's

    def absorb(self, j: int, b: int) -> None:
        """The stage on j takes b and b's replicas (its nodes move to j: the caller's part)."""
        self.owner[self.owner == b] = j
        self.owner[b] = j
        self.r[j] += self.r[b]
        self.r[b] = 1

    def settle(self, used: np.ndarray) -> None:
        """A lead left without nodes gives its replicas back."""
        for j in np.flatnonzero(~used & (self.r > 1)):
            self.owner[self.owner == j] = -1
            self.r[j] = 1

    def factors(self, used: np.ndarray) -> np.ndarray:
        """Each used device's factor, 1 elsewhere (evaluator/replicas.factors' form)."""
        return np.where(used, self.r, 1)


def place(dense: Dense, dev: np.ndarray, factors: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """On server levels: the same stages on devices where each one's replicas follow it
    (devices j .. j + r - 1 of its class), the most replicated first, each on the first run
    of free devices; (devices, factors), or None where a stage finds no run. The flat
    DP of `topo` (kernels/bottleneck/replicated.py) keeps replicas apart from their lead."""
    D = dense.D
    used = used_devices(dense, dev)
    leads = np.flatnonzero(used)
    order = leads[np.lexsort((leads, -np.asarray(factors)[leads]))]
    taken = np.zeros(D, dtype=bool)
    new = np.empty(D, dtype=np.int64)
    out_r = np.ones(D, dtype=np.int64)
    for j in order:
        k = int(factors[j])
        start = next((s for s in np.flatnonzero((dense.dev_class == dense.dev_class[j]) & ~taken)
                      if placeable(dense, int(s), k) and not taken[s:s + k].any()
                      and (dense.dev_class[s:s + k] == dense.dev_class[j]).all()), None)
        if start is None:
            return None
        taken[start:start + k] = True
        new[j], out_r[start] = start, k
    return new[dev], out_r


def kick(layout: Layout, used: np.ndarray, rng: np.random.Generator) -> None:
    """A random factor change for the load search's perturbation: a replicated stage gives
    a replica back, or a stage takes one more (half the time each, when it can)."""
    leads = np.flatnonzero(used)
    if not len(leads):
        return
    j = int(rng.choice(leads))
    if layout.r[j] > 1 and rng.random() < 0.5:
        layout.shrink(j)
    elif (b := layout.grow_target(j, used)) >= 0:
        layout.grow(j, b)

"""A long order of units cut into blocks at low-crossing points (issue 29, coarsening).

The segment table of an order of P positions is P x P per device class (segments.py):
4.3 GB at P = 10,000 with 5 classes. Above `COARSE_POSITIONS`, consecutive positions are
merged into blocks, one cut in each window of the order at the point the least transfer
time crosses, and the blocks become the positions. Every split of the block order is a
split of the fine order (a segment of blocks is a segment of positions), so its cost table
is exact for the splits it offers; only the splits that cut inside a block are given up.
Time and memory: O(P + m).
"""
from __future__ import annotations

import numpy as np
from partdsl.core.ir import Spec

COARSE_POSITIONS = 2048  # the most positions a segment table is built for (33 MB per class)


def crossing(spec: Spec, pos: np.ndarray, P: int) -> np.ndarray:
    """cross[t]: the transfer time (the dearest class) of the edges that cross the cut
    between positions t - 1 and t, for t = 0 .. P - 1 (cross[0] = 0)."""
    d = spec.dense
    a, b = pos[d.src], pos[d.dst]
    w = d.comm.max(axis=1)[d.src] + 1e-9 if d.comm.size else np.zeros(len(a))  # + a count of edges
    fwd = a < b
    diff = np.zeros(P + 1)
    np.add.at(diff, a[fwd] + 1, w[fwd])
    np.add.at(diff, b[fwd] + 1, -w[fwd])
    return np.cumsum(diff)[:P]


def coarsen(spec: Spec, pos: np.ndarray, P: int, most: int = COARSE_POSITIONS) -> tuple[np.ndarray, int]:
    """(block of each node, number of blocks): `pos` itself when P <= most, else at most
    `most` blocks, cut at the cheapest crossing of each window of the order."""
    if P <= most:
        return pos, P
    cross = crossing(spec, pos, P)[1:]  # cut t = 1 .. P - 1
    width = -(-(P - 1) // (most - 1))
    pad = np.full(-len(cross) % width, np.inf)
    windows = np.r_[cross, pad].reshape(-1, width)
    cuts = 1 + np.arange(len(windows)) * width + windows.argmin(axis=1)
    block = np.searchsorted(cuts, np.arange(P), side="right")
    return block[pos], len(cuts) + 1


def around(fine: np.ndarray, P: int, cuts: np.ndarray, most: int = COARSE_POSITIONS) -> tuple[np.ndarray, int]:
    """(block of each node, number of blocks) for a refinement (order_split.py): each
    position within w of a cut in `cuts` (positions where a segment starts) is a block of
    its own, w as wide as `most` blocks allow, and the positions between windows form one
    block each. A split whose segments start at `cuts` is a split of these blocks."""
    cuts = np.unique(cuts[(cuts > 0) & (cuts < P)])
    if not len(cuts):
        return np.zeros_like(fine), 1
    w = max((most // len(cuts) - 2) // 2, 1)
    at = (cuts[:, None] + np.arange(-w, w + 1)[None, :]).ravel()
    at = np.unique(at[(at >= 1) & (at < P)])  # block boundaries: a block starts at each
    block = np.searchsorted(at, np.arange(P), side="right")
    return block[fine], len(at) + 1

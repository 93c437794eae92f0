"""Segment costs for a fixed order of units (Archer et al. App. B.2, Alg. 4-5).

Given each node's position `pos` in the order (the position of its unit; colocated nodes
share one), cost[c, l, r] is the load of a device of class c that holds every node with
l <= pos <= r: compute + each incoming tensor once + each outgoing tensor once
(+ overflow), inf where a node cannot run on c or hard memory is exceeded, and for r < l.

Each tensor contributes O(1) axis-aligned rectangles per consumer to the (l, r) plane
(in: "a consumer lies in [l, r], the producer does not"; out: "the producer lies in
[l, r], some consumer does not"), so the whole matrix is one 2-D difference array and
a 2-D prefix sum: O(P^2 + m) work, vectorized, no Python loop per segment or per l.
"""
from __future__ import annotations

import numpy as np

from ..core.dense import INF
from ..core.evaluate import combine
from ..core.ir import Spec


def _rect_add(D: np.ndarray, l0: np.ndarray, l1: np.ndarray, r0: np.ndarray, r1: np.ndarray,
              w: np.ndarray) -> None:
    """Add weight rows w[k] (one per class) on the rectangles [l0, l1] x [r0, r1]."""
    keep = (l0 <= l1) & (r0 <= r1)
    l0, l1, r0, r1, w = l0[keep], l1[keep] + 1, r0[keep], r1[keep] + 1, w[keep]
    np.add.at(D, (l0, r0), w)
    np.add.at(D, (l0, r1), -w)
    np.add.at(D, (l1, r0), -w)
    np.add.at(D, (l1, r1), w)


def transfer_matrices(pos: np.ndarray, P: int, src: np.ndarray, dst: np.ndarray,
                      w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """in[l, r, c] and out[l, r, c]: transfer time of segment [l, r] on class c, where
    w[u, c] is the time to move node u's tensor to or from a device of class c."""
    C = w.shape[1]
    pv = pos[dst]
    # distinct (producer, consumer position) pairs, sorted by producer then position
    key = np.unique(src.astype(np.int64) * (P + 1) + pv)
    u, cp = key // (P + 1), key % (P + 1)
    p = pos[u]
    same = np.zeros(len(u), dtype=bool)  # same producer as the previous pair
    same[1:] = u[1:] == u[:-1]
    Din = np.zeros((P + 1, P + 1, C))
    # consumers after the producer: l in (previous consumer (or p), c], r >= c
    after = cp > p
    prev = np.where(same, np.r_[0, cp[:-1]][: len(u)], p)
    prev = np.where(after & (prev < p), p, prev)
    _rect_add(Din, prev[after] + 1, cp[after], cp[after], np.full(after.sum(), P - 1), w[u[after]])
    # consumers before the producer: l <= c, c <= r < next consumer (or p)
    before = cp < p
    nxt_same = np.r_[same[1:], False] if len(u) else same
    nxt = np.where(nxt_same, np.r_[cp[1:], 0][: len(u)], p)
    nxt = np.minimum(nxt, p)
    _rect_add(Din, np.zeros(before.sum(), np.int64), cp[before], cp[before], nxt[before] - 1, w[u[before]])
    # out: producer inside, not every consumer inside
    prod = np.unique(u)
    first = np.flatnonzero(~same)
    lo = np.minimum(pos[prod], np.minimum.reduceat(cp, first)) if len(first) else np.zeros(0, np.int64)
    hi = np.maximum(pos[prod], np.maximum.reduceat(cp, first)) if len(first) else np.zeros(0, np.int64)
    Dout = np.zeros((P + 1, P + 1, C))
    k = len(prod)
    pp = pos[prod]
    _rect_add(Dout, np.zeros(k, np.int64), pp, pp, np.full(k, P - 1), w[prod])
    _rect_add(Dout, np.zeros(k, np.int64), lo, hi, np.full(k, P - 1), -w[prod])
    inn = Din.cumsum(0).cumsum(1)[:P, :P]
    out = Dout.cumsum(0).cumsum(1)[:P, :P]
    return inn, out


def segment_costs(spec: Spec, pos: np.ndarray, P: int) -> np.ndarray:
    """cost[C, P, P] for the order given by node positions `pos` (0 .. P-1)."""
    d = spec.dense
    C = len(d.class_names)
    obj, cons = spec.objective, spec.constraints
    cls_any = np.stack([d.allowed[:, d.dev_class == c].any(axis=1) for c in range(C)], axis=1)
    W = np.zeros((P, C))
    np.add.at(W, pos, np.where(cls_any, d.work, 0.0))
    bad = np.zeros((P, C))
    np.add.at(bad, pos, (~cls_any).astype(float))
    prm = np.bincount(pos, weights=d.params, minlength=P)
    cW = np.vstack([np.zeros((1, C)), np.cumsum(W, axis=0)])
    cB = np.vstack([np.zeros((1, C)), np.cumsum(bad, axis=0)])
    cP = np.r_[0.0, np.cumsum(prm)]
    comp = cW[None, 1:, :] - cW[:-1, None, :]  # [l, r, c]
    nbad = cB[None, 1:, :] - cB[:-1, None, :]
    used = (cP[None, 1:] - cP[:-1, None])[:, :, None]
    inn, out = transfer_matrices(pos, P, d.src, d.dst, d.comm)
    with np.errstate(invalid="ignore", divide="ignore"):
        excess = np.maximum(used - d.memory[None, None, :], 0.0)
        if cons.memory == "overflow":
            ov = np.where(excess > 0, excess / d.link[None, None, :] * 1e3, 0.0)
        else:
            ov = np.zeros_like(excess)
    cost = combine(comp, inn, out, ov, obj.overlap)
    cost[nbad > 0.5] = INF
    if cons.memory == "hard":
        cost[excess > d.memory[None, None, :] * 1e-12] = INF
    cost[np.tril_indices(P, -1)] = INF
    return np.moveaxis(cost, 2, 0).copy()

"""Segment costs for a fixed order of units (cf. Archer App. B.2, Alg. 4-5).

Given each node's position `pos` (the position of its unit), cost[c][l, r] is the load of
a device of class c holding every node with l <= pos <= r: compute + each incoming
tensor once + each outgoing tensor once (+ overflow), inf where a node cannot run on c
or the hard memory limit is exceeded. Built row by row (one row per l) with vectorized
difference arrays: O(P * (n + m)) NumPy work, no Python loop per segment.
"""
from __future__ import annotations

import numpy as np

from ..core.dense import INF, Dense
from ..core.evaluate import combine
from ..core.ir import Spec


def segment_costs(spec: Spec, pos: np.ndarray, P: int) -> np.ndarray:
    """cost[C, P, P]; entries with r < l are inf."""
    d = spec.dense
    C = len(d.class_names)
    src, dst = d.src, d.dst
    pu, pv = pos[src], pos[dst]
    n = d.n
    # per-position sums
    W = np.zeros((P, C))
    np.add.at(W, pos, np.where(np.isfinite(d.work), d.work, 0.0))
    bad = np.zeros((P, C))
    cls_any = np.zeros((n, C), dtype=bool)
    for c in range(C):
        cls_any[:, c] = d.allowed[:, d.dev_class == c].any(axis=1)
    np.add.at(bad, pos, (~cls_any).astype(float))
    prm = np.bincount(pos, weights=d.params, minlength=P)
    cW = np.vstack([np.zeros((1, C)), np.cumsum(W, axis=0)])
    cB = np.vstack([np.zeros((1, C)), np.cumsum(bad, axis=0)])
    cP = np.concatenate([[0.0], np.cumsum(prm)])
    big = np.iinfo(np.int64).max
    minc = np.full(n, big, dtype=np.int64)
    np.minimum.at(minc, src, pv)
    maxc = np.full(n, -1, dtype=np.int64)
    np.maximum.at(maxc, src, pv)
    internal = pu == pv  # edges inside one unit never cross
    w = d.comm  # [n, C]
    cost = np.full((C, P, P), INF)
    mem = d.memory
    link = d.link
    obj, cons = spec.objective, spec.constraints
    for l in range(P):
        f = np.full(n, big, dtype=np.int64)
        sel = (pv >= l) & ~internal
        np.minimum.at(f, src[sel], pv[sel])
        din = np.zeros((P + 1, C))
        dout = np.zeros((P + 1, C))
        # producers before l: incoming from r >= f
        a = (pos < l) & (f < big)
        np.add.at(din, f[a], w[a])
        # producers at or after l, outside the segment while r < pos[u]
        b = (pos >= l) & (f < pos)
        np.add.at(din, f[b], w[b])
        np.add.at(din, pos[b], -w[b])
        # producers inside: out while some consumer is outside
        has = maxc >= 0
        always = (pos >= l) & has & (minc < l)
        np.add.at(dout, pos[always], w[always])
        upto = (pos >= l) & has & ~(minc < l) & (maxc > pos)
        np.add.at(dout, pos[upto], w[upto])
        np.add.at(dout, maxc[upto], -w[upto])
        inn = np.cumsum(din, axis=0)[l:P]
        out = np.cumsum(dout, axis=0)[l:P]
        comp = cW[l + 1:P + 1] - cW[l]
        nbad = cB[l + 1:P + 1] - cB[l]
        used = (cP[l + 1:P + 1] - cP[l])[:, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            excess = np.maximum(used - mem[None, :], 0.0)
            if cons.memory == "overflow":
                ov = np.where(excess > 0, excess / link[None, :] * 1e3, 0.0)
            else:
                ov = np.zeros_like(excess)
        seg = combine(comp, inn, out, ov, obj.overlap)
        seg[nbad > 0] = INF
        if cons.memory == "hard":
            seg[excess > mem[None, :] * 1e-12] = INF
        cost[:, l, l:] = seg.T
    return cost

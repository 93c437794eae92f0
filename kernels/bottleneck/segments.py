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
from partdsl.core.dense import INF
from partdsl.core.ir import Spec
from partdsl.evaluator.evaluate import combine
from partdsl.kernels.jit import HAVE_NUMBA, njit
from partdsl.runtime import memory


def _rect_add(D: np.ndarray, l0: np.ndarray, l1: np.ndarray, r0: np.ndarray, r1: np.ndarray,
              w: np.ndarray) -> None:
    """Add weight rows w[k] (one per class) on the rectangles [l0, l1] x [r0, r1]."""
    keep = (l0 <= l1) & (r0 <= r1)
    l0, l1, r0, r1, w = l0[keep], l1[keep] + 1, r0[keep], r1[keep] + 1, w[keep]
    np.add.at(D, (l0, r0), w)
    np.add.at(D, (l0, r1), -w)
    np.add.at(D, (l1, r0), -w)
    np.add.at(D, (l1, r1), w)


def _rectangles(pos: np.ndarray, P: int, src: np.ndarray, dst: np.ndarray, w: np.ndarray):
    """The rectangles of every tensor: (l0, l1, r0, r1, weights) for `in` and for `out`."""
    pv = pos[dst]
    # distinct (producer, consumer position) pairs, sorted by producer then position
    key = np.unique(src.astype(np.int64) * (P + 1) + pv)
    u, cp = key // (P + 1), key % (P + 1)
    p = pos[u]
    same = np.zeros(len(u), dtype=bool)  # same producer as the previous pair
    same[1:] = u[1:] == u[:-1]
    nxt_same = np.r_[same[1:], False] if len(u) else same
    zero = np.zeros(len(u), np.int64)
    last = np.full(len(u), P - 1, np.int64)
    # consumers after the producer: l in (previous consumer (or p), c], r >= c
    prev = np.where(same, np.r_[0, cp[:-1]][: len(u)], p)
    prev = np.maximum(prev, p)
    a = cp > p
    # consumers before the producer: l <= c, c <= r < next consumer (or p)
    nxt = np.minimum(np.where(nxt_same, np.r_[cp[1:], 0][: len(u)], p), p)
    b = cp < p
    ins = (np.r_[prev[a] + 1, zero[b]], np.r_[cp[a], cp[b]], np.r_[cp[a], cp[b]],
           np.r_[last[a], nxt[b] - 1], np.vstack([w[u[a]], w[u[b]]]))
    # out: producer inside [l, r], not every consumer inside
    first = np.flatnonzero(~same)
    prod = u[first]
    lo = np.minimum(pos[prod], np.minimum.reduceat(cp, first)) if len(first) else zero[:0]
    hi = np.maximum(pos[prod], np.maximum.reduceat(cp, first)) if len(first) else zero[:0]
    k, pp = len(prod), pos[prod]
    outs = (np.zeros(2 * k, np.int64), np.r_[pp, lo], np.r_[pp, hi], np.full(2 * k, P - 1),
            np.vstack([w[prod], -w[prod]]))
    return ins, outs


def phase_rectangles(spec: Spec, pos: np.ndarray, P: int, phase: int | None = None):  # type: ignore[no-untyped-def]
    """The in and out rectangles of every tensor, or under GPipe those one phase pays
    (Tarnawski App. A, as evaluator/evaluate.py charges them): a tensor in to the phase of its
    consumer, out to the phase of its sender."""
    d = spec.dense
    if phase is None:
        return _rectangles(pos, P, d.src, d.dst, d.comm)
    ph = d.backward.astype(np.int64)
    e_in, e_out = ph[d.dst] == phase, ph[d.src] == phase
    return (_rectangles(pos, P, d.src[e_in], d.dst[e_in], d.comm)[0],
            _rectangles(pos, P, d.src[e_out], d.dst[e_out], d.comm)[1])


def transfer_matrices(ins, outs, P: int, C: int, combined: bool = False) -> tuple[np.ndarray, ...]:  # type: ignore[no-untyped-def]
    """in[l, r, c] and out[l, r, c] (or their sum if `combined`): transfer time of segment
    [l, r] on class c, from the rectangles of `phase_rectangles`."""
    groups = [(ins, outs)] if combined else [(ins,), (outs,)]
    mats = []
    for rects in groups:
        D = np.zeros((P + 1, P + 1, C))
        for rect in rects:
            _rect_add(D, *rect)
        np.cumsum(D, axis=0, out=D)
        np.cumsum(D, axis=1, out=D)
        mats.append(D[:P, :P])
    return tuple(mats)


def segment_costs(spec: Spec, pos: np.ndarray, P: int, use_numba: bool = True, phase: int | None = None
                  ) -> np.ndarray:
    """cost[C, P, P] for the order given by node positions `pos` (0 .. P-1); with `phase`
    (0 forward, 1 backward), the GPipe load of that phase alone: its nodes' compute, the
    tensors it pays, overflow (evaluator/evaluate._phase_loads). Quadratic in P: refused
    (runtime/memory.py) where the table and its temporaries would not fit."""
    d = spec.dense
    C = len(d.class_names)
    memory.need(8.0 * P * P * (3 * C + 2), f"the segment table of {P:,} positions x {C} device "
                f"class{'es' if C > 1 else ''} (methods topo, dp, load_search, slicegraph, exact's starts, "
                "latency_search)")
    obj, cons = spec.objective, spec.constraints
    cls_any = d.class_allowed
    W = np.zeros((P, C))
    counted = cls_any if phase is None else cls_any & (d.backward == bool(phase))[:, None]
    np.add.at(W, pos, np.where(counted, d.work, 0.0))
    cW = np.vstack([np.zeros((1, C)), np.cumsum(W, axis=0)])
    ins, outs = phase_rectangles(spec, pos, P, phase)
    if obj.overlap is None and HAVE_NUMBA and use_numba:
        rect = [np.concatenate([a, b]) for a, b in zip(ins, outs)]
        cost = np.empty((P, P, C))
        for c in range(C):
            _fused_plain(P, cW[:, c].copy(), rect[0], rect[1], rect[2], rect[3],
                         np.ascontiguousarray(rect[4][:, c]), cost[:, :, c])
        comp = None
    elif obj.overlap is None:
        comp = cW[None, 1:, :] - cW[:-1, None, :]  # [l, r, c]
        (tr,) = transfer_matrices(ins, outs, P, C, combined=True)
        cost = comp + tr
    else:
        comp = cW[None, 1:, :] - cW[:-1, None, :]
        inn, out = transfer_matrices(ins, outs, P, C)
        cost = None
    limited = np.isfinite(d.memory).any() and cons.memory != "ignore"
    if limited:
        prm = np.bincount(pos, weights=d.params, minlength=P)
        cP = np.r_[0.0, np.cumsum(prm)]
        used = (cP[None, 1:] - cP[:-1, None])[:, :, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            excess = np.maximum(used - d.memory[None, None, :], 0.0)
            ov = np.where(excess > 0, excess / d.link[None, None, :] * 1e3, 0.0) if cons.memory == "overflow" else 0.0
    else:
        ov = 0.0
    if cost is None:
        cost = combine(comp, inn, out, ov if limited else np.zeros_like(comp), obj.overlap)
    elif limited and cons.memory == "overflow":
        cost += ov
    if (~cls_any).any():
        bad = np.zeros((P, C))
        np.add.at(bad, pos, (~cls_any).astype(float))
        cB = np.vstack([np.zeros((1, C)), np.cumsum(bad, axis=0)])
        cost[(cB[None, 1:, :] - cB[:-1, None, :]) > 0.5] = INF
    if limited and cons.memory == "hard":
        cost[excess > d.memory[None, None, :] * 1e-12] = INF
    if comp is not None:  # the fused kernel already wrote inf below the diagonal
        cost[np.tri(P, k=-1, dtype=bool)] = INF
    return np.ascontiguousarray(np.moveaxis(cost, 2, 0))


@njit
def _fused_plain(P: int, cW: np.ndarray, l0: np.ndarray, l1: np.ndarray, r0: np.ndarray, r1: np.ndarray,
                 w: np.ndarray, out: np.ndarray) -> None:
    """One class, transfers not overlapped: rectangles -> 2-D prefix sum -> compute +
    transfers, inf below the diagonal, in one compiled pass."""
    D = np.zeros((P + 1, P + 1))
    for k in range(len(l0)):
        if l0[k] > l1[k] or r0[k] > r1[k]:
            continue
        D[l0[k], r0[k]] += w[k]
        D[l0[k], r1[k] + 1] -= w[k]
        D[l1[k] + 1, r0[k]] -= w[k]
        D[l1[k] + 1, r1[k] + 1] += w[k]
    for l in range(P):
        run = 0.0
        for r in range(P):
            run += D[l, r]
            if l > 0:
                D[l, r] = run + D[l - 1, r]
            else:
                D[l, r] = run
            out[l, r] = (cW[r + 1] - cW[l] + D[l, r]) if r >= l else np.inf

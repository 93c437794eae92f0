"""What one accelerator run of the latency path bound must pay beside its path's own
compute (kernels/latency/path_bound.py; Tarnawski et al. sec. 4): the tensors it must
move, the cheaper of moving or hosting its side nodes' tensors, and the runs a
colocation group forbids. Every table is [m, m] over runs p_j .. p_i of one path."""
from __future__ import annotations

import math

import numpy as np
from partdsl.core.dense import INF
from partdsl.core.ir import Spec
from partdsl.runtime.deadline import NEVER, Deadline


def run_tables(spec: Spec, masks: tuple[np.ndarray, np.ndarray], classes: list[int], colocated: bool,
               deadline: Deadline = NEVER) -> list[tuple[int, np.ndarray, np.ndarray]] | None:
    """Per class c of `classes`: (c, [m, m] least cost of run (j, i) on one device of c
    before its min cut, [m, m] the interval's parameter bytes). A run costs its interval's
    compute, the tensors it must move and its side charges; inf where an interval node
    cannot run on c, its memory does not fit (memory hard), j > i, or (`colocated`: a
    group shares one device's run) it would split a colocation group. None when `deadline`
    passes (checked per class)."""
    d = spec.dense
    m = masks[0].shape[0]
    span = path_span(masks)
    hard = spec.constraints.memory == "hard"
    split_group = colocation_blocked(spec, span, m) if colocated else np.zeros((m, m), dtype=bool)
    mem = interval_sums(d.params, span, m)
    out = []
    for c in classes:
        if deadline.passed():
            return None
        ok = d.class_allowed[:, c]
        bad = interval_sums((~ok).astype(np.int64), span, m) > 0
        cost = interval_sums(np.where(ok, d.work[:, c], 0.0), span, m)
        if hard and np.isfinite(d.memory[c]):
            bad |= mem > d.memory[c] * (1 + 1e-12)
        tin, tout = forced_transfers(spec, masks, span, c)
        cost += tin + tout + side_costs(spec, masks, span, c, mem)
        cost[bad | split_group] = INF
        cost[np.tril_indices(m, -1)] = INF  # j <= i only
        out.append((c, cost, mem))
    return out


def interval_sums(values: np.ndarray, span: tuple[np.ndarray, np.ndarray], m: int) -> np.ndarray:
    """[m, m] the sum of `values` over each interval (j, i): node v is in it iff j <= the
    last path node above it and i >= the first below it (`path_span`), a rectangle of (j, i)
    per node. O(n + m^2), where the masks' product was O(n m^2)."""
    first, last = span
    on = (last >= 0) & (first < m) & (values != 0)
    k = int(on.sum())
    return rectangle_sums(np.zeros(k, dtype=np.int64), last[on], first[on], np.full(k, m - 1), values[on], m)


def rectangle_sums(j0: np.ndarray, j1: np.ndarray, i0: np.ndarray, i1: np.ndarray, values: np.ndarray,
                   m: int) -> np.ndarray:
    """[m, m] the sum over rectangles j0 <= j <= j1, i0 <= i <= i1 (inclusive, clipped to the
    table; empty ones add nothing) of their values, through a difference table."""
    j0, i0 = np.maximum(j0, 0), np.maximum(i0, 0)
    j1, i1 = np.minimum(j1, m - 1), np.minimum(i1, m - 1)
    on = (j0 <= j1) & (i0 <= i1)
    j0, j1, i0, i1, v = j0[on], j1[on], i0[on], i1[on], values[on]
    table = np.zeros((m + 1, m + 1), dtype=values.dtype)
    for rows, cols, sign in ((j0, i0, 1), (j0, i1 + 1, -1), (j1 + 1, i0, -1), (j1 + 1, i1 + 1, 1)):
        np.add.at(table, (rows, cols), sign * v)
    return np.cumsum(np.cumsum(table, axis=0), axis=1)[:m, :m]


def colocation_blocked(spec: Spec, span: tuple[np.ndarray, np.ndarray], m: int) -> np.ndarray:
    """[m, m] runs (j, i) that would split a colocation group (a group on one device's run): some node u of the
    interval has a group mate x that is an ancestor of p_j-1 or a descendant of p_i+1.
    u is in interval (j, i) iff j <= a_u (the last path node above u) and i >= b_u (the
    first below it), and x is above p_j-1 iff j >= b_x + 1, below p_i+1 iff i <= a_x - 1:
    each member u marks two rectangles of (j, i) (`rectangle_sums`). O(n + m^2)."""
    d = spec.dense
    if not d.colocated_pairs or m == 0:
        return np.zeros((m, m), dtype=bool)
    b, a = span
    grouped = np.flatnonzero(np.bincount(d.colo, minlength=d.n)[d.colo] > 1)
    g = d.colo[grouped]
    left = np.full(d.n, m, dtype=np.int64)  # per group: the least j with a member above p_j-1
    np.minimum.at(left, g, b[grouped] + 1)
    right = np.full(d.n, -1, dtype=np.int64)  # per group: the largest i with a member below p_i+1
    np.maximum.at(right, g, a[grouped] - 1)
    u = grouped[(a[grouped] >= 0) & (b[grouped] < m)]
    gu, ones, end = d.colo[u], np.ones(len(u), dtype=np.int64), np.full(len(u), m - 1)
    marked = (rectangle_sums(left[gu], a[u], b[u], end, ones, m)  # a mate above p_j-1
              + rectangle_sums(np.zeros(len(u), dtype=np.int64), a[u], b[u], right[gu], ones, m))  # or below p_i+1
    return marked > 0


def forced_transfers(spec: Spec, masks: tuple[np.ndarray, np.ndarray], span: tuple[np.ndarray, np.ndarray],
                     c: int) -> tuple[np.ndarray, np.ndarray]:
    """[m, m] transfers a run p_j .. p_i on class c must make. In: every tensor read by a
    node of the run's interval from a node u that cannot be in the subgraph: an ancestor
    of p_j-1 (p_j-1 included; the path u .. p_j-1 .. p_j would leave the subgraph and come
    back), or a node that cannot be on c at all (`outside`). Out: every tensor of an
    interval node read by a descendant of p_i+1 (p_i+1 included) or by a node outside c.
    (Without masks, `path_runs` charges the path's own tensors only.)"""
    d = spec.dense
    m = masks[0].shape[0]
    tin = np.zeros((m, m))
    tout = np.zeros((m, m))
    desc, anc = masks
    src, dst = d.src, d.dst
    comm = d.cheapest_comm[:, c]  # a direct link may beat the host route: bounds charge the cheapest
    off = outside(spec, c)
    first, last = span
    for j in range(m):  # in: ancestors of p_j-1 and nodes that cannot be on c, feeding desc(p_j)
        outer = off[src] | (anc[j - 1][src] if j else False)
        sel = outer & desc[j][dst]
        if not sel.any():
            continue
        reads = np.full(d.n, m, dtype=np.int64)  # u is read by interval (j, i) from the first i below a reader
        np.minimum.at(reads, src[sel], first[dst[sel]])
        us = np.unique(src[sel])
        delta = np.zeros(m + 1)
        np.add.at(delta, reads[us], comm[us])
        tin[j] += np.cumsum(delta)[:m]
    for i in range(m):  # out: interval nodes feeding desc(p_i+1) or a node that cannot be on c
        outer = off[dst] | (desc[i + 1][dst] if i + 1 < m else False)
        sel = anc[i][src] & outer
        if not sel.any():
            continue
        ws = np.unique(src[sel])
        delta = np.zeros(m + 1)  # w is in interval (j, i) for j up to the last p_j above it
        delta[0] = comm[ws].sum()
        np.add.at(delta, last[ws] + 1, -comm[ws])
        tout[:, i] += np.cumsum(delta)[:m]
    return tin, tout


def side_costs(spec: Spec, masks: tuple[np.ndarray, np.ndarray], span: tuple[np.ndarray, np.ndarray], c: int,
               mem: np.ndarray) -> np.ndarray:
    """[m, m] more that a run p_j .. p_i on class c pays for tensors between its interval
    and a node v outside it that `forced_transfers` does not count (v may share the
    subgraph): either v is in the subgraph, which then also runs v (work on c) and holds
    its memory, or the tensor moves. A producer u feeding the interval costs comm(u) if u
    does not fit beside the interval's memory, else min(comm(u), work(u)); an interval
    node w read by such consumers y costs comm(w) if one of them does not fit, else
    min(comm(w), sum of work(y) / (number of candidate w feeding y)), so a consumer's work
    is charged at most once in all. Each charge is for a distinct node's tensor or work (a
    node both fed by and feeding the interval is inside it), so they add up."""
    d = spec.dense
    desc, anc = masks
    m = desc.shape[0]
    src, dst = d.src, d.dst
    comm, work = d.cheapest_comm[:, c], np.where(d.class_allowed[:, c], d.work[:, c], 0.0)
    off = outside(spec, c)
    cap = (d.memory[c] if spec.constraints.memory == "hard" else math.inf) * (1 + 1e-9)
    first, last = span
    grow = np.maximum.accumulate(mem, axis=1)  # over i, a run's memory only grows (rounding aside)
    shrink = np.maximum.accumulate(mem[::-1], axis=0)[::-1]  # over j, only shrinks
    extra = np.zeros((m, m))
    for j in range(m):  # producers u outside desc(p_j), not forced (ancestors of p_j-1, outside c)
        forced = off[src] | (anc[j - 1][src] if j else False)
        sel = ~forced & ~desc[j][src] & desc[j][dst]
        if not sel.any():
            continue
        us = np.unique(src[sel])
        lo_i = np.full(d.n, m, dtype=np.int64)  # u feeds the interval (j, i) from i = the first p_i below a reader
        np.minimum.at(lo_i, src[sel], first[dst[sel]])
        lo_i = lo_i[us]
        fit_to = np.searchsorted(grow[j], cap - d.params[us], side="right")  # u fits beside (j, i) for i < this
        cheap, dear = np.minimum(comm[us], work[us]), comm[us]
        delta = np.zeros(m + 1)
        np.add.at(delta, lo_i, cheap)
        np.add.at(delta, np.maximum(lo_i, fit_to), dear - cheap)
        extra[j] += np.cumsum(delta)[:m]
    for i in range(m):  # interval nodes w (in anc(p_i)) read by consumers y outside anc(p_i), not forced
        forced_y = off[dst] | (desc[i + 1][dst] if i + 1 < m else False)
        feeds_out = anc[i][src] & ~anc[i][dst]
        forced_w = np.unique(src[feeds_out & forced_y])
        sel = feeds_out & ~forced_y & ~np.isin(src, forced_w)
        if not sel.any():
            continue
        ws, ys = src[sel], dst[sel]
        share = work / np.maximum(np.bincount(ys, minlength=d.n), 1)  # y's work split over its feeders
        wu, inv = np.unique(ws, return_inverse=True)
        sums = np.bincount(inv, weights=share[ys], minlength=len(wu))
        big = np.zeros(len(wu))
        np.maximum.at(big, inv, d.params[ys])
        cheap, dear = np.minimum(comm[wu], sums), comm[wu]
        fit_from = m - np.searchsorted(shrink[::-1, i], cap - big, side="right")  # w's readers fit for j >= this
        delta = np.zeros(m + 1)
        delta[0] += dear.sum()
        np.add.at(delta, last[wu] + 1, -dear)  # w is in the interval (j, i) for j <= the last p_j above it
        hi = np.maximum(fit_from, 0)
        ok = hi <= last[wu]
        np.add.at(delta, hi[ok], cheap[ok] - dear[ok])
        np.add.at(delta, last[wu][ok] + 1, dear[ok] - cheap[ok])
        extra[:, i] += np.cumsum(delta)[:m]
    return extra


def path_span(masks: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """[n] per node v: the first i with v in anc(p_i) (m if none) and the last j with v in
    desc(p_j) (-1 if none). The p_i below v form a suffix of the path, those above a prefix."""
    desc, anc = masks
    m = desc.shape[0]
    first = np.where(anc.any(axis=0), np.argmax(anc, axis=0), m)
    last = np.where(desc.any(axis=0), m - 1 - np.argmax(desc[::-1], axis=0), -1)
    return first, last


def outside(spec: Spec, c: int) -> np.ndarray:
    """[n] nodes no subgraph on class c can hold: not allowed on c, or (memory hard) larger
    than one device's memory. A run's interval containing one is rejected; a tensor
    between one and the interval is always transferred."""
    d = spec.dense
    off = ~d.class_allowed[:, c]
    if spec.constraints.memory == "hard" and np.isfinite(d.memory[c]):
        off |= d.params > d.memory[c] * (1 + 1e-12)
    return off

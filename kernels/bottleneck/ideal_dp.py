"""Method `dp`: the dynamic program over ideals (Tarnawski et al. sec. 5.1.1, App. B).

A contiguous set is the difference of two ideals (Fact 5.2), so an optimal contiguous
split carves successive differences I \\ I' out of a chain of ideals. The DP runs on the
contracted unit DAG (colocation groups and the cycles they force, kernels/graph/contraction.py; for
training graphs the forward part with its backward partners and mirrored orphans):

    dp[I][s] = min over ideals I' < I and classes c of max(dp[I'][s - e_c], cost_c(I \\ I'))

with s counting the devices used per class (k accelerators + l CPUs, generalized to any
classes). cost_c is the exact evaluator cost of the node set (compute, each tensor once in
and once out, overflow, overlap), computed on node-level edges, so backward edges are
counted right. Ideals are enumerated as bitsets; the pair loop is compiled by numba and
pruned by a heuristic incumbent B (pairs whose compute alone exceeds B, or whose prefix
already exceeds B, are skipped). If the DP then finds nothing better than B, B is
optimal.

What it proves: a chain of ideals is exactly a partition whose quotient graph is acyclic
(whose blocks are then contiguous, Fact 5.2). Contiguous blocks alone may form a cyclic
quotient, which no chain produces. So the DP is exact under `acyclic` (for non-training
graphs, with no device-level pins); under `contiguous` alone, as in Tarnawski's model, it
returns the best acyclic contiguous split, which matched the IP on every published
workload but is not a proof.
"""
from __future__ import annotations

from typing import Callable, Iterator

import numpy as np
from partdsl.core.errors import PartError
from partdsl.core.events import Candidate, Progress, Proven
from partdsl.core.ir import Spec
from partdsl.kernels.bottleneck.ideals import TOO_BIG_HINT, enumerate_ideals, too_big
from partdsl.kernels.bottleneck.segment_dp import state_table
from partdsl.kernels.bottleneck.topo_split import assign_masks, best_split
from partdsl.kernels.graph.contraction import Contraction, absorbable_sinks, contract, has_forward, memory_can_bind
from partdsl.kernels.jit import njit
from partdsl.runtime.deadline import NEVER, Deadline, timed_chunks

OVERLAP = {None: 0, "simplex": 1, "duplex": 2}


def _words(ideals: list[int], U: int) -> np.ndarray:
    """Python-int bitsets -> (ideals, words) uint64, unit 64 k + b at bit b of word k."""
    nw = (U + 63) // 64
    raw = b"".join(x.to_bytes(8 * nw, "little") for x in ideals)
    return np.frombuffer(raw, dtype="<u8").astype(np.uint64).reshape(len(ideals), nw)


def _member(row: np.ndarray, U: int) -> np.ndarray:
    """The units of one ideal (a row of `_words`) as a bool vector."""
    return np.unpackbits(row.view(np.uint8), bitorder="little")[:U].astype(bool)


def _unit_sums(bits: np.ndarray, per_unit: np.ndarray, deadline: Deadline) -> np.ndarray | None:
    """sums[i] = per_unit summed over the units of ideal i, 64 units (one word) at a time:
    memory O(ideals x 64), never the ideals x units matrix. None once the deadline passes."""
    NI, nw = bits.shape
    out = np.zeros((NI, per_unit.shape[1]))
    shifts = np.arange(64, dtype=np.uint64)
    for k in range(nw):
        if deadline.passed():
            return None
        rows = per_unit[64 * k:64 * (k + 1)]
        held = (bits[:, k:k + 1] >> shifts[:len(rows)]) & np.uint64(1)
        out += held.astype(float) @ rows
    return out


def _frontiers_until(bits: np.ndarray, prod_unit: np.ndarray, prod_cons: np.ndarray, inward: bool,
                     deadline: Deadline) -> tuple[np.ndarray, np.ndarray] | None:
    """`_frontiers` a chunk of ideals at a time, None once the deadline passes."""
    ptrs, idxs, t, done = [np.zeros(1, np.int64)], [], 0, 0
    nonzero = prod_cons != 0  # the words holding each producer's consumers: one or two, not all U / 64
    keep = np.flatnonzero(nonzero.any(axis=1))  # producers with a consumer in another unit: the rest never cross
    nonzero = nonzero[keep]
    w_lo = nonzero.argmax(axis=1).astype(np.int64)
    w_hi = (prod_cons.shape[1] - nonzero[:, ::-1].argmax(axis=1)).astype(np.int64)
    unit_k, cons_k = prod_unit[keep], prod_cons[keep]
    for i0, i1 in timed_chunks(len(bits), deadline):
        ptr, idx = _frontiers(bits[i0:i1], unit_k, cons_k, w_lo, w_hi, inward)
        idx = keep[idx]
        ptrs.append(ptr[1:] + t)
        idxs.append(idx)
        t, done = t + len(idx), i1
    if done < len(bits):  # the deadline stopped the chunks
        return None
    return np.concatenate(ptrs), np.concatenate(idxs) if idxs else np.zeros(0, np.int64)


@njit
def _frontiers(bits, prod_unit, prod_cons, w_lo, w_hi, inward):  # pragma: no cover - compiled
    """CSR, per ideal, of the producers inside it with a consumer outside (inward=False)
    or outside it with a consumer inside (inward=True). Producer p's consumers lie in the
    words w_lo[p] .. w_hi[p] - 1 of prod_cons; the caller passes only producers with a
    consumer in another unit (100k operators grouped into 7,100 layers: 69 s -> 1 s)."""
    NI = bits.shape[0]
    P = len(prod_unit)
    ptr = np.zeros(NI + 1, dtype=np.int64)
    buf = np.empty(NI * 8 + P, dtype=np.int64)
    t = 0
    one = np.uint64(1)
    for i in range(NI):
        for p in range(P):
            a = prod_unit[p]
            inside = (bits[i, a // 64] >> np.uint64(a % 64)) & one
            if inward == bool(inside):
                continue
            cross = False
            for k in range(w_lo[p], w_hi[p]):
                if (prod_cons[p, k] & bits[i, k]) if inward else (prod_cons[p, k] & ~bits[i, k]):
                    cross = True
                    break
            if cross:
                if t >= len(buf):
                    grown = np.empty(2 * len(buf), dtype=np.int64)
                    grown[:t] = buf[:t]
                    buf = grown
                buf[t] = p
                t += 1
        ptr[i + 1] = t
    return ptr, buf[:t].copy()


@njit
def _dp_pairs(bits, size, lo, W, BAD, MEM, memcap, hard, ovrate, prod_unit, prod_cons, wprod, prev, dp, argj,
              argc, bound, overlap, optr, oidx, iptr, iidx, dpmin, i0, i1):  # pragma: no cover - compiled
    NI, nw = bits.shape
    C = W.shape[1]
    S = dp.shape[1]
    P = len(prod_unit)
    seg = np.zeros(nw, dtype=np.uint64)
    stamp = np.full(P, -1, dtype=np.int64)
    pair = 0
    tin = np.zeros(C)
    tout = np.zeros(C)
    one = np.uint64(1)
    for i in range(max(i0, 1), i1):
        for j in range(lo[i], i):  # ideals cheap enough below i: the segment fits under the bound
            if size[j] >= size[i]:
                continue
            if dpmin[j] > bound:
                continue
            lb = np.inf
            for c in range(C):
                if BAD[i, c] == BAD[j, c]:
                    x = W[i, c] - W[j, c]
                    if x < lb:
                        lb = x
            if lb > bound:
                continue
            sub = True
            for k in range(nw):
                if bits[j, k] & ~bits[i, k]:
                    sub = False
                    break
                seg[k] = bits[i, k] & ~bits[j, k]
            if not sub:
                continue
            for c in range(C):
                tin[c] = 0.0
                tout[c] = 0.0
            # S = I \ I'. A tensor leaves S iff its producer is in S and on the out-frontier
            # of I (a consumer beyond I) or the in-frontier of I' (a consumer in I'); it
            # enters S iff its producer is on the out-frontier of I' or the in-frontier of I
            # (both outside S, disjoint) with a consumer in S. Frontiers are about as large
            # as the graph is wide; a stamp counts a producer on both out-lists once.
            pair += 1
            for e in range(optr[i], optr[i + 1]):
                p = oidx[e]
                a = prod_unit[p]
                if (seg[a // 64] >> np.uint64(a % 64)) & one:
                    stamp[p] = pair
                    for c in range(C):
                        tout[c] += wprod[p, c]
            for e in range(iptr[j], iptr[j + 1]):
                p = iidx[e]
                a = prod_unit[p]
                if stamp[p] != pair and (seg[a // 64] >> np.uint64(a % 64)) & one:
                    for c in range(C):
                        tout[c] += wprod[p, c]
            for half in range(2):
                lo_e = optr[j] if half == 0 else iptr[i]
                hi_e = optr[j + 1] if half == 0 else iptr[i + 1]
                for e in range(lo_e, hi_e):
                    p = oidx[e] if half == 0 else iidx[e]
                    for k in range(nw):
                        if prod_cons[p, k] & seg[k]:
                            for c in range(C):
                                tin[c] += wprod[p, c]
                            break
            used = MEM[i] - MEM[j]
            for c in range(C):
                if BAD[i, c] != BAD[j, c]:
                    continue
                ov = 0.0
                if used > memcap[c] * (1.0 + 1e-12):
                    if hard:
                        continue
                    ov = (used - memcap[c]) * ovrate[c]
                comp = W[i, c] - W[j, c]
                if overlap == 0:
                    load = comp + tin[c] + tout[c] + ov
                elif overlap == 1:
                    load = max(comp, tin[c] + tout[c] + ov)
                else:
                    load = max(max(tin[c] + ov, comp), tout[c])
                if load > bound:
                    continue
                for s in range(S):
                    ps = prev[c, s]
                    if ps < 0:
                        continue
                    v = max(dp[j, ps], load)
                    if v < dp[i, s]:
                        dp[i, s] = v
                        argj[i, s] = j
                        argc[i, s] = c
                        if v < dpmin[i]:
                            dpmin[i] = v


def exact_for(spec: Spec) -> bool:
    """Whether an exhausted DP proves optimality for this spec: under `acyclic`, where a
    feasible split's forward stages are a chain of ideals of the unit DAG. A training
    graph qualifies when every backward node is colocated with a forward node: its units
    are then ordered by forward edges alone, and a split whose full quotient (forward and
    backward parts) is acyclic has an acyclic forward quotient, so the DP's space holds
    every feasible split and its stage costs are the evaluator's (backward edges counted
    on node-level edges). Orphan backward nodes are ordered by mirroring, a restriction."""
    c, o = spec.constraints, spec.objective
    devices = set(spec.platform.devices)
    device_level = any(t.name in devices for _, ts in c.pins + c.forbids for t in ts)
    return (c.acyclic and not _orphans(spec) and o.kind == "bottleneck"
            and o.training != "gpipe" and not device_level)


def _orphans(spec: Spec) -> bool:
    """Whether some backward node shares no colocation component with a forward node."""
    d = spec.dense
    return bool(d.backward.any() and (~has_forward(d, d.colo)[d.colo[d.backward]]).any())


def units(spec: Spec) -> Contraction:
    """The unit DAG the DP runs on: colocation groups, and sinks absorbed where memory cannot bind."""
    d = spec.dense
    return contract(d, absorbable_sinks(d, memory_can_bind(d, spec.constraints.memory)))


def refusal(spec: Spec) -> str | None:
    """Why the DP cannot run on this spec (too many units for its bitsets), or None."""
    return too_big(units(spec).count)


def run(spec: Spec, seed: int = 0, deadline: Deadline = NEVER,
        progress: Callable[[str], None] | None = None, **_: float) -> Iterator:
    u = units(spec)
    why = too_big(u.count)  # before the topo start: a refusal costs no time
    if why:
        raise PartError(why, None, TOO_BIG_HINT)
    # an incumbent first: it prunes the DP and is what the DP must beat
    best_val, best_arr = best_split(spec, seed, deadline)
    if best_arr is not None:
        yield Candidate("dp incumbent (topo)", best_arr)
    yield Progress(f"DP over ideals, pruned by the incumbent {best_val:.6g}")
    value, arr, NI = ideal_split(spec, best_val, deadline, progress, u)
    if arr is not None:
        yield Candidate(f"dp over {NI:,} ideals", arr)
    if deadline.passed():
        return  # the DP did not finish: no proof
    if exact_for(spec):
        opt = min(value, best_val)
        if np.isfinite(opt):
            yield Proven(opt, f"the DP over {NI:,} ideals is exhaustive for acyclic splits")
    else:
        yield Progress("the DP's answer is the best acyclic split, not a proof of optimality here: "
                       + why_not_exact(spec))


def why_not_exact(spec: Spec) -> str:
    c, o = spec.constraints, spec.objective
    if not c.acyclic:
        return "contiguous blocks may form a cyclic quotient; add `acyclic` to get a proof"
    if _orphans(spec):
        return "a backward node colocated with no forward node is ordered by mirroring; colocate each with its layer"
    if o.training == "gpipe":
        return "the DP minimizes the PipeDream load, not the GPipe objective"
    return "device-level pins or forbids are not modelled by the DP"


def ideal_split(spec: Spec, incumbent: float = np.inf, deadline: Deadline = NEVER,
                progress: Callable[[str], None] | None = None,
                u: Contraction | None = None) -> tuple[float, np.ndarray | None, int]:
    """(the DP's value, its assignment or None, number of ideals). Only splits costing at
    most `incumbent` are searched; the value is inf if none is, or if the deadline passes
    before the DP completes (an unfinished DP proves and returns nothing). `u`: the unit
    DAG (`units(spec)`), if the caller has it."""
    d = spec.dense
    u = units(spec) if u is None else u
    why = too_big(u.count)
    if why:
        raise PartError(why, None, TOO_BIG_HINT)
    ideals = enumerate_ideals(u.count, u.src, u.dst, deadline=deadline)
    if ideals is None:
        return np.inf, None, 0
    bits = _words(ideals, u.count)
    NI = len(ideals)
    C = len(d.class_names)
    cls_any = d.class_allowed
    uw = np.zeros((u.count, C))
    np.add.at(uw, u.unit, np.where(cls_any, d.work, 0.0))
    ubad = np.zeros((u.count, C))
    np.add.at(ubad, u.unit, (~cls_any).astype(float))
    umem = np.bincount(u.unit, weights=d.params, minlength=u.count)
    # order by the cheapest possible compute (ties by size): every subset of an ideal comes
    # before it, and a segment I \ I' costs at least key(I) - key(I'), so only ideals with
    # key >= key(I) - bound can precede I in the chain (a window found by binary search)
    cheapest = np.where(np.isfinite(d.work) & cls_any, d.work, np.inf).min(axis=1)
    ukey = np.bincount(u.unit, weights=np.where(np.isfinite(cheapest), cheapest, 0.0), minlength=u.count)
    sums = _unit_sums(bits, np.column_stack([uw, ubad, umem, ukey, np.ones(u.count)]), deadline)
    if sums is None:
        return np.inf, None, NI
    W, BAD, MEM, key = sums[:, :C], sums[:, C:2 * C], sums[:, 2 * C], sums[:, 2 * C + 1]
    size = np.rint(sums[:, -1]).astype(np.int64)
    perm = np.lexsort((size, key))
    bits, W, BAD, MEM, size, key = bits[perm], W[perm], BAD[perm], MEM[perm], size[perm], key[perm]
    prods = np.unique(d.src)
    cons = np.zeros((len(prods), bits.shape[1]), dtype=np.uint64)
    idx = {p: i for i, p in enumerate(prods.tolist())}
    for a, b in zip(d.src.tolist(), d.dst.tolist()):
        ub = int(u.unit[b])
        if ub != u.unit[a]:
            cons[idx[a], ub // 64] |= np.uint64(1) << np.uint64(ub % 64)
    counts = [k.count for k in spec.platform.classes]
    states, zero, prev = state_table(counts, spec.constraints.max_stages)
    dp = np.full((NI, len(states)), np.inf)
    dp[0, zero] = 0.0
    argj = np.full((NI, len(states)), -1, dtype=np.int64)
    argc = np.full((NI, len(states)), -1, dtype=np.int64)
    with np.errstate(divide="ignore"):
        ovrate = np.where(np.isfinite(d.link), 1e3 / d.link, 0.0)
    memcap = np.where(spec.constraints.memory == "ignore", np.inf, d.memory)
    bound = incumbent * (1 + 1e-9) if np.isfinite(incumbent) else np.inf
    lo = np.searchsorted(key, key - bound * (1 + 1e-9) - 1e-9, side="left").astype(np.int64)
    prod_unit = u.unit[prods].astype(np.int64)
    fronts = [_frontiers_until(bits, prod_unit, cons, inward, deadline) for inward in (False, True)]
    if fronts[0] is None or fronts[1] is None:
        return np.inf, None, NI
    (optr, oidx), (iptr, iidx) = fronts
    dpmin = np.full(NI, np.inf)
    dpmin[0] = 0.0
    for i0, i1 in timed_chunks(NI, deadline, target=0.5):  # chunks keep the wall-clock budget, report progress
        if progress and i0:
            progress(f"DP over ideals: {i0:,} of {NI:,}")
        _dp_pairs(bits, size, lo, W, BAD, MEM, memcap, spec.constraints.memory == "hard", ovrate,
                  prod_unit, cons, d.comm[prods], prev, dp, argj, argc, bound,
                  OVERLAP[spec.objective.overlap], optr, oidx, iptr, iidx, dpmin, i0, i1)
    full = NI - 1
    s = int(np.argmin(dp[full]))
    value = float(dp[full, s])
    if not np.isfinite(value):
        return value, None, NI
    segs = []
    i = full
    while i != 0:
        j, c = int(argj[i, s]), int(argc[i, s])
        segs.append((_member(bits[i], u.count) & ~_member(bits[j], u.count), c))
        s, i = int(prev[c, s]), j
    return value, assign_masks(spec, [(m[u.unit], c) for m, c in reversed(segs)]), NI

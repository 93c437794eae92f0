"""The compiled inner loops of the DP over ideals (kernels/bottleneck/ideal_dp.py): ideals
as bitsets, sums over their units, their frontiers, and the pair loop that carves a
segment I \\ I' and prices it per class (and per phase under GPipe, Tarnawski App. A)."""
from __future__ import annotations

import numpy as np
from partdsl.kernels.jit import njit, njit_inline
from partdsl.runtime.deadline import Deadline, timed_chunks


def words(ideals: list[int], U: int) -> np.ndarray:
    """Python-int bitsets -> (ideals, words) uint64, unit 64 k + b at bit b of word k."""
    nw = (U + 63) // 64
    raw = b"".join(x.to_bytes(8 * nw, "little") for x in ideals)
    return np.frombuffer(raw, dtype="<u8").astype(np.uint64).reshape(len(ideals), nw)


def member(row: np.ndarray, U: int) -> np.ndarray:
    """The units of one ideal (a row of `words`) as a bool vector."""
    return np.unpackbits(row.view(np.uint8), bitorder="little")[:U].astype(bool)


def unit_sums(bits: np.ndarray, per_unit: np.ndarray, deadline: Deadline) -> np.ndarray | None:
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


def frontiers_until(bits: np.ndarray, prod_unit: np.ndarray, prod_cons: np.ndarray, inward: bool,
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
def _combine(comp, tin, tout, ov, overlap):  # pragma: no cover - compiled
    """A segment's load, as evaluator/evaluate.py `combine` (no overlap, simplex, duplex)."""
    if overlap == 0:
        return comp + tin + tout + ov
    if overlap == 1:
        return max(comp, tin + tout + ov)
    return max(max(tin + ov, comp), tout)


@njit
def _may_improve(i, j, W, BAD, dp, prev, bound, kc, kinv):  # pragma: no cover - compiled
    """Whether the pair (j, i) may lower some dp[i][s]: a segment's load is at least its
    compute (`_combine`) over its replicas, so max(dp[j][s'], compute / r) >= dp[i][s] for
    every kind of stage (class, replicas) and state means it cannot, and its transfers need
    not be counted."""
    for v in range(len(kc)):
        c = kc[v]
        if BAD[i, c] != BAD[j, c]:
            continue
        x = (W[i, c] - W[j, c]) * kinv[v]
        if x > bound:
            continue
        for s in range(dp.shape[1]):
            ps = prev[v, s]
            if ps >= 0 and max(dp[j, ps], x) < dp[i, s]:
                return True
    return False


@njit
def gaps(i, dp, argj, argc, gprev):  # pragma: no cover - compiled
    """Row i of the DP closed under leaving a device unused: dp[i][s] <= dp[i][s less one
    device of class c], marked argc = -2 - c (states are sorted by size, so gprev[c, s] < s)."""
    if gprev.shape[0] == 0:
        return
    for s in range(dp.shape[1]):
        for c in range(gprev.shape[0]):
            g = gprev[c, s]
            if g >= 0 and dp[i, g] < dp[i, s]:
                dp[i, s] = dp[i, g]
                argj[i, s] = i
                argc[i, s] = -2 - c


@njit
def dp_pairs(bits, size, lo, W, Wo, BAD, MEM, memcap, hard, ovrate, prod_unit, cons, cons_o, mine, wprod,
             prev, dp, argj, argc, bound, cap, total, overlap, optr, oidx, iptr, iidx, dpmin, i0, i1,
             kc, kinv, ksync, ksync_min, gprev, HELD, fly, SHARE, SHARE_SIZE):  # pragma: no cover - compiled
    """The DP's pairs (j, i) for ideals i in [i0, i1): dp[i][s] = max(dp[j][s'], load of
    I \\ I') minimized, the load from the compute W (ideals x classes) and the tensors
    in (`cons`: units consuming each producer's tensor) and out (`mine`: producers
    counted). Under GPipe (Tarnawski App. A; ideal_dp.py sweeps over caps) W, `cons` and
    `mine` are one phase's and Wo, `cons_o` the other's (None otherwise: numba then
    compiles the loop without the second phase's branches, 15% of its time): a tensor out of
    the segment is charged to its producer's phase, one into it to each phase consuming
    it there, as the evaluator does; a segment whose other load exceeds `cap`, or whose
    two loads together exceed `total`, is not used. A segment is priced for each kind of
    stage v (kernels/bottleneck/replicated.py; prev[v] and argc count kinds): class kc[v]
    on 1 / kinv[v] replicas, its load (one-device load + ksync[v, s] x its parameters) x
    kinv[v] (Tarnawski App. C.2; replicas are refused under GPipe, so Wo's kinds are the
    classes). The sync rate depends on the state s the stage ends in only on server levels,
    where that says which devices its replicas span; ksync_min[v] is its least over s. There
    a device may also be left unused before a stage (`gaps`): gprev[c, s] is the state s less
    one device of class c (no rows: no gaps), and each row i is closed under those steps.
    HELD (None: no stashes) is each ideal's stash bytes, which a stage holds fly[s'] times
    when it follows state s' (1F1B's micro-batches in flight; fly <= 0: no such stage).
    SHARE (weights, words) are the units reading each shared weight: a segment holding any
    holds SHARE_SIZE of it once."""
    nw = bits.shape[1]
    C = W.shape[1]
    seg = np.zeros(nw, dtype=np.uint64)
    stamp = np.full(len(prod_unit), -1, dtype=np.int64)
    pair = 0
    tin = np.zeros(C)
    tout = np.zeros(C)
    tin_o = np.zeros(C)
    tout_o = np.zeros(C)
    for i in range(max(i0, 1), i1):
        for j in range(lo[i], i):  # ideals cheap enough below i: the segment fits under the bound
            if size[j] >= size[i] or dpmin[j] > bound:
                continue
            lb = np.inf
            for v in range(len(kc)):
                c = kc[v]
                if BAD[i, c] == BAD[j, c]:
                    x = W[i, c] - W[j, c]
                    if Wo is not None:
                        y = Wo[i, c] - Wo[j, c]
                        if y > cap or x + y > total:
                            continue
                    x *= kinv[v]
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
            if not sub or not _may_improve(i, j, W, BAD, dp, prev, bound, kc, kinv):
                continue
            pair += 1
            _transfers(i, j, seg, pair, stamp, prod_unit, cons, cons_o, mine, wprod, Wo, optr, oidx, iptr, iidx,
                       tin, tout, tin_o, tout_o)
            held = 0.0 if HELD is None else HELD[i] - HELD[j]
            used = MEM[i] - MEM[j]
            for w in range(SHARE.shape[0]):
                for k in range(nw):
                    if SHARE[w, k] & seg[k]:
                        used += SHARE_SIZE[w]
                        break
            _price(i, j, W, Wo, BAD, used, memcap, hard, ovrate, prev, dp, argj, argc, bound, cap, total,
                   overlap, dpmin, kc, kinv, ksync, ksync_min, tin, tout, tin_o, tout_o, held, fly)
        gaps(i, dp, argj, argc, gprev)


@njit_inline
def _transfers(i, j, seg, pair, stamp, prod_unit, cons, cons_o, mine, wprod, Wo, optr, oidx, iptr, iidx,
               tin, tout, tin_o, tout_o):  # pragma: no cover - compiled
    """The tensors into and out of S = I \\ I' per class (per phase under GPipe). A tensor
    leaves S iff its producer is in S and on the out-frontier of I (a consumer beyond I) or
    the in-frontier of I' (a consumer in I'); it enters S iff its producer is on the
    out-frontier of I' or the in-frontier of I (both outside S, disjoint) with a consumer in
    S. Frontiers are about as large as the graph is wide; a stamp counts a producer on both
    out-lists once."""
    C = len(tin)
    nw = len(seg)
    one = np.uint64(1)
    for c in range(C):
        tin[c] = 0.0
        tout[c] = 0.0
        tin_o[c] = 0.0
        tout_o[c] = 0.0
    for e in range(optr[i], optr[i + 1]):
        p = oidx[e]
        a = prod_unit[p]
        if (seg[a // 64] >> np.uint64(a % 64)) & one:
            stamp[p] = pair
            t = tout if Wo is None or mine[p] else tout_o  # the phase it is charged to
            for c in range(C):
                t[c] += wprod[p, c]
    for e in range(iptr[j], iptr[j + 1]):
        p = iidx[e]
        a = prod_unit[p]
        if stamp[p] != pair and (seg[a // 64] >> np.uint64(a % 64)) & one:
            t = tout if Wo is None or mine[p] else tout_o  # the phase it is charged to
            for c in range(C):
                t[c] += wprod[p, c]
    for half in range(2):
        lo_e = optr[j] if half == 0 else iptr[i]
        hi_e = optr[j + 1] if half == 0 else iptr[i + 1]
        for e in range(lo_e, hi_e):
            p = oidx[e] if half == 0 else iidx[e]
            for k in range(nw):
                if cons[p, k] & seg[k]:
                    for c in range(C):
                        tin[c] += wprod[p, c]
                    break
            if Wo is not None:
                for k in range(nw):
                    if cons_o[p, k] & seg[k]:
                        for c in range(C):
                            tin_o[c] += wprod[p, c]
                        break


@njit_inline
def _price(i, j, W, Wo, BAD, used, memcap, hard, ovrate, prev, dp, argj, argc, bound, cap, total, overlap, dpmin,
           kc, kinv, ksync, ksync_min, tin, tout, tin_o, tout_o, held, fly):  # pragma: no cover - compiled
    """Price S = I \\ I' for each kind of stage and relax dp[i][s] from dp[j][prev[v, s]];
    a stage holding `held` stash bytes takes them fly[prev[v, s]] times (hard memory only),
    and no stage follows a state whose fly is 0 or less."""
    for v in range(len(kc)):
        c = kc[v]
        if BAD[i, c] != BAD[j, c]:
            continue
        ov = 0.0
        if used + held > memcap[c] * (1.0 + 1e-12):
            if hard:
                continue
            ov = (used - memcap[c]) * ovrate[c]
        one_load = _combine(W[i, c] - W[j, c], tin[c], tout[c], ov, overlap)
        load = one_load
        if kinv[v] != 1.0:
            load = (one_load + ksync_min[v] * used) * kinv[v]
        if load > bound:
            continue
        if Wo is not None:
            other = _combine(Wo[i, c] - Wo[j, c], tin_o[c], tout_o[c], ov, overlap)
            if other > cap or load + other > total:
                continue
        for s in range(dp.shape[1]):
            ps = prev[v, s]
            if ps < 0:
                continue
            if fly[ps] <= 0.0 or (held > 0.0 and used + held * fly[ps] > memcap[c] * (1.0 + 1e-12)):
                continue
            x = load
            if kinv[v] != 1.0 and ksync[v, s] != ksync_min[v]:  # on server levels: where the stage sits
                x = (one_load + ksync[v, s] * used) * kinv[v]
                if x > bound:
                    continue
            x = max(dp[j, ps], x)
            if x < dp[i, s]:
                dp[i, s] = x
                argj[i, s] = j
                argc[i, s] = v
                if x < dpmin[i]:
                    dpmin[i] = x

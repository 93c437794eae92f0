"""The DP over ideals' data for one enumeration of ideals, and its chain search
(kernels/bottleneck/ideal_dp.py; Tarnawski et al. sec. 5.1.1, App. A-B): each ideal's
compute per class (and per phase under GPipe), memory, frontiers; `best` runs the DP
once for a bound, a cap on the other phase, and the phase that counts."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from partdsl.core.ir import Spec
from partdsl.kernels.bottleneck import replicated
from partdsl.kernels.bottleneck.ideal_kernels import dp_pairs, frontiers_until, gaps, member, unit_sums, words
from partdsl.kernels.bottleneck.segment_dp import state_table
from partdsl.kernels.graph.contraction import Contraction
from partdsl.runtime.deadline import Deadline, timed_chunks

OVERLAP = {None: 0, "simplex": 1, "duplex": 2}


@dataclass
class Chains:
    spec: Spec
    u: Contraction
    bits: np.ndarray  # (ideals, words), ordered by `key` then size: subsets first
    size: np.ndarray
    key: np.ndarray  # cheapest compute of each ideal over both phases, in whole units of 1 / scale ms (`_whole`)
    scale: float
    W: tuple[np.ndarray, ...]  # per phase (one; under GPipe forward, backward): (ideals, classes) compute
    BAD: np.ndarray  # (ideals, classes) units the class cannot run
    MEM: np.ndarray
    prod_unit: np.ndarray
    cons_ph: np.ndarray  # (phases, producers, words): units consuming each producer's tensor in that phase
    pphase: np.ndarray
    wprod: np.ndarray
    fronts: tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
    HELD: np.ndarray | None = None  # each ideal's stash bytes, under `memory hard` (None: no stashes)
    SHARE: np.ndarray = field(default_factory=lambda: np.zeros((0, 1), dtype=np.uint64))  # (weights, words): the
    SHARE_SIZE: np.ndarray = field(default_factory=lambda: np.zeros(0))  # units reading each shared weight, its bytes

    @property
    def NI(self) -> int:
        return len(self.bits)

    @staticmethod
    def build(spec: Spec, u: Contraction, ideals: list[int], deadline: Deadline) -> Chains | None:
        """The sums over each ideal, in the DP's order; None once the deadline passes."""
        d = spec.dense
        bits = words(ideals, u.count)
        C = len(d.class_names)
        Q = 2 if spec.objective.training == "gpipe" else 1
        phase = d.backward.astype(np.int64) if Q == 2 else np.zeros(d.n, dtype=np.int64)
        cls_any = d.class_allowed
        uw = np.zeros((u.count, C * Q))
        work = np.where(cls_any, d.work, 0.0)
        for q in range(Q):  # column c * Q + q
            np.add.at(uw[:, q::Q], u.unit[phase == q], work[phase == q])
        ubad = np.zeros((u.count, C))
        np.add.at(ubad, u.unit, (~cls_any).astype(float))
        umem = np.bincount(u.unit, weights=d.params, minlength=u.count)
        stashing = d.stashed is not None and spec.constraints.memory == "hard"
        uheld = np.bincount(u.unit, weights=d.stashed, minlength=u.count) if stashing else np.zeros(u.count)
        # order by the cheapest possible compute (ties by size): every subset of an ideal comes
        # before it, and a segment I \ I' costs at least key(I) - key(I'), so only ideals with
        # key >= key(I) - bound can precede I in the chain (a window found by binary search)
        cheapest = np.where(np.isfinite(d.work) & cls_any, d.work, np.inf).min(axis=1)
        ukey = np.bincount(u.unit, weights=np.where(np.isfinite(cheapest), cheapest, 0.0), minlength=u.count)
        ukey, scale = _whole(ukey)
        sums = unit_sums(bits, np.column_stack([uw, ubad, umem, ukey, uheld, np.ones(u.count)]), deadline)
        if sums is None:
            return None
        CQ = C * Q
        W, BAD, MEM, key = sums[:, :CQ], sums[:, CQ:CQ + C], sums[:, CQ + C], sums[:, CQ + C + 1]
        size = np.rint(sums[:, -1]).astype(np.int64)
        perm = np.lexsort((size, key))
        bits, W, BAD, MEM, size, key = bits[perm], W[perm], BAD[perm], MEM[perm], size[perm], key[perm]
        held = np.ascontiguousarray(sums[perm, CQ + C + 2]) if stashing else None
        prods = np.unique(d.src)
        cons_ph = np.zeros((Q, len(prods), bits.shape[1]), dtype=np.uint64)
        idx = {p: i for i, p in enumerate(prods.tolist())}
        for a, b in zip(d.src.tolist(), d.dst.tolist()):
            ub = int(u.unit[b])
            if ub != u.unit[a]:
                cons_ph[phase[b], idx[a], ub // 64] |= np.uint64(1) << np.uint64(ub % 64)
        cons = np.bitwise_or.reduce(cons_ph, axis=0)
        prod_unit = u.unit[prods].astype(np.int64)
        fronts = [frontiers_until(bits, prod_unit, cons, inward, deadline) for inward in (False, True)]
        if fronts[0] is None or fronts[1] is None:
            return None
        per_phase = tuple(np.ascontiguousarray(W[:, q::Q]) for q in range(Q))
        share, share_size = _share_bits(spec, u, bits.shape[1])
        return Chains(spec, u, bits, size, key, scale, per_phase, BAD, MEM, prod_unit, cons_ph, phase[prods], d.comm[prods],
                      (fronts[0], fronts[1]), held, share, share_size)

    def best(self, bound: float, cap: float, vphase: int, deadline: Deadline,
             progress: Callable[[str], None] | None, total: float = np.inf, relaxed: bool = False
             ) -> tuple[float, list[tuple[np.ndarray | None, int, int]] | None]:
        """The least max load of phase `vphase` over chains of ideals whose segments'
        loads are at most `bound`, whose other phase's loads are at most `cap` and whose
        two loads together are at most `total`, and the chain's (node mask, class,
        replicas) segments, a mask None for a device left unused (`gaps`); (inf, None) if
        there is none or the deadline passes first. `relaxed` (server levels): each stage's
        replicas at their cheapest placement (replicated.cheapest_rates), a lower bound.
        With stashes (1F1B), stage s of a chain of P holds P - s micro-batches' stashes:
        one DP for each P, its states' stage counts giving each stage's s (the caller
        refuses replicas, whose states count devices, not stages)."""
        spec = self.spec
        counts = [k.count for k in spec.platform.classes]
        kinds = replicated.steps(spec)  # (class, replicas) per kind of stage: the classes when replicate = 1
        states, zero, prev = state_table(counts, spec.constraints.max_stages, kinds)
        if relaxed:
            ksync, prev = replicated.cheapest_rates(spec, kinds, len(states), prev)
            gprev = np.zeros((0, 1), dtype=np.int64)
        else:
            ksync, prev = replicated.placed_rates(spec, kinds, states, prev)
            gprev = _gap_steps(spec, kinds, counts)
        run = _Run(kinds, zero, prev, ksync, gprev, len(states))
        if self.HELD is None:
            return self._chain(run, np.full(len(states), np.inf), bound, cap, vphase, deadline, progress, total)
        stages = np.array([sum(x) for x in states], dtype=float)
        best: tuple[float, list[tuple[np.ndarray | None, int, int]] | None] = (np.inf, None)
        for P in range(1, int(stages.max()) + 1):  # fly[s'] = P - (stages before): <= 0 beyond P
            value, segs = self._chain(run, P - stages, min(bound, best[0] * (1 + 1e-9)), cap, vphase, deadline,
                                      progress, total)
            if deadline.passed():
                return np.inf, None
            if value < best[0]:
                best = (value, segs)
        return best

    def _chain(self, run: _Run, fly: np.ndarray, bound: float, cap: float, vphase: int, deadline: Deadline,
               progress: Callable[[str], None] | None, total: float
               ) -> tuple[float, list[tuple[np.ndarray | None, int, int]] | None]:
        """`best` for one table of micro-batches in flight after each state (`fly`)."""
        spec, d = self.spec, self.spec.dense
        kinds, zero, prev, ksync, gprev = run.kinds, run.zero, run.prev, run.ksync, run.gprev
        kc = np.array([c for c, _ in kinds], dtype=np.int64)
        kinv = np.array([1.0 / r for _, r in kinds])
        NI = self.NI
        dp = np.full((NI, run.S), np.inf)
        dp[0, zero] = 0.0
        argj = np.full((NI, run.S), -1, dtype=np.int64)
        argc = np.full((NI, run.S), -1, dtype=np.int64)
        gaps(0, dp, argj, argc, gprev)  # unused devices before the first stage
        with np.errstate(divide="ignore"):
            ovrate = np.where(np.isfinite(d.link), 1e3 / d.link, 0.0)
        memcap = np.where(spec.constraints.memory == "ignore", np.inf, d.memory)
        Q = len(self.W)
        # a segment's compute, both phases; with r replicas a stage's load is at least its compute / r
        reach = min(bound + cap, total) if Q > 1 else bound * max(r for _, r in kinds)
        # (each unit's key is rounded by at most half a step: a segment's by at most its units' count)
        slack = reach * (1 + 1e-9) * self.scale + self.u.count + 1
        lo = np.searchsorted(self.key, self.key - slack, side="left").astype(np.int64)
        (optr, oidx), (iptr, iidx) = self.fronts
        Wo = self.W[1 - vphase] if Q > 1 else None
        cons_o = self.cons_ph[1 - vphase] if Q > 1 else None
        mine = self.pphase == vphase if Q > 1 else None  # producers whose tensors out count
        dpmin = np.full(NI, np.inf)
        dpmin[0] = 0.0
        done = 0
        for i0, i1 in timed_chunks(NI, deadline, target=0.5):  # chunks keep the wall-clock budget, report progress
            if progress and i0:
                progress(f"DP over ideals: {i0:,} of {NI:,}")
            done = i1
            dp_pairs(self.bits, self.size, lo, self.W[vphase], Wo, self.BAD, self.MEM, memcap,
                     spec.constraints.memory == "hard", ovrate, self.prod_unit, self.cons_ph[vphase], cons_o, mine,
                     self.wprod, prev, dp, argj, argc, bound, cap, total, OVERLAP[spec.objective.overlap], optr, oidx,
                     iptr, iidx, dpmin, i0, i1, kc, kinv, ksync, ksync.min(axis=1), gprev, self.HELD, fly,
                     self.SHARE, self.SHARE_SIZE)
        if done < NI:  # the deadline stopped the chunks
            return np.inf, None
        return self._trace(dp, argj, argc, run)

    def _trace(self, dp: np.ndarray, argj: np.ndarray, argc: np.ndarray, run: _Run
               ) -> tuple[float, list[tuple[np.ndarray | None, int, int]] | None]:
        """The best chain's value and segments, from the DP's tables."""
        full = self.NI - 1  # the full set: the largest key, then the largest size (`_whole`)
        s = int(np.argmin(dp[full]))
        value = float(dp[full, s])
        if not np.isfinite(value):
            return value, None
        segs: list[tuple[np.ndarray | None, int, int]] = []
        i = full
        while i != 0 or s != run.zero:
            j, v = int(argj[i, s]), int(argc[i, s])
            if v <= -2:  # a device of class -2 - v left unused
                segs.append((None, -2 - v, 1))
                s = int(run.gprev[-2 - v, s])
                continue
            m = member(self.bits[i], self.u.count) & ~member(self.bits[j], self.u.count)
            segs.append((m[self.u.unit], *run.kinds[v]))
            s, i = int(run.prev[v, s]), j
        return value, segs[::-1]


@dataclass(frozen=True)
class _Run:
    """The DP's states for one call of `Chains.best`: kinds of stage, the empty state, the
    state before each kind (prev), sync rates, gap steps, and the number of states."""

    kinds: list[tuple[int, int]]
    zero: int
    prev: np.ndarray
    ksync: np.ndarray
    gprev: np.ndarray
    S: int


def _share_bits(spec: Spec, u: Contraction, nw: int) -> tuple[np.ndarray, np.ndarray]:
    """(weights, words) bitsets of the units reading each shared weight, and their bytes
    (no rows without shared weights, or where memory is ignored)."""
    d = spec.dense
    if d.shared is None or spec.constraints.memory == "ignore":
        return np.zeros((0, nw), dtype=np.uint64), np.zeros(0)
    sh = d.shared
    bits = np.zeros((len(sh.size), nw), dtype=np.uint64)
    for w, k in zip(sh.weight.tolist(), u.unit[sh.node].tolist()):
        bits[w, k // 64] |= np.uint64(1) << np.uint64(k % 64)
    return bits, sh.size.astype(np.float64)


def _gap_steps(spec: Spec, kinds: list[tuple[int, int]], counts: list[int]) -> np.ndarray:
    """gprev[c, s] for `gaps`: on server levels with replicas (and no stage limit, which
    counts stages, not devices), a device may be left unused so that the next stage's replicas
    sit in one server; elsewhere no rows, and the DP's states count its stages' devices only."""
    if spec.dense.path_bw is None or spec.constraints.max_stages is not None or all(r == 1 for _, r in kinds):
        return np.zeros((0, 1), dtype=np.int64)
    return state_table(counts, None)[2]


def _whole(ukey: np.ndarray) -> tuple[np.ndarray, float]:
    """Each unit's key in whole steps of 1 / scale ms, 2^40 steps in all, so that every
    ideal's sum is exact in float64 (below 2^53) whatever order the sums take: an ideal then
    never sorts before one of its subsets, nor the full set before the last ideal, as
    rounded sums of ms could put them (squeezenet1_0's zero-cost last unit did)."""
    total = float(ukey.sum())
    scale = 2.0 ** 40 / total if total > 0 else np.inf
    if not np.isfinite(scale):  # no cost, or a subnormal total: no keys (the order by size alone is valid)
        return np.zeros_like(ukey), 1.0
    return np.rint(ukey * scale), scale

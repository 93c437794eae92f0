"""The bottleneck load table of an assignment in one O(n + m) pass: the scoring loop of
the load search, compiled with numba.

It computes what `core.evaluate.bottleneck_loads` computes (compute, transfers charged
once per producing node and receiving device, overflow, overlap, GPipe phases, replicated
stages' sync and division) without
NumPy's per-call overhead: about 20x faster on the published workloads. Without numba it
is `bottleneck_loads` itself. tests/kernels/test_kernels.py checks that both give the same table.

`scan` scores many single moves of one assignment: the table once, then per move only
the parts of the nodes the move changes are taken back and added again (O(their degrees)
instead of O(n + m); on BERT-L-12's 2,012 operators a move fell from 12 us to about 1).
"""
from __future__ import annotations

import numpy as np
from partdsl.core.ir import Spec
from partdsl.evaluator.evaluate import bottleneck_loads
from partdsl.evaluator.levels import routed
from partdsl.evaluator.replicas import span_rates
from partdsl.kernels.jit import HAVE_NUMBA, njit, njit_inline

OVERLAP = {None: 0, "duplex": 1, "simplex": 2}


@njit_inline
def _charge(u: int, dev: np.ndarray, sign: float, work: np.ndarray, cls: np.ndarray, comm: np.ndarray,
            succ_ptr: np.ndarray, succ_idx: np.ndarray, phase: np.ndarray, P: int, params: np.ndarray,
            comp: np.ndarray, inn: np.ndarray, out: np.ndarray, used: np.ndarray, stamp: np.ndarray,
            tag: int) -> None:  # pragma: no cover - compiled
    """Add (sign 1) or take back (sign -1) node u's part of the table under `dev`: its work
    and parameters on its device, its tensor once into each other (device, phase) that
    reads it, and out of its device once if any reader is elsewhere. `tag`: unique per call."""
    a = dev[u]
    comp[a, phase[u]] += sign * work[u, cls[a]]
    used[a] += sign * params[u]
    crosses = False
    for e in range(succ_ptr[u], succ_ptr[u + 1]):
        v = succ_idx[e]
        b = dev[v]
        if b != a:
            crosses = True
            key = b * P + phase[v]
            if stamp[key] != tag:
                stamp[key] = tag
                inn[b, phase[v]] += sign * comm[u, cls[b]]
    if crosses:
        out[a, phase[u]] += sign * comm[u, cls[a]]


@njit
def _finish(comp: np.ndarray, inn: np.ndarray, out: np.ndarray, used: np.ndarray, cap: np.ndarray, link: np.ndarray,
            overflow: bool, overlap: int, srate: np.ndarray, rdiv: np.ndarray) -> np.ndarray:  # pragma: no cover
    # (compiled)
    D, P = comp.shape
    table = np.zeros((D, P))
    for d in range(D):
        ov = 0.0
        if overflow and used[d] > cap[d]:
            ov = (used[d] - cap[d]) / link[d] * 1e3
        for p in range(P):
            i = inn[d, p] + (srate[d] * used[d] if p == P - 1 else 0.0)  # a replicated stage's sync: in, backward
            if overlap == 0:
                table[d, p] = comp[d, p] + i + out[d, p] + ov
            elif overlap == 1:
                table[d, p] = max(max(i + ov, comp[d, p]), out[d, p])
            else:
                table[d, p] = max(comp[d, p], i + out[d, p] + ov)
            table[d, p] /= rdiv[d]
    return table


@njit
def _parts(dev: np.ndarray, work: np.ndarray, cls: np.ndarray, comm: np.ndarray, succ_ptr: np.ndarray,
           succ_idx: np.ndarray, phase: np.ndarray, P: int, params: np.ndarray
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # pragma: no cover - compiled
    """(compute, transfers in, transfers out [D, P], parameters [D], the stamps) of `dev`."""
    D = cls.shape[0]
    comp, inn, out, used = np.zeros((D, P)), np.zeros((D, P)), np.zeros((D, P)), np.zeros(D)
    stamp = np.full(D * P, -1)
    for u in range(dev.shape[0]):  # _charge(u, dev, 1, ...), written out: 2.5x faster than the inlined call
        a = dev[u]
        comp[a, phase[u]] += work[u, cls[a]]
        used[a] += params[u]
        crosses = False
        for e in range(succ_ptr[u], succ_ptr[u + 1]):
            v = succ_idx[e]
            b = dev[v]
            if b != a:
                crosses = True
                key = b * P + phase[v]
                if stamp[key] != u:
                    stamp[key] = u
                    inn[b, phase[v]] += comm[u, cls[b]]
        if crosses:
            out[a, phase[u]] += comm[u, cls[a]]
    return comp, inn, out, used, stamp


@njit
def _table(dev: np.ndarray, work: np.ndarray, cls: np.ndarray, comm: np.ndarray, succ_ptr: np.ndarray,
           succ_idx: np.ndarray, phase: np.ndarray, P: int, params: np.ndarray, cap: np.ndarray,
           link: np.ndarray, overflow: bool, overlap: int, srate: np.ndarray, rdiv: np.ndarray
           ) -> np.ndarray:  # pragma: no cover - compiled
    comp, inn, out, used, _ = _parts(dev, work, cls, comm, succ_ptr, succ_idx, phase, P, params)
    return _finish(comp, inn, out, used, cap, link, overflow, overlap, srate, rdiv)


@njit
def _scan(dev: np.ndarray, unit: np.ndarray, to: np.ndarray, mptr: np.ndarray, midx: np.ndarray, pred_ptr: np.ndarray,
          pred_idx: np.ndarray, gpipe: bool, work: np.ndarray, cls: np.ndarray, comm: np.ndarray,
          succ_ptr: np.ndarray, succ_idx: np.ndarray, phase: np.ndarray, P: int, params: np.ndarray, cap: np.ndarray,
          link: np.ndarray, overflow: bool, overlap: int, srate: np.ndarray, rdiv: np.ndarray
          ) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - compiled
    """(objective, sum of squared loads) after each move `unit[i]` -> `to[i]`, one at a time:
    the table of `dev` once, then per move only the parts of the nodes it changes (the
    unit's and their predecessors') are taken back and added again, O(their degrees)."""
    comp, inn, out, used, stamp = _parts(dev, work, cls, comm, succ_ptr, succ_idx, phase, P, params)
    n = dev.shape[0]
    tag = n
    value = np.empty(unit.shape[0])
    spread = np.empty(unit.shape[0])
    work_dev = dev.copy()
    seen = np.full(n, -1)
    touched = np.empty(n, dtype=np.int64)
    for i in range(unit.shape[0]):
        k = unit[i]
        m = 0
        for e in range(mptr[k], mptr[k + 1]):
            x = midx[e]
            if seen[x] != i:
                seen[x] = i
                touched[m] = x
                m += 1
            for f in range(pred_ptr[x], pred_ptr[x + 1]):
                y = pred_idx[f]
                if seen[y] != i:
                    seen[y] = i
                    touched[m] = y
                    m += 1
        c, a, o, w = comp.copy(), inn.copy(), out.copy(), used.copy()
        for q in range(m):
            _charge(touched[q], work_dev, -1.0, work, cls, comm, succ_ptr, succ_idx, phase, P, params, c, a, o, w,
                    stamp, tag)
            tag += 1
        for e in range(mptr[k], mptr[k + 1]):
            work_dev[midx[e]] = to[i]
        for q in range(m):
            _charge(touched[q], work_dev, 1.0, work, cls, comm, succ_ptr, succ_idx, phase, P, params, c, a, o, w,
                    stamp, tag)
            tag += 1
        t = _finish(c, a, o, w, cap, link, overflow, overlap, srate, rdiv)
        value[i] = t[:, 0].max() + (t[:, 1].max() if gpipe else 0.0)
        spread[i] = (t * t).sum()
        for e in range(mptr[k], mptr[k + 1]):
            work_dev[midx[e]] = dev[midx[e]]
    return value, spread


@njit
def _scan_tables(dev: np.ndarray, unit: np.ndarray, to: np.ndarray, mptr: np.ndarray, midx: np.ndarray, gpipe: bool,
                 work: np.ndarray, cls: np.ndarray, comm: np.ndarray, succ_ptr: np.ndarray, succ_idx: np.ndarray,
                 phase: np.ndarray, P: int, params: np.ndarray, cap: np.ndarray, link: np.ndarray, overflow: bool,
                 overlap: int, srate: np.ndarray, rdiv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover
    # (compiled)
    """`_scan`'s results with the whole table per move, O(n + m) each."""
    value = np.empty(unit.shape[0])
    spread = np.empty(unit.shape[0])
    work_dev = dev.copy()
    for i in range(unit.shape[0]):
        k = unit[i]
        for e in range(mptr[k], mptr[k + 1]):
            work_dev[midx[e]] = to[i]
        t = _table(work_dev, work, cls, comm, succ_ptr, succ_idx, phase, P, params, cap, link, overflow, overlap,
                   srate, rdiv)
        value[i] = t[:, 0].max() + (t[:, 1].max() if gpipe else 0.0)
        spread[i] = (t * t).sum()
        for e in range(mptr[k], mptr[k + 1]):
            work_dev[midx[e]] = dev[midx[e]]
    return value, spread


def square_sum(table: np.ndarray) -> float:
    """The load search's tie-breaker: the sum of squared loads (past 1e154 ms a square is
    inf, a tie the max load decides, without numpy's overflow warning)."""
    with np.errstate(over="ignore"):
        return float(np.square(table).sum())


class LoadTable:
    """`table(dev)` -> (objective, load table [D, P]) under the spec's bottleneck semantics."""

    def __init__(self, spec: Spec, use_numba: bool = True) -> None:
        d = spec.dense
        self.spec, self.d = spec, d
        # levels, direct links, activations or stashes in the overflow: the evaluator's own
        overflowing = d.placed_memory and spec.constraints.memory == "overflow"
        self.compiled = HAVE_NUMBA and use_numba and not routed(d) and not overflowing
        self.gpipe = spec.objective.training == "gpipe"
        self.P = 2 if self.gpipe else 1
        self.phase = d.backward.astype(np.int64) if self.gpipe else np.zeros(d.n, dtype=np.int64)
        cls = d.dev_class.astype(np.int64)
        self.args = (np.ascontiguousarray(d.work, dtype=np.float64), cls, np.ascontiguousarray(d.comm, dtype=np.float64),
                     d.succ_ptr.astype(np.int64), d.succ_idx.astype(np.int64), self.phase, self.P,
                     d.params.astype(np.float64), d.memory[cls].astype(np.float64), d.link[cls].astype(np.float64),
                     spec.constraints.memory == "overflow", OVERLAP[spec.objective.overlap])
        self.none = (np.zeros(d.D), np.ones(d.D))
        esrc = np.repeat(np.arange(d.n, dtype=np.int64), np.diff(d.succ_ptr))
        by_dst = np.argsort(d.succ_idx, kind="stable")
        self.preds = (np.searchsorted(d.succ_idx[by_dst], np.arange(d.n + 1)).astype(np.int64), esrc[by_dst])
        self.finite_comm = bool(np.isfinite(d.comm).all())

    def replicas(self, r: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(ms of sync per byte of parameters, the divisor) per device for factors r
        (evaluator/replicas.py); none and one for r None."""
        if r is None:
            return self.none
        rf = r.astype(np.float64)
        return span_rates(self.d, rf).astype(np.float64), rf

    def scan(self, dev: np.ndarray, unit: np.ndarray, to: np.ndarray, mptr: np.ndarray, midx: np.ndarray,
             r: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(objective, sum of squared loads) after each single move of unit[i] (its nodes:
        midx[mptr[k]:mptr[k + 1]]) to device to[i], with replication factors r."""
        if self.compiled and self.finite_comm and np.isfinite(self.args[0][np.arange(len(dev)), self.args[1][dev]]).all():
            return _scan(dev, unit, to, mptr, midx, *self.preds, self.gpipe, *self.args, *self.replicas(r))
        if self.compiled:  # an infinite part would be taken back as NaN: whole tables
            return _scan_tables(dev, unit, to, mptr, midx, self.gpipe, *self.args, *self.replicas(r))
        value, spreads = np.empty(len(unit)), np.empty(len(unit))
        trial = dev.copy()
        for i, (k, j) in enumerate(zip(unit, to)):
            m = midx[mptr[k]:mptr[k + 1]]
            trial[m] = j
            v, table = self(trial, r)
            value[i], spreads[i] = v, square_sum(table)
            trial[m] = dev[m]
        return value, spreads

    def __call__(self, dev: np.ndarray, r: np.ndarray | None = None) -> tuple[float, np.ndarray]:
        if not self.compiled:
            return bottleneck_loads(self.spec, self.d, dev, None if r is None else r.astype(np.float64))
        table = _table(dev, *self.args, *self.replicas(r))
        if self.gpipe:
            return float(table[:, 0].max() + table[:, 1].max()), table
        return float(table[:, 0].max()), table[:, 0]

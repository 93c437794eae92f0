"""The bottleneck load table of an assignment in one O(n + m) pass: the scoring loop of
the load search, compiled with numba.

It computes what `core.evaluate.bottleneck_loads` computes (compute, transfers charged
once per producing node and receiving device, overflow, overlap, GPipe phases, replicated
stages' sync and division) without
NumPy's per-call overhead: about 20x faster on the published workloads. Without numba it
is `bottleneck_loads` itself. tests/test_kernels.py checks that both give the same table.
"""
from __future__ import annotations

import numpy as np
from partdsl.core.evaluate import bottleneck_loads
from partdsl.core.ir import Spec
from partdsl.core.levels import routed
from partdsl.core.replicas import span_bandwidths, sync_rate
from partdsl.kernels.jit import HAVE_NUMBA, njit

OVERLAP = {None: 0, "duplex": 1, "simplex": 2}


@njit
def _table(dev: np.ndarray, work: np.ndarray, cls: np.ndarray, comm: np.ndarray, succ_ptr: np.ndarray,
           succ_idx: np.ndarray, phase: np.ndarray, P: int, params: np.ndarray, cap: np.ndarray,
           link: np.ndarray, overflow: bool, overlap: int, srate: np.ndarray, rdiv: np.ndarray
           ) -> np.ndarray:  # pragma: no cover - compiled
    D = cls.shape[0]
    n = dev.shape[0]
    comp = np.zeros((D, P))
    inn = np.zeros((D, P))
    out = np.zeros((D, P))
    used = np.zeros(D)
    stamp = np.full(D * P, -1)
    for u in range(n):
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
def _scan(dev: np.ndarray, unit: np.ndarray, to: np.ndarray, mptr: np.ndarray, midx: np.ndarray, gpipe: bool,
          work: np.ndarray, cls: np.ndarray, comm: np.ndarray, succ_ptr: np.ndarray, succ_idx: np.ndarray,
          phase: np.ndarray, P: int, params: np.ndarray, cap: np.ndarray, link: np.ndarray, overflow: bool,
          overlap: int, srate: np.ndarray, rdiv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover
    # (compiled)
    """(objective, sum of squared loads) after each move `unit[i]` -> `to[i]`, one at a time."""
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


class LoadTable:
    """`table(dev)` -> (objective, load table [D, P]) under the spec's bottleneck semantics."""

    def __init__(self, spec: Spec, use_numba: bool = True) -> None:
        d = spec.dense
        self.spec, self.d = spec, d
        # levels, direct links, activations in the overflow: the evaluator's own
        overflowing = d.activations and spec.constraints.memory == "overflow"
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

    def replicas(self, r: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(ms of sync per byte of parameters, the divisor) per device for factors r
        (core/replicas.py); none and one for r None."""
        if r is None:
            return self.none
        rf = r.astype(np.float64)
        return sync_rate(rf, span_bandwidths(self.d, rf)).astype(np.float64), rf

    def scan(self, dev: np.ndarray, unit: np.ndarray, to: np.ndarray, mptr: np.ndarray, midx: np.ndarray,
             r: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(objective, sum of squared loads) after each single move of unit[i] (its nodes:
        midx[mptr[k]:mptr[k + 1]]) to device to[i], with replication factors r."""
        if self.compiled:
            return _scan(dev, unit, to, mptr, midx, self.gpipe, *self.args, *self.replicas(r))
        value, spread = np.empty(len(unit)), np.empty(len(unit))
        trial = dev.copy()
        for i, (k, j) in enumerate(zip(unit, to)):
            m = midx[mptr[k]:mptr[k + 1]]
            trial[m] = j
            v, table = self(trial, r)
            value[i], spread[i] = v, float(np.square(table).sum())
            trial[m] = dev[m]
        return value, spread

    def __call__(self, dev: np.ndarray, r: np.ndarray | None = None) -> tuple[float, np.ndarray]:
        if not self.compiled:
            return bottleneck_loads(self.spec, self.d, dev, None if r is None else r.astype(np.float64))
        table = _table(dev, *self.args, *self.replicas(r))
        if self.gpipe:
            return float(table[:, 0].max() + table[:, 1].max()), table
        return float(table[:, 0].max()), table[:, 0]

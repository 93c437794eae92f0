"""The latency path bound of large graphs (kernels/latency/path_bound.py, above
INTERVAL_LIMIT nodes): runs count only the nodes certainly in them, in linear time and
memory (Tarnawski et al. sec. 4's single-stream model; the bound's argument is in
path_bound.py's docstring)."""
from __future__ import annotations

import numpy as np
from partdsl.core.dense import INF
from partdsl.core.ir import Spec
from partdsl.kernels.jit import njit
from partdsl.runtime.deadline import NEVER, Deadline


def host_time(spec: Spec, P: np.ndarray) -> np.ndarray:
    """[m] each path node's cheapest time on a host class (inf if none)."""
    d = spec.dense
    ok = d.class_allowed[P][:, d.host]
    return np.where(ok, d.work[P][:, d.host], INF).min(axis=1, initial=INF)


def path_runs(spec: Spec, path: list[int], deadline: Deadline = NEVER) -> float:
    """The bound when runs count only the nodes certainly in them (graphs above
    INTERVAL_LIMIT nodes): run p_j .. p_i on class c holds its path nodes and every node
    between the path's first cut vertex at or after p_j and its last at or before p_i (a
    cut vertex is comparable to every node, so those nodes descend from p_j and lead to
    p_i: they are in the interval; `cut_vertices`). It costs their work, the path's
    tensor into p_j and the one out of p_i, inf if one of them cannot run on c or (memory
    hard) their parameters do not fit. O(n + m) memory and time (`_runs_dp`); 0 (a valid,
    empty bound) if the deadline has passed."""
    d = spec.dense
    P = np.asarray(path)
    m = len(P)
    ok_cls = d.class_allowed
    hard = spec.constraints.memory == "hard"
    # the nodes between two cut vertices of the path: a range of the topological order
    at = d.topo_position
    cut = cut_vertices(spec)[P]
    idx = np.arange(m)
    first = np.minimum.accumulate(np.where(cut, idx, m)[::-1])[::-1]  # first cut vertex at or after j
    last = np.maximum.accumulate(np.where(cut, idx, -1))  # last cut vertex at or before i
    lo = np.where(first < m, at[P[np.minimum(first, m - 1)]], d.n)  # topological range start, per j
    off = np.ones(d.n, dtype=bool)
    off[P] = False
    off_t = off[d.topo]  # off the path, in topological order

    def between(x: np.ndarray) -> np.ndarray:  # prefix sums over the topological order, off-path nodes only
        return np.r_[0.0, np.cumsum(np.where(off_t, x[d.topo], 0.0))]

    cmem = np.r_[0.0, np.cumsum(d.params[P])]
    hi = np.where(last >= 0, at[P[np.maximum(last, 0)]] + 1, 0)  # topological range end (exclusive), per i
    acc = np.flatnonzero(~d.host)
    K = len(acc)
    cw, cbad, ow, obad = (np.zeros((K, m + 1)), np.zeros((K, m + 1)), np.zeros((K, d.n + 1)), np.zeros((K, d.n + 1)))
    tin, tout, cap = np.zeros((K, m)), np.zeros((K, m)), np.full(K, INF)
    comm = d.cheapest_comm  # a direct link may beat the host route: bounds charge the cheapest
    for k, c in enumerate(acc):
        w = np.where(ok_cls[:, c], d.work[:, c], 0.0)
        cw[k] = np.r_[0.0, np.cumsum(w[P])]
        cbad[k] = np.r_[0, np.cumsum(~ok_cls[P, c])]
        ow[k], obad[k] = between(w), between((~ok_cls[:, c]).astype(float))
        tin[k] = np.r_[0.0, comm[P[:-1], c]]  # into p_j from p_j-1
        tout[k] = np.r_[comm[P[:-1], c], 0.0]  # out of p_i to p_i+1
        cap[k] = d.memory[c] * (1 + 1e-12) if hard and np.isfinite(d.memory[c]) else INF
    if deadline.passed():
        return 0.0
    return float(_runs_dp(host_time(spec, P), cmem, between(d.params), lo, hi, last, cw, cbad, ow, obad, tin, tout, cap))


@njit
def _runs_dp(host: np.ndarray, cmem: np.ndarray, omem: np.ndarray, lo: np.ndarray, hi: np.ndarray,
             last: np.ndarray, cw: np.ndarray, cbad: np.ndarray, ow: np.ndarray, obad: np.ndarray,
             tin: np.ndarray, tout: np.ndarray, cap: np.ndarray) -> float:  # pragma: no cover - numba
    """`path_runs`' DP in O(m) per class: f[i + 1] = min(f[i] + host[i], min over classes
    and j of f[j] + cost(j, i)). Runs with j <= last[i] span cut vertices (they also hold
    the nodes in the topological range [lo[j], hi[i])), the others hold path nodes only; in
    each group the cost is a key of j plus a term of i, and the j that cannot run (a node
    not on the class, memory) are a prefix that only grows with i: a monotone queue per
    group and class keeps the least key of the j that can."""
    m = len(host)
    K = len(cap)
    f = np.full(m + 1, np.inf)
    f[0] = 0.0
    qa = np.zeros((K, m + 1), dtype=np.int64)  # queues of j: span runs (A), path-only runs (B)
    qb = np.zeros((K, m + 1), dtype=np.int64)
    ha, ta = np.zeros(K, dtype=np.int64), np.zeros(K, dtype=np.int64)
    hb, tb = np.zeros(K, dtype=np.int64), np.zeros(K, dtype=np.int64)
    keya = np.zeros((K, m + 1))
    keyb = np.zeros((K, m + 1))
    fed = 0  # the j fed to the A queues so far: 0 .. fed - 1
    for i in range(m):
        best = f[i] + host[i]
        h = hi[i]
        for k in range(K):
            keyb[k, i] = f[i] - cw[k, i] + tin[k, i]  # j = i joins B
            while tb[k] > hb[k] and keyb[k, qb[k, tb[k] - 1]] >= keyb[k, i]:
                tb[k] -= 1
            qb[k, tb[k]] = i
            tb[k] += 1
        while fed <= last[i]:  # j <= last[i] now span a cut vertex: into A
            j = fed
            for k in range(K):
                keya[k, j] = f[j] - cw[k, j] + tin[k, j] - ow[k, lo[j]]
                while ta[k] > ha[k] and keya[k, qa[k, ta[k] - 1]] >= keya[k, j]:
                    ta[k] -= 1
                qa[k, ta[k]] = j
                ta[k] += 1
            fed += 1
        for k in range(K):
            while ha[k] < ta[k]:  # A: drop the front while it cannot run (a prefix)
                j = qa[k, ha[k]]
                if cbad[k, i + 1] - cbad[k, j] > 0.5 or obad[k, h] - obad[k, lo[j]] > 0.5 \
                        or cmem[i + 1] - cmem[j] + omem[h] - omem[lo[j]] > cap[k]:
                    ha[k] += 1
                else:
                    break
            if ha[k] < ta[k]:
                best = min(best, keya[k, qa[k, ha[k]]] + cw[k, i + 1] + tout[k, i] + ow[k, h])
            while hb[k] < tb[k]:  # B: drop the j that span (j <= last[i]) or cannot run
                j = qb[k, hb[k]]
                if j <= last[i] or cbad[k, i + 1] - cbad[k, j] > 0.5 or cmem[i + 1] - cmem[j] > cap[k]:
                    hb[k] += 1
                else:
                    break
            if hb[k] < tb[k]:
                best = min(best, keyb[k, qb[k, hb[k]]] + cw[k, i + 1] + tout[k, i])
        f[i + 1] = best
    return f[m]


def cut_vertices(spec: Spec) -> np.ndarray:
    """[n] the nodes every other node is an ancestor or a descendant of. In a topological
    order, v at position t is one iff each later node has a predecessor at t or later (so,
    by induction, descends from v) and each earlier node a successor at t or earlier. O(n + m)."""
    d = spec.dense
    n = d.n
    at = d.topo_position
    a, b = at[d.src], at[d.dst]
    latest_pred = np.full(n, -1, dtype=np.int64)  # by position
    np.maximum.at(latest_pred, b, a)
    earliest_succ = np.full(n, n, dtype=np.int64)
    np.minimum.at(earliest_succ, a, b)
    after = np.r_[np.minimum.accumulate(latest_pred[::-1])[::-1][1:], n]  # min over positions > t
    before = np.r_[-1, np.maximum.accumulate(earliest_succ)[:-1]]  # max over positions < t
    t = np.arange(n)
    return ((after >= t) & (before <= t))[at]

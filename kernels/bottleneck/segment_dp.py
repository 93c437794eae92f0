"""Optimal split of a fixed order of units into contiguous segments, one per device,
minimizing the maximum segment cost, over heterogeneous device classes.

The DP of Tarnawski sec. 5.1.1 restricted to the prefixes of one order (DPL, sec. 5.1.2),
generalized from (accelerators, CPUs) to any number of device classes: the state is how
many devices of each class are used so far. dp[r][s] = min over l, c of
max(dp[l][s - e_c], cost[c][l, r-1]); vectorized over l and s.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from partdsl.core.dense import INF
from partdsl.kernels.jit import HAVE_NUMBA, njit


@dataclass(frozen=True)
class Split:
    value: float  # max segment cost
    counts: tuple[int, ...]  # devices used per class
    segments: tuple[tuple[int, int, int], ...]  # (l, r inclusive, class)
    replicas: tuple[int, ...] = ()  # per segment, its replication factor (empty: 1 each)


def _states(counts: list[int], max_used: int | None) -> list[tuple[int, ...]]:
    grids = np.stack(np.meshgrid(*[np.arange(k + 1) for k in counts], indexing="ij"), -1).reshape(-1, len(counts))
    out = [tuple(int(x) for x in row) for row in grids]
    if max_used is not None:
        out = [s for s in out if sum(s) <= max_used]
    return sorted(out, key=sum)


def state_table(counts: list[int], max_used: int | None, steps: list[tuple[int, int]] | None = None
                ) -> tuple[list[tuple[int, ...]], int, np.ndarray]:
    """DP states (devices used per class), the index of the all-zero state, and
    prev[v, s]: the state before a segment of kind v, steps[v] = (class, devices it takes)
    (default: one device of each class), -1 if none."""
    states = _states(counts, max_used)
    sidx = {s: i for i, s in enumerate(states)}
    C = len(counts)
    steps = [(c, 1) for c in range(C)] if steps is None else steps
    prev = np.full((len(steps), len(states)), -1, dtype=np.int64)
    for i, s in enumerate(states):
        for v, (c, k) in enumerate(steps):
            if s[c] >= k:
                t = list(s)
                t[c] -= k
                prev[v, i] = sidx.get(tuple(t), -1)
    return states, sidx[tuple([0] * C)], prev


def split_dp(cost: np.ndarray, counts: list[int], max_used: int | None = None,
             use_numba: bool = True, steps: list[tuple[int, int]] | None = None) -> list[Split]:
    """Best split for every combination of device counts (each a candidate). With `steps`,
    cost[v] is the cost of a segment of kind v = (class, replicas) (kernels/bottleneck/
    replicated.py); the splits then say each segment's replicas."""
    C, P, _ = cost.shape
    states, zero, prev = state_table(counts, max_used, steps)
    S = len(states)
    dp = np.full((P + 1, S), INF)
    dp[0, zero] = 0.0
    arg_l = np.full((P + 1, S), -1, dtype=np.int64)
    arg_c = np.full((P + 1, S), -1, dtype=np.int64)
    if HAVE_NUMBA and use_numba:
        _dp_loops(cost, prev, dp, arg_l, arg_c)
    else:
        _dp_numpy(cost, prev, dp, arg_l, arg_c)
    splits = []
    for i, s in enumerate(states):
        if not np.isfinite(dp[P, i]) or sum(s) == 0:
            continue
        segs = []
        r, j = P, i
        while r > 0:
            l, c = int(arg_l[r, j]), int(arg_c[r, j])
            segs.append((l, r - 1, c))
            r, j = l, int(prev[c, j])
        segs.reverse()
        if steps is None:
            splits.append(Split(float(dp[P, i]), s, tuple(segs)))
        else:
            splits.append(Split(float(dp[P, i]), s, tuple((l, r, steps[v][0]) for l, r, v in segs),
                                tuple(steps[v][1] for _, _, v in segs)))
    return splits


def _dp_numpy(cost: np.ndarray, prev: np.ndarray, dp: np.ndarray, arg_l: np.ndarray, arg_c: np.ndarray) -> None:
    """Vectorized over l and states: one NumPy pass per (r, class)."""
    C, P, _ = cost.shape
    S = dp.shape[1]
    for r in range(1, P + 1):
        best = np.full(S, INF)
        for c in range(C):
            ok = prev[c] >= 0
            if not ok.any():
                continue
            # cand[l, s] = max(dp[l, prev_c(s)], cost[c, l, r-1])
            cand = np.maximum(dp[:r][:, prev[c, ok]], cost[c, :r, r - 1][:, None])
            lmin = cand.argmin(axis=0)
            val = cand[lmin, np.arange(len(lmin))]
            tgt = np.flatnonzero(ok)
            better = val < best[tgt]
            best[tgt[better]] = val[better]
            arg_l[r, tgt[better]] = lmin[better]
            arg_c[r, tgt[better]] = c
        dp[r] = best


@njit
def _dp_loops(cost: np.ndarray, prev: np.ndarray, dp: np.ndarray, arg_l: np.ndarray, arg_c: np.ndarray) -> None:
    """The same recurrence as plain loops (compiled by numba), skipping any l whose
    prefix value already reaches the best found."""
    C, P, _ = cost.shape
    S = dp.shape[1]
    for r in range(1, P + 1):
        for s in range(S):
            best = np.inf
            bl = -1
            bc = -1
            for c in range(C):
                ps = prev[c, s]
                if ps < 0:
                    continue
                for l in range(r):
                    a = dp[l, ps]
                    if a >= best:
                        continue
                    b = cost[c, l, r - 1]
                    v = a if a > b else b
                    if v < best:
                        best = v
                        bl = l
                        bc = c
            dp[r, s] = best
            arg_l[r, s] = bl
            arg_c[r, s] = bc

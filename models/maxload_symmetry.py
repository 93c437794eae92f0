"""Symmetry breaking among interchangeable devices in Tarnawski's max-load IP
(models/maxload.py, `-O symmetry=1`): devices of one class allowed the same nodes are
ordered by their first node in a topological ranking. With nodes ranked in topological
order, device j of a group may hold node v only if device j-1 holds a node ranked before v;
any solution can be relabelled to satisfy it (`canonical`), so no optimum changes.
"""
from __future__ import annotations

import numpy as np
from partdsl.core.ir import Spec
from partdsl.models.matrix import Rows


def interchangeable(spec: Spec) -> tuple[tuple[int, ...], ...]:
    """Groups (size >= 2) of devices of one class allowed the same nodes; on a routed
    platform, also with the same routes: every two of a group are twins (swapping them
    changes no pair's fabric or direct link), so every relabelling within it keeps costs."""
    d = spec.dense
    seen: dict = {}
    for i in range(d.D):
        seen.setdefault((int(d.dev_class[i]), d.allowed[:, i].tobytes()), []).append(i)
    groups = [g for g in seen.values() if len(g) > 1]
    if spec.constraints.replicate > 1 and d.path_bw is not None:
        return ()  # replicas are placed on the devices after their stage's: a relabelling moves them
    pairs = [m for m in (d.path_bw, d.direct_bw) if m is not None]
    if pairs:
        groups = [t for g in groups for t in _twins(g, pairs) if len(t) > 1]
    return tuple(tuple(g) for g in groups)


def _twins(group: list[int], pairs: list[np.ndarray]) -> list[list[int]]:
    """Split a group into sets whose members are pairwise twins in every pair matrix."""
    def twin(i: int, j: int) -> bool:
        others = np.array([k for k in range(pairs[0].shape[0]) if k not in (i, j)], dtype=np.int64)
        return all(np.array_equal(m[i, others], m[j, others]) and np.array_equal(m[others, i], m[others, j])
                   and m[i, j] == m[j, i] for m in pairs)

    out: list[list[int]] = []
    for i in group:
        home = next((t for t in out if all(twin(i, j) for j in t)), None)
        if home is None:
            out.append([i])
        else:
            home.append(i)
    return out


def ranks(spec: Spec) -> np.ndarray:
    d = spec.dense
    order = d.topo if len(d.topo) == d.n else np.arange(d.n)
    r = np.empty(d.n, dtype=np.int64)
    r[order] = np.arange(d.n)
    return r


def prefix_cols(groups: tuple[tuple[int, ...], ...], n: int) -> int:
    return sum(len(g) - 1 for g in groups) * n


def break_symmetry(spec: Spec, xcol: np.ndarray, groups: tuple[tuple[int, ...], ...], rows: Rows,
                    zero: list[int], nc: int) -> int:
    """S[r, i] = number of nodes ranked <= r on device i (the last device of a group needs
    none); x[v, g_j] <= S[rank(v) - 1, g_{j-1}], and x[v, g_j] = 0 when rank(v) < j."""
    n = spec.dense.n
    rank = ranks(spec)
    by_rank = np.argsort(rank)
    for g in groups:
        S: dict[int, int] = {}
        for i in g[:-1]:
            S[i] = nc
            nc += n
            for r, v in enumerate(by_rank):  # S[r] - S[r-1] - x[v_r, i] = 0
                cols = [S[i] + r] + ([S[i] + r - 1] if r else []) + ([xcol[v, i]] if xcol[v, i] >= 0 else [])
                vals = [1.0] + ([-1.0] if r else []) + ([-1.0] if xcol[v, i] >= 0 else [])
                rows.add_one(np.array(cols), np.array(vals), 0.0, 0.0)
        for j in range(1, len(g)):
            prev, i = g[j - 1], g[j]
            for v in range(n):
                if xcol[v, i] < 0:
                    continue
                if rank[v] < j:
                    zero.append(int(xcol[v, i]))
                else:
                    rows.add_one(np.array([xcol[v, i], S[prev] + rank[v] - 1]), np.array([1.0, -1.0]), -np.inf, 0.0)
    return nc


def canonical(spec: Spec, groups: tuple[tuple[int, ...], ...], dev: np.ndarray,
              factors: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """Relabel interchangeable devices by the rank of their first node (unused ones last),
    so that an assignment satisfies the symmetry-breaking rows; its cost is unchanged.
    Replication factors (per device) move with their stages."""
    rank = ranks(spec)
    out = dev.copy()
    fac = None if factors is None else np.asarray(factors).copy()
    for g in groups:
        first = [rank[dev == i].min() if (dev == i).any() else np.iinfo(np.int64).max for i in g]
        order = np.argsort(first, kind="stable")
        for new, old in zip(g, np.asarray(g)[order]):
            out[dev == old] = new
            if fac is not None:
                fac[new] = factors[old]
    return out, fac

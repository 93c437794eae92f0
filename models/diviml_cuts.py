"""Valid inequalities for the DiviML MILP (models/diviml.py): rows every schedule of the
model satisfies, so its optimum is unchanged, but that give its LP relaxation a bound.

Eqs. (2), (3) and (7) of Ghannane & Abdelfattah (sec. IV-A) tie each share's start to
others through big-M terms; with fractional assignments the LP relaxes them all, and its
bound is about one share's time. Two families restore the bounds the exact model implies:
- load (every split): a device runs its shares one at a time, so C is at least its release
  (the least over the nodes it may run) plus the time of the shares it holds;
- critical path (whole nodes, `split 1`): a column e_i, a lower bound on the end of node
  i, with e_i >= release + its time and, for each edge j -> i and device u, e_i >= e_j +
  its time + tau_u (x[j, u] - x[i, u]), tau_u the least transfer of j's tensor off u (so
  the row counts a transfer only where j's device is known to differ from i's); C >= e
  at the sinks.
"""
from __future__ import annotations

import numpy as np
from partdsl.core.ir import Spec
from partdsl.models.matrix import Rows


def add_cuts(rows: Rows, spec: Spec, ok: np.ndarray, x: np.ndarray, b: np.ndarray, t: np.ndarray, C: int,
             tr: np.ndarray, release: np.ndarray | None, col: int, R: np.ndarray
             ) -> tuple[np.ndarray, list[list[int]], int]:
    """The rows above and the twins' (`add_twin_rows`); returns the e columns ([n], -1
    without them), the twin groups and the next free column. `R`: reachability [n, n]."""
    groups = twins(spec, t, tr, release)
    add_twin_rows(rows, spec, x, groups)
    d = spec.dense
    rel = np.zeros((d.n, d.D)) if release is None else np.maximum(np.asarray(release, dtype=float), 0.0)
    times = np.where(b[:, :, 1:] >= 0, t[:, :, 1:], 0.0)  # [n, D, K] a share of m >= 1 chunks
    for u in range(d.D):
        vs = np.flatnonzero(ok[:, u])
        if not len(vs):
            continue
        held = b[vs, u, 1:] >= 0
        cols, vals = b[vs, u, 1:][held], times[vs, u][held]
        rows.add_one(np.r_[cols, C], np.r_[vals, -1.0], -np.inf, -float(rel[vs, u].min()), ("load", (d.devices[u],)))
    e = np.full(d.n, -1, dtype=np.int64)
    if spec.objective.split != 1:
        return e, groups, col
    e[:] = col + np.arange(d.n)
    col += d.n
    N = d.names
    own = [(b[v, ok[v], 1], t[v, ok[v], 1]) for v in range(d.n)]  # node v's time: sum_u t b
    for v in range(d.n):
        bs, ts = own[v]
        rows.add_one(np.r_[e[v], bs], np.r_[1.0, -(ts + rel[v, ok[v]])], 0.0, np.inf, ("ends", (N[v],)))
        if d.succ_ptr[v] == d.succ_ptr[v + 1]:
            rows.add_one([C, e[v]], [1.0, -1.0], 0.0, np.inf, ("ends_by", (N[v],)))
    for j, i in zip(d.src.tolist(), d.dst.tolist()):
        bs, ts = own[i]
        for u in range(d.D):
            off = [w for w in range(d.D) if w != u and ok[i, w]]
            tau = float(tr[j, u, off].min()) if ok[j, u] and off else 0.0
            if u and tau <= 0:
                continue  # the row without a transfer term: added once, at u = 0
            cols, vals = np.r_[e[i], e[j], bs], np.r_[1.0, -1.0, -ts]
            if tau > 0:
                cols, vals = np.r_[cols, x[j, u, 0]], np.r_[vals, -tau]
                if x[i, u, 0] >= 0:
                    cols, vals = np.r_[cols, x[i, u, 0]], np.r_[vals, tau]
            rows.add_one(cols, vals, 0.0, np.inf, ("path", (N[j], N[i], d.devices[u])))
    _around(rows, spec, ok, b, times[:, :, 0], C, e, rel, own, R)
    return e, groups, col


AROUND_NONZEROS = 200_000  # the `_around` rows are left out past this many nonzeros


def _around(rows: Rows, spec: Spec, ok: np.ndarray, b: np.ndarray, t1: np.ndarray, C: int, e: np.ndarray,
            rel: np.ndarray, own: list, R: np.ndarray) -> None:  # type: ignore[type-arg]
    """For node k and device u: the ancestors of k that u holds run on u one at a time
    before k starts, so e_k >= (least release on u) + their time + k's time; the
    descendants of k that u holds run after k ends, so C >= e_k + their time."""
    d = spec.dense
    if 2 * int(R.sum()) * d.D > AROUND_NONZEROS:
        return
    N = d.names
    for k in range(d.n):
        bs, ts = own[k]
        for u in range(d.D):
            r0 = float(rel[ok[:, u], u].min()) if ok[:, u].any() else 0.0
            for side, mask in (("before", R[:, k] & ok[:, u]), ("after", R[k] & ok[:, u])):
                vs = np.flatnonzero(mask)
                if not len(vs):
                    continue
                if side == "before":
                    rows.add_one(np.r_[e[k], bs, b[vs, u, 1]], np.r_[1.0, -ts, -t1[vs, u]], r0, np.inf,
                                 ("ancestors", (N[k], d.devices[u])))
                else:
                    rows.add_one(np.r_[C, e[k], b[vs, u, 1]], np.r_[1.0, -1.0, -t1[vs, u]], 0.0, np.inf,
                                 ("descendants", (N[k], d.devices[u])))


def end_values(e: np.ndarray, xs: np.ndarray, ends: dict[tuple[int, int], float]) -> None:
    """A MIP start's e columns (in place): each node's end (whole nodes: one share each)."""
    for (v, _), end in ends.items():
        if e[v] >= 0:
            xs[e[v]] = end


def twins(spec: Spec, t: np.ndarray, tr: np.ndarray, release: np.ndarray | None) -> list[list[int]]:
    """Groups of interchangeable nodes (whole nodes only): the same predecessors and
    successors, devices, times, transfers, bytes and releases, and no colocation. Swapping
    two of them maps a schedule to one of the same value."""
    from partdsl.evaluator.schedule_checks import sample_bytes

    d = spec.dense
    if spec.objective.split != 1:
        return []
    held = sample_bytes(spec)
    tied = {v for pair in d.colocated_pairs for v in pair}
    rel = np.zeros((d.n, d.D)) if release is None else np.asarray(release, dtype=float)
    groups: dict[tuple, list[int]] = {}  # type: ignore[type-arg]
    for v in range(d.n):
        if v in tied:
            continue
        key = (tuple(sorted(d.preds[v])),
               tuple(sorted(d.succ_idx[d.succ_ptr[v]:d.succ_ptr[v + 1]].tolist())),
               d.allowed[v].tobytes(), t[v].tobytes(), tr[v].tobytes(), float(d.params[v]), float(held[v]),
               rel[v].tobytes())
        groups.setdefault(key, []).append(v)
    return [g for g in groups.values() if len(g) > 1]


def add_twin_rows(rows: Rows, spec: Spec, x: np.ndarray, groups: list[list[int]]) -> None:
    """Symmetry among twins (`twins`): within a group, a node's device number is at most the
    next one's (and `twin_orders`: on one device the lower-numbered node runs first)."""
    d = spec.dense
    for g in groups:
        for i, j in zip(g, g[1:]):
            ci, cj = x[i, :, 0], x[j, :, 0]
            keep_i, keep_j = ci >= 0, cj >= 0
            rows.add_one(np.r_[ci[keep_i], cj[keep_j]],
                         np.r_[np.flatnonzero(keep_i).astype(float), -np.flatnonzero(keep_j).astype(float)],
                         -np.inf, 0.0, ("twins", (d.names[i], d.names[j])))


def twin_orders(ys: dict, groups: list[list[int]], D: int) -> list[int]:  # type: ignore[type-arg]
    """The order columns fixed at 0 among twins: on device u, twin i (< j) runs before j."""
    return [ys[(i, j, u)] for g in groups for a, i in enumerate(g) for j in g[a + 1:] for u in range(D)
            if (i, j, u) in ys]


def twin_order(groups: list[list[int]], start: dict[tuple[int, int], float]) -> dict[int, int]:
    """A relabelling of a schedule's twins that meets `add_twin_rows`: each group's nodes
    sorted by (device, start) take the group's numbers in order. `start`: (node, device)
    -> start of its one share. Returns node -> the node it becomes."""
    where = {v: (u, s) for (v, u), s in start.items()}
    out: dict[int, int] = {}
    for g in groups:
        ranked = sorted(g, key=lambda v: where[v])
        out.update(zip(ranked, sorted(g)))
    return out

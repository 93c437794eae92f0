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
from partdsl.models import diviml_nodes
from partdsl.models.matrix import Rows, keyed


def add_cuts(rows: Rows, spec: Spec, ok: np.ndarray, x: np.ndarray, b: np.ndarray, t: np.ndarray, C: int,
             tr: np.ndarray, release: np.ndarray | None, col: int, R: np.ndarray
             ) -> tuple[np.ndarray, diviml_nodes.NodeSymmetry, int]:
    """The rows above and those of symmetry among nodes (models/diviml_nodes.py); returns
    the e columns ([n], -1 without them), that symmetry and the next free column. `R`:
    reachability [n, n]."""
    sym = diviml_nodes.find(spec, t, tr, release)
    diviml_nodes.add_rows(rows, spec, x, sym)
    d = spec.dense
    rel = np.zeros((d.n, d.D)) if release is None else np.maximum(np.asarray(release, dtype=float), 0.0)
    times = np.where(b[:, :, 1:] >= 0, t[:, :, 1:], 0.0)  # [n, D, K] a share of m >= 1 chunks
    head, tail = _head_tail(spec, ok, t, rel)
    for u in range(d.D):
        vs = np.flatnonzero(ok[:, u])
        if not len(vs):
            continue
        held = b[vs, u, 1:] >= 0
        cols, vals = b[vs, u, 1:][held], times[vs, u][held]
        rows.add_one(np.r_[cols, C], np.r_[vals, -1.0], -np.inf, -float(head[vs, u].min() + tail[vs].min()),
                     ("load", (d.devices[u],)))
    e = np.full(d.n, -1, dtype=np.int64)
    if spec.objective.split != 1:
        return (e, []), sym, col
    e[:] = col + np.arange(d.n)
    col += d.n
    N = d.names
    own = [(b[v, ok[v], 1], t[v, ok[v], 1]) for v in range(d.n)]  # node v's time: sum_u t b
    for v in range(d.n):
        bs, ts = own[v]
        rows.add_one(np.r_[e[v], bs], np.r_[1.0, -(ts + rel[v, ok[v]])], 0.0, np.inf, ("ends", (N[v],)))
        rows.add_one([C, e[v]], [1.0, -1.0], float(tail[v]), np.inf, ("ends_by", (N[v],)))
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
    zs, col = _around(rows, spec, ok, x, b, times[:, :, 0], C, e, (head, tail), own, R, tr, col)
    return (e, zs), sym, col


def _head_tail(spec: Spec, ok: np.ndarray, t: np.ndarray, rel: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """([n, D] the least start of node v's share on device u: its release there and the
    path before it at each node's fastest time; [n] the least time after v ends: the
    longest path after it at those times). Whole nodes only; zeros under a split batch."""
    d = spec.dense
    head, tail = rel.copy(), np.zeros(d.n)
    if spec.objective.split != 1:
        return head, tail
    fastest = np.where(ok, t[:, :, 1], np.inf).min(axis=1)
    fastest[~np.isfinite(fastest)] = 0.0
    ready = np.zeros(d.n)
    earliest = np.where(ok, rel, np.inf).min(axis=1)  # each node's least release over its devices
    for v in d.topo.tolist():
        done = max(ready[v], float(earliest[v])) + fastest[v]
        for w in d.succ_idx[d.succ_ptr[v]:d.succ_ptr[v + 1]].tolist():
            ready[w] = max(ready[w], done)
    for v in d.topo[::-1].tolist():
        for w in d.succ_idx[d.succ_ptr[v]:d.succ_ptr[v + 1]].tolist():
            tail[v] = max(tail[v], fastest[w] + tail[w])
    return np.maximum(head, ready[:, None]), tail


AROUND_NONZEROS = 200_000  # the `_around` rows are left out past this many nonzeros


def _around(rows: Rows, spec: Spec, ok: np.ndarray, x: np.ndarray, b: np.ndarray, t1: np.ndarray, C: int,
            e: np.ndarray, ends: tuple[np.ndarray, np.ndarray], own: list, R: np.ndarray,  # type: ignore[type-arg]
            tr: np.ndarray, col: int) -> tuple[list[tuple[int, int, np.ndarray, str]], int]:
    """For node k and device u: the ancestors of k that u holds run on u one at a time
    before k starts, so e_k >= (the least head among them, `_head_tail`) + their time +
    k's time; the descendants of k that u holds run after k ends, so C >= e_k + their time
    + the least tail among them. Where k is not on u, the first descendant on u waits for a
    transfer into u (at least tau_in, the least of its possible predecessors' onto u: k's
    and those after k that feed one on u) and k for one out of u after the last ancestor
    there (tau_out): each adds tau (z - x[k, u]), z >= x[i, u] for those nodes i (z: u holds
    one of them). Returns the z columns as (column, u, nodes, name) and the next free column."""
    d = spec.dense
    zs: list[tuple[int, int, np.ndarray, str]] = []
    if 2 * int(R.sum()) * d.D > AROUND_NONZEROS:
        return zs, col
    N = d.names
    head, tail = ends
    for k in range(d.n):
        bs, ts = own[k]
        for u in range(d.D):
            off = np.arange(d.D) != u
            for side, mask in (("ancestors", R[:, k] & ok[:, u]), ("descendants", R[k] & ok[:, u])):
                vs = np.flatnonzero(mask)
                if not len(vs):
                    continue
                if side == "ancestors":  # e_k - sum t x - t_k - tau z + tau x_ku >= r0
                    cols, vals, lo = np.r_[e[k], bs, b[vs, u, 1]], np.r_[1.0, -ts, -t1[vs, u]], float(head[vs, u].min())
                    tau = float(tr[vs][:, u][:, off].min()) if off.any() else 0.0
                else:  # C - e_k - sum t x - tau z + tau x_ku >= 0
                    cols, vals, lo = np.r_[C, e[k], b[vs, u, 1]], np.r_[1.0, -1.0, -t1[vs, u]], float(tail[vs].min())
                    # what the first of them on u waits for: the output of a predecessor of it, k or after k
                    into = np.isin(d.dst, vs) & ((d.src == k) | R[k, d.src])
                    src = np.unique(d.src[into])
                    tau = float(tr[src][:, off, u].min()) if off.any() and len(src) else 0.0
                if tau > 0:
                    zs.append((col, u, vs, keyed(f"{side}_held", (N[k], d.devices[u]))))
                    cols, vals = np.r_[cols, col], np.r_[vals, -tau]
                    if x[k, u, 0] >= 0:
                        cols, vals = np.r_[cols, x[k, u, 0]], np.r_[vals, tau]
                    for i in vs:  # z >= x[i, u]
                        rows.add_one([col, x[i, u, 0]], [1.0, -1.0], 0.0, np.inf, ("holds", (N[k], N[i], d.devices[u])))
                    col += 1
                rows.add_one(cols, vals, lo, np.inf, (side, (N[k], d.devices[u])))
    return zs, col


def end_values(cuts: tuple[np.ndarray, list], xs: np.ndarray,  # type: ignore[type-arg]
               ends: dict[tuple[int, int], float]) -> None:
    """A MIP start's columns of these rows (in place): each node's end (whole nodes: one
    share each), and z = 1 where u holds one of its nodes."""
    e, zs = cuts
    for (v, _), end in ends.items():
        if e[v] >= 0:
            xs[e[v]] = end
    on = {(v, u) for (v, u) in ends}
    for c, u, vs, _ in zs:
        xs[c] = float(any((int(v), u) in on for v in vs))


"""Symmetry breaking for the DiviML MILP (Ghannane & Abdelfattah sec. V-E, and sec. VI's
GPT-3 case study across identical servers).

Two kinds of relabelling map every schedule onto one of the same makespan:
- swapping two identical devices (one class, allowed the same nodes, and equal paths,
  direct links and release times to every other device): `identical_devices`;
- swapping two instances of a server level under one parent instance, device for device
  (sec. VI's 6! across nodes): `identical_servers`, kept at the levels that no group of
  identical devices crosses, so that both kinds of rows hold together (sort the servers,
  outermost level first, then the devices inside them).
The rows order a key along each group (sec. V-E's criteria: chunks held, busy time, or
shares that run): a device, or a server's devices together, hold at least as much as the
next. `canonical` relabels a schedule so the rows hold (a MIP start); `generators` lists
the swaps (MILP-SPLIT solves one (input, output) device pair per orbit of them)."""
from __future__ import annotations

from collections import deque

import numpy as np
from partdsl.core.errors import PartError
from partdsl.core.ir import Spec
from partdsl.core.schedule import Piece, Schedule, share_times
from partdsl.core.server_paths import instances
from partdsl.models.matrix import Rows

SYMMETRY = {0: "off", 1: "tasks", 2: "time", 3: "batches"}  # sec. V-E criteria

Groups = tuple[tuple[int, ...], ...]
Runs = tuple[tuple[np.ndarray, ...], ...]


def check_criterion(criterion: float) -> None:
    if criterion not in SYMMETRY:
        raise PartError(f"symmetry must be one of {', '.join(f'{k} ({v})' for k, v in SYMMETRY.items())}", None)


def _swap(D: int, a: np.ndarray | list[int], b: np.ndarray | list[int]) -> np.ndarray:
    perm = np.arange(D)
    perm[np.asarray(a)], perm[np.asarray(b)] = np.asarray(b), np.asarray(a)
    return perm


def _automorphic(spec: Spec, perm: np.ndarray, release: np.ndarray | None) -> bool:
    """Relabelling device u as perm[u] keeps classes, allowed nodes, paths, direct links
    and release times: a schedule and its relabelling have the same makespan."""
    d = spec.dense
    if not np.array_equal(d.dev_class[perm], d.dev_class) or not np.array_equal(d.allowed[:, perm], d.allowed):
        return False
    for m in (d.path_bw, d.direct_bw):
        if m is not None and not np.array_equal(m[np.ix_(perm, perm)], m):
            return False
    return release is None or np.array_equal(np.asarray(release)[:, perm], release)


def identical_devices(spec: Spec, release: np.ndarray | None = None) -> Groups:
    """Groups (size >= 2) of interchangeable devices: swapping two of them is a relabelling
    that keeps every cost (`_automorphic`; swaps are an equivalence, so one test per group)."""
    D = spec.dense.D
    groups: list[list[int]] = []
    for u in range(D):
        for g in groups:
            if _automorphic(spec, _swap(D, [g[0]], [u]), release):
                g.append(u)
                break
        else:
            groups.append([u])
    return tuple(tuple(g) for g in groups if len(g) > 1)


def identical_servers(spec: Spec, release: np.ndarray | None = None) -> Runs:
    """Runs (length >= 2) of interchangeable server instances, outermost level first: each
    a tuple of device-index blocks, matched device for device (a class's devices are
    numbered server by server). Only at levels that no group of identical devices crosses."""
    return symmetries(spec, release)[1]


def symmetries(spec: Spec, release: np.ndarray | None = None) -> tuple[Groups, Runs]:
    """`identical_devices` and `identical_servers`, the groups found once."""
    p, D = spec.platform, spec.dense.D
    groups = identical_devices(spec, release)
    if not p.servers:
        return groups, ()
    inst = instances(p)
    runs: list[tuple[np.ndarray, ...]] = []
    for s in p.servers:
        i = inst[s.name]
        if any(len(set(i[list(g)].tolist())) > 1 for g in groups):
            continue
        parent = inst[s.parent] if s.parent else np.zeros(D, dtype=np.int64)
        by_parent: dict[int, list[np.ndarray]] = {}
        for k in np.unique(i[i >= 0]).tolist():
            blk = np.flatnonzero(i == k)
            by_parent.setdefault(int(parent[blk[0]]), []).append(blk)
        for blocks in by_parent.values():
            run = [blocks[0]]
            for blk in blocks[1:]:
                if len(blk) == len(run[-1]) and _automorphic(spec, _swap(D, run[-1], blk), release):
                    run.append(blk)
                    continue
                if len(run) > 1:
                    runs.append(tuple(run))
                run = [blk]
            if len(run) > 1:
                runs.append(tuple(run))
    return groups, tuple(runs)


def generators(spec: Spec) -> list[np.ndarray]:
    """Permutations that generate the relabellings found: consecutive identical devices and
    consecutive identical servers swapped."""
    D = spec.dense.D
    groups, runs = symmetries(spec)
    return [_swap(D, [u], [w]) for g in groups for u, w in zip(g, g[1:])] + \
        [_swap(D, a, b) for run in runs for a, b in zip(run, run[1:])]


Devices = tuple[int | None, ...]


def orbits(items: list[Devices], gens: list[np.ndarray], D: int) -> dict[Devices, tuple[Devices, np.ndarray]]:
    """Each tuple of devices (None: no device) -> (its orbit's first tuple r, a permutation
    perm with perm[r] = it), by breadth-first search over the generators."""
    out: dict[Devices, tuple[Devices, np.ndarray]] = {}
    known = set(items)
    for item in items:
        if item in out:
            continue
        out[item] = (item, np.arange(D))
        queue = deque([item])
        while queue:
            cur = queue.popleft()
            perm = out[cur][1]
            for g in gens:
                nxt = tuple(None if a is None else int(g[a]) for a in cur)
                if nxt in known and nxt not in out:
                    out[nxt] = (item, g[perm])
                    queue.append(nxt)
    return out


def relabel(sched: Schedule, perm: np.ndarray) -> Schedule:
    return Schedule(tuple(Piece(p.node, int(perm[p.device]), p.samples, p.start) for p in sched.pieces), sched.batch)


def terms(x: np.ndarray, b: np.ndarray, t: np.ndarray, devices: np.ndarray | list[int],
          criterion: int) -> tuple[np.ndarray, np.ndarray]:
    """The key of a set of devices as (columns, coefficients)."""
    cols, vals = [], []
    for u in devices:
        if criterion == 1:  # chunks held
            c = x[:, u][x[:, u] >= 0]
            v = np.ones(len(c))
        else:
            mask = b[:, u, 1:] >= 0  # shares that run: 1 - b0 = sum of b[m >= 1]
            c = b[:, u, 1:][mask]
            v = np.where(np.isfinite(t[:, u, 1:]), t[:, u, 1:], 0.0)[mask] if criterion == 2 else np.ones(len(c))
        cols.append(c)
        vals.append(v)
    return np.concatenate(cols), np.concatenate(vals)


def add_rows(rows: Rows, spec: Spec, x: np.ndarray, b: np.ndarray, t: np.ndarray, criterion: int,
             release: np.ndarray | None = None) -> None:
    """key(first) >= key(next) along every run of identical servers and group of identical devices."""
    check_criterion(criterion)
    if not criterion:
        return
    Dn = spec.dense.devices
    groups, runs = symmetries(spec, release)
    pairs = [("symmetry_servers", a, c) for run in runs for a, c in zip(run, run[1:])]
    pairs += [("symmetry", [u], [w]) for g in groups for u, w in zip(g, g[1:])]
    for family, first, nxt in pairs:
        cols_u, vals_u = terms(x, b, t, first, criterion)
        cols_w, vals_w = terms(x, b, t, nxt, criterion)
        rows.add_one(np.r_[cols_u, cols_w], np.r_[vals_u, -vals_w], 0.0, np.inf, (family, (Dn[first[0]], Dn[nxt[0]])))


def symmetry_key(spec: Spec, criterion: int, sched: Schedule) -> np.ndarray:
    """Per device, the quantity the symmetry rows order (chunks held, busy time, shares)."""
    d = spec.dense
    g = spec.objective.batch // spec.objective.split
    out = np.zeros(d.D)
    t = share_times(spec)
    held: dict[tuple[int, int], int] = {}
    for p in sched.pieces:
        held[(p.node, p.device)] = held.get((p.node, p.device), 0) + len(p.samples)
    for (v, u), q in held.items():
        m = q // g
        out[u] += {1: m, 2: float(t[v, u, m]) if m < t.shape[2] else 0.0, 3: 1.0}[criterion]
    return out


def canonical(spec: Spec, criterion: int, sched: Schedule, release: np.ndarray | None = None) -> Schedule:
    """The same schedule relabelled so the symmetry rows hold: servers sorted by their
    devices' total key, outermost level first, then identical devices by key (largest first)."""
    D = spec.dense.D
    key = symmetry_key(spec, criterion, sched)
    perm = np.arange(D)  # old device -> new device
    steps: list[np.ndarray] = []
    groups, runs = symmetries(spec, release)
    for run in runs:
        sums = [float(key[blk].sum()) for blk in run]
        step = np.arange(D)
        for j, src in enumerate(sorted(range(len(run)), key=lambda z: (-sums[z], z))):
            step[run[src]] = run[j]
        steps.append(step)
        key[step] = key.copy()
    for grp in groups:
        step = np.arange(D)
        step[sorted(grp, key=lambda u: (-key[u], u))] = grp  # device order[j] becomes grp[j]
        key[step] = key.copy()
        steps.append(step)
    for step in steps:
        perm = step[perm]
    return relabel(sched, perm)

"""Lower bounds for single-stream latency (Tarnawski et al. sec. 4), cheapest first.

critical path: every node on a path runs after its predecessor, at its cheapest time.

path segmentation (valid for any q): take a source-to-sink path p_0 .. p_m-1 and any
finite-latency solution. Consecutive path nodes in one unit (an accelerator subgraph, or
a single node on a host device) form runs; a path that leaves a unit never returns, since
units are contiguous (else the schedule deadlocks). A run p_j .. p_i on an accelerator of
class c is one subgraph, so it holds every node on a path from p_j to p_i (the interval
desc(p_j) & anc(p_i), by contiguity): its memory fits one device of class c (memory
hard), every node of it may run on c, and the subgraph's finish is at least its start +
the tensor of p_j-1 read in + the interval's compute + the tensor of p_i written out
(Fig. 3, constraints 6-7); its start is at least the finish of p_j-1. Nodes beside the
interval that exchange tensors with it either join the subgraph (their work and memory
count) or their tensors move: the run pays the cheaper (`side_costs`), or, better, the
least in + compute + out of any subgraph that holds the interval and none of the nodes it
cannot hold, an s-t min cut (`cut_costs`, kernels/latency/run_cut.py). A path node on a
host device costs its CPU time. So latency >= the cheapest segmentation of the path into
such runs: a DP over the path, O(m^2) per class. Any path gives a bound; many are tried
(longest paths under mixed random weights) and the largest kept. It ignores the device
count, colocation and nodes off the path, so it is a relaxation, never above the optimum.
"""
from __future__ import annotations

import math
import weakref

import numpy as np
from partdsl.core.dense import INF
from partdsl.core.ir import Spec
from partdsl.kernels.latency.path_runs import host_time, path_runs
from partdsl.runtime import memory
from partdsl.runtime.deadline import NEVER, Deadline

INTERVAL_LIMIT = 4000  # above this many nodes, runs count only their path nodes (still a bound)


def longest_path(spec: Spec, w: np.ndarray) -> list[int]:
    """The heaviest source-to-sink path under node weights w."""
    d = spec.dense
    dist = w.astype(float).copy()
    arg = np.full(d.n, -1, dtype=np.int64)
    preds = d.preds
    for v in d.topo.tolist():
        if preds[v]:
            p = max(preds[v], key=lambda x: dist[x])
            dist[v] += dist[p]
            arg[v] = p
    v = int(np.argmax(dist))
    path = [v]
    while arg[v] >= 0:
        v = int(arg[v])
        path.append(v)
    return path[::-1]


def reach_masks(spec: Spec, path: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """[m, n] descendants (inclusive) of each path node, and ancestors (inclusive): one
    sweep each way over the topological order, a column per path node."""
    d = spec.dense
    m = len(path)
    pos = np.full(d.n, -1, dtype=np.int64)
    pos[path] = np.arange(m)
    down = np.zeros((d.n, m), dtype=bool)
    for v in d.topo.tolist():
        if pos[v] >= 0:
            down[v, pos[v]] = True
        for p in d.preds[v]:
            down[v] |= down[p]
    up = np.zeros((d.n, m), dtype=bool)
    for v in d.topo[::-1].tolist():
        if pos[v] >= 0:
            up[v, pos[v]] = True
        for s in d.succ_idx[d.succ_ptr[v]:d.succ_ptr[v + 1]].tolist():
            up[v] |= up[s]
    return down.T.copy(), up.T.copy()


def segmentation(spec: Spec, path: list[int], masks: tuple[np.ndarray, np.ndarray] | None = None,
                 cuts: bool = True, deadline: Deadline = NEVER) -> float:
    """The path segmentation bound for one path (see the module docstring); 0 (a valid,
    empty bound) where its m x m tables would not fit in memory (runtime/memory.py), or
    when `deadline` passes during the run min-cuts."""
    d = spec.dense
    m = len(path)
    if m == 0:
        return 0.0
    if masks is None and d.n > INTERVAL_LIMIT:
        return path_runs(spec, path, deadline)
    P = np.asarray(path)
    C = len(d.class_names)
    ok_cls, hosts = d.class_allowed, host_time(spec, P)
    if 8.0 * (6 * m * m + 2 * d.n * m) > memory.budget():
        return 0.0
    hard = spec.constraints.memory == "hard"
    masks = reach_masks(spec, path) if masks is None else masks
    desc, anc = masks
    inter = desc.astype(float)  # interval (j, i) = desc[j] & anc[i]
    A = anc.astype(float).T
    run_cost = np.full((m, m), INF)  # cheapest accelerator run p_j .. p_i, transfers included
    for c in range(C):
        if d.host[c]:
            continue
        bad = (inter * (~ok_cls[:, c])) @ A > 0.5
        w = np.where(ok_cls[:, c], d.work[:, c], 0.0)
        comp = (inter * w) @ A
        cost = comp.copy()
        mem = (inter * d.params) @ A
        if hard and np.isfinite(d.memory[c]):
            bad |= mem > d.memory[c] * (1 + 1e-12)
        tin, tout = forced_transfers(spec, path, masks, c)
        cost += tin + tout + side_costs(spec, masks, c, mem)
        cost[bad] = INF
        cost[np.tril_indices(m, -1)] = INF  # j <= i only
        if cuts:
            cut = cut_costs(spec, masks, c, mem, np.isfinite(cost), deadline)
            if cut is None:
                return 0.0
            cost = np.maximum(cost, cut)
        run_cost = np.minimum(run_cost, cost)
    f = np.full(m + 1, INF)  # f[i]: p_0 .. p_i-1 processed
    f[0] = 0.0
    for i in range(m):
        best = f[i] + hosts[i]
        acc = f[: i + 1] + run_cost[: i + 1, i]
        f[i + 1] = min(best, acc.min())
    return float(f[m])


def forced_transfers(spec: Spec, path: list[int], masks: tuple[np.ndarray, np.ndarray],
                     c: int) -> tuple[np.ndarray, np.ndarray]:
    """[m, m] transfers a run p_j .. p_i on class c must make. In: every tensor read by a
    node of the run's interval from a node u that cannot be in the subgraph: an ancestor
    of p_j-1 (p_j-1 included; the path u .. p_j-1 .. p_j would leave the subgraph and come
    back), or a node that cannot be on c at all (`outside`). Out: every tensor of an
    interval node read by a descendant of p_i+1 (p_i+1 included) or by a node outside c.
    (Without masks, `path_runs` charges the path's own tensors only.)"""
    d = spec.dense
    m = len(path)
    tin = np.zeros((m, m))
    tout = np.zeros((m, m))
    desc, anc = masks
    src, dst = d.src, d.dst
    comm = d.cheapest_comm[:, c]  # a direct link may beat the host route: bounds charge the cheapest
    off = outside(spec, c)
    for j in range(m):  # in: ancestors of p_j-1 and nodes that cannot be on c, feeding desc(p_j)
        outer = off[src] | (anc[j - 1][src] if j else False)
        sel = outer & desc[j][dst]
        if not sel.any():
            continue
        us, ws = src[sel], dst[sel]
        for u in np.unique(us):
            need = anc[:, ws[us == u]].any(axis=1)  # over i: the interval (j, i) reads u
            tin[j] += comm[u] * need
    for i in range(m):  # out: interval nodes feeding desc(p_i+1) or a node that cannot be on c
        outer = off[dst] | (desc[i + 1][dst] if i + 1 < m else False)
        sel = anc[i][src] & outer
        if not sel.any():
            continue
        for w in np.unique(src[sel]):
            tout[:, i] += comm[w] * desc[:, w]  # over j: w is in the interval (j, i)
    return tin, tout


def side_costs(spec: Spec, masks: tuple[np.ndarray, np.ndarray], c: int, mem: np.ndarray) -> np.ndarray:
    """[m, m] more that a run p_j .. p_i on class c pays for tensors between its interval
    and a node v outside it that `forced_transfers` does not count (v may share the
    subgraph): either v is in the subgraph, which then also runs v (work on c) and holds
    its memory, or the tensor moves. A producer u feeding the interval costs comm(u) if u
    does not fit beside the interval's memory, else min(comm(u), work(u)); an interval
    node w read by such consumers y costs comm(w) if one of them does not fit, else
    min(comm(w), sum of work(y) / (number of candidate w feeding y)), so a consumer's work
    is charged at most once in all. Each charge is for a distinct node's tensor or work (a
    node both fed by and feeding the interval is inside it), so they add up."""
    d = spec.dense
    desc, anc = masks
    m = desc.shape[0]
    src, dst = d.src, d.dst
    comm, work = d.cheapest_comm[:, c], np.where(d.class_allowed[:, c], d.work[:, c], 0.0)
    off = outside(spec, c)
    cap = d.memory[c] if spec.constraints.memory == "hard" else math.inf
    extra = np.zeros((m, m))
    for j in range(m):  # producers u outside desc(p_j), not forced (ancestors of p_j-1, outside c)
        forced = off[src] | (anc[j - 1][src] if j else False)
        sel = ~forced & ~desc[j][src] & desc[j][dst]
        if not sel.any():
            continue
        us, ws = src[sel], dst[sel]
        for u in np.unique(us):
            need = anc[:, ws[us == u]].any(axis=1)  # over i
            fits = mem[j] + d.params[u] <= cap * (1 + 1e-12)
            extra[j] += need * np.where(fits, min(comm[u], work[u]), comm[u])
    for i in range(m):  # interval nodes w (in anc(p_i)) read by consumers y outside anc(p_i), not forced
        forced_y = off[dst] | (desc[i + 1][dst] if i + 1 < m else False)
        feeds_out = anc[i][src] & ~anc[i][dst]
        forced_w = np.unique(src[feeds_out & forced_y])
        sel = feeds_out & ~forced_y & ~np.isin(src, forced_w)
        if not sel.any():
            continue
        ws, ys = src[sel], dst[sel]
        share = work / np.maximum(np.bincount(ys, minlength=d.n), 1)  # y's work split over its feeders
        for w in np.unique(ws):
            y = ys[ws == w]
            fits = mem[:, i] + d.params[y].max() <= cap * (1 + 1e-12)
            extra[:, i] += desc[:, w] * np.where(fits, min(comm[w], share[y].sum()), comm[w])
    return extra


def cut_costs(spec: Spec, masks: tuple[np.ndarray, np.ndarray], c: int, mem: np.ndarray,
              runs: np.ndarray, deadline: Deadline = NEVER) -> np.ndarray | None:
    """[m, m] the min-cut bound of kernels/latency/run_cut.py for each run (j, i) in `runs`
    (0 elsewhere): the subgraph holds the interval and excludes ancestors of p_j-1,
    descendants of p_i+1 and nodes too large to fit beside the interval. None once
    `deadline` passes (a max flow per run: thousands on a long path)."""
    from partdsl.kernels.latency.run_cut import RunCut

    d = spec.dense
    desc, anc = masks
    m = desc.shape[0]
    net = RunCut(spec, c)
    cap = d.memory[c] if spec.constraints.memory == "hard" else math.inf
    out = np.zeros((m, m))
    for k, (j, i) in enumerate(zip(*np.nonzero(runs))):
        if k % 64 == 0 and deadline.passed():
            return None
        inside = desc[j] & anc[i]
        excluded = (d.params > (cap - mem[j, i]) * (1 + 1e-12)) & ~inside
        if j:
            excluded |= anc[j - 1]
        if i + 1 < m:
            excluded |= desc[i + 1]
        out[j, i] = net.cost(inside, excluded)
    return out


def outside(spec: Spec, c: int) -> np.ndarray:
    """[n] nodes no subgraph on class c can hold: not allowed on c, or (memory hard) larger
    than one device's memory. A run's interval containing one is rejected; a tensor
    between one and the interval is always transferred."""
    d = spec.dense
    off = ~d.class_allowed[:, c]
    if spec.constraints.memory == "hard" and np.isfinite(d.memory[c]):
        off |= d.params > d.memory[c] * (1 + 1e-12)
    return off


def path_bound(spec: Spec, tries: int = 64, seed: int = 0, deadline: Deadline = NEVER,
               cut_paths: int = 3) -> tuple[float, list[int]]:
    """The best path segmentation bound over longest paths under several weightings:
    cheapest time, accelerator time, memory, tensor transfers, and random mixes. Every
    path is scored without the run min-cuts; the `cut_paths` best are scored again with
    them (the cuts cost a max flow per run). A completed result is kept per spec (by
    value, as long as the spec lives), so the solves of one `part bound` or one benchmark
    compute it once."""
    key = (tries, seed, cut_paths)
    memo = _finished.get(spec, {}).get(key)
    if memo is not None:
        return memo[0], list(memo[1])
    d = spec.dense
    if d.n == 0:
        return 0.0, []
    rng = np.random.default_rng(seed)
    cheapest = np.where(d.allowed, d.work[:, d.dev_class], INF).min(axis=1, initial=INF)
    cheapest = np.where(np.isfinite(cheapest), cheapest, 0.0)
    comm = d.comm.max(axis=1) if d.comm.size else np.zeros(d.n)
    params = d.params / max(float(d.params.max(initial=0.0)), 1e-300)
    base = [cheapest, comm, params * max(float(cheapest.max(initial=0.0)), 1.0)]
    scored: dict[tuple[int, ...], float] = {}
    complete = True
    for t in range(tries):
        if t and deadline.passed():  # one path at least, however short the time: a bound to return
            complete = False
            break
        if t < len(base):
            w = base[t]
        else:
            mix = rng.dirichlet(np.ones(3))
            scale = [max(float(b.max(initial=0.0)), 1e-12) for b in base]
            w = sum(mx * b / s for mx, b, s in zip(mix, base, scale)) * rng.uniform(0.5, 1.5, d.n)
        path = tuple(longest_path(spec, w))
        if path not in scored:
            scored[path] = segmentation(spec, list(path), cuts=False)
    best_path = max(scored, key=scored.__getitem__)
    best = scored[best_path]
    for path in sorted(scored, key=scored.__getitem__, reverse=True)[:cut_paths]:
        if deadline.passed():
            complete = False
            break
        v = segmentation(spec, list(path), deadline=deadline)
        if deadline.passed():
            complete = False
        if v > best:
            best, best_path = v, path
    if complete:
        _finished.setdefault(spec, {})[key] = (best, tuple(best_path))
    return best, list(best_path)


_finished: "weakref.WeakKeyDictionary[Spec, dict[tuple[int, int, int], tuple[float, tuple[int, ...]]]]" = \
    weakref.WeakKeyDictionary()

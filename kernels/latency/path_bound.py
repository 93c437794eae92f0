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
cannot hold, an s-t min cut (kernels/latency/run_cut.py), taken for the runs the
cheapest segmentation uses until they are all cut (run_cut.refined). A path node on a
host device costs its CPU time. So latency >= the cheapest segmentation of the path into
such runs: a DP over the path, O(m^2) per class (the run costs: kernels/latency/run_costs.py). Any path gives a bound; many are tried
(longest paths under mixed random weights) and the largest kept. It ignores the device
count and nodes off the path, so it is a relaxation, never above the optimum.

Colocation (one subgraph per accelerator, q = 1): colocated nodes share a device, so a
node colocated with an interval node is in the run's subgraph too. A run is impossible
when such a node is an ancestor of p_j-1 or a descendant of p_i+1 (the subgraph would not
be contiguous; `colocation_blocked`), and the run cuts keep colocated nodes on one side.
With q > 1 colocated nodes may sit in two subgraphs of one accelerator, and neither applies.
"""
from __future__ import annotations

import math
import weakref

import numpy as np
from partdsl.core.dense import INF
from partdsl.core.ir import Spec
from partdsl.kernels.latency.path_runs import host_time, path_runs
from partdsl.kernels.latency.run_costs import run_tables
from partdsl.kernels.latency.run_cut import refined
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
    empty bound) where its m x m tables would not fit in memory (runtime/memory.py). When
    `deadline` passes during the run min-cuts, the segmentation with the runs cut so far."""
    d = spec.dense
    m = len(path)
    if m == 0:
        return 0.0
    if masks is None and d.n > INTERVAL_LIMIT:
        return path_runs(spec, path, deadline)
    P = np.asarray(path)
    C = len(d.class_names)
    hosts = host_time(spec, P)
    if 8.0 * (6 * m * m + 2 * d.n * m) > memory.budget():
        return 0.0
    masks = reach_masks(spec, path) if masks is None else masks
    q1 = spec.constraints.subgraphs == 1  # one subgraph per accelerator: colocated nodes share it
    costs = run_tables(spec, masks, [c for c in range(C) if not d.host[c]], colocated=q1, deadline=deadline)
    if costs is None:
        return 0.0
    if cuts and costs:
        return refined(spec, masks, costs, lambda tables: _cheapest(tables, hosts), q1, deadline)
    return _cheapest([cost for _, cost, _ in costs], hosts)[0]


def _cheapest(tables: list[np.ndarray], hosts: np.ndarray) -> tuple[float, list[tuple[int, int, int]]]:
    """`cheapest_split` over the classes' run costs: its value and runs (class index, j, i)."""
    if not tables:
        return cheapest_split(np.full((len(hosts), len(hosts)), INF), hosts)[0], []
    stacked = np.stack(tables)
    value, runs = cheapest_split(stacked.min(axis=0), hosts)
    return value, [(int(stacked[:, j, i].argmin()), j, i) for j, i in runs]


def cheapest_split(run_cost: np.ndarray, hosts: np.ndarray) -> tuple[float, list[tuple[int, int]]]:
    """The least cost of p_0 .. p_m-1 cut into runs (run_cost[j, i]) and host nodes, and
    its runs (j, i)."""
    m = len(hosts)
    f = np.full(m + 1, INF)  # f[i]: p_0 .. p_i-1 processed
    f[0] = 0.0
    start = np.full(m + 1, -1)  # the run ending at p_i-1 starts here; -1: p_i-1 on a host
    for i in range(m):
        acc = f[: i + 1] + run_cost[: i + 1, i]
        j = int(np.argmin(acc))
        f[i + 1] = f[i] + hosts[i]
        if acc[j] < f[i + 1]:
            f[i + 1], start[i + 1] = acc[j], j
    runs, i = [], m
    while i > 0 and math.isfinite(f[m]):
        if start[i] < 0:
            i -= 1
        else:
            runs.append((int(start[i]), i - 1))
            i = int(start[i])
    return float(f[m]), runs


def path_bound(spec: Spec, tries: int = 64, seed: int = 0, deadline: Deadline = NEVER,
               cut_paths: int = 3) -> tuple[float, list[int]]:
    """The best path segmentation bound over longest paths under several weightings:
    cheapest time, accelerator time, memory, tensor transfers, and random mixes. Every
    path is scored without the run min-cuts; the best of the first weightings' paths is
    scored with them at once (so a short deadline still gets a cut bound), and the
    `cut_paths` best of all at the end. A completed result is kept per spec (by value, as
    long as the spec lives), so the solves of one `part bound` or one benchmark compute it
    once."""
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
    cut: dict[tuple[int, ...], float] = {}
    complete = True

    def cut_best(count: int) -> None:
        nonlocal complete
        for path in sorted(scored, key=scored.__getitem__, reverse=True)[:count]:
            if deadline.passed():
                complete = False
                return
            if path not in cut:
                cut[path] = segmentation(spec, list(path), deadline=deadline)
                complete = complete and not deadline.passed()

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
        if t == min(len(base), tries) - 1 and cut_paths:
            cut_best(1)
    cut_best(cut_paths)
    every = {p: max(v, cut.get(p, v)) for p, v in scored.items()}
    best_path = max(every, key=every.__getitem__)
    if complete:
        _finished.setdefault(spec, {})[key] = (every[best_path], tuple(best_path))
    return every[best_path], list(best_path)


_finished: "weakref.WeakKeyDictionary[Spec, dict[tuple[int, int, int], tuple[float, tuple[int, ...]]]]" = \
    weakref.WeakKeyDictionary()

"""A lower bound on the bottleneck of contiguous splits (Tarnawski et al. sec. 3, Def. 3.1):
the latency path bound's runs (kernels/latency/path_bound.py) under a max instead of a sum.

Take a source-to-sink path p_0 .. p_m-1 and a contiguous split of an inference graph.
Every device's node set is convex, so a path that leaves a device never comes back: the
path falls into runs of consecutive nodes, each on its own device, at most k_c of them on
class c. A run p_j .. p_i on a device of class c holds every node between p_j and p_i (the
interval) and no ancestor of p_j-1 nor descendant of p_i+1, so that device's load is at
least the least compute + tensors in (once per producer) + tensors out (once) of such a
set: the evaluator's load on a flat platform (evaluator/evaluate.py), priced per run as
the latency bound prices a subgraph (kernels/latency/run_costs.py, run_cut.py). Colocated
nodes share a device, so a run never splits a group, and memory (hard) must fit. So

    bottleneck >= min over such segmentations of the largest run's cost,

a DP over the path with the runs counted per class (`min_max_split`); any path gives a
bound, several are tried. Host devices are devices here: contiguity binds them too.

Applies to `contiguous` bottleneck specs of inference graphs on flat platforms, without
overlap or replicas (`applies`); other specs get 0 from `contiguous_path_bound`.
"""
from __future__ import annotations

import itertools
import weakref

import numpy as np
from partdsl.core.dense import INF
from partdsl.core.ir import Spec
from partdsl.evaluator.levels import routed
from partdsl.kernels.latency.path_bound import INTERVAL_LIMIT, longest_path, reach_masks
from partdsl.kernels.latency.run_costs import run_tables
from partdsl.kernels.latency.run_cut import refined
from partdsl.runtime import memory
from partdsl.runtime.deadline import NEVER, Deadline

MAX_STATES = 4096  # run counts tracked per class up to this many combinations, else in total


def applies(spec: Spec) -> bool:
    """A contiguous bottleneck on an inference graph, flat platform, no overlap or replicas,
    at most INTERVAL_LIMIT nodes (the run tables are m x m per class)."""
    d, c = spec.dense, spec.constraints
    return bool(spec.objective.kind == "bottleneck" and spec.objective.overlap is None and c.contiguous
                and c.replicate <= 1 and 0 < d.n <= INTERVAL_LIMIT and not d.backward.any() and not routed(d))


def contiguous_path_bound(spec: Spec, tries: int = 16, seed: int = 0, deadline: Deadline = NEVER) -> float:
    """The best bound over longest paths under a few weightings (cheapest time, tensors,
    parameters, random mixes): each scored without run cuts, the best one then with them.
    A bound that ran to its end is kept per spec (as long as the spec lives)."""
    if not applies(spec):
        return 0.0
    key = (tries, seed)
    kept = _finished.get(spec, {}).get(key)
    if kept is not None:
        return kept
    d = spec.dense
    rng = np.random.default_rng(seed)
    cheapest = np.where(d.allowed, d.work[:, d.dev_class], INF).min(axis=1, initial=INF)
    base = [np.where(np.isfinite(cheapest), cheapest, 0.0), d.comm.max(axis=1, initial=0.0),
            d.params / max(float(d.params.max(initial=0.0)), 1e-300)]
    scale = [max(float(b.max(initial=0.0)), 1e-12) for b in base]
    scored: dict[tuple[int, ...], float] = {}
    for t in range(tries):
        if t and deadline.passed():
            break
        w = base[t] if t < len(base) else sum(x * b / s for x, b, s in zip(rng.dirichlet(np.ones(3)), base, scale))
        path = tuple(longest_path(spec, w))
        if path not in scored:
            scored[path] = path_value(spec, list(path), cuts=False)
    best = max(scored, key=scored.__getitem__)
    value = max(scored[best], path_value(spec, list(best), deadline=deadline))
    if not deadline.passed():
        _finished.setdefault(spec, {})[key] = value
    return value


_finished: "weakref.WeakKeyDictionary[Spec, dict[tuple[int, int], float]]" = weakref.WeakKeyDictionary()


def path_value(spec: Spec, path: list[int], cuts: bool = True, deadline: Deadline = NEVER) -> float:
    """The bound of one path (module docstring); 0 where its tables would not fit in memory."""
    d = spec.dense
    m = len(path)
    if m == 0 or 8.0 * (6 * m * m * len(d.class_names) + 2 * d.n * m) > memory.budget():
        return 0.0
    masks = reach_masks(spec, path)
    classes = list(range(len(d.class_names)))
    costs = run_tables(spec, masks, classes, colocated=True)
    limits = [int((d.dev_class == c).sum()) for c in classes]

    def split(tables: list[np.ndarray]) -> tuple[float, list[tuple[int, int, int]]]:
        return min_max_split(tables, limits)

    if cuts:
        return refined(spec, masks, costs, split, True, deadline)
    return split([cost for _, cost, _ in costs])[0]


def min_max_split(tables: list[np.ndarray], limits: list[int]) -> tuple[float, list[tuple[int, int, int]]]:
    """min over cuts of p_0 .. p_m-1 into runs (j, i) on classes k (tables[k][j, i] each, at
    most limits[k] runs of class k) of the largest run cost; its value and runs (k, j, i).
    The run counts are tracked per class while their combinations stay within MAX_STATES,
    else as one total (fewer limits: still a bound)."""
    m = tables[0].shape[0]
    caps = [min(x, m) for x in limits]
    if np.prod([x + 1 for x in caps], dtype=float) > MAX_STATES:  # one count over all classes
        stacked = np.stack(tables)
        value, runs = min_max_split([stacked.min(axis=0)], [min(sum(limits), m)])
        return value, [(int(stacked[:, j, i].argmin()), j, i) for _, j, i in runs]
    states = list(itertools.product(*[range(x + 1) for x in caps]))
    index = {s: t for t, s in enumerate(states)}
    g = np.full((m + 1, len(states)), INF)
    g[0, index[tuple(0 for _ in caps)]] = 0.0
    back = np.full((m + 1, len(states), 2), -1, dtype=np.int64)  # (run start j, class k)
    moves = [(k, [(index[s], index[s[:k] + (s[k] - 1,) + s[k + 1:]]) for s in states if s[k] > 0])
             for k in range(len(caps))]
    for i in range(1, m + 1):
        for k, pairs in moves:
            if not pairs:
                continue
            to, frm = (np.array(x) for x in zip(*pairs))
            cand = np.maximum(g[:i, frm], tables[k][:i, i - 1, None])  # [j, state]
            j = cand.argmin(axis=0)
            val = cand[j, np.arange(len(frm))]
            better = val < g[i, to]
            g[i, to[better]] = val[better]
            back[i, to[better]] = np.stack([j[better], np.full(better.sum(), k)], axis=1)
    s = int(g[m].argmin())
    value = float(g[m, s])
    runs: list[tuple[int, int, int]] = []
    i = m
    while i > 0 and np.isfinite(value):
        j, k = (int(x) for x in back[i, s])
        runs.append((k, j, i - 1))
        st = states[s]
        s = index[st[:k] + (st[k] - 1,) + st[k + 1:]]
        i = j
    return value, runs

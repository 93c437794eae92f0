"""A lower bound on the bottleneck of contiguous splits (Tarnawski et al. sec. 3, Def. 3.1):
the latency path bound's runs (kernels/latency/path_bound.py) under a max instead of a sum.

Take a source-to-sink path p_0 .. p_m-1 and a contiguous split of an inference graph (a
training graph: of one phase's view, kernels/bottleneck/phase_view.py).
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

Applies to `contiguous` bottleneck specs on flat platforms, without overlap or replicas
(`applies`); other specs get 0 from `contiguous_path_bound`.
"""
from __future__ import annotations

import itertools
import weakref

import numpy as np
from partdsl.core.dense import INF
from partdsl.core.ir import Spec
from partdsl.evaluator.levels import routed
from partdsl.kernels.bottleneck.phase_view import phase_view
from partdsl.kernels.jit import HAVE_NUMBA, njit
from partdsl.kernels.latency.path_bound import INTERVAL_LIMIT, longest_path, reach_masks
from partdsl.kernels.latency.run_costs import run_tables
from partdsl.kernels.latency.run_cut import refined
from partdsl.runtime import memory
from partdsl.runtime.deadline import NEVER, Deadline

MAX_STATES = 4096  # run counts tracked per class up to this many combinations, else in total
MAX_PATH = 2000  # longer paths are not scored: m x m tables of 4M entries take seconds each (a 3,923-node
#                  decoder's 2,900-node paths took 20 s); the papers' graphs' paths have at most 800 nodes


def applies(spec: Spec) -> bool:
    """A contiguous bottleneck on a flat platform, no overlap or replicas, at most
    INTERVAL_LIMIT nodes (the run tables are m x m per class)."""
    d, c = spec.dense, spec.constraints
    return bool(spec.objective.kind == "bottleneck" and spec.objective.overlap is None and c.contiguous
                and c.replicate <= 1 and 0 < d.n <= INTERVAL_LIMIT and not routed(d))


def contiguous_path_bound(spec: Spec, tries: int = 16, seed: int = 0, deadline: Deadline = NEVER) -> float:
    """The best bound over longest paths under a few weightings (cheapest time, tensors,
    parameters, random mixes): each scored without run cuts, the best one then with them.
    On a training graph, the larger of its two phases' bounds (kernels/bottleneck/phase_view.py;
    GPipe's max FW + max BW is at least any device's FW + BW, the load bounded). A bound
    that ran to its end is kept per spec (as long as the spec lives)."""
    if not applies(spec):
        return 0.0
    key = (tries, seed)
    kept = _finished.get(spec, {}).get(key)
    if kept is not None:
        return kept
    if spec.dense.backward.any():
        views = [phase_view(spec, backward) for backward in (False, True)]
        value = max(_best_path(v, tries, seed, deadline) if v.dense.n else 0.0 for v in views)
    else:
        value = _best_path(spec, tries, seed, deadline)
    if not deadline.passed():
        _finished.setdefault(spec, {})[key] = value
    return value


def _best_path(spec: Spec, tries: int, seed: int, deadline: Deadline) -> float:
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
            scored[path] = path_value(spec, list(path), cuts=False, deadline=deadline)
    best = max(scored, key=scored.__getitem__)
    return max(scored[best], path_value(spec, list(best), deadline=deadline))


_finished: "weakref.WeakKeyDictionary[Spec, dict[tuple[int, int], float]]" = weakref.WeakKeyDictionary()


def path_value(spec: Spec, path: list[int], cuts: bool = True, deadline: Deadline = NEVER) -> float:
    """The bound of one path (module docstring); 0 where its tables would not fit in memory,
    past MAX_PATH nodes, or when `deadline` passes while its tables are built."""
    d = spec.dense
    m = len(path)
    if m == 0 or m > MAX_PATH or 8.0 * (6 * m * m * len(d.class_names) + 2 * d.n * m) > memory.budget():
        return 0.0
    masks = reach_masks(spec, path)
    classes = list(range(len(d.class_names)))
    costs = run_tables(spec, masks, classes, colocated=True, deadline=deadline)
    if costs is None:
        return 0.0
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
    K = len(caps)
    prev = np.array([[index[s[:k] + (s[k] - 1,) + s[k + 1:]] if s[k] > 0 else -1 for k in range(K)] for s in states],
                    dtype=np.int64)  # [S, K] the state before a run of class k, -1 if none
    stacked = np.ascontiguousarray(np.stack(tables), dtype=np.float64)
    g, back_j, back_k = (_dp_compiled if HAVE_NUMBA else _dp_numpy)(stacked, prev, index[tuple(0 for _ in caps)])
    s = int(g[m].argmin())
    value = float(g[m, s])
    runs: list[tuple[int, int, int]] = []
    i = m
    while i > 0 and np.isfinite(value):
        j, k = int(back_j[i, s]), int(back_k[i, s])
        runs.append((k, j, i - 1))
        s, i = int(prev[s, k]), j
    return value, runs


def _dp_numpy(tables: np.ndarray, prev: np.ndarray, start: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """g[i, s]: the least largest run over p_0 .. p_i-1 in run-count state s; the last run's
    start and class per (i, s). Vectorized over run starts and states."""
    K, m, _ = tables.shape
    S = prev.shape[0]
    g = np.full((m + 1, S), INF)
    g[0, start] = 0.0
    back_j = np.full((m + 1, S), -1, dtype=np.int64)
    back_k = np.full((m + 1, S), -1, dtype=np.int64)
    moves = [(np.flatnonzero(prev[:, k] >= 0), prev[prev[:, k] >= 0, k]) for k in range(K)]
    for i in range(1, m + 1):
        for k, (to, frm) in enumerate(moves):
            if not len(to):
                continue
            cand = np.maximum(g[:i, frm], tables[k, :i, i - 1, None])  # [j, state]
            j = cand.argmin(axis=0)
            val = cand[j, np.arange(len(frm))]
            better = val < g[i, to]
            g[i, to[better]] = val[better]
            back_j[i, to[better]] = j[better]
            back_k[i, to[better]] = k
    return g, back_j, back_k


@njit
def _dp_compiled(tables, prev, start):  # type: ignore[no-untyped-def]
    """`_dp_numpy` compiled: the same table, loop by loop."""
    K, m, _ = tables.shape
    S = prev.shape[0]
    g = np.full((m + 1, S), np.inf)
    g[0, start] = 0.0
    back_j = np.full((m + 1, S), -1, dtype=np.int64)
    back_k = np.full((m + 1, S), -1, dtype=np.int64)
    for i in range(1, m + 1):
        for s in range(S):
            for k in range(K):
                p = prev[s, k]
                if p < 0:
                    continue
                for j in range(i):
                    c = tables[k, j, i - 1]
                    if g[j, p] > c:
                        c = g[j, p]
                    if c < g[i, s]:
                        g[i, s] = c
                        back_j[i, s] = j
                        back_k[i, s] = k
    return g, back_j, back_k

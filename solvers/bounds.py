"""Cheap proven bounds valid for every method (tighter ones come from the MIP hierarchy).

bottleneck: a device's load is at least the compute of its nodes, so OPT >= the largest
colocated component's cheapest compute, and >= total cheapest compute / devices usable.
latency: OPT >= the critical path with each node at its cheapest allowed time (Tarnawski
sec. 4: a subgraph's finish includes every node of it on the path).
throughput and latency by tasks (DiviML schedules, core/schedule.py): every sample passes
each node in some piece, so the makespan >= the critical path of each node's shortest
piece; and the devices' busy time >= the cheapest way to run each node's L samples in
pieces of supported sizes on allowed classes, so makespan >= that total / devices.
Throughput <= L / that makespan (an upper bound, the objective being maximized).
"""
from __future__ import annotations

import numpy as np

from ..core.dense import INF
from ..core.dense import work_time
from ..core.ir import Spec
from ..kernels.orders import kahn, successors


def _cheapest(spec: Spec, times: np.ndarray) -> np.ndarray:
    """times[n, C] -> cheapest allowed time per node."""
    d = spec.dense
    t = times[:, d.dev_class]  # [n, D]
    return np.where(d.allowed, t, INF).min(axis=1)


def _critical_path(spec: Spec, w: np.ndarray) -> float:
    d = spec.dense
    succ = successors(d.n, d.src, d.dst)
    dist = w.copy()
    for u in kahn(d.n, d.src, d.dst):
        for v in succ[u]:
            dist[v] = max(dist[v], dist[u] + w[v])
    return float(dist.max()) if d.n else 0.0


def _spread(spec: Spec, w: np.ndarray) -> float:
    d = spec.dense
    usable = d.D if spec.constraints.max_stages is None else min(d.D, spec.constraints.max_stages)
    return float(w.sum() / max(usable, 1))


def bound(spec: Spec) -> float:
    d = spec.dense
    kind = spec.objective.kind
    if kind == "bottleneck":
        t = np.where(d.allowed, d.work[:, d.dev_class], INF)  # [n, D]
        _, comp = np.unique(d.colo, return_inverse=True)
        per = np.zeros((comp.max() + 1, d.D))
        np.add.at(per, comp, t)
        return float(max(per.min(axis=1).max(), _spread(spec, _cheapest(spec, d.work))))
    if kind == "latency":
        return _critical_path(spec, _cheapest(spec, d.work))
    makespan = makespan_bound(spec)
    if kind == "task_latency":
        return makespan
    L = spec.objective.batch
    return L / makespan * 1e3 if makespan > 0 else INF


def makespan_bound(spec: Spec) -> float:
    """Schedule objectives: no schedule ends before the critical path of each node's
    shortest piece, or before the devices' least busy time spread over them."""
    shortest, least = piece_costs(spec)
    return max(_critical_path(spec, shortest), _spread(spec, least))


def piece_costs(spec: Spec) -> tuple[np.ndarray, np.ndarray]:
    """Per node: the shortest piece on any allowed class and size, and the least total
    time of pieces covering its L samples (a DP over sample counts)."""
    d = spec.dense
    L = spec.objective.batch
    shortest = np.full(d.n, INF)
    least = np.full(d.n, INF)
    classes = [c for c in range(len(spec.platform.classes))]
    for v, nd in enumerate(spec.graph.nodes):
        options = []
        for c in classes:
            if not d.allowed[v, d.dev_class == c].any():
                continue
            k = spec.platform.classes[c]
            for b in (k.batches or range(1, L + 1)):
                if b <= L:
                    options.append((b, work_time(nd, k.name, k.speed, b)))
        if not options:
            continue
        shortest[v] = min(t for _, t in options)
        best = np.full(L + 1, INF)
        best[0] = 0.0
        for x in range(1, L + 1):
            best[x] = min((best[x - b] + t for b, t in options if b <= x), default=INF)
        least[v] = best[L]
    return shortest, least

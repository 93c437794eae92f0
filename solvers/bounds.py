"""Cheap proven bounds valid for every method (tighter ones come from the MIP hierarchy).

bottleneck: a device's load is at least the compute of its nodes, so OPT >= the largest
colocated component's cheapest compute, and >= total cheapest compute / devices usable.
latency: OPT >= the critical path with each node at its cheapest allowed time (Tarnawski
sec. 4: a subgraph's finish includes every node of it on the path).
throughput: makespan >= critical path and total work / devices at batch L, so
throughput <= L / that (an upper bound, the objective being maximized).
"""
from __future__ import annotations

import numpy as np

from ..core.dense import INF
from ..core.evaluate import batch_time
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
    L = spec.objective.batch
    C = len(spec.platform.classes)
    tb = np.array([[batch_time(spec, v, c, L) for c in range(C)] for v in range(d.n)]).reshape(d.n, C)
    w = _cheapest(spec, tb)
    makespan = max(_critical_path(spec, w), _spread(spec, w))
    return L / makespan * 1e3 if makespan > 0 else INF

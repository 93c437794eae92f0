"""Segment costs with data-parallel replicas (Tarnawski App. C.2): the DP over an order
chooses, with each segment's class, how many devices of it the stage takes, r = 1 ..
`replicate`, at the load core/replicas.py defines, (cost + 4 (r - 1) |w| / (r B)) / r for
the segment's one-device cost and parameters |w|. Each (class, r) is one kind of segment
of the segmentation DP (segment_dp.split_dp's `steps`), which takes r devices of the class.
Transfers not overlapped, PipeDream's load (not GPipe): topo refuses the other forms
(methods/capabilities.py, `replicas with overlap or GPipe`).
"""
from __future__ import annotations

import numpy as np
from partdsl.core.ir import Spec
from partdsl.runtime import memory


def tables(spec: Spec, pos: np.ndarray, P: int, cost: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """(cost[V, P, P] for every kind of segment, the kinds (class, replicas)): one device,
    then r = 2 .. min(replicate, the class's devices) for each class."""
    d = spec.dense
    counts = np.bincount(d.dev_class, minlength=len(d.class_names))
    steps = [(c, 1) for c in range(len(counts))]
    steps += [(c, r) for c in range(len(counts)) for r in range(2, min(spec.constraints.replicate, counts[c]) + 1)]
    memory.need(8.0 * P * P * (len(steps) + 1), f"the segment tables of {P:,} positions x {len(steps)} kinds of "
                "stage (device class x replicas)")
    prm = np.r_[0.0, np.cumsum(np.bincount(pos, weights=d.params, minlength=P))]
    w = prm[None, 1:] - prm[:-1, None]  # [l, r]: the segment's parameters
    out = np.empty((len(steps), P, P))
    out[: len(counts)] = cost
    for v, (c, r) in enumerate(steps[len(counts):], start=len(counts)):
        sync = 4.0 * (r - 1) * w / (r * d.link[c]) * 1e3 if np.isfinite(d.link[c]) else 0.0
        out[v] = (cost[c] + sync) / r
    return out, steps

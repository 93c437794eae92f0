"""Segment costs with data-parallel replicas (Tarnawski App. C.2): the DP over an order
chooses, with each segment's class, how many devices of it the stage takes, r = 1 ..
`replicate`, at the load evaluator/replicas.py defines, (cost + 4 (r - 1) |w| / (r B)) / r for
the segment's one-device cost and parameters |w|. Each (class, r) is one kind of segment
of the segmentation DP (segment_dp.split_dp's `steps`), which takes r devices of the class.
Transfers not overlapped, PipeDream's load (not GPipe): topo refuses the other forms
(methods/capabilities.py, `replicas with overlap or GPipe`).

On server levels (evaluator/levels.py) the sync's bandwidth depends on which devices the
replicas span. The DP over ideals then places its stages in device order, each class's
stages on its devices one after the other (`placed_rates`), unused devices between them
allowed, as PipeDream's hierarchical optimizer places its stages server by server.
"""
from __future__ import annotations

import numpy as np
from partdsl.core.ir import Spec
from partdsl.evaluator.replicas import placeable, span_rate, sync_rate
from partdsl.runtime import memory


def steps(spec: Spec) -> list[tuple[int, int]]:
    """The kinds of stage, (class, replicas): one device of each class, then r = 2 ..
    min(replicate, the class's devices) for each class."""
    d = spec.dense
    counts = np.bincount(d.dev_class, minlength=len(d.class_names))
    out = [(c, 1) for c in range(len(counts))]
    return out + [(c, r) for c in range(len(counts)) for r in range(2, min(spec.constraints.replicate, counts[c]) + 1)]


def sync_rates(spec: Spec, kinds: list[tuple[int, int]]) -> np.ndarray:
    """[kinds] ms per byte of the stage's parameters: 4 (r - 1) / (r B) of the class's link."""
    return sync_rate(np.array([r for _, r in kinds]), spec.dense.link[[c for c, _ in kinds]])


def tables(spec: Spec, pos: np.ndarray, P: int, cost: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """(cost[V, P, P] for every kind of segment, the kinds (class, replicas), `steps`)."""
    d = spec.dense
    counts = np.bincount(d.dev_class, minlength=len(d.class_names))
    kinds = steps(spec)
    memory.need(8.0 * P * P * (len(kinds) + 1), f"the segment tables of {P:,} positions x {len(kinds)} kinds of "
                "stage (device class x replicas)")
    prm = np.r_[0.0, np.cumsum(np.bincount(pos, weights=d.params, minlength=P))]
    w = prm[None, 1:] - prm[:-1, None]  # [l, r]: the segment's parameters
    out = np.empty((len(kinds), P, P))
    out[: len(counts)] = cost
    rate = sync_rates(spec, kinds)
    for v, (c, r) in enumerate(kinds[len(counts):], start=len(counts)):
        out[v] = (cost[c] + rate[v] * w) / r
    return out, kinds


def placed_rates(spec: Spec, kinds: list[tuple[int, int]], states: list[tuple[int, ...]], prev: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(rate[kinds, states], prev) for a DP whose state s counts the devices used per class:
    the sync rate of a stage of kind v = (c, r) that ends in state s. On a flat platform
    that is the kind's rate in every state. On server levels the stage takes class c's
    devices s[c] - r .. s[c] - 1 in device order, which must be consecutive devices
    (evaluator/replicas.placeable), and syncs over them (`span_rate`); prev[v, s]
    is -1 (no such step) where they are not."""
    d = spec.dense
    flat = sync_rates(spec, kinds)
    rate = np.repeat(flat[:, None], len(states), axis=1)
    if d.path_bw is None:
        return rate, prev
    prev = prev.copy()
    of_class = [np.flatnonzero(d.dev_class == c) for c in range(len(d.class_names))]
    for v, (c, r) in enumerate(kinds):
        for s in np.flatnonzero(prev[v] >= 0):
            first = states[s][c] - r
            lead = int(of_class[c][first])
            if of_class[c][first + r - 1] != lead + r - 1:
                prev[v, s] = -1
            elif r > 1:
                rate[v, s] = span_rate(d, lead, r)
    return rate, prev


def cheapest_rates(spec: Spec, kinds: list[tuple[int, int]], states: int, prev: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(rate[kinds, states], prev) of a relaxation of `placed_rates` on server levels: each
    kind of stage at its cheapest placement anywhere, (c, r) at the least sync rate over
    the leads j of class c whose devices j .. j + r - 1 can hold it (no such step, prev -1,
    where none can). Every plan on the levels, in device order or not, is a plan here at a
    load no higher, when no tensor is sent (a stage's load then depends on its own replicas
    alone), so the DP's value with these rates bounds the levels' optimum from below."""
    d = spec.dense
    prev = prev.copy()
    rate = np.zeros(len(kinds))
    for v, (c, r) in enumerate(kinds):
        if r == 1:
            continue
        leads = [int(j) for j in np.flatnonzero(d.dev_class == c) if placeable(d, int(j), r)]
        if leads:
            rate[v] = min(span_rate(d, j, r) for j in leads)
        else:
            prev[v] = -1
    return np.repeat(rate[:, None], states, axis=1), prev

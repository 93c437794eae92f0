"""Data-parallel stages (Tarnawski App. C.2, PipeDream's hybrid parallelism): a stage whose
device has replication factor r runs on r devices of its class, each taking every r-th
sample. Its load per sample is its one-device load divided by r, after adding the weight
synchronisation PipeDream's optimizer charges (optimizer_graph_hierarchical.py): an
AllReduce of the stage's parameters, 4 (r - 1) |w| / (r B) per step, B the class's `link`
bandwidth, paid with the transfers in (and under GPipe in the backward phase). The other
r - 1 devices hold nothing else; a stage without a factor has r = 1.

On a platform with server levels (evaluator/levels.py) the replicas are placed: the stage on
device j of a class with factor r runs on that class's devices j .. j + r - 1 (numbered
server by server), none of which may hold another stage. Their AllReduce takes the cheaper
of one ring at the slowest bandwidth between them (ports and fabrics) and a hierarchical
AllReduce, inside each server and then across servers, which is what PipeDream charges a
stage replicated across servers (`allreduce_rate`).
"""
from __future__ import annotations

import numpy as np
from partdsl.core.dense import Dense
from partdsl.core.evaluation import Violation
from partdsl.core.ir import Spec


def used_devices(dense: Dense, dev: np.ndarray) -> np.ndarray:
    """[D] bool: the devices that hold a node (the stages' leads)."""
    return np.bincount(dev, minlength=dense.D)[:dense.D] > 0


def factors(dense: Dense, dev: np.ndarray, replicas: np.ndarray | None) -> np.ndarray:
    """[D] float: each used device's replication factor (1 where none is given or unused)."""
    r = np.ones(dense.D)
    if replicas is not None:
        used = np.bincount(dev[dev >= 0], minlength=dense.D) > 0
        r[used] = np.maximum(np.asarray(replicas, dtype=float)[used], 1.0)
    return r


def span_rates(dense: Dense, r: np.ndarray) -> np.ndarray:
    """[D] ms per byte of parameters: each stage's AllReduce over its r replicas
    (`span_rate`; the flat `sync_rate` at its class's port without levels)."""
    if dense.path_bw is None:
        return sync_rate(r, dense.link[dense.dev_class])
    out = np.zeros(dense.D)
    for j in np.flatnonzero(np.asarray(r) > 1):
        out[j] = span_rate(dense, int(j), int(r[j]))
    return out


def span_rate(dense: Dense, j: int, r: int) -> float:
    """ms per byte of the AllReduce of the stage on device j with r replicas. Flat: 4 (r - 1)
    / (r B), B its class's port. On levels its devices j .. j + r - 1 sync the cheaper way
    (`allreduce_rate`): one ring at their slowest link, or level by level."""
    link = float(dense.link[dense.dev_class[j]])
    if dense.path_bw is None or r <= 1:
        return float(sync_rate(r, link))
    memo = dense.sync_memo
    if (j, r) not in memo:
        span = np.arange(j, min(j + r, dense.D))
        bw = np.minimum(dense.path_bw[np.ix_(span, span)], link)
        np.fill_diagonal(bw, np.inf)
        memo[j, r] = allreduce_rate(bw)
    return memo[j, r]


def allreduce_rate(bw: np.ndarray) -> float:
    """ms per byte of an AllReduce among devices whose pairwise bandwidths are bw [n, n] (inf
    on the diagonal; a tree's bottlenecks, so `> slowest` groups them by the servers the
    slowest fabric joins). The cheaper of a ring over all n at the slowest bandwidth B,
    4 (n - 1) / (n B), and a hierarchical AllReduce: each of the G groups syncs inside
    (recursively, the slowest group paying), then the groups sync over B, 4 (G - 1) / (G B).
    On two levels with r_s replicas in each of r' servers the latter is PipeDream's charge
    for a stage replicated across servers (optimizer_graph_hierarchical.py, its first stage):
    4 (r_s - 1) / (r_s B1) + 4 (r' - 1) / (r' B2)."""
    n = len(bw)
    slowest = float(bw.min(initial=np.inf))
    if n <= 1 or not np.isfinite(slowest):
        return 0.0
    ring = float(sync_rate(n, slowest))
    group = np.full(n, -1)
    for i in range(n):
        if group[i] < 0:
            group[(bw[i] > slowest) | (np.arange(n) == i)] = i
    heads = np.unique(group)
    if len(heads) == n:
        return ring
    inner = max(allreduce_rate(bw[np.ix_(group == h, group == h)]) for h in heads)
    return min(ring, inner + float(sync_rate(len(heads), slowest)))


def placeable(dense: Dense, j: int, r: int) -> bool:
    """On levels: whether devices j .. j + r - 1 exist and the last is of j's class (else
    the factor is a violation, `_placed`)."""
    last = j + r - 1
    return last < dense.D and dense.dev_class[last] == dense.dev_class[j]


def sync_rate(r: np.ndarray | int, bw: np.ndarray | float) -> np.ndarray:
    """ms per byte of a stage's parameters for r replicas syncing at bw B/s: 4 (r - 1) /
    (r B) (0 for one replica or without a link). The one formula the evaluator, the DPs'
    kinds of stage and the max-load IP's rows use."""
    r, bw = np.asarray(r, dtype=float), np.asarray(bw, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((r > 1) & np.isfinite(bw), 4.0 * (r - 1) / (r * bw) * 1e3, 0.0)


def sync_time(dense: Dense, dev: np.ndarray, r: np.ndarray) -> np.ndarray:
    """[D] ms: each replicated stage's AllReduce of its |w| (`span_rate`; 0 without a link)."""
    if not (np.asarray(r) > 1).any():  # no stage replicated: nothing to sync (the evaluator's common case)
        return np.zeros(dense.D)
    w = np.bincount(dev, weights=dense.params, minlength=dense.D)[:dense.D]
    if dense.shared is not None:  # a shared weight is synced once per device, as it is held
        w = w + dense.shares_on(dev)
    return span_rates(dense, r) * w


def violations(spec: Spec, dense: Dense, dev: np.ndarray, r: np.ndarray) -> list[Violation]:
    """A factor above `replicate <= k`, and a class whose stages take more devices than it has."""
    out: list[Violation] = []
    k = spec.constraints.replicate
    used = used_devices(dense, dev)
    for d in np.flatnonzero(used & (r > k)):
        out.append(Violation("replicas", f"the stage on {dense.devices[d]} has {int(r[d])} replicas, at most {k} "
                             f"allowed (subject to {{ replicate <= {k} }})", device=dense.devices[d]))
    for c, name in enumerate(dense.class_names):
        take = int(r[used & (dense.dev_class == c)].sum())
        have = int((dense.dev_class == c).sum())
        if take > have:
            out.append(Violation("replicas", f"the stages on {name} devices take {take} devices with their replicas, "
                                 f"and the class has {have}"))
    if dense.path_bw is not None:
        out += _placed(dense, used, r)
    return out


def _placed(dense: Dense, used: np.ndarray, r: np.ndarray) -> list[Violation]:
    """On levels: each stage's replicas, devices j .. j + r - 1 of its class, hold no other stage."""
    out: list[Violation] = []
    owner = np.where(used, np.arange(dense.D), -1)
    for j in np.flatnonzero(used & (r > 1)):
        span = np.arange(j + 1, j + int(r[j]))
        if len(span) and not placeable(dense, int(j), int(r[j])):
            out.append(Violation("replicas", f"the stage on {dense.devices[j]} has {int(r[j])} replicas, past the "
                                 f"last {dense.class_names[dense.dev_class[j]]} device (on server levels a stage's "
                                 "replicas are the devices after it)", device=dense.devices[j]))
            continue
        taken = span[owner[span] >= 0]
        if len(taken):
            out.append(Violation("replicas", f"the replicas of the stage on {dense.devices[j]} take "
                                 f"{dense.devices[taken[0]]}, which holds another stage", device=dense.devices[j]))
        owner[span] = j
    return out

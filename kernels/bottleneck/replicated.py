"""Segment costs with data-parallel replicas (Tarnawski App. C.2): the DP over an order
chooses, with each segment's class, how many devices of it the stage takes, r = 1 ..
`replicate`, at the load core/replicas.py defines, (cost + 4 (r - 1) |w| / (r B)) / r for
the segment's one-device cost and parameters |w|. Each (class, r) is one kind of segment
of the segmentation DP (segment_dp.split_dp's `steps`), which takes r devices of the class.
Transfers not overlapped, PipeDream's load (not GPipe): other forms are refused by name.
"""
from __future__ import annotations

import numpy as np
from partdsl.core.errors import PartError
from partdsl.core.ir import Spec
from partdsl.runtime import memory


def check(spec: Spec) -> None:
    """Refuse the forms this DP does not model with replicas."""
    o = spec.objective
    if spec.constraints.replicate > 1 and (o.overlap is not None or o.training == "gpipe"):
        what = f"overlap {o.overlap}" if o.overlap is not None else "training gpipe"
        raise PartError(f"the order DP models `replicate <= r` with transfers not overlapped and the PipeDream "
                        f"load; this spec has {what}", spec.constraints.span_of("replicate"),
                        "drop `replicate`, or the overlap / GPipe form; method brute models every form on tiny graphs")


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

"""GPipe splits of a fixed order (issue 30, item 5): the segmentation DP (segment_dp.py)
minimizes a max over stages, and GPipe's max FW + max BW (Tarnawski App. A) is not one, so
the DP runs as a sweep over the Pareto front of (max FW, max BW), as the DP over ideals
does (ideal_dp._gpipe_sweep): B0 = the least max BW of any split; then rounds of the least
max FW of a split whose every stage's BW is at most a cap, the cap set just below that
split's max BW, until F + B0 cannot beat the best. Exact over the splits of the order.
"""
from __future__ import annotations

import numpy as np
from partdsl.core.dense import INF
from partdsl.core.ir import Spec
from partdsl.kernels.bottleneck.segment_dp import Split, split_dp
from partdsl.kernels.bottleneck.segments import segment_costs
from partdsl.runtime.deadline import NEVER, Deadline

ROOM = 1e-9  # relative: a split at a cap (or the best) up to float rounding


def _bw(B: np.ndarray, sp: Split) -> float:
    return max(float(B[c, l, r]) for l, r, c in sp.segments)


def gpipe_splits(spec: Spec, pos: np.ndarray, P: int, counts: list[int], stages: int | None,
                 deadline: Deadline = NEVER) -> list[Split]:
    """The splits the sweep visits, each valued max FW + max BW; the least of them is the
    order's GPipe optimum when the sweep ends before the deadline."""
    F = segment_costs(spec, pos, P, phase=0)
    B = segment_costs(spec, pos, P, phase=1)
    floors = split_dp(B, counts, stages)
    if not floors:
        return []
    floor = min(s.value for s in floors)
    best, cap = INF, INF
    found: dict[tuple, Split] = {}
    while not deadline.passed():
        Fc = np.where((B > cap) | (F + B > best * (1 + ROOM)), INF, F)
        splits = split_dp(Fc, counts, stages)
        if not splits:
            break
        for sp in splits:
            g = Split(sp.value + _bw(B, sp), sp.counts, sp.segments)
            found.setdefault(g.segments, g)
            best = min(best, g.value)
        lead = min(splits, key=lambda s: s.value)
        if lead.value + floor >= best * (1 - ROOM):
            break
        cap = _bw(B, lead) * (1 - ROOM)
    return list(found.values())

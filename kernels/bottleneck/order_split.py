"""An order of units to its best splits, through blocks and a refinement (issue 29, multilevel).

An order of at most COARSE_POSITIONS units is split exactly by the segmentation DP
(Archer sec. 4 / App. B, segments.py and segment_dp.py). A longer one is first cut into
blocks (coarse_order.coarsen) and split between blocks; then each round rebuilds the
blocks around the cuts of the best split: every position within a window of a cut is a
block of its own, the rest between windows one block each (`coarse_order.around`). The
split found is a split of the new blocks, so a round is never worse by the DP's value,
and it moves each cut to the best fine position in its window. Each round: one segment
table of at most COARSE_POSITIONS positions (33 MB per class) and one DP.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np
from partdsl.core.ir import Spec
from partdsl.kernels.bottleneck import replicated
from partdsl.kernels.bottleneck.coarse_order import COARSE_POSITIONS, around, coarsen
from partdsl.kernels.bottleneck.order_gpipe import gpipe_splits
from partdsl.kernels.bottleneck.segment_dp import Split, split_dp
from partdsl.kernels.bottleneck.segments import segment_costs
from partdsl.runtime.deadline import NEVER, Deadline

ROUNDS = 2  # refinement rounds after the split between blocks


def split_order(spec: Spec, fine: np.ndarray, U: int, rounds: int = ROUNDS, deadline: Deadline = NEVER,
                most: int = COARSE_POSITIONS) -> Iterator[tuple[np.ndarray, list[Split], str]]:
    """(block of each node, the DP's splits of the blocks, a label) for the order whose
    position of each node is `fine` (U positions): the blocks first (at most `most`), then
    each refinement round that improved the DP's best value."""
    counts = [k.count for k in spec.platform.classes]
    stages = spec.constraints.max_stages

    def dp(pos: np.ndarray, P: int) -> list[Split]:
        if spec.constraints.replicate > 1:  # a state counts devices, replicas too: stages checked after
            cost, steps = replicated.tables(spec, pos, P, segment_costs(spec, pos, P))
            return [s for s in split_dp(cost, counts, None, steps=steps)
                    if stages is None or len(s.segments) <= stages]
        if spec.objective.kind == "bottleneck" and spec.objective.training == "gpipe":
            return gpipe_splits(spec, pos, P, counts, stages, deadline)
        return split_dp(segment_costs(spec, pos, P), counts, stages)

    pos, P = coarsen(spec, fine, U, most)
    splits = dp(pos, P)
    yield pos, splits, "" if P == U else f"{P} blocks"
    for r in range(rounds if P < U else 0):
        if not splits or deadline.passed():
            return
        best = min(s.value for s in splits)
        cuts = starts(pos, fine, P, U, [l for l, _, _ in min(splits, key=lambda s: s.value).segments])
        pos, P = around(fine, U, cuts, most)
        new = dp(pos, P)
        if not new or min(s.value for s in new) >= best * (1 - 1e-12):
            return
        splits = new
        yield pos, splits, f"{P} blocks, refined {r + 1}x"


def starts(pos: np.ndarray, fine: np.ndarray, P: int, U: int, blocks: list[int]) -> np.ndarray:
    """The fine positions where `blocks` (segments' first blocks) start."""
    first = np.full(P, U, dtype=np.int64)
    np.minimum.at(first, pos, fine)
    return first[blocks]

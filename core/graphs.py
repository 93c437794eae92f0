"""Graph helpers over index arrays shared by the evaluator, the schedule checks and the
kernels: a cycle of a directed graph, a cycle of a quotient graph, the stages of the
`acyclic` rule, the device link table."""
from __future__ import annotations

import numpy as np
from partdsl.core.dense import Dense, adjacency, topological_order


def quotient_cycle(k: int, pairs: np.ndarray) -> list[int] | None:
    """A cycle in the quotient graph over k labels with edges `pairs`, or None."""
    key = np.unique(pairs[:, 0] * k + pairs[:, 1]) if len(pairs) else np.zeros(0, np.int64)  # sorted as (src, dst)
    src, dst = key // k, key % k
    if topological_order(k, src, dst) is not None:
        return None
    return find_cycle(k, src.tolist(), dst.tolist())


def stage_labels(dense: Dense, dev: np.ndarray) -> tuple[np.ndarray, int]:
    """The stages `acyclic` orders (Archer sec. 2; docs/language.md), per node, and their
    count: a device; on a training graph a device's forward part and its backward part,
    separately (label 2 d + 1 for the backward part). The one definition the evaluator,
    the MIPs and brute force share: `acyclic` holds iff `stage_cycle` finds no cycle."""
    if dense.backward.any():
        return dev * 2 + dense.backward.astype(np.int64), 2 * dense.D
    return dev, dense.D


def stage_cycle(dense: Dense, dev: np.ndarray) -> list[int] | None:
    """A cycle of the quotient graph over `stage_labels`, or None: `acyclic` holds. On a
    training graph the forward part's quotient (over forward edges) and the backward
    part's (over backward edges) separately, as docs/language.md says: an edge between a
    forward and a backward node orders no stages (else a backward node feeding a forward
    one made a cycle of a single device)."""
    lab, k = stage_labels(dense, dev)
    cross = lab[dense.src] != lab[dense.dst]
    if dense.backward.any():
        cross &= dense.backward[dense.src] == dense.backward[dense.dst]
    return quotient_cycle(k, np.stack([lab[dense.src][cross], lab[dense.dst][cross]], axis=1))


def forward_edges(dense: Dense) -> np.ndarray:
    """[edges] the edges a numbering of the devices in DAG order must follow: every edge,
    or on a training graph those between two forward nodes. A split whose stages
    (`stage_labels`) are acyclic has an acyclic forward quotient, so rows on these edges
    alone (Archer's DAG rows, eq. 8) keep every feasible split: a relaxation, exact when
    no backward edge closes a cycle of the backward parts, which the evaluator checks."""
    if not dense.backward.any():
        return np.ones(len(dense.src), dtype=bool)
    return ~dense.backward[dense.src] & ~dense.backward[dense.dst]


def find_cycle(n: int, src: list[int], dst: list[int]) -> list[int]:
    succ = adjacency(n, np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64))
    color = [0] * n
    stack_pos: dict[int, int] = {}
    path: list[int] = []
    for s in range(n):
        if color[s]:
            continue
        it = [(s, iter(succ[s]))]
        color[s] = 1
        stack_pos[s] = 0
        path = [s]
        while it:
            v, children = it[-1]
            nxt = next(children, None)
            if nxt is None:
                color[v] = 2
                stack_pos.pop(v, None)
                path.pop()
                it.pop()
            elif color[nxt] == 1:
                return path[stack_pos[nxt]:] + [nxt]
            elif color[nxt] == 0:
                color[nxt] = 1
                stack_pos[nxt] = len(path)
                path.append(nxt)
                it.append((nxt, iter(succ[nxt])))
    return []

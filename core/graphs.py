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


def stage_of(dense: Dense, nodes: np.ndarray, devices: np.ndarray) -> np.ndarray:
    """The stage `acyclic` orders (Archer sec. 2; docs/language.md) of each node on its
    device: the device; on a training graph a device's forward part and its backward
    part, separately (2 d + 1 for the backward part)."""
    if dense.backward.any():
        return devices * 2 + dense.backward[nodes].astype(np.int64)
    return devices


def stage_count(dense: Dense) -> int:
    """How many stages `stage_of` numbers: D, or 2 D on a training graph."""
    return 2 * dense.D if dense.backward.any() else dense.D


def stage_labels(dense: Dense, dev: np.ndarray) -> tuple[np.ndarray, int]:
    """Each node's stage under an assignment, and the stage count. The one definition the
    evaluator, the MIPs and brute force share: `acyclic` holds iff `stage_cycle` finds no
    cycle."""
    return stage_of(dense, np.arange(dense.n), dev), stage_count(dense)


def stage_edges(dense: Dense) -> np.ndarray:
    """[m] the edges that order stages: every edge; on a training graph those between two
    forward or two backward nodes (docs/language.md: an edge between a forward and a
    backward node orders no stages, else a backward node feeding a forward one made a
    cycle of a single device)."""
    if not dense.backward.any():
        return np.ones(len(dense.src), dtype=bool)
    return dense.backward[dense.src] == dense.backward[dense.dst]


def stage_quotient(dense: Dense, dev: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """The quotient graph over the stages of an assignment: (src, dst) of each of its edges
    (repeats kept), and the stage count."""
    lab, k = stage_labels(dense, dev)
    cross = stage_edges(dense) & (lab[dense.src] != lab[dense.dst])
    return lab[dense.src][cross], lab[dense.dst][cross], k


def stage_cycle(dense: Dense, dev: np.ndarray) -> list[int] | None:
    """A cycle of the quotient graph over the stages (`stage_quotient`), or None: `acyclic`
    holds. On a training graph the forward parts' quotient and the backward parts' apart."""
    src, dst, k = stage_quotient(dense, dev)
    return quotient_cycle(k, np.stack([src, dst], axis=1))


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

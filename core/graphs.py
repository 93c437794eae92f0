"""Graph helpers over index arrays shared by the evaluator, the schedule checks and the
kernels: a cycle of a directed graph, a cycle of a quotient graph, the device link table."""
from __future__ import annotations

import numpy as np
from partdsl.core.dense import adjacency, topological_order


def quotient_cycle(k: int, pairs: np.ndarray) -> list[int] | None:
    """A cycle in the quotient graph over k labels with edges `pairs`, or None."""
    key = np.unique(pairs[:, 0] * k + pairs[:, 1]) if len(pairs) else np.zeros(0, np.int64)  # sorted as (src, dst)
    src, dst = key // k, key % k
    if topological_order(k, src, dst) is not None:
        return None
    return find_cycle(k, src.tolist(), dst.tolist())


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

"""Topological orders: Kahn's algorithm with node priorities (Archer App. B.1, Alg. 3)
and a DFS order (the linearization of Tarnawski's DPL, sec. 5.1.2)."""
from __future__ import annotations

import numpy as np
from partdsl.core.dense import adjacency, topological_order


def successors(n: int, src: np.ndarray, dst: np.ndarray) -> list[list[int]]:
    return adjacency(n, src, dst)


def kahn(n: int, src: np.ndarray, dst: np.ndarray, priority: np.ndarray | None = None) -> np.ndarray:
    """Topological order; among ready nodes the smallest priority goes first (ties by index)."""
    order = topological_order(n, src, dst, priority)
    if order is None:
        raise ValueError("graph has a cycle")
    return np.array(order, dtype=np.int64)


def dfs_order(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Reverse DFS post-order from the sources: follows each branch to its end first."""
    succ = successors(n, src, dst)
    indeg = np.bincount(dst, minlength=n)
    seen = np.zeros(n, dtype=bool)
    post: list[int] = []
    for s in [i for i in range(n) if indeg[i] == 0][::-1]:
        if seen[s]:
            continue
        seen[s] = True
        stack = [(s, iter(succ[s][::-1]))]
        while stack:
            v, it = stack[-1]
            w = next(it, None)
            if w is None:
                post.append(v)
                stack.pop()
            elif not seen[w]:
                seen[w] = True
                stack.append((w, iter(succ[w][::-1])))
    return np.array(post[::-1], dtype=np.int64)


def levels(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Longest-path depth of each node from a source."""
    depth = np.zeros(n)
    succ = successors(n, src, dst)
    for u in kahn(n, src, dst):
        for v in succ[u]:
            depth[v] = max(depth[v], depth[u] + 1)
    return depth

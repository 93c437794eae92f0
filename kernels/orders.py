"""Topological orders: Kahn's algorithm with node priorities (Archer App. B.1, Alg. 3)
and a DFS order (the linearization of Tarnawski's DPL, sec. 5.1.2)."""
from __future__ import annotations

import heapq

import numpy as np


def successors(n: int, src: np.ndarray, dst: np.ndarray) -> list[list[int]]:
    succ: list[list[int]] = [[] for _ in range(n)]
    for a, b in zip(src.tolist(), dst.tolist()):
        succ[a].append(b)
    return succ


def kahn(n: int, src: np.ndarray, dst: np.ndarray, priority: np.ndarray | None = None) -> np.ndarray:
    """Topological order; among ready nodes the smallest priority goes first (ties by index)."""
    pr = np.arange(n, dtype=float) if priority is None else np.asarray(priority, dtype=float)
    indeg = np.bincount(dst, minlength=n).tolist()
    succ = successors(n, src, dst)
    heap = [(pr[i], i) for i in range(n) if indeg[i] == 0]
    heapq.heapify(heap)
    order = []
    while heap:
        _, u = heapq.heappop(heap)
        order.append(u)
        for v in succ[u]:
            indeg[v] -= 1
            if indeg[v] == 0:
                heapq.heappush(heap, (pr[v], v))
    if len(order) != n:
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

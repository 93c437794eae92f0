"""Maximum flow on a network whose arcs are fixed and whose capacities change between calls.

The latency path bound solves an s-t minimum cut per accelerator run on one network per
class (kernels/latency/run_cut.py): thousands of small cuts. scipy's `maximum_flow` is
correct, but each call validates its matrix, adds the reverse arcs and builds the flow
matrix: on InceptionV3's 326 operators that was most of a 1.3 ms cut, and the path bound's
13,833 cuts took 13-15 s (4.4-5.9 s here; benchmarks/bounds.py). `FlowNetwork` lays out the
arcs and their reverses once, and Dinic's algorithm (BFS levels, then blocking flows along
current-arc pointers; Dinic 1970, as scipy's `method="dinic"`) runs compiled on integer
capacities. Without numba it calls
scipy's `maximum_flow`, parallel arcs summed, which gives the same value. (The
bottleneck's crossing bound, methods/cut_bound.py, runs some 26 cuts: it stays on scipy,
since importing numba would cost `part check` more than they do.)
"""
from __future__ import annotations

import numpy as np
from partdsl.kernels.jit import HAVE_NUMBA, njit


class FlowNetwork:
    """Arcs tails[k] -> heads[k] on nodes 0 .. size - 1; `value(caps, s, t)` is the maximum
    flow with capacity caps[k] (non-negative integers) on arc k."""

    def __init__(self, size: int, tails: np.ndarray, heads: np.ndarray) -> None:
        self.size = size
        self.tails = np.asarray(tails, dtype=np.int64)  # the arcs as given (scipy's fallback)
        self.heads = np.asarray(heads, dtype=np.int64)
        m = len(self.tails)
        # slots 0 .. 2m - 1: each arc and its reverse (capacity 0), grouped by their tail node
        from_node = np.concatenate([self.tails, self.heads])
        order = np.argsort(from_node, kind="stable")
        where = np.empty(2 * m, dtype=np.int64)
        where[order] = np.arange(2 * m)
        self.forward = where[:m]  # arc k's slot
        self.slot_head = np.concatenate([self.heads, self.tails])[order]
        self.slot_tail = from_node[order]
        self.rev = where[np.concatenate([np.arange(m, 2 * m), np.arange(m)])][order]  # each slot's reverse
        self.indptr = np.zeros(size + 1, dtype=np.int64)  # node u's slots: indptr[u] .. indptr[u + 1] - 1
        np.cumsum(np.bincount(from_node, minlength=size), out=self.indptr[1:])

    def value(self, caps: np.ndarray, s: int, t: int) -> int:
        caps = np.asarray(caps, dtype=np.int64)
        if not HAVE_NUMBA:
            from scipy.sparse import csr_matrix
            from scipy.sparse.csgraph import maximum_flow

            g = csr_matrix((caps, (self.tails, self.heads)), shape=(self.size, self.size))
            return int(maximum_flow(g, s, t, method="dinic").flow_value)
        residual = np.zeros(len(self.slot_head), dtype=np.int64)
        residual[self.forward] = caps
        return int(_dinic(self.indptr, self.slot_head, self.slot_tail, self.rev, residual, s, t))


@njit
def _dinic(indptr, head, tail, rev, residual, s, t):  # type: ignore[no-untyped-def]
    """Dinic's algorithm on the residual capacities (changed in place); the flow's value."""
    n = len(indptr) - 1
    level = np.empty(n, np.int64)
    queue = np.empty(n, np.int64)
    arc = np.empty(n, np.int64)
    path = np.empty(n, np.int64)
    flow = 0
    while True:
        for v in range(n):  # loops, not level[:] = -1: the slices took numba 3 s more to compile
            level[v] = -1
        level[s] = 0
        queue[0] = s
        first, last = 0, 1
        while first < last:
            u = queue[first]
            first += 1
            for e in range(indptr[u], indptr[u + 1]):
                v = head[e]
                if residual[e] > 0 and level[v] < 0:
                    level[v] = level[u] + 1
                    queue[last] = v
                    last += 1
        if level[t] < 0:
            return flow
        for v in range(n):
            arc[v] = indptr[v]
        depth, u = 0, s
        while True:
            if u == t:  # augment along the path, then go on from its first saturated arc
                push = residual[path[0]]
                for k in range(1, depth):
                    push = min(push, residual[path[k]])
                flow += push
                back = depth
                for k in range(depth - 1, -1, -1):
                    e = path[k]
                    residual[e] -= push
                    residual[rev[e]] += push
                    if residual[e] == 0:
                        back = k
                depth = back  # some arc saturates, so back < the path's length
                u = tail[path[back]]
                continue
            advanced = False
            while arc[u] < indptr[u + 1]:
                e = arc[u]
                v = head[e]
                if residual[e] > 0 and level[v] == level[u] + 1:
                    path[depth] = e
                    depth += 1
                    u = v
                    advanced = True
                    break
                arc[u] += 1
            if not advanced:
                if u == s:
                    break
                level[u] = -1  # a dead end in this phase
                depth -= 1
                u = tail[path[depth]]
                arc[u] += 1

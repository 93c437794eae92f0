"""Kahn's algorithm with node priorities (Archer App. B.1, Alg. 3) on CSR arrays, compiled
by numba for decoding whole BRKGA populations; `kernels.orders.kahn` is the plain
fallback and the reference the tests compare against."""
from __future__ import annotations

import numpy as np
from partdsl.kernels.graph.orders import kahn
from partdsl.kernels.jit import HAVE_NUMBA, njit


@njit
def _push(heap_k: np.ndarray, heap_v: np.ndarray, size: int, k: float, v: int) -> int:
    """Push (k, v) on the binary min-heap (ties by node index); returns the new size."""
    i = size
    while i > 0:
        p = (i - 1) // 2
        if heap_k[p] < k or (heap_k[p] == k and heap_v[p] < v):
            break
        heap_k[i] = heap_k[p]
        heap_v[i] = heap_v[p]
        i = p
    heap_k[i] = k
    heap_v[i] = v
    return size + 1


@njit
def _kahn_csr(ptr: np.ndarray, idx: np.ndarray, indeg0: np.ndarray, keys: np.ndarray) -> np.ndarray:
    n = len(indeg0)
    indeg = indeg0.copy()
    heap_k = np.empty(n)
    heap_v = np.empty(n, dtype=np.int64)
    size = 0
    out = np.empty(n, dtype=np.int64)
    for v in range(n):
        if indeg[v] == 0:
            size = _push(heap_k, heap_v, size, keys[v], v)
    t = 0
    while size > 0:
        u = heap_v[0]
        out[t] = u
        t += 1
        size -= 1
        lk = heap_k[size]
        lv = heap_v[size]
        i = 0
        while True:  # sift the last element down from the root
            c = 2 * i + 1
            if c >= size:
                break
            if c + 1 < size and (heap_k[c + 1] < heap_k[c] or (heap_k[c + 1] == heap_k[c] and heap_v[c + 1] < heap_v[c])):
                c += 1
            if lk < heap_k[c] or (lk == heap_k[c] and lv < heap_v[c]):
                break
            heap_k[i] = heap_k[c]
            heap_v[i] = heap_v[c]
            i = c
        if size > 0:
            heap_k[i] = lk
            heap_v[i] = lv
        for e in range(ptr[u], ptr[u + 1]):
            v = idx[e]
            indeg[v] -= 1
            if indeg[v] == 0:
                size = _push(heap_k, heap_v, size, keys[v], v)
    return out


class KahnCSR:
    """A DAG prepared once for many priority vectors."""

    def __init__(self, n: int, src: np.ndarray, dst: np.ndarray) -> None:
        self.n, self.src, self.dst = n, src, dst
        order = np.argsort(src, kind="stable")
        self.idx = dst[order].astype(np.int64)
        self.ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(src, minlength=n), out=self.ptr[1:])
        self.indeg = np.bincount(dst, minlength=n).astype(np.int64)

    def order(self, keys: np.ndarray) -> np.ndarray:
        if HAVE_NUMBA:
            return _kahn_csr(self.ptr, self.idx, self.indeg, np.asarray(keys, dtype=np.float64))
        return kahn(self.n, self.src, self.dst, keys)

    def positions(self, keys: np.ndarray) -> np.ndarray:
        pos = np.empty(self.n, dtype=np.int64)
        pos[self.order(keys)] = np.arange(self.n)
        return pos

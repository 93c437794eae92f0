"""The distinct orders of a multiset (devices of one class alike): the ranks a pipeline's
device classes may take (plans/baselines.py, kernels/bottleneck/interleaved.py)."""
from __future__ import annotations

from typing import Iterator


def multiset_orders(items: list[int]) -> Iterator[tuple[int, ...]]:
    """Each distinct order of `items` once (equal items alike), in lexicographic order
    (the next-permutation step)."""
    a = sorted(items)
    while True:
        yield tuple(a)
        i = len(a) - 2
        while i >= 0 and a[i] >= a[i + 1]:
            i -= 1
        if i < 0:
            return
        j = len(a) - 1
        while a[j] <= a[i]:
            j -= 1
        a[i], a[j] = a[j], a[i]
        a[i + 1:] = reversed(a[i + 1:])

"""The iteration order of libstdc++'s `std::unordered_map<int, T>` after inserting keys
in a given order (no erasures).

The paper's reference code (Tarnawski et al., max-load DP of sec. 5.1.1) rebuilds its
graph by iterating such a map keyed by colour class, and numbers its nodes in that
order; among equally good splits it keeps the first it meets, so that order decides the
split whose latency it published (Table 4). libstdc++ hashes an int to itself, keeps one
singly linked list whose buckets are contiguous runs (a new key goes to the front of its
bucket, or to the front of the list when its bucket is empty), starts at 13 buckets and
at each overflow of load factor 1 moves to the next prime of its table at least twice
the count, relinking the list in order. Checked against g++ 12 on random key sequences.
"""
from __future__ import annotations

import bisect
from typing import Iterable

# the start of libstdc++'s __prime_list (hashtable-aux.cc), enough for 100,000 keys
_PRIMES = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89, 97,
           103, 109, 113, 127, 137, 139, 149, 157, 167, 179, 193, 199, 211, 227, 241, 257, 277, 293, 313,
           337, 359, 383, 409, 439, 467, 503, 541, 577, 619, 661, 709, 761, 823, 887, 953, 1031, 1109,
           1193, 1289, 1381, 1493, 1613, 1741, 1879, 2029, 2179, 2357, 2549, 2753, 2971, 3209, 3469,
           3739, 4027, 4349, 4703, 5087, 5503, 5953, 6427, 6949, 7517, 8123, 8783, 9497, 10273, 11113,
           12011, 12983, 14033, 15173, 16411, 17749, 19183, 20753, 22447, 24281, 26267, 28411, 30727,
           33223, 35933, 38873, 42043, 45481, 49201, 53201, 57557, 62233, 67307, 72817, 78779, 85229,
           92203, 99733, 107897, 116731, 126271, 136607, 147793, 159871, 172933, 187091, 202409)
_FAST = (2, 2, 2, 3, 5, 5, 7, 7, 11, 11, 11, 11, 13, 13)  # _M_next_bkt's table for n < 14
_HEAD = object()  # the list's before-begin node


def unordered_order(keys: Iterable[int]) -> list[int]:
    """The distinct keys in the order `for (auto &it : map)` visits them, after
    `map[k]` for each k of `keys` in turn."""
    nxt: dict[object, object] = {_HEAD: None}
    buckets: list[object] = [None]
    count, next_resize = 0, 0

    def next_bucket_count(n: int) -> int:
        nonlocal next_resize
        b = _FAST[n] if n < len(_FAST) else _PRIMES[bisect.bisect_left(_PRIMES, n, lo=6)]
        next_resize = b  # floor(b * max_load_factor 1.0)
        return b

    def rehash(n: int) -> None:
        nonlocal buckets
        new: list[object] = [None] * n
        p, nxt[_HEAD], first_bucket = nxt[_HEAD], None, 0
        while p is not None:
            q, b = nxt[p], _bucket(p, n)
            if new[b] is None:
                nxt[p], nxt[_HEAD] = nxt[_HEAD], p
                new[b] = _HEAD
                if nxt[p] is not None:
                    new[first_bucket] = p
                first_bucket = b
            else:
                nxt[p], nxt[new[b]] = nxt[new[b]], p
            p = q
        buckets = new

    for k in keys:
        if k in nxt:
            continue
        if count + 1 > next_resize:  # _Prime_rehash_policy::_M_need_rehash
            least = max(count + 1, 0 if next_resize else 11)
            if least >= len(buckets):
                rehash(next_bucket_count(max(least + 1, 2 * len(buckets))))
            else:
                next_resize = len(buckets)
        b = _bucket(k, len(buckets))
        if buckets[b] is not None:  # front of its bucket
            nxt[k], nxt[buckets[b]] = nxt[buckets[b]], k
        else:  # front of the list; the bucket that led it now starts after k
            nxt[k], nxt[_HEAD] = nxt[_HEAD], k
            if nxt[k] is not None:
                buckets[_bucket(nxt[k], len(buckets))] = k  # type: ignore[arg-type]
            buckets[b] = _HEAD
        count += 1
    out, p = [], nxt[_HEAD]
    while p is not None:
        out.append(p)
        p = nxt[p]
    return out  # type: ignore[return-value]


def _bucket(key: int, n: int) -> int:
    return (key % (1 << 64)) % n  # std::hash<int> is the identity, taken as size_t

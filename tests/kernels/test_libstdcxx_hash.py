"""kernels/bottleneck/libstdcxx_hash.py against libstdc++ itself: each expected order below was printed by
a `for (auto &it : m)` loop over a std::unordered_map<int, ...> filled with `m[k]` in the
given order, compiled by g++ 12.2 (Debian 12.2.0-14). They cover the first bucket counts
(13, 29, 59, 127), keys sharing a bucket, negative keys and a bucket-order relink."""
from __future__ import annotations

import pytest
from partdsl.kernels.bottleneck.libstdcxx_hash import unordered_order

RANDOM_60 = [41445, 18772, 50750, 84319, 5328, 8494, 69239, 11337, 46931, 75387, 6602, 65510, 27140, 3914,
             10265, 55838, 53810, 8156, 30544, 10889, 71226, 54642, 6747, 73115, 15226, 28260, 81657, 81238,
             75414, 7108, 74642, 75748, 50993, 5499, 27977, 5105, 71963, 16455, 36959, 53937, 17907, 69868,
             14439, 73830, 39433, 72434, 88391, 22688, 12507, 75231, 73868, 82743, 23624, 47810, 11770, 70793,
             92337, 7229, 72972, 6812]
RANDOM_60_ORDER = [15226, 73115, 8156, 54642, 84319, 71226, 5499, 69868, 12507, 10889, 30544, 72434, 92337,
                   11337, 88391, 55838, 81238, 46931, 75414, 18772, 50750, 69239, 22688, 75387, 5328, 6747,
                   41445, 73830, 39433, 6602, 16455, 8494, 3914, 10265, 65510, 47810, 81657, 7108, 74642,
                   75748, 27977, 53810, 27140, 53937, 5105, 7229, 6812, 73868, 71963, 23624, 36959, 28260,
                   50993, 82743, 17907, 14439, 75231, 11770, 70793, 72972]


@pytest.mark.parametrize("keys, printed", [
    ([5, 3, 1, 20, 7], [7, 20, 1, 3, 5]),
    (list(range(30)), [29, *range(12, -1, -1), *range(13, 29)]),
    ([-5, 7, -1, 2134, 0, 13, 26, 39], [39, 26, 13, 0, 2134, -1, 7, -5]),
    ([3, 3, 1, 3], [1, 3]),
    (RANDOM_60, RANDOM_60_ORDER),
])
def test_the_order_is_libstdcxx_s(keys: list[int], printed: list[int]) -> None:
    assert unordered_order(keys) == printed

"""The ideals (downward-closed sets) of a unit DAG as Python-int bitsets, for the DP over
ideals (kernels/bottleneck/ideal_dp.py, Tarnawski sec. 5.1.1), and the limits on how many
it keeps: their number, and their bitsets' memory, which grows as U^2 for U units."""
from __future__ import annotations

import numpy as np
from partdsl.core.errors import PartError
from partdsl.runtime.deadline import NEVER, Deadline

MAX_IDEALS = 250_000
IDEAL_BYTES = 512 * 2**20  # the ideals' bitsets may take this much (issue 29: 100k operators under 2 GB)


def ideal_limit(U: int) -> int:
    """How many ideals of a U-unit DAG the DP keeps: MAX_IDEALS, fewer when their bitsets
    would pass IDEAL_BYTES. An ideal costs about U / 2 bytes while it is enumerated (its
    Python int and the one of its addable units, U / 7.5 bytes each, then its words, U / 8);
    the time to enumerate grows the same way, O(ideals x U)."""
    return min(MAX_IDEALS, IDEAL_BYTES // (U // 2 + 100))


def too_big(U: int) -> str | None:
    """Why the DP cannot run on a U-unit DAG, or None. A DAG of U units has at least U + 1
    ideals (the prefixes of any topological order), so this is known before enumerating."""
    if U + 1 <= ideal_limit(U):
        return None
    return (f"the DP over ideals would keep at least {U + 1:,} bitsets of {U:,} units "
            f"(more than {IDEAL_BYTES / 2**20:,.0f} MiB; its time grows the same way)")


TOO_BIG_HINT = "use --method load_search or topo (linear orders cut into blocks), or the default auto"


def enumerate_ideals(U: int, src: np.ndarray, dst: np.ndarray, limit: int | None = None,
                     deadline: Deadline = NEVER) -> list[int] | None:
    """All downward-closed sets of a DAG with U nodes, as Python-int bitsets (None once
    the deadline passes). More than `limit` (default `ideal_limit(U)`) is refused."""
    if limit is None:
        limit = ideal_limit(U)
    pred = [0] * U
    succ: list[list[int]] = [[] for _ in range(U)]
    for a, b in zip(src.tolist(), dst.tolist()):
        pred[b] |= 1 << a
        succ[a].append(b)
    start_add = 0
    for v in range(U):
        if pred[v] == 0:
            start_add |= 1 << v
    seen = {0: start_add}
    stack = [0]
    while stack:
        ideal = stack.pop()
        addable = seen[ideal]
        while addable:
            low = addable & -addable
            u = low.bit_length() - 1
            addable ^= low
            nxt = ideal | low
            if nxt in seen:
                continue
            add2 = seen[ideal] & ~low
            for v in succ[u]:
                if pred[v] & ~nxt == 0:
                    add2 |= 1 << v
            seen[nxt] = add2
            stack.append(nxt)
            if len(seen) % 1024 == 0 and deadline.passed():
                return None
            if len(seen) > limit:
                raise PartError(f"the graph has more than {limit:,} ideals of {U:,} units: the DP over ideals "
                                "would not fit in memory or finish", None, TOO_BIG_HINT)
    return sorted(seen, key=lambda x: (x.bit_count(), x))

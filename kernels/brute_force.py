"""Method `brute`: enumerate every assignment (colocated nodes moved together) and keep
the best by the evaluator. Exact, and a proof of infeasibility when nothing is feasible;
only for tiny instances (it refuses more than `LIMIT` assignments)."""
from __future__ import annotations

import itertools
import math
from typing import Iterator

import numpy as np

from ..core.errors import PartError
from ..core.ir import Spec

LIMIT = 200_000


def choices(spec: Spec) -> tuple[np.ndarray, list[np.ndarray]]:
    d = spec.dense
    _, comp = np.unique(d.colo, return_inverse=True)
    opts = [np.flatnonzero(d.allowed[comp == k].all(axis=0)) for k in range(comp.max() + 1)]
    return comp, opts


def count(spec: Spec) -> int:
    return math.prod(len(o) for o in choices(spec)[1])


def run(spec: Spec, seed: int = 0, deadline: float = float("inf"), **_: object) -> Iterator[tuple[str, np.ndarray]]:
    total = count(spec)
    if total > LIMIT:
        raise PartError(f"method brute would enumerate {total:,} assignments (limit {LIMIT:,})", None,
                        "use it on tiny graphs only; try `--method topo`")
    comp, opts = choices(spec)
    for combo in itertools.product(*opts):
        yield "enumeration", np.asarray(combo, dtype=np.int64)[comp]

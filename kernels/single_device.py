"""Method `single`: everything on one device (a baseline; Tarnawski sec. 6)."""
from __future__ import annotations

from typing import Iterator

import numpy as np

from partdsl.core.ir import Spec


def run(spec: Spec, seed: int = 0, deadline: float = float("inf"), **_: object) -> Iterator[tuple[str, np.ndarray]]:
    d = spec.dense
    for j, name in enumerate(d.devices):
        if d.allowed[:, j].all():
            yield f"all on {name}", np.full(d.n, j, dtype=np.int64)

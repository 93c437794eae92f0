"""Method `single`: everything on one device (a baseline; Tarnawski sec. 6)."""
from __future__ import annotations

from typing import Iterator

import numpy as np
from partdsl.core.events import Candidate
from partdsl.core.ir import Spec
from partdsl.runtime.deadline import NEVER, Deadline


def run(spec: Spec, seed: int = 0, deadline: Deadline = NEVER, **_: object) -> Iterator[Candidate]:
    d = spec.dense
    for j, name in enumerate(d.devices):
        if d.allowed[:, j].all():
            yield Candidate(f"all on {name}", np.full(d.n, j, dtype=np.int64))

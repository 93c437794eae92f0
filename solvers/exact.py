"""Method `exact`: Archer's MTPP MIP (models/mtpp.py) for identical stages under
`acyclic`, Tarnawski's max-load IP (models/maxload.py) otherwise, solved by HiGHS through
the direct matrix path, seeded with the best `topo` split as a MIP start. Yields the incumbent(s)
for the evaluator and the solver's dual bound as a proven bound (a bound, never passed
off as an optimum: solve() compares it with the re-scored incumbent)."""
from __future__ import annotations

import math
import time
from typing import Callable, Iterator

import numpy as np

from ..core.errors import PartError
from ..core.ir import Spec
from ..kernels import Proven
from ..kernels.topo_split import best_split
from ..models import maxload, mtpp
from .highs_matrix import solve_highs
from .scip_matrix import solve_scip


def run(spec: Spec, seed: int = 0, deadline: float = math.inf, progress: Callable[[str], None] | None = None,
        solver: str | None = None, gap: float | None = None, threads: int | None = None,
        **_: object) -> Iterator:
    if solver not in (None, "highs", "scip"):
        raise PartError(f"method exact runs on HiGHS or SCIP so far, not '{solver}'", None,
                        "use --solver highs (the default) or --solver scip")
    model = _formulation(spec)
    mip, vm = model.build(spec)
    _, start_dev = best_split(spec, seed, deadline)
    if start_dev is not None:
        yield "exact: MIP start (topo)", start_dev
    start = model.encode(spec, vm, start_dev) if start_dev is not None else None
    left = deadline - time.monotonic()
    if left <= 0:
        return
    name, backend = ("SCIP", solve_scip) if solver == "scip" else ("HiGHS", solve_highs)
    if progress:
        progress(f"{name} on {mip.A.shape[0]:,} rows x {mip.A.shape[1]:,} columns")
    out = backend(mip, None if math.isinf(left) else left, gap, threads, start)
    if out.x is not None:
        yield f"exact MIP ({name}: {out.why})", model.decode(spec, vm, out.x)
    if out.status == "infeasible":
        yield Proven(math.inf, f"{name} proved the MIP infeasible")
    elif np.isfinite(out.bound):
        yield Proven(float(out.bound), f"{name} dual bound ({out.why})")


def _formulation(spec: Spec):  # type: ignore[no-untyped-def]
    """Archer's MTPP MIP for identical stages under `acyclic`, else Tarnawski's max-load IP."""
    p = spec.platform
    if len(p.classes) == 1 and not p.classes[0].host and spec.constraints.acyclic:
        return mtpp
    return maxload

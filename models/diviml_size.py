"""The DiviML MILP's size, counted before it is built (models/diviml.py builds it): `exact`
refuses a model whose no-overlap rows, one pair per two tasks on no common path and
device, are far more than HiGHS closes within a time limit."""
from __future__ import annotations

import numpy as np
from partdsl.core.errors import PartError
from partdsl.core.ir import Spec
from partdsl.models.diviml import check, free_pairs

# far past what HiGHS closes (DiviML's graphs: hundreds of nodes): BN-Inception's 251,544 rows
# build in 1.2 s, but HiGHS then ran 29 s at a 10 s limit
MAX_ROWS = 250_000


def rows_estimate(spec: Spec) -> int:
    """The MILP's no-overlap and precedence rows, counted before building: two per free
    pair (on no common path) and device both may use, K + 1 per edge and device pair."""
    d = spec.dense
    ok = d.allowed.astype(np.int64)
    fi, fj = free_pairs(spec)
    pairs = int((ok[fi] * ok[fj]).sum()) if len(fi) else 0
    edges = int((ok[d.src].sum(axis=1) * ok[d.dst].sum(axis=1)).sum()) if len(d.src) else 0
    return 2 * pairs + (spec.objective.split + 1) * edges


def check_size(spec: Spec) -> None:
    """Refuse a MILP of more than MAX_ROWS rows before building it (its no-overlap rows grow
    with the pairs of tasks on no common path)."""
    rows = rows_estimate(spec)
    if rows > MAX_ROWS:
        raise PartError(f"the DiviML MILP would have about {rows:,} rows (no-overlap and precedence), more than "
                        f"{MAX_ROWS:,}: far more than HiGHS closes (on 251,544 rows it ran 29 s at a 10 s time limit)",
                        None,
                        "use heft or eft (list schedules), milp_split (module MILPs), or auto")


def check_whole(spec: Spec) -> None:
    """`exact`'s check: what the MILP models, and its size (MILP-SPLIT's modules check the former only)."""
    check(spec)
    check_size(spec)

"""`part export`: the MIP that method `exact` solves, written as MPS or LP (by HiGHS's
writer) for any other solver; `relaxation=True` writes its LP relaxation.

Which MIP: as `exact` picks it (methods/exact.py) - Archer's MTPP MIP (Fig. 3) for
identical stages under `acyclic`, Tarnawski's max-load IP (Fig. 6) otherwise, the latency
IP (Figs. 3-4) under `minimize latency`, the DiviML MILP (eqs. 1-7) under a schedule
objective. The latency IP and the DiviML MILP take a horizon H (their big-M): `exact`
uses its best heuristic answer's value, the export a proven safe horizon unless one is
given, so the two files may differ in that constant but have the same optimum. The
objective is the spec's for max load and latency; for a DiviML throughput objective it
is the makespan C (samples/s = L / C * 1000). Column order is the builders' (VarMap).
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
from partdsl.core.errors import PartError
from partdsl.core.ir import Spec
from partdsl.models.matrix import MatrixMIP
from partdsl.runtime.capture import captured_stdout

FORMATS = (".mps", ".lp")


def exact_mip(spec: Spec, horizon: float | None = None) -> tuple[MatrixMIP, str]:
    """The matrix MIP of method `exact` for `spec` (models/formulations.py), and its name;
    `horizon`: H of the latency IP and the DiviML MILP (default: a proven safe one)."""
    from partdsl.models.formulations import formulation_for

    f = formulation_for(spec)
    f.check(spec)
    safe = f.safe_horizon(spec)
    return f.build(spec, None if safe is None else (horizon or safe), 0)[0], f.title


def relaxed(mip: MatrixMIP) -> MatrixMIP:
    return replace(mip, integer=np.zeros_like(mip.integer))


def write(mip: MatrixMIP, path: str | Path) -> None:
    """Write `mip` with HiGHS's writer; the format follows the extension (.mps or .lp)."""
    import highspy
    from partdsl.solvers.highs_matrix import pass_model

    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise PartError(f"cannot tell the format of '{path}'", None, "name the file *.mps or *.lp")
    with captured_stdout():  # HiGHS's banner and writer messages stay off standard output
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        pass_model(h, mip)
        status = h.writeModel(str(path))
    if status == highspy.HighsStatus.kError or not path.exists():
        raise PartError(f"HiGHS could not write '{path}'", None, "check that its folder exists and is writable")

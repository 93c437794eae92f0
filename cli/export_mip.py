"""`part export`: the MIP that method `exact` solves, written as MPS or LP (by HiGHS's
writer) for any other solver; `relaxation=True` writes its LP relaxation.

Which MIP: as `exact` picks it (methods/exact.py) - Archer's MTPP MIP (Fig. 3) for
identical stages under `acyclic`, Tarnawski's max-load IP (Fig. 6) otherwise, the latency
IP (Figs. 3-4) under `minimize latency`, the DiviML MILP (eqs. 1-7) under a schedule
objective. The latency IP and the DiviML MILP take a horizon H (their big-M): `exact`
uses its best heuristic answer's value, the export a proven safe horizon unless one is
given, so the two files may differ in that constant but have the same optimum. The
objective is the spec's for max load and latency; for a DiviML throughput objective it
is the makespan C (samples/s = L / C * 1000). Column order is the builders' (VarMap);
rows and columns are named after the model's entities (`x(node,device)`,
`load(device)`, `assign(node)`; each builder's `column_names` and `Rows.family`).
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from partdsl.core.errors import PartError
from partdsl.core.ir import Spec
from partdsl.methods import capabilities
from partdsl.methods.registry import METHODS
from partdsl.models.matrix import MatrixMIP
from partdsl.runtime.capture import captured_stdout

FORMATS = (".mps", ".lp")


def exact_mip(spec: Spec, horizon: float | None = None) -> tuple[MatrixMIP, str]:
    """The matrix MIP of method `exact` for `spec` (models/formulations.py), and its name;
    `horizon`: H of the latency IP and the DiviML MILP (default: a proven safe one)."""
    from partdsl.models.formulations import formulation_for

    missing = capabilities.unmodelled(spec, METHODS["exact"].ignores, {})
    if missing:
        names, what = capabilities.describe(missing)
        raise PartError(f"the MIP of method exact does not model {names} ({what}), which this spec has",
                        capabilities.WHERE[missing[0][0]](spec), "drop the feature to export the MIP (`part solve "
                        "--method exact` names the methods that model it)")
    f = formulation_for(spec)
    f.check(spec)
    safe = f.safe_horizon(spec)
    return f.build(spec, None if safe is None else (horizon or safe), 0)[0], f.title


def relaxed(mip: MatrixMIP) -> MatrixMIP:
    return replace(mip, integer=np.zeros_like(mip.integer))


MAX_NAME = 255  # the LP format's limit (CPLEX); MPS free format has none, one rule for both
_ALLOWED = re.compile(r"[^A-Za-z0-9!#$%&()/,.;?@_`{}|~]")  # CPLEX LP name characters, quotes left out


@dataclass(frozen=True)
class MipNames:
    """The names written for rows and columns, and for each written name that differs
    from its model name (a character the formats do not take, more than MAX_NAME
    characters, or a clash) the model name: the --names map."""

    rows: list[str]
    cols: list[str]
    changed: dict[str, str]


def mip_names(mip: MatrixMIP) -> MipNames:
    """Readable names within the MPS and LP rules: `[` `]` become `(` `)`, any other
    character outside the LP set `_`; too long: cut, with a hash of the whole name; a
    clash: `~2`, `~3`, ... appended. Rows and columns are separate name spaces."""
    changed: dict[str, str] = {}

    def clean(names: list[str]) -> list[str]:
        out, seen = [], set()
        for name in names:
            w = _ALLOWED.sub("_", name.replace("[", "(").replace("]", ")"))
            if len(w) > MAX_NAME:
                w = w[:MAX_NAME - 9] + "~" + hashlib.sha1(name.encode()).hexdigest()[:8]
            base, k = w, 1
            while w in seen:
                k += 1
                w = f"{base[:MAX_NAME - 1 - len(str(k))]}~{k}"
            seen.add(w)
            out.append(w)
            if w != name:
                changed[w] = name
        return out

    nr, nc = mip.A.shape
    rows = mip.row_names() if mip.row_names else [f"r{r}" for r in range(nr)]
    cols = mip.col_names() if mip.col_names else [f"c{j}" for j in range(nc)]
    return MipNames(clean(rows), clean(cols), changed)


def write(mip: MatrixMIP, path: str | Path, names: MipNames | None = None) -> None:
    """Write `mip` with HiGHS's writer; the format follows the extension (.mps or .lp).
    `names`: the rows' and columns' (default: mip_names(mip))."""
    import highspy
    from partdsl.solvers.highs_matrix import pass_model

    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise PartError(f"cannot tell the format of '{path}'", None, "name the file *.mps or *.lp")
    names = names or mip_names(mip)
    with captured_stdout():  # HiGHS's banner and writer messages stay off standard output
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        pass_model(h, mip)
        for j, name in enumerate(names.cols):
            h.passColName(j, name)
        for r, name in enumerate(names.rows):
            h.passRowName(r, name)
        status = h.writeModel(str(path))
    if status == highspy.HighsStatus.kError or not path.exists():
        raise PartError(f"HiGHS could not write '{path}'", None, "check that its folder exists and is writable")

"""The formulation table: each objective's MIP declares check / build / encode / decode on
the matrix path and its Pyomo twin (build / warm start / decode), in one row, so that
method `exact` (methods/exact.py) runs one loop for all of them, as CVXPY's reductions
chain apply and invert. Answers go in and come out as Candidates (core/events.py).

| row | paper | when |
|---|---|---|
| mtpp | Archer et al. Fig. 3 | one class of identical stages under `acyclic` (what mtpp.check takes) |
| maxload | Tarnawski et al. Fig. 6 | the bottleneck otherwise (`acyclic`, stage limits: maxload_stages) |
| latency | Tarnawski et al. Figs. 3-4 | `minimize latency` |
| diviml | Ghannane & Abdelfattah eqs. 1-7 | `minimize latency by tasks`, `maximize throughput` |
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from partdsl.core.errors import PartError
from partdsl.core.events import Candidate
from partdsl.core.ir import Spec
from partdsl.models import diviml, diviml_size, diviml_symmetry, latency, latency_start, maxload, mtpp
from partdsl.models.matrix import MatrixMIP


@dataclass(frozen=True)
class Formulation:
    name: str  # the row's key
    title: str  # what reports call it
    label: str  # the label of the candidates it decodes
    check: Callable[[Spec], None]  # PartError for a spec it cannot model
    build: Callable[[Spec, float | None, int], tuple[MatrixMIP, Any]]  # spec, horizon H, symmetry -> MIP, VarMap
    encode: Callable[[Spec, Any, Candidate, int], np.ndarray | None]  # a MIP start (None: not expressible)
    decode: Callable[[Spec, Any, np.ndarray], Candidate]
    pyomo_build: Callable[[Spec, float | None], Any]
    pyomo_warm: Callable[[Spec, Any, Candidate], bool]
    pyomo_decode: Callable[[Spec, Any], Candidate]
    safe_horizon: Callable[[Spec], float | None]  # a horizon no optimum exceeds (None: the MIP has none)
    pyomo_symmetry: bool = True  # symmetry rows on the Pyomo path too (else refused there)
    pyomo_routes: bool = False  # server levels and direct links on the Pyomo path too (else refused there)


def _pyomo(module: str) -> Any:  # type: ignore[misc]
    """A Pyomo twin, imported when used: Pyomo is loaded only by runs that take its path."""
    import importlib

    return importlib.import_module(f"partdsl.models.pyomo_{module}")


def _assignment_ip(name: str, title: str, module: Any, symmetric: bool, replicated: bool) -> Formulation:
    """A bottleneck MIP over assignments (no horizon): Archer's, or Tarnawski's, whose
    answers and starts also carry replication factors (`replicated`,
    models/maxload_replicas.py)."""
    twin = name

    def build(s: Spec, H: float | None, sym: int) -> tuple[MatrixMIP, Any]:
        return module.build(s, symmetry=bool(sym)) if symmetric else module.build(s)

    def answer(found: Any) -> Candidate:
        dev, reps = found if replicated else (found, None)
        return Candidate("", dev, replicas=reps)

    def extra(c: Candidate) -> tuple:
        return (c.replicas,) if replicated else ()

    return Formulation(
        name, title, "exact MIP", module.check, build,
        lambda s, vm, c, sym: module.encode(s, vm, c.devices, *extra(c)),
        lambda s, vm, x: answer(module.decode(s, vm, x)),
        lambda s, H: _pyomo(twin).build(s),
        lambda s, m, c: _pyomo(twin).warm_start(s, m, c.devices, *extra(c)),
        lambda s, m: answer(_pyomo(twin).decode(s, m)),
        lambda s: None)


MTPP = _assignment_ip("mtpp", "Archer's MTPP MIP (Fig. 3)", mtpp, symmetric=False, replicated=False)
MAXLOAD = _assignment_ip("maxload", "Tarnawski's max-load IP (Fig. 6)", maxload, symmetric=True, replicated=True)
LATENCY = Formulation(
    "latency", "Tarnawski's latency IP (Figs. 3-4)", "exact latency IP", latency.check,
    lambda s, H, sym: latency.build(s, H),
    lambda s, vm, c, sym: latency_start.encode(s, vm, c.devices, c.subgraphs),
    lambda s, vm, x: Candidate("", *latency.decode(s, vm, x)),
    lambda s, H: _pyomo("latency").build(s, H),
    lambda s, m, c: _pyomo("latency").warm_start(s, m, c.devices, c.subgraphs),
    lambda s, m: Candidate("", *_pyomo("latency").decode(s, m)),
    latency.safe_horizon)
DIVIML = Formulation(
    "diviml", "the DiviML MILP (eqs. 1-7)", "exact DiviML MILP", diviml_size.check_whole,
    lambda s, H, sym: diviml.build(s, H, symmetry=sym),
    lambda s, vm, c, sym: diviml.encode(s, vm, diviml_symmetry.canonical(s, sym, c.schedule) if sym else c.schedule),
    lambda s, vm, x: Candidate("", schedule=diviml.decode(s, vm, x)),
    lambda s, H: _pyomo("diviml").build(s, H),
    lambda s, m, c: _pyomo("diviml").warm_start(s, m, c.schedule),
    lambda s, m: Candidate("", schedule=_pyomo("diviml").decode(s, m)),
    diviml.safe_horizon, pyomo_symmetry=False, pyomo_routes=True)
FORMULATIONS = {f.name: f for f in (MTPP, MAXLOAD, LATENCY, DIVIML)}


def formulation_for(spec: Spec) -> Formulation:
    """The row `exact` solves: the objective's; under the bottleneck, Archer's MTPP MIP for
    what it models (one class of identical stages under `acyclic`, no pins, stage limits,
    replicas or levels), else Tarnawski's max-load IP, which models `acyclic` and stage
    limits on any platform (models/maxload_stages.py)."""
    if spec.objective.kind == "latency":
        return LATENCY
    if spec.objective.scheduled:
        return DIVIML
    if spec.constraints.replicate <= 1 and not spec.platform.routed:
        try:
            mtpp.check(spec)
            return MTPP
        except PartError:
            pass
    return MAXLOAD

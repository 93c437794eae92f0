"""Shared by the Pyomo reference models."""
from __future__ import annotations

import pyomo.environ as pyo
from partdsl.core.errors import PartError
from partdsl.core.ir import Spec


def flat_only(spec: Spec, title: str) -> None:
    """Refuse server levels and direct links: the twins of the max-load and latency IPs
    price transfers flat (models/maxload_routes.py and latency_routes.py price them)."""
    if spec.platform.routed:
        raise PartError(f"the Pyomo twin of {title} prices transfers flat: server levels and direct links "
                        "are modelled on the matrix path only", spec.platform.routes_span,
                        "use --solver highs or scip without -O pyomo=1")


def constraint(*sets, rule) -> pyo.Constraint:  # type: ignore[no-untyped-def]
    """pyo.Constraint whose rule may come out trivially true (all its variables absent)."""
    def guarded(m, *idx):  # type: ignore[no-untyped-def]
        c = rule(m, *idx)
        if c is True:
            return pyo.Constraint.Feasible
        if c is False:
            return pyo.Constraint.Infeasible
        return c

    return pyo.Constraint(*sets, rule=guarded)


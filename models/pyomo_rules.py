"""Shared by the Pyomo reference models."""
from __future__ import annotations

import pyomo.environ as pyo


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


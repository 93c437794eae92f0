"""Archer et al. Fig. 3 (and the relaxations of sec. 3.2 and 3.3) as a Pyomo model: the
readable, solver-agnostic reference for models/mtpp.py, which builds the same program as
sparse matrices (much faster for large models). Tests check both give the same optimum.

Equation numbers are the paper's; Variant, the superblock weights, eq. 14's L and the
overflow term are shared with models/mtpp.py.
"""
from __future__ import annotations

import numpy as np
import pyomo.environ as pyo
from partdsl.core.graphs import forward_edges
from partdsl.core.ir import Spec
from partdsl.models.memory import treatment
from partdsl.models.mtpp import EXACT, Variant, check, simple_bound
from partdsl.models.pyomo_rules import constraint


def build(spec: Spec, variant: Variant = EXACT) -> pyo.ConcreteModel:
    check(spec)
    d = spec.dense
    k = spec.platform.classes[0].count
    K = variant.blocks(k)
    weights = dict(zip(range(1, K + 1), variant.weights(k)))
    work, prm = d.work[:, 0], d.params
    io = d.comm[:, 0]
    cap, bw = d.memory[0], d.link[0]
    rule = treatment(spec.constraints.memory, cap, bw)
    over, hard = rule == "overflow", rule == "hard"

    m = pyo.ConcreteModel(name=f"mtpp-{variant.kind}{variant.j or ''}")
    m.V = pyo.RangeSet(0, d.n - 1)
    m.B = pyo.RangeSet(1, K)
    m.E = pyo.Set(initialize=list(zip(d.src.tolist(), d.dst.tolist())), dimen=2)
    fw = forward_edges(d)  # the edges the stage order follows (models/mtpp.py: E_fw)
    m.EF = pyo.Set(initialize=list(zip(d.src[fw].tolist(), d.dst[fw].tolist())), dimen=2)
    m.U = pyo.Set(initialize=sorted(set(d.src.tolist())))  # tensor producers
    m.y = pyo.Var(m.V, m.B, within=pyo.Binary)  # v in block b or before
    m.c = pyo.Var(m.U, m.B, bounds=(0, 1))  # u's tensor enters or leaves block b
    m.ov = pyo.Var(m.B, within=pyo.NonNegativeReals)  # overflow (eq. 2), 0 unless modelled
    m.t = pyo.Var(within=pyo.NonNegativeReals)

    def x(v: int, b: int):  # type: ignore[no-untyped-def]  # eq. 11: x = y[b] - y[b-1]
        return m.y[v, b] - (m.y[v, b - 1] if b > 1 else 0)

    m.last = constraint(m.V, rule=lambda m, v: m.y[v, K] == 1)
    m.monotone = constraint(m.V, m.B, rule=lambda m, v, b: m.y[v, b - 1] <= m.y[v, b] if b > 1
                                else pyo.Constraint.Skip)
    m.dag = constraint(m.EF, m.B, rule=lambda m, u, v, b: m.y[u, b] >= m.y[v, b])  # (8)
    m.cut_in = constraint(m.E, m.B, rule=lambda m, u, v, b: m.c[u, b] >= m.y[u, b - 1] + x(v, b) - 1
                              if b > 1 else pyo.Constraint.Skip)  # (9)
    m.cut_out = constraint(m.E, m.B, rule=lambda m, u, v, b: m.c[u, b] >= x(u, b) - m.y[v, b])  # (10)
    m.block = pyo.Expression(m.B, rule=lambda m, b: sum(float(work[v]) * x(v, b) for v in m.V)
                             + sum(float(io[u]) * m.c[u, b] for u in m.U) + m.ov[b])  # (7)
    m.param_bytes = pyo.Expression(m.B, rule=lambda m, b: sum(float(prm[v]) * x(v, b) for v in m.V))

    def bottleneck(m, b):  # type: ignore[no-untyped-def]  # (6), a superblock weighted by its blocks
        w = weights[b]
        return pyo.Constraint.Skip if not w else m.block[b] <= w * m.t

    m.bottleneck = constraint(m.B, rule=bottleneck)

    def memory(m, b):  # type: ignore[no-untyped-def]
        w = weights[b]
        if not w or not (hard or over):
            return pyo.Constraint.Skip
        if over:
            return m.ov[b] >= (m.param_bytes[b] - w * float(cap)) * (1e3 / float(bw))
        return m.param_bytes[b] <= w * float(cap)

    m.memory = constraint(m.B, rule=memory)
    for b in m.B:
        if not (over and weights[b]):
            m.ov[b].fix(0.0)
    if variant.kind != "exact":  # (14): the bottleneck block holds at least L units of work
        m.enough_work = pyo.Constraint(expr=sum(float(work[v]) * x(v, 2) for v in m.V) >= simple_bound(spec))
    if variant.kind == "guess" and variant.j == 1:
        for v in m.V:
            m.y[v, 1].fix(0)
    if variant.kind == "guess" and variant.j == k:
        for v in m.V:
            m.y[v, 2].fix(1)
    m.colocate = constraint(d.colocated_pairs, m.B, rule=lambda m, a, c, b: m.y[a, b] == m.y[c, b])
    m.objective = pyo.Objective(expr=m.t, sense=pyo.minimize)
    return m


def decode(spec: Spec, m: pyo.ConcreteModel) -> np.ndarray:
    """Block of v = first b with y[v,b] = 1."""
    K = len(m.B)
    Y = np.array([[pyo.value(m.y[v, b]) for b in range(1, K + 1)] for v in m.V]) > 0.5
    return Y.argmax(axis=1).astype(np.int64)


def warm_start(spec: Spec, m: pyo.ConcreteModel, dev: np.ndarray) -> bool:
    """Load an exact-MIP start (y, c, ov, t) from an assignment; False if its blocks cannot
    be numbered in DAG order."""
    from partdsl.evaluator.evaluate import overflow
    from partdsl.models.mtpp import dag_blocks

    d = spec.dense
    block = dag_blocks(spec, dev)
    if block is None:
        return False
    for v in m.V:
        for b in m.B:
            m.y[v, b].set_value(float(block[v] <= b))
    for u in m.U:
        succ = d.succ_idx[d.succ_ptr[u]:d.succ_ptr[u + 1]]
        for b in m.B:
            enters = block[u] != b and (block[succ] == b).any()
            leaves = block[u] == b and (block[succ] != b).any()
            m.c[u, b].set_value(float(enters or leaves))
    ov = overflow(spec, d, block - 1)
    for b in m.B:
        if not m.ov[b].fixed:
            m.ov[b].set_value(float(ov[b - 1]))
    m.t.set_value(max(pyo.value(m.block[b]) for b in m.B))
    return True

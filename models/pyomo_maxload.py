"""Tarnawski et al. Fig. 6 (sec. 5.1.3, 5.3, App. C.1) as a Pyomo model: the readable,
solver-agnostic reference for models/maxload.py, which builds the same program as sparse
matrices. Tests check both give the same optimum. (The matrix path also breaks symmetry
among interchangeable devices; that changes no optimum, so the reference omits it.)
"""
from __future__ import annotations

import numpy as np
import pyomo.environ as pyo
from partdsl.core.ir import Spec
from partdsl.models.maxload import check
from partdsl.models.memory import treatment
from partdsl.models.pyomo_rules import constraint


def build(spec: Spec) -> pyo.ConcreteModel:
    check(spec)
    d = spec.dense
    o, cons = spec.objective, spec.constraints
    cls = d.dev_class
    gpipe = o.training == "gpipe"
    phase = d.backward.astype(int) if gpipe else np.zeros(d.n, dtype=int)
    edges = list(zip(d.src.tolist(), d.dst.tolist()))

    m = pyo.ConcreteModel(name="maxload")
    m.V = pyo.RangeSet(0, d.n - 1)
    m.I = pyo.RangeSet(0, d.D - 1)
    m.P = pyo.RangeSet(0, 1 if gpipe else 0)  # phases: FW and BW (GPipe) or one
    m.A = pyo.Set(initialize=[(v, i) for v in range(d.n) for i in range(d.D) if d.allowed[v, i]], dimen=2)
    m.x = pyo.Var(m.A, within=pyo.Binary)
    m.L = pyo.Var(m.P, within=pyo.NonNegativeReals)  # MaxLoad (per phase)

    def x(v: int, i: int):  # type: ignore[no-untyped-def]  # a forbidden pair is 0
        return m.x[v, i] if (v, i) in m.A else 0

    m.one_device = constraint(m.V, rule=lambda m, v: sum(x(v, i) for i in m.I) == 1)
    # transfers, charged on non-host devices: in to the consumer's phase, out to the producer's
    nonhost = [i for i in range(d.D) if not d.host[cls[i]]]
    m.IN = pyo.Set(initialize=sorted({(u, i, int(phase[v])) for u, v in edges for i in nonhost}), dimen=3)
    m.OUT = pyo.Set(initialize=sorted({(u, i) for u, _ in edges for i in nonhost}), dimen=2)
    m.comm_in = pyo.Var(m.IN, bounds=(0, 1))
    m.comm_out = pyo.Var(m.OUT, bounds=(0, 1))
    m.EI = pyo.Set(initialize=[(u, v, i) for u, v in edges for i in nonhost], dimen=3)
    m.cross_in = constraint(m.EI, rule=lambda m, u, v, i: m.comm_in[u, i, int(phase[v])] >= x(v, i) - x(u, i))
    m.cross_out = constraint(m.EI, rule=lambda m, u, v, i: m.comm_out[u, i] >= x(u, i) - x(v, i))
    # memory: knapsack, or the overflow term of Archer eq. 2
    cap, bw = d.memory[cls], d.link[cls]
    rule = [treatment(cons.memory, cap[i], bw[i]) for i in range(d.D)]
    streams = [i for i in range(d.D) if rule[i] == "overflow"]
    knaps = [i for i in range(d.D) if rule[i] == "hard"]
    m.ov = pyo.Var(m.I, within=pyo.NonNegativeReals)
    for i in m.I:
        if i not in streams:
            m.ov[i].fix(0.0)
    params = {i: sum(float(d.params[v]) * m.x[v, i] for v in m.V if (v, i) in m.A) for i in m.I}
    m.memory = constraint(knaps, rule=lambda m, i: params[i] <= float(cap[i]))
    m.overflow = constraint(streams, rule=lambda m, i: m.ov[i] >= (params[i] - float(cap[i])) * 1e3 / float(bw[i]))

    def compute(i: int, p: int):  # type: ignore[no-untyped-def]
        return sum(float(d.work[v, cls[i]]) * m.x[v, i] for v in m.V if phase[v] == p and (v, i) in m.A)

    def transfers_in(i: int, p: int):  # type: ignore[no-untyped-def]
        return sum(float(d.comm[u, cls[i]]) * m.comm_in[u, j, q] for u, j, q in m.IN if j == i and q == p)

    def transfers_out(i: int, p: int):  # type: ignore[no-untyped-def]
        return sum(float(d.comm[u, cls[i]]) * m.comm_out[u, j] for u, j in m.OUT if j == i and phase[u] == p)

    m.loads = pyo.ConstraintList()  # Load_i <= MaxLoad, or its overlapped forms (App. C.1)
    for i in m.I:
        for p in m.P:
            c, tin, tout = compute(i, p), transfers_in(i, p), transfers_out(i, p)
            if o.overlap is None:
                m.loads.add(c + tin + tout + m.ov[i] <= m.L[p])
            elif o.overlap == "simplex":
                m.loads.add(c <= m.L[p])
                m.loads.add(tin + tout + m.ov[i] <= m.L[p])
            else:
                m.loads.add(c <= m.L[p])
                m.loads.add(tin + m.ov[i] <= m.L[p])
                m.loads.add(tout <= m.L[p])
    m.colocate = constraint(d.colocated_pairs, m.I, rule=lambda m, a, b, i: x(a, i) == x(b, i))
    if cons.contiguous:  # Lemma 4.1, per device and per forward/backward part (sec. 5.3)
        parts = [0, 1] if spec.graph.is_training else [-1]
        m.Z = pyo.Set(initialize=[(v, i, q) for v in range(d.n) for i in range(d.D) for q in parts], dimen=3)
        m.z = pyo.Var(m.Z, bounds=(0, 1))

        def xp(v: int, i: int, q: int):  # type: ignore[no-untyped-def]
            return x(v, i) if q < 0 or int(d.backward[v]) == q else 0

        m.z_covers = constraint(m.Z, rule=lambda m, v, i, q: m.z[v, i, q] >= xp(v, i, q))
        m.EZ = pyo.Set(initialize=[(u, v, i, q) for u, v in edges for i in range(d.D) for q in parts], dimen=4)
        m.z_down = constraint(m.EZ, rule=lambda m, u, v, i, q: m.z[v, i, q] <= m.z[u, i, q])
        m.z_gap = constraint(m.EZ, rule=lambda m, u, v, i, q: m.z[v, i, q] <= xp(v, i, q) - xp(u, i, q) + 1)
    m.objective = pyo.Objective(expr=sum(m.L[p] for p in m.P), sense=pyo.minimize)
    return m


def decode(spec: Spec, m: pyo.ConcreteModel) -> np.ndarray:
    d = spec.dense
    vals = np.full((d.n, d.D), -1.0)
    for v, i in m.A:
        vals[v, i] = pyo.value(m.x[v, i])
    return vals.argmax(axis=1).astype(np.int64)


def warm_start(spec: Spec, m: pyo.ConcreteModel, dev: np.ndarray) -> bool:
    """Load a complete start (x, transfers, overflow, z, MaxLoad) from an assignment;
    False if it uses a forbidden pair."""
    from partdsl.core.evaluate import overflow
    from partdsl.models.maxload import max_loads, reaches

    d = spec.dense
    if any((v, int(i)) not in m.A for v, i in enumerate(dev)):
        return False
    phase = d.backward.astype(int) if len(m.P) == 2 else np.zeros(d.n, dtype=int)
    for v, i in m.A:
        m.x[v, i].set_value(float(dev[v] == i))
    for u, i, q in m.IN:
        succ = d.succ_idx[d.succ_ptr[u]:d.succ_ptr[u + 1]]
        m.comm_in[u, i, q].set_value(float(dev[u] != i and ((dev[succ] == i) & (phase[succ] == q)).any()))
    for u, i in m.OUT:
        succ = d.succ_idx[d.succ_ptr[u]:d.succ_ptr[u + 1]]
        m.comm_out[u, i].set_value(float(dev[u] == i and (dev[succ] != i).any()))
    ov = overflow(spec, d, dev)
    for i in m.I:
        if not m.ov[i].fixed:
            m.ov[i].set_value(float(ov[i]))
    if hasattr(m, "z"):
        marks = {(i, q): reaches(spec, dev, i, None if q < 0 else q) for i in range(d.D) for q in {q for _, _, q in m.Z}}
        for v, i, q in m.Z:
            m.z[v, i, q].set_value(float(marks[i, q][v]))
    for p, value in zip(m.P, max_loads(spec, dev)):
        m.L[p].set_value(float(value))
    return True

"""Tarnawski et al. Figs. 3-4 (sec. 4, 4.1) as a Pyomo model: the readable,
solver-agnostic reference for models/latency.py (same slots, same big-M H, same rows).
Tests check both give the same optimum."""
from __future__ import annotations

import numpy as np
import pyomo.environ as pyo
from partdsl.core.ir import Spec
from partdsl.models.latency import check, horizon
from partdsl.models.pyomo_rules import constraint, flat_only


def build(spec: Spec, upper: float | None = None) -> pyo.ConcreteModel:
    check(spec)
    flat_only(spec, "Tarnawski's latency IP")
    d = spec.dense
    q = spec.constraints.subgraphs
    cls = d.dev_class
    edges = list(zip(d.src.tolist(), d.dst.tolist()))
    accs = [i for i in range(d.D) if not d.host[cls[i]]]
    hcls = [c for c in range(len(d.class_names)) if d.host[c]]
    H = horizon(spec, upper)
    m = pyo.ConcreteModel(name="latency")
    m.H = H
    m.V = pyo.RangeSet(0, d.n - 1)
    m.J = pyo.Set(initialize=[(i, s) for i in accs for s in range(q)], dimen=2)  # slots
    m.XA = pyo.Set(initialize=[(v, i, s) for v in range(d.n) for i, s in m.J if d.allowed[v, i]], dimen=3)
    m.XH = pyo.Set(initialize=[(v, c) for v in range(d.n) for c in hcls
                               if d.allowed[v, cls == c].any()], dimen=2)
    m.x = pyo.Var(m.XA, within=pyo.Binary)
    m.xh = pyo.Var(m.XH, within=pyo.Binary)

    def x(v: int, i: int, s: int):  # type: ignore[no-untyped-def]
        return m.x[v, i, s] if (v, i, s) in m.XA else 0

    def xh(v: int, c: int):  # type: ignore[no-untyped-def]
        return m.xh[v, c] if (v, c) in m.XH else 0

    m.one = constraint(m.V, rule=lambda m, v: sum(x(v, i, s) for i, s in m.J) + sum(xh(v, c) for c in hcls) == 1)
    prods = sorted({u for u, _ in edges})
    m.PJ = pyo.Set(initialize=[(u, i, s) for u in prods for i, s in m.J], dimen=3)
    m.cin = pyo.Var(m.PJ, bounds=(0, 1))
    m.cout = pyo.Var(m.PJ, bounds=(0, 1))
    m.EJ = pyo.Set(initialize=[(u, v, i, s) for u, v in edges for i, s in m.J], dimen=4)
    m.comm_in = constraint(m.EJ, rule=lambda m, u, v, i, s: m.cin[u, i, s] >= x(v, i, s) - x(u, i, s))  # (4)
    m.comm_out = constraint(m.EJ, rule=lambda m, u, v, i, s: m.cout[u, i, s] >= x(u, i, s) - x(v, i, s))  # (5)
    m.lat = pyo.Var(m.V, bounds=(0, H))
    m.start = pyo.Var(m.J, bounds=(0, H))
    m.finish = pyo.Var(m.J, bounds=(0, H))
    m.T = pyo.Var(bounds=(0, H))
    m.total = constraint(m.V, rule=lambda m, v: m.T >= m.lat[v])
    m.wait = constraint(m.PJ, rule=lambda m, u, i, s: m.start[i, s] >= m.lat[u] - (1 - m.cin[u, i, s]) * H)  # (6)
    m.slot_time = constraint(m.J, rule=lambda m, i, s: m.finish[i, s] == m.start[i, s]  # (7)
                       + sum(float(d.comm[u, cls[i]]) * (m.cin[u, i, s] + m.cout[u, i, s]) for u in prods)
                       + sum(float(d.work[v, cls[i]]) * m.x[v, i, s] for v in m.V if (v, i, s) in m.XA))

    def host_time(v: int):  # type: ignore[no-untyped-def]  # allowed pairs only: work is inf elsewhere
        return sum(float(d.work[v, c]) * m.xh[v, c] for c in hcls if (v, c) in m.XH)

    m.cpu = constraint(m.V, rule=lambda m, v: m.lat[v] >= host_time(v))  # (8)
    m.cpu_after = constraint(edges, rule=lambda m, u, v: m.lat[v] >= host_time(v) + m.lat[u])  # (9)
    m.after_slot = constraint(m.XA, rule=lambda m, v, i, s: m.lat[v] >= m.finish[i, s] - (1 - m.x[v, i, s]) * H)  # (10)
    m.in_order = constraint([(i, s) for i, s in m.J if s > 0],
                            rule=lambda m, i, s: m.start[i, s] >= m.finish[i, s - 1])  # (14)
    if spec.constraints.memory == "hard":
        caps = {i: float(d.memory[cls[i]]) for i in accs if np.isfinite(d.memory[cls[i]])}
        m.memory = constraint(list(caps), rule=lambda m, i: sum(float(d.params[v]) / caps[i] * x(v, i, s)
                                                                for v in m.V for s in range(q)) <= 1)  # (3*), in capacities
    m.z = pyo.Var(m.V, m.J, bounds=(0, 1))  # Lemma 4.1 per slot
    m.z_covers = constraint(m.XA, rule=lambda m, v, i, s: m.z[v, i, s] >= m.x[v, i, s])
    m.z_down = constraint(m.EJ, rule=lambda m, u, v, i, s: m.z[v, i, s] <= m.z[u, i, s])
    m.z_gap = constraint(m.EJ, rule=lambda m, u, v, i, s: m.z[v, i, s] <= x(v, i, s) - x(u, i, s) + 1)
    m.colocate = constraint(d.colocated_pairs, accs, rule=lambda m, a, b, i:
                            sum(x(a, i, s) for s in range(q)) == sum(x(b, i, s) for s in range(q)))
    m.colocate_host = constraint(d.colocated_pairs, hcls, rule=lambda m, a, b, c: xh(a, c) == xh(b, c))
    m.objective = pyo.Objective(expr=m.T, sense=pyo.minimize)
    return m


def decode(spec: Spec, m: pyo.ConcreteModel) -> tuple[np.ndarray, np.ndarray]:
    d = spec.dense
    dev = np.zeros(d.n, dtype=np.int64)
    sub = np.zeros(d.n, dtype=np.int64)
    best = np.full(d.n, -1.0)
    for v, i, s in m.XA:
        val = pyo.value(m.x[v, i, s])
        if val > best[v]:
            best[v], dev[v], sub[v] = val, i, s
    for v, c in m.XH:
        val = pyo.value(m.xh[v, c])
        if val > best[v]:
            ok = np.flatnonzero((d.dev_class == c) & d.allowed[v])
            best[v], dev[v], sub[v] = val, ok[0], 0
    return dev, sub


def warm_start(spec: Spec, m: pyo.ConcreteModel, dev: np.ndarray, sub: np.ndarray | None) -> bool:
    """Load x from a split (the solver completes the rest); False if it does not fit."""
    from partdsl.evaluator.evaluate import evaluate

    d = spec.dense
    ev = evaluate(spec, dev, sub)
    if not ev.feasible:
        return False
    from partdsl.evaluator.subgraphs import units

    u = units(d, dev, ev.subgraph)
    for v in range(d.n):
        if d.host[d.dev_class[dev[v]]]:
            if (v, int(d.dev_class[dev[v]])) not in m.XH:
                return False
        elif (v, int(dev[v]), int(u.rank[u.of_node[v]])) not in m.XA:
            return False
    for key in m.XA:
        v, i, s = key
        m.x[key].set_value(float(dev[v] == i and not d.host[d.dev_class[i]] and u.rank[u.of_node[v]] == s))
    for key in m.XH:
        v, c = key
        m.xh[key].set_value(float(d.dev_class[dev[v]] == c))
    return True

"""The DiviML MILP (Ghannane & Abdelfattah sec. IV-A, eqs. 1-7) as a Pyomo model: the
readable, solver-agnostic reference for models/diviml.py (same columns, same rows, same
big-M; without the valid inequalities and twin rows of models/diviml_cuts.py, which cut
no optimum). Tests check both give the same optimum."""
from __future__ import annotations

import numpy as np
import pyomo.environ as pyo
from partdsl.core.ir import Spec
from partdsl.core.schedule import Schedule, share_times
from partdsl.evaluator.schedule_checks import sample_bytes
from partdsl.evaluator.schedule_eval import transfer_time
from partdsl.models.diviml import check, pieces_of_shares, reachable
from partdsl.models.pyomo_rules import constraint


def build(spec: Spec, H: float) -> pyo.ConcreteModel:
    check(spec)
    d = spec.dense
    K = spec.objective.split
    g = spec.objective.batch // K
    t = share_times(spec)
    ok = d.allowed & np.isfinite(t[:, :, 1:]).any(axis=2)
    tr = {(v, a, c): transfer_time(spec, v, a, c) for v in range(d.n) for a in range(d.D) for c in range(d.D)}
    M = H + max(tr.values(), default=0.0) + 1.0
    m = pyo.ConcreteModel(name="diviml")
    m.H = H
    m.VU = pyo.Set(initialize=[(v, u) for v, u in zip(*np.nonzero(ok))], dimen=2)  # node, device pairs
    m.X = pyo.Set(initialize=[(v, u, c) for v, u in m.VU for c in range(K)], dimen=3)
    m.B = pyo.Set(initialize=[(v, u, k) for v, u in m.VU for k in range(K + 1) if np.isfinite(t[v, u, k])], dimen=3)
    m.x = pyo.Var(m.X, within=pyo.Binary)  # chunk c of node v on device u (1, 4)
    m.b = pyo.Var(m.B, within=pyo.Binary)  # u holds k chunks of v, in one go (5)
    m.s = pyo.Var(m.VU, bounds=(0, H))  # start of that share
    m.C = pyo.Var(bounds=(0, H))
    m.obj = pyo.Objective(expr=m.C)

    def T(v: int, u: int):  # type: ignore[no-untyped-def]  # the share's time
        return sum(float(t[v, u, k]) * m.b[v, u, k] for k in range(K + 1) if (v, u, k) in m.B)

    def empty(v: int, u: int):  # type: ignore[no-untyped-def]
        return m.b[v, u, 0]

    chunks = [(v, c) for v in range(d.n) for c in range(K)]
    m.every = constraint(chunks, rule=lambda m, v, c: sum(m.x[v, u, c] for u in range(d.D) if (v, u) in m.VU) == 1)
    m.one_size = constraint(m.VU, rule=lambda m, v, u: sum(m.b[v, u, k] for k in range(K + 1)
                                                           if (v, u, k) in m.B) == 1)
    m.size = constraint(m.VU, rule=lambda m, v, u: sum(k * m.b[v, u, k] for k in range(K + 1) if (v, u, k) in m.B)
                        == sum(m.x[v, u, c] for c in range(K)))
    m.ends = constraint(m.VU, rule=lambda m, v, u: m.s[v, u] + T(v, u) <= m.C)  # (2)
    edges = list(zip(d.src.tolist(), d.dst.tolist()))
    m.P = pyo.Set(initialize=[(j, u, i, v) for j, i in edges for u in range(d.D) for v in range(d.D)
                              if (j, u) in m.VU and (i, v) in m.VU], dimen=4)
    # (3): i's share on v waits for j's share on u, plus the transfer if they share a chunk
    m.PC = pyo.Set(initialize=[(j, u, i, v, c) for j, u, i, v in m.P for c in range(K) if tr[j, u, v] > 0], dimen=5)
    m.prec = constraint(m.P, rule=lambda m, j, u, i, v: m.s[j, u] + T(j, u) <= m.s[i, v]
                        + M * (empty(j, u) + empty(i, v)))
    m.prec_move = constraint(m.PC, rule=lambda m, j, u, i, v, c: m.s[j, u] + T(j, u)
                             + tr[j, u, v] * (m.x[j, u, c] + m.x[i, v, c] - 1)
                             <= m.s[i, v] + M * (empty(j, u) + empty(i, v)))
    # (7): no overlap, only for pairs on no common path
    R = reachable(spec)
    m.Y = pyo.Set(initialize=[(i, j, u) for i in range(d.n) for j in range(i + 1, d.n) if not (R[i, j] or R[j, i])
                              for u in range(d.D) if (i, u) in m.VU and (j, u) in m.VU], dimen=3)
    m.y = pyo.Var(m.Y, within=pyo.Binary)  # 1: j's share before i's
    m.i_first = constraint(m.Y, rule=lambda m, i, j, u: m.s[i, u] + T(i, u) <= m.s[j, u] + M * m.y[i, j, u]
                           + M * (empty(i, u) + empty(j, u)))
    m.j_first = constraint(m.Y, rule=lambda m, i, j, u: m.s[j, u] + T(j, u) <= m.s[i, u] + M * (1 - m.y[i, j, u])
                           + M * (empty(i, u) + empty(j, u)))
    # (6) memory: each held sample's tensors, each used node's parameters
    if spec.constraints.memory != "ignore":
        held = sample_bytes(spec)
        cap = d.memory[d.dev_class]
        devs = [u for u in range(d.D) if np.isfinite(cap[u]) and ok[:, u].any()]
        m.memory = constraint(devs, rule=lambda m, u: sum(
            float(held[v] * g) * m.x[v, u, c] for v in range(d.n) if (v, u) in m.VU for c in range(K))
            + sum(float(d.params[v]) * (1 - empty(v, u)) for v in range(d.n) if (v, u) in m.VU)
            <= float(cap[u]) * (1 + 1e-12))
    pairs = [(r, v, u, c) for r, v in d.colocated_pairs for u in range(d.D) for c in range(K)
             if (r, u) in m.VU or (v, u) in m.VU]
    m.colocate = constraint(pairs, rule=lambda m, r, v, u, c: (m.x[r, u, c] if (r, u) in m.VU else 0)
                            == (m.x[v, u, c] if (v, u) in m.VU else 0))
    return m


def decode(spec: Spec, m: pyo.ConcreteModel) -> Schedule:
    K = spec.objective.split
    shares = []
    for v, u in m.VU:
        chunks = [c for c in range(K) if pyo.value(m.x[v, u, c]) > 0.5]
        if chunks:
            shares.append((float(pyo.value(m.s[v, u])), v, u, chunks))
    return pieces_of_shares(spec, shares)


def warm_start(spec: Spec, m: pyo.ConcreteModel, sched: Schedule) -> bool:
    """Load a timed schedule in the model's space (whole chunks, one share per node and
    device); False if it is not in it."""
    K = spec.objective.split
    g = spec.objective.batch // K
    held: dict[tuple[int, int], set[int]] = {}
    start: dict[tuple[int, int], float] = {}
    for p in sched.pieces:
        held.setdefault((p.node, p.device), set()).update(p.samples)
        start[(p.node, p.device)] = min(start.get((p.node, p.device), np.inf), p.start or 0.0)
    for (v, u), samples in held.items():
        chunks = {q // g for q in samples}
        if (v, u) not in m.VU or (v, u, len(chunks)) not in m.B or \
                any(set(range(c * g, (c + 1) * g)) - samples for c in chunks):
            return False
    for v, u, c in m.X:
        m.x[v, u, c].set_value(float(c in {q // g for q in held.get((v, u), ())}))
    for v, u, k in m.B:
        m.b[v, u, k].set_value(float(len({q // g for q in held.get((v, u), ())}) == k))
    for v, u in m.VU:
        m.s[v, u].set_value(min(start.get((v, u), 0.0), m.H))
    for i, j, u in m.Y:
        m.y[i, j, u].set_value(float((i, u) in start and (j, u) in start and start[(j, u)] < start[(i, u)]))
    return True

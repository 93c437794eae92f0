"""Tarnawski et al. Fig. 6 (sec. 5.1.3, 5.3, App. C.1) as a Pyomo model: the readable,
solver-agnostic reference for models/maxload.py, which builds the same program as sparse
matrices. Tests check both give the same optimum. (The matrix path also breaks symmetry
among interchangeable devices, and with replicas adds valid rows that strengthen its LP,
models/maxload_replicas.py; they change no optimum, so the reference omits them.)
"""
from __future__ import annotations

import numpy as np
import pyomo.environ as pyo
from partdsl.core.ir import Spec
from partdsl.evaluator import replicas as core_replicas
from partdsl.models.maxload import check
from partdsl.models.memory import treatment
from partdsl.models.pyomo_rules import constraint, flat_only
from pyomo.contrib.fbbt.fbbt import compute_bounds_on_expr


def build(spec: Spec) -> pyo.ConcreteModel:
    check(spec)
    flat_only(spec, "Tarnawski's max-load IP")
    d = spec.dense
    gpipe = spec.objective.training == "gpipe"
    phase = d.backward.astype(int) if gpipe else np.zeros(d.n, dtype=int)
    m = pyo.ConcreteModel(name="maxload")
    m.V = pyo.RangeSet(0, d.n - 1)
    m.I = pyo.RangeSet(0, d.D - 1)
    m.P = pyo.RangeSet(0, 1 if gpipe else 0)  # phases: FW and BW (GPipe) or one
    m.A = pyo.Set(initialize=[(v, i) for v in range(d.n) for i in range(d.D) if d.allowed[v, i]], dimen=2)
    m.x = pyo.Var(m.A, within=pyo.Binary)
    m.L = pyo.Var(m.P, within=pyo.NonNegativeReals)  # MaxLoad (per phase)
    m.one_device = constraint(m.V, rule=lambda m, v: sum(_x(m, v, i) for i in m.I) == 1)
    _transfers(spec, m, phase)
    params = _memory(spec, m)
    _loads(spec, m, phase, params)
    m.colocate = constraint(d.colocated_pairs, m.I, rule=lambda m, a, b, i: _x(m, a, i) == _x(m, b, i))
    if spec.constraints.contiguous:
        _contiguity(spec, m)
    _stages(spec, m)
    m.objective = pyo.Objective(expr=sum(m.L[p] for p in m.P), sense=pyo.minimize)
    return m


def _x(m: pyo.ConcreteModel, v: int, i: int):  # type: ignore[no-untyped-def]
    """x[v, i], or 0 for a forbidden pair."""
    return m.x[v, i] if (v, i) in m.A else 0


def _transfers(spec: Spec, m: pyo.ConcreteModel, phase: np.ndarray) -> None:
    """Transfers, charged on non-host devices: in to the consumer's phase, out to the producer's."""
    d = spec.dense
    edges = list(zip(d.src.tolist(), d.dst.tolist()))
    nonhost = [i for i in range(d.D) if not d.host[d.dev_class[i]]]
    m.IN = pyo.Set(initialize=sorted({(u, i, int(phase[v])) for u, v in edges for i in nonhost}), dimen=3)
    m.OUT = pyo.Set(initialize=sorted({(u, i) for u, _ in edges for i in nonhost}), dimen=2)
    m.comm_in = pyo.Var(m.IN, bounds=(0, 1))
    m.comm_out = pyo.Var(m.OUT, bounds=(0, 1))
    m.EI = pyo.Set(initialize=[(u, v, i) for u, v in edges for i in nonhost], dimen=3)
    m.cross_in = constraint(m.EI, rule=lambda m, u, v, i: m.comm_in[u, i, int(phase[v])] >= _x(m, v, i) - _x(m, u, i))
    m.cross_out = constraint(m.EI, rule=lambda m, u, v, i: m.comm_out[u, i] >= _x(m, u, i) - _x(m, v, i))


def _memory(spec: Spec, m: pyo.ConcreteModel) -> dict:
    """Memory: a knapsack, or the overflow term of Archer eq. 2. Returns each device's
    parameter bytes as an expression."""
    d = spec.dense
    cap, bw = d.memory[d.dev_class], d.link[d.dev_class]
    rule = [treatment(spec.constraints.memory, cap[i], bw[i]) for i in range(d.D)]
    streams = [i for i in range(d.D) if rule[i] == "overflow"]
    knaps = [i for i in range(d.D) if rule[i] == "hard"]
    m.ov = pyo.Var(m.I, within=pyo.NonNegativeReals)
    for i in m.I:
        if i not in streams:
            m.ov[i].fix(0.0)
    params = {i: sum(float(d.params[v]) * m.x[v, i] for v in m.V if (v, i) in m.A) for i in m.I}
    m.memory = constraint(knaps, rule=lambda m, i: params[i] <= float(cap[i]))
    m.overflow = constraint(streams, rule=lambda m, i: m.ov[i] >= (params[i] - float(cap[i])) * 1e3 / float(bw[i]))
    for i in streams:  # the most overflow any assignment needs (bounds the big-Ms of the loads)
        m.ov[i].setub(max(0.0, sum(float(d.params[v]) for v in m.V if (v, i) in m.A) - float(cap[i])) * 1e3 / bw[i])
    return params


def _loads(spec: Spec, m: pyo.ConcreteModel, phase: np.ndarray, params: dict) -> None:
    """Load_i <= MaxLoad, or its overlapped forms (App. C.1); replicated stages per factor."""
    d, o = spec.dense, spec.objective
    cls = d.dev_class

    def compute(i: int, p: int):  # type: ignore[no-untyped-def]
        return sum(float(d.work[v, cls[i]]) * m.x[v, i] for v in m.V if phase[v] == p and (v, i) in m.A)

    def transfers_in(i: int, p: int):  # type: ignore[no-untyped-def]
        return sum(float(d.comm[u, cls[i]]) * m.comm_in[u, j, q] for u, j, q in m.IN if j == i and q == p)

    def transfers_out(i: int, p: int):  # type: ignore[no-untyped-def]
        return sum(float(d.comm[u, cls[i]]) * m.comm_out[u, j] for u, j in m.OUT if j == i and phase[u] == p)

    factors = _replica_factors(spec, m, params)
    m.loads = pyo.ConstraintList()

    def load(i: int, p: int, e, with_sync: bool) -> None:  # type: ignore[no-untyped-def]
        """e <= MaxLoad; per factor r, (e + sync) / r <= MaxLoad when y[i, r] = 1 (big-M)."""
        if not factors[i]:
            m.loads.add(e <= m.L[p])
            return
        big = _upper(e)
        m.loads.add(e - big * sum(m.y[i, r] for r, _ in factors[i]) <= m.L[p])
        for r, sync in factors[i]:
            er = (e + (sync if with_sync and p == max(m.P) else 0)) / r
            M = _upper(er)
            m.loads.add(er <= m.L[p] + M * (1 - m.y[i, r]))

    for i in m.I:
        for p in m.P:
            c, tin, tout = compute(i, p), transfers_in(i, p), transfers_out(i, p)
            if o.overlap is None:
                load(i, p, c + tin + tout + m.ov[i], True)
            elif o.overlap == "simplex":
                load(i, p, c, False)
                load(i, p, tin + tout + m.ov[i], True)
            else:
                load(i, p, c, False)
                load(i, p, tin + m.ov[i], True)
                load(i, p, tout, False)


def _contiguity(spec: Spec, m: pyo.ConcreteModel) -> None:
    """Lemma 4.1, per device and per forward/backward part (sec. 5.3)."""
    d = spec.dense
    edges = list(zip(d.src.tolist(), d.dst.tolist()))
    parts = [0, 1] if spec.graph.is_training else [-1]
    m.Z = pyo.Set(initialize=[(v, i, q) for v in range(d.n) for i in range(d.D) for q in parts], dimen=3)
    m.z = pyo.Var(m.Z, bounds=(0, 1))

    def xp(v: int, i: int, q: int):  # type: ignore[no-untyped-def]
        return _x(m, v, i) if q < 0 or int(d.backward[v]) == q else 0

    m.z_covers = constraint(m.Z, rule=lambda m, v, i, q: m.z[v, i, q] >= xp(v, i, q))
    m.EZ = pyo.Set(initialize=[(u, v, i, q) for u, v in edges for i in range(d.D) for q in parts], dimen=4)
    m.z_down = constraint(m.EZ, rule=lambda m, u, v, i, q: m.z[v, i, q] <= m.z[u, i, q])
    m.z_gap = constraint(m.EZ, rule=lambda m, u, v, i, q: m.z[v, i, q] <= xp(v, i, q) - xp(u, i, q) + 1)


def _stages(spec: Spec, m: pyo.ConcreteModel) -> None:
    """`acyclic`: stage positions p, node positions q (models/maxload_stages.py); `stages <= k`:
    used devices."""
    from partdsl.core.graphs import stage_count, stage_edges, stage_of

    d, c = spec.dense, spec.constraints
    if c.acyclic:
        M = stage_count(d) - 1
        m.S = pyo.RangeSet(0, M)
        m.stage_pos = pyo.Var(m.S, bounds=(0, M))
        m.node_pos = pyo.Var(m.V, bounds=(0, M))
        vv, ii = np.array(list(m.A), dtype=np.int64).reshape(-1, 2).T
        s = dict(zip(zip(vv.tolist(), ii.tolist()), stage_of(d, vv, ii).tolist()))  # (v, i) -> v's stage on i
        q, p = m.node_pos, m.stage_pos
        m.position_le = constraint(m.A, rule=lambda m, v, i: q[v] - p[s[v, i]] <= M * (1 - m.x[v, i]))
        m.position_ge = constraint(m.A, rule=lambda m, v, i: p[s[v, i]] - q[v] <= M * (1 - m.x[v, i]))
        e = np.flatnonzero(stage_edges(d))
        m.EO = pyo.Set(initialize=[(int(d.src[k]), int(d.dst[k]), i) for k in e for i in range(d.D)
                                   if (int(d.src[k]), i) in m.A], dimen=3)
        m.stage_order = constraint(m.EO, rule=lambda m, u, v, i: q[v] - q[u] >= m.x[u, i] - _x(m, v, i))
    if c.max_stages is not None:
        m.stage_used = pyo.Var(m.I, within=pyo.Binary)
        m.marks_stage = constraint(m.A, rule=lambda m, v, i: m.x[v, i] <= m.stage_used[i])
        m.stage_limit = pyo.Constraint(expr=sum(m.stage_used[i] for i in m.I) <= int(c.max_stages))


def _upper(e) -> float:  # type: ignore[no-untyped-def]
    """An upper bound of a linear expression from its variables' bounds (a big-M)."""
    return float(e) if isinstance(e, (int, float)) else float(compute_bounds_on_expr(e)[1])


def _replica_factors(spec: Spec, m: pyo.ConcreteModel, params: dict) -> dict:
    """Replicated stages (models/maxload_replicas.py): y[i, r] for r = 2 .. the most device
    i's class allows, used[i] >= x[v, i], sum_r y[i, r] <= used[i], each class's devices
    counted with their replicas. {i: [(r, the weight sync in ms)]}, empty lists without."""
    d = spec.dense
    counts = np.bincount(d.dev_class, minlength=len(d.class_names))
    most = np.minimum(spec.constraints.replicate, counts[d.dev_class])
    m.R = pyo.Set(initialize=[(i, r) for i in range(d.D) for r in range(2, int(most[i]) + 1)], dimen=2)
    m.y = pyo.Var(m.R, within=pyo.Binary)
    m.used = pyo.Var(m.I, bounds=(0, 1))
    m.marks_used = constraint([(v, i) for v, i in m.A if most[i] > 1], rule=lambda m, v, i: m.used[i] >= m.x[v, i])
    m.one_factor = constraint(m.I, rule=lambda m, i: sum(m.y[j, r] for j, r in m.R if j == i) <= m.used[i])
    m.class_devices = constraint(range(len(counts)), rule=lambda m, c: sum(
        m.used[i] for i in m.I if d.dev_class[i] == c) + sum(
        (r - 1) * m.y[i, r] for i, r in m.R if d.dev_class[i] == c) <= int(counts[c]))
    rate = {(i, r): core_replicas.span_rate(d, i, r) for i, r in m.R}
    return {i: [(r, rate[i, r] * params[i]) for j, r in m.R if j == i] for i in m.I}


def decode(spec: Spec, m: pyo.ConcreteModel) -> tuple[np.ndarray, np.ndarray | None]:
    """The assignment and, under `replicate`, each device's replication factor."""
    d = spec.dense
    vals = np.full((d.n, d.D), -1.0)
    for v, i in m.A:
        vals[v, i] = pyo.value(m.x[v, i])
    factors = np.ones(d.D, dtype=np.int64)
    for i, r in m.R:
        if pyo.value(m.y[i, r]) > 0.5:
            factors[i] = r
    return vals.argmax(axis=1).astype(np.int64), factors if spec.constraints.replicate > 1 else None


def warm_start(spec: Spec, m: pyo.ConcreteModel, dev: np.ndarray, factors: np.ndarray | None = None) -> bool:
    """Load a complete start (x, transfers, overflow, z, replicas, MaxLoad) from an
    assignment and its factors; False if it uses a forbidden pair."""
    from partdsl.evaluator.evaluate import overflow
    from partdsl.models.maxload import max_loads, reaches

    d = spec.dense
    if any((v, int(i)) not in m.A for v, i in enumerate(dev)):
        return False
    used = np.bincount(dev, minlength=d.D) > 0
    for i in m.I:
        m.used[i].set_value(float(used[i]))
    for i, r in m.R:
        m.y[i, r].set_value(float(factors is not None and used[i] and int(factors[i]) == r))
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
    if not _warm_stages(spec, m, dev):
        return False
    for p, value in zip(m.P, max_loads(spec, dev, factors)):
        m.L[p].set_value(float(value))
    return True


def _warm_stages(spec: Spec, m: pyo.ConcreteModel, dev: np.ndarray) -> bool:
    """The start's stage and node positions and used devices; False if its stages form a cycle."""
    from partdsl.core.graphs import stage_labels
    from partdsl.models.maxload_stages import positions

    if hasattr(m, "stage_pos"):
        pos = positions(spec, dev)
        if pos is None:
            return False
        for k in m.S:
            m.stage_pos[k].set_value(float(pos[k]))
        lab = stage_labels(spec.dense, dev)[0]
        for v in m.V:
            m.node_pos[v].set_value(float(pos[lab[v]]))
    if hasattr(m, "stage_used"):
        used = np.bincount(dev, minlength=spec.dense.D) > 0
        for i in m.I:
            m.stage_used[i].set_value(float(used[i]))
    return True

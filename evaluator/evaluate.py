"""The one evaluator: scores any assignment (node -> device) under the spec's cost
semantics and lists every violated constraint. Every solver and kernel answer is
re-scored here before it is returned.

Cost semantics
- Block/device load (Archer eq. 3, Tarnawski sec. 3 and 5.1.1): compute of its nodes
  on its class + each incoming tensor once per receiving device + each outgoing tensor
  once per sending device (however many consumers) + parameter overflow (Archer eq. 2,
  `memory overflow`). Host devices (CPUs) read and write host memory for free.
- Training (Tarnawski sec. 5.3, App. A): pipedream = max_d (FW_d + BW_d), which is the
  plain load; gpipe = max_d FW_d + max_d BW_d, a tensor charged to the phase of the
  node that sends (out) or consumes (in) it.
- Overlap (Tarnawski App. C.1): load = max(compute, transfers) or, duplex,
  max(in-transfers, compute, out-transfers); overflow streaming counts as a transfer in.
- Latency (Tarnawski sec. 4): each non-host device runs its subgraph once, invoked when
  all its inputs are in host memory; host nodes run as soon as their inputs are ready
  (the paper assumes at least as many CPU cores as the graph is wide). A cycle among
  device subgraphs deadlocks (infinite latency, reported as a violation).
- Batched throughput and latency by tasks (DiviML sec. III-IV): scored on a schedule
  (core/schedule.py); an assignment runs each node's L samples on its device in the
  batch sizes that are fastest there, list-scheduled in topological order.
"""
from __future__ import annotations

import numpy as np
from partdsl.core.dense import INF, Dense
from partdsl.core.evaluation import Evaluation, Violation
from partdsl.core.ir import Spec
from partdsl.core.schedule import whole_batches
from partdsl.evaluator import levels, replicas, subgraphs
from partdsl.evaluator.schedule_eval import evaluate_schedule
from partdsl.evaluator.violations import memory_used, violations

# ----------------------------------------------------------------------------- loads

def transfer_charges(dense: Dense, dev: np.ndarray, phase: np.ndarray | None = None
                     ) -> tuple[np.ndarray, np.ndarray]:
    """In/out transfer time per (device[, phase]): a tensor is charged once per sending
    device and once per receiving device. With `phase` (0 fw, 1 bw per node), charges go
    to the phase of the sender (out) / consumer (in); result shape [D * P]."""
    D = dense.D
    P = 1 if phase is None else 2
    ph = np.zeros(dense.n, dtype=np.int64) if phase is None else phase
    src, dst = dense.src, dense.dst
    cross = dev[src] != dev[dst]
    cu, cv = src[cross], dst[cross]
    sends = levels.send_charges(dense, cu, dev[cu], dev[cv])
    out = np.zeros(D * P)
    key = np.unique(cu * P + ph[cu])
    u, p = key // P, key % P
    np.add.at(out, dev[u] * P + p, levels.send_ms(dense, u, dev[u], sends))
    inn = np.zeros(D * P)
    key = np.unique((cu * D + dev[cv]) * P + ph[cv])
    p, ud = key % P, key // P
    u, d = ud // D, ud % D
    np.add.at(inn, d * P + p, levels.receive_ms(dense, u, dev[u], d))
    return inn, out


def transfer_bytes(dense: Dense, dev: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bytes in and out per device under `transfer_charges`' rule: a tensor leaves its
    device once and enters each other device that reads it once. Nodes without a device
    (-1: split over several) count on no device."""
    src, dst = dense.src, dense.dst
    cross = (dev[src] != dev[dst]) & (dev[src] >= 0) & (dev[dst] >= 0)
    cu, cv = src[cross], dst[cross]
    u = np.unique(cu)
    out = np.bincount(dev[u], weights=dense.out_bytes[u], minlength=dense.D)[:dense.D]
    ud = np.unique(cu * dense.D + dev[cv])
    inn = np.bincount(ud % dense.D, weights=dense.out_bytes[ud // dense.D], minlength=dense.D)[:dense.D]
    return inn, out


def _compute(dense: Dense, dev: np.ndarray, phase: np.ndarray | None = None) -> np.ndarray:
    P = 1 if phase is None else 2
    ph = np.zeros(dense.n, dtype=np.int64) if phase is None else phase
    w = dense.work[np.arange(dense.n), dense.dev_class[dev]]
    out = np.zeros(dense.D * P)
    np.add.at(out, dev * P + ph, w)
    return out



def overflow(spec: Spec, dense: Dense, dev: np.ndarray) -> np.ndarray:
    """Archer eq. 2: (params - M)^+ / B per device, when memory mode is `overflow`."""
    if spec.constraints.memory != "overflow":
        return np.zeros(dense.D)
    cls = dense.dev_class
    excess = np.maximum(memory_used(dense, dev) - dense.memory[cls], 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        ov = np.where(excess > 0, excess / dense.link[cls] * 1e3, 0.0)
    return ov


def combine(compute: np.ndarray, inn: np.ndarray, out: np.ndarray, ov: np.ndarray,
            overlap: str | None) -> np.ndarray:
    if overlap is None:
        return compute + inn + out + ov
    if overlap == "duplex":
        return np.maximum(np.maximum(inn + ov, compute), out)
    return np.maximum(compute, inn + out + ov)


# ----------------------------------------------------------------------- constraints


# ------------------------------------------------------------------------ objectives

def bottleneck_loads(spec: Spec, dense: Dense, dev: np.ndarray, r: np.ndarray | None = None
                     ) -> tuple[float, np.ndarray]:
    """The bottleneck objective and its load table: [D] loads, or [D, 2] forward and
    backward loads under GPipe (objective = max FW + max BW). Search kernels score moves
    with it, so they and the evaluator share one cost model. `r`: replication factors
    ([D], evaluator/replicas.py), each stage's load divided by its own."""
    ov = overflow(spec, dense, dev)
    sync = np.zeros(dense.D) if r is None else replicas.sync_time(dense, dev, r)
    if spec.objective.training == "gpipe":
        table = _phase_loads(spec, dense, dev, ov, sync)
    else:
        inn, out = transfer_charges(dense, dev)
        table = combine(_compute(dense, dev), inn + sync, out, ov, spec.objective.overlap)
    if r is not None:
        table = table / (r if table.ndim == 1 else r[:, None])
    return _max_load(table), table


def _phase_loads(spec: Spec, dense: Dense, dev: np.ndarray, ov: np.ndarray, sync: np.ndarray) -> np.ndarray:
    """GPipe: [D, 2] forward and backward loads; transfers go to the phase of the sender
    (out) or consumer (in), overflow to both, a replicated stage's weight sync to backward."""
    ph = dense.backward.astype(np.int64)
    comp2 = _compute(dense, dev, ph).reshape(-1, 2)
    in2, out2 = (x.reshape(-1, 2) for x in transfer_charges(dense, dev, ph))
    return np.stack([combine(comp2[:, p], in2[:, p] + p * sync, out2[:, p], ov, spec.objective.overlap)
                     for p in (0, 1)], axis=1)


def _max_load(table: np.ndarray) -> float:
    """Max load, or max FW + max BW for a [D, 2] table."""
    return float(table.max(axis=0).sum()) if table.shape[0] else 0.0


def _bottleneck(spec: Spec, dense: Dense, dev: np.ndarray, r: np.ndarray) -> tuple[float, dict, dict]:
    obj = spec.objective
    ov = overflow(spec, dense, dev)
    comp = _compute(dense, dev)
    inn, out = transfer_charges(dense, dev)
    sync = replicas.sync_time(dense, dev, r)
    load = combine(comp, inn + sync, out, ov, obj.overlap) / r
    parts = {d: {"compute": comp[j], "in": inn[j], "out": out[j], "overflow": ov[j]}
             for j, d in enumerate(dense.devices)}
    if spec.constraints.replicate > 1:
        for j, d in enumerate(dense.devices):
            parts[d].update(replicas=r[j], sync=sync[j])
    if obj.training == "gpipe":
        value, table = bottleneck_loads(spec, dense, dev, r)
        for j, d in enumerate(dense.devices):
            parts[d].update(fw=table[j, 0], bw=table[j, 1])
    else:  # the table bottleneck_loads would compute again: `load`
        value = _max_load(load)
    return value, {d: float(x) for d, x in zip(dense.devices, load)}, parts


def _latency(spec: Spec, dense: Dense, dev: np.ndarray, u: subgraphs.SubgraphUnits
             ) -> tuple[float, dict, dict, list[Violation]]:
    """Tarnawski sec. 4 on units (evaluator/subgraphs.py): per device, its subgraphs' compute,
    transfers, first start and last finish."""
    s = subgraphs.timed(dense, dev, u)
    D = dense.D
    comp, inn, out = (np.bincount(u.device, weights=x, minlength=D)[:D] if u.A else np.zeros(D)
                      for x in (s.compute, s.inn, s.out))
    loads = {d: float(comp[j] + inn[j] + out[j]) for j, d in enumerate(dense.devices)}
    parts: dict = {d: {"compute": comp[j], "in": inn[j], "out": out[j]} for j, d in enumerate(dense.devices)}
    q = spec.constraints.subgraphs
    viol = [Violation("subgraphs", f"{dense.devices[d]} runs {c} subgraphs, at most {q} allowed "
                      f"(subject to {{ subgraphs <= {q} }})", device=dense.devices[d])
            for d, c in enumerate(np.bincount(u.device, minlength=D)[:D]) if c > q]
    if s.cycle is not None:
        def name(x: int) -> str:
            if x >= u.A:
                return dense.names[x - u.A]
            d = dense.devices[u.device[x]]
            return d if q == 1 else f"{d} subgraph {u.rank[x]}"
        txt = " -> ".join(name(x) for x in s.cycle)
        return INF, loads, parts, viol + [Violation("deadlock", "device subgraphs wait on each other "
                                                    f"(single-stream execution cannot start): {txt}")]
    for a in range(u.A):
        p = parts[dense.devices[u.device[a]]]
        p["start"] = min(p.get("start", INF), s.start[a])
        p["finish"] = max(p.get("finish", 0.0), s.finish[a])
        p["subgraphs"] = p.get("subgraphs", 0) + 1
    host = np.flatnonzero((u.of_node >= u.A) & (dev >= 0))  # a host node is a unit of its own: its run time
    x = u.of_node[host]
    ran = np.isfinite(s.finish[x])
    host, x = host[ran], x[ran]
    busy = np.bincount(dev[host], weights=s.finish[x] - s.start[x], minlength=D)[:D]
    first, last = np.full(D, INF), np.zeros(D)
    np.minimum.at(first, dev[host], s.start[x])
    np.maximum.at(last, dev[host], s.finish[x])
    for j in np.unique(dev[host]).tolist():
        d, p = dense.devices[j], parts[dense.devices[j]]
        p["compute"] += busy[j]
        loads[d] += float(busy[j])
        p["start"] = min(p.get("start", INF), first[j])
        p["finish"] = max(p.get("finish", 0.0), last[j])
    return s.value, loads, parts, viol



def evaluate(spec: Spec, assignment: np.ndarray, subgraph: np.ndarray | None = None,
             replicas_of: np.ndarray | None = None) -> Evaluation:
    """Score an assignment (int array: node index -> device index, -1 = unassigned). Under
    latency, `subgraph` numbers each accelerator node's subgraph (evaluator/subgraphs.py); without
    it they are derived. `replicas_of`: each device's replication factor (evaluator/replicas.py)."""
    dense = spec.dense
    dev = np.asarray(assignment, dtype=np.int64)
    if spec.objective.scheduled and not (dev < 0).any():  # DiviML: the assignment's list schedule
        return evaluate_schedule(spec, whole_batches(spec, dev))
    sub = units = None
    if spec.objective.kind == "latency" and not (dev < 0).any():
        sub = subgraphs.resolve(dense, dev, subgraph, spec.constraints.subgraphs)
        units = subgraphs.units(dense, dev, sub)
    viol = violations(spec, dense, dev, units)
    if viol and viol[0].kind == "unassigned":
        worst = 0.0 if spec.objective.sense == "max" else INF
        return Evaluation(worst, spec.objective.sense, _unit(spec), {}, {}, tuple(viol))
    if spec.objective.kind == "bottleneck":
        r = replicas.factors(dense, dev, replicas_of)
        viol += replicas.violations(spec, dense, dev, r)
        value, loads, parts = _bottleneck(spec, dense, dev, r)
    else:
        value, loads, parts, extra = _latency(spec, dense, dev, units)
        viol += extra
    used = memory_used(dense, dev)
    for j, d in enumerate(dense.devices):
        parts[d]["memory"] = float(used[j])
    return Evaluation(value, spec.objective.sense, _unit(spec), loads, parts, tuple(viol), sub)


def _unit(spec: Spec) -> str:
    return spec.objective.unit

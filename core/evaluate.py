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

from partdsl.core import subgraphs
from partdsl.core.dense import INF, Dense
from partdsl.core.evaluation import Evaluation, Violation, short_list
from partdsl.core.graphs import quotient_cycle
from partdsl.core.ir import Spec
from partdsl.core.schedule import evaluate_schedule, whole_batches



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
    cls = dense.dev_class
    out = np.zeros(D * P)
    key = np.unique(cu * P + ph[cu])
    u, p = key // P, key % P
    np.add.at(out, dev[u] * P + p, dense.comm[u, cls[dev[u]]])
    inn = np.zeros(D * P)
    key = np.unique((cu * D + dev[cv]) * P + ph[cv])
    p, ud = key % P, key // P
    u, d = ud // D, ud % D
    np.add.at(inn, d * P + p, dense.comm[u, cls[d]])
    return inn, out


def _compute(dense: Dense, dev: np.ndarray, phase: np.ndarray | None = None) -> np.ndarray:
    P = 1 if phase is None else 2
    ph = np.zeros(dense.n, dtype=np.int64) if phase is None else phase
    w = dense.work[np.arange(dense.n), dense.dev_class[dev]]
    out = np.zeros(dense.D * P)
    np.add.at(out, dev * P + ph, w)
    return out


def memory_used(dense: Dense, dev: np.ndarray) -> np.ndarray:
    return np.bincount(dev, weights=dense.params, minlength=dense.D)


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

def _label_bits(dense: Dense, dev: np.ndarray, training: bool) -> np.ndarray:
    return dev * 2 + dense.backward.astype(np.int64) if training else dev


def non_contiguous(dense: Dense, dev: np.ndarray, training: bool) -> list[tuple[int, int]]:
    """(label, node) pairs where a path leaves a device's set and re-enters it at `node`
    (Tarnawski Def. 3.1); for training graphs, forward and backward parts separately."""
    return non_contiguous_labels(dense, _label_bits(dense, dev, training))


def non_contiguous_labels(dense: Dense, labels: np.ndarray) -> list[tuple[int, int]]:
    """(label, node) pairs where a path leaves the set of nodes with that label and
    re-enters it at `node`."""
    lab = np.asarray(labels).tolist()
    reach = [0] * dense.n  # labels whose set a path left before reaching this node
    preds = dense.preds
    bad: list[tuple[int, int]] = []
    for v in dense.topo.tolist():
        acc = 0
        for p in preds[v]:
            acc |= reach[p]
            if lab[p] != lab[v]:
                acc |= 1 << lab[p]
        reach[v] = acc
        if acc >> lab[v] & 1:
            bad.append((lab[v], v))
    return bad



def violations(spec: Spec, dense: Dense, dev: np.ndarray, units: subgraphs.SubgraphUnits | None = None) -> list[Violation]:
    """Every violated constraint. `units`: under latency, the accelerator subgraphs;
    `contiguous` then applies to each of them, not to a device's whole node set, and not to
    host devices (their nodes run independently, Tarnawski sec. 4)."""
    c, names, devices = spec.constraints, dense.names, dense.devices
    out: list[Violation] = []
    if (dev < 0).any():
        miss = tuple(names[i] for i in np.flatnonzero(dev < 0))
        return [Violation("unassigned", f"{len(miss)} node(s) have no device: {short_list(miss)}", miss)]
    cls = dense.dev_class[dev]
    unsup = ~np.isfinite(dense.work[np.arange(dense.n), cls])
    for d in np.unique(dev[unsup]):
        nodes = tuple(names[i] for i in np.flatnonzero(unsup & (dev == d)))
        out.append(Violation("unsupported", f"{short_list(nodes)} cannot run on {devices[d]} "
                             f"(no work given for class '{dense.class_names[dense.dev_class[d]]}')",
                             nodes, devices[d]))
    bad = ~dense.allowed[np.arange(dense.n), dev] & ~unsup
    for d in np.unique(dev[bad]):
        nodes = tuple(names[i] for i in np.flatnonzero(bad & (dev == d)))
        out.append(Violation("placement", f"{short_list(nodes)} may not be placed on {devices[d]} "
                             "(only/not/pin/forbid)", nodes, devices[d]))
    if c.memory == "hard":
        used = memory_used(dense, dev)
        cap = dense.memory[dense.dev_class]
        for d in np.flatnonzero(used > cap * (1 + 1e-12)):
            out.append(Violation("memory", f"{devices[d]} holds {used[d]:.6g} B, capacity "
                                 f"{cap[d]:.6g} B", device=devices[d]))
    comp = dense.colo
    split = np.flatnonzero(np.bincount(comp, minlength=dense.n) > 1)
    for r in split:
        members = np.flatnonzero(comp == r)
        if len(np.unique(dev[members])) > 1:
            nodes = tuple(names[i] for i in members)
            out.append(Violation("colocate", f"colocated nodes {short_list(nodes)} are on "
                                 f"{len(np.unique(dev[members]))} different devices", nodes))
    training = spec.graph.is_training
    if c.contiguous and units is not None:  # latency: each accelerator subgraph (Fig. 3: i = 1..k, not CPUs)
        out += _subgraphs_contiguous(dense, units)
    elif c.contiguous:
        seen: set[int] = set()
        for lab, v in non_contiguous(dense, dev, training):
            if lab in seen:
                continue
            seen.add(lab)
            d = lab // 2 if training else lab
            part = (" (backward part)" if lab % 2 else " (forward part)") if training else ""
            out.append(Violation("contiguous", f"{devices[d]}{part} is not contiguous: a path "
                                 f"leaves it and comes back at {names[v]}", (names[v],), devices[d]))
    if c.acyclic:
        lab = _label_bits(dense, dev, training)
        cross = lab[dense.src] != lab[dense.dst]
        k = dense.D * (2 if training else 1)
        cyc = quotient_cycle(k, np.stack([lab[dense.src][cross], lab[dense.dst][cross]], axis=1))
        if cyc:
            txt = " -> ".join(devices[x // 2 if training else x] for x in cyc)
            out.append(Violation("acyclic", f"the stages form a cycle: {txt}"))
    if c.max_stages is not None:
        used_devs = len(np.unique(dev))
        if used_devs > c.max_stages:
            out.append(Violation("stages", f"{used_devs} devices used, at most {c.max_stages} allowed"))
    return out


def _subgraphs_contiguous(dense: Dense, u: subgraphs.SubgraphUnits) -> list[Violation]:
    """Def. 3.1 for each accelerator subgraph: one violation per broken subgraph."""
    out = []
    seen: set[int] = set()
    for lab, v in non_contiguous_labels(dense, u.of_node):
        if lab in seen or lab >= u.A:
            continue
        seen.add(lab)
        d = dense.devices[u.device[lab]]
        what = f"{d} subgraph {u.rank[lab]}" if (u.device == u.device[lab]).sum() > 1 else d
        out.append(Violation("contiguous", f"{what} is not contiguous: a path leaves it "
                             f"and comes back at {dense.names[v]}", (dense.names[v],), d))
    return out



# ------------------------------------------------------------------------ objectives

def bottleneck_loads(spec: Spec, dense: Dense, dev: np.ndarray) -> tuple[float, np.ndarray]:
    """The bottleneck objective and its load table: [D] loads, or [D, 2] forward and
    backward loads under GPipe (objective = max FW + max BW). Search kernels score moves
    with it, so they and the evaluator share one cost model."""
    ov = overflow(spec, dense, dev)
    if spec.objective.training == "gpipe":
        table = _phase_loads(spec, dense, dev, ov)
    else:
        table = combine(_compute(dense, dev), *transfer_charges(dense, dev), ov, spec.objective.overlap)
    return _max_load(table), table


def _phase_loads(spec: Spec, dense: Dense, dev: np.ndarray, ov: np.ndarray) -> np.ndarray:
    """GPipe: [D, 2] forward and backward loads; transfers go to the phase of the sender
    (out) or consumer (in), overflow to both."""
    ph = dense.backward.astype(np.int64)
    comp2 = _compute(dense, dev, ph).reshape(-1, 2)
    in2, out2 = (x.reshape(-1, 2) for x in transfer_charges(dense, dev, ph))
    return np.stack([combine(comp2[:, p], in2[:, p], out2[:, p], ov, spec.objective.overlap) for p in (0, 1)],
                    axis=1)


def _max_load(table: np.ndarray) -> float:
    """Max load, or max FW + max BW for a [D, 2] table."""
    return float(table.max(axis=0).sum()) if table.shape[0] else 0.0


def _bottleneck(spec: Spec, dense: Dense, dev: np.ndarray) -> tuple[float, dict, dict]:
    obj = spec.objective
    ov = overflow(spec, dense, dev)
    comp = _compute(dense, dev)
    inn, out = transfer_charges(dense, dev)
    load = combine(comp, inn, out, ov, obj.overlap)
    parts = {d: {"compute": comp[j], "in": inn[j], "out": out[j], "overflow": ov[j]}
             for j, d in enumerate(dense.devices)}
    table = load
    if obj.training == "gpipe":
        table = _phase_loads(spec, dense, dev, ov)
        for j, d in enumerate(dense.devices):
            parts[d].update(fw=table[j, 0], bw=table[j, 1])
    return _max_load(table), {d: float(x) for d, x in zip(dense.devices, load)}, parts


def _latency(spec: Spec, dense: Dense, dev: np.ndarray, u: subgraphs.SubgraphUnits
             ) -> tuple[float, dict, dict, list[Violation]]:
    """Tarnawski sec. 4 on units (core/subgraphs.py): per device, its subgraphs' compute,
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
    return s.value, loads, parts, viol



def evaluate(spec: Spec, assignment: np.ndarray, subgraph: np.ndarray | None = None) -> Evaluation:
    """Score an assignment (int array: node index -> device index, -1 = unassigned). Under
    latency, `subgraph` numbers each accelerator node's subgraph (core/subgraphs.py); without
    it they are derived."""
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
        value, loads, parts = _bottleneck(spec, dense, dev)
    else:
        value, loads, parts, extra = _latency(spec, dense, dev, units)
        viol += extra
    used = memory_used(dense, dev)
    for j, d in enumerate(dense.devices):
        parts[d]["memory"] = float(used[j])
    return Evaluation(value, spec.objective.sense, _unit(spec), loads, parts, tuple(viol), sub)


def _unit(spec: Spec) -> str:
    return "samples/s" if spec.objective.kind == "throughput" else "ms"

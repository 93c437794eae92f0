"""Every violated constraint of an assignment (node -> device): placement, memory,
colocation, contiguity (Tarnawski Def. 3.1), acyclic quotient (Archer sec. 2), stages,
latency subgraphs. The evaluator (evaluator/evaluate.py) and the schedule checks
(evaluator/schedule_checks.py) both call it."""
from __future__ import annotations

import numpy as np
from partdsl.core.dense import Dense, group_runs
from partdsl.core.evaluation import Violation, short_list
from partdsl.core.graphs import stage_cycle, stage_labels
from partdsl.core.ir import Spec
from partdsl.evaluator import activations, interleave, subgraphs


def memory_used(dense: Dense, dev: np.ndarray) -> np.ndarray:
    """[D] bytes per device: its parameters, each shared weight its nodes read once, its
    nodes' stashes once per micro-batch in flight under 1F1B, and its peak live activations
    under `activations` (Archer eq. 2, evaluator/activations.py)."""
    used = np.bincount(dev, weights=dense.params, minlength=dense.D)
    if dense.shared is not None:
        used = used + dense.shares_on(dev)
    if dense.stashed is not None:
        used = used + np.bincount(dev, weights=dense.stashed, minlength=dense.D) * activations.in_flight(dense, dev)
    if not dense.activations:
        return used
    return used + activations.peak(dense, dev) + (activations.stash(dense, dev) if dense.stash else 0.0)


def non_contiguous(dense: Dense, dev: np.ndarray) -> list[tuple[int, int]]:
    """(label, node) pairs where a path leaves a stage's set and re-enters it at `node`
    (Tarnawski Def. 3.1): a device's, or for training graphs its forward and backward parts
    separately (core/graphs.stage_labels)."""
    return non_contiguous_labels(dense, stage_labels(dense, dev)[0])


def over_capacity(dense: Dense, used: np.ndarray, held: str = "") -> list[Violation]:
    """A memory violation for each device holding more bytes than its capacity (a relative
    1e-12 over it is rounding); `held` says what the bytes are. Assignments and schedules
    (evaluator/schedule_checks.py) alike."""
    cap = dense.memory[dense.dev_class]
    return [Violation("memory", f"{dense.devices[d]} holds {used[d]:.6g} B{held}, capacity {cap[d]:.6g} B",
                      device=dense.devices[d]) for d in np.flatnonzero(used > cap * (1 + 1e-12))]


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
    for d in np.unique(dev[unsup]) if unsup.any() else ():
        nodes = tuple(names[i] for i in np.flatnonzero(unsup & (dev == d)))
        out.append(Violation("unsupported", f"{short_list(nodes)} cannot run on {devices[d]} "
                             f"(no work given for class '{dense.class_names[dense.dev_class[d]]}')",
                             nodes, devices[d]))
    bad = ~dense.allowed[np.arange(dense.n), dev] & ~unsup
    for d in np.unique(dev[bad]) if bad.any() else ():
        nodes = tuple(names[i] for i in np.flatnonzero(bad & (dev == d)))
        out.append(Violation("placement", f"{short_list(nodes)} may not be placed on {devices[d]} "
                             "(only/not/pin/forbid)", nodes, devices[d]))
    if c.memory == "hard":
        out += over_capacity(dense, memory_used(dense, dev))
    out += _colocation(dense, dev)
    training = spec.graph.is_training
    if c.contiguous and units is not None:  # latency: each accelerator subgraph (Fig. 3: i = 1..k, not CPUs)
        out += _subgraphs_contiguous(dense, units)
    elif c.contiguous:
        seen: set[int] = set()
        for lab, v in non_contiguous(dense, dev):
            if lab in seen:
                continue
            seen.add(lab)
            d = lab // 2 if training else lab
            part = (" (backward part)" if lab % 2 else " (forward part)") if training else ""
            out.append(Violation("contiguous", f"{devices[d]}{part} is not contiguous: a path "
                                 f"leaves it and comes back at {names[v]}", (names[v],), devices[d]))
    if c.acyclic:
        cyc = stage_cycle(dense, dev)
        if cyc:
            txt = " -> ".join(devices[x // 2 if training else x] for x in cyc)
            out.append(Violation("acyclic", f"the stages form a cycle: {txt}"))
    if c.interleave > 1:
        out += interleave.violations(dense, dev, c.interleave)
    if c.max_stages is not None:
        used_devs = len(np.unique(dev))
        if used_devs > c.max_stages:
            out.append(Violation("stages", f"{used_devs} devices used, at most {c.max_stages} allowed"))
    return out


def _colocation(dense: Dense, dev: np.ndarray) -> list[Violation]:
    """One violation per colocation group on more than one device. Linear: a node off its
    group's representative (the group's least index) marks the group, and one sort gives
    the members (a scan per group took 0.4 s an evaluation at 40,000 nodes, 20,000 groups)."""
    comp = dense.colo
    off = dev[comp] != dev
    if not off.any():
        return []
    order, starts = group_runs(comp)
    ends = np.r_[starts[1:], len(order)]
    first = comp[order[starts]]  # each run's group
    out = []
    for k in np.flatnonzero(np.isin(first, comp[off])):
        members = order[starts[k]:ends[k]]
        nodes = tuple(dense.names[i] for i in members)
        out.append(Violation("colocate", f"colocated nodes {short_list(nodes)} are on "
                             f"{len(np.unique(dev[members]))} different devices", nodes))
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

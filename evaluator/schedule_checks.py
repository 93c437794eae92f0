"""Every violated constraint of a timed schedule (core/schedule.py; DiviML eqs. 1-7)."""
from __future__ import annotations

import numpy as np
from partdsl.core.dense import group_runs
from partdsl.core.ir import Spec
from partdsl.core.schedule import Schedule

SPLIT_FREE = ("contiguous", "acyclic", "stages")  # device-level constraints, checked on unsplit schedules


def _interleaved(s: Schedule, start: np.ndarray, finish: np.ndarray, eps: float) -> list[tuple[int, int, int]]:
    """(device, node, another node's piece) for each share of a node, in pieces on one
    device, that another node's piece starts inside: by device, node; the pieces starting
    in (lo + eps, hi - eps) are counted by binary search over the device's sorted starts,
    less the share's own, so the check is O(P log P) (a scan per share was quadratic: 6.7 s
    per evaluation of a 5,000-task schedule). A piece starting at the share's first instant
    runs before it: one of zero length does not interleave, a longer one is an overlap."""
    if not s.pieces:
        return []
    dev = np.fromiter((p.device for p in s.pieces), np.int64, len(s.pieces))
    node = np.fromiter((p.node for p in s.pieces), np.int64, len(s.pieces))
    out = []
    for d in np.unique(dev).tolist():
        on = np.flatnonzero(dev == d)
        order = on[np.argsort(start[on], kind="stable")]
        starts = start[order]
        nodes, inv, counts = np.unique(node[on], return_inverse=True, return_counts=True)
        runs, firsts = group_runs(inv)  # the device's pieces of each node (a scan per node is quadratic)
        for g in np.flatnonzero(counts > 1).tolist():
            mine = on[runs[firsts[g]:firsts[g] + counts[g]]]
            lo, hi = start[mine].min(), finish[mine].max()
            between = np.searchsorted(starts, hi - eps, "left") - np.searchsorted(starts, lo + eps, "right")
            own = int(((start[mine] > lo + eps) & (start[mine] < hi - eps)).sum())
            if between > own:
                inside = order[(starts > lo + eps) & (starts < hi - eps)]
                out.append((d, int(nodes[g]), int(inside[node[inside] != nodes[g]][0])))
    return out


def violations(spec: Spec, s: Schedule, preds: list[list[tuple[int, float]]], start: np.ndarray,
               finish: np.ndarray, share_end: np.ndarray) -> list:
    from partdsl.core.evaluation import Violation, short_list
    from partdsl.evaluator.violations import over_capacity
    from partdsl.evaluator.violations import violations as assignment_violations

    dense = spec.dense
    names, devices = dense.names, dense.devices
    L = s.batch
    done = finish[np.isfinite(finish)]  # relative to the schedule's own time scale (an absolute
    eps = 1e-9 * float(np.max(np.abs(done), initial=0.0))  # 1e-9 ms hides overlaps of 1e-60 ms tasks)
    out: list = []
    count = np.zeros((dense.n, L), dtype=np.int64)
    for p in s.pieces:
        count[p.node, list(p.samples)] += 1
    bad = np.flatnonzero((count != 1).any(axis=1))
    if len(bad):
        nodes = tuple(names[v] for v in bad)
        v = bad[0]
        miss, twice = np.flatnonzero(count[v] == 0), np.flatnonzero(count[v] > 1)
        what = (f"sample {miss[0]} of {names[v]} runs nowhere" if len(miss)
                else f"sample {twice[0]} of {names[v]} runs twice")
        out.append(Violation("samples", f"each sample of each node must run exactly once: {what}"
                             + (f" ({len(bad)} nodes: {short_list(nodes)})" if len(bad) > 1 else ""), nodes))
    for kind, test, why in (
            ("unsupported", lambda k, p: not np.isfinite(finish[k]), "no work given for its class at that batch"),
            # a piece that cannot run at all is "unsupported" only, not also misplaced
            ("placement", lambda k, p: np.isfinite(finish[k]) and not dense.allowed[p.node, p.device],
             "only/not/pin/forbid"),
            ("batch", lambda k, p: _unsupported_size(spec, p.device, p.size), "batch size not supported")):
        hit = [(k, p) for k, p in enumerate(s.pieces) if test(k, p)]
        for d in sorted({p.device for _, p in hit}):
            nodes = tuple(dict.fromkeys(names[p.node] for _, p in hit if p.device == d))
            sizes = sorted({p.size for _, p in hit if p.device == d})
            extra = f" (pieces of {', '.join(map(str, sizes))}; supported: " \
                    f"{', '.join(map(str, spec.platform.classes[dense.dev_class[d]].batches))})" if kind == "batch" else ""
            out.append(Violation(kind, f"{short_list(nodes)} cannot run on {devices[d]} ({why}){extra}", nodes,
                                 devices[d]))
    late = [k for k in range(len(s.pieces))  # (an input that never finishes is reported as unsupported)
            if any(start[k] + eps < share_end[h] + t for h, t in preds[k] if np.isfinite(share_end[h] + t))]
    if late:
        q = s.pieces[late[0]]
        out.append(Violation("precedence", f"{names[q.node]} on {devices[q.device]} starts at {start[late[0]]:.6g} ms, "
                             "before all its inputs have arrived"
                             + (f" ({len(late)} such pieces)" if len(late) > 1 else ""),
                             tuple(dict.fromkeys(names[s.pieces[k].node] for k in late))))
    for d in range(dense.D):
        on = sorted((k for k, p in enumerate(s.pieces) if p.device == d), key=lambda k: (start[k], finish[k]))
        clash = [(a, b) for a, b in zip(on, on[1:]) if start[b] + eps < finish[a]]
        if clash:
            a, b = clash[0]
            out.append(Violation("overlap", f"{devices[d]} runs {names[s.pieces[a].node]} and "
                                 f"{names[s.pieces[b].node]} at the same time (at {start[b]:.6g} ms)",
                                 (names[s.pieces[a].node], names[s.pieces[b].node]), devices[d]))
    for d, v, other in _interleaved(s, start, finish, eps):  # a device runs its share of a node in one go
        out.append(Violation("block", f"{devices[d]} runs {names[s.pieces[other].node]} between the "  # (eq. 5)
                             f"batches of {names[v]}: a device runs its share of a node in one go",
                             (names[v], names[s.pieces[other].node]), devices[d]))
    if spec.constraints.memory != "ignore":
        out += over_capacity(dense, memory(spec, s), " (inputs and outputs of its samples, parameters of its nodes)")
    out += _colocate(spec, s)
    out += _granularity(spec, s)
    c = spec.constraints
    if c.contiguous or c.acyclic or c.max_stages is not None:
        dev = s.node_devices(dense.n)
        if (dev < 0).any():
            split = tuple(names[v] for v in np.flatnonzero(dev < 0))
            out.append(Violation("split", f"{short_list(split)} run on several devices, but contiguous/acyclic/stages "
                                 "constrain one device per node", split))
        else:
            out += [v for v in assignment_violations(spec, dense, dev) if v.kind in SPLIT_FREE]
    return out


def _unsupported_size(spec: Spec, device: int, size: int) -> bool:
    sizes = spec.platform.classes[spec.dense.dev_class[device]].batches
    return bool(sizes) and size not in sizes


def sample_bytes(spec: Spec) -> np.ndarray:
    """[n]: bytes a device holds per sample of a node it runs (DiviML eq. 6): the node's
    input tensors plus its output. A tensor carrier's input is its source's output, which
    the source holds already: a carrier holds only its own tensor."""
    dense = spec.dense
    held = dense.out_bytes.astype(float).copy()
    keep = dense.tensor_source[dense.dst] < 0  # a carrier's input is the tensor it carries
    np.add.at(held, dense.dst[keep], dense.out_bytes[dense.src[keep]])
    return held


def memory(spec: Spec, s: Schedule) -> np.ndarray:
    """Bytes per device (DiviML eq. 6): (input + output tensors) per sample held, plus the
    parameters of each node with a piece there."""
    dense = spec.dense
    per_sample = sample_bytes(spec)
    used = np.zeros(dense.D)
    seen: set[tuple[int, int]] = set()
    for p in s.pieces:
        used[p.device] += per_sample[p.node] * p.size
        if (p.node, p.device) not in seen:
            seen.add((p.node, p.device))
            used[p.device] += dense.params[p.node]
    return used


def _colocate(spec: Spec, s: Schedule) -> list:
    """Colocated nodes run each sample on one device."""
    from partdsl.core.evaluation import Violation, short_list

    dense = spec.dense
    grouped = np.bincount(dense.colo, minlength=dense.n)[dense.colo] > 1  # a node alone runs a sample once
    where: dict[tuple[int, int], set[int]] = {}
    for p in s.pieces:
        if not grouped[p.node]:
            continue
        for x in p.samples:
            where.setdefault((int(dense.colo[p.node]), x), set()).add(p.device)
    out = []
    for r in sorted({r for (r, _), devs in where.items() if len(devs) > 1}):
        nodes = tuple(dense.names[v] for v in np.flatnonzero(dense.colo == r))
        out.append(Violation("colocate", f"colocated nodes {short_list(nodes)} run a sample on different devices", nodes))
    return out


def _granularity(spec: Spec, s: Schedule) -> list:
    """`split K`: each node's samples go to devices in K equal chunks (samples c*L/K ..
    (c+1)*L/K - 1 on one device); how a device batches what it holds is free."""
    from partdsl.core.evaluation import Violation, short_list

    dense = spec.dense
    K = spec.objective.split
    size = max(s.batch // K, 1)
    where: dict[tuple[int, int], set[int]] = {}
    for p in s.pieces:
        for x in p.samples:
            where.setdefault((p.node, x // size), set()).add(p.device)
    bad = tuple(dict.fromkeys(dense.names[v] for (v, _), devs in where.items() if len(devs) > 1))
    if not bad:
        return []
    return [Violation("granularity", f"{short_list(bad)} split a chunk of {size} sample(s) over devices: with "
                      f"batch {s.batch} split {K}, each chunk of {size} runs on one device", bad)]

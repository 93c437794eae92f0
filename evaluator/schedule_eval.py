"""The schedule evaluator (DiviML sec. IV-A; the semantics are in core/schedule.py): the
one scorer of `minimize latency by tasks` and `maximize throughput batch L`, list
scheduling of a schedule's pieces, and the timeline drawn by `part plot`."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np
from partdsl.core.dense import INF, work_time
from partdsl.core.ir import Spec
from partdsl.core.schedule import Schedule
from partdsl.evaluator import levels


def transfer_time(spec: Spec, node: int, a: int, b: int) -> float:
    """One input's tensor of `node` from device a to device b (eq. 3): nothing on one device,
    over their direct link if there is one, else out to host memory and back in, over the
    fabrics between them on a hierarchical platform (evaluator/levels.pair_ms)."""
    return levels.pair_ms(spec.dense, node, a, b)


@dataclass
class _Timing:
    """Per-piece times and transfers of a schedule, shared by list scheduling and checks.
    A share is what a device runs of a node (its pieces, in one go); its outputs are ready
    when the share ends."""

    duration: np.ndarray
    share: np.ndarray  # piece -> its share
    preds: list[list[tuple[int, float]]]  # piece -> (predecessor's share, one input's transfer ms)
    order: list[int] = field(default_factory=list)  # pieces, nodes in topological order

    def share_ends(self, finish: np.ndarray) -> np.ndarray:
        end = np.zeros(int(self.share.max(initial=-1)) + 1)
        np.maximum.at(end, self.share, finish)
        return end


def _timing(spec: Spec, s: Schedule) -> _Timing:
    dense = spec.dense
    cls = dense.dev_class
    duration = np.array([work_time(spec.graph.nodes[p.node], dense.class_names[cls[p.device]],
                                   spec.platform.classes[cls[p.device]].speed, p.size) for p in s.pieces])
    ids: dict[tuple[int, int], int] = {}
    share = np.array([ids.setdefault((p.node, p.device), len(ids)) for p in s.pieces], dtype=np.int64)
    held: list[set[int]] = [set() for _ in ids]
    for k, p in enumerate(s.pieces):
        held[share[k]].update(p.samples)
    of_node: list[list[int]] = [[] for _ in range(dense.n)]
    where = [0] * len(ids)
    for (v, dev), h in ids.items():
        of_node[v].append(h)
        where[h] = dev
    preds: list[list[tuple[int, float]]] = [[] for _ in s.pieces]
    for k, q in enumerate(s.pieces):
        mine = held[share[k]]  # eq. 3 is per share: every piece of a share waits for all the share's inputs
        for u in dense.preds[q.node]:
            for h in of_node[u]:  # every share of a predecessor; a transfer where the shares have a sample in common
                shared = not mine.isdisjoint(held[h])
                preds[k].append((h, transfer_time(spec, u, where[h], q.device) if shared else 0.0))
    by_node: list[list[int]] = [[] for _ in range(dense.n)]
    for k, p in enumerate(s.pieces):
        by_node[p.node].append(k)
    order = [k for v in dense.topo.tolist() for k in by_node[v]]
    return _Timing(duration, share, preds, order)


def list_schedule(spec: Spec, s: Schedule, node_order: Sequence[int] | None = None,
                  piece_order: Sequence[int] | None = None, release: np.ndarray | None = None) -> Schedule:
    """Start times for a schedule without them: pieces in topological order of their
    nodes (`node_order`, default the graph's; a node's pieces in the order given), or in
    `piece_order` (which must respect precedence), each as early as its inputs and its
    device allow, and not before release[node, device] if given."""
    tm = _timing(spec, s)
    if piece_order is not None:
        tm.order = list(piece_order)
    elif node_order is not None:
        rank = {v: i for i, v in enumerate(node_order)}
        tm.order.sort(key=lambda k: rank[s.pieces[k].node])  # stable: a node's pieces keep their order
    start = np.zeros(len(s.pieces))
    free = np.zeros(spec.dense.D)
    end = np.zeros(len(tm.share) and int(tm.share.max()) + 1)
    for k in tm.order:
        ready = max((end[h] + t for h, t in tm.preds[k]), default=0.0)
        d = s.pieces[k].device
        start[k] = max(ready, free[d], 0.0 if release is None else float(release[s.pieces[k].node, d]))
        free[d] = start[k] + tm.duration[k]
        end[tm.share[k]] = max(end[tm.share[k]], free[d])
    return replace(s, pieces=tuple(replace(p, start=float(start[k])) for k, p in enumerate(s.pieces)))


def evaluate_schedule(spec: Spec, s: Schedule):  # type: ignore[no-untyped-def]  # -> Evaluation
    """Score a schedule (list-scheduled first if it has no times) and name every
    violation. Returns core.evaluate.Evaluation with the timed schedule."""
    from partdsl.core.evaluation import Evaluation
    from partdsl.evaluator.schedule_checks import violations

    if not s.timed:
        s = list_schedule(spec, s)
    dense = spec.dense
    tm = _timing(spec, s)
    start = np.array([p.start for p in s.pieces], dtype=float)
    finish = start + tm.duration
    viol = violations(spec, s, tm.preds, start, finish, tm.share_ends(finish))
    C = float(finish.max()) if len(finish) else 0.0
    value = as_objective(spec, C)
    busy = np.zeros(dense.D)
    last = np.zeros(dense.D)
    for k, p in enumerate(s.pieces):
        busy[p.device] += tm.duration[k]
        last[p.device] = max(last[p.device], finish[k])
    from partdsl.evaluator.schedule_checks import memory

    used = memory(spec, s)
    parts = {d: {"busy": float(busy[j]), "finish": float(last[j]), "memory": float(used[j])}
             for j, d in enumerate(dense.devices)}
    unit = spec.objective.unit
    return Evaluation(value, spec.objective.sense, unit, {d: float(b) for d, b in zip(dense.devices, busy)},
                      parts, tuple(viol), schedule=s)


def timeline(spec: Spec, s: Schedule) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int, float, float]]]:
    """For pictures: each piece's start and finish (list-scheduled first if untimed), and
    each transfer as (from device, to device, start, end): it starts when the sending
    share ends, one input's transfer time long."""
    if not s.timed:
        s = list_schedule(spec, s)
    tm = _timing(spec, s)
    start = np.array([p.start for p in s.pieces], dtype=float)
    finish = start + tm.duration
    ends = tm.share_ends(finish)
    dev_of_share = np.zeros(len(ends), dtype=np.int64)
    dev_of_share[tm.share] = [p.device for p in s.pieces]
    moves = {(int(dev_of_share[h]), p.device, float(ends[h]), float(ends[h] + ms))
             for k, p in enumerate(s.pieces) for h, ms in tm.preds[k] if ms > 0 and dev_of_share[h] != p.device}
    return start, finish, sorted(moves, key=lambda m: m[2])


def as_objective(spec: Spec, C: float) -> float:
    """A makespan C (ms) as the schedule objective's value: C under `latency by tasks`,
    L / C samples/s under `throughput batch L` (0 for a schedule that never ends)."""
    if spec.objective.kind != "throughput":
        return C
    return 0.0 if not np.isfinite(C) else (spec.objective.batch / C * 1e3 if C > 0 else INF)


def as_makespan(spec: Spec, value: float) -> float:
    """The inverse of as_objective: a schedule objective's value as a makespan (ms)."""
    if spec.objective.kind != "throughput":
        return value
    return spec.objective.batch / value * 1e3 if value > 0 else INF

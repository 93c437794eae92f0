"""What each device did, from one evaluation: the one record behind the CLI's plan table,
the HTML report's plan table and the picture's legend, so that they cannot disagree
(issue 76: a host CPU's row said 0 while the Gantt showed it busy; devices that ran only
pieces of split nodes said "nodes 0"). And the pipeline a bottleneck plan makes: its
stages in order, and the bubble of a step of `m` micro-batches under the schedule the
spec declares (GPipe flushes after every step; PipeDream's 1F1B does not)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from partdsl.core.evaluation import Evaluation
from partdsl.core.ir import Spec
from partdsl.core.layers import layer_of
from partdsl.core.ranges import compact
from partdsl.evaluator import interleave
from partdsl.evaluator.evaluate import transfer_bytes


@dataclass(frozen=True)
class DeviceRecord:
    device: str
    nodes: int  # operators with all or part of their samples here (tensor carriers not counted)
    layers: tuple[str, ...]  # its operators' layers (core/layers.py), in topological order, as ranges
    first: int  # topological position of its first operator (stage order); -1: none
    parts: dict[str, float] = field(default_factory=dict)  # the evaluator's: compute, in, out, fw, bw, busy, finish
    load: float = 0.0
    memory: float = 0.0  # bytes
    capacity: float = math.inf  # bytes, its class's memory
    bytes_in: float | None = None  # None: not known (no tensor sizes, or nodes split over several devices)
    bytes_out: float | None = None
    forward: float | None = None  # training: compute ms of its forward operators (None: not training)
    backward: float | None = None  # and of its backward operators

    @property
    def used(self) -> bool:
        return self.nodes > 0

    @property
    def memory_share(self) -> float:
        """memory / capacity; NaN when the capacity is unlimited."""
        return self.memory / self.capacity if math.isfinite(self.capacity) and self.capacity > 0 else math.nan


def device_records(spec: Spec, ev: Evaluation, assignment: np.ndarray) -> list[DeviceRecord]:
    """One record per device, in the platform's order. `assignment`: [n] device per node,
    carriers included, -1 where a node is split over devices (its pieces are in
    `ev.schedule`)."""
    d = spec.dense
    operator = np.ones(d.n, dtype=bool) if d.tensor_source is None else d.tensor_source < 0
    on: list[set[int]] = [set() for _ in range(d.D)]
    for v in np.flatnonzero(operator & (assignment >= 0)).tolist():
        on[int(assignment[v])].add(v)
    if ev.schedule is not None:
        for p in ev.schedule.pieces:
            if operator[p.node]:
                on[p.device].add(p.node)
    split = bool((assignment[operator] < 0).any())
    inn, out = transfer_bytes(d, assignment) if d.sized and not split else (None, None)
    pos = d.topo_position
    nodes = spec.graph.nodes
    fw = bw = None
    if spec.objective.training is not None and not split:
        whole = operator & (assignment >= 0)
        w = np.where(whole, d.work[np.arange(d.n), d.dev_class[np.maximum(assignment, 0)]], 0.0)
        fw, bw = (np.bincount(assignment[whole & m], weights=w[whole & m], minlength=d.D)[:d.D]
                  for m in (~d.backward, d.backward))
    records = []
    for j, name in enumerate(d.devices):
        members = sorted(on[j], key=lambda v: pos[v])
        p = ev.parts.get(name, {})
        records.append(DeviceRecord(
            device=name, nodes=len(members),
            layers=tuple(compact(layer_of(nodes[v].name, nodes[v].group) for v in members)),
            first=int(pos[members[0]]) if members else -1,
            parts={k: float(x) for k, x in p.items() if k != "memory"},
            load=float(ev.loads.get(name, 0.0)), memory=float(p.get("memory", 0.0)),
            capacity=float(d.memory[d.dev_class[j]]),
            bytes_in=None if inn is None else float(inn[j]), bytes_out=None if out is None else float(out[j]),
            forward=None if fw is None else float(fw[j]), backward=None if bw is None else float(bw[j])))
    return records


def memory_notes(spec: Spec, assignment: np.ndarray) -> list[str]:
    """What a device's memory holds beyond its parameters, said in words: each shared
    weight's copies (`shares`), and the micro-batches in flight whose stashes each device
    keeps under 1F1B (issue 71, defects 6 and 8)."""
    from partdsl.core.quantities import human_size
    from partdsl.evaluator.activations import in_flight

    d, out = spec.dense, []
    if d.shared is not None:
        sh = d.shared
        for w, name in enumerate(sh.names):
            readers = sh.node[sh.weight == w]
            devs = [d.devices[k] for k in np.unique(assignment[readers]) if k >= 0]
            who = ", ".join(spec.graph.nodes[v].name for v in readers[:4]) + (", ..." if len(readers) > 4 else "")
            held = f"one copy, on {devs[0]}" if len(devs) == 1 else f"a copy on each of {', '.join(devs)}"
            out.append(f"shared weight {name} ({human_size(float(sh.size[w]))}, read by {who}): {held}")
    if d.stashed is not None:
        fly = in_flight(d, assignment)
        placed = assignment >= 0
        kept = np.bincount(assignment[placed], weights=d.stashed[placed], minlength=d.D)
        used = np.flatnonzero(kept > 0).tolist()
        out.append("stashes held under 1F1B, micro-batches in flight: "
                   + ", ".join(f"{d.devices[k]} {int(fly[k])}" for k in sorted(used, key=lambda k: -fly[k])))
    return out


@dataclass(frozen=True)
class Pipeline:
    """A bottleneck plan's stages (devices in the order their first operator runs) and
    the time of one step of `micro_batches` micro-batches from an empty pipeline:
    sum of the stage times + (m - 1) x the slowest (the fill, the steady state, the drain)."""

    stages: tuple[str, ...]
    times: tuple[float, ...]  # ms per micro-batch on each stage (its load)
    micro_batches: int
    flush: bool  # the schedule empties the pipeline after each step (GPipe, 1F1B as Megatron runs it)
    back_edges: int = 0  # forward edges from a later stage to an earlier one: not a linear pipeline
    virtual: int = 1  # chunks per stage (`interleave V`): the fill and drain pass chunks of 1 / V of a stage

    @property
    def step_ms(self) -> float:
        """m x the slowest stage, and the fill and drain: the other stages' times, in chunks
        of 1 / V of them when interleaved (Narayanan et al. 2021, sec. 2.2: the bubble
        shrinks V times)."""
        top = max(self.times, default=0.0)
        return self.micro_batches * top + (sum(self.times) - top) / self.virtual

    @property
    def bubble(self) -> float:
        """The share of the stages' time idle in one step: 1 - m x sum(t) / (S x step)."""
        S, step = len(self.times), self.step_ms
        return 1.0 - self.micro_batches * sum(self.times) / (S * step) if S and step > 0 else 0.0

    @property
    def steady_idle(self) -> float:
        """The share idle once the pipeline is full (stage imbalance): 1 - mean / max."""
        top = max(self.times, default=0.0)
        return 1.0 - sum(self.times) / (len(self.times) * top) if top > 0 else 0.0

    @property
    def per_second(self) -> float:
        """Micro-batches per second in the steady state (1 / the slowest stage)."""
        top = max(self.times, default=0.0)
        return 1e3 / top if top > 0 else math.inf


def default_micro_batches(stages: int) -> int:
    """4 per stage, the rule of thumb that keeps a balanced flush bubble under 20%."""
    return max(4 * stages, 1)


def pipeline(spec: Spec, records: list[DeviceRecord], assignment: np.ndarray,
             micro_batches: int | None = None) -> Pipeline | None:
    """The pipeline of a bottleneck plan (None under other objectives), its stages in the
    order their first operators run; `back_edges` counts the forward edges (backward
    nodes' own aside) that go from a later stage to an earlier one."""
    if spec.objective.kind != "bottleneck":
        return None
    used = sorted((r for r in records if r.used), key=lambda r: r.first)
    m = micro_batches or default_micro_batches(len(used))
    d = spec.dense
    stage = np.full(d.D + 1, -1)
    for i, r in enumerate(used):
        stage[d.devices.index(r.device)] = i
    a, b = assignment[d.src], assignment[d.dst]
    fw = ~d.backward[d.src] & ~d.backward[d.dst] & (a >= 0) & (b >= 0)
    virtual = 1
    if spec.constraints.interleave > 1 and (assignment >= 0).all():  # stages are chunks: back edges go to earlier ones
        order, chunk = interleave.chunks(d, assignment)
        back = int((chunk[d.src][fw] > chunk[d.dst][fw]).sum())
        virtual = -(-(int(chunk.max()) + 1) // max(len(order), 1))
    else:
        back = int((stage[a[fw]] > stage[b[fw]]).sum())
    return Pipeline(tuple(r.device for r in used), tuple(r.load for r in used), m,
                    flush=spec.objective.training != "pipedream", back_edges=back, virtual=virtual)

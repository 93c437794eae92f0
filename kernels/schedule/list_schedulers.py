"""DiviML's list-scheduling baselines (Ghannane & Abdelfattah sec. V-A), for the schedule
objectives (`minimize latency by tasks`, `maximize throughput batch L split K`):

- `met`: each node where it runs fastest (Minimum Execution Time), in topological order;
- `eft`: DiviML's "Greedy": each node, in topological order, where it finishes earliest
  given everything placed so far;
- `heft`: Topcuoglu et al.'s HEFT: nodes by decreasing upward rank (mean time over the
  devices it may use plus the largest mean transfer + rank of a successor), each where
  it finishes earliest, in the earliest idle gap of its device that fits (insertion).

Under a batch (L > 1) these are the paper's bMET / bGreedy / bHEFT: a node's choice is a
"batch-device combination", its K chunks of L / K samples spread over devices (every
way of counting chunks per device), so data parallelism is chosen per node; MET takes
the combination whose slowest device finishes the node's own work first. Each device
runs what it holds of a node in the fastest batch sizes it supports. Colocated nodes take
the combination of the first of them placed. Under `memory hard` a combination that
would overfill a device (DiviML eq. 6: input and output tensors per sample held, each
node's parameters once per device) is taken only when no combination fits.
"""
from __future__ import annotations

import bisect
import itertools
from array import array
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np
from partdsl.core.dense import INF, work_time
from partdsl.core.events import Candidate, Progress
from partdsl.core.ir import Spec
from partdsl.core.schedule import Piece, Schedule, batch_split, runnable
from partdsl.evaluator import levels
from partdsl.evaluator.schedule_checks import sample_bytes
from partdsl.evaluator.schedule_eval import transfer_time
from partdsl.runtime.deadline import NEVER, Deadline

SCAN = 16  # gaps checked one by one; a longer tail of a device's spans is checked in one NumPy pass


class _Spans:
    """A device's busy intervals, sorted by start, as two float arrays (`array`: inserts
    move memory in C, and NumPy reads them without a copy)."""

    def __init__(self) -> None:
        self.starts = array("d")
        self.ends = array("d")

    def last_end(self) -> float:
        return self.ends[-1] if self.ends else 0.0

    def add(self, start: float, end: float) -> None:
        """Insert as `bisect.insort` does a (start, end) tuple."""
        st, en = self.starts, self.ends
        i = bisect.bisect_right(st, start)
        while i and st[i - 1] == start and en[i - 1] > end:
            i -= 1
        st.insert(i, start)
        en.insert(i, end)

    def first_gap(self, ready: float, duration: float) -> float:
        """The earliest start at or after `ready` of an idle gap that holds `duration`:
        before the first span that starts at or after `ready`, or right after a later
        span, or after the last. Compared exactly, not within a float tolerance: a piece
        that overran a gap by 1e-13 made two spans overlap, and the next piece went
        "before" the second of them while it ran (the evaluator's overlap; hypothesis)."""
        st, en = self.starts, self.ends
        n = len(st)
        # spans starting before `ready` cannot take the piece after them; they are disjoint,
        # so the last of them ends latest
        i = bisect.bisect_left(st, ready)
        t = max(ready, en[i - 1]) if i else ready
        if i == n or t + duration <= st[i]:
            return t
        if n - i <= SCAN:  # after span k, k >= i, the gap up to span k + 1
            for k in range(i, n - 1):
                if en[k] + duration <= st[k + 1]:
                    return en[k]
            return en[n - 1]
        E = np.frombuffer(en)  # views, gone before the next insert (an exported array cannot grow)
        fits = E[i:n - 1] + duration <= np.frombuffer(st)[i + 1:n]
        k = int(fits.argmax())
        return float(E[i + k] if fits[k] else E[n - 1])


@dataclass
class _Board:
    """What is placed so far: pieces with finish times, and each device's busy intervals."""

    spec: Spec
    insertion: bool
    pieces: list[Piece] = field(default_factory=list)
    finish: list[float] = field(default_factory=list)  # when each piece's outputs are ready (its share's end)
    of_node: dict[int, list[int]] = field(default_factory=dict)
    busy: dict[int, _Spans] = field(default_factory=dict)
    _memo_node: int = -1
    _memo: dict[tuple[int, tuple[int, ...]], float] = field(default_factory=dict)
    _inputs: tuple[float, list[tuple[int, int, int, int, float]]] = (0.0, [])
    _moves: dict[tuple[int, int, int], float] = field(default_factory=dict)

    def ready(self, node: int, device: int, samples: tuple[int, ...]) -> float:
        """When every predecessor's pieces have finished and the inputs of these samples can
        be on `device` (eq. 3); kept while one node's plans are tried (the same shares recur)."""
        if self._memo_node != node:
            self._memo_node, self._memo, self._moves = node, {}, {}
            self._inputs = self._pred_pieces(node)
        key = (device, samples)
        if key not in self._memo:
            self._memo[key] = self._ready(device, samples)
        return self._memo[key]

    def _pred_pieces(self, node: int) -> tuple[float, list[tuple[int, int, int, int, float]]]:
        """The latest finish of `node`'s predecessors' pieces, and each piece as (its first
        and last sample, predecessor, device, finish). A piece's samples are consecutive
        (`_plan`), so a share meets it when their ranges overlap."""
        base, rows = 0.0, []
        for u in map(int, self.spec.dense.preds[node]):
            for k in self.of_node.get(u, ()):
                p, f = self.pieces[k], self.finish[k]
                base = max(base, f)
                if p.samples:
                    rows.append((p.samples[0], p.samples[-1], u, p.device, f))
        return base, rows

    def _ready(self, device: int, samples: tuple[int, ...]) -> float:
        t, rows = self._inputs
        if not samples:
            return t
        lo, hi = samples[0], samples[-1]
        moves = self._moves
        for plo, phi, u, a, f in rows:
            if plo <= hi and lo <= phi and a != device:  # its samples' inputs move from a to `device`
                key = (u, a, device)
                if key not in moves:
                    moves[key] = transfer_time(self.spec, u, a, device)
                t = max(t, f + moves[key])
        return t

    def slot(self, device: int, ready: float, duration: float) -> float:
        """The earliest start at or after `ready`: after the device's last piece, or with
        insertion in the first idle gap that fits."""
        spans = self.busy.get(device)
        if spans is None:
            return ready
        return spans.first_gap(ready, duration) if self.insertion else max(ready, spans.last_end())

    def place(self, node: int, plan: list[tuple[int, tuple[int, ...], float]], commit: bool) -> float:
        """Pieces (device, samples, duration) of a node, each as early as possible; returns
        the node's finish (placing them for real if `commit`). A plan holds one block per
        device and a block's start depends only on its own device's spans, so a trial
        (`commit` False) reserves nothing: it copied every device's spans per trial before,
        quadratic in the number of pieces."""
        end = 0.0
        for device in dict.fromkeys(d for d, _, _ in plan):  # a device's share in one go (one block)
            block = [(samples, dur) for d, samples, dur in plan if d == device]
            total = sum(dur for _, dur in block)
            start = self.slot(device, max(self.ready(node, device, smp) for smp, _ in block), total)
            end = max(end, start + total)
            if not commit:
                continue
            self.busy.setdefault(device, _Spans()).add(start, start + total)
            t = start
            for samples, dur in block:  # a share's outputs are ready when it ends
                self.of_node.setdefault(node, []).append(len(self.pieces))
                self.pieces.append(Piece(node, device, samples, t))
                self.finish.append(start + total)
                t += dur
        return end


class _Memory:
    """Bytes held per device so far (eq. 6, as evaluator/schedule_checks.memory counts them)."""

    def __init__(self, spec: Spec) -> None:
        d = spec.dense
        self.per_sample = sample_bytes(spec)
        self.params = d.params
        hard = spec.constraints.memory == "hard"
        self.cap = d.memory[d.dev_class] * (1 + 1e-12) if hard else np.full(d.D, np.inf)
        self.used = np.zeros(d.D)

    def _adds(self, node: int, plan: list[tuple[int, tuple[int, ...], float]]) -> dict[int, float]:
        adds: dict[int, float] = {}
        for d, samples, _ in plan:
            adds[d] = adds.get(d, float(self.params[node])) + float(self.per_sample[node]) * len(samples)
        return adds

    def fits(self, node: int, plan: list[tuple[int, tuple[int, ...], float]]) -> bool:
        return all(self.used[d] + x <= self.cap[d] for d, x in self._adds(node, plan).items())

    def add(self, node: int, plan: list[tuple[int, tuple[int, ...], float]]) -> None:
        for d, x in self._adds(node, plan).items():
            self.used[d] += x


def _combos(K: int, devices: list[int]) -> Iterator[tuple[int, ...]]:
    """Chunks per device: every way to spread K chunks over the devices."""
    for cut in itertools.combinations(range(K + len(devices) - 1), len(devices) - 1):
        counts, prev = [], -1
        for c in cut + (K + len(devices) - 1,):
            counts.append(c - prev - 1)
            prev = c
        yield tuple(counts)


Shares = dict[tuple[int, int, int], list[tuple[int, float]] | None]


def _plan(spec: Spec, node: int, devices: list[int], counts: tuple[int, ...], shares: Shares
          ) -> list[tuple[int, tuple[int, ...], float]] | None:
    """Pieces of a node for chunk counts per device: consecutive samples, each device's
    share in its fastest supported batch sizes; None if a share cannot run there.
    `shares` keeps each (node, class, chunks)'s batches and their times (a node tries every
    spread of its chunks: 465 on 30 devices and 2 chunks)."""
    dense = spec.dense
    g = spec.objective.batch // spec.objective.split
    out, lo = [], 0
    for d, c in zip(devices, counts):
        if not c:
            continue
        cls = int(dense.dev_class[d])
        key = (node, cls, c)
        if key not in shares:
            k = spec.platform.classes[cls]
            sizes = batch_split(spec, node, cls, c * g)
            shares[key] = None if sizes is None else \
                [(b, work_time(spec.graph.nodes[node], k.name, k.speed, b)) for b in sizes]
        share = shares[key]
        if share is None:
            return None
        for b, t in share:
            out.append((d, tuple(range(lo, lo + b)), t))
            lo += b
    return out


def _allowed(spec: Spec) -> list[list[int]]:
    """Per node, the devices that may run it (core/schedule.runnable); all of them if none."""
    every = list(range(spec.dense.D))
    return [r or every for r in runnable(spec)]


def _upward_rank(spec: Spec) -> np.ndarray:
    """HEFT's rank: mean time of the node's whole batch over its devices, plus the largest
    mean transfer (over device pairs) + rank of a successor."""
    dense = spec.dense
    L = spec.objective.batch
    w = np.zeros(dense.n)
    for v, ds in enumerate(_allowed(spec)):
        times = []
        for d in ds:
            cls = int(dense.dev_class[d])
            sizes = batch_split(spec, v, cls, L)
            k = spec.platform.classes[cls]
            times.append(sum(work_time(spec.graph.nodes[v], k.name, k.speed, b) for b in sizes) if sizes else INF)
        finite = [t for t in times if np.isfinite(t)]
        w[v] = float(np.mean(finite)) if finite else 0.0
    c = levels.mean_pair_ms(dense)  # the mean transfer over device pairs, every node at once
    rank = np.zeros(dense.n)
    for v in dense.topo[::-1].tolist():
        succ = dense.succ_idx[dense.succ_ptr[v]:dense.succ_ptr[v + 1]]
        rank[v] = w[v] + max((c[v] + rank[s] for s in succ.tolist()), default=0.0)
    return rank


CHECK_EVERY = 64  # nodes placed between looks at the deadline


def schedule(spec: Spec, rule: str) -> Schedule:
    """One list schedule by `rule`: met | eft | heft."""
    out = schedule_until(spec, rule, NEVER)
    assert out is not None
    return out


def schedule_until(spec: Spec, rule: str, deadline: Deadline) -> Schedule | None:
    """`schedule`, or None once `deadline` passes before every node is placed (HEFT takes a
    second on a module of 941 nodes under a split batch, MILP-SPLIT's last start)."""
    dense = spec.dense
    board = _Board(spec, insertion=rule == "heft")
    if rule == "heft":
        rank = _upward_rank(spec)
        pos = dense.topo_position
        order = sorted(range(dense.n), key=lambda v: (-rank[v], pos[v]))
    else:
        order = dense.topo.tolist()
    K = spec.objective.split
    memory = _Memory(spec)
    chosen: dict[int, tuple[list[int], tuple[int, ...]]] = {}  # colocation group -> (devices, counts)
    shares: Shares = {}
    runs_on = _allowed(spec)
    for i, v in enumerate(order):
        if i % CHECK_EVERY == CHECK_EVERY - 1 and deadline.passed():
            return None
        group = int(dense.colo[v])
        devices = runs_on[v]
        options = [chosen[group]] if group in chosen else [(devices, c) for c in _combos(K, devices)]
        best, best_key = None, None
        for devs, counts in options:
            plan = _plan(spec, v, devs, counts, shares)
            if plan is None:
                continue
            if rule == "met":  # its own work only: the slowest device's share
                per: dict[int, float] = {}
                for d, _, t in plan:
                    per[d] = per.get(d, 0.0) + t
                score = max(per.values())
            else:
                score = board.place(v, plan, commit=False)
            key = (not memory.fits(v, plan), score, sum(1 for c in counts if c))  # what fits first
            if best_key is None or key < best_key:
                best, best_key = (devs, counts, plan), key
        if best is None:  # nothing runs it: all on its first device, for the evaluator to report
            devs, counts = devices[:1], (K,)
            plan = [(devs[0], tuple(range(spec.objective.batch)), INF)]
        else:
            devs, counts, plan = best
        chosen.setdefault(group, (devs, counts))
        board.place(v, plan, commit=True)
        memory.add(v, plan)
    return Schedule(tuple(board.pieces), spec.objective.batch)


def run(rule: str):  # type: ignore[no-untyped-def]
    def method(spec: Spec, seed: int = 0, deadline: Deadline = NEVER, progress=None,  # type: ignore[no-untyped-def]
               **_: object) -> Iterator:
        name = {"met": "MET", "eft": "Greedy (earliest finish)", "heft": "HEFT"}[rule]
        batched = spec.objective.kind == "throughput" and spec.objective.batch > 1
        yield Progress(f"{'b' if batched else ''}{name} list schedule")
        made = schedule_until(spec, rule, deadline)
        if made is None:
            yield Progress(f"{name}: the time limit passed before every node was placed")
            return
        yield Candidate(f"{'b' if batched else ''}{name} (DiviML sec. V-A)", schedule=made)
    return method

"""Schedules (DiviML, Ghannane & Abdelfattah sec. III-IV): each node's L samples split
into pieces, each piece a set of samples run as one batch on one device from a start
time, and the schedule evaluator, the one scorer of `minimize latency by tasks` and
`maximize throughput batch L`.

Semantics (sec. IV-A):
- every sample of every node runs in exactly one piece (eq. 1, 4); a piece's size is a
  batch size its device's class supports (eq. 5; any size if the class declares none)
  and takes the node's time for that batch size on that class (t_{i,u,l});
- a piece starts once every share of each predecessor (what a device runs of it, in one
  go) has finished, and, from a share it has a sample in common with, that sample's
  tensor has arrived (eq. 3, for every device pair and
  sample: s_{i,u} + T_{i,u} + (om_i / beta_{u,v}) (x_{j,v,l} + x_{i,u,l} - 1) <= s_{j,v}):
  one input's tensor (inputs cross separately, in parallel) over the direct link between
  the two devices if there is one, else out to and back from host memory; nothing on one
  device;
- a device runs one piece at a time (eq. 7), and its share of a node in one go (eq. 5 has
  one batch per node and device; a share that is no supported size runs as back-to-back
  batches of supported sizes, with no other node between them);
- memory (eq. 6, unless `memory ignore`): on each device, every sample it holds of a
  node keeps its input and output tensors, and every node with a piece there its
  parameters;
- colocated nodes run each sample on one device; pins and forbids apply to every piece.
The makespan C is the last finish: latency is C (ms), throughput L / C (samples/s).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping

import numpy as np
from partdsl.core.dense import INF, work_time
from partdsl.core.errors import PartError
from partdsl.core.ir import GENERIC, Node, Spec


@dataclass(frozen=True)
class Piece:
    node: int  # node index
    device: int  # device index
    samples: tuple[int, ...]  # sorted sample numbers 0..L-1
    start: float | None = None  # ms; None: list-scheduled

    @property
    def size(self) -> int:
        return len(self.samples)


@dataclass(frozen=True)
class Schedule:
    pieces: tuple[Piece, ...]
    batch: int = 1

    @property
    def timed(self) -> bool:
        return all(p.start is not None for p in self.pieces)

    def node_devices(self, n: int) -> np.ndarray:
        """The device of each node if it runs on one device only, else -1."""
        out = np.full(n, -2, dtype=np.int64)
        for p in self.pieces:
            out[p.node] = p.device if out[p.node] in (-2, p.device) else -1
        out[out == -2] = -1
        return out

    def to_json(self, spec: Spec) -> list[dict[str, Any]]:
        dense = spec.dense
        return [{"node": dense.names[p.node], "device": dense.devices[p.device],
                 "samples": _ranges(p.samples), **({} if p.start is None else {"start": p.start})}
                for p in self.pieces]


def _ranges(samples: tuple[int, ...]) -> list[list[int]]:
    """Sample numbers as half-open [lo, hi) ranges."""
    out: list[list[int]] = []
    for s in samples:
        if out and out[-1][1] == s:
            out[-1][1] = s + 1
        else:
            out.append([s, s + 1])
    return out


def from_json(spec: Spec, data: Any, where: str = "schedule") -> Schedule:
    """A schedule from its JSON form: a list of {"node", "device", "samples": [[lo, hi), ...],
    "start"?}; all pieces have a start or none has (then it is list-scheduled)."""
    dense = spec.dense
    L = spec.objective.batch
    if not isinstance(data, list) or not data:
        raise PartError(f"{where}: expected a non-empty list of pieces", None,
                        'write [{"node": "a", "device": "gpu[0]", "samples": [[0, 4]], "start": 0.0}, ...]')
    names = {x: i for i, x in enumerate(dense.names)}
    devices = {x: i for i, x in enumerate(dense.devices)}
    pieces = []
    for k, item in enumerate(data):
        at = f"{where}, piece {k + 1}"
        if not isinstance(item, Mapping) or "node" not in item or "device" not in item:
            raise PartError(f"{at}: a piece needs \"node\" and \"device\"", None,
                            '{"node": "a", "device": "gpu[0]", "samples": [[0, 4]]}')
        if item["node"] not in names:
            raise PartError(f"{at}: unknown node '{item['node']}'", None, "nodes: " + ", ".join(dense.names[:8]))
        if item["device"] not in devices:
            raise PartError(f"{at}: unknown device '{item['device']}'", None,
                            "devices: " + ", ".join(dense.devices[:8]))
        samples: list[int] = []
        for r in item.get("samples", [[0, L]]):
            if (not isinstance(r, (list, tuple)) or len(r) != 2 or not all(isinstance(x, int) for x in r)
                    or not 0 <= r[0] < r[1] <= L):
                raise PartError(f"{at}: samples must be [lo, hi) ranges within 0..{L}, got {r!r}", None,
                                f'write e.g. "samples": [[0, {L}]]')
            samples += range(r[0], r[1])
        start = item.get("start")
        if start is not None and (isinstance(start, bool) or not isinstance(start, (int, float))
                                  or not math.isfinite(start) or start < 0):
            raise PartError(f"{at}: start must be a finite number of ms, at least 0, got {start!r}", None,
                            "a schedule starts at 0 ms; or leave out every start to have it list-scheduled")
        pieces.append(Piece(names[item["node"]], devices[item["device"]], tuple(sorted(samples)),
                            None if start is None else float(start)))
    if len({p.start is None for p in pieces}) > 1:
        raise PartError(f"{where}: some pieces have a start and some do not", None,
                        "give every piece a start, or none (then they are list-scheduled in topological order)")
    return Schedule(tuple(pieces), L)


def runnable(spec: Spec) -> list[list[int]]:
    """The devices each node may run on: allowed, with work on the device's class."""
    d = spec.dense
    return [np.flatnonzero(r).tolist() for r in d.allowed & np.isfinite(d.work[:, d.dev_class])]


def batch_split(spec: Spec, node: int, cls: int, L: int) -> list[int] | None:
    """The fastest sizes to run L samples of a node on one device of a class, in batches
    the class supports: a DP over sample counts. A class that declares no sizes runs any;
    a size with no work entry costs its multiple of batch 1 (core/dense.work_time), no less
    than that many batches of 1, so only 1 and the sizes with entries are tried. The DP's
    table (up to the spec's batch) is kept per distinct (sizes, times), and those per node
    and class, across specs (a module's restricted spec has the same nodes): list
    schedulers ask for every node, class and chunk count, 28,701 times in one MILP-SPLIT
    run on DenseNet-121, 40% of its HEFT."""
    k = spec.platform.classes[cls]
    if L == 1:  # one sample: batch 1 if the class runs it (most calls; no table, no hashing the node)
        runs = (not k.batches or 1 in k.batches) and work_time(spec.graph.nodes[node], k.name, k.speed, 1) < INF
        return [1] if runs else None
    last = _split_table(*_sizes_times(spec.graph.nodes[node], k.name, k.speed, k.batches,
                                      max(L, spec.objective.batch)))
    if last[L] < 0:
        return None
    out, x = [], L
    while x:
        out.append(last[x])
        x -= last[x]
    return sorted(out, reverse=True)


@lru_cache(maxsize=1 << 16)
def _sizes_times(nd: Node, name: str, speed: float, batches: tuple[int, ...], top: int
                 ) -> tuple[tuple[int, ...], tuple[float, ...], int]:
    """The batch sizes a node may run in on a class, up to `top`, and their times."""
    if batches:
        sizes = tuple(b for b in batches if b <= top)
    else:
        sizes = tuple(sorted({1} | {w.batch for w in nd.work if w.on in (name, GENERIC) and 1 <= w.batch <= top}))
    return sizes, tuple(work_time(nd, name, speed, b) for b in sizes), top


@lru_cache(maxsize=1 << 12)
def _split_table(sizes: tuple[int, ...], times: tuple[float, ...], L: int) -> tuple[int, ...]:
    """last[x]: the last batch of the fastest way to run x samples (-1: none can)."""
    best = [0.0] + [INF] * L
    last = [0] * (L + 1)
    for x in range(1, L + 1):
        for b, tb in zip(sizes, times):
            if b <= x:
                t = best[x - b] + tb
                if t < best[x]:
                    best[x], last[x] = t, b
    return tuple(b if math.isfinite(t) else -1 for b, t in zip(last, best))


def share_times(spec: Spec) -> np.ndarray:
    """t[i, u, m]: m chunks of node i on device u in one go, in the fastest supported batches."""
    d = spec.dense
    K = spec.objective.split
    g = spec.objective.batch // K
    t = np.full((d.n, d.D, K + 1), np.inf)
    t[:, :, 0] = 0.0
    for v in range(d.n):
        for u in range(d.D):
            if not d.allowed[v, u]:
                continue
            cls = int(d.dev_class[u])
            k = spec.platform.classes[cls]
            for m in range(1, K + 1):
                sizes = batch_split(spec, v, cls, m * g)
                if sizes:
                    t[v, u, m] = sum(work_time(spec.graph.nodes[v], k.name, k.speed, q) for q in sizes)
    return t


def whole_batches(spec: Spec, dev: np.ndarray) -> Schedule:
    """An assignment as a schedule without times: each node's L samples on its device, in
    the batch sizes that run them fastest there (one piece of L where none fit)."""
    L = spec.objective.batch
    cls = spec.dense.dev_class
    pieces = []
    for v, d in enumerate(np.asarray(dev).tolist()):
        lo = 0
        for b in batch_split(spec, v, int(cls[d]), L) or [L]:
            pieces.append(Piece(v, int(d), tuple(range(lo, lo + b))))
            lo += b
    return Schedule(tuple(pieces), L)



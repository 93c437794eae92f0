"""REGAL's hardness filter (Paliwal et al.; its dataset README, "Filtering"), as Archer et
al. App. C.2 cite it: a generated graph is kept only if it has "room for improvement" on
REGAL's own task, placing and scheduling the graph on a few devices to minimize its
running time under a per-device memory limit. Room for improvement is the union of:

- BRKGA with a low fitness-evaluation limit does not fit the memory and BRKGA with a
  high limit does;
- BRKGA with the high limit runs the graph 20% faster than with the low one
  (low / high >= 1.2).

REGAL's performance model and its limits are not published with the dataset; this one
is ours, stated here. `d` devices each run one node at a time; a chromosome is 2n random
keys, the first n pick each node's device (floor(key * d)), the last n its priority. List
scheduling runs the nodes in Kahn's order by priority (O(m log n)), each at the earliest
time its device is free and its inputs have arrived (a tensor crossing devices takes its
`comm` to arrive). A tensor (its size is its `comm`) is held on its producer's device from
the producer's start until its last consumer there finishes (or its transfers out
arrive), and on each other device that reads it from the producer's finish until its last
consumer there finishes. The memory limit per device is the peak of the whole graph run
on one device in Kahn's order by node index, divided by d, plus 25%. A schedule over the
limit scores its running time plus the longest any list schedule can run (all work and
transfers) times its peak over the limit, so any schedule that fits is better.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from partdsl.core.ir import Graph
from partdsl.kernels.bottleneck.order_search import brkga_keys
from partdsl.kernels.graph.kahn_keys import KahnCSR
from partdsl.kernels.jit import njit

LOW = (10, 10)  # BRKGA (population, generations): 100 fitness evaluations
HIGH = (50, 80)  # 4,000
FASTER = 1.2
FITS = 1.0 + 1e-12
HEADROOM = 1.25  # the memory limit: a 1/d share of one device's peak, plus 25%


@dataclass(frozen=True)
class Arrays:
    """A graph as the simulator reads it: node work (its first device class's), tensor
    sizes, and its successor and predecessor lists in CSR form (`KahnCSR` of the graph and
    of its reverse; the first also orders the nodes by priority)."""
    work: np.ndarray
    size: np.ndarray
    succ: KahnCSR
    pred: KahnCSR

    @staticmethod
    def of(graph: Graph) -> Arrays:
        n = len(graph.nodes)
        e = np.array(graph.edges, dtype=np.int64).reshape(-1, 2)
        work = np.array([float(nd.work[0].time) if nd.work else 0.0 for nd in graph.nodes])
        size = np.array([float(nd.comm or 0.0) for nd in graph.nodes])
        src, dst = e[:, 0].copy(), e[:, 1].copy()
        return Arrays(work, size, KahnCSR(n, src, dst), KahnCSR(n, dst, src))

    def run(self, dev: np.ndarray, keys: np.ndarray, d: int) -> tuple[float, np.ndarray]:
        """The list schedule of placement `dev` and priorities `keys` (least first)."""
        s, p = self.succ, self.pred
        return simulate(self.work, self.size, s.ptr, s.idx, p.ptr, p.idx, dev, s.order(keys), d)


@njit
def simulate(work: np.ndarray, size: np.ndarray, sptr: np.ndarray, sidx: np.ndarray, pptr: np.ndarray,
             pidx: np.ndarray, dev: np.ndarray, order: np.ndarray, d: int) -> tuple[float, np.ndarray]:
    """(running time, peak memory per device) of the list schedule that starts the nodes
    in `order` (a topological order: Kahn's by priority), each on its device `dev`."""
    n = len(work)
    start = np.zeros(n)
    finish = np.zeros(n)
    free = np.zeros(d)
    for v in order:
        t = free[dev[v]]
        for j in range(pptr[v], pptr[v + 1]):
            u = pidx[j]
            arrive = finish[u] + (size[u] if dev[u] != dev[v] else 0.0)
            t = max(t, arrive)
        start[v] = t
        finish[v] = t + work[v]
        free[dev[v]] = finish[v]
    # memory: intervals [alloc, release) of each tensor on each device that holds it
    times = np.empty(2 * n * (d + 1))
    deltas = np.empty(2 * n * (d + 1))
    where = np.empty(2 * n * (d + 1), dtype=np.int64)
    m = 0
    last = np.empty(d)
    for u in range(n):
        for e in range(d):
            last[e] = -1.0
        home = dev[u]
        last[home] = finish[u]
        for j in range(sptr[u], sptr[u + 1]):
            w = sidx[j]
            if dev[w] == home:
                last[home] = max(last[home], finish[w])
            else:
                last[home] = max(last[home], finish[u] + size[u])
                last[dev[w]] = max(last[dev[w]], finish[w])
        for e in range(d):
            if last[e] >= 0.0:
                times[m], deltas[m], where[m] = (start[u] if e == home else finish[u]), size[u], e
                times[m + 1], deltas[m + 1], where[m + 1] = last[e], -size[u], e
                m += 2
    by_time = np.argsort(times[:m] + 0.0, kind="mergesort")
    peak = np.zeros(d)
    live = np.zeros(d)
    i = 0
    while i < m:  # at one instant, releases before allocations
        k = i
        while k < m and times[by_time[k]] == times[by_time[i]]:
            k += 1
        for j in range(i, k):
            if deltas[by_time[j]] < 0:
                live[where[by_time[j]]] += deltas[by_time[j]]
        for j in range(i, k):
            if deltas[by_time[j]] > 0:
                e = where[by_time[j]]
                live[e] += deltas[by_time[j]]
                peak[e] = max(peak[e], live[e])
        i = k
    return float(finish.max()) if n else 0.0, peak


@dataclass(frozen=True)
class Room:
    """The two BRKGA runs of the filter: running time and whether it fits, low and high."""
    low: float  # running time of the low run's best schedule
    low_use: float  # its peak memory / the limit (fits: <= 1)
    high: float
    high_use: float
    limit: float

    def describe(self) -> str:
        return (f"BRKGA's running time {self.low:.6g} with 100 evaluations (memory {self.low_use:.0%} of the "
                f"limit), {self.high:.6g} with 4,000 ({self.high_use:.0%})")

    @property
    def kept(self) -> bool:
        lo, hi = self.low_use <= FITS, self.high_use <= FITS
        return (hi and not lo) or (lo and hi and self.low >= FASTER * self.high)


def room(graph: Graph, devices: int = 2, seed: int = 0) -> Room:
    """Run the filter's two BRKGAs on `graph` (module docstring)."""
    a = Arrays.of(graph)
    n, d = len(a.work), devices
    _, peak = a.run(np.zeros(n, dtype=np.int64), np.arange(n, dtype=np.float64), 1)
    limit = HEADROOM * float(peak[0]) / d
    worst = float(a.work.sum() + a.size.sum())  # no list schedule runs longer

    def run(x: np.ndarray) -> tuple[float, float]:
        dev = np.minimum((x[:n] * d).astype(np.int64), d - 1)
        t, p = a.run(dev, x[n:], d)
        return t, float(p.max()) / limit if limit > 0 else 0.0

    def fitness(X: np.ndarray) -> np.ndarray:
        out = np.empty(len(X))
        for j, x in enumerate(X):
            t, use = run(x)
            out[j] = t + worst * use if use > FITS else t
        return out

    runs = []
    for population, generations in (LOW, HIGH):
        best = None
        for keys, _ in brkga_keys(fitness, 2 * n, np.random.default_rng(seed), population, generations):
            best = keys
        assert best is not None
        runs.append(run(best))
    (lo, lo_use), (hi, hi_use) = runs
    return Room(lo, lo_use, hi, hi_use, limit)


def first_kept(make: Callable[[int], Graph], seed: int, tries: int = 100, devices: int = 2,
               say: Callable[[str], None] | None = None) -> tuple[int, Graph, Room] | None:
    """The first graph `make(s)` for s = seed, seed + 1, ... (at most `tries`) that the
    filter keeps, with its seed and the filter's runs; None if none is kept. `say` hears
    each seed's verdict."""
    for s in range(seed, seed + tries):
        g = make(s)
        r = room(g, devices, s)
        if say is not None:
            say(f"seed {s}: {'kept' if r.kept else 'no room for improvement'}: {r.describe()}")
        if r.kept:
            return s, g, r
    return None

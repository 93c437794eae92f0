"""DiviML's search baselines (Ghannane & Abdelfattah sec. V-A, "Fitness function"):
simulated annealing (`sa`) and the biased (1+1) EA (`ea`) on the integer-string encoding.

A string holds one device per node (per chunk of L / K samples under `batch L split K`,
the batched variants); its fitness is the schedule objective of the mapping list-scheduled
in a fixed topological order (core/schedule.py): breadth first in the paper. Both first
report HEFT's schedule (bHEFT under a batch), so they are never worse than HEFT, and start
from the better of the biased string (every chunk where its node runs fastest, the
paper's start) decoded breadth first and HEFT's mapping decoded in HEFT's start order
(`decode`: `start`, the default; `bfs` the paper's for both; `heft`). The EA mutates each
gene with probability 1/len (at least one) and keeps a child no worse; SA changes one gene
and accepts a worse string with probability exp(-delta / T), T cooling geometrically a
hundredfold over the run from a sampled start (`temperature`) (a worse string is accepted
when it is within -T ln r of the current one, r uniform, drawn for every move). Infeasible strings rank below feasible ones
(by violation count). Seeded. The run is `iterations` long if given; else, under a time
limit, it runs until the limit (the paper gives each 600 s) and SA cools by the time
used; with neither, 2000 iterations. Under `latency by tasks` at batch 1 a move is scored
by re-timing only the nodes after it (kernels/schedule/task_times.py: the evaluator's
arithmetic, so the same runs as `incremental=0`, which decodes and evaluates each string,
about 1,000x slower at 5,000 tasks).
"""
from __future__ import annotations

import math
import time
from typing import Iterator

import numpy as np
from partdsl.core.dense import work_time
from partdsl.core.errors import PartError
from partdsl.core.events import Candidate, Progress
from partdsl.core.ir import Spec
from partdsl.core.schedule import Piece, Schedule, batch_split, runnable
from partdsl.evaluator.schedule_eval import evaluate_schedule, list_schedule
from partdsl.kernels.graph.orders import kahn, levels
from partdsl.kernels.schedule.list_schedulers import schedule as list_scheduled
from partdsl.kernels.schedule.task_times import TaskTimes, applies
from partdsl.runtime.deadline import NEVER, Deadline

DEFAULT_ITERATIONS = 2000


class Strings:
    """The encoding: genes [n, K] of device numbers; `order` is the node order strings are
    list-scheduled in (breadth first, the paper's, until `start` picks another)."""

    def __init__(self, spec: Spec) -> None:
        d = spec.dense
        self.spec = spec
        self.K = spec.objective.split
        self.g = spec.objective.batch // self.K
        self.order = kahn(d.n, d.src, d.dst, levels(d.n, d.src, d.dst)).tolist()
        self.breadth_first = self.order
        self.options = [np.array(o, dtype=np.int64) if o else np.arange(d.D) for o in runnable(spec)]

    def biased(self) -> np.ndarray:
        """Each chunk on the device where a chunk of its node runs fastest."""
        spec, d = self.spec, self.spec.dense
        genes = np.zeros((d.n, self.K), dtype=np.int64)
        for v, opts in enumerate(self.options):
            times = []
            for dev in opts:
                k = spec.platform.classes[int(d.dev_class[dev])]
                times.append(work_time(spec.graph.nodes[v], k.name, k.speed, self.g))
            genes[v] = opts[int(np.argmin(times))]
        return genes

    def of_schedule(self, s: Schedule, base: np.ndarray) -> np.ndarray:
        """A schedule's mapping as a string: each chunk on the device of its first sample
        (a chunk the schedule does not place keeps its gene in `base`)."""
        genes = base.copy()
        for p in s.pieces:
            for x in p.samples:
                if x % self.g == 0:
                    genes[p.node, x // self.g] = p.device
        return genes

    def one_gene(self, genes: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, int]:
        """SA's move: a copy of `genes` with one drawn node's drawn chunk on a drawn device
        it may run on (drawn in that order), and the node."""
        v = int(rng.integers(self.spec.dense.n))
        c = int(rng.integers(self.K))
        child = genes.copy()
        opts = self.options[v]
        child[v, c] = opts[rng.integers(len(opts))]
        return child, v

    def started_order(self, s: Schedule) -> list[int]:
        """The nodes in the order a timed schedule starts them (by their first piece's start,
        then its end, so a zero-length piece goes before a piece starting with it; then
        breadth first): a topological order. With one piece per node each device meets its
        pieces in the schedule's order, so the schedule's own mapping list-schedules no later
        than the schedule."""
        spec, d = self.spec, self.spec.dense
        first = np.full((d.n, 2), np.inf)
        for p in s.pieces:
            k = spec.platform.classes[int(d.dev_class[p.device])]
            span = (p.start, p.start + work_time(spec.graph.nodes[p.node], k.name, k.speed, p.size))
            if span < tuple(first[p.node]):
                first[p.node] = span
        rank = np.empty(len(self.breadth_first), dtype=np.int64)
        rank[self.breadth_first] = np.arange(len(self.breadth_first))
        return np.lexsort((rank, first[:, 1], first[:, 0])).tolist()

    def decode(self, genes: np.ndarray) -> Schedule:
        """Chunks to devices; each device's share of a node in its fastest batch sizes;
        list-scheduled in `order`."""
        spec, d = self.spec, self.spec.dense
        pieces = []
        for v in range(d.n):
            for dev in dict.fromkeys(genes[v].tolist()):
                samples = [x for c in range(self.K) if genes[v, c] == dev for x in range(c * self.g, (c + 1) * self.g)]
                sizes = batch_split(spec, v, int(d.dev_class[dev]), len(samples)) or [len(samples)]
                lo = 0
                for b in sizes:
                    pieces.append(Piece(v, int(dev), tuple(samples[lo:lo + b])))
                    lo += b
        return list_schedule(spec, Schedule(tuple(pieces), spec.objective.batch), self.order)

    def score(self, genes: np.ndarray) -> tuple[tuple[int, float], Schedule]:
        """(violations, value to minimize) and the schedule."""
        s = self.decode(genes)
        ev = evaluate_schedule(self.spec, s)
        value = -ev.objective if self.spec.objective.sense == "max" else ev.objective
        return (len(ev.violations), value), s


class Budget:
    """How long a search runs: `iterations` if given, else until the deadline if there is
    one, else DEFAULT_ITERATIONS; `fraction(it)` is how much of the run is used (0..1).
    `reserve` seconds of the deadline are kept for decoding and scoring the last best."""

    def __init__(self, iterations: float | None, deadline: Deadline, reserve: float = 0.0) -> None:
        self.deadline, self.reserve = deadline, reserve
        self.timed = iterations is None and deadline.limited
        self.n = DEFAULT_ITERATIONS if iterations is None else int(iterations)
        self.total = max(deadline.left() - reserve, 0.0) if self.timed else 0.0

    def steps(self) -> Iterator[int]:
        it = 0
        while (self.timed or it < self.n) and not self.deadline.passed() and self._left() > 0:
            yield it
            it += 1

    def _left(self) -> float:
        return self.deadline.left() - self.reserve if self.deadline.limited else 1.0

    def fraction(self, it: int) -> float:
        if self.timed:
            return min(1.0, 1.0 - self._left() / max(self.total, 1e-9))
        return (it + 1) / max(self.n, 1)

    def said(self, it: int) -> str:
        return f"{it + 1} iterations" if self.timed else f"{it + 1} of {self.n} iterations"


DECODE_ORDERS = ("start", "bfs", "heft")


def start(spec: Spec, enc: Strings, name: str, decode: str = "start") -> Iterator:
    """HEFT's schedule as the first candidate; then (genes, score) of the better start and
    the seconds one string took to decode and score. `decode`: the order strings are
    list-scheduled in for the run: `bfs` breadth first (the paper's), `heft` the order HEFT's
    schedule starts the nodes, `start` each start in its own (the biased string breadth
    first, HEFT's mapping in HEFT's order, where it scores at most HEFT's makespan) and the
    better start's order for the run."""
    if decode not in DECODE_ORDERS:
        raise PartError(f"{name}: unknown decode order '{decode}'", None,
                        "write -O decode=start (the default), -O decode=bfs (the paper's) or -O decode=heft")
    heft = list_scheduled(spec, "heft")
    yield Candidate(f"{name}: HEFT's schedule", schedule=heft)
    biased = enc.biased()
    by_heft = enc.started_order(heft)
    orders = {"bfs": [enc.breadth_first] * 2, "heft": [by_heft] * 2, "start": [enc.breadth_first, by_heft]}[decode]
    starts = [biased, enc.of_schedule(heft, biased)]
    t = time.monotonic()
    scored = []
    for genes, o in zip(starts, orders):
        enc.order = o
        scored.append(enc.score(genes))
    cost = (time.monotonic() - t) / 2
    i = min(range(2), key=lambda j: scored[j][0])
    enc.order = orders[i]
    yield Candidate(f"{name}: start ({'biased' if i == 0 else 'HEFT'} string)", schedule=scored[i][1])
    yield starts[i], scored[i][0], cost


class Scorer:
    """A string's (violations, value): re-timed from the moved nodes on
    (kernels/schedule/task_times.py) where that applies and `incremental` is set, else
    decoded and evaluated whole. Improvements found by re-timing are decoded (for the
    evaluator) at most every few decode times, and the last one at the end."""

    def __init__(self, spec: Spec, enc: Strings, genes: np.ndarray, cost: float, incremental: bool) -> None:
        self.enc = enc
        self.fast = TaskTimes(spec, enc.order, genes[:, 0]) if incremental and applies(spec) is None else None
        self.every = max(1.0, 4 * cost)  # seconds between decoded improvements
        self.last = time.monotonic()
        self.pending: np.ndarray | None = None
        self.reserve = 3 * cost if self.fast is not None else 0.0  # the last decode and the evaluator's score

    def score(self, child: np.ndarray, moved: np.ndarray, cutoff: tuple[int, float]
              ) -> tuple[tuple[int, float], Schedule | None]:
        """The child's score; re-timed, one sure to pass `cutoff` may come back as inf."""
        if self.fast is None:
            return self.enc.score(child)
        return self.fast.try_move(moved, child[moved, 0], cutoff), None

    def accept(self) -> None:
        if self.fast is not None:
            self.fast.accept()

    def improved(self, genes: np.ndarray, s: Schedule | None, label: str) -> Iterator[Candidate]:
        """The new best: now (whole scoring), or decoded if enough time passed since the last."""
        if s is not None:
            yield Candidate(label, schedule=s)
            return
        self.pending = genes.copy()
        if time.monotonic() - self.last >= self.every:
            yield from self.flush(label)

    def flush(self, label: str) -> Iterator[Candidate]:
        if self.pending is not None:
            yield Candidate(label, schedule=self.enc.decode(self.pending))
            self.pending, self.last = None, time.monotonic()


def ea(spec: Spec, seed: int = 0, deadline: Deadline = NEVER, iterations: float | None = None,
       incremental: float = 1, decode: str = "start", **_: object) -> Iterator:
    """The biased (1+1) EA (random hill climbing from the better start)."""
    enc = Strings(spec)
    rng = np.random.default_rng(seed)
    *firsts, (genes, best, cost) = start(spec, enc, "biased (1+1) EA", decode)
    yield from firsts
    sc = Scorer(spec, enc, genes, cost, bool(incremental))
    budget = Budget(iterations, deadline, sc.reserve)
    n_genes = genes.size
    every = 500 if sc.fast is None else 50_000
    for it in budget.steps():
        child = genes.copy()
        # each gene flips with probability 1 / len, at least one: that many genes, drawn without replacement
        flips = np.sort(rng.choice(n_genes, max(1, int(rng.binomial(n_genes, 1.0 / n_genes))), replace=False))
        vs, cs = np.divmod(flips, enc.K)
        for v, c in zip(vs.tolist(), cs.tolist()):
            opts = enc.options[v]
            child[v, c] = opts[rng.integers(len(opts))]
        score, s = sc.score(child, np.unique(vs), best)
        if score <= best:
            sc.accept()
            if score < best:
                yield from sc.improved(child, s, f"biased (1+1) EA: iteration {it + 1}")
            genes, best = child, score
        if (it + 1) % every == 0:
            yield Progress(f"(1+1) EA: {budget.said(it)}")
    yield from sc.flush("biased (1+1) EA: its best")


SAMPLED_MOVES = 100  # one-gene moves tried from the start to set SA's first temperature
SETTLE = 100  # moves per gene a run needs before SA starts at the sampled temperature


def temperature(spec: Spec, enc: Strings, sc: Scorer, genes: np.ndarray, cur: tuple[int, float],
                rng: np.random.Generator, cost: float, budget: Budget) -> float:
    """SA's first temperature, where moves can be re-timed or SAMPLED_MOVES of them fit in 5%
    of the run (else, or past the deadline, 5% of the start's value): the median worsening of
    SAMPLED_MOVES one-gene moves from the start, times the share of SETTLE moves per gene
    the run will make (measured: at 100 tasks and 2,000 moves a gene the median itself
    did best, at 5,000 tasks and 6 a gene a tenth of it; at 5% of the value SA walked up
    from 205.8 to 227 and never came back below its start)."""
    fallback = 0.05 * abs(cur[1]) if math.isfinite(cur[1]) and cur[1] else 1.0
    retimed = applies(spec) is None  # decided by the spec, so -O incremental=0 makes the same run
    if not retimed and SAMPLED_MOVES * cost > 0.05 * (budget.total if budget.timed else budget.n * cost):
        return fallback
    worse = []
    t = time.monotonic()
    for _ in range(SAMPLED_MOVES):
        if budget.deadline.passed():
            return fallback
        child, v = enc.one_gene(genes, rng)
        score, _ = sc.score(child, np.array([v]), (cur[0], math.inf))
        if score[0] == cur[0] and cur[1] < score[1] < math.inf:
            worse.append(score[1] - cur[1])
    per_move = max((time.monotonic() - t) / SAMPLED_MOVES, 1e-9)
    moves = budget.total / per_move if budget.timed else budget.n
    return float(np.median(worse)) * min(1.0, moves / genes.size / SETTLE) if worse else fallback


def sa(spec: Spec, seed: int = 0, deadline: Deadline = NEVER, iterations: float | None = None,
       incremental: float = 1, decode: str = "start", **_: object) -> Iterator:
    """Simulated annealing over one-gene moves, from the better start."""
    enc = Strings(spec)
    rng = np.random.default_rng(seed)
    *firsts, (genes, cur, cost) = start(spec, enc, "simulated annealing", decode)
    yield from firsts
    sc = Scorer(spec, enc, genes, cost, bool(incremental))
    best = cur
    budget = Budget(iterations, deadline, sc.reserve)
    T0 = temperature(spec, enc, sc, genes, cur, rng, cost, budget)
    every = 500 if sc.fast is None else 50_000
    T = T0
    for it in budget.steps():
        child, v = enc.one_gene(genes, rng)
        r = rng.random()  # worse by delta is accepted with probability exp(-delta / T): below `limit`
        limit = cur[1] - T * math.log(r) if r > 0 and math.isfinite(cur[1]) else math.inf
        score, s = sc.score(child, np.array([v]), (cur[0], limit))
        if score[0] < cur[0] or score[0] == cur[0] and score[1] <= limit:
            sc.accept()
            genes, cur = child, score
            if cur < best:
                best = cur
                yield from sc.improved(genes, s, f"simulated annealing: iteration {it + 1}")
        T = T0 * 0.01 ** budget.fraction(it)  # a hundredfold cooler at the end of the run
        if (it + 1) % every == 0:
            yield Progress(f"simulated annealing: {budget.said(it)}")
    yield from sc.flush("simulated annealing: its best")

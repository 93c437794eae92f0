"""Search over topological orders, each split optimally by SliceGraph (Archer sec. 4,
App. C.1): a fixed Kahn order (`slicegraph`), T i.i.d. random priority vectors
(`random`), BRKGA over priority vectors (`brkga`), and orders that minimize the
(weighted) linear arrangement, found by BRKGA (`mla`, `mla_weighted`).

Orders are over the contracted units (kernels/graph/contraction.py), so colocated nodes stay
together; an order longer than COARSE_POSITIONS is cut into blocks first and refined once
around the cuts (order_split.py), so the segment table stays within 33 MB per class.
Every method is seeded and reproducible; each yields only improving candidates, which
solve() re-scores with the evaluator.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import numpy as np
from partdsl.core.assignment import order_keys
from partdsl.core.events import Candidate, Progress
from partdsl.core.ir import Spec
from partdsl.evaluator.evaluate import evaluate
from partdsl.kernels.bottleneck.order_split import split_order
from partdsl.kernels.bottleneck.segment_dp import Split
from partdsl.kernels.bottleneck.topo_split import assign
from partdsl.kernels.graph.contraction import contract
from partdsl.kernels.graph.kahn_keys import KahnCSR
from partdsl.runtime.deadline import NEVER, Deadline


@dataclass
class Decoder:
    """keys (one per unit) -> order -> SliceGraph split -> fitness (lower is better)."""

    spec: Spec

    def __post_init__(self) -> None:
        self.units = contract(self.spec.dense)
        self.U = self.units.count
        self.kahn = KahnCSR(self.U, self.units.src, self.units.dst)
        self.counts = [k.count for k in self.spec.platform.classes]
        o = self.spec.objective
        self.plain = o.kind == "bottleneck"  # under GPipe the splits are valued max FW + max BW too
        self.sign = -1.0 if o.sense == "max" else 1.0

    def node_positions(self, keys: np.ndarray) -> np.ndarray:
        return self.kahn.positions(keys)[self.units.unit]

    def decode(self, keys: np.ndarray) -> tuple[float, np.ndarray | None]:
        # long orders: blocks and one refinement round (linear memory); the last splits are the best
        *_, (pos, splits, _) = split_order(self.spec, self.node_positions(keys), self.U, rounds=1)
        if not splits:
            return np.inf, None
        if self.plain:
            best = min(splits, key=lambda s: s.value)
            return best.value, assign(self.spec, best, pos)
        return self._best_by_evaluator(splits, pos)

    def _best_by_evaluator(self, splits: list[Split], pos: np.ndarray) -> tuple[float, np.ndarray | None]:
        best, arr = np.inf, None
        for sp in splits:
            a = assign(self.spec, sp, pos)
            ev = evaluate(self.spec, a)
            f = self.sign * ev.objective if ev.feasible else np.inf
            if f < best:
                best, arr = f, a
        return best, arr


def _improving(label: str, results: Iterator[tuple[float, np.ndarray | None]]) -> Iterator[Candidate]:
    best = np.inf
    for f, arr in results:
        if arr is not None and f < best:
            best = f
            yield Candidate(label, arr)


def slicegraph(spec: Spec, seed: int = 0, deadline: Deadline = NEVER, order: Sequence[str] | None = None,
               **_: object) -> Iterator[Candidate | Progress]:
    """SliceGraph on Kahn's order with the smallest unit first, or on a given `order` (node
    names, Archer sec. 4: any topological order): Kahn's order taking the earliest listed
    unit among the ready ones, which is the order itself when it is topological."""
    dec = Decoder(spec)
    keys, label = np.arange(dec.U, dtype=float), "slicegraph"
    if order is not None:
        node = order_keys(spec, order)
        keys, label = np.full(dec.U, np.inf), "slicegraph (the order given)"
        np.minimum.at(keys, dec.units.unit, node)  # a unit goes where its first member is listed
        if back := int((node[spec.dense.src] > node[spec.dense.dst]).sum()):
            yield Progress(f"slicegraph: {back:,} edges go against the order given; Kahn's order follows it "
                           "where the edges allow")
    yield from _improving(label, iter([dec.decode(keys)]))


def random_orders(spec: Spec, seed: int = 0, deadline: Deadline = NEVER, samples: float = 1000,
                  **_: object) -> Iterator[Candidate]:
    """random-T: T i.i.d. U(0,1) priority vectors, the best SliceGraph split among them."""
    dec = Decoder(spec)
    rng = np.random.default_rng(seed)

    def gen() -> Iterator[tuple[float, np.ndarray | None]]:
        for _ in range(int(samples)):
            if deadline.passed():
                return
            yield dec.decode(rng.random(dec.U))

    yield from _improving(f"random-{int(samples)}", gen())


def brkga_keys(fitness: Callable[[np.ndarray], np.ndarray], n: int, rng: np.random.Generator,
               population: int = 100, generations: int = 100, elite: float = 0.2, mutants: float = 0.15,
               rho: float = 0.7, deadline: Deadline = NEVER) -> Iterator[tuple[np.ndarray, float]]:
    """Biased random-key genetic algorithm (Goncalves & Resende): keeps the elite, adds
    fresh random mutants, and breeds the rest by biased uniform crossover (each key from
    the elite parent with probability rho). `fitness` scores a whole population at once
    (rows = chromosomes). The budget is population x generations fitness calls, as Archer
    App. C.1 counts them (100 x 100 = 10^4 candidates): the elite is carried over unscored,
    so generations continue until that many chromosomes were scored (the last one cut to
    what is left). Yields (keys, fitness) whenever the best improves."""
    pop = max(int(population), 3)
    ne = max(1, int(round(elite * pop)))
    nm = max(0, min(pop - ne - 1, int(round(mutants * pop))))
    budget = max(pop * int(generations), pop)
    X = rng.random((pop, n))
    f = fitness(X)
    scored, best = pop, np.inf
    while True:
        i = int(np.argmin(f))
        if f[i] < best:
            best = f[i]
            yield X[i].copy(), float(f[i])
        if scored >= budget or deadline.passed():
            return
        order = np.argsort(f, kind="stable")
        E, R = X[order[:ne]], X[order[ne:]]
        fresh = min(pop - ne, budget - scored)  # chromosomes scored this generation
        m = min(nm, fresh)
        nc = fresh - m
        kids = np.where(rng.random((nc, n)) < rho, E[rng.integers(0, ne, nc)], R[rng.integers(0, len(R), nc)])
        new = np.vstack([rng.random((m, n)), kids])
        X = np.vstack([E, new])
        f = np.concatenate([f[order[:ne]], fitness(new)])
        scored += fresh


def brkga(spec: Spec, seed: int = 0, deadline: Deadline = NEVER, population: float = 100,
          generations: float = 100, **_: object) -> Iterator[Candidate]:
    """BRKGA over priority vectors, decoded by Kahn + SliceGraph (Archer Alg. 2)."""
    dec = Decoder(spec)
    cache: dict[bytes, np.ndarray] = {}  # the assignments of the keys that improved on all before them
    best = [np.inf]

    def fitness(X: np.ndarray) -> np.ndarray:
        out = np.empty(len(X))
        for j, x in enumerate(X):
            if deadline.passed():
                out[j:] = np.inf
                break
            f, arr = dec.decode(x)
            out[j] = f
            if arr is not None and f < best[0]:  # only these can be yielded: memory stays linear
                best[0] = f
                cache[x.tobytes()] = arr
        return out

    rng = np.random.default_rng(seed)
    label = f"brkga {int(population)}x{int(generations)}"
    for keys, _f in brkga_keys(fitness, dec.U, rng, int(population), int(generations), deadline=deadline):
        arr = cache.get(keys.tobytes())
        if arr is not None:
            yield Candidate(label, arr)


def _mla(spec: Spec, weighted: bool, seed: int, deadline: Deadline, population: float,
         generations: float) -> Iterator[Candidate]:
    """An order minimizing sum_e w(e) |pos(u) - pos(v)| over topological orders (BRKGA,
    whole populations scored in one vectorized call), then split by SliceGraph."""
    dec = Decoder(spec)
    u = dec.units
    d = spec.dense
    cross = u.unit[d.src] != u.unit[d.dst]
    a, b = u.unit[d.src][cross], u.unit[d.dst][cross]
    if weighted:  # io(u, v): the tensor's transfer time on the first non-host class
        nonhost = np.flatnonzero(~d.host)
        w = d.comm[d.src[cross], nonhost[0]] if len(nonhost) else np.ones(cross.sum())
    else:
        w = np.ones(cross.sum())

    def fitness(X: np.ndarray) -> np.ndarray:
        P = np.stack([dec.kahn.positions(x) for x in X])
        return np.abs(P[:, a] - P[:, b]) @ w

    rng = np.random.default_rng(seed)
    best_keys = None
    for keys, _f in brkga_keys(fitness, dec.U, rng, int(population), int(generations), deadline=deadline):
        best_keys = keys
    if best_keys is not None:
        label = "mla-weighted" if weighted else "mla"
        yield from _improving(label, iter([dec.decode(best_keys)]))


def mla(spec: Spec, seed: int = 0, deadline: Deadline = NEVER, population: float = 100,
        generations: float = 100, **_: object) -> Iterator[Candidate]:
    yield from _mla(spec, False, seed, deadline, population, generations)


def mla_weighted(spec: Spec, seed: int = 0, deadline: Deadline = NEVER, population: float = 100,
                 generations: float = 100, **_: object) -> Iterator[Candidate]:
    yield from _mla(spec, True, seed, deadline, population, generations)

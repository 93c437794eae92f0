"""Iterated local search for the bottleneck objective (max device load), any split: the
method `load_search`, and the polish `exact` applies to its MIP start.

Tarnawski et al. (sec. 6, "local search") move single nodes while the max load drops;
the max is flat for most moves, so that search stalls early. Here a move is scored by
(objective, sum of squared loads): unloading any device counts, and the search walks
the plateaus of the max. Moves carry whole colocation units. Each step takes the best
move of a unit on a critical device (the most loaded one, per phase under GPipe); when
none improves, every unit is tried, then chains of two moves (a unit leaves the
bottleneck for j, then a unit of j moves on). Loads come from the evaluator's own cost
model (`core.evaluate.bottleneck_loads`, compiled in kernels/bottleneck/load_table.py); memory is
checked per move, and under contiguity, acyclicity or a stage limit the evaluator's
`violations` vets a move before it is taken. At a local optimum the best assignment is
perturbed (a few units of a critical device sent to random allowed devices) and the
descent restarts, until `stall` perturbations in a row bring nothing, the deadline
passes, or (without a limit) nothing better has come for max(PATIENCE, the time the best
took). Peak activations (Archer eq. 2) are not additive, so under `activations` the
parameters screen a move and `violations` vets it.

Under `replicate <= r` (Tarnawski App. C.2) the search also chooses replication factors:
a layout (kernels/bottleneck/replica_layout.py) says which devices are a stage's replicas
(no unit moves there), loads are divided after the weight sync, and when no move of a
critical unit helps a descent tries the factor moves (Search.refactor); the kicks change
a random stage's factor too.
"""
from __future__ import annotations

import time
from typing import Callable, Iterator

import numpy as np
from partdsl.core.events import Candidate
from partdsl.core.ir import Spec
from partdsl.evaluator.evaluate import evaluate
from partdsl.evaluator.replicas import used_devices
from partdsl.evaluator.violations import memory_used, violations
from partdsl.kernels.bottleneck.coarse_order import COARSE_POSITIONS
from partdsl.kernels.bottleneck.load_table import LoadTable, square_sum
from partdsl.kernels.bottleneck.local_search import local_search
from partdsl.kernels.bottleneck.replica_layout import Layout, kick
from partdsl.kernels.graph.contraction import contract
from partdsl.runtime.deadline import NEVER, Deadline, timed_chunks

Score = tuple[float, float]
STALL = 100  # perturbations in a row without a better objective before the search stops
MIN_STALL = 10  # ... or, by default, as many as the single moves there are, when fewer (a tiny spec)
PATIENCE = 10.0  # without a time limit, also stop once nothing better came for max(this, the time the best took) s


class Search:
    """Moves of colocation units between devices, scored by the evaluator's load table."""

    def __init__(self, spec: Spec, dev: np.ndarray, factors: np.ndarray | None = None) -> None:
        d = spec.dense
        self.spec, self.d = spec, d
        self.deadline = NEVER  # descend's: a scan of every move stops there
        u = contract(d)
        self.unit, self.count = u.unit, u.count
        self.mptr, self.midx = u.csr()
        self.members = [self.midx[self.mptr[k]:self.mptr[k + 1]] for k in range(u.count)]
        allowed = np.ones((u.count, d.D), dtype=bool)
        np.logical_and.at(allowed, u.unit, d.allowed)
        self.options = [np.flatnonzero(a) for a in allowed]
        self.params = np.bincount(u.unit, weights=d.params, minlength=u.count)
        hard = spec.constraints.memory == "hard"
        self.cap = d.memory[d.dev_class] * (1 + 1e-12) if hard else np.full(d.D, np.inf)
        c = spec.constraints
        # peak activations and stashes in flight (evaluator/activations.py) are not additive: the
        # parameters screen a move, the evaluator's memory rule vets it
        self.vetted = bool(c.contiguous or c.acyclic or c.max_stages is not None or (d.placed_memory and hard))
        self.loads = LoadTable(spec)
        self.dev = np.asarray(dev, dtype=np.int64).copy()
        self.mem = memory_used(d, self.dev)
        k = c.replicate  # data-parallel stages: their layout (kernels/bottleneck/replica_layout.py)
        self.layout = (Layout.of(d, k, self.dev, factors) or Layout(d, k)) if k > 1 else None
        self.esrc = np.repeat(np.arange(d.n), np.diff(d.succ_ptr))
        self.score = self.rate(self.dev)
        self.evaluations = 0

    @property
    def r(self) -> np.ndarray | None:
        return None if self.layout is None else self.layout.r

    def used(self, dev: np.ndarray) -> np.ndarray:
        return used_devices(self.d, dev)

    def kept_layout(self) -> Layout | None:
        return None if self.layout is None else self.layout.copy()

    def replicas(self) -> np.ndarray | None:
        """Each device's replication factor now (None without `replicate`)."""
        return None if self.layout is None else self.layout.factors(self.used(self.dev))

    def rate(self, dev: np.ndarray, layout: Layout | None = None) -> Score:
        value, table = self.loads(dev, (layout or self.layout).r if self.layout is not None else None)
        return value, square_sum(table)

    def bottlenecks(self, dev: np.ndarray) -> np.ndarray:
        """The most loaded device (per phase under GPipe)."""
        _, table = self.loads(dev)
        return np.unique(table.reshape(self.d.D, -1).argmax(axis=0))

    def units_on(self, devices: np.ndarray, dev: np.ndarray | None = None) -> np.ndarray:
        dev = self.dev if dev is None else dev
        return np.unique(self.unit[np.isin(dev, devices)])

    def held(self) -> np.ndarray:
        """[D] bool: devices that are another stage's replicas (no unit may move there)."""
        return np.zeros(self.d.D, dtype=bool) if self.layout is None else self.layout.owner >= 0

    def refactor(self) -> bool:
        """The best factor move that improves the score (Tarnawski App. C.2 stages): a stage
        takes a free device as one more replica; takes over a stage it exchanges tensors
        with (or on levels, the stage after its replicas), nodes and replicas; or gives a
        replica back and a unit of a critical device (or its own) moves onto that device."""
        lay, dev, D = self.layout, self.dev, self.d.D
        assert lay is not None
        used = self.used(dev)
        trials: list[tuple[np.ndarray, Layout]] = []
        for j in np.flatnonzero(used):
            b = lay.grow_target(int(j), used)
            if b >= 0:
                t = lay.copy()
                t.grow(int(j), b)
                trials.append((dev, t))
        cut = dev[self.esrc] != dev[self.d.succ_idx]
        pairs = np.unique(dev[self.esrc][cut] * D + dev[self.d.succ_idx][cut])
        pairs = np.union1d(pairs, (pairs % D) * D + pairs // D)  # either stage may take the other
        if lay.levels:
            leads = np.flatnonzero(used)
            leads = leads[leads + lay.r[leads] < D]
            pairs = np.union1d(pairs, leads * D + leads + lay.r[leads])
        for j, b in zip(pairs // D, pairs % D):
            if used[b] and lay.absorbable(int(j), int(b)) and self.mem[j] + self.mem[b] <= self.cap[j]:
                t = lay.copy()
                t.absorb(int(j), int(b))
                trials.append((np.where(dev == b, j, dev), t))
        best: tuple[Score, np.ndarray, Layout] | None = None
        for trial, t in trials:
            s = self.rate(trial, t)
            if _better(s, best[0] if best else self.score) and self.feasible(trial):
                best = (s, trial, t)
        for j in np.flatnonzero(used & (lay.r > 1)):
            t = lay.copy()
            b = t.shrink(int(j))
            ks, js = self.moves(self.units_on(np.r_[self.bottlenecks(dev), j]), dev, self.mem, held=t.owner >= 0)
            ks, js = ks[js == b], js[js == b]
            value, spread = self.loads.scan(dev, ks, js, self.mptr, self.midx, t.r)
            for i in np.lexsort((spread, value))[:4]:
                s = (float(value[i]), float(spread[i]))
                trial = dev.copy()
                trial[self.members[ks[i]]] = b
                if _better(s, best[0] if best else self.score) and self.feasible(trial):
                    best = (s, trial, t)
                    break
        if best is None:
            return False
        self.dev, self.layout = best[1].copy(), best[2]
        self.layout.settle(self.used(self.dev))
        self.mem = memory_used(self.d, self.dev)
        self.score = self.rate(self.dev)
        return True

    def feasible(self, dev: np.ndarray) -> bool:
        return not self.vetted or not violations(self.spec, self.d, dev)

    def moves(self, units: np.ndarray, dev: np.ndarray, mem: np.ndarray, skip: int = -1,
              held: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Every move of `units` (but `skip`) to another allowed device with room for it."""
        ks: list[int] = []
        js: list[int] = []
        held = self.held() if held is None else held
        for k in units:
            if k == skip:
                continue
            here = dev[self.members[k][0]]
            for j in self.options[k]:
                if j != here and not held[j] and mem[j] + self.params[k] <= self.cap[j]:
                    ks.append(int(k))
                    js.append(int(j))
        return np.array(ks, dtype=np.int64), np.array(js, dtype=np.int64)

    def scores(self, dev: np.ndarray, ks: np.ndarray, js: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(objective, spread) after each move, for the moves scored before the deadline: a
        move costs O(n), so 100,000 units x 8 devices take minutes; chunks keep the limit."""
        parts = [self.loads.scan(dev, ks[a:b], js[a:b], self.mptr, self.midx, self.r)
                 for a, b in timed_chunks(len(ks), self.deadline, first=64)]
        value = np.concatenate([v for v, _ in parts]) if parts else np.empty(0)
        self.evaluations += len(value)
        return value, (np.concatenate([x for _, x in parts]) if parts else np.empty(0))

    def scan(self, dev: np.ndarray, ks: np.ndarray, js: np.ndarray) -> np.ndarray:
        """Indices of the moves that improve on the current score, best first."""
        value, spread = self.scores(dev, ks, js)
        if not len(value):
            return np.empty(0, dtype=np.int64)
        v0, s0 = self.score
        tol = 1e-12 * max(1.0, abs(v0))
        good = (value < v0 - tol) | ((value <= v0 + tol) & (spread < s0 - 1e-9 * max(1.0, s0)))
        idx = np.flatnonzero(good)
        return idx[np.lexsort((spread[idx], value[idx]))]

    def move(self, k: int, to: int) -> None:
        m = self.members[k]
        here = self.dev[m[0]]
        self.mem[here] -= self.params[k]
        self.mem[to] += self.params[k]
        self.dev[m] = to

    def take(self, steps: list[tuple[int, int]]) -> bool:
        """Make the moves if the constraints allow the result."""
        trial = self.dev.copy()
        for k, j in steps:
            trial[self.members[k]] = j
        if not self.feasible(trial):
            return False
        for k, j in steps:
            self.move(k, j)
        self.moved()
        self.score = self.rate(self.dev)
        return True

    def moved(self) -> None:
        """After unit moves: memory anew under activations or stashes (move() adds parameters
        only), and the replicas of a lead left without nodes given back."""
        if self.d.placed_memory:
            self.mem = memory_used(self.d, self.dev)
        if self.layout is not None:
            self.layout.settle(self.used(self.dev))

    def descend_once(self, units: np.ndarray, tries: int = 8) -> bool:
        """Take the best improving move of `units` that the constraints allow."""
        ks, js = self.moves(units, self.dev, self.mem)
        return any(self.take([(int(ks[i]), int(js[i]))]) for i in self.scan(self.dev, ks, js)[:tries])

    def descend(self, deadline: Deadline) -> None:
        self.deadline = deadline
        while not deadline.passed():
            if self.descend_once(self.units_on(self.bottlenecks(self.dev))):
                continue
            if self.layout is not None and self.refactor():
                continue
            if self.descend_once(np.arange(self.count)):
                continue
            if not self.chain(deadline):
                return

    def chain(self, deadline: Deadline, width: int = 16) -> bool:
        """An ejection chain of two moves: a unit leaves a critical device for device j,
        which becomes the bottleneck, then a unit of j moves on; the best pair that
        improves the score is taken. Only the `width` least bad first moves are followed."""
        best: tuple[Score, list[tuple[int, int]]] | None = None
        ks, js = self.moves(self.units_on(self.bottlenecks(self.dev)), self.dev, self.mem)
        if not len(ks):
            return False
        value, spread = self.scores(self.dev, ks, js)
        tried = 0
        for i in np.lexsort((spread, value)):  # the least bad first moves first
            k, j = int(ks[i]), int(js[i])
            if tried >= width or deadline.passed():
                break
            trial = self.dev.copy()
            trial[self.members[k]] = j
            if j not in self.bottlenecks(trial):
                continue  # j is not the new bottleneck: single moves said all
            tried += 1
            mem = self.mem.copy()
            mem[self.dev[self.members[k][0]]] -= self.params[k]
            mem[j] += self.params[k]
            k2s, j2s = self.moves(self.units_on(np.array([j]), trial), trial, mem, skip=k)
            good = self.scan(trial, k2s, j2s)
            if len(good):
                trial[self.members[k2s[good[0]]]] = j2s[good[0]]
                s = self.rate(trial)
                if best is None or _better(s, best[0]):
                    best = (s, [(k, j), (int(k2s[good[0]]), int(j2s[good[0]]))])
        return best is not None and self.take(best[1])

    def perturb(self, rng: np.random.Generator, size: int) -> None:
        pool = self.units_on(self.bottlenecks(self.dev))
        held = self.held()
        for k in rng.permutation(pool)[:size]:
            here = self.dev[self.members[k][0]]
            fits = [j for j in self.options[k]
                    if j != here and not held[j] and self.mem[j] + self.params[k] <= self.cap[j]]
            if not fits:
                continue
            j = int(rng.choice(fits))
            trial = self.dev.copy()
            trial[self.members[k]] = j
            if self.feasible(trial):
                self.move(int(k), j)
        self.moved()
        if self.layout is not None:
            kick(self.layout, self.used(self.dev), rng)
        self.score = self.rate(self.dev)

    def reset(self, dev: np.ndarray, score: Score, layout: Layout | None = None) -> None:
        self.dev = dev.copy()
        self.mem = memory_used(self.d, self.dev)
        self.score = score
        if layout is not None:
            self.layout = layout.copy()


def _better(a: Score, b: Score) -> bool:
    """Lower objective, or the same objective (to 1e-12 relative) and a lower spread."""
    tol = 1e-12 * max(1.0, abs(b[0]))
    return a[0] < b[0] - tol or (a[0] <= b[0] + tol and a[1] < b[1] - 1e-9 * max(1.0, b[1]))


def improve(spec: Spec, start: np.ndarray, deadline: Deadline = NEVER, seed: int = 0, stall: int | None = None,
            progress: Callable[[str], None] | None = None, factors: np.ndarray | None = None
            ) -> Iterator[Candidate]:
    """Yield each assignment better than `start` (which must satisfy the constraints;
    `factors`: its stages' replication factors), with its factors under `replicate`.
    `stall` (default STALL, or the number of single unit moves if that is smaller, at least
    MIN_STALL: a spec of four nodes on four devices spent 0.7 s in 100 kicks among the same few
    local optima). Without a time limit it also stops when PATIENCE runs out: a descent takes
    seconds on 10,000 operators, so `stall` fruitless ones alone could take an hour there.
    Under `replicate <= r` the descents also change factors (Search.refactor) and so do
    the kicks (replica_layout.kick)."""
    s = Search(spec, start, factors)
    if stall is None:
        stall = min(STALL, max(MIN_STALL, sum(len(o) - 1 for o in s.options)))
    rng = np.random.default_rng(seed)
    best_dev, best, best_layout = s.dev.copy(), s.score, s.kept_layout()
    idle = 0
    rounds = 0
    began = found = time.monotonic()
    while idle < stall and not deadline.passed():
        if not deadline.limited and time.monotonic() - found > max(PATIENCE, found - began):
            break
        s.descend(deadline)
        rounds += 1
        if _better(s.score, best) and s.score[0] < best[0] - 1e-12 * max(1.0, best[0]):
            best_dev, best, best_layout, idle, found = s.dev.copy(), s.score, s.kept_layout(), 0, time.monotonic()
            if progress:
                progress(f"load search: {best[0]:.6g} after {rounds} descents, {s.evaluations} moves scored")
            yield Candidate(f"load search (descent {rounds})", best_dev.copy(), replicas=s.replicas())
        else:
            idle += 1
            if _better(s.score, best):  # same max, less spread: keep walking from here
                best_dev, best, best_layout = s.dev.copy(), s.score, s.kept_layout()
        s.reset(best_dev, best, best_layout)
        s.perturb(rng, 1 + int(rng.integers(1 + min(idle, 5))))


def run(spec: Spec, seed: int = 0, deadline: Deadline = NEVER, progress: Callable[[str], None] | None = None,
        stall: float | None = None, **_: object) -> Iterator[Candidate]:
    """Method `load_search`: the best topo split, each better one yielded as it comes, then
    improve() from it. On orders longer than COARSE_POSITIONS the start takes the fixed
    orders only: each order costs a second there (10,000 operators) and the descents do
    better with the time. (`exact`'s MIP start, methods/mip_start.py, also tries dp and
    restarts with new seeds.) Where no topo split is feasible, the start is the best
    single device that is, or else the local search's best (it descends on the number of
    violated constraints first: peak activations under tight memory)."""
    from partdsl.kernels import single_device
    from partdsl.kernels.bottleneck import topo_split

    start = None
    coarse = contract(spec.dense).count > COARSE_POSITIONS
    for _, cand in topo_split.improving(spec, seed, deadline, n_random=0 if coarse else 3):
        start = cand
        yield Candidate(f"load search: start ({cand.label})", cand.devices, replicas=cand.replicas)
    if start is None:  # topo ignores what it does not model (host cycles, activations): one device
        scored = [(ev.objective, c) for c in single_device.run(spec) if (ev := evaluate(spec, c.devices)).feasible]
        start = min(scored, key=lambda x: x[0])[1] if scored else None
        if start is not None:
            yield Candidate(f"load search: start ({start.label})", start.devices)
    if start is None:  # nor one device: the local search, which lowers the violations first
        for cand in local_search(spec, seed, deadline, restarts=3):
            if evaluate(spec, cand.devices).feasible:
                start = cand
                yield Candidate(f"load search: start ({cand.label})", cand.devices)
    if start is None or spec.objective.kind != "bottleneck":
        return
    yield from improve(spec, start.devices, deadline, seed, None if stall is None else int(stall), progress,
                       start.replicas)

"""Method `interleave`: interleaved pipelines of a chain of units (`interleave V`;
Narayanan et al. 2021, sec. 2.2, Megatron's interleaved 1F1B). The units (layers, under
`--group-by layer`) are cut into P x V chunks; chunk k runs on rank k mod P; a rank is a
device, the ranks' classes in some order (devices of a class alike).

Its space, for every P up to the number of devices and every order of classes over the
ranks, is every cut of the chain: exactly the plans the evaluator accepts under
`interleave V` (evaluator/interleave.py) on a chain of units (a cut with empty chunks is
scored too, and kept where the evaluator's labelling still ends in chunk P x V - 1). Where that space holds at
most EXHAUSTIVE plans it scores them all, and the best is optimal (without device-level
pins, under which devices of a class are not alike). Beyond, with every device a rank and
for each order of classes (at most ORDERS), it starts from chunks sized to each rank's
speed and moves one cut at a time while the evaluator's score improves: a local optimum,
with the spec's own bound beside it.
"""
from __future__ import annotations

import itertools
import math
from typing import Iterator

import numpy as np
from partdsl.core.errors import PartError
from partdsl.core.events import Candidate, Progress, Proven
from partdsl.core.ir import Spec
from partdsl.core.orders import multiset_orders
from partdsl.evaluator.evaluate import evaluate
from partdsl.kernels.bottleneck.ideal_dp import chain_order, units
from partdsl.runtime.deadline import NEVER, Deadline

EXHAUSTIVE = 20_000  # plans scored one by one, at about a millisecond each
ORDERS = 24  # orders of the classes over the ranks tried per P by the local search


def run(spec: Spec, seed: int = 0, deadline: Deadline = NEVER, **_: object) -> Iterator:
    V = spec.constraints.interleave
    if V == 1:
        raise PartError("method interleave plans interleaved pipelines (`interleave V`), and this spec has none",
                        spec.objective.span, "add `interleave 2` to the constraints, or use dp (or auto) for one "
                        "block per device")
    order = chain_order(spec)
    if order is None:
        raise PartError("method interleave cuts a chain of units, and this spec's units (colocation groups) are not "
                        "one chain of forward edges", spec.constraints.span_of("interleave"),
                        "group the operators by layer (`part convert --group-by layer`)")
    u = units(spec)
    member = np.argsort(order)[u.unit]  # each node's place in the chain
    every = _every_layout(spec, len(order), V)
    if every is not None:
        yield from _score_all(spec, member, every, len(order), V, deadline)
        return
    most = min(spec.dense.D, len(order) // V)  # as many ranks as there are devices, and units for their chunks
    for ranks in itertools.islice(_layouts(spec, most), ORDERS):
        if deadline.passed():
            return
        yield Candidate(f"interleave {V} over {most} devices (local search)",
                        _descend(spec, member, ranks, V, deadline))


def _every_layout(spec: Spec, L: int, V: int) -> list[tuple[int, list[int]]] | None:
    """Every (P, ranks), if all their cuts number at most EXHAUSTIVE; else None."""
    out, total = [], 0
    for P in range(1, spec.dense.D + 1):
        for ranks in _layouts(spec, P):
            total += math.comb(L + P * V - 1, P * V - 1)
            if total > EXHAUSTIVE:
                return None
            out.append((P, ranks))
    return out


def _score_all(spec: Spec, member: np.ndarray, layouts: list[tuple[int, list[int]]], L: int, V: int,
               deadline: Deadline) -> Iterator:
    """Every cut of every layout, scored; the best candidates, and the proof."""
    yield Progress(f"interleave: every cut of {L} units into {V} chunks per device, {len(layouts)} orders of devices")
    best = math.inf
    for P, ranks in layouts:
        for cuts in itertools.combinations_with_replacement(range(L + 1), P * V - 1):
            if deadline.passed():
                return
            dev = _assign(member, cuts, ranks)
            ev = evaluate(spec, dev)
            if ev.feasible and ev.objective < best:
                best = ev.objective
                yield Candidate(f"interleave {V} over {P} devices", dev)
    if not spec.pins_devices:  # (with pins naming devices, devices of a class are not alike)
        yield Proven(best, f"every cut of the chain of {L} units into {V} chunks per device, for every "
                     "number and order of devices, was scored")


def _layouts(spec: Spec, P: int) -> Iterator[list[int]]:
    """The device of each of P ranks, for every order of classes over them (devices taken
    in platform order within a class)."""
    d = spec.dense
    pool = {c: [int(k) for k in np.flatnonzero(d.dev_class == c)] for c in range(len(d.class_names))}
    for combo in itertools.combinations_with_replacement(sorted(pool), P):
        if any(combo.count(c) > len(pool[c]) for c in set(combo)):
            continue
        for classes in multiset_orders(list(combo)):
            taken = {c: iter(pool[c]) for c in pool}
            yield [next(taken[c]) for c in classes]


def _assign(member: np.ndarray, cuts: tuple[int, ...], ranks: list[int]) -> np.ndarray:
    """Each node's device: chunk k holds chain places [cuts[k - 1], cuts[k]), on rank k mod P."""
    chunk = np.searchsorted(np.asarray(cuts, dtype=np.int64), member, side="right")
    return np.asarray(ranks, dtype=np.int64)[chunk % len(ranks)]


def _descend(spec: Spec, member: np.ndarray, ranks: list[int], V: int, deadline: Deadline) -> np.ndarray:
    """Cuts sized to the ranks' speeds, then single-cut moves while the score improves."""
    d = spec.dense
    L, K = int(member.max()) + 1, len(ranks) * V
    per = np.zeros((L, len(d.class_names)))
    np.add.at(per, member, np.where(np.isfinite(d.work), d.work, 0.0))
    speed = 1.0 / np.maximum(per.sum(axis=0), 1e-12)[d.dev_class[ranks]]  # each rank's share of the chain
    share = np.tile(speed / speed.sum() / V, V)
    cum = np.cumsum(per.mean(axis=1)) / max(per.mean(axis=1).sum(), 1e-12)
    cuts = [int(np.searchsorted(cum, t, side="left")) + 1 for t in np.cumsum(share)[:-1]]
    for k in range(K - 1):  # every chunk holds a unit: 0 < cuts[0] < cuts[1] < ... < L
        cuts[k] = max(cuts[k], (cuts[k - 1] if k else 0) + 1)
    for k in reversed(range(K - 1)):
        cuts[k] = min(cuts[k], (cuts[k + 1] if k + 1 < K - 1 else L) - 1)
    best = _score(spec, member, cuts, ranks)
    improved = True
    while improved and not deadline.passed():
        improved = False
        for k, step in itertools.product(range(K - 1), (-1, 1)):
            c = cuts[k] + step
            if not (cuts[k - 1] if k else 0) < c < (cuts[k + 1] if k + 1 < K - 1 else L):
                continue
            trial = cuts[:k] + [c] + cuts[k + 1:]
            score = _score(spec, member, trial, ranks)
            if score < best:
                best, cuts, improved = score, trial, True
    return _assign(member, tuple(cuts), ranks)


def _score(spec: Spec, member: np.ndarray, cuts: list[int], ranks: list[int]) -> tuple[float, float, float]:
    """(violations, objective, sum of squared loads) by the evaluator: lexicographic."""
    ev = evaluate(spec, _assign(member, tuple(cuts), ranks))
    over = float(len(ev.violations))
    loads = np.array(list(ev.loads.values()))
    return over, float(ev.objective), float(np.square(loads).sum())

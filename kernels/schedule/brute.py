"""Brute force over schedules (DiviML objectives): every schedule the evaluator accepts,
up to shifting pieces earlier, on tiny specs. Method `brute` runs it under `minimize
latency by tasks` and `maximize throughput batch L split K`, and the oracle tests and
benchmark (tests/methods/test_oracle.py, benchmarks/oracle.py) compare every method against it.

The space (core/schedule.py's semantics, eq. 3 read per share):
- every chunk-to-device map (K chunks of L / K samples per node; colocated nodes alike;
  only devices the node may use and has work on: any other piece is a violation);
- every order of the shares on every device that node precedence allows (the evaluator
  refuses a share interleaved with another node's pieces: `block`);
- every batching of each share: each ordered sequence of supported batch sizes (any size
  where the class declares none) summing to the share, the samples taken in order. Which
  samples a piece of a share holds does not enter its timing: every piece of a share waits
  for all the share's inputs, and successors wait for the share's end.
Each combination is timed as early as possible in that order (list scheduling): any
accepted schedule can be shifted left into one of these without a later finish, so the
best of them is the optimum over the evaluator's space.
"""
from __future__ import annotations

import itertools
import math
from typing import Iterator

from partdsl.core.errors import PartError
from partdsl.core.events import Candidate, Progress
from partdsl.core.ir import Spec
from partdsl.core.schedule import Piece, Schedule, runnable
from partdsl.evaluator.schedule_eval import list_schedule
from partdsl.runtime.deadline import NEVER, Deadline

LIMIT = 200_000  # schedules to time, at most (an estimate from above; larger specs are refused)


def compositions(spec: Spec, cls: int, size: int) -> list[tuple[int, ...]]:
    """Every ordered sequence of batch sizes the class supports that sums to `size`."""
    sizes = spec.platform.classes[cls].batches or tuple(range(1, size + 1))
    out: list[tuple[int, ...]] = []

    def grow(left: int, head: tuple[int, ...]) -> None:
        if left == 0:
            out.append(head)
        for b in sizes:
            if b <= left:
                grow(left - b, head + (b,))
    grow(size, ())
    return out


def count(spec: Spec) -> int:
    """An upper bound on the schedules `schedules` times: maps x orders x batchings."""
    d = spec.dense
    K, L = spec.objective.split, spec.objective.batch
    opts = runnable(spec)
    maps = math.prod(max(len(o), 1) ** K for o in opts)
    per_device = [sum(1 for o in opts if u in o) for u in range(d.D)]
    orders = math.prod(math.factorial(c) for c in per_device)
    worst = max((len(compositions(spec, int(d.dev_class[u]), L)) for u in range(d.D)), default=1)
    return maps * orders * worst ** d.n


def schedules(spec: Spec, deadline: Deadline = NEVER) -> Iterator[Schedule]:
    """Every schedule of the space above, list-scheduled (untimed ones are not yielded)."""
    d = spec.dense
    L, K = spec.objective.batch, spec.objective.split
    g = L // K
    opts = runnable(spec)
    if any(not o for o in opts):
        return
    for maps in itertools.product(*[itertools.product(o, repeat=K) for o in opts]):
        if any(maps[v] != maps[int(d.colo[v])] for v in range(d.n)):
            continue
        shares = [(v, u, [x for c in range(K) if maps[v][c] == u for x in range(c * g, (c + 1) * g)])
                  for v in range(d.n) for u in dict.fromkeys(maps[v])]
        per_dev = [[k for k, (_, u, _) in enumerate(shares) if u == dev] for dev in range(d.D)]
        batchings = [compositions(spec, int(d.dev_class[u]), len(smp)) for _, u, smp in shares]
        for seqs in itertools.product(*[itertools.permutations(p) for p in per_dev]):
            order = _topological(spec, shares, seqs)
            if order is None:
                continue
            for cut in itertools.product(*batchings):
                if deadline.passed():
                    return
                yield _timed(spec, shares, order, cut)


def _timed(spec: Spec, shares: list, order: list[int], cut: tuple) -> Schedule:
    pieces: list[Piece] = []
    for k in order:
        v, u, samples = shares[k]
        lo = 0
        for b in cut[k]:
            pieces.append(Piece(v, u, tuple(samples[lo:lo + b])))
            lo += b
    return list_schedule(spec, Schedule(tuple(pieces), spec.objective.batch), piece_order=range(len(pieces)))


def _topological(spec: Spec, shares: list, seqs: tuple) -> list[int] | None:
    """The shares in an order that respects node precedence and each device's sequence,
    or None if the sequences contradict precedence."""
    d = spec.dense
    n = len(shares)
    after: list[set[int]] = [set() for _ in range(n)]
    for a, (va, _, _) in enumerate(shares):
        succ = set(d.succ_idx[d.succ_ptr[va]:d.succ_ptr[va + 1]].tolist())
        after[a].update(b for b, (vb, _, _) in enumerate(shares) if vb in succ)
    for seq in seqs:
        for a, b in zip(seq, seq[1:]):
            after[a].add(b)
    indeg = [0] * n
    for a in range(n):
        for b in after[a]:
            indeg[b] += 1
    ready = [k for k in range(n) if indeg[k] == 0]
    out = []
    while ready:
        k = ready.pop()
        out.append(k)
        for b in after[k]:
            indeg[b] -= 1
            if indeg[b] == 0:
                ready.append(b)
    return out if len(out) == n else None


def run(spec: Spec, seed: int = 0, deadline: Deadline = NEVER, **_: object) -> Iterator[Candidate | Progress]:
    total = count(spec)
    if total > LIMIT:
        raise PartError(f"method brute would time up to {total:,} schedules (limit {LIMIT:,})", None,
                        "use it on tiny graphs only (a few nodes, batch <= 4); try `--method heft` or `exact`")
    yield Progress(f"brute force over at most {total:,} schedules")
    for s in schedules(spec, deadline):
        yield Candidate("enumeration (schedules)", schedule=s)

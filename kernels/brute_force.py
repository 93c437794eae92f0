"""Method `brute`: enumerate every assignment (colocated nodes moved together) and keep
the best by the evaluator; under latency with `subgraphs <= q`, q > 1, every subgraph
number 0..q-1 of every accelerator node too (the derived numbers are not always the
best); under `replicate <= r` every replication factor of every stage that fits; under the schedule objectives (DiviML) every schedule (kernels/schedule/brute.py).
Exact, and a proof of infeasibility when nothing is feasible; only for tiny instances (it
refuses more than `LIMIT` candidates)."""
from __future__ import annotations

import itertools
import math
from typing import Iterator

import numpy as np
from partdsl.core.errors import PartError
from partdsl.core.events import Candidate
from partdsl.core.ir import Spec
from partdsl.runtime.deadline import NEVER, Deadline

LIMIT = 200_000


def choices(spec: Spec) -> tuple[np.ndarray, list[np.ndarray]]:
    d = spec.dense
    _, comp = np.unique(d.colo, return_inverse=True)
    opts = [np.flatnonzero(d.allowed[comp == k].all(axis=0)) for k in range(comp.max() + 1)]
    return comp, opts


def _numbered(spec: Spec) -> int:
    """q when subgraph numbers are enumerated too, else 1."""
    return spec.constraints.subgraphs if spec.objective.kind == "latency" else 1


def count(spec: Spec) -> int:
    """Candidates to score (an upper bound when subgraph numbers or replicas are enumerated)."""
    return (math.prod(len(o) for o in choices(spec)[1]) * _numbered(spec) ** spec.dense.n
            * spec.constraints.replicate ** min(spec.dense.D, spec.dense.n))


def replica_choices(spec: Spec, dev: np.ndarray) -> Iterator[np.ndarray | None]:
    """Every replication factor of the stages of `dev` (evaluator/replicas.py) whose devices fit
    in their classes; None alone without `replicate <= r`."""
    k = spec.constraints.replicate
    if k == 1:
        yield None
        return
    d = spec.dense
    used = np.unique(dev)
    have = np.bincount(d.dev_class, minlength=len(d.class_names))
    for rs in itertools.product(range(1, k + 1), repeat=len(used)):
        take = np.bincount(d.dev_class[used], weights=rs, minlength=len(have))
        if (take <= have).all():
            r = np.ones(d.D, dtype=np.int64)
            r[used] = rs
            yield r


def run(spec: Spec, seed: int = 0, deadline: Deadline = NEVER, **_: object) -> Iterator[Candidate]:
    if spec.objective.scheduled:
        from partdsl.kernels.schedule import brute

        yield from brute.run(spec, seed, deadline)  # type: ignore[misc]
        return
    total = count(spec)
    if total > LIMIT:
        raise PartError(f"method brute would enumerate {total:,} candidates (limit {LIMIT:,})", None,
                        "use it on tiny graphs only; try `--method topo`")
    comp, opts = choices(spec)
    q = _numbered(spec)
    d = spec.dense
    for combo in itertools.product(*opts):
        dev = np.asarray(combo, dtype=np.int64)[comp]
        if q == 1:
            for r in replica_choices(spec, dev):
                yield Candidate("enumeration", dev, replicas=r)
            continue
        acc = np.flatnonzero(~d.host[d.dev_class[dev]])
        for numbers in itertools.product(range(q), repeat=len(acc)):
            sub = np.zeros(d.n, dtype=np.int64)
            sub[acc] = numbers
            yield Candidate("enumeration", dev, sub)

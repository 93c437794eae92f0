"""The MIP starts of method `exact`: the best answer the kernels find in a share of the
time budget (for the bottleneck below; `latency_start` and `schedule_start` for the
latency IP and the DiviML MILP, whose start also sets the horizon H). Warm starts matter (issue 3: cold HiGHS found 1343.8 on resnet50_training
where a topological split gives 493).

Candidates, each re-scored by the evaluator: the best `topo` split; the caller's warm
start; under contiguity, the DP over ideals (Tarnawski sec. 5.1.1, exact for acyclic
contiguous splits, pruned by the incumbent); then, for the bottleneck objective, the
load search (kernels/bottleneck/load_search.py) from the best of them, restarted with new seeds,
alternately from the best so far and from that first start (on resnet50_inference, any
split, fresh seeds reached 33.30-33.36 where continuing from the best stayed at 33.365),
until two rounds in a row bring nothing or the share of time is spent.
"""
from __future__ import annotations

import math
from typing import Callable, Generator

import numpy as np
from partdsl.core.evaluate import evaluate
from partdsl.core.events import Candidate, Event
from partdsl.core.ir import Spec
from partdsl.kernels.bottleneck import ideal_dp, load_search
from partdsl.kernels.bottleneck.ideals import too_big
from partdsl.kernels.bottleneck.topo_split import best_split
from partdsl.runtime.deadline import Deadline


def mip_start(spec: Spec, seed: int, deadline: Deadline, given: np.ndarray | None,
              progress: Callable[[str], None] | None
              ) -> Generator[Candidate, None, tuple[np.ndarray | None, float]]:
    """Yield the candidates; return the best feasible one and its value (None, inf if none)."""
    best: tuple[np.ndarray | None, str, float] = (None, "", math.inf)

    def consider(dev: np.ndarray | None, label: str) -> bool:
        nonlocal best
        if dev is None:
            return False
        ev = evaluate(spec, dev)
        if ev.feasible and ev.objective < best[2]:
            best = (dev, label, ev.objective)
            return True
        return False

    _, dev = best_split(spec, seed, deadline)
    if consider(dev, "topo"):
        yield Candidate("exact: MIP start (topo)", dev)
    consider(given, "the warm start")
    units = ideal_dp.units(spec) if spec.constraints.contiguous and not deadline.passed() else None
    if units is not None and too_big(units.count) is None:
        value, dev, ideals = ideal_dp.ideal_split(spec, best[2], deadline, u=units)
        if np.isfinite(value) and consider(dev, f"dp over {ideals:,} ideals"):
            yield Candidate("exact: MIP start (dp)", dev)
    first, idle, round_seed = best[0], 0, seed
    while spec.objective.kind == "bottleneck" and best[0] is not None and idle < 2 and not deadline.passed():
        # rounds alternate between the best so far and a fresh start from the first, each with a
        # new seed, until two in a row bring nothing
        origin = first if (round_seed - seed) % 2 else best[0]
        improved = False
        for cand in load_search.improve(spec, origin, deadline, round_seed, progress=progress):
            label, dev = cand.label, cand.devices
            if consider(dev, "load search"):
                improved = True
                yield Candidate(f"exact: MIP start ({label})", dev)
        idle, round_seed = (0 if improved else idle + 1), round_seed + 1
    if progress and best[0] is not None:
        progress(f"MIP start: {best[1]}, {best[2]:.6g}")
    return best[0], best[2]


def best_start(spec: Spec, seed: int, deadline: Deadline, given: np.ndarray | None,
               progress: Callable[[str], None] | None) -> tuple[np.ndarray | None, float]:
    """mip_start() run to its end, without its candidates: the best split and its value."""
    gen = mip_start(spec, seed, deadline, given, progress)
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            return stop.value


def latency_start(spec: Spec, seed: int, deadline: Deadline, given: np.ndarray | None,
                  progress: Callable[[str], None] | None) -> Generator[Event, None, tuple[Candidate | None, float]]:
    """The latency IP's start and horizon: the caller's warm start and latency_search's
    splits (its proofs and progress passed on); returns the best feasible one and its latency."""
    from partdsl.kernels.latency import search as latency_search

    best: tuple[Candidate | None, float] = (None, math.inf)
    if given is not None:
        ev = evaluate(spec, given)
        if ev.feasible:
            best = (Candidate("warm start", given, ev.subgraph), ev.objective)
    for item in latency_search.run(spec, seed, deadline, progress):
        if not isinstance(item, Candidate):
            yield item
            continue
        ev = evaluate(spec, item.devices, item.subgraphs)
        if ev.feasible and ev.objective < best[1]:
            best = (Candidate(item.label, item.devices, ev.subgraph), ev.objective)
        yield Candidate(f"exact: MIP start ({item.label})", item.devices, item.subgraphs)
    return best


def schedule_start(spec: Spec, seed: int, deadline: Deadline, given: np.ndarray | None,
                   progress: Callable[[str], None] | None) -> Generator[Event, None, tuple[Candidate | None, float]]:
    """The DiviML MILP's start and horizon: the best of HEFT, Greedy (EFT) and the biased
    (1+1) EA; returns it and its makespan (ms; inf if none is feasible)."""
    from partdsl.core.schedule_eval import as_makespan, evaluate_schedule
    from partdsl.kernels.schedule import list_schedulers
    from partdsl.kernels.schedule import search as schedule_search

    starts = [Candidate(f"exact: MIP start ({r})", schedule=list_schedulers.schedule(spec, r)) for r in ("heft", "eft")]
    starts += [Candidate(f"exact: MIP start ({c.label})", schedule=c.schedule)
               for c in schedule_search.ea(spec, seed, deadline, iterations=300) if isinstance(c, Candidate)]
    best: tuple[Candidate | None, float] = (None, math.inf)
    for cand in starts:
        ev = evaluate_schedule(spec, cand.schedule)
        if ev.feasible and as_makespan(spec, ev.objective) < best[1]:
            best = (Candidate(cand.label, schedule=ev.schedule), as_makespan(spec, ev.objective))
        yield cand
    return best

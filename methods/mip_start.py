"""The MIP starts of method `exact`: the best answer the kernels find in a share of the
time budget (for the bottleneck below; `latency_start` and `schedule_start` for the
latency IP and the DiviML MILP, whose start also sets the horizon H). Warm starts matter (issue 3: cold HiGHS found 1343.8 on resnet50_training
where a topological split gives 493).

Candidates, each re-scored by the evaluator: the best `topo` split; the caller's warm
start; if the share passed before any order was split (a loaded machine), the greedy
fill, linear and kept whatever the time, so a limit does not end with nothing; under
contiguity, the DP over ideals (Tarnawski sec. 5.1.1, exact for acyclic contiguous
splits, pruned by the incumbent); then, for the bottleneck objective, the
load search (kernels/bottleneck/load_search.py) from the best of them, restarted with new seeds,
alternately from the best so far and from that first start (on resnet50_inference, any
split, fresh seeds reached 33.30-33.36 where continuing from the best stayed at 33.365),
until two rounds in a row bring nothing or the share of time is spent.
"""
from __future__ import annotations

import math
from typing import Callable, Generator

import numpy as np
from partdsl.core.events import Candidate, Event
from partdsl.core.ir import Spec
from partdsl.evaluator.evaluate import evaluate
from partdsl.kernels.bottleneck import baselines, ideal_dp, load_search
from partdsl.kernels.bottleneck.ideals import too_big
from partdsl.kernels.bottleneck.topo_split import best_candidate
from partdsl.runtime.deadline import Deadline


def mip_start(spec: Spec, seed: int, deadline: Deadline, given: np.ndarray | None,
              progress: Callable[[str], None] | None
              ) -> Generator[Candidate, None, tuple[Candidate | None, float]]:
    """Yield the candidates; return the best feasible one (with its replication factors
    under `replicate`) and its value (None, inf if none)."""
    best: tuple[Candidate | None, float] = (None, math.inf)

    def consider(dev: np.ndarray | None, label: str, reps: np.ndarray | None = None) -> bool:
        nonlocal best
        if dev is None:
            return False
        ev = evaluate(spec, dev, replicas_of=reps)
        if ev.feasible and ev.objective < best[1]:
            best = (Candidate(label, dev, replicas=reps), ev.objective)
            return True
        return False

    _, cand = best_candidate(spec, seed, deadline)
    if cand is not None and consider(cand.devices, "topo", cand.replicas):
        yield Candidate("exact: MIP start (topo)", cand.devices, replicas=cand.replicas)
    consider(given, "the warm start")
    if best[0] is None and deadline.passed():  # a loaded machine: no order split in the heuristics' share
        for cand in baselines.greedy(spec, seed):  # linear, and kept whatever the time (issue 75, item 7)
            if consider(cand.devices, "greedy", cand.replicas):
                yield Candidate("exact: MIP start (greedy: the limit passed before any order was split)",
                                cand.devices, replicas=cand.replicas)
    units = ideal_dp.units(spec) if spec.constraints.contiguous and not deadline.passed() else None
    if units is not None and too_big(units.count) is None:
        value, dev, ideals, reps = ideal_dp.chain_split(spec, best[1], deadline, None, units)
        if np.isfinite(value) and consider(dev, f"dp over {ideals:,} ideals", reps):
            yield Candidate("exact: MIP start (dp)", dev, replicas=reps)
    first, idle, round_seed = best[0], 0, seed
    while spec.objective.kind == "bottleneck" and best[0] is not None and idle < 2 and not deadline.passed():
        # rounds alternate between the best so far and a fresh start from the first, each with a
        # new seed, until two in a row bring nothing
        origin = first if (round_seed - seed) % 2 else best[0]
        improved = False
        for cand in load_search.improve(spec, origin.devices, deadline, round_seed, progress=progress,
                                        factors=origin.replicas):
            label, dev = cand.label, cand.devices
            if consider(dev, "load search", cand.replicas):
                improved = True
                yield Candidate(f"exact: MIP start ({label})", dev, replicas=cand.replicas)
        idle, round_seed = (0 if improved else idle + 1), round_seed + 1
    if progress and best[0] is not None:
        progress(f"MIP start: {best[0].label}, {best[1]:.6g}")
    return best


def best_start(spec: Spec, seed: int, deadline: Deadline, given: np.ndarray | None,
               progress: Callable[[str], None] | None) -> tuple[np.ndarray | None, float]:
    """mip_start() run to its end, without its candidates: the best split and its value."""
    gen = mip_start(spec, seed, deadline, given, progress)
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            cand, value = stop.value
            return (None if cand is None else cand.devices), value


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
    from partdsl.evaluator.schedule_eval import as_makespan, evaluate_schedule
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

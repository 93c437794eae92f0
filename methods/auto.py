"""Method `auto`, the default: a small portfolio run within one time limit (issue 32).

It chooses by objective, the spec's features and its size: fast heuristics, then
improvement, then an exact method where the size allows, and the brute force on specs
small enough to enumerate, where the exact method could not prove the optimum (the DP
over ideals comes right after the greedy where it is exact and the units form one path:
it then proves in milliseconds what the searches would spend their share on), each
member on a share of the time left (the last on all of it). Every member's candidates
and proofs go to `solve` as they come, so the answer kept is the best the evaluator
scored, certified by the best bound any member proved; `solve` stops the portfolio as
soon as the gap asked for is met. A member that does not model one of the spec's
features is left out (methods/capabilities.py); one that refuses the spec as it runs (a
memory guard, a formulation's check) is skipped with its reason in the log, so `auto`
answers whenever one of its members does.

Without a time limit the heuristics run to their end and the searches that could run
for long (the load search's descents, the DP over ideals, the MIPs) share UNTIMED_SECONDS,
as they would share a limit: a load search left to its own stall rule takes a quarter of an
hour on a 10,000-operator graph.
Without a limit, too, the improvement searches (`stall` members) stop once they stall:
after their first answer, nothing better for max(0.5 s, a quarter of the time the searches
have run) (runtime/deadline.py `Stalling`); under a limit they do the same when a member
comes after them, which gets the time left of their share (a MIP that could close the
gap); the DP over ideals, which proves nothing without `acyclic` and answers only when it
ends, is left out above DP_UNTIMED_UNITS units, where it does not end in the budget; with a
limit it takes the portfolio's incumbent, so it spends none of its time on a start.
The first member of each objective is linear in the graph's size, and runs to its end even
when the limit has passed before it starts (a loaded machine), so that a limit does not end
with nothing; above PEER_NODES the graph partitioners join the bottleneck portfolio, so that
graphs whose segment tables do not fit in memory still get an answer; the DP over ideals is left out where its bitsets
would not fit (kernels/bottleneck/ideal_dp.py `too_big`), so the load search gets its time.
"""
from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np
from partdsl.core.errors import PartError
from partdsl.core.events import BudgetSpent, Candidate, Event, Progress, Proven
from partdsl.core.ir import Spec
from partdsl.core.solver_errors import SolverFailed, SolverUnavailable
from partdsl.kernels.bottleneck import ideal_dp
from partdsl.methods import capabilities
from partdsl.runtime.deadline import NEVER, Deadline, Stalling
from partdsl.runtime.executor import warm_pool

Methods = Mapping[str, Any]  # the method table, name -> registry.Method (not imported: registry lists auto)

UNTIMED_SECONDS = 5.0  # the long searches' budget, all together, when the run has no time limit
EXACT_NODES = 400  # the MIPs join the portfolio up to this many nodes (MILP-SPLIT beyond, under DiviML)
LIMITED_EXACT_NODES = 2_500  # under a time limit the max-load IP joins up to this many (2,012 nodes: 2 s, 350 MB)
EXACT_DEVICES = 16  # ... and this many devices
BRUTE_NODES, BRUTE_CANDIDATES = 10, 5_000  # the brute force ends the portfolio on specs this small: a proof
DP_UNTIMED_UNITS = 2_000  # the most units for the DP without a limit (decoders: 0.5 s at 2k, 2 s at 4k, 12 s at 10k)
DP_FIRST_UNITS = 12  # up to this many units (at most 4,096 ideals) a proving DP runs before the searches
PEER_NODES = 5_000  # above this many nodes the graph partitioners join (the segment tables grow as P^2)
POOLED = frozenset({"milp_split"})  # members that run subproblems on worker processes (warm_pool)
REPAIR = (("repair", 1.0),)  # the peers contract colocation and repair memory and placement


@dataclass(frozen=True)
class Member:
    """One portfolio step: a method, its share of the time left when it starts, its options."""

    method: str
    share: float
    long: bool = False  # may run for long: bounded by UNTIMED_SECONDS when there is no limit
    options: tuple[tuple[str, float], ...] = ()
    stall: bool = False  # an improvement search: without a limit it stops once it stalls (Stalling)
    seeded: bool = False  # takes the portfolio's best value as `incumbent` instead of finding its own
    untimed: bool = True  # runs when there is no time limit
    quick: bool = False  # linear in the graph: as the first member it runs even when the limit has passed


def small(spec: Spec) -> bool:
    return spec.dense.n <= EXACT_NODES and len(spec.platform.devices) <= EXACT_DEVICES


def _exact(spec: Spec) -> list[Member]:
    """The exact MIP as the last member: on small specs always; on bottleneck specs up to
    LIMITED_EXACT_NODES only under a time limit, where it takes the time the searches left
    (started from their best, its incumbent can only improve and its bound rise: BERT-12's
    operator graph, any split, 147.48 at a 27.9% gap after the searches' 2 s, 130.04 at
    14.3% after 300 s)."""
    mid = spec.objective.kind == "bottleneck" and spec.dense.n <= LIMITED_EXACT_NODES and \
        len(spec.platform.devices) <= EXACT_DEVICES
    return [Member("exact", 1.0, True, (("heuristics", 0.05),), untimed=small(spec))] if small(spec) or mid else []


def enumerable(spec: Spec) -> bool:
    if spec.dense.n > BRUTE_NODES:
        return False
    from partdsl.kernels import brute_force
    from partdsl.kernels.schedule import brute

    return (brute.count(spec) if spec.objective.scheduled else brute_force.count(spec)) <= BRUTE_CANDIDATES


def portfolio(spec: Spec) -> list[Member]:
    """The members for this spec, in order, before the capability filter."""
    brute = [Member("brute", 1.0)] if enumerable(spec) else []
    return _searches(spec) + brute


def _searches(spec: Spec) -> list[Member]:
    kind = spec.objective.kind
    exact = _exact(spec)
    if spec.objective.scheduled:  # DiviML: list schedulers, MILP-SPLIT, then the whole MILP (or the EA)
        return [Member("heft", 0.05), Member("eft", 0.05), Member("met", 0.05),
                Member("milp_split", 0.9 if exact else 0.7, True),
                *(exact or [Member("ea", 1.0, True, (("iterations", 2000),), stall=True)])]
    if kind == "latency":  # the greedy first (an answer at once), then the search that wins most
        return [Member("fill", 0.05, quick=True), Member("latency_search", 0.75, True, stall=True),
                Member("maxload_dp", 0.5, True), *exact]
    if spec.constraints.interleave > 1:  # chunks round robin: the chain cutter, then brute force where it enumerates
        return [Member("interleave", 1.0, True)]
    # the greedy first: linear, an answer at any size (the segment tables refuse 50,000 nodes);
    # on large graphs METIS and Mt-KaHyPar next (near-linear; skipped when not installed)
    peers = [Member("metis", 0.1, options=REPAIR), Member("kahypar", 0.2, options=REPAIR)] \
        if spec.dense.n > PEER_NODES else []
    units = ideal_dp.units(spec).count
    dp = [Member("dp", 0.5, True, seeded=True, untimed=units <= DP_UNTIMED_UNITS)] \
        if ideal_dp.too_big(units) is None else []
    # with peak activations in memory only the evaluator-driven local search models memory (the rows of methods/registry.py that leave ACTIVATIONS out)
    local = [Member("local_search", 0.5, True, stall=True)] if spec.constraints.activations else []
    # where the DP proves the optimum and its units form one path (ideals = units + 1: a pipeline
    # of layers) or are few (mtpp_overflow.part: 11 ideals; load_search took 48 ms to stall, the
    # DP 1 ms), it runs before the searches, whose time the proof then saves (issue 75, item 9)
    first = dp if dp and units <= DP_UNTIMED_UNITS and ideal_dp.exact_for(spec) and \
        (units <= DP_FIRST_UNITS or ideal_dp.chained(spec)) else []
    return [Member("greedy", 0.05, quick=True), *peers, *first, Member("load_search", 0.3, True, stall=True),
            *local, *(dp if not first else []), *exact]


def members(spec: Spec, methods: Methods) -> list[Member]:
    """The portfolio less the members that take another objective or ignore one of the
    spec's features. `methods`: the method table (methods/registry.py, which lists auto)."""
    kind = spec.objective.kind
    return [p for p in portfolio(spec) if kind in methods[p.method].objectives
            and not capabilities.unmodelled(spec, methods[p.method].ignores, dict(p.options))]


def _no_member(spec: Spec, methods: Methods) -> PartError:
    """Every member of the portfolio ignores one of the spec's features: say which models each."""
    kind = spec.objective.kind
    used = capabilities.features(spec)
    who = {f: [m.name for m in methods.values() if kind in m.objectives and not m.portfolio
               and capabilities.models(m.ignores, f, used)] for f in used}
    ignored = [f for f in used if any(f in {g for g, _ in methods[p.method].ignores} for p in portfolio(spec))]
    detail = "; ".join(f"{f}: {', '.join(who[f]) or 'none'}" for f in ignored)
    return PartError(f"no method that auto runs on this spec models all of its features ({detail})",
                     capabilities.WHERE[ignored[0]](spec) if ignored else None,
                     "drop one of these features, or run `--method brute` on a graph small enough to enumerate")


def _budget(deadline: Deadline, long: Deadline, p: Member, last: bool, first: bool = False) -> Deadline:
    """A member's deadline: its share of the time left (all of it for the last member, and
    for a first heuristic, the greedy whose answer the others improve on: HEFT stops at its
    deadline, and on 20,000 tasks it needs seconds; a long search that comes first where no
    greedy models the spec takes its share, or it would leave the others nothing); without
    a limit, none for a heuristic, and its share of what is left of UNTIMED_SECONDS (`long`)
    for a long search."""
    if deadline.limited:
        return deadline if last or (first and not p.long) else deadline.share(p.share)
    if not p.long:
        return NEVER
    return long if last else long.share(p.share)


def _why_stopped(p: Member, budget: Deadline, deadline: Deadline, after: str | None) -> Iterator[Event]:
    """What the log says when a member ended at its budget: the search budget or a stall
    without a limit; under one, a stall that hands the rest of its share to `after`."""
    if deadline.limited:
        if isinstance(budget, Stalling) and budget.passed() and budget.left() > 0 and after:
            yield Progress(f"auto: {p.method} stopped when it stalled, {budget.left():.3g} s before its share "
                           f"ended; {after} gets that time")
    elif budget.passed():
        yield BudgetSpent(f"auto: {p.method} stopped at the {UNTIMED_SECONDS:g} s budget for searches "
                          "(no --time-limit)" if budget.left() < 0 else
                          f"auto: {p.method} stopped when it stalled (no --time-limit)")


class _Progress:
    """When a member's search last got somewhere (a Stalling deadline's `better`): +inf
    before its first candidate (a search that has not answered yet is not stalled), then
    the later of that candidate and the portfolio's last better value (polled)."""

    def __init__(self, incumbent: Callable[[], tuple[float, np.ndarray] | None]) -> None:
        self.incumbent = incumbent
        self.value: float | None = None
        self.at = math.inf

    def _value(self) -> float | None:
        best = self.incumbent()
        return None if best is None else best[0]

    def answered(self) -> None:
        if self.at == math.inf:
            self.at, self.value = time.monotonic(), self._value()

    def __call__(self) -> float:
        if self.at < math.inf and (value := self._value()) != self.value:
            self.value, self.at = value, time.monotonic()
        return self.at


def run(spec: Spec, seed: int = 0, deadline: Deadline = NEVER, progress: Callable[[str], None] | None = None,
        incumbent: Callable[[], tuple[float, np.ndarray] | None] = lambda: None,
        methods: Methods | None = None, **common: object) -> Iterator[Event]:
    """Run the members in turn; each candidate is tagged with the member that found it.
    `incumbent()`: the value and assignment of the best feasible answer `solve` has scored
    so far: a MIP member's start, and the optimum once an exhaustive member has ended.
    `methods`: the method table (`solve` passes it)."""
    if methods is None:
        raise PartError("method auto runs through solve(), which passes it the method table", None)
    chosen = members(spec, methods)
    if not chosen:
        raise _no_member(spec, methods)
    if not deadline.limited and any(not p.untimed for p in chosen):
        yield Progress("auto: no time limit, so " + ", ".join(p.method for p in chosen if not p.untimed)
                       + " left out (it would not end in the search budget)")
        chosen = [p for p in chosen if p.untimed]
    yield Progress("auto: " + ", then ".join(p.method for p in chosen))
    long: Deadline | None = None  # no limit: UNTIMED_SECONDS from the first long search on
    searching = 0.0  # when the first long search started
    # members that run subproblems on worker processes get them started now, warm when they come
    pooled = "executor" not in common and any(p.method in POOLED for p in chosen)
    if pooled:  # imported here: MILP-SPLIT's modules need networkx (0.2 s), which the other members do not
        from partdsl.methods.milp_split_modules import WORKER_MODULES, pool_pays

        pooled = pool_pays(spec)
    with warm_pool(None, WORKER_MODULES) if pooled else nullcontext(None) as pool:
        for i, p in enumerate(chosen):
            # a first answer whatever the time (issue 75, item 7: under load, 5 s passed before it)
            late = i == 0 and p.quick and deadline.passed()
            if deadline.passed() and not late:
                return
            m = methods[p.method]
            extra, options = dict(common), dict(p.options)
            if m.mip:
                best = incumbent()
                extra["start"] = best[1] if best is not None and (best[1] >= 0).all() else None
                # latency_search ran before it: the latency IP starts from its best, not from a search of
                # its own (latency.part: 0.3 s of the 2.1 s auto took). The max-load IP keeps its share:
                # under contiguity it polishes the start without contiguity for its relaxation's bound
                if extra["start"] is not None and i > 0 and p.method == "exact" and spec.objective.kind == "latency":
                    options["heuristics"] = 0.0
            else:
                extra.pop("start", None)
                extra.pop("executor", None)
            if p.seeded and (best := incumbent()) is not None:
                extra["incumbent"] = best[0]
            if pool is not None and p.method in POOLED:
                extra["executor"] = pool
            if p.long and long is None:
                long, searching = Deadline.after(UNTIMED_SECONDS), time.monotonic()
                if not deadline.limited:
                    yield Progress(f"auto: no time limit, so {', '.join(q.method for q in chosen[i:] if q.long)} "
                                   f"share {UNTIMED_SECONDS:g} s (--time-limit to search longer or shorter)")
            budget = NEVER if late else _budget(deadline, long or NEVER, p, i == len(chosen) - 1, i == 0)
            moved = _Progress(incumbent)
            later = i < len(chosen) - 1  # under a limit a stalled search hands its time on (issue 75, item 9)
            if p.stall and long is not None and (not deadline.limited or later):
                budget = Stalling(budget.at, since=time.monotonic(), origin=searching, better=moved)
            if budget.passed():  # the members before it used the time (a MIP stops a little late)
                said = f"auto: {p.method} skipped: no time left"
                yield BudgetSpent(said + " of the search budget") if not deadline.limited else Progress(said)
                continue
            yield Progress(f"auto: {p.method}" + (f" for {budget.left():.3g} s" if budget.limited else ""))
            try:
                for ev in m.run(spec, seed=seed, deadline=budget, progress=progress, **extra, **options):
                    if isinstance(ev, Candidate):
                        moved.answered()
                        ev = dataclasses.replace(ev, method=p.method)
                    yield ev
            except PartError as e:  # the member refuses this spec (too big for memory, a feature): the next one runs
                yield Progress(f"auto: {p.method} skipped: {e.message}")
                continue
            except (SolverUnavailable, SolverFailed) as e:  # a peer not installed; a solver's own failure
                yield Progress(f"auto: {p.method} skipped: {e}")
                continue
            yield from _why_stopped(p, budget, deadline, chosen[i + 1].method if later else None)
            if m.exhaustive and not budget.passed():  # it scored the evaluator's whole space: the best is optimal
                best = incumbent()
                empty = math.inf if spec.objective.sense == "min" else 0.0
                yield Proven(best[0] if best is not None else empty, f"{p.method} enumerated every candidate")

"""MILP-SPLIT's pieces (Ghannane & Abdelfattah sec. IV-B): the chain of modules, one
module's DiviML MILP, and the lower bound.

The bound (the Remark, for any set X of nodes whose first module is M_s, X_s = X n M_s):
if every node of X_s reaches a channel out of X_s, the last of X_s to finish is followed
by all of dep(I_t) for some channel input I_t, so OPT(X) >= OPT(X_s) + min_t OPT(dep(I_t));
if every node after X_s descends from a channel input, the first of them waits for all of
pre(O_t) for some channel output, so OPT(X) >= OPT(X \\ X_s) + min_t OPT(pre(O_t)). In our
semantics a piece waits for every share of each predecessor, so the whole batch moves
through a channel at once and the bound holds for batches as it is (the paper's L - b + 1
refinement is for per-sample precedence). OPT of a set inside one module is bounded by its
MILP's dual bound (capped), or by the critical-path, spread and work bounds
(methods/bounds.py).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Iterator

import numpy as np
from partdsl.core.errors import PartError
from partdsl.core.events import Candidate
from partdsl.core.ir import Spec
from partdsl.core.result import Status
from partdsl.core.schedule import Piece, Schedule
from partdsl.evaluator.schedule_eval import as_makespan, evaluate_schedule, list_schedule
from partdsl.kernels.graph.modules import Split, boundary_edges, chain, restrict, split_articulations
from partdsl.kernels.schedule import list_schedulers
from partdsl.methods.bounds import makespan_bound
from partdsl.models import diviml, diviml_symmetry
from partdsl.runtime.deadline import NEVER, Deadline
from partdsl.runtime.executor import job_threads, run_all, width

MAX_BOUND_SETS = 200  # node sets the bound recursion may visit (then the simple bound)

MIN_MILP_SECONDS = 0.05  # a module MILP gets at least this long, or is not built
# HiGHS checks no time limit in presolve: DenseNet-121's 941-node module (3.65M nonzeros) took
# 4.0 s to presolve its start's LP and 4.4 s more for the MIP under a 3 s limit (MILP-SPLIT
# ended at 14 s under --time-limit 10), so a MILP that could not get through presolve is not run
PRESOLVE_NONZEROS_PER_SECOND = 1_000_000
LATE_SECONDS = 0.5  # jobs may compute HEFT's start until this long past the deadline (aborted there), then nothing
# what a worker process imports as it starts (runtime/executor.warm_pool): the module MILP and its solvers
WORKER_MODULES = ("partdsl.methods.milp_split_modules", "partdsl.solvers.dispatch")
HERE_TASKS = 32  # at most this many tasks (nodes x batch pieces): the module MILPs take less than a process's start
AUTO_CHANNELS = 4  # channels tried, fewest first, when none is given (the paper's networks: 1 to 4)
SA_MOVES_PER_TASK = 20  # the annealing start's moves per task (node x batch piece), within its seconds


def pool_pays(spec: Spec) -> bool:
    """Whether the module MILPs are worth worker processes (a second or more each to start)."""
    return len(spec.graph.nodes) * spec.objective.split > HERE_TASKS


@dataclass(frozen=True)
class ModuleResult:
    makespan: float  # ms, inf if no schedule
    bound: float  # ms, a proven lower bound on the module's makespan (with its pins)
    pieces: tuple[tuple[float, Piece], ...]  # (MILP start, piece), module-local node indices
    why: str


def solve_module(spec: Spec, release: np.ndarray | None, time_limit: float, solver: str | None,
                 threads: int | None, gap: float | None = None, symmetry: int = 0,
                 hard: Deadline = NEVER, cutoff: float = math.inf, given: tuple[Schedule, ...] = ()) -> ModuleResult:
    """The DiviML MILP of one module (a restricted spec); H and the MIP start from the best
    of `_starts` and the `given` schedules (each re-timed to the release times: `released`).
    With no time left (`time_limit` <= 0) the
    best start alone, without building the MILP; nothing if even HEFT's would end past
    `hard`. `symmetry`: the rows of models/diviml_symmetry.py (among devices and servers
    alike, release times included). `cutoff`: H at most this (methods/milp_split_chain.py);
    a MILP infeasible under it proves the module's makespan above it (its bound)."""
    from partdsl.solvers.dispatch import solve_matrix

    until = Deadline.after(max(time_limit, 0.0))
    ev, end = None, math.inf
    for sched in (*given, *_starts(spec, 0.15 * max(time_limit, 0.0), until, hard)):
        e = evaluate_schedule(spec, released(spec, sched, release))
        if e.feasible and as_makespan(spec, e.objective) < end:
            ev, end = e, as_makespan(spec, e.objective)
    moved = None if ev is None else ev.schedule
    # the starts take their time out of the module's: on a large module (941 nodes under a split
    # batch) they took seconds, and a MILP given the whole limit after them ran 3x past it
    if until.left() < MIN_MILP_SECONDS:  # past the deadline: building and running a MILP would overrun it
        return _start_only(end, moved, "time limit reached before its MILP")
    shift = float(np.max(release)) if release is not None and release.size else 0.0
    H = end if math.isfinite(end) else shift + diviml.safe_horizon(spec)
    capped = cutoff < H
    H = min(H, cutoff)
    mip, vm = diviml.build(spec, H, release, symmetry)
    if moved is not None and symmetry and not capped:
        moved = diviml_symmetry.canonical(spec, symmetry, moved, release)
    start = None if moved is None or capped else diviml.encode(spec, vm, moved)  # a start past the cap fits no row
    # the build takes its time out of the MILP's too: BN-Inception's largest module took 2 s to
    # build, and MILP-SPLIT ended up to 1 s past --time-limit 10
    time_limit = until.left() * (0.85 if spec.objective.split > 1 else 1.0)
    if time_limit < MIN_MILP_SECONDS:
        return _start_only(end, moved, "time limit reached while its MILP was built")
    presolves = 2 if start is not None else 1  # HiGHS presolves the LP that completes a MIP start, then the MIP
    if mip.A.nnz * presolves > PRESOLVE_NONZEROS_PER_SECOND * time_limit:
        return _start_only(end, moved, f"its MILP ({mip.A.nnz:,} nonzeros) would not get through the solver's "
                                       f"presolve in {time_limit:.2g} s")
    out = solve_matrix(mip, solver, time_limit, gap, threads, start)
    # the best start stays the module's schedule unless the MILP beats it (issue 28, defect 2)
    kept = ModuleResult(end, 0.0, tuple((q.start, q) for q in moved.pieces), "the best start") \
        if ev is not None else ModuleResult(math.inf, 0.0, (), out.why)
    if out.status == Status.INFEASIBLE:
        if capped:  # no schedule ends by the cap (below the start's makespan): the cap is a bound
            return ModuleResult(kept.makespan, min(H, kept.makespan), kept.pieces, f"none by the cap; {kept.why}") \
                if ev is not None else ModuleResult(math.inf, H, (), "none by the cap")
        # capped at a start's makespan, infeasible says only that the MILP cannot beat the start
        return kept if ev is not None else ModuleResult(math.inf, math.inf, (), "infeasible")
    bound = float(out.bound) if np.isfinite(out.bound) else 0.0
    if not out.status.has_solution():
        return ModuleResult(kept.makespan, bound, kept.pieces, f"{out.why}; {kept.why}" if ev is not None else out.why)
    made = float(out.x[vm.C])
    if made > kept.makespan:  # a start the MILP could not take (outside its space) that it did not beat
        return ModuleResult(kept.makespan, min(bound, kept.makespan), kept.pieces, f"{out.why}; {kept.why}")
    return ModuleResult(made, min(bound, made), tuple(diviml.decode_pieces(spec, vm, out.x)), out.why)


def released(spec: Spec, sched: Schedule, release: np.ndarray | None) -> Schedule:
    """A start's pieces in its order, re-timed so none starts before its release time
    (release[node, device]): a piece whose inputs and device are free early starts early,
    where moving the whole start past the last release delayed every piece. By induction
    over the order, no piece starts later than it would moved, so neither does the end."""
    if release is None or not release.size:
        return sched
    pos = spec.dense.topo_position
    order = sorted(range(len(sched.pieces)), key=lambda k: (sched.pieces[k].start or 0.0, pos[sched.pieces[k].node], k))
    return list_schedule(spec, sched, piece_order=order, release=release)


def _start_only(makespan: float, moved: Schedule | None, why: str) -> ModuleResult:
    """A module's result without its MILP: the best start (re-timed to the releases), if any."""
    if moved is None:
        return ModuleResult(math.inf, 0.0, (), why)
    return ModuleResult(makespan, 0.0, tuple((q.start, q) for q in moved.pieces), why + "; the best start")


def solve_module_by(spec: Spec, release: np.ndarray | None, until: float, rounds_left: int, cap: float,
                    solver: str | None, threads: int | None, symmetry: int = 0,
                    cutoff: float = math.inf) -> ModuleResult:
    """`solve_module` with its time limit taken when the job starts, not when it is queued:
    its share (0.8, the rest for building the model and the starts) of the seconds left
    until `until` (a wall-clock time.time(), which worker processes and machines share),
    divided among the `rounds_left` rounds of jobs its worker still has, capped by `cap`.
    Late starts (spawning the workers takes seconds) and overruns shrink the later limits
    instead of passing the deadline (issue 29: MILP-SPLIT ran 2-3 s past --time-limit 5)."""
    late = until + LATE_SECONDS - time.time()
    if late <= 0:  # long past the deadline: not even a start (its pairs go unused)
        return ModuleResult(math.inf, 0.0, (), "not tried: past the time limit")
    return solve_module(spec, release, limit_at(until, rounds_left, cap), solver, threads, symmetry=symmetry,
                        hard=Deadline.after(late), cutoff=cutoff)


RETRY_SECONDS = 1.0  # the unproven module MILPs run again only with at least this long left


def solve_all(jobs: list[Spec], until: float, cap: float, solver: str | None, threads: int | None,
              symmetry: int, workers: int | None, executor=None,  # type: ignore[no-untyped-def]
              cutoffs: list[float] | None = None) -> Iterator[tuple[int, ModuleResult]]:
    """(job index, result) of every module MILP in `jobs`, each taking its limit when it
    starts (`solve_module_by`), job i capped at cutoffs[i] if given; under a time limit
    (`cap` infinite), those stopped unproven run again in the time left over (most modules
    prove in a fraction of their share), each then reporting the better of its two runs."""
    W = width(workers, executor)
    rounds = -(-len(jobs) // W)
    cut = cutoffs or [math.inf] * len(jobs)
    args = [(j, None, until, rounds - i // W, cap, solver, threads, symmetry, cut[i]) for i, j in enumerate(jobs)]
    first: dict[int, ModuleResult] = {}
    for idx, r in run_all(solve_module_by, args, workers, executor):
        first[idx] = r
        yield idx, r
    again = [i for i, r in first.items()  # unproven: its bound below its makespan (or its cap)
             if math.isfinite(r.makespan) and r.bound < min(r.makespan, cut[i]) * (1 - 1e-4)]
    if not again or math.isfinite(cap) or until - time.time() < RETRY_SECONDS:
        return
    rounds = -(-len(again) // W)
    args = [(jobs[i], None, until, rounds - n // W, cap, solver, threads, symmetry, cut[i])
            for n, i in enumerate(again)]
    for n, r in run_all(solve_module_by, args, workers, executor):
        i = again[n]
        best = r if r.makespan < first[i].makespan else first[i]
        yield i, ModuleResult(best.makespan, min(max(r.bound, first[i].bound), best.makespan), best.pieces,
                              f"run again: {r.why}" + ("" if best is r else f"; first run's schedule: {first[i].why}"))


def limit_at(until: float, rounds_left: int, cap: float) -> float:
    """A module MILP's seconds, now: 0.8 of the time left over the rounds left, at most
    `cap`, at least 0.05 s; 0 for a job that starts past `until` (it returns its start, no
    MILP: building one per remaining job ran MILP-SPLIT 6x past --time-limit 2)."""
    left = until - time.time()
    if left <= 0:
        return 0.0
    return max(min(cap, 0.8 * left / max(rounds_left, 1)), MIN_MILP_SECONDS)


def _starts(spec: Spec, seconds: float, until: Deadline, hard: Deadline = NEVER) -> Iterator[Schedule]:
    """MIP start candidates: HEFT, Greedy, and under a split batch (where the MILP rarely
    closes) simulated annealing for `seconds` or SA_MOVES_PER_TASK moves per task, whichever
    ends first (on a 5-node module under a split of 2, 1.5 s of annealing took 10x the
    MILP's time, which then proved the optimum anyway); HEFT alone when there are no seconds or
    fewer left before `until` than HEFT took (on a 941-node module under a split batch,
    each takes a second and Greedy's ran 1.6 s past --time-limit 5)."""
    from partdsl.kernels.schedule import search as schedule_search

    began = time.monotonic()
    heft = list_schedulers.schedule_until(spec, "heft", hard)
    if heft is None:  # past `hard`: no start at all
        return
    took = time.monotonic() - began  # HEFT's own time (not the caller's scoring of it)
    yield heft
    if seconds <= 0 or until.left() < took:  # Greedy takes about as long as HEFT: it would end past the deadline
        return
    yield list_schedulers.schedule(spec, "eft")
    if spec.objective.split == 1 or until.passed():
        return
    until = Deadline.after(min(seconds, until.left()))
    moves = SA_MOVES_PER_TASK * spec.dense.n * spec.objective.split
    for item in schedule_search.sa(spec, 0, until, iterations=moves):
        if isinstance(item, Candidate):
            yield item.schedule


def module_bound(spec: Spec, time_limit: float, solver: str | None, threads: int | None,
                 until: float = math.inf) -> float:
    """A lower bound on a node set's optimal makespan: its MILP's dual bound, or the simple
    one; the simple one alone for a job that starts with less than `time_limit` left before
    `until` (a wall-clock time.time())."""
    simple = makespan_bound(spec)
    if time_limit <= 0 or until - time.time() < time_limit:
        return simple
    try:
        r = solve_module(spec, None, time_limit, solver, threads)
    except PartError:
        return simple
    return max(simple, r.bound)


class ModulePlan:
    """The chain and its bookkeeping."""

    def __init__(self, spec: Spec, channels: int, min_size: int) -> None:
        self.channels = channels
        self.split: Split = split_articulations(spec) if channels == 1 else Split(spec, tuple(range(spec.dense.n)), {})
        self.s = self.split.spec
        self.modules = chain(self.s, channels, min_size)
        self.cuts = boundary_edges(self.s, self.modules)

    @classmethod
    def fewest_channels(cls, spec: Spec, min_size: int) -> "ModulePlan":
        """With no channel count given: one channel if that splits the graph at all (the
        DP over exact pairs, IV-B1), else the fewest channels (2 to AUTO_CHANNELS) whose
        largest module holds at most half the nodes, else the one with the smallest largest
        module. A 2-channel RandWire read with one channel is one module (the whole MILP),
        and a 4-channel one read with 3 splits off only its stem. On the model zoo's
        Inception networks, where one channel splits but leaves a large module, two channels
        were no better (BN-Inception at B = 1: 6.946 ms, bound 6.28, against 6.927, 6.34)."""
        best = cls(spec, 1, min_size)
        if len(best.modules) > 1:
            return best
        for c in range(2, AUTO_CHANNELS + 1):
            plan = cls(spec, c, min_size)
            if plan.largest < best.largest:
                best = plan
            if 2 * plan.largest <= len(plan.s.graph.nodes):
                break
        return best

    @property
    def largest(self) -> int:
        return max(len(m) for m in self.modules)

    def to_original(self, spec: Spec, order: list[tuple[int, float, Piece]]) -> Schedule:
        """Pieces (module, MILP start, piece on the split spec) -> a list schedule of `spec`."""
        order = sorted(order, key=lambda z: (z[0], z[1]))
        pieces = tuple(Piece(self.split.origin[p.node], p.device, p.samples) for _, _, p in order
                       if p.node not in self.split.twin)
        return list_schedule(spec, Schedule(pieces, spec.objective.batch), piece_order=range(len(pieces)))


def piece_duration(spec: Spec, p: Piece) -> float:
    from partdsl.core.dense import work_time

    k = spec.platform.classes[int(spec.dense.dev_class[p.device])]
    return work_time(spec.graph.nodes[p.node], k.name, k.speed, len(p.samples))


def closure(start: set[int], within: frozenset[int], nxt: list[list[int]]) -> set[int]:
    """The nodes of `within` reached from `start` along `nxt` (successors or predecessors)."""
    seen, stack = set(start), list(start)
    while stack:
        v = stack.pop()
        for w in nxt[v]:
            if w in within and w not in seen:
                seen.add(w)
                stack.append(w)
    return seen


def chain_bound(plan: ModulePlan, time_limit: float, solver: str | None, threads: int | None,
                workers: int | None, known: dict[frozenset[int], float] | None = None,
                executor=None, until: float = math.inf) -> float:  # type: ignore[no-untyped-def]
    """The Remark's recursion (module docstring) on the whole graph, as a makespan (ms);
    `known`: proven bounds of node sets inside one module. The sets' MILPs get `time_limit`
    each, and those that would end past `until` (a wall-clock time.time()) are not run."""
    s = plan.s
    d = s.dense
    n = d.n
    module_of = np.empty(n, dtype=np.int64)
    for k, m in enumerate(plan.modules):
        module_of[m] = k
    succ = [d.succ_idx[d.succ_ptr[v]:d.succ_ptr[v + 1]].tolist() for v in range(n)]
    preds = [list(map(int, d.preds[v])) for v in range(n)]

    # the recursion, first as a plan of single-module sets to bound (then bounded at once)
    memo: dict[frozenset[int], float] = {}
    inner: dict[frozenset[int], float] = {}
    floor: dict[frozenset[int], float] = {}  # the simple bounds, kept for the second pass
    visits = [0]

    def simple(x: frozenset[int]) -> float:
        if x not in floor:
            floor[x] = makespan_bound(restrict(s, sorted(x)))
        return floor[x]

    def one(x: frozenset[int]) -> float:
        if x not in inner:
            inner[x] = max(simple(x), (known or {}).get(x, 0.0))
        return inner[x]

    def lb(x: frozenset[int]) -> float:
        if x in memo:
            return memo[x]
        if time.time() > until:  # out of time: 0 bounds any set (a chain of 212 modules takes seconds)
            return 0.0
        visits[0] += 1
        first = int(module_of[list(x)].min())
        xs = frozenset(v for v in x if module_of[v] == first)
        rest = x - xs
        if not rest:
            memo[x] = one(xs)
            return memo[x]
        best = simple(x)
        if visits[0] > MAX_BOUND_SETS:
            memo[x] = best
            return best
        cross = [(a, b) for a in xs for b in succ[a] if b in rest]
        if cross:
            tails = {a for a, _ in cross}
            heads = {b for _, b in cross}
            if closure(tails, xs, preds) == set(xs):  # every node of X_s reaches a channel
                after = min(lb(frozenset(closure({h}, rest, succ))) for h in heads)
                best = max(best, one(xs) + after)
            if closure(heads, rest, succ) == set(rest):  # every later node descends from one
                before = min(one(frozenset(closure({t}, xs, preds))) for t in tails)
                best = max(best, lb(rest) + before)
        memo[x] = best
        return best

    everything = frozenset(range(n))
    first = lb(everything)  # first pass: which single-module sets matter
    if time_limit > 0 and inner:
        sets = sorted((x for x in inner if x not in (known or {})), key=len, reverse=True)
        per_threads = job_threads(threads, workers, executor, len(sets))
        jobs = [(restrict(s, sorted(x)), time_limit, solver, per_threads, until) for x in sets]
        for i, b in run_all(module_bound, jobs, workers, executor):
            inner[sets[i]] = max(inner[sets[i]], b)
        memo.clear()
        visits[0] = 0
        first = max(first, lb(everything))
    return max(first, makespan_bound(s))


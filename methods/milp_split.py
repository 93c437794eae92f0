"""MILP-SPLIT (Ghannane & Abdelfattah sec. IV-B): schedule a modular DNN module by module
with the DiviML MILP, and bound the optimum by the Remark's recursion.

- Modules (kernels/graph/modules.py): single channel, from bridges (articulation points turned
  into bridges, both ends on one device); multi-channel, from k-edge-connected components;
  a chain M_1 .. M_q with every edge going forward.
- When every cut between modules is one edge o_k -> i_{k+1} (IV-B1): each module's MILP is
  solved for every (input device, output device) pair, its endpoints pinned whole, and a
  DP over the chain picks the pairs: sum of module makespans plus the transfer over each
  bridge. When every node of a module descends from its input and reaches its output
  (sdep), modules run one after the other in any schedule, so this is the optimum.
- Otherwise (IV-B2) each module's MILP runs after the previous ones are fixed, with
  release times: inputs from earlier modules (transfer counted whenever the device
  differs) and each device's last busy time.
The module MILPs are independent in the DP and run on the executor of part bound
(runtime/executor.py). The pieces are put together in module order, list-scheduled on the
whole graph (never later than the modules' own times) and re-scored by the evaluator.

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
from typing import Callable, Iterator

import numpy as np
from partdsl.core.deadline import NEVER, Deadline
from partdsl.core.errors import PartError
from partdsl.core.events import Candidate, Progress, Proven
from partdsl.core.graphs import link_table
from partdsl.core.ir import Spec
from partdsl.core.result import Status
from partdsl.core.schedule import Piece, Schedule
from partdsl.core.schedule_eval import evaluate_schedule, list_schedule, transfer_time
from partdsl.kernels.graph.modules import (
    Split,
    boundary_edges,
    chain,
    restrict,
    split_articulations,
)
from partdsl.kernels.schedule import list_schedulers
from partdsl.methods.bounds import makespan_bound
from partdsl.models import diviml
from partdsl.runtime.executor import run_all

DEFAULT_MODULE_LIMIT = 10.0  # seconds per module MILP without a time limit
MAX_BOUND_SETS = 200  # node sets the bound recursion may visit (then the simple bound)


@dataclass(frozen=True)
class ModuleResult:
    makespan: float  # ms, inf if no schedule
    bound: float  # ms, a proven lower bound on the module's makespan (with its pins)
    pieces: tuple[tuple[float, Piece], ...]  # (MILP start, piece), module-local node indices
    why: str


def solve_module(spec: Spec, release: np.ndarray | None, time_limit: float, solver: str | None,
                 threads: int | None, gap: float | None = None) -> ModuleResult:
    """The DiviML MILP of one module (a restricted spec); H and the MIP start from the best
    of `_starts` (started after every release)."""
    from partdsl.solvers.dispatch import solve_matrix

    shift = float(np.max(release)) if release is not None and release.size else 0.0
    ev, end = None, math.inf
    for sched in _starts(spec, 0.15 * time_limit):
        e = evaluate_schedule(spec, sched)
        if e.feasible and _makespan(spec, e) < end:
            ev, end = e, _makespan(spec, e)
    if spec.objective.split > 1:
        time_limit *= 0.85
    H = shift + (end if math.isfinite(end) else diviml.safe_horizon(spec))
    mip, vm = diviml.build(spec, H, release)
    start = None
    if ev is not None:
        moved = Schedule(tuple(Piece(p.node, p.device, p.samples, (p.start or 0.0) + shift)
                               for p in ev.schedule.pieces), ev.schedule.batch)
        start = diviml.encode(spec, vm, moved)
    out = solve_matrix(mip, solver, max(time_limit, 0.05), gap, threads, start)
    if out.status == Status.INFEASIBLE:
        return ModuleResult(math.inf, math.inf, (), "infeasible")
    bound = float(out.bound) if np.isfinite(out.bound) else 0.0
    if out.status not in ("optimal", "feasible"):
        return ModuleResult(math.inf, bound, (), out.why)
    pieces = diviml.decode_pieces(spec, vm, out.x)
    made = float(out.x[vm.C])
    return ModuleResult(made, min(bound, made), tuple(pieces), out.why)


def _starts(spec: Spec, seconds: float) -> Iterator[Schedule]:
    """MIP start candidates: HEFT, Greedy, and under a split batch (where the MILP rarely
    closes) simulated annealing for `seconds`."""
    from partdsl.kernels.schedule import search as schedule_search

    yield list_schedulers.schedule(spec, "heft")
    yield list_schedulers.schedule(spec, "eft")
    if spec.objective.split == 1:
        return
    until = time.monotonic() + seconds
    for item in schedule_search.sa(spec, 0, until, iterations=10**9):
        if isinstance(item, Candidate):
            yield item.schedule


def module_bound(spec: Spec, time_limit: float, solver: str | None, threads: int | None) -> float:
    """A lower bound on a node set's optimal makespan: its MILP's dual bound, or the simple one."""
    simple = makespan_bound(spec)
    if time_limit <= 0:
        return simple
    try:
        r = solve_module(spec, None, time_limit, solver, threads)
    except PartError:
        return simple
    return max(simple, r.bound)


def _makespan(spec: Spec, ev) -> float:  # type: ignore[no-untyped-def]
    if spec.objective.kind == "throughput":
        return spec.objective.batch / ev.objective * 1e3 if ev.objective > 0 else math.inf
    return float(ev.objective)


def _value(spec: Spec, C: float) -> float:
    """A makespan as the objective's value (samples/s under throughput)."""
    if spec.objective.kind != "throughput":
        return C
    return spec.objective.batch / C * 1e3 if C > 0 else math.inf


class _Plan:
    """The chain and its bookkeeping."""

    def __init__(self, spec: Spec, channels: int, min_size: int) -> None:
        self.split: Split = split_articulations(spec) if channels == 1 else Split(spec, tuple(range(spec.dense.n)), {})
        self.s = self.split.spec
        self.modules = chain(self.s, channels, min_size)
        self.cuts = boundary_edges(self.s, self.modules)
        self.links = link_table(self.s)

    def to_original(self, spec: Spec, order: list[tuple[int, float, Piece]]) -> Schedule:
        """Pieces (module, MILP start, piece on the split spec) -> a list schedule of `spec`."""
        order = sorted(order, key=lambda z: (z[0], z[1]))
        pieces = tuple(Piece(self.split.origin[p.node], p.device, p.samples) for _, _, p in order
                       if p.node not in self.split.twin)
        return list_schedule(spec, Schedule(pieces, spec.objective.batch), piece_order=range(len(pieces)))


def run(spec: Spec, seed: int = 0, deadline: Deadline = NEVER, progress: Callable[[str], None] | None = None,
        solver: str | None = None, gap: float | None = None, threads: int | None = None,
        channels: float = 1, module_limit: float | None = None, workers: float | None = None,
        min_module: float = 4, bound_limit: float = 2.0, lookahead: float = 1, executor=None,  # type: ignore[no-untyped-def]
        **_: object) -> Iterator:
    """MILP-SPLIT as a method: yields HEFT first, then the split schedule, then its bound.
    The module MILPs run on `executor` (a Dask cluster's, ...) if given, else on `workers`
    local processes."""
    diviml.check(spec)
    if channels < 1 or int(channels) != channels:
        raise PartError(f"channels must be a whole number >= 1, not {channels:g}", None)
    yield Candidate("HEFT (before the split)", schedule=list_schedulers.schedule(spec, "heft"))
    plan = _Plan(spec, int(channels), int(min_module))
    sizes = ", ".join(str(len(m)) for m in plan.modules)
    single = all(len(c) <= 1 for c in plan.cuts)
    yield Progress(f"MILP-SPLIT: {len(plan.modules)} modules ({sizes} nodes), "
                   f"{'single-channel DP' if single else 'modules in turn with release times'}")
    nworkers = int(workers) if workers else None
    known: dict[frozenset[int], float] = {}  # proven module bounds from the module MILPs
    if single:
        sched, why = _dp(spec, plan, deadline, module_limit, solver, threads, nworkers, progress, known, executor)
    else:
        sched, why = _rolling(spec, plan, deadline, module_limit, solver, threads, progress, int(lookahead))
    if sched is not None:
        yield Candidate(f"MILP-SPLIT ({why})", schedule=sched)
    left = deadline.left()
    per = bound_limit if math.isinf(left) else min(bound_limit, max(left, 0.0) / 4)
    lb = chain_bound(plan, per, solver, threads, nworkers, known, executor)
    yield Proven(_value(spec, lb), f"MILP-SPLIT lower bound (the Remark's recursion over {len(plan.modules)} "
                                   f"modules): makespan >= {lb:.6g} ms")


def _limit(deadline: Deadline, module_limit: float | None, share: float) -> float:
    """Seconds per module MILP: `module_limit`, else a share of the time left (10 s
    without a time limit); never past the deadline."""
    left = deadline.left()
    if math.isinf(left):
        return float(module_limit) if module_limit is not None else DEFAULT_MODULE_LIMIT
    mine = float(module_limit) if module_limit is not None else min(share, 0.8) * left
    return max(min(mine, 0.8 * left), 0.05)


def _dp(spec: Spec, plan: _Plan, deadline: Deadline, module_limit: float | None, solver: str | None,
        threads: int | None, workers: int | None, progress: Callable[[str], None] | None,
        known: dict[frozenset[int], float], executor=None) -> tuple[Schedule | None, str]:  # type: ignore[no-untyped-def]
    """IV-B1: every module for every (input device, output device) pair, then the chain DP.
    Fills `known` with each module's proven bound where the pairs cover every schedule of
    it (no pinned endpoint, or whole nodes: split 1), the least over its pairs."""
    s, D = plan.s, plan.s.dense.D
    q = len(plan.modules)
    ins = [None] + [c[0][1] if c else None for c in plan.cuts]
    outs = [c[0][0] if c else None for c in plan.cuts] + [None]
    jobs, keys = [], []
    allowed = s.dense.allowed
    for k, nodes in enumerate(plan.modules):
        local = {v: i for i, v in enumerate(nodes)}
        i_dev = range(D) if ins[k] is not None else [None]
        o_dev = range(D) if outs[k] is not None else [None]
        for a in i_dev:
            for b in o_dev:
                if ins[k] is not None and ins[k] == outs[k] and a != b:
                    continue
                if (a is not None and not allowed[ins[k], a]) or (b is not None and not allowed[outs[k], b]):
                    continue
                pins = {}
                if a is not None:
                    pins[ins[k]] = s.platform.devices[a]
                if b is not None:
                    pins[outs[k]] = s.platform.devices[b]
                sub = restrict(s, nodes, pins)
                keys.append((k, a, b, local))
                jobs.append(sub)
    per_threads = threads if threads is not None else (1 if (workers or 2) > 1 else None)
    limit = _limit(deadline, module_limit, 0.8 * max(workers or 2, 1) / max(len(jobs), 1))
    results: dict[tuple[int, int | None, int | None], ModuleResult] = {}
    done = 0
    for idx, r in run_all(solve_module, [(j, None, limit, solver, per_threads) for j in jobs], workers, executor):
        k, a, b, _ = keys[idx]
        results[(k, a, b)] = r
        done += 1
        if progress:
            progress(f"MILP-SPLIT: module {k + 1}/{q} pair ({a}, {b}) {r.why}, {r.makespan:.6g} ms "
                     f"({done}/{len(jobs)})")
    for k, nodes in enumerate(plan.modules):
        pairs = [r.bound for (kk, _, _), r in results.items() if kk == k]
        pinned = ins[k] is not None or outs[k] is not None
        if pairs and (not pinned or s.objective.split == 1):
            # every pair's module was tried unless its endpoint cannot run there
            known[frozenset(nodes)] = min(pairs)
    # the DP over the chain: best[k][b] = cheapest way to finish module k with its output on b
    best: list[dict[int | None, tuple[float, int | None, int | None]]] = []
    for k in range(q):
        row: dict[int | None, tuple[float, int | None, int | None]] = {}
        for (kk, a, b), r in results.items():
            if kk != k or not math.isfinite(r.makespan):
                continue
            if k == 0:
                before, prev = 0.0, None
            else:
                before, prev = math.inf, None
                for pb, (cost, _, _) in best[k - 1].items():
                    o, i = plan.cuts[k - 1][0] if plan.cuts[k - 1] else (None, None)
                    if o is not None and i in plan.split.twin:  # an articulation point: one device
                        move = 0.0 if pb == a else math.inf
                    else:
                        move = transfer_time(plan.s, plan.links, o, pb, a) if o is not None and pb is not None \
                            and a is not None else 0.0
                    if cost + move < before:
                        before, prev = cost + move, pb
            total = before + r.makespan
            if total < row.get(b, (math.inf,))[0]:
                row[b] = (total, a, prev)
        if not row:
            return None, "a module has no schedule"
        best.append(row)
    b = min(best[-1], key=lambda z: best[-1][z][0])
    chosen = []
    for k in range(q - 1, -1, -1):
        _, a, prev = best[k][b]
        chosen.append((k, a, b))
        b = prev
    order = []
    for k, a, b in reversed(chosen):
        nodes = plan.modules[k]
        order += [(k, at, Piece(nodes[p.node], p.device, p.samples, None)) for at, p in results[(k, a, b)].pieces]
    why = "; ".join(sorted({results[c].why for c in chosen}))
    return plan.to_original(spec, order), f"single-channel DP over {q} modules: {why}"


def _rolling(spec: Spec, plan: _Plan, deadline: Deadline, module_limit: float | None, solver: str | None,
             threads: int | None, progress: Callable[[str], None] | None,
             lookahead: int = 1) -> tuple[Schedule | None, str]:
    """IV-B2: modules in chain order, each after the ones before it are fixed; each MILP
    also schedules the next `lookahead` modules (then dropped), so a module does not
    finish early at the expense of the ones after it."""
    s = plan.s
    d = s.dense
    q = len(plan.modules)
    order: list[tuple[int, float, Piece]] = []
    whys = set()
    for k, own in enumerate(plan.modules):
        nodes = sorted(v for m in plan.modules[k:k + 1 + lookahead] for v in m)
        keep = set(own)
        timed = _timed(plan, order)
        release = np.zeros((len(nodes), d.D))
        busy = np.zeros(d.D)
        ends: dict[tuple[int, int], float] = {}
        for p in timed.pieces:
            busy[p.device] = max(busy[p.device], p.start + _duration(s, p))
            key = (p.node, p.device)
            ends[key] = max(ends.get(key, 0.0), p.start + _duration(s, p))
        inside = set(nodes)
        for li, v in enumerate(nodes):
            for u in range(d.D):
                r = busy[u]
                for j in map(int, d.preds[v]):
                    if j in inside:
                        continue
                    for (jj, w), e in ends.items():
                        if jj == j:
                            r = max(r, e + transfer_time(s, plan.links, j, w, u))
                release[li, u] = r
        sub = restrict(s, nodes)
        limit = _limit(deadline, module_limit, 1.0 / (q - k))
        r = solve_module(sub, release, limit, solver, threads)
        whys.add(r.why)
        if progress:
            progress(f"MILP-SPLIT: module {k + 1}/{q} ({len(own)} nodes, {len(nodes)} in the MILP) {r.why}, "
                     f"ends at {r.makespan:.6g} ms")
        if not math.isfinite(r.makespan):
            return None, f"module {k + 1} has no schedule ({r.why})"
        order += [(k, at, Piece(nodes[p.node], p.device, p.samples, None)) for at, p in r.pieces
                  if nodes[p.node] in keep]
    return plan.to_original(spec, order), f"{q} modules in turn: {'; '.join(sorted(whys))}"


def _timed(plan: _Plan, order: list[tuple[int, float, Piece]]) -> Schedule:
    """What is fixed so far, list-scheduled on the split spec."""
    pieces = tuple(p for _, _, p in sorted(order, key=lambda z: (z[0], z[1])))
    return list_schedule(plan.s, Schedule(pieces, plan.s.objective.batch), piece_order=range(len(pieces)))


def _duration(spec: Spec, p: Piece) -> float:
    from partdsl.core.dense import work_time

    k = spec.platform.classes[int(spec.dense.dev_class[p.device])]
    return work_time(spec.graph.nodes[p.node], k.name, k.speed, len(p.samples))


def chain_bound(plan: _Plan, time_limit: float, solver: str | None, threads: int | None,
                workers: int | None, known: dict[frozenset[int], float] | None = None,
                executor=None) -> float:  # type: ignore[no-untyped-def]
    """The Remark's recursion (module docstring) on the whole graph, as a makespan (ms);
    `known`: proven bounds of node sets inside one module."""
    s = plan.s
    d = s.dense
    n = d.n
    module_of = np.empty(n, dtype=np.int64)
    for k, m in enumerate(plan.modules):
        module_of[m] = k
    succ = [d.succ_idx[d.succ_ptr[v]:d.succ_ptr[v + 1]].tolist() for v in range(n)]
    preds = [list(map(int, d.preds[v])) for v in range(n)]

    def closure(start: set[int], within: frozenset[int], nxt: list[list[int]]) -> set[int]:
        seen, stack = set(start), list(start)
        while stack:
            v = stack.pop()
            for w in nxt[v]:
                if w in within and w not in seen:
                    seen.add(w)
                    stack.append(w)
        return seen

    # the recursion, first as a plan of single-module sets to bound (then bounded at once)
    memo: dict[frozenset[int], float] = {}
    inner: dict[frozenset[int], float] = {}
    visits = [0]

    def simple(x: frozenset[int]) -> float:
        return makespan_bound(restrict(s, sorted(x)))

    def one(x: frozenset[int]) -> float:
        if x not in inner:
            inner[x] = max(simple(x), (known or {}).get(x, 0.0))
        return inner[x]

    def lb(x: frozenset[int]) -> float:
        if x in memo:
            return memo[x]
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
    lb(everything)  # first pass: which single-module sets matter
    if time_limit > 0 and inner:
        sets = sorted((x for x in inner if x not in (known or {})), key=len, reverse=True)
        per_threads = threads if threads is not None else 1
        jobs = [(restrict(s, sorted(x)), time_limit, solver, per_threads) for x in sets]
        for i, b in run_all(module_bound, jobs, workers, executor):
            inner[sets[i]] = max(inner[sets[i]], b)
        memo.clear()
        visits[0] = 0
    return max(lb(everything), makespan_bound(s))

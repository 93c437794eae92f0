"""MILP-SPLIT (Ghannane & Abdelfattah sec. IV-B): schedule a modular DNN module by module
with the DiviML MILP, and bound the optimum by the Remark's recursion.

- Modules (kernels/graph/modules.py): single channel, from bridges (articulation points turned
  into bridges, both ends on one device); multi-channel, from k-edge-connected components;
  a chain M_1 .. M_q with every edge going forward.
- When every cut between modules is one edge o_k -> i_{k+1} (IV-B1): each module's MILP is
  solved for every (input device, output device) pair, its endpoints pinned whole, and a
  DP over the chain picks the pairs: sum of module makespans plus the transfer over each
  bridge. When every node of a module descends from its input and reaches its output
  (sdep), modules run one after the other in any schedule, so at batch 1 this is the
  optimum (under a split batch the pairs run each end whole, which the optimum need not). The
  pairs are solved after each module with free ends, capped where they could still help
  (methods/milp_split_chain.py).
- Otherwise (IV-B2), and by default under a split batch (`composition`), each module's
  MILP runs after the previous ones are fixed, with release times: inputs from earlier
  modules (transfer counted whenever the device differs) and each device's last busy time
  (methods/milp_split_turns.py).
The module MILPs are independent in the DP and run on the executor of part bound
(runtime/executor.py). The pieces are put together in module order, list-scheduled on the
whole graph (never later than the modules' own times) and re-scored by the evaluator.
The modules' MILPs and the Remark's lower bound are in methods/milp_split_modules.py.
"""
from __future__ import annotations

import math
import time
from contextlib import nullcontext
from dataclasses import replace
from typing import Callable, Iterator

import numpy as np
from partdsl.core.errors import PartError
from partdsl.core.events import Candidate, Progress, Proven
from partdsl.core.ir import Spec
from partdsl.core.schedule import Piece, Schedule
from partdsl.evaluator.schedule_checks import sample_bytes
from partdsl.evaluator.schedule_eval import as_objective
from partdsl.kernels.graph.modules import restrict
from partdsl.kernels.schedule import list_schedulers
from partdsl.methods.milp_split_chain import backtrack, chain_table, solve_pruned
from partdsl.methods.milp_split_modules import (
    WORKER_MODULES,
    ModulePlan,
    ModuleResult,
    chain_bound,
    pool_pays,
    solve_all,
)
from partdsl.methods.milp_split_turns import (
    DEFAULT_MODULE_LIMIT,
    ROLLING_LOOKAHEAD,
    composition,
    in_turn,
    window,
    with_memory,
)
from partdsl.models import diviml, diviml_symmetry
from partdsl.runtime.deadline import NEVER, Deadline
from partdsl.runtime.executor import job_threads, warm_pool


def run(spec: Spec, seed: int = 0, deadline: Deadline = NEVER, progress: Callable[[str], None] | None = None,
        solver: str | None = None, gap: float | None = None, threads: int | None = None,
        channels: float | None = None, module_limit: float | None = None, workers: float | None = None,
        min_module: float = 4, bound_limit: float = 2.0, lookahead: float | None = None, symmetry: float = 0,
        prune: float = 1, compose: str | None = None, executor=None,  # type: ignore[no-untyped-def]
        **_: object) -> Iterator:
    """MILP-SPLIT as a method: yields HEFT first, then the split schedule, then its bound.
    The module MILPs run on `executor` (a Dask cluster's, ...) if given, else on `workers`
    local processes; `symmetry` puts sec. V-E / VI's rows in each of them. `compose`: dp
    (IV-B1, single channel) or rolling (IV-B2); by default, see `composition`."""
    diviml.check(spec)
    diviml_symmetry.check_criterion(symmetry)
    if channels is not None and (channels < 1 or int(channels) != channels):
        raise PartError(f"channels must be a whole number >= 1, not {channels:g}", None)
    plan = (ModulePlan.fewest_channels(spec, int(min_module)) if channels is None
            else ModulePlan(spec, int(channels), int(min_module)))
    single = all(len(c) <= 1 for c in plan.cuts)
    compose = composition(spec, single, compose)
    if lookahead is None:  # under a split batch a two-module MILP stalls at its start (see ROLLING_LOOKAHEAD)
        lookahead = ROLLING_LOOKAHEAD if spec.objective.split == 1 else 0
    shares = _across_modules(spec, plan)
    nworkers = int(workers) if workers else None
    if executor is None and nworkers is None and (deadline.left() < POOL_SECONDS or not pool_pays(spec)):
        nworkers = 1  # too little time, or too little work, to start worker processes (a second or more each)
    # the worker processes start now, while HEFT runs here (about 1 s each on 2 cores)
    with nullcontext(executor) if executor is not None else warm_pool(nworkers, WORKER_MODULES) as pool:
        heft = list_schedulers.schedule(spec, "heft")
        yield Candidate("HEFT (before the split)", schedule=heft)
        sizes = ", ".join(str(len(m)) for m in plan.modules)
        through = f"{plan.channels} channel" + ("s" if plan.channels > 1 else "")
        if channels is None and len(plan.modules) > 1:
            through += " (the fewest that split)"
        yield Progress(f"MILP-SPLIT: {len(plan.modules)} modules ({sizes} nodes) through {through}, "
                       + ("single-channel DP" if compose == "dp" else "modules in turn with release times"
                          + (" (a split batch: the bridges' ends split into chunks too)" if single else ""))
                       + ("" if shares is None else "; the modules could pass a device's memory together, so each "
                          "module gets a share of it by its bytes (" + ", ".join(f"{w:.0%}" for w, _ in shares) + ")"))
        known: dict[frozenset[int], float] = {}  # proven module bounds from the module MILPs
        modules_by = deadline.share(1.0 - BOUND_RESERVE) if deadline.limited else deadline  # the rest: the bound's
        if compose == "dp":
            sched, why = _dp(spec, plan, modules_by, module_limit, solver, threads, nworkers, progress, known, pool,
                             int(symmetry), shares, bool(prune))
        else:  # with memory shares, no lookahead: a window's MILP could spend the next module's share
            sched, why = yield from in_turn(spec, plan, modules_by, module_limit, solver, threads, progress,
                                  int(lookahead) if shares is None else 0, int(symmetry), shares,
                                  heft if not plan.split.twin else None)
        if sched is not None:
            yield Candidate(f"MILP-SPLIT ({why})", schedule=sched)
        left = deadline.left()
        # the bound's MILPs in what is left, none when that is under a second (a 941-node set
        # takes seconds to build; they ran 2 s past --time-limit 20)
        per = bound_limit if math.isinf(left) else min(bound_limit, left / 4) if left >= MIN_BOUND_SECONDS else 0.0
        lb = chain_bound(plan, per, solver, threads, nworkers, known, pool, time.time() + left)
    yield Proven(as_objective(spec, lb), f"MILP-SPLIT lower bound (the Remark's recursion over {len(plan.modules)} "
                                   f"modules): makespan >= {lb:.6g} ms")


MIN_BOUND_SECONDS = 1.0  # time left under which the lower bound runs no MILP
# under a time limit the module MILPs stop at 75% of it, and the bound's MILPs have the rest:
# with every second to the modules, the bound had none left (VGG-19 at B = 128, T = 10 s:
# bound 380.2, 366.7 with a quarter reserved; GoogLeNet 4603.8 -> 4375.0; same schedules)
BOUND_RESERVE = 0.25
POOL_SECONDS = 10.0  # under a time limit shorter than this, the module MILPs run in this process
MODELLED_BY = "exact, met, eft, heft, sa, ea"  # the schedule methods that see the whole graph at once


def _across_modules(spec: Spec, plan: ModulePlan) -> list[tuple[float, float]] | None:
    """Each module MILP sees its own module. Colocation across modules is not modelled, so
    such specs are refused. Memory limits that the modules together could pass are met by
    shares: module k's MILP gets w_k of each device's memory, w_k its nodes' share of all
    bytes the graph could hold (parameters and every sample's tensors), so the modules
    together never pass a device's memory. Returns each module's (w_k, bytes its inputs
    receive) (None: memory is no limit across modules)."""
    d = spec.dense
    where: dict[int, set[int]] = {}
    for k, nodes in enumerate(plan.modules):
        for v in nodes:
            where.setdefault(int(d.colo[plan.split.origin[v]]), set()).add(k)
    size = np.bincount(d.colo, minlength=d.n)
    spread = [r for r, ks in where.items() if len(ks) > 1 and size[r] > 1]
    if spread:
        names = ", ".join(d.names[v] for v in np.flatnonzero(d.colo == spread[0])[:4])
        raise PartError(f"method milp_split does not model colocation across modules: colocated nodes {names} "
                        f"fall in different modules of the {len(plan.modules)}", None,
                        f"methods that model it: {MODELLED_BY}")
    if spec.constraints.memory != "hard" or len(plan.modules) < 2:
        return None
    whole = d.params + sample_bytes(spec) * spec.objective.batch  # every sample of a node on d
    held = (d.allowed * whole[:, None]).sum(axis=0)
    if not (held > d.memory[d.dev_class]).any():
        return None
    s = plan.s
    bytes_of = s.dense.params + sample_bytes(s) * s.objective.batch
    # a module MILP does not see the tensors its inputs receive from the module before it
    # (restrict drops those edges), the evaluator does: they count in the module's share
    # and are kept out of its MILP's memory
    inbound = [0.0] + [sum(float(s.dense.out_bytes[a]) for a, _ in cut) * s.objective.batch for cut in plan.cuts]
    per = np.array([float(bytes_of[m].sum()) + inbound[k] for k, m in enumerate(map(list, plan.modules))])
    w = per / per.sum() if per.sum() > 0 else np.full(len(per), 1.0 / len(per))
    return [(float(w[k]), inbound[k]) for k in range(len(per))]


def _dp(spec: Spec, plan: ModulePlan, deadline: Deadline, module_limit: float | None, solver: str | None,
        threads: int | None, workers: int | None, progress: Callable[[str], None] | None,
        known: dict[frozenset[int], float], executor=None,  # type: ignore[no-untyped-def]
        symmetry: int = 0, shares: list[tuple[float, float]] | None = None,
        prune: bool = True) -> tuple[Schedule | None, str]:
    """IV-B1: every module for every (input device, output device) pair, then the chain DP;
    with `prune`, at whole nodes and without memory shares or relabelled copies, each module
    with free ends first and the other pairs capped (methods/milp_split_chain.py).
    A pair that a relabelling of identical devices or servers maps from one already solved
    (models/diviml_symmetry.py) takes that one's schedule, relabelled. Fills `known` with
    each module's proven bound where the pairs cover every schedule of it (no pinned
    endpoint, or whole nodes: split 1), the least over its pairs; not under memory
    `shares`, which bind each module more than the spec does."""
    s, q = plan.s, len(plan.modules)
    ins, outs, jobs, keys, copies = _module_jobs(plan, shares)
    per_threads = job_threads(threads, workers, executor, len(jobs))
    until = time.time() + deadline.left()
    cap = float(module_limit) if module_limit is not None else \
        (DEFAULT_MODULE_LIMIT if math.isinf(deadline.left()) else math.inf)
    results: dict[tuple[int, int | None, int | None], ModuleResult] = {}
    if prune and s.objective.split == 1 and shares is None and not copies and q > 1:
        free = [restrict(s, nodes, {}) for nodes in plan.modules]
        found = solve_pruned(plan, free, jobs, keys, ins, outs, until, cap, solver, per_threads, symmetry, workers,
                             executor)
        total = len(jobs) + q
    else:
        found = ((keys[i][0], tuple(keys[i][:3]), r, "") for i, r in solve_all(jobs, until, cap, solver, per_threads,
                                                                                symmetry, workers, executor))
        total = len(jobs)
    done = 0
    for k, key, r, what in found:
        if key is not None:
            results[key] = r
        done += 1
        if progress:
            pair = f"pair ({key[1]}, {key[2]})" if key is not None else "ends on two devices"
            progress(f"MILP-SPLIT: module {k + 1}/{q} {pair}{f' ({what})' if what else ''} {r.why}, "
                     f"{r.makespan:.6g} ms" + (f" ({done}/{total})" if done <= total else ""))
    for pair, rep, perm in copies:
        results[pair] = relabelled(results[rep], perm)
    for k, nodes in enumerate(plan.modules):
        pairs = [r.bound for (kk, _, _), r in results.items() if kk == k]
        pinned = ins[k] is not None or outs[k] is not None
        if pairs and (not pinned or s.objective.split == 1) and shares is None:
            # every pair's module was tried unless its endpoint cannot run there
            known[frozenset(nodes)] = min(pairs)
    return _chain_dp(spec, plan, results)


def _module_jobs(plan: ModulePlan, shares: list[tuple[float, float]] | None = None  # type: ignore[type-arg]
                 ) -> tuple[list, list, list[Spec], list[tuple], list[tuple]]:  # type: ignore[type-arg]
    """IV-B1's subproblems: each module restricted to its nodes, its input node pinned to
    each device a, its output node to each device b: (ins, outs, module specs, (k, a, b,
    local), copies). A subproblem is solved once per orbit of the spec's relabellings and
    once per content (a transformer's layers repeat); `copies` holds the others as
    ((k, a, b), the solved (k', a', b'), perm: its schedule with device u put on perm[u])."""
    s, D = plan.s, plan.s.dense.D
    ins = [None] + [c[0][1] if c else None for c in plan.cuts]
    outs = [c[0][0] if c else None for c in plan.cuts] + [None]
    jobs, keys = [], []
    allowed, work, cls = s.dense.allowed, s.dense.work, s.dense.dev_class
    gens = diviml_symmetry.generators(s)
    source: dict[tuple, tuple[tuple, np.ndarray]] = {}  # (k, a, b) -> the job it copies, perm
    seen: dict[tuple, tuple] = {}  # a subproblem's content -> its job's (k, a, b)
    for k, nodes in enumerate(plan.modules):
        local = {v: i for i, v in enumerate(nodes)}
        i_dev = range(D) if ins[k] is not None else [None]
        o_dev = range(D) if outs[k] is not None else [None]
        pairs = [(a, b) for a in i_dev for b in o_dev
                 if not (ins[k] is not None and ins[k] == outs[k] and a != b)
                 and not ((a is not None and not allowed[ins[k], a]) or (b is not None and not allowed[outs[k], b]))]
        # the pairs whose end nodes run fastest first (they are solved first, see below)
        pairs.sort(key=lambda p: sum(float(work[v, cls[x]]) for v, x in ((ins[k], p[0]), (outs[k], p[1]))
                                     if x is not None))
        for (a, b), (rep, perm) in diviml_symmetry.orbits(pairs, gens, D).items():
            if rep != (a, b):
                job, before = source[(k, *rep)]
                source[(k, a, b)] = (job, perm[before])
                continue
            pins = {}
            if a is not None:
                pins[ins[k]] = s.platform.devices[a]
            if b is not None:
                pins[outs[k]] = s.platform.devices[b]
            sub = with_memory(restrict(s, nodes, pins), window(shares, k, 0))
            content = _content(sub)
            source[(k, a, b)] = (seen.setdefault(content, (k, a, b)), np.arange(D))
            if seen[content] == (k, a, b):
                keys.append((k, a, b, local))
                jobs.append(sub)
    # round robin over the modules (each module's first pair, then each one's second, ...):
    # when the time runs out, every module has its fastest pairs, so the chain still closes
    # (in module order, a 120 s limit on a 24-module GPT-3 stack left the last module none)
    count: dict[int, int] = {}
    rank = []
    for key in keys:
        rank.append(count.get(key[0], 0))
        count[key[0]] = rank[-1] + 1
    turn = np.argsort(rank, kind="stable")
    copies = [(key, job, perm) for key, (job, perm) in source.items() if job != key]
    return ins, outs, [jobs[i] for i in turn], [keys[i] for i in turn], copies


def relabelled(r: ModuleResult, perm: np.ndarray) -> ModuleResult:
    """A module's schedule with device u's pieces put on perm[u] (a copy's, `_module_jobs`)."""
    return ModuleResult(r.makespan, r.bound, tuple((at, Piece(p.node, int(perm[p.device]), p.samples, p.start))
                                                   for at, p in r.pieces), r.why)


def _content(sub: Spec) -> tuple:  # type: ignore[type-arg]
    """A module subproblem up to its nodes' names: equal contents have equal schedules on
    the same local node indices."""
    g, c = sub.graph, sub.constraints
    local = {nd.name: f"#{i}" for i, nd in enumerate(g.nodes)}

    def named(targets: tuple) -> tuple:  # type: ignore[type-arg]
        return tuple((local.get(t.name, t.name), tuple(x.name for x in ts)) for t, ts in targets)

    nodes = tuple(replace(nd, name=local[nd.name], module=None, span=None,
                          tensor_of=local.get(nd.tensor_of) if nd.tensor_of else None) for nd in g.nodes)
    return (nodes, g.edges, named(c.pins), named(c.forbids),
            tuple(tuple(local.get(t.name, t.name) for t in st) for st in c.colocate_sets),
            tuple(k.memory for k in sub.platform.classes))


def _chain_dp(spec: Spec, plan: ModulePlan, results: dict) -> tuple[Schedule | None, str]:  # type: ignore[type-arg]
    """The DP over the chain of modules (methods/milp_split_chain.py): the cheapest (input,
    output) pair per module, with the transfer between consecutive modules' devices;
    backtracked into one schedule."""
    q = len(plan.modules)
    best = chain_table(plan, results)
    if best is None:
        return None, "a module has no schedule"
    chosen = backtrack(best)
    order = []
    for k, a, b in chosen:
        nodes = plan.modules[k]
        order += [(k, at, Piece(nodes[p.node], p.device, p.samples, None)) for at, p in results[(k, a, b)].pieces]
    why = "; ".join(sorted({results[c].why for c in chosen}))
    return plan.to_original(spec, order), f"single-channel DP over {q} modules: {why}"

"""MILP-SPLIT's single-channel chain (Ghannane & Abdelfattah sec. IV-B1): the DP over the
modules' (input device, output device) pairs, and the pairs' MILPs solved with fewer
proofs than one per pair.

The DP: best[k][b] = the cheapest way to finish module k with its output on device b,
the transfer over each bridge added between consecutive modules.

Pruning (split 1, no memory shares, no relabelled copies): each module's MILP is first
solved with both ends free. Its optimum is the least over the module's pairs and its
schedule is one pair's, so the chain DP over those schedules is an incumbent U, and each
module's bound L_k is a bound for all its pairs. A chain through pair p of module k costs
at least c_k(p) + sum of L_j over the other modules (transfers are never negative), so p
can improve on U only if c_k(p) < U - sum_{j != k} L_j: its MILP is capped there (T <= that
cap), and a cap no schedule meets is proven infeasible, usually in the LP's first rounds.
A cap at the module's own bound L_k leaves nothing to win, and that pair is not solved.
On Table I's network (10 modules, paper regime) 68 of the 78 pairs are past their cap.
"""
from __future__ import annotations

import math
from typing import Iterator

from partdsl.core.ir import Spec
from partdsl.evaluator.schedule_eval import transfer_time
from partdsl.methods.milp_split_modules import ModulePlan, ModuleResult, solve_all

Key = tuple[int, int | None, int | None]  # (module, input device, output device)
Table = list[dict[int | None, tuple[float, int | None, int | None]]]  # best[k][b] = (cost, a, previous b)


def chain_table(plan: ModulePlan, results: dict[Key, ModuleResult]) -> Table | None:
    """The DP's table over the pairs in `results` (None: a module has no schedule)."""
    best: Table = []
    for k in range(len(plan.modules)):
        row: dict[int | None, tuple[float, int | None, int | None]] = {}
        for (kk, a, b), r in results.items():
            if kk != k or not math.isfinite(r.makespan):
                continue
            before, prev = (0.0, None) if k == 0 else _arrive(plan, best[k - 1], k, a)
            if before + r.makespan < row.get(b, (math.inf,))[0]:
                row[b] = (before + r.makespan, a, prev)
        if not row:
            return None
        best.append(row)
    return best


def _arrive(plan: ModulePlan, before: dict[int | None, tuple[float, int | None, int | None]], k: int,
            a: int | None) -> tuple[float, int | None]:
    """The cheapest way into module k with its input on `a`: (cost, previous output device)."""
    o, i = plan.cuts[k - 1][0] if plan.cuts[k - 1] else (None, None)
    cheapest, prev = math.inf, None
    for pb, (cost, _, _) in before.items():
        if o is not None and i in plan.split.twin:  # an articulation point: one device
            move = 0.0 if pb == a else math.inf
        else:
            move = transfer_time(plan.s, o, pb, a) if o is not None and pb is not None and a is not None else 0.0
        if cost + move < cheapest:
            cheapest, prev = cost + move, pb
    return cheapest, prev


def backtrack(best: Table) -> list[Key]:
    """The chosen pairs, first module first."""
    b = min(best[-1], key=lambda z: best[-1][z][0])
    chosen = []
    for k in range(len(best) - 1, -1, -1):
        _, a, prev = best[k][b]
        chosen.append((k, a, b))
        b = prev
    return chosen[::-1]


def free_pair(ins: list[int | None], outs: list[int | None], k: int, nodes: list[int],
              r: ModuleResult) -> Key | None:
    """The pair a free module's schedule is (None: an end node in pieces on two devices);
    `nodes`: the module's, in the order its restricted spec numbers them."""
    local = {v: i for i, v in enumerate(nodes)}
    where: dict[int, set[int]] = {}
    for _, p in r.pieces:
        where.setdefault(p.node, set()).add(p.device)
    ends = []
    for v in (ins[k], outs[k]):
        on = where.get(local[v], set()) if v is not None else {None}
        if len(on) != 1:
            return None
        ends.append(next(iter(on)))
    return (k, ends[0], ends[1])


def solve_pruned(plan: ModulePlan, free: list[Spec], jobs: list[Spec], keys: list[tuple],  # type: ignore[type-arg]
                 ins: list[int | None], outs: list[int | None], until: float, cap: float, solver: str | None,
                 threads: int | None, symmetry: int, workers: int | None, executor=None  # type: ignore[no-untyped-def]
                 ) -> Iterator[tuple[int, Key | None, ModuleResult, str]]:
    """(module, pair, result, what) of the free MILPs (one per module; pair None where an end
    node's pieces are on two devices) and then of the pairs' MILPs, each capped as the module
    docstring says."""
    results: dict[Key, ModuleResult] = {}
    low = [0.0] * len(free)
    for k, r in solve_all(free, until, cap, solver, threads, symmetry, workers, executor):
        low[k] = r.bound
        key = free_pair(ins, outs, k, plan.modules[k], r)
        if key is not None and math.isfinite(r.makespan):
            results[key] = r
        yield k, key, r, "both ends free"
    best = chain_table(plan, results)
    upper = min(c for c, _, _ in best[-1].values()) if best else math.inf
    rest = [i for i, key in enumerate(keys) if tuple(key[:3]) not in results]
    caps = {i: upper - (sum(low) - low[keys[i][0]]) for i in rest}
    # a cap at its module's bound leaves the pair nothing to win (the chain is proven where every
    # cap is: Table III's 5-module network spent 0.6 s of its 3.7 proving 33 such pairs infeasible)
    tie = TIE * max(1.0, abs(upper))
    hopeless = {i for i in rest if caps[i] <= low[keys[i][0]] + tie}
    for i in sorted(hopeless):
        yield keys[i][0], tuple(keys[i][:3]), ModuleResult(math.inf, low[keys[i][0]], (), "not solved"), \
            f"its cap {caps[i]:.6g} ms is its module's bound: it cannot beat the chain"  # type: ignore[misc]
    rest = [i for i in rest if i not in hopeless]
    for n, r in solve_all([jobs[i] for i in rest], until, cap, solver, threads, symmetry, workers, executor,
                          cutoffs=[caps[i] for i in rest]):
        yield keys[rest[n]][0], tuple(keys[rest[n]][:3]), r, f"capped at {caps[rest[n]]:.6g} ms"  # type: ignore[misc]


TIE = 1e-9  # relative: a pair capped within this of its module's bound could not improve the chain by more


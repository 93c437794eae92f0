"""Method `dp`: the dynamic program over ideals (Tarnawski et al. sec. 5.1.1, App. B).

A contiguous set is the difference of two ideals (Fact 5.2), so an optimal contiguous
split carves successive differences I \\ I' out of a chain of ideals. The DP runs on the
contracted unit DAG (colocation groups and the cycles they force, kernels/graph/contraction.py; for
training graphs the forward part with its backward partners and mirrored orphans):

    dp[I][s] = min over ideals I' < I and classes c of max(dp[I'][s - e_c], cost_c(I \\ I'))

with s counting the devices used per class (k accelerators + l CPUs, generalized to any
classes). cost_c is the exact evaluator cost of the node set (compute, each tensor once in
and once out, overflow, overlap), computed on node-level edges, so backward edges are
counted right. Ideals are enumerated as bitsets; the pair loop is compiled by numba and
pruned by a heuristic incumbent B (pairs whose compute alone exceeds B, or whose prefix
already exceeds B, are skipped). If the DP then finds nothing better than B, B is
optimal. Under `training gpipe` the objective is max FW + max BW (Tarnawski App. A),
which no single max-load DP minimizes: `_gpipe_sweep` runs the DP for the least max FW
under a falling cap on every stage's BW, over the Pareto front of the two maxima.

On server levels (evaluator/levels.py) without tensors to send (PipeDream's profiles, whose
optimizer charges no activation transfers) a stage's load depends on where its replicas
sit: the state's device counts place each class's stages in device order
(kernels/bottleneck/replicated.placed_rates), a device left unused where that keeps the
next stage's replicas in one server (ideal_kernels.gaps). That holds PipeDream's
hierarchical plans, whose stages fill the servers in order, but not every placement.
Its bound there is the same DP with each kind of stage at its cheapest placement
(replicated.cheapest_rates): every plan on the levels is a plan of that relaxation at a
load no higher, so the relaxation's optimum is a lower bound, and where it meets the
DP's value (most of PipeDream's profiles) that value is optimal over every placement.

What it proves: a chain of ideals is exactly a partition whose quotient graph is acyclic
(whose blocks are then contiguous, Fact 5.2). Contiguous blocks alone may form a cyclic
quotient, which no chain produces. So the DP is exact under `acyclic` (for non-training
graphs; device-level pins reach it as classes of their own, methods/class_view.py, except
on routed platforms and with replicas); under `contiguous` alone, as in Tarnawski's model, it
returns the best acyclic contiguous split, which matched the IP on every published
workload but is not a proof.
"""
from __future__ import annotations

from typing import Callable, Iterator

import numpy as np
from partdsl.core.errors import PartError
from partdsl.core.events import Candidate, Progress, Proven
from partdsl.core.ir import Spec
from partdsl.kernels.bottleneck.ideal_chains import Chains
from partdsl.kernels.bottleneck.ideals import TOO_BIG_HINT, enumerate_ideals, too_big
from partdsl.kernels.bottleneck.topo_split import assign_masks, best_candidate
from partdsl.kernels.graph.contraction import Contraction, absorbable_sinks, contract, has_forward, memory_can_bind
from partdsl.runtime.deadline import NEVER, Deadline


def exact_for(spec: Spec) -> bool:
    """Whether an exhausted DP proves optimality for this spec: under `acyclic`, where a
    feasible split's forward stages are a chain of ideals of the unit DAG. A training
    graph qualifies when every backward node is colocated with a forward node: its units
    are then ordered by forward edges alone, and a split whose full quotient (forward and
    backward parts) is acyclic has an acyclic forward quotient, so the DP's space holds
    every feasible split and its stage costs are the evaluator's (backward edges counted
    on node-level edges). Orphan backward nodes are ordered by mirroring, a restriction."""
    return _exact_but_placement(spec) and spec.dense.path_bw is None


def _exact_but_placement(spec: Spec) -> bool:
    """`exact_for` but for server levels (whose placements the DP orders by device)."""
    c, o = spec.constraints, spec.objective
    return c.acyclic and not _orphans(spec) and o.kind == "bottleneck" and not spec.pins_devices


def bounds_levels(spec: Spec) -> bool:
    """On server levels, whether the DP with each stage at its cheapest placement
    (Chains.best `relaxed`) bounds the optimum: where it would be exact on one level, no
    tensor is sent (the DP's condition on levels) and not under GPipe (whose sweep runs
    the DP under caps)."""
    return (spec.dense.path_bw is not None and _exact_but_placement(spec)
            and spec.objective.training != "gpipe")


def _orphans(spec: Spec) -> bool:
    """Whether some backward node shares no colocation component with a forward node."""
    d = spec.dense
    return bool(d.backward.any() and (~has_forward(d, d.colo)[d.colo[d.backward]]).any())


def units(spec: Spec) -> Contraction:
    """The unit DAG the DP runs on: colocation groups, and sinks absorbed where memory cannot bind."""
    d = spec.dense
    return contract(d, absorbable_sinks(d, memory_can_bind(d, spec.constraints.memory)))


def chained(spec: Spec) -> bool:
    """Whether forward edges join the units in one path (u0 -> u1 -> ... , a Hamiltonian
    path of the unit DAG, so its topological order is unique): every split the DP makes is
    then a chain of stages, each sending to the next, and stage s of P has the P - s - 1
    stages after it downstream, as the evaluator counts 1F1B's micro-batches in flight
    (evaluator/activations.in_flight)."""
    return chain_order(spec) is not None


def chain_order(spec: Spec) -> np.ndarray | None:
    """The units in the order of that path, or None when forward edges do not chain them."""
    d, u = spec.dense, units(spec)
    fw = ~d.backward
    keep = fw[d.src] & fw[d.dst]
    a, b = u.unit[d.src[keep]], u.unit[d.dst[keep]]
    step = a != b
    if not np.isin(np.arange(u.count), u.unit[fw]).all():
        return None  # a unit of backward nodes only
    indeg = np.zeros(u.count, dtype=np.int64)
    pairs = np.unique(np.column_stack([a[step], b[step]]), axis=0)
    np.add.at(indeg, pairs[:, 1], 1)
    heads = np.flatnonzero(indeg == 0)
    if len(heads) != 1:
        return None
    out: dict[int, list[int]] = {x: [] for x in range(u.count)}
    for x, y in pairs.tolist():
        out[x].append(y)
    path = [int(heads[0])]
    while True:  # Kahn's order is unique iff one unit is ready at each step
        ready = []
        for y in out[path[-1]]:
            indeg[y] -= 1
            if indeg[y] == 0:
                ready.append(y)
        if not ready:
            return np.array(path, dtype=np.int64) if len(path) == u.count else None
        if len(ready) > 1:
            return None
        path.append(ready[0])


def refusal(spec: Spec) -> str | None:
    """Why the DP cannot run on this spec (too many units for its bitsets, device-level pins
    on server levels), or None."""
    return _pinned_on_levels(spec) or too_big(units(spec).count)


def _pinned_on_levels(spec: Spec) -> str | None:
    """On server levels the DP puts its stages on each class's devices in order
    (`_in_order`), which a pin or forbid naming one device breaks (methods/class_view.py
    turns them into classes only on flat platforms)."""
    if spec.dense.path_bw is None or not spec.pins_devices:
        return None
    return ("on server levels the DP places its stages on each class's devices in order, and this spec pins or "
            "forbids single devices")


def run(spec: Spec, seed: int = 0, deadline: Deadline = NEVER,
        progress: Callable[[str], None] | None = None, incumbent: float | None = None, **_: float) -> Iterator:
    """`incumbent`: the value of a feasible split found before (auto's best): the DP prunes
    by it and need not find its own start."""
    u = units(spec)
    why = too_big(u.count)  # before the topo start: a refusal costs no time
    if why:
        raise PartError(why, None, TOO_BIG_HINT)
    why = _pinned_on_levels(spec)
    if why:
        raise PartError(why, None, "use --method load_search (or auto), which moves nodes device by device")
    # an incumbent first: it prunes the DP and is what the DP must beat
    if incumbent is not None and np.isfinite(incumbent):
        best_val = incumbent
    else:
        best_val, start = best_candidate(spec, seed, deadline)
        if start is not None:
            yield Candidate("dp incumbent (topo)", start.devices, replicas=start.replicas)
    yield Progress(f"DP over ideals, pruned by the incumbent {best_val:.6g}")
    chains, NI = build_chains(spec, u, deadline)
    if chains is None:
        return  # the deadline passed while the ideals were enumerated
    value, arr, NI, reps = chain_split(spec, best_val, deadline, progress, u, chains)
    if arr is not None:
        yield Candidate(f"dp over {NI:,} ideals", arr, replicas=reps)
    if deadline.passed():
        return  # the DP did not finish: no proof
    if np.isnan(value):
        yield Progress("the GPipe sweep stopped short: a split's evaluator loads left its cap where it was; no proof")
        return
    opt = min(value, best_val)
    if exact_for(spec):
        if np.isfinite(opt):
            yield Proven(opt, f"the DP over {NI:,} ideals is exhaustive for acyclic splits")
        return
    low = -np.inf  # no bound of the DP's own
    if np.isfinite(opt) and bounds_levels(spec):
        relaxed, _ = chains.best(_slack(opt), np.inf, 0, deadline, None, relaxed=True)
        if np.isfinite(relaxed) and not deadline.passed():
            low = relaxed
            yield Proven(low, f"the DP over {NI:,} ideals with each stage's replicas at their cheapest placement "
                         "(a relaxation of every placement on the levels)")
    if low < opt * (1 - 1e-9):
        yield Progress("the DP's answer is the best acyclic split, not a proof of optimality here: "
                       + why_not_exact(spec))


def why_not_exact(spec: Spec) -> str:
    if not spec.constraints.acyclic and spec.constraints.contiguous:
        return "contiguous blocks may form a cyclic quotient; add `acyclic` to get a proof"
    if not spec.constraints.acyclic:
        return ("this spec allows any split (neither `contiguous` nor `acyclic`), and its best need not be a chain "
                "of stages; add `acyclic` to get a proof")
    if _orphans(spec):
        return "a backward node colocated with no forward node is ordered by mirroring; colocate each with its layer"
    if spec.dense.path_bw is not None:
        bound = " (its bound: the same DP with each stage at its cheapest placement)" if bounds_levels(spec) else ""
        return ("on server levels the DP places its stages in device order, gaps allowed (PipeDream's placements "
                "and more), not every placement of their replicas" + bound)
    return "device-level pins or forbids on server levels, direct links or with replicas are not modelled by the DP"


def ideal_split(spec: Spec, incumbent: float = np.inf, deadline: Deadline = NEVER,
                progress: Callable[[str], None] | None = None,
                u: Contraction | None = None) -> tuple[float, np.ndarray | None, int]:
    """(the DP's value, its assignment or None, number of ideals). Only splits costing at
    most `incumbent` are searched; the value is inf if none is, or if the deadline passes
    before the DP completes (an unfinished DP proves and returns nothing). `u`: the unit
    DAG (`units(spec)`), if the caller has it. Under `training gpipe`, the value is the
    GPipe objective, max FW + max BW (Tarnawski App. A), found by `_gpipe_sweep`."""
    return chain_split(spec, incumbent, deadline, progress, u)[:3]


def build_chains(spec: Spec, u: Contraction, deadline: Deadline) -> tuple[Chains | None, int]:
    """The DP's data over the ideals of the unit DAG `u` and their count; None once the
    deadline passes (or the bitsets would not fit: a PartError)."""
    why = too_big(u.count)
    if why:
        raise PartError(why, None, TOO_BIG_HINT)
    ideals = enumerate_ideals(u.count, u.src, u.dst, deadline=deadline)
    if ideals is None:
        return None, 0
    return Chains.build(spec, u, ideals, deadline), len(ideals)


def chain_split(spec: Spec, incumbent: float, deadline: Deadline, progress: Callable[[str], None] | None,
                u: Contraction | None, chains: Chains | None = None
                ) -> tuple[float, np.ndarray | None, int, np.ndarray | None]:
    """`ideal_split`, and each device's replication factor in the split (None if none).
    With replicas its state counts the devices a chain uses, not its stages: a stage limit
    with replicas is refused up front (registry: `replicas with a stage limit`). `chains`:
    `build_chains`'s, if the caller has them."""
    if chains is None:
        chains, NI = build_chains(spec, units(spec) if u is None else u, deadline)
        if chains is None:
            return np.inf, None, NI, None
    if spec.objective.training == "gpipe":
        value, arr = _gpipe_sweep(spec, chains, incumbent, deadline, progress)
        return value, arr, chains.NI, None
    value, segs = chains.best(_slack(incumbent), np.inf, 0, deadline, progress)
    if segs is None:
        return value, None, chains.NI, None
    arr, reps = _assign(spec, segs)
    return value, arr, chains.NI, reps


def _assign(spec: Spec, segs: list[tuple[np.ndarray | None, int, int]]) -> tuple[np.ndarray, np.ndarray | None]:
    """Devices for a chain's (node mask, class, replicas) segments, and each device's
    replication factor (None when every stage has one device)."""
    if spec.dense.path_bw is not None:
        return _in_order(spec, segs)
    if all(k == 1 for _, _, k in segs):
        return assign_masks(spec, [(m, c) for m, c, _ in segs]), None
    dev = assign_masks(spec, [(m, c) for m, c, _ in segs], tuple(k for _, _, k in segs))
    reps = np.ones(spec.dense.D, dtype=np.int64)
    for m, _, k in segs:
        reps[dev[np.flatnonzero(m)[0]]] = k
    return dev, reps


def _in_order(spec: Spec, segs: list[tuple[np.ndarray | None, int, int]]) -> tuple[np.ndarray, np.ndarray | None]:
    """On server levels: each class's stages on its devices in chain order, a stage with r
    replicas on r of them (kernels/bottleneck/replicated.placed_rates priced them there), a
    segment without nodes a device left unused."""
    d = spec.dense
    dev = np.full(d.n, -1, dtype=np.int64)
    reps = np.ones(d.D, dtype=np.int64)
    taken = np.zeros(len(d.class_names), dtype=np.int64)
    for m, c, k in segs:
        if m is not None:
            lead = int(np.flatnonzero(d.dev_class == c)[taken[c]])
            dev[m] = lead
            reps[lead] = k
        taken[c] += k
    return dev, (reps if (reps > 1).any() else None)


def _slack(x: float) -> float:
    """A bound with room for float rounding (a split costing exactly x is kept)."""
    return x * (1 + 1e-9) if np.isfinite(x) else np.inf


def _gpipe_sweep(spec: Spec, chains: Chains, incumbent: float, deadline: Deadline,
                 progress: Callable[[str], None] | None) -> tuple[float, np.ndarray | None]:
    """min over splits of max FW + max BW (Tarnawski App. A), exactly, by DPs over the
    same ideals: B0 = the least max BW of any split with max FW under the incumbent (a
    lower bound); then, from cap = the incumbent, F = the least max FW of a split whose
    every stage's BW is at most cap, its evaluator score kept if best, and the cap set
    just below that split's max BW (and to at most best - F: a later split has a max FW
    of at least F), until no split is left or F + B0 cannot beat the best. Every split of
    the optimum's BW or less is under some cap whose DP finds a max FW at most the
    optimum's: the sweep walks the Pareto front of (max FW, max BW) down to it."""
    from partdsl.evaluator.evaluate import bottleneck_loads

    best, best_arr = incumbent, None
    # a split that beats the best has max FW + max BW below it, and so has each stage's FW + BW
    floor, _ = chains.best(_slack(best), _slack(best), 1, deadline, progress, _slack(best))
    if not np.isfinite(floor):
        return np.inf, None  # nothing beats the incumbent, or the deadline passed
    cap, rounds = _slack(best), 0
    while not deadline.passed():
        rounds += 1
        if progress:
            progress(f"GPipe sweep, round {rounds}: max FW with every stage's BW <= {cap:.6g}")
        fw, masks = chains.best(_slack(best - floor), cap, 0, deadline, progress, _slack(best))
        if masks is None and deadline.passed():
            break
        if masks is not None:
            arr = assign_masks(spec, [(m, c) for m, c, _ in masks])  # (no replicas under GPipe)
            value, table = bottleneck_loads(spec, spec.dense, arr)
            if value < best:
                best, best_arr = value, arr
        if masks is None or fw + floor >= best * (1 - 1e-9):  # done: (inf, None) if nothing beat the incumbent
            return (best, best_arr) if best_arr is not None else (np.inf, None)
        lower = min(float(table[:, 1].max()) * (1 - 1e-9), _slack(best - fw))  # below this split's max BW
        if not lower < cap:  # the cap does not fall (the DP's phase loads and the evaluator's differ at this
            return np.nan, best_arr  # scale: 1e-49 ms in a hypothesis draw): the sweep would not end; unproven
        cap = lower
    return np.inf, best_arr  # unfinished: no value, the best split found

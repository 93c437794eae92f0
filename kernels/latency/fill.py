"""Method `fill`: Tarnawski et al.'s latency greedy (sec. 7, first baseline).

Contract colocated nodes, then any strongly connected components the contraction creates;
fix one topological order of the blocks; fill the accelerators in turn, each with as many
blocks (in that order) as fit in its memory; a block that fits on no accelerator, or any
block once the accelerators are used up, goes to a host device (CPU). It ignores
processing times and transfers. The order is the paper's code's: depth-first among ready
blocks (the block made ready last goes first), successors in the order the edges were
written (in the .part file, or the imported file: `Graph.written_order`). A block that
cannot run on the accelerator class goes to a host device too, and closes the current
accelerator, so every accelerator's set stays contiguous.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np
from partdsl.core.errors import PartError
from partdsl.core.events import Candidate
from partdsl.core.ir import Spec
from partdsl.kernels.graph.contraction import colocation_blocks
from partdsl.runtime.deadline import NEVER, Deadline


def blocks(spec: Spec) -> list[list[int]]:
    """Colocation components, merged along strongly connected components of the contracted
    graph, in the depth-first topological order."""
    d = spec.dense
    blk = colocation_blocks(d)
    b = int(blk.max()) + 1 if d.n else 0
    written = np.asarray(spec.graph.written_order, dtype=np.int64)
    edges = np.asarray(spec.graph.edges, dtype=np.int64).reshape(-1, 2)[written]
    bs, bd = blk[edges[:, 0]], blk[edges[:, 1]]
    keep = bs != bd
    succ: list[list[int]] = [[] for _ in range(b)]
    indeg = np.zeros(b, dtype=np.int64)
    for x, y in zip(bs[keep].tolist(), bd[keep].tolist()):  # successors in the order edges were written
        succ[x].append(y)
        indeg[y] += 1
    members: list[list[int]] = [[] for _ in range(b)]
    for v in range(d.n):
        members[blk[v]].append(v)
    stack = [x for x in range(b) if indeg[x] == 0]
    order = []
    while stack:
        x = stack.pop()
        order.append(members[x])
        for y in succ[x]:
            indeg[y] -= 1
            if indeg[y] == 0:
                stack.append(y)
    return order


def fill(spec: Spec) -> np.ndarray:
    """The greedy split: accelerators (non-host devices, in device order) filled in turn."""
    d = spec.dense
    host = d.host[d.dev_class]
    accs = np.flatnonzero(~host).tolist()
    hosts = np.flatnonzero(host)
    hard = spec.constraints.memory == "hard"
    dev = np.full(d.n, -1, dtype=np.int64)
    cur = -1  # the accelerator being filled (a device index); -1: none open
    used = 0.0
    fresh = iter(accs)  # accelerators not opened yet, in device order
    nxt = next(fresh, -1)

    def fits(a: int, blk: list[int], size: float) -> bool:
        cap = d.memory[d.dev_class[a]] if hard else np.inf
        return bool(d.allowed[blk, a].all()) and size <= cap

    for blk in blocks(spec):
        size = float(d.params[blk].sum())
        if cur >= 0 and fits(cur, blk, used + size):
            dev[blk] = cur
            used += size
        elif nxt >= 0 and fits(nxt, blk, size):  # close the open accelerator, open the next
            cur, used, nxt = nxt, size, next(fresh, -1)
            dev[blk] = cur
        else:  # on a host device; the open accelerator is closed, so its set stays contiguous
            cur = -1
            ok = [h for h in hosts if d.allowed[blk, h].all()]
            if not ok:  # no host takes it: the least bad accelerator (the evaluator says why)
                ok = [a for a in accs if d.allowed[blk, a].all()] or list(range(d.D))
            dev[blk] = ok[0]
    return dev


def run(spec: Spec, **_: object) -> Iterator[Candidate]:
    d = spec.dense
    if d.D == 0:
        raise PartError("the platform has no devices", None)
    yield Candidate("latency greedy (Tarnawski sec. 7)", fill(spec))


def bottleneck_twin(spec: Spec) -> Spec:
    """The same graph, platform and constraints under `minimize bottleneck` (one subgraph
    per device): what the max-load methods optimize."""
    from dataclasses import replace

    from partdsl.core.ir import Objective

    return replace(spec, objective=Objective("bottleneck"),
                   constraints=replace(spec.constraints, subgraphs=1))


def maxload_dp(spec: Spec, seed: int = 0, deadline: Deadline = NEVER, progress=None,  # type: ignore[no-untyped-def]
               **_: object) -> Iterator:
    """Tarnawski sec. 7's second latency baseline: the max-load DP's split (sec. 5.1.1),
    scored for latency. Up to reference_dp.IDEAL_LIMIT ideals, the split the paper's code
    returns among the optimal ones (kernels/bottleneck/reference_dp.py); above, our DP over ideals,
    or DPL when there are too many ideals for it, as the paper's code falls back to."""
    from partdsl.core.errors import PartError
    from partdsl.core.events import Progress
    from partdsl.evaluator.evaluate import evaluate
    from partdsl.kernels.bottleneck import reference_dp
    from partdsl.kernels.bottleneck.baselines import dpl
    from partdsl.kernels.bottleneck.ideal_dp import ideal_split
    from partdsl.kernels.bottleneck.topo_split import best_split

    twin = bottleneck_twin(spec)
    inc, arr = best_split(twin, seed, deadline)
    if np.isfinite(inc):  # the paper's code's own order among equally good splits, where it is cheap
        try:
            dev = reference_dp.split(spec, inc, deadline=deadline, progress=progress)
            how = "max-load DP in the paper's code's order (Tarnawski sec. 5.1.1)"
            yield Progress(f"{how}: max load {evaluate(twin, dev).objective:.6g}")
            yield Candidate(how, dev)
            return
        except reference_dp.NotApplicable:
            pass
    try:
        value, dp_arr, NI = ideal_split(twin, inc, deadline, progress)
        how = f"max-load DP over {NI:,} ideals (Tarnawski sec. 5.1.1)"
    except PartError:  # too many ideals: the linearized DP, as the paper's code falls back to
        dp_arr = next((c.devices for c in dpl(twin, seed, deadline)), None)
        how = "max-load DPL (too many ideals for the DP over ideals)"
    if dp_arr is None:
        dp_arr = arr
    if dp_arr is None:
        return
    yield Progress(f"{how}: max load {evaluate(twin, dp_arr).objective:.6g}")
    yield Candidate(how, dp_arr)

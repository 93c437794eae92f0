"""Baselines to compare against (Tarnawski et al. sec. 6-7), usable as methods:

- `greedy`: walk a topological order and fill devices one at a time up to an even share
  of the work (accelerators first, then host devices), respecting memory.
- `local_search` (kernels/bottleneck/local_search.py): single-node moves with restarts.
- `pipedream`: PipeDream's linear DP - the graph is treated as the chain of a
  topological order, a stage pays only the tensors crossing its two cut points, and
  only accelerators (non-host devices) are used; a stage's parameters fit its memory
  (`memory hard`; overlap and overflow are not modelled, and refused).
- `dpl`: Tarnawski's DPL (sec. 5.1.2) - the DP on one DFS linearization of the graph.
Both linear DPs cut an order longer than COARSE_POSITIONS into blocks first (coarse_order.py;
dpl then refines around its cuts, order_split.py): the papers' graphs are far shorter, and
a 10,000-operator graph's P x P table took 5.5 GB.
Everything-on-one-device is the `single` method.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np
from partdsl.core.events import Candidate
from partdsl.core.ir import Spec
from partdsl.kernels.bottleneck.coarse_order import coarsen
from partdsl.kernels.bottleneck.order_split import split_order
from partdsl.kernels.bottleneck.segment_dp import split_dp
from partdsl.kernels.bottleneck.topo_split import assign
from partdsl.kernels.graph.contraction import contract
from partdsl.kernels.graph.orders import dfs_order, kahn
from partdsl.runtime import memory
from partdsl.runtime.deadline import NEVER, Deadline


def _unit_positions(spec: Spec, linear: str) -> tuple[np.ndarray, int]:
    u = contract(spec.dense)
    order = dfs_order(u.count, u.src, u.dst) if linear == "dfs" else kahn(u.count, u.src, u.dst)
    at = np.empty(u.count, dtype=np.int64)
    at[order] = np.arange(u.count)
    return at[u.unit], u.count


def _blocks(P: int, Pf: int) -> str:
    return "" if P == Pf else f", {P:,} blocks of the {Pf:,} positions"


def dpl(spec: Spec, seed: int = 0, deadline: Deadline = NEVER, **_: object) -> Iterator[Candidate]:
    fine, U = _unit_positions(spec, "dfs")
    # long orders: blocks, refined around the cuts (the table is P x P per class)
    *_, (pos, splits, how) = split_order(spec, fine, U, deadline=deadline)
    if splits:
        best = min(splits, key=lambda s: s.value)
        yield Candidate("dpl (DFS linearization" + (f", {how})" if how else ")"), assign(spec, best, pos))


def clean_cuts(spec: Spec, fine: np.ndarray, pos: np.ndarray, last: np.ndarray, P: int, c: int) -> np.ndarray:
    """Whether each cut after position t (of P) leaves the graph as a linear path would: every
    tensor crossing it is an output of the last unit at t, or costs nothing to move on class
    `c` (a mask or constant fed to every layer). Cutting only there is PipeDream's view of a
    graph with its branchings contracted into single nodes (Tarnawski sec. 6)."""
    d = spec.dense
    carries = d.comm[d.src, c] > 0
    src, dst = d.src[carries], d.dst[carries]
    a, b = pos[src], pos[dst]
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    bad = np.zeros(P + 1, dtype=np.int64)  # difference array over cuts: edges that jump a whole position
    jump = hi - lo > 1
    np.add.at(bad, lo[jump] + 1, 1)
    np.add.at(bad, hi[jump], -1)
    dirty = np.cumsum(bad)[:P] > 0
    crossing = lo < hi  # and at the cut right after its earlier end, it must leave from the last unit there
    early = np.where(a <= b, src, dst)
    wrong = crossing & ((fine[early] != last[lo]) | (a > b))
    dirty[lo[wrong]] = True
    return ~dirty


def pipedream(spec: Spec, seed: int = 0, deadline: Deadline = NEVER, contract: float = 0,
              **_: object) -> Iterator[Candidate]:
    """PipeDream's linear DP on the chain of Kahn's order; with `contract`, cuts only where
    the graph is a path (its branchings contracted, as the paper ran PipeDream)."""
    d = spec.dense
    fine, Pf = _unit_positions(spec, "kahn")
    pos, P = coarsen(spec, fine, Pf)  # long orders: blocks, each ending at a cut of the chain
    acc = [c for c in range(len(d.class_names)) if not d.host[c]]
    if not acc:
        return
    c = acc[0]
    w = np.where(d.class_allowed[:, c], d.work[:, c], np.inf)
    cw = np.r_[0.0, np.cumsum(np.bincount(pos, weights=w, minlength=P))]
    # the chain's boundary tensor after position t: the outputs of the unit at t (of a block: its last unit)
    boundary = np.bincount(fine, weights=d.comm[:, c] * (np.bincount(d.src, minlength=d.n) > 0), minlength=Pf)
    last = np.zeros(P, dtype=np.int64)
    np.maximum.at(last, pos, fine)
    boundary = boundary[last]
    # hard memory: a stage holds its nodes' parameters (the evaluator's memory)
    cap = d.memory[c] if spec.constraints.memory == "hard" else np.inf
    cp = np.r_[0.0, np.cumsum(np.bincount(pos, weights=d.params, minlength=P))]
    memory.need(16.0 * P * P, f"PipeDream's {P:,} x {P:,} stage table")
    cost = np.full((1, P, P), np.inf)
    ok = clean_cuts(spec, fine, pos, last, P, c) if contract else np.ones(P, dtype=bool)
    ok[P - 1] = True  # the end of the chain
    for l in range(P):
        if l > 0 and not ok[l - 1]:
            continue
        r = np.arange(l, P)
        with np.errstate(invalid="ignore"):  # inf - inf where a node cannot run on accelerators
            seg = (cw[r + 1] - cw[l]) + (boundary[l - 1] if l > 0 else 0.0) + np.where(r < P - 1, boundary[r], 0.0)
        seg = np.where((cp[r + 1] - cp[l] > cap * (1 + 1e-12)) | ~ok[r], np.inf, seg)
        cost[0, l, l:] = np.nan_to_num(seg, nan=np.inf)
    splits = split_dp(cost, [spec.platform.classes[c].count])
    if splits:
        best = min(splits, key=lambda s: s.value)
        segs = tuple((l, r, c) for l, r, _ in best.segments)
        from partdsl.kernels.bottleneck.segment_dp import Split

        how = f"linear DP{_blocks(P, Pf)}" + (f", {int(ok.sum()):,} cuts where the graph is a path" if contract else "")
        yield Candidate(f"pipedream ({how})", assign(spec, Split(best.value, best.counts, segs), pos))


def greedy(spec: Spec, seed: int = 0, deadline: Deadline = NEVER, **_: object) -> Iterator[Candidate]:
    """Fill the devices (hosts last) in topological order, each up to its share of the
    work: shares in proportion to each class's speed over the whole graph (its total work
    against the total of each node's cheapest), equal on identical devices. Equal shares
    left a 150-times-slower CPU a ninth of a decoder's work: 16,771 ms where the GPUs
    held 112 each."""
    d = spec.dense
    u = contract(d)
    order = kahn(u.count, u.src, u.dst)
    members = u.members()
    devs = sorted(range(d.D), key=lambda j: (d.host[d.dev_class[j]], j))
    cheapest = np.where(d.allowed, d.work[:, d.dev_class], np.inf).min(axis=1)
    finite = np.isfinite(cheapest)
    cheap = np.where(finite, cheapest, 0.0)  # each node's work counted at its cheapest, so shares are comparable
    total = float(cheap.sum())
    share = np.full(d.D, total / max(d.D, 1))
    if total > 0:
        cls_work = np.where(finite[:, None], d.work, 0.0).sum(axis=0)  # per class, over the nodes that run somewhere
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            speed = np.where(np.isfinite(cls_work) & (cls_work > 0), total / cls_work, 0.0)[d.dev_class]
        if np.isinf(speed).any():  # a class of subnormal work: the infinitely fast ones share it all
            speed = np.isinf(speed).astype(float)
        if speed.sum() > 0:
            share = total * speed / speed.sum()
    dev = np.full(d.n, -1, dtype=np.int64)
    mem = np.zeros(d.D)
    cap = d.memory[d.dev_class]
    k, load = 0, 0.0

    def fits(nodes: np.ndarray, j: int) -> bool:
        return bool(d.allowed[nodes, j].all() and mem[j] + d.params[nodes].sum() <= cap[j])

    for unit in order:
        nodes = members[unit]
        while k < d.D - 1 and not (fits(nodes, devs[k]) and load < share[devs[k]]):
            if not any(fits(nodes, i) for i in devs[k + 1:]):  # no later device takes it: stay
                break
            k, load = k + 1, 0.0
        j = devs[k]
        if not fits(nodes, j):  # pinned to an earlier device, or all later ones full
            j = next((i for i in devs if fits(nodes, i)), j)
        dev[nodes] = j
        load += float(cheap[nodes].sum()) if j == devs[k] else 0.0
        mem[j] += d.params[nodes].sum()
    yield Candidate("greedy", dev)

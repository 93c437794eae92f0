"""Baselines to compare against (Tarnawski et al. sec. 6-7), usable as methods:

- `greedy`: walk a topological order and fill devices one at a time up to an even share
  of the work (accelerators first, then host devices), respecting memory.
- `local_search` (kernels/bottleneck/local_search.py): single-node moves with restarts.
- `dpl`: Tarnawski's DPL (sec. 5.1.2), and `pipedream`: PipeDream's DP as the paper ran it
  (sec. 6): the DP on the chain the authors' code builds (reference_chain.py), on every
  device the spec has; pipedream first fuses each biconnected component's branching.
Both cut a chain longer than COARSE_POSITIONS into blocks first (coarse_order.py), then
refine around their cuts (order_split.py): the papers' graphs are far shorter, and a
10,000-operator graph's P x P table took 5.5 GB.
Everything-on-one-device is the `single` method.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np
from partdsl.core.errors import PartError
from partdsl.core.events import Candidate
from partdsl.core.ir import Spec
from partdsl.kernels.bottleneck.order_split import split_order
from partdsl.kernels.bottleneck.reference_chain import reference_chain
from partdsl.kernels.bottleneck.topo_split import assign
from partdsl.kernels.graph.contraction import contract
from partdsl.kernels.graph.orders import kahn
from partdsl.runtime.deadline import NEVER, Deadline


def _chain_dp(spec: Spec, label: str, fine: np.ndarray, U: int, deadline: Deadline) -> Iterator[Candidate]:
    *_, (pos, splits, how) = split_order(spec, fine, U, deadline=deadline)
    if splits:
        best = min(splits, key=lambda s: s.value)
        yield Candidate(f"{label} ({U:,} positions" + (f", {how})" if how else ")"), assign(spec, best, pos))


def dpl(spec: Spec, seed: int = 0, deadline: Deadline = NEVER, **_: object) -> Iterator[Candidate]:
    """The DP on the line the authors' code's `-linearize` builds."""
    fine, U = reference_chain(spec)
    yield from _chain_dp(spec, "dpl", fine, U, deadline)


def pipedream(spec: Spec, seed: int = 0, deadline: Deadline = NEVER, ignore: str = "",
              **_: object) -> Iterator[Candidate]:
    """The DP on the line the authors' code's `-pipeDream` builds: each biconnected
    component's tails fused first. `ignore`: comma-separated node names whose outgoing
    edges the biconnected search leaves out (the inputs PipeDream's profiler does not
    count: the reference names BERT-24's and GNMT's)."""
    names = [x.strip() for x in str(ignore).split(",") if x.strip()]
    unknown = sorted(set(names) - set(spec.dense.names))
    if unknown:
        raise PartError(f"-O ignore names {', '.join(unknown[:5])}, not a node of the graph", None,
                        "give node names, comma-separated: -O ignore=n4,n37")
    fine, U = reference_chain(spec, pipedream=True, ignore=names)
    yield from _chain_dp(spec, "pipedream", fine, U, deadline)


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

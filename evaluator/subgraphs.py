"""Single-stream latency (Tarnawski et al. sec. 4, Figs. 3 and 4): the cost semantics the
evaluator scores, on units.

An accelerator runs up to q contiguous subgraphs (`subgraphs <= q`, sec. 4.1), one after
another in the order of their numbers. A subgraph is invoked when all its inputs are in
host memory and the accelerator's previous subgraph has finished (Fig. 4, constraint 14);
it then reads its inputs (once per producing node), runs its nodes and writes back every
tensor that leaves it: finish = start + in + compute + out. Transfers between two
subgraphs of one accelerator go through host memory too (no state is kept between
invocations). A node on a host device (CPU) runs as soon as its inputs are ready, for its
CPU time (the paper assumes at least as many cores as the graph is wide). Latency = the
last finish. A cycle among units (a subgraph that is not contiguous, or an order on an
accelerator that contradicts the data flow) deadlocks: infinite latency, a violation.

Subgraph numbers: given with the partition, or derived when q > 1 (`derive_subgraphs`: the
fewest contiguous pieces of each accelerator's node set, in data-flow order, as the
reworking step of the paper's code does); with q = 1 every accelerator holds one subgraph.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from partdsl.core.dense import INF, Dense, topological_order
from partdsl.evaluator import levels


def derive_subgraphs(dense: Dense, dev: np.ndarray) -> np.ndarray:
    """Per node, the piece of its accelerator's node set it belongs to (0, 1, ...; 0 on host
    devices): piece(v) = max over predecessors p of piece(p) if p is on the same device,
    else 1 + the last piece of v's device that reaches p. Each piece is contiguous, no piece
    depends on a later one, and no split of that set into fewer contiguous pieces exists
    (a path that leaves the set and comes back forces a new piece)."""
    n = dense.n
    acc = ~dense.host[dense.dev_class[dev]] if n else np.zeros(0, bool)
    used = np.unique(dev[acc])
    col = np.full(dense.D, -1, dtype=np.int64)
    col[used] = np.arange(len(used))
    reach = np.full((n, len(used)), -1, dtype=np.int64)  # last piece of each device reaching v
    piece = np.zeros(n, dtype=np.int64)
    preds = dense.preds
    for v in dense.topo.tolist():
        ps = preds[v]
        r = reach[ps].max(axis=0) if ps else np.full(len(used), -1, dtype=np.int64)
        if acc[v]:
            c = col[dev[v]]
            best = 0
            for p in ps:
                best = max(best, piece[p] if dev[p] == dev[v] else reach[p, c] + 1)
            piece[v] = best
            r[c] = max(r[c], best)
        reach[v] = r
    return piece


@dataclass(frozen=True)
class SubgraphUnits:
    """Nodes grouped into units: accelerator subgraphs first (ids 0..A-1, `device[a]`,
    `rank[a]` = position on its device), then one unit per host node (A + v)."""

    of_node: np.ndarray  # [n] unit id
    device: np.ndarray  # [A] device of each accelerator subgraph
    rank: np.ndarray  # [A] its position among the device's subgraphs (0 first)
    count: int  # A + n

    @property
    def A(self) -> int:
        return len(self.device)


def units(dense: Dense, dev: np.ndarray, sub: np.ndarray) -> SubgraphUnits:
    """Subgraph numbers (any integers) -> units; a device's subgraphs ordered by number."""
    n = dense.n
    acc = ~dense.host[dense.dev_class[dev]]
    of_node = np.arange(n, dtype=np.int64)
    pairs = np.zeros((0, 2), np.int64)
    if acc.any():  # sorted by (device, number): a device's subgraphs are consecutive, in order
        d, s = dev[acc].astype(np.int64), sub[acc].astype(np.int64)
        low = int(s.min())
        span = int(s.max()) - low + 1  # one key per (device, number): 1-D unique, not axis=0's
        keys, inv = np.unique(d * span + (s - low), return_inverse=True)
        pairs = np.stack([keys // span, keys % span + low], axis=1)
        of_node[acc] = np.asarray(inv).ravel()
    of_node[~acc] += len(pairs)
    device = pairs[:, 0].astype(np.int64)
    first = np.r_[True, device[1:] != device[:-1]] if len(device) else np.zeros(0, bool)
    rank = np.arange(len(device)) - np.maximum.accumulate(np.where(first, np.arange(len(device)), 0)) \
        if len(device) else np.zeros(0, np.int64)
    return SubgraphUnits(of_node, device, rank.astype(np.int64), len(pairs) + n)


@dataclass(frozen=True)
class SubgraphTimes:
    """The latency recursion's result: per unit in/compute/out, start and finish times."""

    value: float
    units: SubgraphUnits
    inn: np.ndarray  # [A]
    compute: np.ndarray  # [A]
    out: np.ndarray  # [A]
    start: np.ndarray  # [count]
    finish: np.ndarray  # [count]
    cycle: list[int] | None = None  # units that wait on each other (deadlock)


def unit_transfers(dense: Dense, dev: np.ndarray, u: SubgraphUnits) -> tuple[np.ndarray, np.ndarray]:
    """In and out transfer time per accelerator subgraph: each tensor entering it once per
    producing node, each tensor leaving it once however many consumers."""
    A = u.A
    src, dst = dense.src, dense.dst
    un = u.of_node
    cross = un[src] != un[dst]
    inn = np.zeros(A)
    into = cross & (un[dst] < A)
    key = np.unique(src[into] * (A + 1) + un[dst][into])
    p, a = key // (A + 1), key % (A + 1)
    np.add.at(inn, a, levels.receive_ms(dense, p, dev[p], u.device[a]))
    out = np.zeros(A)
    sends = cross & (un[src] < A)
    charges = levels.send_charges(dense, src[sends], dev[src[sends]], dev[dst[sends]])
    leaving = np.unique(src[sends])
    np.add.at(out, un[leaving], levels.send_ms(dense, leaving, dev[leaving], charges))
    return inn, out


def timed(dense: Dense, dev: np.ndarray, u: SubgraphUnits) -> SubgraphTimes:
    """Start and finish of every unit (Fig. 4: constraints 6, 7, 9, 10 and 14)."""
    n = dense.n
    A, un = u.A, u.of_node
    cls = dense.dev_class[dev]
    work = dense.work[np.arange(n), cls]
    comp = np.bincount(un[un < A], weights=work[un < A], minlength=A)[:A] if A else np.zeros(0)
    inn, out = unit_transfers(dense, dev, u)
    cross = un[dense.src] != un[dense.dst]
    a_src, a_dst = un[dense.src][cross], un[dense.dst][cross]
    same = np.flatnonzero(u.device[1:] == u.device[:-1]) if A > 1 else np.zeros(0, np.int64)
    e_src = np.r_[a_src, same]  # data edges, then each subgraph -> the next on its device
    e_dst = np.r_[a_dst, same + 1]
    order = topological_order(u.count, e_src, e_dst)
    start = np.zeros(u.count)
    finish = np.zeros(u.count)
    if order is None:
        from partdsl.core.graphs import find_cycle

        cyc = find_cycle(u.count, e_src.tolist(), e_dst.tolist())
        return SubgraphTimes(INF, u, inn, comp, out, start, finish, cyc)
    preds_of = [[] for _ in range(u.count)]
    for a, b in zip(e_src.tolist(), e_dst.tolist()):
        preds_of[b].append(a)
    fin = finish.tolist()
    st = start.tolist()
    cost = (inn + comp + out).tolist()
    host_work = work.tolist()
    for x in order:
        ready = max((fin[p] for p in preds_of[x]), default=0.0)
        st[x] = ready
        fin[x] = ready + (cost[x] if x < A else host_work[x - A])
    finish, start = np.array(fin), np.array(st)
    return SubgraphTimes(float(finish.max()) if u.count else 0.0, u, inn, comp, out, start, finish)


def resolve(dense: Dense, dev: np.ndarray, sub: np.ndarray | None, q: int) -> np.ndarray:
    """The subgraph numbers to score: the given ones (0 on host devices), else all 0 when
    q = 1, else derived."""
    if sub is not None:
        sub = np.asarray(sub, dtype=np.int64).copy()
        sub[dense.host[dense.dev_class[dev]]] = 0
        return sub
    if q == 1:
        return np.zeros(dense.n, dtype=np.int64)
    return derive_subgraphs(dense, dev)

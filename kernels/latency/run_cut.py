"""A min-cut lower bound on the cost of one accelerator run of the path segmentation
bound (kernels/latency/path_bound.py; Tarnawski et al. sec. 4, Fig. 3 constraints 6-7).

A run p_j .. p_i on class c is one subgraph S: S holds the interval I (every node on a
path from p_j to p_i, by contiguity) and cannot hold an ancestor of p_j-1, a descendant of
p_i+1, a node that may not run on c, or a node too large to fit beside I's memory. Its
cost is in(S) + compute(S) + out(S): each tensor entering S once per producer, each node
of S at its time on c, each tensor leaving S once. The least such cost over all S between
those limits (memory beyond the single-node test and contiguity dropped, so a relaxation)
is an s-t minimum cut (S = the source side):

    v -> t       work(v, c)    v in S runs on c
    s -> v       inf           v in I
    v -> t       inf           v excluded
    x -> a_p     inf           for each consumer x of p: a_p follows any consumer into S
    a_p -> p     comm(p, c)    p outside S feeds S: its tensor moves in
    b_p -> x     inf           b_p leaves S with any consumer that leaves it
    p -> b_p     comm(p, c)    p in S feeds a node outside S: its tensor moves out

    u <-> x      inf           u and x colocated (`colocated`): one subgraph holds both or neither

Capacities are scaled to integers and rounded down, so the cut found is never above the
real minimum. The arcs are fixed per class, an arc s -> v and a second v -> t for every
node (capacity 0 unless v is in I, or excluded), so each run only sets capacities
(kernels/graph/max_flow.py).
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from partdsl.core.ir import Spec
from partdsl.kernels.graph.max_flow import FlowNetwork
from partdsl.kernels.jit import HAVE_NUMBA
from partdsl.runtime.deadline import NEVER, Deadline

# "infinite" capacity; every finite cut is kept below BIG / 4 by the scaling. The compiled
# Dinic counts in int64: 2^50 leaves room for 2^13 infinite arcs in one flow and keeps the
# rounding near 1e-11 ms an arc (at 2^30 a cut came out 1e-5 below its value: a contiguous
# optimum missed its proof by that). scipy's fallback counts in int32.
BIG = 1 << 50 if HAVE_NUMBA else 1 << 30


class RunCut:
    """The fixed part of the network for one class; `cost(inside, excluded)` per run."""

    def __init__(self, spec: Spec, c: int, colocated: bool = False) -> None:
        d = spec.dense
        n = d.n
        allowed = d.class_allowed[:, c]
        work = np.where(allowed, d.work[:, c], 0.0)
        comm = d.cheapest_comm[:, c]
        producers = np.unique(d.src)
        finite = float(work.sum() + 2 * comm.sum())
        self.scale = min((BIG // 4) / finite, 1e15) if finite > 0 else 1.0  # capped: a 1e-300 ms total
        w = np.floor(work * self.scale).astype(np.int64)
        k = np.floor(comm * self.scale).astype(np.int64)
        self.n = n
        self.s, self.t = 3 * n, 3 * n + 1
        a, b = n + d.src, 2 * n + d.src  # a_p, b_p of each edge's producer p
        inf = np.full(len(d.src), BIG, dtype=np.int64)
        nodes = np.arange(n)
        pairs = np.array(d.colocated_pairs if colocated else [], dtype=np.int64).reshape(-1, 2)
        mates = np.concatenate([pairs, pairs[:, ::-1]])
        rows = np.concatenate([nodes, d.dst, n + producers, producers, b, mates[:, 0], np.full(n, self.s), nodes])
        cols = np.concatenate([np.full(n, self.t), a, producers, 2 * n + producers, d.dst, mates[:, 1], nodes,
                               np.full(n, self.t)])
        self.caps = np.concatenate([w, inf, k[producers], k[producers], inf, np.full(len(mates), BIG, np.int64),
                                    np.zeros(2 * n, np.int64)])
        self.net = FlowNetwork(3 * n + 2, rows, cols)
        self.always_out = ~allowed

    def cost(self, inside: np.ndarray, excluded: np.ndarray) -> float:
        """The least in + compute + out of a subgraph holding `inside` ([n] bool) and no
        node of `excluded` ([n] bool), memory and contiguity aside."""
        n = self.n
        self.caps[-2 * n:-n] = np.where(inside, BIG, 0)
        self.caps[-n:] = np.where(excluded | self.always_out, BIG, 0)
        return float(self.net.value(self.caps, self.s, self.t)) / self.scale


def run_cut(spec: Spec, masks: tuple[np.ndarray, np.ndarray], net: RunCut, c: int, mem: np.ndarray,
            j: int, i: int) -> float:
    """The min-cut bound of run (j, i) on class c (kernels/latency/run_cut.py): the subgraph
    holds the interval and excludes ancestors of p_j-1, descendants of p_i+1 and nodes too
    large to fit beside the interval."""
    d = spec.dense
    desc, anc = masks
    m = desc.shape[0]
    cap = d.memory[c] if spec.constraints.memory == "hard" else math.inf
    inside = desc[j] & anc[i]
    excluded = (d.params > (cap - mem[j, i]) * (1 + 1e-12)) & ~inside
    if j:
        excluded |= anc[j - 1]
    if i + 1 < m:
        excluded |= desc[i + 1]
    return net.cost(inside, excluded)


def refined(spec: Spec, masks: tuple[np.ndarray, np.ndarray], costs: list[tuple[int, np.ndarray, np.ndarray]],
            split: Callable[[list[np.ndarray]], tuple[float, list[tuple[int, int, int]]]], colocated: bool,
            deadline: Deadline = NEVER) -> float:
    """A path bound's `split` (value and runs (k, j, i) over the tables of `costs`, as
    kernels/latency/run_costs.run_tables gives them) with each run's cost raised to its
    min cut where the split uses it: split, cut the runs it uses that are not cut yet, split
    again, until its runs are all cut. Costs only rise to a bound of the run, so each
    split is a bound, and the last one equals the split with every run cut (its runs are
    cut, the others' costs only rise). Returns the last split's value, or the one at hand
    when `deadline` passes (checked every 64 cuts)."""
    m = masks[0].shape[0]
    nets: dict[int, RunCut] = {}
    done = np.zeros((len(costs), m, m), dtype=bool)
    while True:
        value, runs = split([cost for _, cost, _ in costs])
        todo = [(k, j, i) for k, j, i in runs if not done[k, j, i]]
        if not todo:
            return value
        for t, (k, j, i) in enumerate(todo):
            if t % 64 == 0 and deadline.passed():
                return value
            c, cost, mem = costs[k]
            if k not in nets:
                nets[k] = RunCut(spec, c, colocated=colocated)
            cost[j, i] = max(cost[j, i], run_cut(spec, masks, nets[k], c, mem, j, i))
            done[k, j, i] = True

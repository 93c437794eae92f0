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

    u <-> x      inf           u and x colocated (q = 1): one subgraph holds both or neither

Capacities are scaled to integers and rounded down, so the cut found is never above the
real minimum. The arcs are fixed per class, an arc s -> v and a second v -> t for every
node (capacity 0 unless v is in I, or excluded), so each run only sets capacities
(kernels/graph/max_flow.py).
"""
from __future__ import annotations

import math

import numpy as np
from partdsl.core.ir import Spec
from partdsl.kernels.graph.max_flow import FlowNetwork

BIG = 1 << 30  # "infinite" capacity; every finite cut is kept below it by the scaling


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
        self.scale = min((BIG // 4) / finite, 1e9) if finite > 0 else 1.0
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

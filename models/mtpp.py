"""Archer et al. Fig. 3: the exact MIP for the max-throughput partitioning problem (MTPP),
and its relaxations of sec. 3.2 (three-superblock "bottleneck") and sec. 3.3
("bottleneck-guess", one MIP per guessed block j), in matrix form.

K blocks numbered in DAG order; y[v, b] = 1 iff node v is in block b or before
(x[v, b] = y[v, b] - y[v, b-1] is eliminated, as the paper's code does); c[u, b] = 1 iff
node u's tensor enters or leaves block b (counted once however many consumers):

  min t  s.t.  t >= sum_v work(v) x[v,b] + sum_u io(u) c[u,b] + ov[b]             (6, 7)
               y[u,b] >= y[v,b]                       for (u, v) in E_fw   (8, DAG)
               c[u,b] >= y[u,b-1] + x[v,b] - 1        for (u, v) in E      (9, cut in)
               c[u,b] >= x[u,b] - y[v,b]              for (u, v) in E      (10, cut out)
               y[v,b-1] <= y[v,b],  y[v,K] = 1,  y binary, c >= 0         (11, 12)

exact: K = k, every block bounds t. bottleneck: K = 3, only block 2 bounds t and it holds
at least L units of work (eq. 14, L of Lemma 3.3). guess j: as bottleneck, plus
(j-1) t >= cost(superblock 1) and (k-j) t >= cost(superblock 3) (an empty superblock when
j = 1 or j = k); min_j LB_j <= OPT. From the spec: hard memory per block (a superblock of
r blocks gets r times the memory), colocation (y[u,.] = y[v,.]), and with `memory
overflow` the term of eq. 2 linearized: ov[b] >= (params(b) - M_b) / B, ov[b] >= 0.

E_fw is every edge, or on a training graph the edges between forward nodes: `acyclic`
orders a device's forward and backward parts separately (core/graphs.stage_labels), and
one numbering of the blocks cannot follow both orders, so the backward parts are left to
the evaluator. The MIP is then a relaxation (its bound holds); its optimum is a proven
one where the evaluator accepts the solution, as it does when each backward node is
colocated with its forward twin and the backward edges mirror the forward ones.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from partdsl.core.errors import PartError
from partdsl.core.graphs import forward_edges
from partdsl.core.ir import Spec
from partdsl.models.matrix import ColumnNames, MatrixMIP, Rows
from partdsl.models.memory import treatment


@dataclass(frozen=True)
class Variant:
    """Which member of the hierarchy: exact (sec. 3.1), bottleneck (3.2), guess j (3.3)."""

    kind: str = "exact"
    j: int = 0  # the guessed bottleneck block, 1..k (guess only)

    def blocks(self, k: int) -> int:
        return k if self.kind == "exact" else 3

    def weights(self, k: int) -> list[float | None]:
        """Per model block: how many of t it may cost (None: unconstrained)."""
        if self.kind == "exact":
            return [1.0] * k
        if self.kind == "bottleneck":
            return [None, 1.0, None]
        return [float(self.j - 1), 1.0, float(k - self.j)]


EXACT = Variant()


@dataclass(frozen=True)
class VarMap:
    """Where each variable lives in the column vector (CVXPY's inverse data)."""

    n: int
    k: int  # blocks in the model (K)
    producers: np.ndarray
    overflow: bool = False

    def y(self, v: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:  # b in 1..k
        return np.asarray(v) * self.k + (np.asarray(b) - 1)

    def c(self, p: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:  # p: producer position
        return self.n * self.k + np.asarray(p) * self.k + (np.asarray(b) - 1)

    def ov(self, b: int) -> int:
        return self.n * self.k + len(self.producers) * self.k + b - 1

    @property
    def t(self) -> int:
        return self.n * self.k + len(self.producers) * self.k + (self.k if self.overflow else 0)

    @property
    def ncols(self) -> int:
        return self.t + 1


def check(spec: Spec) -> None:
    """The spec must be an MTPP instance; say what to change otherwise."""
    p, o, c = spec.platform, spec.objective, spec.constraints
    why = None
    if len(p.classes) != 1 or p.classes[0].host:
        why = "it needs one class of identical, non-host devices (pipeline stages)"
    elif o.kind != "bottleneck" or o.training == "gpipe" or o.overlap:
        why = "it minimizes the plain bottleneck (PipeDream's load under training; no gpipe, no overlap)"
    elif not c.acyclic:
        why = "its blocks are numbered in DAG order: add `acyclic` to the constraints"
    elif c.max_stages is not None or spec.pins_devices:
        why = "stage limits and device-level pins or forbids are not modelled"
    if why:
        raise PartError(f"Archer's MTPP MIP does not fit this spec: {why}", None,
                        "use --method dp (exact for acyclic splits on any platform) or topo")


def simple_bound(spec: Spec) -> float:
    """Lemma 3.3: some block holds L = max(max_v work(v), sum_v work(v) / k) units of work
    (a colocated group counts as one node)."""
    d = spec.dense
    w = d.work[:, 0]
    _, comp = np.unique(d.colo, return_inverse=True)
    k = spec.platform.classes[0].count
    return float(max(np.bincount(comp, weights=w).max(initial=0.0), w.sum() / k)) if d.n else 0.0


def _order_rows(spec: Spec, vm: VarMap, rows: Rows, ppos: np.ndarray) -> None:
    """Rows (11) monotone, (8) DAG and (9, 10) cuts: which block each node is in, in DAG
    order, and which tensors enter or leave each block."""
    d = spec.dense
    n, K, src, dst = d.n, vm.k, d.src, d.dst
    B = np.arange(1, K + 1)
    V = np.arange(n)
    N = d.names
    # (11) monotone y and the boundary y[v,K] = 1 (as a column bound)
    if K > 1:
        vv, bb = np.meshgrid(V, B[1:], indexing="ij")
        rows.family("monotone", lambda j, v=vv.ravel(), b=bb.ravel(): (N[v[j]], int(b[j])))
        rows.add([vm.y(vv, bb - 1).ravel(), vm.y(vv, bb).ravel()], [1.0, -1.0], -np.inf, 0.0)
    ee, bb = np.meshgrid(np.arange(len(src)), B, indexing="ij")
    ee, bb = ee.ravel(), bb.ravel()
    u, v, pu = src[ee], dst[ee], ppos[ee]
    # (8) DAG: y[v,b] - y[u,b] <= 0, on the edges the stage order follows (forward edges
    # of a training graph: core/graphs.forward_edges; its backward parts are the evaluator's)
    fw = forward_edges(d)[ee]
    rows.family("dag", lambda j, u=u[fw], v=v[fw], b=bb[fw]: (N[u[j]], N[v[j]], int(b[j])))
    rows.add([vm.y(v[fw], bb[fw]), vm.y(u[fw], bb[fw])], [1.0, -1.0], -np.inf, 0.0)
    # (9) cut in, b >= 2: y[u,b-1] + y[v,b] - y[v,b-1] - c[u,b] <= 1
    m2 = bb >= 2
    rows.family("cut_in", lambda j, u=u[m2], v=v[m2], b=bb[m2]: (N[u[j]], N[v[j]], int(b[j])))
    rows.add([vm.y(u[m2], bb[m2] - 1), vm.y(v[m2], bb[m2]), vm.y(v[m2], bb[m2] - 1), vm.c(pu[m2], bb[m2])],
             [1.0, 1.0, -1.0, -1.0], -np.inf, 1.0)
    # (10) cut out: y[u,b] - y[u,b-1] - y[v,b] - c[u,b] <= 0   (y[u,0] = 0)
    rows.family("cut_out", lambda j, u=u[m2], v=v[m2], b=bb[m2]: (N[u[j]], N[v[j]], int(b[j])))
    rows.add([vm.y(u[m2], bb[m2]), vm.y(u[m2], bb[m2] - 1), vm.y(v[m2], bb[m2]), vm.c(pu[m2], bb[m2])],
             [1.0, -1.0, -1.0, -1.0], -np.inf, 0.0)
    m1 = bb == 1
    rows.family("cut_out", lambda j, u=u[m1], v=v[m1]: (N[u[j]], N[v[j]], 1))
    rows.add([vm.y(u[m1], 1), vm.y(v[m1], 1), vm.c(pu[m1], 1)], [1.0, -1.0, -1.0], -np.inf, 0.0)


def build(spec: Spec, variant: Variant = EXACT) -> tuple[MatrixMIP, VarMap]:
    check(spec)
    d = spec.dense
    k = spec.platform.classes[0].count
    K = variant.blocks(k)
    n, src = d.n, d.src
    producers = np.unique(src)
    ppos = np.searchsorted(producers, src)  # producer position of each edge's source
    cap = d.memory[0]
    bw = d.link[0]
    rule = treatment(spec.constraints.memory, cap, bw)
    over, hard = rule == "overflow", rule == "hard"
    vm = VarMap(n, K, producers, bool(over))
    rows = Rows()
    B = np.arange(1, K + 1)
    V = np.arange(n)
    N = d.names
    _order_rows(spec, vm, rows, ppos)
    # (6, 7) block b: work + io (+ ov) - weight * t <= 0; memory (or overflow) alike
    w, io, prm = d.work[:, 0], d.comm[producers, 0], d.params
    P = np.arange(len(producers))
    block: list[tuple[str, int]] = []
    rows.family("block", lambda j: block[j])
    for b, weight in zip(B, variant.weights(k)):
        xcols, xw = [vm.y(V, b)], [1.0]
        if b > 1:
            xcols.append(vm.y(V, b - 1))
            xw.append(-1.0)
        xc = np.concatenate(xcols)
        sign = np.concatenate([np.full(n, s) for s in xw])
        work_vals, mem_vals = sign * np.tile(w, len(xcols)), sign * np.tile(prm, len(xcols))
        if variant.kind != "exact" and b == 2:  # (14) the bottleneck block holds >= L work
            block.append(("at_least_L", int(b)))
            rows.add_one(xc, work_vals, simple_bound(spec), np.inf)
        if weight is None:
            continue
        if weight == 0.0:  # an empty superblock (j = 1 or j = k)
            continue
        mem = weight * cap
        ov_col = [vm.ov(b)] if over else []
        block.append(("load", int(b)))
        rows.add_one(np.r_[xc, vm.c(P, b), ov_col, vm.t], np.r_[work_vals, io, [1.0] * len(ov_col), -weight],
                     -np.inf, 0.0)
        if over:  # ov[b] >= (params(b) - M_b) * 1e3 / B   (eq. 2 in ms)
            scale = 1e3 / bw
            block.append(("overflow", int(b)))
            rows.add_one(np.r_[xc, vm.ov(b)], np.r_[mem_vals * scale, -1.0], -np.inf, mem * scale)
        elif hard:
            block.append(("memory", int(b)))
            rows.add_one(xc, mem_vals, -np.inf, mem)
    # colocation: y[u,.] = y[v,.]
    for rep, a in d.colocated_pairs:
        rows.family("colocate", lambda j, r=rep, a=a: (N[r], N[a], j + 1))
        rows.add([vm.y(np.full(K, rep), B), vm.y(np.full(K, a), B)], [1.0, -1.0], 0.0, 0.0)
    A, lo, hi = rows.matrix(vm.ncols)
    col_lo = np.zeros(vm.ncols)
    col_hi = np.ones(vm.ncols)
    col_lo[vm.y(V, K)] = 1.0  # y[v,K] = 1
    if variant.kind == "guess" and variant.j == 1:
        col_hi[vm.y(V, 1)] = 0.0  # nothing before the guessed first block
    if variant.kind == "guess" and variant.j == k:
        col_lo[vm.y(V, 2)] = 1.0  # nothing after the guessed last block
    if over:
        col_hi[[vm.ov(b) for b in B]] = np.inf
    col_hi[vm.t] = np.inf
    c = np.zeros(vm.ncols)
    c[vm.t] = 1.0
    integer = np.zeros(vm.ncols, dtype=bool)
    integer[: n * K] = True
    return MatrixMIP(c, A, lo, hi, col_lo, col_hi, integer, rows.names, lambda: column_names(spec, vm)), vm


def column_names(spec: Spec, vm: VarMap) -> list[str]:
    """y(node,block) (1: the node is in this block or an earlier one), cut(producer,block),
    overflow(block), bottleneck (t)."""
    N = spec.dense.names
    cols = ColumnNames()
    cols.add(0, vm.n * vm.k, "y", lambda j: (N[j // vm.k], j % vm.k + 1))
    cols.add(int(vm.c(0, 1)), len(vm.producers) * vm.k, "cut", lambda j: (N[vm.producers[j // vm.k]], j % vm.k + 1))
    if vm.overflow:
        cols.add(vm.ov(1), vm.k, "overflow", lambda j: j + 1)
    cols.add(vm.t, 1, "bottleneck", lambda j: ())
    return cols.names(vm.ncols)


def decode(spec: Spec, vm: VarMap, x: np.ndarray) -> np.ndarray:
    """Block of v = first b with y[v,b] = 1; block b runs on stage device b-1."""
    Y = x[: vm.n * vm.k].reshape(vm.n, vm.k) > 0.5
    return Y.argmax(axis=1).astype(np.int64)


def dag_blocks(spec: Spec, dev: np.ndarray) -> np.ndarray | None:
    """Blocks 1..k numbered in DAG order of the (forward) quotient graph, or None if the
    stages are cyclic (core/graphs.stage_cycle)."""
    from partdsl.core.graphs import stage_cycle
    from partdsl.kernels.graph.orders import kahn

    d = spec.dense
    if stage_cycle(d, dev) is not None:
        return None
    fw = forward_edges(d)
    cross = fw & (dev[d.src] != dev[d.dst])
    pairs = np.unique(np.stack([dev[d.src][cross], dev[d.dst][cross]], axis=1), axis=0) if cross.any() \
        else np.zeros((0, 2), np.int64)
    rank = np.empty(d.D, dtype=np.int64)
    rank[kahn(d.D, pairs[:, 0], pairs[:, 1])] = np.arange(d.D)
    return rank[dev] + 1


def encode(spec: Spec, vm: VarMap, dev: np.ndarray) -> np.ndarray | None:
    """A MIP start from an assignment whose devices can be ordered along the DAG, or None."""
    from partdsl.evaluator.evaluate import evaluate, overflow

    d = spec.dense
    block = dag_blocks(spec, dev)
    if block is None:
        return None
    x = np.zeros(vm.ncols)
    B = np.arange(1, vm.k + 1)
    x[: vm.n * vm.k] = (block[:, None] <= B[None, :]).astype(float).ravel()
    relabelled = block - 1
    ev = evaluate(spec, relabelled)
    inn_out = np.zeros((len(vm.producers), vm.k))
    for j, u in enumerate(vm.producers):
        succ = d.succ_idx[d.succ_ptr[u]:d.succ_ptr[u + 1]]
        for b in range(vm.k):
            ins = relabelled[u] != b and (relabelled[succ] == b).any()
            outs = relabelled[u] == b and (relabelled[succ] != b).any()
            inn_out[j, b] = float(ins or outs)
    x[vm.n * vm.k: vm.n * vm.k + inn_out.size] = inn_out.ravel()
    if vm.overflow:
        x[vm.ov(1): vm.ov(1) + vm.k] = overflow(spec, d, relabelled)
    x[vm.t] = ev.objective
    return x

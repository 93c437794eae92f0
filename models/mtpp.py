"""Archer et al. Fig. 3: the exact MIP for the max-throughput partitioning problem (MTPP).

k identical blocks numbered in DAG order; y[v, b] = 1 iff node v is in block b or before
(x[v, b] = y[v, b] - y[v, b-1] is eliminated, as the paper's code does); c[u, b] = 1 iff
node u's tensor enters or leaves block b (counted once however many consumers):

  min t  s.t.  t >= sum_v work(v) x[v,b] + sum_u io(u) c[u,b]                      (6, 7)
               y[u,b] >= y[v,b]                       for (u, v) in E      (8, DAG)
               c[u,b] >= y[u,b-1] + x[v,b] - 1        for (u, v) in E      (9, cut in)
               c[u,b] >= x[u,b] - y[v,b]              for (u, v) in E      (10, cut out)
               y[v,b-1] <= y[v,b],  y[v,k] = 1,  y binary, c >= 0         (11, 12)

plus, from the spec: hard memory per block, and colocation (y[u,.] = y[v,.]).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.errors import PartError
from ..core.ir import Spec
from .matrix import MatrixMIP, Rows


@dataclass(frozen=True)
class VarMap:
    """Where each variable lives in the column vector (CVXPY's inverse data)."""

    n: int
    k: int
    producers: np.ndarray

    def y(self, v: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:  # b in 1..k
        return np.asarray(v) * self.k + (np.asarray(b) - 1)

    def c(self, p: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:  # p: producer position
        return self.n * self.k + np.asarray(p) * self.k + (np.asarray(b) - 1)

    @property
    def t(self) -> int:
        return self.n * self.k + len(self.producers) * self.k

    @property
    def ncols(self) -> int:
        return self.t + 1


def check(spec: Spec) -> None:
    """The spec must be an MTPP instance; say what to change otherwise."""
    p, o, c = spec.platform, spec.objective, spec.constraints
    why = None
    if len(p.classes) != 1 or p.classes[0].host:
        why = "it needs one class of identical, non-host devices (pipeline stages)"
    elif o.kind != "bottleneck" or o.training or o.overlap:
        why = "it minimizes the plain bottleneck (no training form, no overlap)"
    elif not c.acyclic:
        why = "its blocks are numbered in DAG order: add `acyclic` to the constraints"
    elif c.memory == "overflow":
        why = "the overflow term (Archer eq. 2) is not linearized yet: use `memory hard` or `ignore`"
    elif c.max_stages is not None or any(t.name in p.devices for _, ts in c.pins + c.forbids for t in ts):
        why = "stage limits and device-level pins or forbids are not modelled"
    if why:
        raise PartError(f"method exact (Archer's MTPP MIP) does not fit this spec: {why}", None,
                        "use --method dp (exact for acyclic splits on any platform) or topo")


def build(spec: Spec) -> tuple[MatrixMIP, VarMap]:
    check(spec)
    d = spec.dense
    n, k = d.n, spec.platform.classes[0].count
    src, dst = d.src, d.dst
    producers = np.unique(src)
    ppos = np.searchsorted(producers, src)  # producer position of each edge's source
    vm = VarMap(n, k, producers)
    rows = Rows()
    B = np.arange(1, k + 1)
    # (11) monotone y and the boundary y[v,k] = 1 (as a column bound)
    if k > 1:
        vv, bb = np.meshgrid(np.arange(n), B[1:], indexing="ij")
        rows.add([vm.y(vv, bb - 1).ravel(), vm.y(vv, bb).ravel()], [1.0, -1.0], -np.inf, 0.0)
    # (8) DAG: y[v,b] - y[u,b] <= 0
    ee, bb = np.meshgrid(np.arange(len(src)), B, indexing="ij")
    ee, bb = ee.ravel(), bb.ravel()
    u, v, pu = src[ee], dst[ee], ppos[ee]
    rows.add([vm.y(v, bb), vm.y(u, bb)], [1.0, -1.0], -np.inf, 0.0)
    # (9) cut in, b >= 2: y[u,b-1] + y[v,b] - y[v,b-1] - c[u,b] <= 1
    m2 = bb >= 2
    rows.add([vm.y(u[m2], bb[m2] - 1), vm.y(v[m2], bb[m2]), vm.y(v[m2], bb[m2] - 1), vm.c(pu[m2], bb[m2])],
             [1.0, 1.0, -1.0, -1.0], -np.inf, 1.0)
    # (10) cut out: y[u,b] - y[u,b-1] - y[v,b] - c[u,b] <= 0   (y[u,0] = 0)
    rows.add([vm.y(u[m2], bb[m2]), vm.y(u[m2], bb[m2] - 1), vm.y(v[m2], bb[m2]), vm.c(pu[m2], bb[m2])],
             [1.0, -1.0, -1.0, -1.0], -np.inf, 0.0)
    m1 = bb == 1
    rows.add([vm.y(u[m1], 1), vm.y(v[m1], 1), vm.c(pu[m1], 1)], [1.0, -1.0, -1.0], -np.inf, 0.0)
    # (6, 7) block b: sum_v w(v) (y[v,b] - y[v,b-1]) + sum_u io(u) c[u,b] - t <= 0; memory alike
    w, io, prm = d.work[:, 0], d.comm[producers, 0], d.params
    cap = d.memory[0] if spec.constraints.memory == "hard" else np.inf
    for b in B:
        cols = [vm.y(np.arange(n), b), vm.c(np.arange(len(producers)), b), np.array([vm.t])]
        vals = [w, io, np.array([-1.0])]
        mcols, mvals = [vm.y(np.arange(n), b)], [prm]
        if b > 1:
            cols.append(vm.y(np.arange(n), b - 1))
            vals.append(-w)
            mcols.append(vm.y(np.arange(n), b - 1))
            mvals.append(-prm)
        rows.add_one(np.concatenate(cols), _spread(cols, vals), -np.inf, 0.0)
        if np.isfinite(cap):
            rows.add_one(np.concatenate(mcols), _spread(mcols, mvals), -np.inf, cap)
    # colocation: y[u,.] = y[v,.]
    for r in np.unique(d.colo):
        members = np.flatnonzero(d.colo == r)
        for a in members[1:]:
            rows.add([vm.y(np.full(k, members[0]), B), vm.y(np.full(k, a), B)], [1.0, -1.0], 0.0, 0.0)
    A, lo, hi = rows.matrix(vm.ncols)
    col_lo = np.zeros(vm.ncols)
    col_hi = np.ones(vm.ncols)
    col_lo[vm.y(np.arange(n), k)] = 1.0  # y[v,k] = 1
    col_hi[vm.t] = np.inf
    c = np.zeros(vm.ncols)
    c[vm.t] = 1.0
    integer = np.zeros(vm.ncols, dtype=bool)
    integer[: n * k] = True
    return MatrixMIP(c, A, lo, hi, col_lo, col_hi, integer), vm


def _spread(cols: list[np.ndarray], vals: list[np.ndarray]) -> np.ndarray:
    """Values for concatenated column blocks (a scalar value repeats over its block)."""
    return np.concatenate([np.broadcast_to(np.asarray(v, dtype=float), (len(c),)) for c, v in zip(cols, vals)])


def decode(spec: Spec, vm: VarMap, x: np.ndarray) -> np.ndarray:
    """Block of v = first b with y[v,b] = 1; block b runs on stage device b-1."""
    Y = x[: vm.n * vm.k].reshape(vm.n, vm.k) > 0.5
    return Y.argmax(axis=1).astype(np.int64)


def encode(spec: Spec, vm: VarMap, dev: np.ndarray) -> np.ndarray | None:
    """A MIP start from an assignment whose devices can be ordered along the DAG, or None."""
    from ..core.evaluate import evaluate, quotient_cycle
    from ..kernels.orders import kahn

    d = spec.dense
    cross = dev[d.src] != dev[d.dst]
    pairs = np.unique(np.stack([dev[d.src][cross], dev[d.dst][cross]], axis=1), axis=0) if cross.any() \
        else np.zeros((0, 2), np.int64)
    if quotient_cycle(d.D, pairs) is not None:
        return None
    rank = np.empty(d.D, dtype=np.int64)
    rank[kahn(d.D, pairs[:, 0], pairs[:, 1])] = np.arange(d.D)
    block = rank[dev] + 1
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
    x[vm.n * vm.k: vm.t] = inn_out.ravel()
    x[vm.t] = ev.objective
    return x

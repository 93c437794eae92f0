"""Tarnawski et al. Fig. 6: the max-load IP for k accelerators + l CPUs (any device
classes here), in matrix form.

x[v,i] = 1 iff node v runs on device i (only allowed pairs get a column: support,
only/not, pins, forbids); for non-host devices, CommIn[u,i] >= x[v,i] - x[u,i] and
CommOut[u,i] >= x[u,i] - x[v,i] over edges (u, v) charge u's tensor once per device;
Load_i = sum_v p_v x[v,i] + sum_u c_u (CommIn + CommOut) <= MaxLoad (or, with overlap,
compute and transfers bounded separately, App. C.1); memory knapsacks; colocation
x[u,i] = x[v,i]; contiguity by Lemma 4.1 (z[v,i] >= x[v,i], z[v,i] <= z[u,i],
z[v,i] <= x[v,i] - x[u,i] + 1 over edges), separately for forward and backward parts of
training graphs (sec. 5.3). Without `contiguous` it is the non-contiguous relaxation.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.errors import PartError
from ..core.ir import Spec
from .matrix import MatrixMIP, Rows


@dataclass(frozen=True)
class VarMap:
    xcol: np.ndarray  # [n, D] column of x[v,i], -1 where v may not run on i
    ncols: int
    L: int  # the MaxLoad column
    cin: dict  # (u, i) -> column
    cout: dict
    z: dict  # (v, i, part) -> column


def check(spec: Spec) -> None:
    o, c = spec.objective, spec.constraints
    why = None
    if o.kind != "bottleneck" or o.training == "gpipe":
        why = "it minimizes the max load (PipeDream form for training), not latency, throughput or GPipe"
    elif c.acyclic:
        why = "an acyclic stage order is not part of this IP (use method dp, exact under acyclic)"
    elif c.memory == "overflow":
        why = "the overflow term (Archer eq. 2) is not linearized yet: use `memory hard` or `ignore`"
    elif c.max_stages is not None:
        why = "stage limits are not modelled"
    if why:
        raise PartError(f"method exact (Tarnawski's max-load IP) does not fit this spec: {why}", None,
                        "use --method dp or topo")


def build(spec: Spec) -> tuple[MatrixMIP, VarMap]:
    check(spec)
    d = spec.dense
    n, D = d.n, d.D
    cls = d.dev_class
    host = d.host[cls]
    xcol = np.full((n, D), -1, dtype=np.int64)
    vv, ii = np.nonzero(d.allowed)
    xcol[vv, ii] = np.arange(len(vv))
    nc = len(vv)
    L = nc
    nc += 1
    cin: dict = {}
    cout: dict = {}
    z: dict = {}
    rows = Rows()
    # each node on exactly one device
    for v in range(n):
        cols = xcol[v][xcol[v] >= 0]
        rows.add_one(cols, np.ones(len(cols)), 1.0, 1.0)
    # transfers on non-host devices: columns first, then CommIn >= x[v,i] - x[u,i] and
    # CommOut >= x[u,i] - x[v,i] over every edge (an x that does not exist is 0)
    edges = list(zip(d.src.tolist(), d.dst.tolist()))
    nonhost = np.flatnonzero(~host)
    for u, v in edges:
        for i in nonhost:
            if xcol[v, i] >= 0:
                cin.setdefault((u, i), nc + len(cin))
    nc += len(cin)
    for u, _v in edges:
        for i in nonhost:
            if xcol[u, i] >= 0:
                cout.setdefault((u, i), nc + len(cout))
    nc += len(cout)
    for u, v in edges:
        for i in nonhost:
            xu, xv = xcol[u, i], xcol[v, i]
            for table, a, b in ((cin, xv, xu), (cout, xu, xv)):
                if a >= 0:  # the tensor crosses when a's node is on i and b's is not
                    rows.add_one([a, table[(u, i)]] + ([b] if b >= 0 else []),
                                 [1.0, -1.0] + ([-1.0] if b >= 0 else []), -np.inf, 0.0)
    # loads
    o = spec.objective
    for i in range(D):
        c = cls[i]
        nodes = np.flatnonzero(xcol[:, i] >= 0)
        comp_cols, comp_vals = xcol[nodes, i], d.work[nodes, c]
        ins = [(col, d.comm[u, c]) for (u, j), col in cin.items() if j == i]
        outs = [(col, d.comm[u, c]) for (u, j), col in cout.items() if j == i]
        inc = np.array([a for a, _ in ins], np.int64)
        inv = np.array([b for _, b in ins])
        outc = np.array([a for a, _ in outs], np.int64)
        outv = np.array([b for _, b in outs])
        if o.overlap is None:
            rows.add_one(np.r_[comp_cols, inc, outc, L], np.r_[comp_vals, inv, outv, -1.0], -np.inf, 0.0)
        elif o.overlap == "simplex":
            rows.add_one(np.r_[comp_cols, L], np.r_[comp_vals, -1.0], -np.inf, 0.0)
            rows.add_one(np.r_[inc, outc, L], np.r_[inv, outv, -1.0], -np.inf, 0.0)
        else:
            rows.add_one(np.r_[comp_cols, L], np.r_[comp_vals, -1.0], -np.inf, 0.0)
            rows.add_one(np.r_[inc, L], np.r_[inv, -1.0], -np.inf, 0.0)
            rows.add_one(np.r_[outc, L], np.r_[outv, -1.0], -np.inf, 0.0)
        if spec.constraints.memory == "hard" and np.isfinite(d.memory[c]):
            rows.add_one(comp_cols, d.params[nodes], -np.inf, d.memory[c])
    # colocation
    for r in np.unique(d.colo):
        members = np.flatnonzero(d.colo == r)
        for a in members[1:]:
            for i in range(D):
                ca, cb = xcol[members[0], i], xcol[a, i]
                cols = [x for x in (ca, cb) if x >= 0]
                vals = [1.0 if x == ca else -1.0 for x in cols]
                if cols:
                    rows.add_one(np.array(cols), np.array(vals), 0.0, 0.0)
    # contiguity (Lemma 4.1), per device and per forward/backward part
    if spec.constraints.contiguous:
        parts = [0, 1] if spec.graph.is_training else [None]
        for i in range(D):
            for part in parts:
                def xp(v: int) -> int:
                    if part is not None and int(d.backward[v]) != part:
                        return -1
                    return int(xcol[v, i])

                if all(xp(v) < 0 for v in range(n)):
                    continue
                base = nc
                for v in range(n):
                    z[(v, i, part)] = base + v
                nc += n
                for v in range(n):
                    if xp(v) >= 0:
                        rows.add_one(np.array([z[(v, i, part)], xp(v)]), np.array([1.0, -1.0]), 0.0, np.inf)
                for u, v in zip(d.src.tolist(), d.dst.tolist()):
                    rows.add_one(np.array([z[(v, i, part)], z[(u, i, part)]]), np.array([1.0, -1.0]), -np.inf, 0.0)
                    cols = [z[(v, i, part)]] + [c for c in (xp(v), xp(u)) if c >= 0]
                    vals = [1.0] + ([-1.0] if xp(v) >= 0 else []) + ([1.0] if xp(u) >= 0 else [])
                    rows.add_one(np.array(cols), np.array(vals), -np.inf, 1.0)
    A, lo, hi = rows.matrix(nc)
    col_lo, col_hi = np.zeros(nc), np.ones(nc)
    col_hi[L] = np.inf
    cost = np.zeros(nc)
    cost[L] = 1.0
    integer = np.zeros(nc, dtype=bool)
    integer[:L] = True
    return MatrixMIP(cost, A, lo, hi, col_lo, col_hi, integer), VarMap(xcol, nc, L, cin, cout, z)


def decode(spec: Spec, vm: VarMap, x: np.ndarray) -> np.ndarray:
    vals = np.where(vm.xcol >= 0, x[np.maximum(vm.xcol, 0)], -1.0)
    return vals.argmax(axis=1).astype(np.int64)


def encode(spec: Spec, vm: VarMap, dev: np.ndarray) -> np.ndarray | None:
    """A complete MIP start from an assignment (None if it uses a forbidden pair)."""
    from ..core.evaluate import evaluate

    d = spec.dense
    if (vm.xcol[np.arange(d.n), dev] < 0).any():
        return None
    x = np.zeros(vm.ncols)
    x[vm.xcol[np.arange(d.n), dev]] = 1.0
    for (u, i), col in vm.cin.items():
        succ = d.succ_idx[d.succ_ptr[u]:d.succ_ptr[u + 1]]
        x[col] = float(dev[u] != i and (dev[succ] == i).any())
    for (u, i), col in vm.cout.items():
        succ = d.succ_idx[d.succ_ptr[u]:d.succ_ptr[u + 1]]
        x[col] = float(dev[u] == i and (dev[succ] != i).any())
    if vm.z:  # z[v,i,part] = 1 iff a node of that part on i is reachable from v
        order = d.topo[::-1]
        preds_done: dict = {}
        for (v, i, part), col in vm.z.items():
            preds_done.setdefault((i, part), []).append((v, col))
        for (i, part), cols in preds_done.items():
            mark = np.zeros(d.n, dtype=bool)
            inside = (dev == i) & ((d.backward.astype(int) == part) if part is not None else True)
            for v in order:
                succ = d.succ_idx[d.succ_ptr[v]:d.succ_ptr[v + 1]]
                mark[v] = inside[v] or mark[succ].any()
            for v, col in cols:
                x[col] = float(mark[v])
    x[vm.L] = evaluate(spec, dev).objective
    return x

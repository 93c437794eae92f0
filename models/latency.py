"""Tarnawski et al. Figs. 3 and 4: the latency IP, q contiguous subgraphs per accelerator,
with the big-M reformulation of Lemma 4.1 (Claim 4.1), in matrix form.

Slots j = (accelerator i, s), s = 0 .. q-1, run in order s (constraint 14); host devices
are one choice per host class (the paper's index 0: every CPU runs a node as soon as its
inputs are ready). x[v, j] / x[v, h] binary (only allowed pairs get a column);
CommIn[u, j] >= x[v, j] - x[u, j] and CommOut[u, j] >= x[u, j] - x[v, j] over edges (4, 5);
Start_j >= Lat_u - (1 - CommIn[u, j]) H (6); Finish_j = Start_j + sum_u c_u CommIn[u, j] +
sum_v p_v x[v, j] + sum_u c_u CommOut[u, j] (7); Lat_v >= sum_h p_vh x[v, h] (+ Lat_u over
edges (u, v)) (8, 9); Lat_v >= Finish_j - (1 - x[v, j]) H (10); T >= Lat_v; memory per
accelerator over its slots (3*); each slot contiguous by Lemma 4.1 (z); colocation per
device (sum over a device's slots). On server levels and direct links a transfer is priced
per pair of places (models/latency_routes.py), and each host device is a choice of its own.
H is a proven upper bound on the latency (the incumbent's, or all work and transfers in
sequence); T <= H and Lat_v <= H make the big-M rows vacuous when the indicator is 0 and
cut off nothing better than H.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from partdsl.core.dense import Dense
from partdsl.core.errors import PartError
from partdsl.core.ir import Spec
from partdsl.evaluator import levels
from partdsl.models import latency_routes
from partdsl.models.latency_routes import SlotRoutes
from partdsl.models.matrix import ColumnNames, MatrixMIP, Rows


@dataclass(frozen=True)
class VarMap:
    xacc: np.ndarray  # [n, S] column of x[v, slot], -1 where v may not run on that device
    xhost: np.ndarray  # [n, Hc] column of x[v, host choice], -1 where not allowed
    slot_dev: np.ndarray  # [S] device of each slot
    slot_rank: np.ndarray  # [S] s
    host_cls: np.ndarray  # [Hc] class index of each host choice
    host_dev: np.ndarray  # [Hc] its device on a routed platform, -1 where the choice is the class
    cin: np.ndarray  # [m, S] column of CommIn[src(e), slot] per edge (shared per producer)
    cout: np.ndarray  # [m, S]
    lat: int  # first Lat column
    start: int  # first Start column
    finish: int
    z: int  # first z column ([n, S] block)
    T: int
    ncols: int
    H: float
    n: int
    S: int
    routes: SlotRoutes | None  # per pair of places, on server levels and direct links


def check(spec: Spec) -> None:
    if spec.objective.kind != "latency":
        raise PartError("Tarnawski's latency IP minimizes single-stream latency", None,
                        "use `minimize latency`")
    if spec.constraints.acyclic or spec.constraints.max_stages is not None:
        raise PartError("Tarnawski's latency IP does not fit this spec: `acyclic` and `stages` are pipeline "
                        "constraints, not part of the latency model", None, "drop them for `minimize latency`")


def safe_horizon(spec: Spec) -> float:
    """A latency no split exceeds: every node at its slowest allowed time and every tensor
    moved out and into each consumer, in sequence."""
    d = spec.dense
    t = np.where(d.allowed, d.work[:, d.dev_class], 0.0)
    t = np.where(np.isfinite(t), t, 0.0).max(axis=1, initial=0.0)
    outdeg = np.bincount(d.src, minlength=d.n)
    return float(t.sum() + (levels.slowest_ms(d) * (1 + outdeg)).sum()) + 1.0


HORIZON_SLACK = 1e-3  # relative and absolute room above the incumbent in H


def horizon(spec: Spec, upper: float | None) -> float:
    """H: a latency no split considered exceeds. From an incumbent, a little above it: with
    T's range [optimum, H] only 2e-6 wide, HiGHS 1.16's presolve fixed T at H and reported
    H as the optimum and dual bound (1.000002 for 1.0; right with presolve off)."""
    safe = safe_horizon(spec)
    if upper is None or not np.isfinite(upper):
        return safe
    return min(safe, upper * (1 + HORIZON_SLACK) + HORIZON_SLACK)


@dataclass(frozen=True)
class _Producers:
    """The CommIn / CommOut blocks, one column per (producer, slot), shared by its edges."""
    prods: np.ndarray  # [P] nodes with an out-edge
    cin: np.ndarray  # [P, S] column of CommIn[producer, slot]
    cout: np.ndarray  # [P, S]
    n_int: int  # the x columns (the integers) come first


def build(spec: Spec, upper: float | None = None) -> tuple[MatrixMIP, VarMap]:
    check(spec)
    rows = Rows()
    vm, p = _layout(spec, horizon(spec, upper), rows)
    _assign_rows(spec, vm, rows)
    _transfer_rows(spec, vm, rows)
    _timing_rows(spec, vm, p, rows)
    _memory_rows(spec, vm, rows)
    _contiguity_rows(spec, vm, rows)
    _colocation_rows(spec, vm, rows)
    nc, n, S, H = vm.ncols, vm.n, vm.S, vm.H
    A, lo, hi = rows.matrix(nc)
    col_lo = np.zeros(nc)
    col_hi = np.ones(nc)
    col_hi[vm.lat: vm.lat + n] = H
    col_hi[vm.start: vm.finish + S] = H
    col_hi[vm.T] = H
    if vm.routes is not None:
        latency_routes.upper(vm.routes, col_hi)
    cost = np.zeros(nc)
    cost[vm.T] = 1.0
    integer = np.zeros(nc, dtype=bool)
    integer[:p.n_int] = True
    return MatrixMIP(cost, A, lo, hi, col_lo, col_hi, integer, rows.names,
                     lambda: column_names(spec, vm, p.prods, p.cin, p.cout)), vm


def _layout(spec: Spec, H: float, rows: Rows) -> tuple[VarMap, _Producers]:
    """The columns: x per (node, slot) and (node, host choice), CommIn/CommOut per producer
    and slot, Lat, Start, Finish, z, T; on routed platforms the routes' columns and rows."""
    d = spec.dense
    n = d.n
    q = spec.constraints.subgraphs
    accs = np.flatnonzero(~d.host[d.dev_class])
    slot_dev = np.repeat(accs, q)
    slot_rank = np.tile(np.arange(q), len(accs))
    S = len(slot_dev)
    host_cls, host_dev, ok_host = latency_routes.host_choices(spec)
    nc = 0
    xacc = np.full((n, S), -1, dtype=np.int64)
    vv, jj = np.nonzero(d.allowed[:, slot_dev])
    xacc[vv, jj] = nc + np.arange(len(vv))
    nc += len(vv)
    xhost = np.full((n, len(host_cls)), -1, dtype=np.int64)
    vv, hh = np.nonzero(ok_host)
    xhost[vv, hh] = nc + np.arange(len(vv))
    nc += len(vv)
    n_int = nc
    prods = np.unique(d.src)
    ppos = np.searchsorted(prods, d.src)
    cin_p = nc + np.arange(len(prods) * S).reshape(len(prods), S)
    nc += cin_p.size
    cout_p = nc + np.arange(len(prods) * S).reshape(len(prods), S)
    nc += cout_p.size
    lat, start, finish, z, T = nc, nc + n, nc + n + S, nc + n + 2 * S, nc + n + 2 * S + n * S
    nc = T + 1
    routes = None
    if levels.routed(d):
        def place(p: int) -> str:
            return _slot(d, slot_dev, slot_rank, p) if p < S else d.devices[host_dev[p - S]]

        routes, nc = latency_routes.build(spec, np.c_[xacc, xhost], np.r_[slot_dev, host_dev], S, nc, rows, place)
    vm = VarMap(xacc, xhost, slot_dev, slot_rank, host_cls, host_dev, cin_p[ppos], cout_p[ppos], lat, start, finish,
                z, T, nc, H, n, S, routes)
    return vm, _Producers(prods, cin_p, cout_p, n_int)


def _slot(d: Dense, slot_dev: np.ndarray, slot_rank: np.ndarray, j: int) -> str:
    """A subgraph slot's name: device and invocation."""
    return f"{d.devices[slot_dev[j]]}.s{slot_rank[j]}"


def _edge_key(d: Dense, vm: VarMap, mask: np.ndarray, j: int):  # type: ignore[no-untyped-def]
    e = np.flatnonzero(mask)
    return lambda k: (d.names[d.src[e[k]]], d.names[d.dst[e[k]]], _slot(d, vm.slot_dev, vm.slot_rank, j))


def _assign_rows(spec: Spec, vm: VarMap, rows: Rows) -> None:
    """(1) each node once."""
    d = spec.dense
    rows.family("assign", lambda v: d.names[v])
    for v in range(d.n):
        cols = np.r_[vm.xacc[v][vm.xacc[v] >= 0], vm.xhost[v][vm.xhost[v] >= 0]]
        rows.add_one(cols, np.ones(len(cols)), 1.0, 1.0)


def _transfer_rows(spec: Spec, vm: VarMap, rows: Rows) -> None:
    """(4, 5) CommIn[u,j] - x[v,j] + x[u,j] >= 0; CommOut[u,j] - x[u,j] + x[v,j] >= 0."""
    d = spec.dense
    for j in range(vm.S):
        xu, xv = vm.xacc[d.src, j], vm.xacc[d.dst, j]
        for side, col, a, b in (("in", vm.cin[:, j], xv, xu), ("out", vm.cout[:, j], xu, xv)):
            has_a, has_b = a >= 0, b >= 0
            both = has_a & has_b
            rows.family(f"cross_{side}", _edge_key(d, vm, both, j))
            rows.add([col[both], a[both], b[both]], [1.0, -1.0, 1.0], 0.0, np.inf)
            only_a = has_a & ~has_b
            rows.family(f"cross_{side}", _edge_key(d, vm, only_a, j))
            rows.add([col[only_a], a[only_a]], [1.0, -1.0], 0.0, np.inf)


def _timing_rows(spec: Spec, vm: VarMap, p: _Producers, rows: Rows) -> None:
    """Slot durations (7), starts after inputs (6), slot order (14), node latencies (8, 9,
    10) and T >= Lat_v."""
    d = spec.dense
    N, cls, prods, H, S, n = d.names, d.dev_class, p.prods, vm.H, vm.S, vm.n
    xacc, xhost, host_cls = vm.xacc, vm.xhost, vm.host_cls

    def slot(j: int) -> str:
        return _slot(d, vm.slot_dev, vm.slot_rank, j)

    # (7) Finish_j - Start_j - sum c CommIn - sum p x - sum c CommOut = 0 (routed: the pairs' charges)
    rows.family("duration", slot)
    for j in range(S):
        c = cls[vm.slot_dev[j]]
        nodes = np.flatnonzero(xacc[:, j] >= 0)
        comm = d.comm[prods, c] if vm.routes is None else np.zeros(len(prods))
        rc, rt = latency_routes.terms(vm.routes, j) if vm.routes is not None else (np.zeros(0, np.int64), np.zeros(0))
        rows.add_one(np.r_[vm.finish + j, vm.start + j, xacc[nodes, j], p.cin[:, j], p.cout[:, j], rc],
                     np.r_[1.0, -1.0, -d.work[nodes, c], -comm, -comm, -rt], 0.0, 0.0)
    # (6) Start_j - Lat_u - H CommIn[u,j] >= -H, per producer
    for j in range(S):
        rows.family("start_after_input", lambda k, j=j: (N[prods[k]], slot(j)))
        rows.add([np.full(len(prods), vm.start + j), vm.lat + prods, p.cin[:, j]], [1.0, -1.0, -H], -H, np.inf)
    # (14) Start_(i,s) >= Finish_(i,s-1)
    later = np.flatnonzero(vm.slot_rank > 0)
    rows.family("slot_order", lambda k: slot(later[k]))
    rows.add([vm.start + later, vm.finish + later - 1], [1.0, -1.0], 0.0, np.inf)
    # (8) Lat_v - sum_h p x[v,h] >= 0; (9) Lat_v - Lat_u - sum_h p_v x[v,h] >= 0
    rows.family("lat_host", lambda v: N[v])
    for v in range(n):
        hc = np.flatnonzero(xhost[v] >= 0)
        cols, vals = xhost[v, hc], -d.work[v, host_cls[hc]]
        rows.add_one(np.r_[vm.lat + v, cols], np.r_[1.0, vals], 0.0, np.inf)
    rows.family("lat_edge", lambda k: (N[d.src[k]], N[d.dst[k]]))
    for u, v in zip(d.src.tolist(), d.dst.tolist()):
        hc = np.flatnonzero(xhost[v] >= 0)
        rows.add_one(np.r_[vm.lat + v, vm.lat + u, xhost[v, hc]], np.r_[1.0, -1.0, -d.work[v, host_cls[hc]]],
                     0.0, np.inf)
    # (10) Lat_v - Finish_j - H x[v,j] >= -H
    vv, jj = np.nonzero(xacc >= 0)
    rows.family("lat_after_slot", lambda k, vv=vv, jj=jj: (N[vv[k]], slot(jj[k])))
    rows.add([vm.lat + vv, vm.finish + jj, xacc[vv, jj]], [1.0, -1.0, -H], -H, np.inf)
    # T >= Lat_v
    rows.family("latency", lambda v: N[v])
    rows.add([np.full(n, vm.T), vm.lat + np.arange(n)], [1.0, -1.0], 0.0, np.inf)


def _memory_rows(spec: Spec, vm: VarMap, rows: Rows) -> None:
    """(3*) memory per accelerator, over its slots."""
    d = spec.dense
    mem: list[str] = []
    rows.family("memory", mem.__getitem__)
    if spec.constraints.memory != "hard":
        return
    for i in np.unique(vm.slot_dev):
        cap = d.memory[d.dev_class[i]]
        if not np.isfinite(cap):
            continue
        js = np.flatnonzero(vm.slot_dev == i)
        vv, jj = np.nonzero(vm.xacc[:, js] >= 0)
        mem.append(d.devices[i])
        rows.add_one(vm.xacc[vv, js[jj]], d.params[vv] / cap, -np.inf, 1.0)  # in capacities: bytes are ~1e9


def _contiguity_rows(spec: Spec, vm: VarMap, rows: Rows) -> None:
    """(2) contiguity per slot, Lemma 4.1: z >= x; z_v <= z_u; z_v - x_v + x_u <= 1."""
    d = spec.dense
    n, S, xacc = vm.n, vm.S, vm.xacc
    zc = vm.z + np.arange(n * S).reshape(n, S)
    vv, jj = np.nonzero(xacc >= 0)
    rows.family("z_ge_x", lambda k, vv=vv, jj=jj: (d.names[vv[k]], _slot(d, vm.slot_dev, vm.slot_rank, jj[k])))
    rows.add([zc[vv, jj], xacc[vv, jj]], [1.0, -1.0], 0.0, np.inf)
    for j in range(S):
        rows.family("z_order", _edge_key(d, vm, np.ones(len(d.src), bool), j))
        rows.add([zc[d.dst, j], zc[d.src, j]], [1.0, -1.0], -np.inf, 0.0)
        xu, xv = xacc[d.src, j], xacc[d.dst, j]
        # z_v - x_v + x_u <= 1 (a missing x is 0)
        for mask, cols, vals in (((xu >= 0) & (xv >= 0), lambda k: [zc[d.dst[k], j], xv[k], xu[k]], [1.0, -1.0, 1.0]),
                                 ((xu >= 0) & (xv < 0), lambda k: [zc[d.dst[k], j], xu[k]], [1.0, 1.0])):
            k = np.flatnonzero(mask)
            rows.family("z_gap", _edge_key(d, vm, mask, j))
            rows.add(cols(k), vals, -np.inf, 1.0)
        # where x_v is missing and x_u too: z_v <= 1, nothing to add


def _colocation_rows(spec: Spec, vm: VarMap, rows: Rows) -> None:
    """Colocation: per device (its slots summed) and per host choice."""
    d = spec.dense
    N, xacc, xhost = d.names, vm.xacc, vm.xhost
    colo: list[tuple[str, str, str]] = []
    rows.family("colocate", colo.__getitem__)
    for rep, a in d.colocated_pairs:
        for i in np.unique(vm.slot_dev):
            js = np.flatnonzero(vm.slot_dev == i)
            ca, cb = xacc[rep, js], xacc[a, js]
            cols = np.r_[ca[ca >= 0], cb[cb >= 0]]
            vals = np.r_[np.ones(int((ca >= 0).sum())), -np.ones(int((cb >= 0).sum()))]
            if len(cols):
                colo.append((N[rep], N[a], d.devices[i]))
                rows.add_one(cols, vals, 0.0, 0.0)
        for h in range(len(vm.host_cls)):
            cols = [c for c in (xhost[rep, h], xhost[a, h]) if c >= 0]
            vals = [1.0 if c == xhost[rep, h] else -1.0 for c in cols]
            if cols:
                colo.append((N[rep], N[a], latency_routes.host_label(spec, vm.host_cls, vm.host_dev, h)))
                rows.add_one(np.array(cols), np.array(vals), 0.0, 0.0)


def column_names(spec: Spec, vm: VarMap, prods: np.ndarray, cin_p: np.ndarray, cout_p: np.ndarray) -> list[str]:
    """x(node,device.sK) (K: the device's subgraph slot), x(node,host class or device),
    comm_in/comm_out(producer,slot), lat(node), start/finish(slot), z(node,slot), latency;
    routed: route_in(producer,from,slot), send(producer,slot)."""
    d = spec.dense
    N = d.names

    def slot(j: int) -> str:
        return _slot(d, vm.slot_dev, vm.slot_rank, j)

    cols = ColumnNames()
    def place(p: int) -> str:
        return slot(p) if p < vm.S else latency_routes.host_label(spec, vm.host_cls, vm.host_dev, p - vm.S)

    for family, table, label in (("x", vm.xacc, slot), ("x", vm.xhost, lambda h: place(vm.S + h))):
        vv, jj = np.nonzero(table >= 0)
        for v, j in zip(vv.tolist(), jj.tolist()):
            cols.add(int(table[v, j]), 1, family, lambda _, v=v, j=j, label=label: (N[v], label(j)))
    S = len(vm.slot_dev)
    for family, block in (("comm_in", cin_p), ("comm_out", cout_p)):
        if block.size:
            cols.add(int(block[0, 0]), block.size, family, lambda k: (N[prods[k // S]], slot(k % S)))
    cols.add(vm.lat, vm.n, "lat", lambda v: N[v])
    cols.add(vm.start, S, "start", slot)
    cols.add(vm.finish, S, "finish", slot)
    cols.add(vm.z, vm.n * S, "z", lambda k: (N[k // S], slot(k % S)))
    cols.add(vm.T, 1, "latency", lambda _: ())
    if vm.routes is not None:
        for u, p, j, col in vm.routes.w.tolist():
            cols.add(col, 1, "route_in", lambda _, u=u, p=p, j=j: (N[u], place(p), slot(j)))
        for u, j, col in vm.routes.send.tolist():
            cols.add(col, 1, "send", lambda _, u=u, j=j: (N[u], slot(j)))
    return cols.names(vm.ncols)


def decode(spec: Spec, vm: VarMap, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(device, subgraph number) per node: the slot or host class with the largest x."""
    d = spec.dense
    acc = np.where(vm.xacc >= 0, x[np.maximum(vm.xacc, 0)], -1.0)
    hst = np.where(vm.xhost >= 0, x[np.maximum(vm.xhost, 0)], -1.0) if vm.xhost.size else np.zeros((d.n, 0))
    dev = np.zeros(d.n, dtype=np.int64)
    sub = np.zeros(d.n, dtype=np.int64)
    for v in range(d.n):
        ja = int(acc[v].argmax()) if acc.shape[1] else -1
        jh = int(hst[v].argmax()) if hst.shape[1] else -1
        if jh >= 0 and (ja < 0 or hst[v, jh] > acc[v, ja]):
            devs = np.flatnonzero((d.dev_class == vm.host_cls[jh]) & d.allowed[v])
            dev[v] = vm.host_dev[jh] if vm.host_dev[jh] >= 0 else (
                devs[0] if len(devs) else np.flatnonzero(d.dev_class == vm.host_cls[jh])[0])
        else:
            dev[v], sub[v] = vm.slot_dev[ja], vm.slot_rank[ja]
    return dev, sub

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


def build(spec: Spec, upper: float | None = None) -> tuple[MatrixMIP, VarMap]:
    check(spec)
    d = spec.dense
    n = d.n
    q = spec.constraints.subgraphs
    host = d.host[d.dev_class]
    accs = np.flatnonzero(~host)
    slot_dev = np.repeat(accs, q)
    slot_rank = np.tile(np.arange(q), len(accs))
    S = len(slot_dev)
    host_cls, host_dev, ok_host = latency_routes.host_choices(spec)
    H = horizon(spec, upper)
    nc = 0
    ok_acc = d.allowed[:, slot_dev]  # [n, S]
    xacc = np.full((n, S), -1, dtype=np.int64)
    vv, jj = np.nonzero(ok_acc)
    xacc[vv, jj] = nc + np.arange(len(vv))
    nc += len(vv)
    xhost = np.full((n, len(host_cls)), -1, dtype=np.int64)
    vv, hh = np.nonzero(ok_host)
    xhost[vv, hh] = nc + np.arange(len(vv))
    nc += len(vv)
    n_int = nc
    # CommIn / CommOut per (producer, slot), shared by the producer's edges
    prods = np.unique(d.src)
    ppos = np.searchsorted(prods, d.src)
    cin_p = nc + np.arange(len(prods) * S).reshape(len(prods), S)
    nc += cin_p.size
    cout_p = nc + np.arange(len(prods) * S).reshape(len(prods), S)
    nc += cout_p.size
    cin, cout = cin_p[ppos], cout_p[ppos]
    lat = nc
    nc += n
    start = nc
    nc += S
    finish = nc
    nc += S
    z = nc
    nc += n * S
    T = nc
    nc += 1
    rows = Rows()
    N = d.names

    def slot(j: int) -> str:  # a subgraph slot: device and invocation
        return f"{d.devices[slot_dev[j]]}.s{slot_rank[j]}"

    routes = None
    if levels.routed(d):
        routes, nc = latency_routes.build(spec, np.c_[xacc, xhost], np.r_[slot_dev, host_dev], S, nc, rows,
                                          lambda p: slot(p) if p < S else d.devices[host_dev[p - S]])

    def edge_key(mask: np.ndarray, j: int):  # type: ignore[no-untyped-def]
        e = np.flatnonzero(mask)
        return lambda k: (N[d.src[e[k]]], N[d.dst[e[k]]], slot(j))

    # (1) each node once
    rows.family("assign", lambda v: N[v])
    for v in range(n):
        cols = np.r_[xacc[v][xacc[v] >= 0], xhost[v][xhost[v] >= 0]]
        rows.add_one(cols, np.ones(len(cols)), 1.0, 1.0)
    # (4, 5) transfers: CommIn[u,j] - x[v,j] + x[u,j] >= 0; CommOut[u,j] - x[u,j] + x[v,j] >= 0
    for j in range(S):
        xu, xv = xacc[d.src, j], xacc[d.dst, j]
        for side, col, a, b in (("in", cin[:, j], xv, xu), ("out", cout[:, j], xu, xv)):
            has_a, has_b = a >= 0, b >= 0
            both = has_a & has_b
            rows.family(f"cross_{side}", edge_key(both, j))
            rows.add([col[both], a[both], b[both]], [1.0, -1.0, 1.0], 0.0, np.inf)
            only_a = has_a & ~has_b
            rows.family(f"cross_{side}", edge_key(only_a, j))
            rows.add([col[only_a], a[only_a]], [1.0, -1.0], 0.0, np.inf)
    cls = d.dev_class
    # (7) Finish_j - Start_j - sum c CommIn - sum p x - sum c CommOut = 0 (routed: the pairs' charges)
    rows.family("duration", slot)
    for j in range(S):
        c = cls[slot_dev[j]]
        nodes = np.flatnonzero(xacc[:, j] >= 0)
        comm = d.comm[prods, c] if routes is None else np.zeros(len(prods))
        rc, rt = latency_routes.terms(routes, j) if routes is not None else (np.zeros(0, np.int64), np.zeros(0))
        rows.add_one(np.r_[finish + j, start + j, xacc[nodes, j], cin_p[:, j], cout_p[:, j], rc],
                     np.r_[1.0, -1.0, -d.work[nodes, c], -comm, -comm, -rt], 0.0, 0.0)
    # (6) Start_j - Lat_u - H CommIn[u,j] >= -H, per producer
    for j in range(S):
        rows.family("start_after_input", lambda k, j=j: (N[prods[k]], slot(j)))
        rows.add([np.full(len(prods), start + j), lat + prods, cin_p[:, j]], [1.0, -1.0, -H], -H, np.inf)
    # (14) Start_(i,s) >= Finish_(i,s-1)
    later = np.flatnonzero(slot_rank > 0)
    rows.family("slot_order", lambda k: slot(later[k]))
    rows.add([start + later, finish + later - 1], [1.0, -1.0], 0.0, np.inf)
    # (8) Lat_v - sum_h p x[v,h] >= 0; (9) Lat_v - Lat_u - sum_h p_v x[v,h] >= 0
    rows.family("lat_host", lambda v: N[v])
    for v in range(n):
        hc = np.flatnonzero(xhost[v] >= 0)
        cols, vals = xhost[v, hc], -d.work[v, host_cls[hc]]
        rows.add_one(np.r_[lat + v, cols], np.r_[1.0, vals], 0.0, np.inf)
    rows.family("lat_edge", lambda k: (N[d.src[k]], N[d.dst[k]]))
    for u, v in zip(d.src.tolist(), d.dst.tolist()):
        hc = np.flatnonzero(xhost[v] >= 0)
        rows.add_one(np.r_[lat + v, lat + u, xhost[v, hc]], np.r_[1.0, -1.0, -d.work[v, host_cls[hc]]], 0.0, np.inf)
    # (10) Lat_v - Finish_j - H x[v,j] >= -H
    vv, jj = np.nonzero(xacc >= 0)
    rows.family("lat_after_slot", lambda k, vv=vv, jj=jj: (N[vv[k]], slot(jj[k])))
    rows.add([lat + vv, finish + jj, xacc[vv, jj]], [1.0, -1.0, -H], -H, np.inf)
    # T >= Lat_v
    rows.family("latency", lambda v: N[v])
    rows.add([np.full(n, T), lat + np.arange(n)], [1.0, -1.0], 0.0, np.inf)
    # (3*) memory per accelerator, over its slots
    mem: list[str] = []
    rows.family("memory", mem.__getitem__)
    if spec.constraints.memory == "hard":
        for i in accs:
            cap = d.memory[cls[i]]
            if not np.isfinite(cap):
                continue
            js = np.flatnonzero(slot_dev == i)
            vv, jj = np.nonzero(xacc[:, js] >= 0)
            mem.append(d.devices[i])
            rows.add_one(xacc[vv, js[jj]], d.params[vv] / cap, -np.inf, 1.0)  # in capacities: bytes are ~1e9
    # (2) contiguity per slot, Lemma 4.1: z >= x; z_v <= z_u; z_v - x_v + x_u <= 1
    zc = z + np.arange(n * S).reshape(n, S)
    vv, jj = np.nonzero(xacc >= 0)
    rows.family("z_ge_x", lambda k, vv=vv, jj=jj: (N[vv[k]], slot(jj[k])))
    rows.add([zc[vv, jj], xacc[vv, jj]], [1.0, -1.0], 0.0, np.inf)
    for j in range(S):
        rows.family("z_order", edge_key(np.ones(len(d.src), bool), j))
        rows.add([zc[d.dst, j], zc[d.src, j]], [1.0, -1.0], -np.inf, 0.0)
        xu, xv = xacc[d.src, j], xacc[d.dst, j]
        # z_v - x_v + x_u <= 1 (a missing x is 0)
        for mask, cols, vals in (((xu >= 0) & (xv >= 0), lambda k: [zc[d.dst[k], j], xv[k], xu[k]], [1.0, -1.0, 1.0]),
                                 ((xu >= 0) & (xv < 0), lambda k: [zc[d.dst[k], j], xu[k]], [1.0, 1.0])):
            k = np.flatnonzero(mask)
            rows.family("z_gap", edge_key(mask, j))
            rows.add(cols(k), vals, -np.inf, 1.0)
        # where x_v is missing and x_u too: z_v <= 1, nothing to add
    # colocation: per device (its slots summed) and per host class
    colo: list[tuple[str, str, str]] = []
    rows.family("colocate", colo.__getitem__)
    for rep, a in d.colocated_pairs:
        for i in accs:
            js = np.flatnonzero(slot_dev == i)
            ca, cb = xacc[rep, js], xacc[a, js]
            cols = np.r_[ca[ca >= 0], cb[cb >= 0]]
            vals = np.r_[np.ones(int((ca >= 0).sum())), -np.ones(int((cb >= 0).sum()))]
            if len(cols):
                colo.append((N[rep], N[a], d.devices[i]))
                rows.add_one(cols, vals, 0.0, 0.0)
        for h in range(len(host_cls)):
            cols = [c for c in (xhost[rep, h], xhost[a, h]) if c >= 0]
            vals = [1.0 if c == xhost[rep, h] else -1.0 for c in cols]
            if cols:
                colo.append((N[rep], N[a], latency_routes.host_label(spec, host_cls, host_dev, h)))
                rows.add_one(np.array(cols), np.array(vals), 0.0, 0.0)
    A, lo, hi = rows.matrix(nc)
    col_lo = np.zeros(nc)
    col_hi = np.ones(nc)
    col_hi[lat: lat + n] = H
    col_hi[start: finish + S] = H
    col_hi[T] = H
    if routes is not None:
        latency_routes.upper(routes, col_hi)
    cost = np.zeros(nc)
    cost[T] = 1.0
    integer = np.zeros(nc, dtype=bool)
    integer[:n_int] = True
    vm = VarMap(xacc, xhost, slot_dev, slot_rank, host_cls, host_dev, cin, cout, lat, start, finish, z, T, nc, H, n,
                S, routes)
    names = (prods, cin_p, cout_p)
    return MatrixMIP(cost, A, lo, hi, col_lo, col_hi, integer, rows.names,
                     lambda: column_names(spec, vm, *names)), vm


def column_names(spec: Spec, vm: VarMap, prods: np.ndarray, cin_p: np.ndarray, cout_p: np.ndarray) -> list[str]:
    """x(node,device.sK) (K: the device's subgraph slot), x(node,host class or device),
    comm_in/comm_out(producer,slot), lat(node), start/finish(slot), z(node,slot), latency;
    routed: route_in(producer,from,slot), send(producer,slot)."""
    d = spec.dense
    N = d.names

    def slot(j: int) -> str:
        return f"{d.devices[vm.slot_dev[j]]}.s{vm.slot_rank[j]}"

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


def encode(spec: Spec, vm: VarMap, dev: np.ndarray, sub: np.ndarray | None) -> np.ndarray | None:
    """A complete MIP start from a split (None if it does not fit the slots: a pair not
    allowed, more than q subgraphs on a device, or a deadlock)."""
    from partdsl.evaluator import subgraphs
    from partdsl.evaluator.evaluate import evaluate

    d = spec.dense
    ev = evaluate(spec, dev, sub)
    if not ev.feasible:
        return None
    s = subgraphs.timed(d, dev, subgraphs.units(d, dev, ev.subgraph))
    u = s.units
    slot_of_unit = np.full(u.A, -1, dtype=np.int64)
    for a in range(u.A):
        hit = np.flatnonzero((vm.slot_dev == u.device[a]) & (vm.slot_rank == u.rank[a]))
        if not len(hit):
            return None
        slot_of_unit[a] = hit[0]
    x = np.zeros(vm.ncols)
    host = d.host[d.dev_class[dev]]
    slot = np.full(d.n, -1, dtype=np.int64)
    acc_nodes = np.flatnonzero(~host)
    slot[acc_nodes] = slot_of_unit[u.of_node[acc_nodes]]
    place = np.full(d.n, -1, dtype=np.int64)
    per_device = (vm.host_dev >= 0).any()  # host choices are devices (routed), else classes
    for v in range(d.n):
        if host[v]:
            h = int(np.flatnonzero(vm.host_dev == dev[v] if per_device else vm.host_cls == d.dev_class[dev[v]])[0])
            col = vm.xhost[v, h]
            place[v] = vm.S + h
        else:
            col = vm.xacc[v, slot[v]]
            place[v] = slot[v]
        if col < 0:
            return None
        x[col] = 1.0
    X = np.zeros((d.n, vm.S))
    X[acc_nodes, slot[acc_nodes]] = 1.0
    Xu, Xv = X[d.src], X[d.dst]
    cin = np.maximum(Xv - Xu, 0.0)
    cout = np.maximum(Xu - Xv, 0.0)
    # shared columns per producer: the max over its edges
    np.maximum.at(x, vm.cin.ravel(), cin.ravel())
    np.maximum.at(x, vm.cout.ravel(), cout.ravel())
    if vm.routes is not None:
        latency_routes.encode(spec, vm.routes, place, x)
    lat_v = np.where(host, s.finish[u.of_node], s.finish[u.of_node])
    x[vm.lat: vm.lat + d.n] = lat_v
    st = np.zeros(vm.S)
    fi = np.zeros(vm.S)
    prev_fin = {}
    for j in range(vm.S):  # empty slots pass the previous finish on (constraint 14)
        hit = np.flatnonzero(slot_of_unit == j)
        base = prev_fin.get(int(vm.slot_dev[j]), 0.0) if vm.slot_rank[j] > 0 else 0.0
        if len(hit):
            a = hit[0]
            st[j], fi[j] = s.start[a], s.finish[a]
        else:
            st[j] = fi[j] = base
        prev_fin[int(vm.slot_dev[j])] = fi[j]
    x[vm.start: vm.start + vm.S] = st
    x[vm.finish: vm.finish + vm.S] = fi
    # z: v reaches a node of the slot
    zc = np.zeros((d.n, vm.S))
    for v in d.topo[::-1].tolist():
        succ = d.succ_idx[d.succ_ptr[v]:d.succ_ptr[v + 1]]
        zc[v] = np.maximum(X[v], zc[succ].max(axis=0) if len(succ) else 0.0)
    x[vm.z: vm.z + d.n * vm.S] = zc.ravel()
    x[vm.T] = ev.objective
    if ev.objective > vm.H:
        return None
    return x

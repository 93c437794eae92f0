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

Training in GPipe form (sec. 5.3): loads split by phase (a transfer in is charged to the
consumer's phase, out to the producer's), MaxLoad_FW + MaxLoad_BW minimized. `memory
overflow` (Archer eq. 2): ov[i] >= (sum_v params(v) x[v,i] - M) / B, charged like a
transfer in. Optional symmetry breaking among interchangeable devices (same class, same
allowed nodes): with nodes ranked in topological order, device j of a group may hold node
v only if device j-1 holds a node ranked before v (any solution can be relabelled to
satisfy it). Off by default: HiGHS detects the symmetry itself, and these rows made it
5x slower on BERT-24 (39.5 s against 7.5 s to a proven optimum). Replicated stages
(`replicate <= r`, App. C.2): a binary per device and factor, each load row once per
factor (models/maxload_replicas.py). `acyclic` and `stages <= k`: stage positions and used
devices (models/maxload_stages.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from partdsl.core.dense import Dense
from partdsl.core.errors import PartError
from partdsl.core.ir import Spec
from partdsl.evaluator import levels
from partdsl.models import maxload_replicas as replicas
from partdsl.models import maxload_routes as routes
from partdsl.models import maxload_stages as stages
from partdsl.models import maxload_symmetry as symmetry_rows
from partdsl.models.matrix import ColumnNames, MatrixMIP, Rows
from partdsl.models.memory import treatment


@dataclass(frozen=True)
class VarMap:
    xcol: np.ndarray  # [n, D] column of x[v,i], -1 where v may not run on i
    ncols: int
    L: tuple[int, ...]  # MaxLoad column(s): one, or FW and BW (GPipe)
    cin: dict  # (u, i, phase) -> column
    cout: dict  # (u, i) -> column
    z: dict  # (v, i, part) -> column
    ov: dict  # i -> column
    groups: tuple[tuple[int, ...], ...]  # interchangeable devices, symmetry broken in order
    route: routes.Routes | None  # transfers priced per pair of devices (server levels, direct links)
    rep: replicas.Replicas = replicas.NONE  # replication factor columns (`replicate <= r`)
    stages: stages.Stages = stages.NONE  # stage positions (`acyclic`), used devices (`stages <= k`)


def check(spec: Spec) -> None:
    o = spec.objective
    why = None
    if o.kind != "bottleneck":
        why = "it minimizes the max load (pipelined throughput), not latency or batched throughput"
    if why:
        raise PartError(f"Tarnawski's max-load IP does not fit this spec: {why}", None,
                        "use --method dp or topo")


def build(spec: Spec, symmetry: bool = False) -> tuple[MatrixMIP, VarMap]:
    check(spec)
    d = spec.dense
    n = d.n
    gpipe = spec.objective.training == "gpipe"
    phase = d.backward.astype(np.int64) if gpipe else np.zeros(n, dtype=np.int64)
    xcol = np.full((n, d.D), -1, dtype=np.int64)
    vv, ii = np.nonzero(d.allowed)
    xcol[vv, ii] = np.arange(len(vv))
    nc = len(vv)
    L = tuple(range(nc, nc + (2 if gpipe else 1)))
    nc += len(L)
    rows = Rows()
    _assign_rows(d, xcol, rows)
    routed = levels.routed(d)  # then priced per pair of devices instead (models/maxload_routes.py)
    cin, cout, nc = _transfer_rows(d, xcol, phase, routed, nc, rows)
    route, nc = routes.build(spec, xcol, phase, nc, rows) if routed else (None, nc)
    ov, ov_hi, nc = _memory_rows(spec, xcol, nc, rows)
    # loads, per phase (one phase unless GPipe), each replicated stage's per factor (models/maxload_replicas.py)
    rep, nc = replicas.columns(spec, nc)
    stg, nc = stages.columns(spec, nc)
    ub = np.ones(nc)  # the columns' upper bounds so far (the big-Ms need them); col_hi extends them
    ub[[ov[i] for i in ov]] = [ov_hi[i] for i in ov]
    stages.upper(stg, ub)
    if route is not None:
        routes.upper(route, ub)
    rows.family("replicas")  # each row named by add_rows
    replicas.add_rows(spec, rep, xcol, rows)
    loads = replicas.LoadRows(spec, rep, rows, xcol, ub)
    rows.family("load", lambda j: loads.names[j])
    _load_rows(spec, xcol, phase, L, (cin, cout, ov, route), loads)
    loads.close()
    _colocation_rows(d, xcol, rows)
    z, nc = _contiguity_rows(spec, xcol, nc, rows)
    stages.add_rows(spec, stg, xcol, rows)
    col_hi_zero: list[int] = []
    groups = symmetry_rows.interchangeable(spec) if symmetry else ()
    if groups:
        rows.family("symmetry")
        nc = symmetry_rows.break_symmetry(spec, xcol, groups, rows, col_hi_zero, nc)
    A, lo, hi = rows.matrix(nc)
    col_lo, col_hi = np.zeros(nc), np.r_[ub, np.ones(nc - len(ub))]
    col_hi[list(L)] = np.inf
    col_hi[nc - symmetry_rows.prefix_cols(groups, n):] = n  # prefix counts
    col_hi[col_hi_zero] = 0.0
    cost = np.zeros(nc)
    cost[list(L)] = 1.0
    integer = np.zeros(nc, dtype=bool)
    integer[:L[0]] = True
    integer[list(rep.y.values())] = True
    integer[stg.used] = True
    vm = VarMap(xcol, nc, L, cin, cout, z, ov, groups, route, rep, stg)
    return MatrixMIP(cost, A, lo, hi, col_lo, col_hi, integer, rows.names,
                     lambda: column_names(spec, vm)), vm


def _assign_rows(d: Dense, xcol: np.ndarray, rows: Rows) -> None:
    """Each node on exactly one device."""
    rows.family("assign", lambda j: d.names[j])
    for v in range(d.n):
        cols = xcol[v][xcol[v] >= 0]
        rows.add_one(cols, np.ones(len(cols)), 1.0, 1.0)


def _transfer_rows(d: Dense, xcol: np.ndarray, phase: np.ndarray, routed: bool, nc: int,
                   rows: Rows) -> tuple[dict, dict, int]:
    """Transfers on non-host devices: columns first, then CommIn >= x[v,i] - x[u,i] and
    CommOut >= x[u,i] - x[v,i] over every edge (an x that does not exist is 0)."""
    N, Dn = d.names, d.devices
    edges = list(zip(d.src.tolist(), d.dst.tolist()))
    nonhost = np.flatnonzero(~d.host[d.dev_class]) if not routed else np.zeros(0, dtype=np.int64)
    cin: dict = {}
    cout: dict = {}
    cross: list[tuple[str, int, int, int]] = []
    rows.family("cross", lambda j: (cross[j][0], N[cross[j][1]], N[cross[j][2]], Dn[cross[j][3]]))
    for u, v in edges:
        for i in nonhost:
            if xcol[v, i] >= 0:
                cin.setdefault((u, i, int(phase[v])), nc + len(cin))
    nc += len(cin)
    for u, _v in edges:
        for i in nonhost:
            if xcol[u, i] >= 0:
                cout.setdefault((u, i), nc + len(cout))
    nc += len(cout)
    for u, v in edges:
        for i in nonhost:
            xu, xv = xcol[u, i], xcol[v, i]
            for col, a, b in ((cin.get((u, i, int(phase[v]))), xv, xu), (cout.get((u, i)), xu, xv)):
                if a >= 0:  # the tensor crosses when a's node is on i and b's is not
                    cross.append(("in" if a == xv else "out", u, v, int(i)))
                    rows.add_one([a, col] + ([b] if b >= 0 else []),
                                 [1.0, -1.0] + ([-1.0] if b >= 0 else []), -np.inf, 0.0)
    return cin, cout, nc


def _memory_rows(spec: Spec, xcol: np.ndarray, nc: int, rows: Rows) -> tuple[dict, dict, int]:
    """Memory: hard knapsacks, or the overflow term (Archer eq. 2) as a column."""
    d = spec.dense
    ov: dict[int, int] = {}
    ov_hi: dict[int, float] = {}
    mem: list[int] = []
    rows.family("memory", lambda j: d.devices[mem[j]])
    for i in range(d.D):
        c = d.dev_class[i]
        nodes = np.flatnonzero(xcol[:, i] >= 0)
        cap, bw = d.memory[c], d.link[c]
        rule = treatment(spec.constraints.memory, cap, bw)
        if rule == "overflow":
            ov[i] = nc
            nc += 1
            scale = 1e3 / bw
            ov_hi[i] = max(0.0, float(d.params[nodes].sum()) - cap) * scale  # the most it can take
            mem.append(i)
            rows.add_one(np.r_[xcol[nodes, i], ov[i]], np.r_[d.params[nodes] * scale, -1.0], -np.inf, cap * scale)
        elif rule == "hard":
            mem.append(i)
            rows.add_one(xcol[nodes, i], d.params[nodes], -np.inf, cap)
    return ov, ov_hi, nc


def _load_rows(spec: Spec, xcol: np.ndarray, phase: np.ndarray, L: tuple[int, ...],
               columns: tuple[dict, dict, dict, routes.Routes | None], loads: replicas.LoadRows) -> None:
    """Load_i <= MaxLoad per device and phase; with overlap, compute and transfers apart (App. C.1)."""
    d, o = spec.dense, spec.objective
    cin, cout, ov, route = columns
    gpipe = len(L) == 2
    phases = ("fw", "bw") if gpipe else ("",)
    ck = np.array(list(cin), np.int64).reshape(-1, 3)  # (u, device, phase) of each CommIn column
    cc = np.array(list(cin.values()), np.int64)
    ok = np.array(list(cout), np.int64).reshape(-1, 2)  # (u, device) of each CommOut column
    oc = np.array(list(cout.values()), np.int64)
    for i in range(d.D):
        c = d.dev_class[i]
        ovc = [ov[i]] if i in ov else []
        for p, Lp in enumerate(L):
            nodes = np.flatnonzero((xcol[:, i] >= 0) & (phase == p))
            comp_cols, comp_vals = xcol[nodes, i], d.work[nodes, c]
            if route is not None:
                inc, inv, outc, outv = routes.terms(route, i, p)
            else:
                mi, mo = (ck[:, 1] == i) & (ck[:, 2] == p), (ok[:, 1] == i) & (phase[ok[:, 0]] == p)
                inc, inv, outc, outv = cc[mi], d.comm[ck[mi, 0], c], oc[mo], d.comm[ok[mo, 0], c]
            one = np.ones(len(ovc))
            tag = (d.devices[i],) + ((phases[p],) if gpipe else ())
            sync = p == len(L) - 1  # the weight sync goes with the transfers in (GPipe: backward)

            def row(suffix: tuple, cols: np.ndarray, vals: np.ndarray, with_sync: bool) -> None:
                loads.add(i, cols.astype(np.int64), vals, Lp, with_sync and sync, tag + suffix)

            if o.overlap is None:
                row((), np.r_[comp_cols, inc, outc, ovc], np.r_[comp_vals, inv, outv, one], True)
            elif o.overlap == "simplex":
                row(("compute",), comp_cols, comp_vals, False)
                row(("transfers",), np.r_[inc, outc, ovc], np.r_[inv, outv, one], True)
            else:
                row(("compute",), comp_cols, comp_vals, False)
                row(("in",), np.r_[inc, ovc], np.r_[inv, one], True)
                row(("out",), outc, outv, False)


def _colocation_rows(d: Dense, xcol: np.ndarray, rows: Rows) -> None:
    """x[u,i] = x[v,i] for colocated nodes."""
    colo: list[tuple[int, int, int]] = []
    rows.family("colocate", lambda j: (d.names[colo[j][0]], d.names[colo[j][1]], d.devices[colo[j][2]]))
    for head, a in d.colocated_pairs:
        for i in range(d.D):
            ca, cb = xcol[head, i], xcol[a, i]
            cols = [x for x in (ca, cb) if x >= 0]
            vals = [1.0 if x == ca else -1.0 for x in cols]
            if cols:
                colo.append((head, a, i))
                rows.add_one(np.array(cols), np.array(vals), 0.0, 0.0)


def _contiguity_rows(spec: Spec, xcol: np.ndarray, nc: int, rows: Rows) -> tuple[dict, int]:
    """Contiguity (Lemma 4.1), per device and per forward/backward part (sec. 5.3)."""
    d = spec.dense
    N, Dn = d.names, d.devices
    z: dict = {}
    contig: list[tuple] = []
    rows.family("contiguous", lambda j: contig[j])
    if not spec.constraints.contiguous:
        return z, nc
    edges = list(zip(d.src.tolist(), d.dst.tolist()))
    parts = [0, 1] if spec.graph.is_training else [None]
    for i in range(d.D):
        for part in parts:
            def xp(v: int) -> int:
                if part is not None and int(d.backward[v]) != part:
                    return -1
                return int(xcol[v, i])

            if all(xp(v) < 0 for v in range(d.n)):
                continue
            base = nc
            for v in range(d.n):
                z[(v, i, part)] = base + v
            nc += d.n
            side = () if part is None else (("fw", "bw")[part],)
            for v in range(d.n):
                if xp(v) >= 0:
                    contig.append(("z_ge_x", N[v], Dn[i]) + side)
                    rows.add_one(np.array([z[(v, i, part)], xp(v)]), np.array([1.0, -1.0]), 0.0, np.inf)
            for u, v in edges:
                contig += [("z_order", N[u], N[v], Dn[i]) + side, ("z_gap", N[u], N[v], Dn[i]) + side]
                rows.add_one(np.array([z[(v, i, part)], z[(u, i, part)]]), np.array([1.0, -1.0]), -np.inf, 0.0)
                cols = [z[(v, i, part)]] + [c for c in (xp(v), xp(u)) if c >= 0]
                vals = [1.0] + ([-1.0] if xp(v) >= 0 else []) + ([1.0] if xp(u) >= 0 else [])
                rows.add_one(np.array(cols), np.array(vals), -np.inf, 1.0)
    return z, nc


def column_names(spec: Spec, vm: VarMap) -> list[str]:
    """x(node,device), maxload (fw/bw under GPipe), comm_in(node,device[,phase]),
    comm_out(node,device), overflow(device), z(node,device[,fw|bw]), route(node,from,to[,fw|bw])
    and send(node,device) on routed platforms, used(device), replicas(device,r); symmetry counts c<j>;
    the stage columns of models/maxload_stages.py."""
    d = spec.dense
    N, Dn = d.names, d.devices
    cols = ColumnNames()
    vv, ii = np.nonzero(vm.xcol >= 0)
    cols.add(0, len(vv), "x", lambda j: (N[vv[j]], Dn[ii[j]]))
    for k, col in enumerate(vm.L):
        cols.add(col, 1, "maxload", lambda j, k=k: ("fw", "bw")[k] if len(vm.L) == 2 else ())
    for family, table in (("comm_in", vm.cin), ("comm_out", vm.cout)):
        for key, col in table.items():
            cols.add(col, 1, family, lambda j, key=key: (N[key[0]], Dn[key[1]]) + (
                (("fw", "bw")[key[2]],) if len(key) == 3 and len(vm.L) == 2 else ()))
    for i, col in vm.ov.items():
        cols.add(col, 1, "overflow", lambda j, i=i: Dn[i])
    for (v, i, part), col in vm.z.items():
        cols.add(col, 1, "z", lambda j, v=v, i=i, part=part: (N[v], Dn[i]) + (
            () if part is None else (("fw", "bw")[part],)))
    if vm.route is not None:
        for u, a, b, q, col in vm.route.w.tolist():
            cols.add(col, 1, "route", lambda j, u=u, a=a, b=b, q=q: (N[u], Dn[a], Dn[b]) + (
                (("fw", "bw")[q],) if len(vm.L) == 2 else ()))
        for u, a, col in vm.route.send.tolist():
            cols.add(col, 1, "send", lambda j, u=u, a=a: (N[u], Dn[a]))
    for i, col in vm.rep.u.items():
        cols.add(col, 1, "used", lambda j, i=i: Dn[i])
    for (i, r), col in vm.rep.y.items():
        cols.add(col, 1, "replicas", lambda j, i=i, r=r: (Dn[i], r))
    stages.name_columns(spec, vm.stages, cols)
    return cols.names(vm.ncols)


def decode(spec: Spec, vm: VarMap, x: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """The assignment and, under `replicate`, each device's replication factor."""
    vals = np.where(vm.xcol >= 0, x[np.maximum(vm.xcol, 0)], -1.0)
    return vals.argmax(axis=1).astype(np.int64), replicas.decode(spec, vm.rep, x)


def encode(spec: Spec, vm: VarMap, dev: np.ndarray, factors: np.ndarray | None = None) -> np.ndarray | None:
    """A complete MIP start from an assignment and its replication factors (None if it uses
    a forbidden pair)."""
    from partdsl.evaluator.evaluate import overflow

    d = spec.dense
    dev, factors = symmetry_rows.canonical(spec, vm.groups, dev, factors)
    if (vm.xcol[np.arange(d.n), dev] < 0).any():
        return None
    x = np.zeros(vm.ncols)
    x[vm.xcol[np.arange(d.n), dev]] = 1.0
    if not replicas.encode(spec, vm.rep, dev, factors, x) or not stages.encode(spec, vm.stages, dev, x):
        return None
    phase = d.backward.astype(np.int64) if len(vm.L) == 2 else np.zeros(d.n, dtype=np.int64)
    for (u, i, p), col in vm.cin.items():
        succ = d.succ_idx[d.succ_ptr[u]:d.succ_ptr[u + 1]]
        x[col] = float(dev[u] != i and ((dev[succ] == i) & (phase[succ] == p)).any())
    for (u, i), col in vm.cout.items():
        succ = d.succ_idx[d.succ_ptr[u]:d.succ_ptr[u + 1]]
        x[col] = float(dev[u] == i and (dev[succ] != i).any())
    if vm.route is not None:
        routes.encode(spec, vm.route, dev, phase, x)
    ovs = overflow(spec, d, dev)
    for i, col in vm.ov.items():
        x[col] = ovs[i]
    for (i, part), cols in _by_device(vm.z).items():
        mark = reaches(spec, dev, i, part)
        for v, col in cols:
            x[col] = float(mark[v])
    if vm.groups:  # prefix counts follow the x columns
        rank = symmetry_rows.ranks(spec)
        by_rank = np.argsort(rank)
        base = vm.ncols - symmetry_rows.prefix_cols(vm.groups, d.n)
        for g in vm.groups:
            for i in g[:-1]:
                x[base: base + d.n] = np.cumsum(dev[by_rank] == i)
                base += d.n
    for col, value in zip(vm.L, max_loads(spec, dev, factors)):
        x[col] = value
    return x


def _by_device(z: dict) -> dict:
    out: dict = {}
    for (v, i, part), col in z.items():
        out.setdefault((i, part), []).append((v, col))
    return out


def reaches(spec: Spec, dev: np.ndarray, i: int, part: int | None) -> np.ndarray:
    """Lemma 4.1's z in a start: z[v] = 1 iff v reaches a node on i (of that part)."""
    d = spec.dense
    mark = np.zeros(d.n, dtype=bool)
    inside = (dev == i) & ((d.backward.astype(int) == part) if part is not None else True)
    for v in d.topo[::-1]:
        succ = d.succ_idx[d.succ_ptr[v]:d.succ_ptr[v + 1]]
        mark[v] = inside[v] or mark[succ].any()
    return mark


def max_loads(spec: Spec, dev: np.ndarray, factors: np.ndarray | None = None) -> tuple[float, ...]:
    """MaxLoad of an assignment (FW and BW maxima under GPipe), per the evaluator."""
    from partdsl.evaluator.evaluate import evaluate

    ev = evaluate(spec, dev, replicas_of=factors)
    if spec.objective.training == "gpipe":
        fw = max(p.get("fw", 0.0) for p in ev.parts.values())
        return fw, ev.objective - fw
    return (ev.objective,)

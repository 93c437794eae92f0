"""The DiviML MILP (Ghannane & Abdelfattah sec. IV-A, eqs. 1-7) in matrix form, for the
schedule objectives (`minimize latency by tasks`, `maximize throughput batch L split K`).

Samples go to devices in K chunks of g = L / K (the spec's granularity; the paper's
x_{i,u,l} per sample is K = L). Columns:
- x[i, u, c] binary: chunk c of node i on device u (allowed pairs only); sum_u x = 1 (1, 4);
- b[i, u, m] binary: device u holds m chunks of node i, m = 0..K, one m (5), sum_m m b =
  sum_c x; m g samples run in one go in their fastest supported batches, taking
  t[i, u, m] (no such m where they cannot run);
- s[i, u] >= 0 the start of that share, C the makespan: s + sum_m t b <= C (2);
- precedence (3), for each edge j -> i, devices u, v and chunk c:
  s[j, u] + T[j, u] + tr(j, u, v) (x[j, u, c] + x[i, v, c] - 1) <= s[i, v], relaxed by
  M (b[j, u, 0] + b[i, v, 0]) where a share is empty;
- no overlap (7): for node pairs on no common path (the transitive closure prunes the
  rest: precedence already orders them) and each device both may use, y binary picks
  the order, relaxed where either share is empty;
- memory (6): sum_i (in_i + out_i) g sum_c x + params_i (1 - b[i, u, 0]) <= M_u;
- colocation: colocated nodes put each chunk on the same device.
Minimizing C serves both objectives (throughput = L / C). H, a proven upper bound on C
(the incumbent's makespan), caps C, and every big-M is H plus the largest transfer.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from partdsl.core.errors import PartError
from partdsl.core.ir import Spec
from partdsl.core.schedule import Piece, Schedule, batch_split, share_times
from partdsl.evaluator.schedule_checks import sample_bytes
from partdsl.evaluator.schedule_eval import list_schedule, transfer_time
from partdsl.models.diviml_cuts import add_cuts, end_values
from partdsl.models.diviml_nodes import NodeSymmetry, canonical, fixed_orders
from partdsl.models.diviml_symmetry import add_rows
from partdsl.models.matrix import MatrixMIP, Rows, keyed


@dataclass(frozen=True)
class VarMap:
    x: np.ndarray  # [n, D, K] column or -1
    b: np.ndarray  # [n, D, K+1] column or -1
    s: np.ndarray  # [n, D] column or -1
    t: np.ndarray  # [n, D, K+1] time of m chunks in one go (inf: cannot)
    y: dict  # (i, j, u) -> column: 1 when j's share runs before i's on u
    C: int
    cuts: tuple  # (e, zs) columns of models/diviml_cuts.py's rows: [n] a bound on node i's end or -1, and
    # (column, device, nodes, name): 1 when the device holds one of the nodes
    nodes: NodeSymmetry  # symmetry among nodes, broken by its rows (models/diviml_nodes.py)
    ncols: int
    H: float


def check(spec: Spec) -> None:
    if not spec.objective.scheduled:
        raise PartError("the DiviML MILP is for `minimize latency by tasks` or `maximize throughput`", spec.objective.span)
    c = spec.constraints
    if c.contiguous or c.acyclic or c.max_stages is not None:
        raise PartError("the DiviML MILP does not model contiguous, acyclic or stages", None,
                        "drop them from `subject to`, or use the list-scheduling methods (heft, ea)")


def safe_horizon(spec: Spec) -> float:
    """A makespan no optimal schedule exceeds: every share of every node on every device,
    and every transfer, one after another."""
    d = spec.dense
    t = share_times(spec)
    finite = np.where(np.isfinite(t), t, 0.0)
    move = sum(max((transfer_time(spec, j, a, c) for a in range(d.D) for c in range(d.D)), default=0.0)
               for j in d.src.tolist())
    return float(finite.max(axis=2).sum() + move + 1.0)


def reachable(spec: Spec) -> np.ndarray:
    """[n, n] bool: a path from i to j (the transitive closure, in topological order)."""
    d = spec.dense
    R = np.zeros((d.n, d.n), dtype=bool)
    for v in d.topo[::-1].tolist():
        for w in d.succ_idx[d.succ_ptr[v]:d.succ_ptr[v + 1]].tolist():
            R[v, w] = True
            R[v] |= R[w]
    return R


def free_pairs(spec: Spec, R: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(i, j), i < j, of the node pairs on no common path, which need no-overlap rows: by
    NumPy (a loop over all n^2 / 2 pairs took 26 s at 5,000 nodes, 37,059 of them free).
    `R`: `reachable(spec)` if the caller has it."""
    R = reachable(spec) if R is None else R
    return np.nonzero(np.triu(~(R | R.T), 1))


def _transfer_table(spec: Spec) -> np.ndarray:
    """[n, D, D] ms: node v's tensor from device a to device c (0 on one device)."""
    d = spec.dense
    tr = np.zeros((d.n, d.D, d.D))
    for v in range(d.n):
        for a in range(d.D):
            for c2 in range(d.D):
                tr[v, a, c2] = transfer_time(spec, v, a, c2)
    return tr


def _memory_rows(rows: Rows, spec: Spec, ok: np.ndarray, x: np.ndarray, b: np.ndarray, g: int) -> None:
    """(6): a device holds the parameters of every node with a share on it and the samples
    of its chunks' tensors."""
    d = spec.dense
    K = spec.objective.split
    Dn = d.devices
    if spec.constraints.memory != "ignore":
        held = sample_bytes(spec)
        cap = d.memory[d.dev_class]
        for u in range(d.D):
            vs = np.flatnonzero(ok[:, u])
            if not len(vs) or not np.isfinite(cap[u]):
                continue
            cols = np.r_[x[vs, u].ravel(), b[vs, u, 0]]
            vals = np.r_[np.repeat(held[vs] * g, K), -d.params[vs]]
            rows.add_one(cols, vals, -np.inf, cap[u] * (1 + 1e-12) - d.params[vs].sum(), ("memory", (Dn[u],)))


def _colocation_rows(rows: Rows, spec: Spec, x: np.ndarray) -> None:
    """Each chunk of colocated nodes on one device."""
    d = spec.dense
    K = spec.objective.split
    N, Dn = d.names, d.devices
    for r, v in d.colocated_pairs:
        for u in range(d.D):
            for c in range(K):
                a, z = x[r, u, c], x[v, u, c]
                key = ("colocate", (N[r], N[v], Dn[u], c))
                if a >= 0 and z >= 0:
                    rows.add_one([a, z], [1.0, -1.0], 0.0, 0.0, key)
                elif a >= 0 or z >= 0:
                    rows.add_one([max(a, z)], [1.0], 0.0, 0.0, key)


def build(spec: Spec, H: float, release: np.ndarray | None = None,
          symmetry: int = 0) -> tuple[MatrixMIP, VarMap]:
    """The MILP with makespan cap H; `release[i, u]` (ms, optional) is the earliest start
    of node i's share on device u when it is not empty (MILP-SPLIT's modules after the
    first: inputs from earlier modules, devices busy until then). `symmetry` (sec. V-E,
    VI; models/diviml_symmetry.py): among identical devices, and among identical servers,
    the first holds at least as many chunks (1, "tasks"), as much busy time (2, "time") or
    as many shares (3, "batches") as the next."""
    check(spec)
    d = spec.dense
    K = spec.objective.split
    g = spec.objective.batch // K
    t = share_times(spec)
    ok = d.allowed & np.isfinite(t[:, :, 1:]).any(axis=2)
    col = 0

    def take(shape: tuple[int, ...], mask: np.ndarray) -> np.ndarray:
        nonlocal col
        out = np.full(shape, -1, dtype=np.int64)
        k = int(mask.sum())
        out[mask] = np.arange(col, col + k)
        col += k
        return out

    x = take((d.n, d.D, K), np.repeat(ok[:, :, None], K, axis=2))
    b = take((d.n, d.D, K + 1), ok[:, :, None] & np.isfinite(t))
    s = take((d.n, d.D), ok)
    C, col = col, col + 1
    tr = _transfer_table(spec)
    M = H + float(tr.max(initial=0.0)) + 1.0
    rows = Rows()
    N, Dn = d.names, d.devices
    # (1, 4) every chunk somewhere
    for v in range(d.n):
        for c in range(K):
            cols = x[v, :, c][x[v, :, c] >= 0]
            if not len(cols):
                raise PartError(f"node {d.names[v]} can run on no device", None)
            rows.add_one(cols, np.ones(len(cols)), 1.0, 1.0, ("assign", (N[v], c)))
    for v, u in zip(*np.nonzero(ok)):
        bs = b[v, u][b[v, u] >= 0]
        ms = np.flatnonzero(b[v, u] >= 0)
        rows.add_one(bs, np.ones(len(bs)), 1.0, 1.0, ("one_size", (N[v], Dn[u])))  # (5) one share size
        rows.add_one(np.r_[bs, x[v, u]], np.r_[ms.astype(float), -np.ones(K)], 0.0, 0.0, ("size", (N[v], Dn[u])))
        # (2) the share ends by C
        rows.add_one(np.r_[s[v, u], bs, C], np.r_[1.0, t[v, u, ms], -1.0], -np.inf, 0.0, ("makespan", (N[v], Dn[u])))
    # (3) precedence, per chunk where a transfer may apply
    for j, i in zip(d.src.tolist(), d.dst.tolist()):
        for u in np.flatnonzero(ok[j]):
            bj = b[j, u][b[j, u] >= 0]
            tj = t[j, u, np.flatnonzero(b[j, u] >= 0)]
            for v in np.flatnonzero(ok[i]):
                base_c, base_v = np.r_[s[j, u], bj, s[i, v], b[j, u, 0], b[i, v, 0]], np.r_[1.0, tj, -1.0, -M, -M]
                if tr[j, u, v] == 0:
                    rows.add_one(base_c, base_v, -np.inf, 0.0, ("precede", (N[j], Dn[u], N[i], Dn[v])))
                    continue
                for c in range(K):
                    rows.add_one(np.r_[base_c, x[j, u, c], x[i, v, c]], np.r_[base_v, tr[j, u, v], tr[j, u, v]],
                                 -np.inf, tr[j, u, v], ("precede", (N[j], Dn[u], N[i], Dn[v], c)))
    ys, col = _no_overlap(rows, spec, ok, b, s, t, M, col, R := reachable(spec))
    cuts, nodes, col = add_cuts(rows, spec, ok, x, b, t, C, tr, release, col, R)
    if release is not None:  # s >= r (1 - b0): only a share that runs waits
        for v, u in zip(*np.nonzero(ok & (np.asarray(release) > 0))):
            r = float(release[v, u])
            rows.add_one([s[v, u], b[v, u, 0]], [1.0, r], r, np.inf, ("release", (N[v], Dn[u])))
    add_rows(rows, spec, x, b, t, symmetry, release)
    _memory_rows(rows, spec, ok, x, b, g)
    _colocation_rows(rows, spec, x)
    A, lo, hi = rows.matrix(col)
    cvec = np.zeros(col)
    cvec[C] = 1.0  # minimize the makespan
    col_lo, col_hi, integer = _column_bounds(col, s, C, H, cuts, fixed_orders(ys, nodes, d.D))
    vm = VarMap(x, b, s, t, ys, C, cuts, nodes, col, H)
    return MatrixMIP(cvec, A, lo, hi, col_lo, col_hi, integer, rows.names, lambda: column_names(spec, vm)), vm


def _column_bounds(col: int, s: np.ndarray, C: int, H: float, cuts: tuple, fixed: list[int]  # type: ignore[type-arg]
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lower, upper, integral) per column: binaries but the starts, ends and makespan (in
    [0, H]) and the cuts' z (in [0, 1]); the `fixed` order columns at 0."""
    col_lo = np.zeros(col)
    col_hi = np.ones(col)
    e, z = cuts[0], [c for c, *_ in cuts[1]]
    timed = np.r_[s[s >= 0], e[e >= 0], C]
    col_hi[timed] = H
    col_hi[fixed] = 0.0
    integer = np.ones(col, dtype=bool)
    integer[np.r_[timed, z].astype(np.int64)] = False
    return col_lo, col_hi, integer


def _no_overlap(rows: Rows, spec: Spec, ok: np.ndarray, b: np.ndarray, s: np.ndarray, t: np.ndarray, M: float,
                col: int, R: np.ndarray) -> tuple[dict[tuple[int, int, int], int], int]:
    """(7) no overlap, built in arrays: for each pair (i, j) on no common path and device u
    both may use, an order column y and two rows, i's share ending before j's starts when
    y = 0 and j's before i's when y = 1 (void when either share is empty, b[., u, 0] = 1).
    Returns the order columns by (i, j, u) and the next free column."""
    fi, fj = free_pairs(spec, R)
    pair, U = np.nonzero(ok[fi] & ok[fj])
    I, J = fi[pair], fj[pair]
    P = len(I)
    Y = col + np.arange(P)
    ys = dict(zip(zip(I.tolist(), J.tolist(), U.tolist()), Y.tolist()))
    if not P:
        return ys, col
    one = np.ones((P, 1))

    def side(a: np.ndarray, z: np.ndarray, y_sign: float) -> tuple[np.ndarray, np.ndarray]:
        cols = np.column_stack([s[a, U], b[a, U], s[z, U], Y, b[I, U, 0], b[J, U, 0]])
        ba = b[a, U] >= 0
        vals = np.column_stack([one, np.where(ba, t[a, U], 0.0), -one, y_sign * M * one, -M * one, -M * one])
        return cols, vals

    (c1, v1), (c2, v2) = side(I, J, -1.0), side(J, I, 1.0)
    cols = np.stack([c1, c2], axis=1).reshape(2 * P, -1)
    vals = np.stack([v1, v2], axis=1).reshape(2 * P, -1)
    N, Dn = spec.dense.names, spec.dense.devices
    rows.family("no_overlap", lambda k: ((N[I[k // 2]], N[J[k // 2]]) if k % 2 == 0 else (N[J[k // 2]], N[I[k // 2]]))
                + (Dn[U[k // 2]],))
    rows.add_masked(cols, vals, -np.inf, np.tile([0.0, M], P))
    rows.family("r")  # the rows after these carry names of their own
    return ys, col + P


def column_names(spec: Spec, vm: VarMap) -> list[str]:
    """x(node,device,chunk), b(node,device,m) (the share is m chunks run in one go),
    start(node,device), order(node,node,device) (1: the second's share runs first), makespan."""
    N, Dn = spec.dense.names, spec.dense.devices
    out = [f"c{j}" for j in range(vm.ncols)]
    for family, table in (("x", vm.x), ("b", vm.b), ("start", vm.s)):
        for idx in zip(*np.nonzero(table >= 0)):
            out[int(table[idx])] = keyed(family, (N[idx[0]], Dn[idx[1]]) + tuple(int(k) for k in idx[2:]))
    for (i, j, u), col in vm.y.items():
        out[col] = keyed("order", (N[i], N[j], Dn[u]))
    e, zs = vm.cuts
    for v in np.flatnonzero(e >= 0):
        out[int(e[v])] = keyed("ends_after", (N[v],))
    for c, *_, name in zs:
        out[c] = name
    out[vm.C] = "makespan"
    return out


def pieces_of_shares(spec: Spec, shares: list[tuple[float, int, int, list[int]]],
                     timed: bool = True) -> Schedule | list[tuple[float, Piece]]:
    """Shares (MILP start, node, device, chunks), each run in its fastest batches back to
    back, in order of the starts: list-scheduled (so solver tolerances never show as
    violations), or with `timed=False` the (start, piece) pairs."""
    d = spec.dense
    g = spec.objective.batch // spec.objective.split
    pos = d.topo_position
    pieces: list[tuple[float, Piece]] = []
    for at, v, u, chunks in sorted(shares, key=lambda z: (z[0], pos[z[1]])):
        samples = [q for c in chunks for q in range(c * g, (c + 1) * g)]
        lo = 0
        for size in batch_split(spec, v, int(d.dev_class[u]), len(samples)) or [len(samples)]:
            pieces.append((at, Piece(v, u, tuple(samples[lo:lo + size]))))
            lo += size
    if not timed:
        return pieces
    ps = tuple(p for _, p in pieces)
    return list_schedule(spec, Schedule(ps, spec.objective.batch), piece_order=range(len(ps)))


def _shares(spec: Spec, vm: VarMap, xs: np.ndarray) -> list[tuple[float, int, int, list[int]]]:
    d = spec.dense
    K = spec.objective.split
    out = []
    for v in range(d.n):
        for u in range(d.D):
            if vm.s[v, u] < 0:
                continue
            chunks = [c for c in range(K) if vm.x[v, u, c] >= 0 and xs[vm.x[v, u, c]] > 0.5]
            if chunks:
                out.append((float(xs[vm.s[v, u]]), v, u, chunks))
    return out


def decode_pieces(spec: Spec, vm: VarMap, xs: np.ndarray) -> list[tuple[float, Piece]]:
    """The MILP's pieces with the start of their share, in order of those starts."""
    return pieces_of_shares(spec, _shares(spec, vm, xs), timed=False)  # type: ignore[return-value]


def decode(spec: Spec, vm: VarMap, xs: np.ndarray) -> Schedule:
    """The MILP's schedule, list-scheduled in the order of its starts."""
    return pieces_of_shares(spec, _shares(spec, vm, xs))  # type: ignore[return-value]


def encode(spec: Spec, vm: VarMap, sched: Schedule) -> np.ndarray | None:
    """A MIP start from a timed schedule in the MILP's space (chunks whole, one share per
    node and device in one go), else None."""
    d = spec.dense
    K = spec.objective.split
    g = spec.objective.batch // K
    xs = np.zeros(vm.ncols)
    start: dict[tuple[int, int], float] = {}
    end: dict[tuple[int, int], float] = {}
    held: dict[tuple[int, int], set[int]] = {}
    label = {}
    if vm.nodes.chain:  # relabel interchangeable nodes to meet the symmetry rows (each share's first start)
        first = {(p.node, p.device): p.start or 0.0 for p in sorted(sched.pieces, key=lambda p: -(p.start or 0.0))}
        label = canonical(vm.nodes, first)
    for p in sched.pieces:
        key = (label.get(p.node, p.node), p.device)
        held.setdefault(key, set()).update(p.samples)
        start[key] = min(start.get(key, np.inf), p.start or 0.0)
    for (v, u), samples in held.items():
        chunks = {q // g for q in samples}
        if any(set(range(c * g, (c + 1) * g)) - samples for c in chunks) or vm.s[v, u] < 0:
            return None
        for c in chunks:
            if vm.x[v, u, c] < 0:
                return None
            xs[vm.x[v, u, c]] = 1.0
        m = len(chunks)
        if vm.b[v, u, m] < 0:
            return None
        xs[vm.b[v, u, m]] = 1.0
        xs[vm.s[v, u]] = start[(v, u)]
        end[(v, u)] = start[(v, u)] + vm.t[v, u, m]
    for v in range(d.n):
        for u in range(d.D):
            if vm.s[v, u] >= 0 and (v, u) not in held:
                xs[vm.b[v, u, 0]] = 1.0
    for (i, j, u), col in vm.y.items():
        if (i, u) in start and (j, u) in start and start[(j, u)] < start[(i, u)]:
            xs[col] = 1.0
    if not end or max(end.values()) > vm.H * (1 + 1e-9):
        return None
    xs[vm.C] = max(end.values())
    end_values(vm.cuts, xs, end)
    return xs

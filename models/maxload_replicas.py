"""Data-parallel stages in Tarnawski's max-load IP (App. C.2, with the cost model of
evaluator/replicas.py): binaries y[i, r] = 1 iff the stage on device i runs on r >= 2 devices
of its class (r <= `replicate` and the class's size), u[i] >= x[v, i] marks a used device,
sum_r y[i, r] <= u[i], and per class sum_i u[i] + sum_r (r - 1) y[i, r] <= its devices.
Each load row E <= MaxLoad of device i becomes one row per factor, relaxed by big-M when
the factor is not chosen:
  r = 1:  E - M sum_r y[i, r] <= MaxLoad,
  r >= 2: (E + s_r W_i) / r + M y[i, r] <= MaxLoad + M,
W_i = sum_v |w_v| x[v, i] the stage's parameters and s_r = 4 (r - 1) / (r B) ms per byte
PipeDream's AllReduce (optimizer_graph_hierarchical.py), added to the row that holds the
transfers in (under GPipe, the backward phase's), as the evaluator adds it. M bounds the
row's left side from the columns' upper bounds. On server levels the replicas are placed
as the evaluator places them (evaluator/replicas.py): the stage on device i with r replicas
takes devices i .. i + r - 1, which hold no stage (y[i, r] + u[j] <= 1), and syncs over
them (evaluator/replicas.span_rate), so each (i, r) has its own rate.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from partdsl.core.ir import Spec
from partdsl.evaluator import replicas as core_replicas
from partdsl.models.matrix import Rows


@dataclass(frozen=True)
class Replicas:
    y: dict  # (i, r) -> column, r >= 2
    u: dict  # i -> column, 1 iff device i holds a node
    rate: dict  # (i, r) -> s_r, ms per byte of the stage's parameters


NONE = Replicas({}, {}, {})


def columns(spec: Spec, nc: int) -> tuple[Replicas, int]:
    """Allocate y and u from column `nc` (none without `replicate`); the next free column.
    On levels a factor r is offered to device i only if devices i .. i + r - 1 can hold its
    replicas (evaluator/replicas.placeable), at their sync rate (span_rate), and every
    device gets a u (a replica's device may hold no stage)."""
    d = spec.dense
    k = spec.constraints.replicate
    if k <= 1:
        return NONE, nc
    counts = np.bincount(d.dev_class, minlength=len(d.class_names))
    levels = d.path_bw is not None
    y: dict = {}
    rate: dict = {}
    u: dict = {}
    for i in range(d.D):
        c = int(d.dev_class[i])
        fits = [r for r in range(2, int(min(k, counts[c])) + 1) if not levels or core_replicas.placeable(d, i, r)]
        if fits or levels:
            u[i] = nc
            nc += 1
        for r in fits:
            y[(i, r)] = nc
            rate[(i, r)] = core_replicas.span_rate(d, i, r)
            nc += 1
    return Replicas(y, u, rate), nc


def add_rows(spec: Spec, rep: Replicas, xcol: np.ndarray, rows: Rows) -> None:
    """u[i] >= x[v, i]; sum_r y[i, r] <= u[i]; each class's devices, replicas included."""
    if not rep.u:
        return
    d = spec.dense
    Dn = d.devices
    for i, ucol in rep.u.items():
        for v in np.flatnonzero(xcol[:, i] >= 0):
            rows.add_one([ucol, int(xcol[v, i])], [1.0, -1.0], 0.0, np.inf, ("used", (d.names[v], Dn[i])))
        ys = [col for (j, _), col in rep.y.items() if j == i]
        if ys:
            rows.add_one([ucol] + ys, [-1.0] + [1.0] * len(ys), -np.inf, 0.0, ("one_factor", (Dn[i],)))
    for c, name in enumerate(d.class_names):
        devs = [i for i in rep.u if d.dev_class[i] == c]
        if not devs:
            continue
        cols = [rep.u[i] for i in devs] + [col for (i, _), col in rep.y.items() if d.dev_class[i] == c]
        vals = [1.0] * len(devs) + [float(r - 1) for (i, r) in rep.y if d.dev_class[i] == c]
        rows.add_one(cols, vals, -np.inf, float((d.dev_class == c).sum()), ("class_devices", (name,)))
    if d.path_bw is None:
        return
    for (i, r), col in rep.y.items():  # on levels: the replicas' devices i + 1 .. i + r - 1 hold no stage
        for j in range(i + 1, i + r):
            rows.add_one([col, rep.u[j]], [1.0, 1.0], -np.inf, 1.0, ("replica_device", (Dn[i], r, Dn[j])))


@dataclass
class LoadRows:
    """The load rows of one model and what they share: E <= L per device (one row per
    factor with replicas, and E <= most * L), then per class sum E <= (its devices) * L.
    `ub`: the columns' upper bounds (for M); `names`: each row's tag, in order."""

    spec: Spec
    rep: Replicas
    rows: Rows
    xcol: np.ndarray
    ub: np.ndarray
    names: list = field(default_factory=list)
    sums: dict = field(default_factory=dict)  # (class, L, kind of row) -> [(cols, vals)] for `close`

    def add(self, i: int, cols: np.ndarray, vals: np.ndarray, L: int, sync: bool, tag: tuple) -> None:
        """E <= L for E = vals . x[cols] on device i (with the weight sync if `sync`)."""
        rep, rows, ub, xcol = self.rep, self.rows, self.ub, self.xcol
        ys = [(r, col) for (j, r), col in rep.y.items() if j == i]
        if not ys:
            self.names.append(tag)
            rows.add_one(np.r_[cols, L], np.r_[vals, -1.0], -np.inf, 0.0)
            return
        big = float(np.maximum(vals, 0.0) @ ub[cols])
        self.names.append(tag + ("r=1",))
        rows.add_one(np.r_[cols, L, [c for _, c in ys]], np.r_[vals, -1.0, [-big] * len(ys)], -np.inf, 0.0)
        self.names.append(tag + ("most",))  # valid whatever the factor (the sync is >= 0): no big-M, a stronger LP
        rows.add_one(np.r_[cols, L], np.r_[vals, -float(max(r for r, _ in ys))], -np.inf, 0.0)
        key = (int(self.spec.dense.dev_class[i]), L, tag[1:])
        self.sums.setdefault(key, []).append((cols, vals))
        nodes = np.flatnonzero(xcol[:, i] >= 0)
        w = self.spec.dense.params[nodes]
        for r, ycol in ys:
            s = rep.rate[(i, r)] if sync else 0.0
            allc, allv = np.r_[cols, xcol[nodes, i]], np.r_[vals, s * w] / r
            M = float(np.maximum(allv, 0.0) @ ub[allc])
            self.names.append(tag + (f"r={r}",))
            rows.add_one(np.r_[allc, L, ycol], np.r_[allv, -1.0, M], -np.inf, M)

    def close(self) -> None:
        """Per class and kind of load row: sum_i E_i <= (its devices) * L. Valid since a
        stage with r replicas has E_i / r <= L and the r's of a class sum to at most its
        devices; it gives the LP the class's average load, which the big-M rows alone do
        not (HiGHS's root bound was 0 on a VGG-16 profile)."""
        d = self.spec.dense
        for (c, L, kind), parts in self.sums.items():
            self.names.append((d.class_names[c], "all") + kind)
            cols = np.concatenate([p[0] for p in parts])
            vals = np.concatenate([p[1] for p in parts])
            self.rows.add_one(np.r_[cols, L], np.r_[vals, -float((d.dev_class == c).sum())], -np.inf, 0.0)


def decode(spec: Spec, rep: Replicas, x: np.ndarray) -> np.ndarray | None:
    """[D] each device's factor from a solution (None without `replicate`)."""
    if spec.constraints.replicate <= 1:
        return None
    out = np.ones(spec.dense.D, dtype=np.int64)
    for (i, r), col in rep.y.items():
        if x[col] > 0.5:
            out[i] = r
    return out


def encode(spec: Spec, rep: Replicas, dev: np.ndarray, factors: np.ndarray | None, x: np.ndarray) -> bool:
    """Set u and y in start `x` from an assignment and its factors; False if a factor is not
    one of the columns' (then the start is not expressible)."""
    used = np.bincount(dev, minlength=spec.dense.D) > 0
    for i, col in rep.u.items():
        x[col] = float(used[i])
    if factors is None:
        return True
    for i in np.flatnonzero(used & (np.asarray(factors) > 1)):
        col = rep.y.get((int(i), int(factors[i])))
        if col is None:
            return False
        x[col] = 1.0
    return True

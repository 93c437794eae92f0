"""The stage constraints in Tarnawski's max-load IP (models/maxload.py): `acyclic` and
`stages <= k` on any platform (device classes, host devices, pins, replicas, levels).

`acyclic` (Archer sec. 2; core/graphs.stage_cycle, the evaluator's definition): the
quotient graph over the stages (a device; on a training graph its forward and its
backward part apart) has no cycle. It has none iff the stages have positions
p[s] in [0, K - 1] (K stages) with p[t] >= p[s] + 1 on each of its edges s -> t (a DAG's
longest path has at most K - 1 edges). A node's position q[v] is its stage's:
    q[v] - p[s] <= M (1 - x[v,i])  and  p[s] - q[v] <= M (1 - x[v,i]),  M = K - 1,
for each device i that v may run on (s: v's stage on i), and on each edge u -> v that
orders stages (every edge; on a training graph those between two forward or two
backward nodes, as core/graphs.stage_cycle reads them), for each device i of u:
    q[v] - q[u] >= x[u,i] - x[v,i],
which is q[v] >= q[u] + 1 when u is on i and v is not, and q[v] >= q[u] otherwise (on one
device they are equal). O((n + m) D) rows, no product of binaries.

`stages <= k` (evaluator/violations.py: at most k devices hold a node): a binary
used[i] with sum_v x[v,i] <= N_i used[i] (N_i: the nodes that may run on i) and
sum_i used[i] <= k.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from partdsl.core.dense import topological_order
from partdsl.core.graphs import stage_count, stage_edges, stage_labels, stage_of, stage_quotient
from partdsl.core.ir import Spec
from partdsl.models.matrix import ColumnNames, Rows


@dataclass(frozen=True)
class Stages:
    p: np.ndarray  # [K] column of each stage's position (empty without `acyclic`)
    q: np.ndarray  # [n] column of each node's position
    used: np.ndarray  # [D] column of used[i] (empty without a stage limit)

    @property
    def span(self) -> float:
        """M = K - 1: the highest position."""
        return float(max(len(self.p) - 1, 0))


NONE = Stages(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))


def columns(spec: Spec, nc: int) -> tuple[Stages, int]:
    """Allocate the positions (under `acyclic`) and used[i] (under a stage limit) from `nc`."""
    d, c = spec.dense, spec.constraints
    if not c.acyclic and c.max_stages is None:
        return NONE, nc
    p = q = used = np.zeros(0, np.int64)
    if c.acyclic:
        k = stage_count(d)
        p = nc + np.arange(k)
        q = nc + k + np.arange(d.n)
        nc += k + d.n
    if c.max_stages is not None:
        used = nc + np.arange(d.D)
        nc += d.D
    return Stages(p, q, used), nc


def upper(st: Stages, ub: np.ndarray) -> None:
    """The positions' upper bound, M (the columns' default is 1)."""
    ub[st.p] = st.span
    ub[st.q] = st.span


def add_rows(spec: Spec, st: Stages, xcol: np.ndarray, rows: Rows) -> None:
    d = spec.dense
    N, Dn = d.names, d.devices
    if len(st.p):
        M = st.span
        vv, ii = np.nonzero(xcol >= 0)
        lab = stage_of(d, vv, ii)
        x = xcol[vv, ii]
        for sign, tag in ((1.0, "position_le"), (-1.0, "position_ge")):  # +-(q[v] - p[s]) + M x[v,i] <= M
            rows.family(tag, lambda j, vv=vv, ii=ii: (N[vv[j]], Dn[ii[j]]))
            rows.add([st.q[vv], st.p[lab], x], [sign, -sign, M], -np.inf, M)
        e = np.flatnonzero(stage_edges(d))
        ee, ii = np.repeat(e, d.D), np.tile(np.arange(d.D), len(e))
        u, v = d.src[ee], d.dst[ee]
        keep = xcol[u, ii] >= 0
        u, v, ii = u[keep], v[keep], ii[keep]
        rows.family("stage_order", lambda j, u=u, v=v, ii=ii: (N[u[j]], N[v[j]], Dn[ii[j]]))
        cols = np.stack([st.q[v], st.q[u], xcol[u, ii], xcol[v, ii]], axis=1)  # x[v,i] may be -1: left out
        rows.add_masked(cols, np.tile([1.0, -1.0, -1.0, 1.0], (len(u), 1)), 0.0, np.inf)
    if len(st.used):
        rows.family("stage_used", lambda j: Dn[j])
        for i in range(d.D):
            nodes = xcol[:, i][xcol[:, i] >= 0]
            rows.add_one(np.r_[nodes, st.used[i]], np.r_[np.ones(len(nodes)), -float(len(nodes))], -np.inf, 0.0)
        rows.family("stage_limit")
        rows.add_one(st.used, np.ones(d.D), -np.inf, float(spec.constraints.max_stages))


def positions(spec: Spec, dev: np.ndarray) -> np.ndarray | None:
    """[K] each stage's position in a topological order of the quotient (None: a cycle)."""
    src, dst, k = stage_quotient(spec.dense, dev)
    order = topological_order(k, src, dst)
    if order is None:
        return None
    pos = np.empty(k)
    pos[order] = np.arange(k)
    return pos


def encode(spec: Spec, st: Stages, dev: np.ndarray, x: np.ndarray) -> bool:
    """Fill the start's positions and used[i]; False if its stages form a cycle."""
    if len(st.p):
        pos = positions(spec, dev)
        if pos is None:
            return False
        x[st.p] = pos
        x[st.q] = pos[stage_labels(spec.dense, dev)[0]]
    if len(st.used):
        x[st.used] = np.bincount(dev, minlength=spec.dense.D) > 0
    return True


def name_columns(spec: Spec, st: Stages, cols: ColumnNames) -> None:
    """stage_position(device[,fw|bw]), node_position(node), stage_used(device)."""
    d = spec.dense
    two = len(st.p) == 2 * d.D
    if len(st.p):
        cols.add(int(st.p[0]), len(st.p), "stage_position",
                 lambda j: (d.devices[j // 2], ("fw", "bw")[j % 2]) if two else d.devices[j])
        cols.add(int(st.q[0]), len(st.q), "node_position", lambda j: d.names[j])
    if len(st.used):
        cols.add(int(st.used[0]), len(st.used), "stage_used", lambda j: d.devices[j])

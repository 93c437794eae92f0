"""Server levels and direct links in Tarnawski's max-load IP (App. C.3, with the cost
semantics of evaluator/levels.py): a transfer's price depends on both devices, so the
per-device CommIn/CommOut of Fig. 6 become per pair. w[u, a, d, q] >= x[u, a] + x[v, d] - 1
for every edge (u, v) with v in phase q (w = 1 iff u runs on a and a consumer of phase q
runs on d != a); device d pays sum_{u, a} recv(u, a, d) w[u, a, d, q] in phase q, each
tensor once per receiving device at the price of its route from a; the sender pays
S[u, a] >= send(u, a, d) w[u, a, d, q], once, at its slowest route (the largest over its
receivers), in u's phase. recv and send are the evaluator's (levels.receive_ms,
levels.send_route_ms: the ports and the slowest fabric between the two, or the declared
direct link). Pairs priced 0 get no column. Used instead of CommIn/CommOut when the
platform is routed (replicas on levels: models/maxload_replicas.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from partdsl.core.ir import Spec
from partdsl.evaluator import levels
from partdsl.models.matrix import Rows


@dataclass(frozen=True)
class Routes:
    w: np.ndarray  # [k, 5] (u, sender a, receiver d, phase q, column)
    send: np.ndarray  # [k2, 3] (u, sender a, column of S)
    send_hi: np.ndarray  # [k2] the most S can be: its slowest route
    send_of: np.ndarray  # [k] per w column: the row of `send` it charges, -1 where the sender pays 0
    send_ms: np.ndarray  # [k] per w column: ms the sender pays for that receiver
    recv_ms: np.ndarray  # [k] per w column: ms the receiver pays
    phase_of_send: np.ndarray  # [k2] u's phase (the sender pays in it)


def build(spec: Spec, xcol: np.ndarray, phase: np.ndarray, nc: int, rows: Rows) -> tuple[Routes, int]:
    """The pair columns from `nc` and their rows; the next free column. Vectorized over
    (edge, sender, receiver)."""
    d = spec.dense
    D = d.D
    N, Dn = d.names, d.devices
    producer, rin, rout = levels.pair_prices(d, np.arange(D))
    u, v = d.src, d.dst
    pu = producer[u]
    priced = ((rin > 0) | (rout > 0)) & ~np.eye(D, dtype=bool)[None]
    e, ea, eb = np.nonzero((xcol[u] >= 0)[:, :, None] & (xcol[v] >= 0)[:, None, :] & priced[pu])
    q = phase[v[e]]
    key, inv = np.unique(((u[e] * D + ea) * D + eb) * 2 + q, return_inverse=True)
    wcol = nc + np.arange(len(key))
    nc += len(key)
    rows.family("route", lambda k: (N[u[e[k]]], N[v[e[k]]], Dn[ea[k]], Dn[eb[k]]))
    rows.add([wcol[inv], xcol[u[e], ea], xcol[v[e], eb]], [1.0, -1.0, -1.0], -1.0, np.inf)
    wu, wa, wb, wq = key // (2 * D * D), key // (2 * D) % D, key // 2 % D, key % 2
    recv_ms, send_ms = rin[producer[wu], wa, wb], rout[producer[wu], wa, wb]
    # S[u, a] >= send(u, a, d) w[u, a, d, q]: the sender pays once, at its slowest route
    pays = np.flatnonzero(send_ms > 0)
    skey, sinv = np.unique(wu[pays] * D + wa[pays], return_inverse=True)
    scol = nc + np.arange(len(skey))
    nc += len(skey)
    rows.family("send", lambda k: (N[wu[pays[k]]], Dn[wa[pays[k]]], Dn[wb[pays[k]]]))
    rows.add([scol[sinv], wcol[pays]], [1.0, -send_ms[pays]], 0.0, np.inf)
    hi = np.zeros(len(skey))
    np.maximum.at(hi, sinv, send_ms[pays])
    send_of = np.full(len(key), -1, dtype=np.int64)
    send_of[pays] = sinv
    return Routes(np.c_[wu, wa, wb, wq, wcol], np.c_[skey // D, skey % D, scol], hi, send_of, send_ms, recv_ms,
                  phase[skey // D]), nc


def terms(r: Routes, i: int, p: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Device i's transfers in phase p: (columns, ms) received, (columns, ms) sent."""
    got = (r.w[:, 2] == i) & (r.w[:, 3] == p) & (r.recv_ms > 0)
    sent = (r.send[:, 1] == i) & (r.phase_of_send == p)
    return r.w[got, 4], r.recv_ms[got], r.send[sent, 2], np.ones(int(sent.sum()))


def upper(r: Routes, ub: np.ndarray) -> None:
    """The columns' upper bounds in `ub` (w <= 1 already): S <= its slowest route."""
    ub[r.send[:, 2]] = r.send_hi


def encode(spec: Spec, r: Routes, dev: np.ndarray, phase: np.ndarray, x: np.ndarray) -> None:
    """w and S in a start `x` from an assignment."""
    d = spec.dense
    D = d.D
    wu, wa, wb, wq, wcol = r.w.T
    reaches = np.unique((d.src * D + dev[d.dst]) * 2 + phase[d.dst])  # (u, a consumer's device and phase)
    on = (dev[wu] == wa) & np.isin((wu * D + wb) * 2 + wq, reaches)
    x[wcol] = on
    x[r.send[:, 2]] = 0.0
    paid = on & (r.send_of >= 0)
    np.maximum.at(x, r.send[r.send_of[paid], 2], r.send_ms[paid])

"""Server levels and direct links in Tarnawski's max-load IP (App. C.3, with the cost
semantics of core/levels.py): a transfer's price depends on both devices, so the
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
from partdsl.core import levels
from partdsl.core.ir import Spec
from partdsl.models.matrix import Rows


@dataclass(frozen=True)
class Routes:
    w: dict  # (u, a, d, q) -> column
    send: dict  # (u, a) -> column of S
    recv_ms: dict  # (u, a, d) -> ms the receiver d pays
    send_ms: dict  # (u, a, d) -> ms the sender a pays for that receiver
    send_hi: dict  # (u, a) -> the most S can be
    received: dict  # (d, q) -> [(w column, ms)] device d pays in phase q
    sent: dict  # (a, q) -> [S column] device a pays in phase q


def build(spec: Spec, xcol: np.ndarray, phase: np.ndarray, nc: int, rows: Rows) -> tuple[Routes, int]:
    """The pair columns from `nc` and their rows; the next free column."""
    d = spec.dense
    D = d.D
    w: dict = {}
    send: dict = {}
    recv_ms: dict = {}
    send_ms: dict = {}
    send_hi: dict = {}
    A, B = np.meshgrid(np.arange(D), np.arange(D), indexing="ij")
    A, B = A.ravel(), B.ravel()
    off = A != B
    A, B = A[off], B[off]
    rows.family("route")
    for u in range(d.n):
        succ = d.succ_idx[d.succ_ptr[u]:d.succ_ptr[u + 1]]
        if not len(succ):
            continue
        us = np.full(len(A), u)
        rin = levels.receive_ms(d, us, A, B)
        rout = levels.send_route_ms(d, us, A, B)
        for a, b, ti, to in zip(A.tolist(), B.tolist(), rin.tolist(), rout.tolist()):
            if xcol[u, a] < 0 or (ti <= 0 and to <= 0):
                continue
            for v in succ.tolist():
                if xcol[v, b] < 0:
                    continue
                key = (u, a, b, int(phase[v]))
                if key not in w:
                    w[key] = nc
                    nc += 1
                    recv_ms[(u, a, b)], send_ms[(u, a, b)] = ti, to
                rows.add_one([w[key], int(xcol[u, a]), int(xcol[v, b])], [1.0, -1.0, -1.0], -1.0, np.inf,
                              ("route", (d.names[u], d.names[v], d.devices[a], d.devices[b])))
    for (u, a, b, q), col in w.items():
        to = send_ms[(u, a, b)]
        if to <= 0:
            continue
        if (u, a) not in send:
            send[(u, a)] = nc
            nc += 1
        send_hi[(u, a)] = max(send_hi.get((u, a), 0.0), to)
        rows.add_one([send[(u, a)], col], [1.0, -to], 0.0, np.inf, ("send", (d.names[u], d.devices[a], d.devices[b])))
    received: dict = {}
    for (u, a, b, q), col in w.items():
        if recv_ms[(u, a, b)] > 0:
            received.setdefault((b, q), []).append((col, recv_ms[(u, a, b)]))
    sent: dict = {}
    for (u, a), col in send.items():
        sent.setdefault((a, int(phase[u])), []).append(col)
    return Routes(w, send, recv_ms, send_ms, send_hi, received, sent), nc


def terms(r: Routes, i: int, p: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Device i's transfers in phase p: (columns, ms) received, (columns, ms) sent."""
    ic = r.received.get((i, p), [])
    oc = r.sent.get((i, p), [])
    return (np.array([c for c, _ in ic], np.int64), np.array([t for _, t in ic]),
            np.array(oc, np.int64), np.ones(len(oc)))


def upper(r: Routes, ub: np.ndarray) -> None:
    """The columns' upper bounds in `ub` (w <= 1 already): S <= its slowest route."""
    for key, col in r.send.items():
        ub[col] = r.send_hi[key]


def encode(spec: Spec, r: Routes, dev: np.ndarray, phase: np.ndarray, x: np.ndarray) -> None:
    """w and S in a start `x` from an assignment."""
    d = spec.dense
    for (u, a, b, q), col in r.w.items():
        succ = d.succ_idx[d.succ_ptr[u]:d.succ_ptr[u + 1]]
        x[col] = float(dev[u] == a and ((dev[succ] == b) & (phase[succ] == q)).any())
    slowest: dict = {}
    for (u, a, b, q), col in r.w.items():
        if x[col] > 0.5:
            slowest[(u, a)] = max(slowest.get((u, a), 0.0), r.send_ms[(u, a, b)])
    for key, col in r.send.items():
        x[col] = slowest.get(key, 0.0)

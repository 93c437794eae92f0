"""Server levels and direct links in Tarnawski's latency IP (Figs. 3-4 with App. C.3's
routes, under the cost semantics of core/levels.py and core/subgraphs.py): a transfer's
price depends on both devices, so the per-slot CommIn/CommOut charges of constraint (7)
become per pair of places. A place is an accelerator's subgraph slot or, on a routed
platform, one host device (host devices differ by their routes).

- w[u, p, j] >= x[u, p] + x[v, j] - 1 for every edge (u, v), slot j and place p != j:
  slot j pays recv(u, dev p, dev j) w[u, p, j], each producer's tensor once per slot;
- S[u, j] >= send(u, dev j, dev p) (x[u, j] + x[v, p] - 1) for every edge (u, v) and
  place p != j: slot j pays its tensor once, at its slowest route (the largest over
  its receivers, host devices included).

recv and send are the evaluator's (levels.receive_ms, levels.send_route_ms). Host
devices pay no transfers (core/subgraphs.timed: a host node starts when its inputs are
ready), as in the flat IP. CommIn keeps its role in the start rows (6); its flat charge
is dropped. Pairs priced 0 get no column.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from partdsl.core import levels
from partdsl.core.ir import Spec
from partdsl.models.matrix import Rows


def host_choices(spec: Spec) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(class, device or -1, allowed [n, Hc]) of each host choice: a host class (its
    devices are alike), or each host device on a routed platform (their routes differ)."""
    d = spec.dense
    if levels.routed(d):
        devs = np.flatnonzero(d.host[d.dev_class])
        return d.dev_class[devs], devs, d.allowed[:, devs]
    cls = np.flatnonzero(d.host)
    allowed = d.class_allowed[:, cls] if len(cls) else np.zeros((d.n, 0), bool)
    return cls, np.full(len(cls), -1), allowed


def host_label(spec: Spec, host_cls: np.ndarray, host_dev: np.ndarray, h: int) -> str:
    d = spec.dense
    return d.devices[host_dev[h]] if host_dev[h] >= 0 else d.class_names[host_cls[h]]


@dataclass(frozen=True)
class SlotRoutes:
    w: dict  # (u, p, j) -> column; slot j receives u's tensor from place p
    send: dict  # (u, j) -> column of S
    send_ms: dict  # (u, j, p) -> ms slot j pays to send u's tensor to place p
    send_hi: dict  # (u, j) -> the most S can be: its slowest route
    received: dict  # j -> [(w column, ms)]
    sent: dict  # j -> [S columns]


def build(spec: Spec, xplace: np.ndarray, place_dev: np.ndarray, S: int, nc: int, rows: Rows,
          label: Callable[[int], str]) -> tuple[SlotRoutes, int]:
    """The pair columns from `nc` and their rows (`xplace` [n, P]: the column of x per node
    and place, -1 where not allowed; places 0 .. S - 1 are the slots; `label` names a
    place in the rows' names); the next column."""
    d = spec.dense
    P = len(place_dev)
    w: dict = {}
    send: dict = {}
    send_ms: dict = {}
    send_hi: dict = {}
    received: dict = {}
    sent: dict = {}
    A, B = (g.ravel() for g in np.meshgrid(place_dev, place_dev, indexing="ij"))
    N = d.names
    rows.family("route_in")
    for u in range(d.n):
        succ = d.succ_idx[d.succ_ptr[u]:d.succ_ptr[u + 1]].tolist()
        if not succ:
            continue
        us = np.full(len(A), u)
        rin = levels.receive_ms(d, us, A, B).reshape(P, P)  # [from place, to place]
        rout = levels.send_route_ms(d, us, A, B).reshape(P, P)
        for j in range(S):
            for p in range(P):
                if p == j:
                    continue
                if xplace[u, p] >= 0 and rin[p, j] > 0:
                    for v in succ:
                        if xplace[v, j] < 0:
                            continue
                        if (u, p, j) not in w:
                            w[(u, p, j)] = nc
                            received.setdefault(j, []).append((nc, float(rin[p, j])))
                            nc += 1
                        rows.add_one([w[(u, p, j)], int(xplace[u, p]), int(xplace[v, j])], [1.0, -1.0, -1.0],
                                     -1.0, np.inf, ("route_in", (N[u], N[v], label(p), label(j))))
                to = float(rout[j, p])
                if xplace[u, j] < 0 or to <= 0:
                    continue
                for v in succ:
                    if xplace[v, p] < 0:
                        continue
                    if (u, j) not in send:
                        send[(u, j)] = nc
                        sent.setdefault(j, []).append(nc)
                        nc += 1
                    send_ms[(u, j, p)] = to
                    send_hi[(u, j)] = max(send_hi.get((u, j), 0.0), to)
                    rows.add_one([send[(u, j)], int(xplace[u, j]), int(xplace[v, p])], [1.0, -to, -to], -to,
                                 np.inf, ("route_out", (N[u], N[v], label(j), label(p))))
    return SlotRoutes(w, send, send_ms, send_hi, received, sent), nc


def terms(r: SlotRoutes, j: int) -> tuple[np.ndarray, np.ndarray]:
    """Slot j's transfer charges in its duration row (7): (columns, ms)."""
    got = r.received.get(j, [])
    sent = r.sent.get(j, [])
    return (np.array([c for c, _ in got] + sent, np.int64),
            np.array([t for _, t in got] + [1.0] * len(sent)))


def upper(r: SlotRoutes, ub: np.ndarray) -> None:
    """S <= its slowest route (w <= 1 already)."""
    for key, col in r.send.items():
        ub[col] = r.send_hi[key]


def encode(spec: Spec, r: SlotRoutes, place: np.ndarray, x: np.ndarray) -> None:
    """w and S in a start `x` from each node's place."""
    d = spec.dense
    for (u, p, j), col in r.w.items():
        succ = d.succ_idx[d.succ_ptr[u]:d.succ_ptr[u + 1]]
        x[col] = float(place[u] == p and (place[succ] == j).any())
    for (u, j), col in r.send.items():
        if place[u] != j:
            x[col] = 0.0
            continue
        succ = d.succ_idx[d.succ_ptr[u]:d.succ_ptr[u + 1]]
        x[col] = max((r.send_ms.get((u, j, int(p)), 0.0) for p in place[succ] if p != j), default=0.0)

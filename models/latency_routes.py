"""Server levels and direct links in Tarnawski's latency IP (Figs. 3-4 with App. C.3's
routes, under the cost semantics of evaluator/levels.py and evaluator/subgraphs.py): a transfer's
price depends on both devices, so the per-slot CommIn/CommOut charges of constraint (7)
become per pair of places. A place is an accelerator's subgraph slot or, on a routed
platform, one host device (host devices differ by their routes).

- w[u, p, j] >= x[u, p] + x[v, j] - 1 for every edge (u, v), slot j and place p != j:
  slot j pays recv(u, dev p, dev j) w[u, p, j], each producer's tensor once per slot;
- S[u, j] >= send(u, dev j, dev p) (x[u, j] + x[v, p] - 1) for every edge (u, v) and
  place p != j: slot j pays its tensor once, at its slowest route (the largest over
  its receivers, host devices included).

recv and send are the evaluator's (levels.receive_ms, levels.send_route_ms). Host
devices pay no transfers (evaluator/subgraphs.timed: a host node starts when its inputs are
ready), as in the flat IP. CommIn keeps its role in the start rows (6); its flat charge
is dropped. Pairs priced 0 get no column.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from partdsl.core.ir import Spec
from partdsl.evaluator import levels
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
    w: np.ndarray  # [k, 4] (producer u, sending place p, receiving slot j, column): j receives u's tensor from p
    send: np.ndarray  # [k, 3] (producer u, slot j, column of S)
    send_hi: np.ndarray  # [k] the most S can be: its slowest route
    send_ms: np.ndarray  # [producers, P, P] ms place a pays to send u's tensor to place b
    producer: np.ndarray  # [n] u's index in send_ms, -1 for a node without consumers
    charges: tuple[np.ndarray, np.ndarray, np.ndarray]  # (slot, column, ms per unit) of every charge in (7)


def build(spec: Spec, xplace: np.ndarray, place_dev: np.ndarray, S: int, nc: int, rows: Rows,
          label: Callable[[int], str]) -> tuple[SlotRoutes, int]:
    """The pair columns from `nc` and their rows (`xplace` [n, P]: the column of x per node
    and place, -1 where not allowed; places 0 .. S - 1 are the slots; `label` names a
    place in the rows' names); the next column. Vectorized over (edge, place, slot)."""
    d = spec.dense
    P = len(place_dev)
    N = d.names
    producer, rin, rout = levels.pair_prices(d, place_dev)  # [u, from place, to place]
    u, v = d.src, d.dst
    pu = producer[u]
    ok_u, ok_v = xplace[u] >= 0, xplace[v] >= 0  # [m, P]
    other = ~np.eye(P, dtype=bool)[:, :S]  # [P, S]: place p is not slot j
    # w[u, p, j] >= x[u, p] + x[v, j] - 1, per edge
    e, p, j = np.nonzero(ok_u[:, :, None] & ok_v[:, None, :S] & other[None] & (rin[pu][:, :, :S] > 0))
    key, inv = np.unique((u[e] * P + p) * S + j, return_inverse=True)
    wcol = nc + np.arange(len(key))
    nc += len(key)
    rows.family("route_in", lambda k: (N[u[e[k]]], N[v[e[k]]], label(p[k]), label(j[k])))
    rows.add([wcol[inv], xplace[u[e], p], xplace[v[e], j]], [1.0, -1.0, -1.0], -1.0, np.inf)
    wu, wp, wj = key // (P * S), key // S % P, key % S
    w = np.c_[wu, wp, wj, wcol]
    # S[u, j] >= send(u, j, p) (x[u, j] + x[v, p] - 1), per edge
    e2, j2, p2 = np.nonzero(ok_u[:, :S, None] & ok_v[:, None, :] & other.T[None] & (rout[pu][:, :S, :] > 0))
    skey, sinv = np.unique(u[e2] * S + j2, return_inverse=True)
    scol = nc + np.arange(len(skey))
    nc += len(skey)
    to = rout[pu[e2], j2, p2]
    rows.family("route_out", lambda k: (N[u[e2[k]]], N[v[e2[k]]], label(j2[k]), label(p2[k])))
    rows.add([scol[sinv], xplace[u[e2], j2], xplace[v[e2], p2]], [1.0, -to, -to], -to, np.inf)
    hi = np.zeros(len(skey))
    np.maximum.at(hi, sinv, to)
    send = np.c_[skey // S, skey % S, scol]
    charges = (np.r_[wj, send[:, 1]], np.r_[wcol, scol], np.r_[rin[producer[wu], wp, wj], np.ones(len(scol))])
    return SlotRoutes(w, send, hi, rout, producer, charges), nc


def terms(r: SlotRoutes, j: int) -> tuple[np.ndarray, np.ndarray]:
    """Slot j's transfer charges in its duration row (7): (columns, ms per unit)."""
    slot, cols, ms = r.charges
    at = slot == j
    return cols[at], ms[at]


def upper(r: SlotRoutes, ub: np.ndarray) -> None:
    """S <= its slowest route (w <= 1 already)."""
    ub[r.send[:, 2]] = r.send_hi


def encode(spec: Spec, r: SlotRoutes, place: np.ndarray, x: np.ndarray) -> None:
    """w and S in a start `x` from each node's place."""
    d = spec.dense
    P = r.send_ms.shape[1]
    u, v = d.src, d.dst
    reaches = np.unique(u * P + place[v])  # (producer, a place one of its consumers runs on)
    wu, wp, wj, wcol = r.w.T
    x[wcol] = (place[wu] == wp) & np.isin(wu * P + wj, reaches)
    x[r.send[:, 2]] = 0.0
    keys = r.send[:, 0] * P + r.send[:, 1]  # sorted: build made them by np.unique of (u, j)
    e = np.flatnonzero((place[u] != place[v]) & np.isin(u * P + place[u], keys))
    col = r.send[np.searchsorted(keys, u[e] * P + place[u[e]]), 2]
    np.maximum.at(x, col, r.send_ms[r.producer[u[e]], place[u[e]], place[v[e]]])

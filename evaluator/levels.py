"""Hierarchical platforms (Tarnawski App. C.3; PipeDream's levels): servers of devices,
possibly servers of servers, each level with the bandwidth of its own fabric.

Cost semantics. Each device keeps its port: its class's `link` (a `host` class reads and
writes host memory for free). A transfer from device a to device b also crosses the
fabrics on the path between them in the server tree: the fabric of every server that holds
one of them but not the other, and the fabric of the innermost level holding both (the
platform's own `link` when no server holds both). It pays the slowest of them:

- each receiving device pays a tensor once, |t| / min(its port, path(a, b));
- the sending device pays it once, |t| / min(its port, slowest path to any receiver).

A declared direct link `link a <-> b 50 GB/s` (DiviML's beta(a, b)) replaces that route:
the receiver and the sender pay |t| / beta for it. The sender pays once, at its slowest
route (the largest of its per-receiver times).

Without servers, a platform fabric and direct links, this is Tarnawski's host memory
model (sec. 3), the same numbers as `Dense.comm` (the fast path below). Levels never make
a charge smaller than the flat one; a direct link faster than the ports can, so bounds that
charge transfers take the cheapest route (`Dense.cheapest_comm`). The paths themselves:
core/server_paths.py (`Dense.path_bw`, `Dense.direct_bw`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from partdsl.core.dense import Dense

INF = float("inf")


def _ms(size: np.ndarray, bw: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.isfinite(bw) & (bw > 0), size / bw * 1e3, 0.0)


def _route(dense: Dense, u: np.ndarray, a: np.ndarray, b: np.ndarray, receiver: bool) -> np.ndarray:
    """Node u's tensor from a to b at the receiver b (else the sender a): its port and the
    path (`Dense.pair_bw`), or the direct link; flat pairs at that end's `comm`."""
    if dense.pair_bw is None:
        t = dense.comm[u, dense.dev_class[b if receiver else a]]
    else:
        t = _ms(dense.out_bytes[u], dense.pair_bw[1 if receiver else 0][a, b])
    if dense.direct_bw is not None:
        beta = dense.direct_bw[a, b]
        t = np.where(beta > 0, _ms(dense.out_bytes[u], beta), t)
    return t


def routed(dense: Dense) -> bool:
    """Transfers depend on the pair of devices (server levels or direct links)."""
    return dense.path_bw is not None or dense.direct_bw is not None


def receive_ms(dense: Dense, u: np.ndarray, a: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Time for device d to receive node u's tensor from device a (a != d)."""
    if not routed(dense):
        return dense.comm[u, dense.dev_class[d]]
    return _route(dense, u, a, d, receiver=True)


def send_route_ms(dense: Dense, u: np.ndarray, a: np.ndarray, d: np.ndarray) -> np.ndarray:
    """What device a pays to send node u's tensor to device d alone (a != d); the sender
    pays the largest of these over its receivers (`send_charges`)."""
    if not routed(dense):
        return dense.comm[u, dense.dev_class[a]]
    return _route(dense, u, a, d, receiver=False)


def slowest_ms(dense: Dense) -> np.ndarray:
    """[n] the most one end pays for a node's tensor over any route (a bound for horizons)."""
    flat = dense.comm.max(axis=1, initial=0.0)
    if not routed(dense):
        return flat
    ways = [*dense.pair_bw] if dense.pair_bw is not None else []
    ways += [dense.direct_bw] if dense.direct_bw is not None else []
    per_byte = max((float((1e3 / bw[np.isfinite(bw) & (bw > 0)]).max(initial=0.0)) for bw in ways), default=0.0)
    return np.maximum(flat, dense.out_bytes * per_byte)


def pair_prices(dense: Dense, devs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every producer's tensor priced between every two of `devs` (repeats allowed: the
    MIPs' places): (producer [n], its row in the tables or -1 for a node without
    consumers; receive_ms and send_route_ms as [producers, len(devs), len(devs)], from
    the first index to the second)."""
    prods = np.unique(dense.src)
    producer = np.full(dense.n, -1, dtype=np.int64)
    producer[prods] = np.arange(len(prods))
    P = len(devs)
    us = np.repeat(prods, P * P)
    a, b = (np.tile(g.ravel(), len(prods)) for g in np.meshgrid(devs, devs, indexing="ij"))
    shape = (len(prods), P, P)
    return producer, receive_ms(dense, us, a, b).reshape(shape), send_route_ms(dense, us, a, b).reshape(shape)


def send_charges(dense: Dense, src: np.ndarray, a: np.ndarray, d: np.ndarray) -> np.ndarray | None:
    """[n] per node, its send time: the largest over the (node, its device a, a receiving
    device d) pairs given; None on a flat platform (then it is `comm` at its class)."""
    if not routed(dense):
        return None
    out = np.zeros(dense.n)
    np.maximum.at(out, src, _route(dense, src, a, d, receiver=False))
    return out


def send_ms(dense: Dense, u: np.ndarray, a: np.ndarray, charges: np.ndarray | None) -> np.ndarray:
    """Time for device a to send node u's tensor once (`charges` from `send_charges`)."""
    return dense.comm[u, dense.dev_class[a]] if charges is None else charges[u]


def pair_ms(dense: Dense, u: int, a: int, b: int) -> float:
    """One tensor from a to b through host memory (both ends' charges), over their path, or
    over their direct link alone (DiviML eq. 3)."""
    if a == b:
        return 0.0
    size = float(dense.out_bytes[u])
    if dense.direct_bw is not None and dense.direct_bw[a, b] > 0:
        return size / float(dense.direct_bw[a, b]) * 1e3
    if dense.pair_bw is None:
        return float(dense.comm[u, dense.dev_class[a]] + dense.comm[u, dense.dev_class[b]])
    send, recv = dense.pair_bw  # scalars here: 30 us a call through _route, 171,706 calls in one HEFT
    return _one_ms(size, float(send[a, b])) + _one_ms(size, float(recv[a, b]))


def _one_ms(size: float, bw: float) -> float:
    return size / bw * 1e3 if bw > 0 and bw != INF else 0.0


def mean_pair_ms(dense: Dense) -> np.ndarray:
    """Per node, `pair_ms` averaged over the ordered pairs of distinct devices (HEFT's mean
    transfer), for all nodes at once: as in `pair_ms`, a direct link, else both ends' share
    of the path (`Dense.pair_bw`), both a per-byte coefficient of the pair, else (a flat
    platform) both ends' host-memory times `comm`; so the mean is one coefficient and two
    per-device sums."""
    D = dense.D
    if D < 2:
        return np.zeros(dense.n)
    off = ~np.eye(D, dtype=bool)
    one = np.ones((D, D))
    direct = dense.direct_bw > 0 if dense.direct_bw is not None else np.zeros((D, D), dtype=bool)
    if dense.pair_bw is None:
        per_byte, hosted = np.zeros((D, D)), off & ~direct
    else:
        per_byte, hosted = _ms(one, dense.pair_bw[0]) + _ms(one, dense.pair_bw[1]), np.zeros((D, D), dtype=bool)
    if dense.direct_bw is not None:
        per_byte = np.where(direct, _ms(one, dense.direct_bw), per_byte)
    pairs = D * (D - 1)
    out = dense.out_bytes * (per_byte[off].sum() / pairs)
    if hosted.any():
        weight = hosted.sum(axis=1) + hosted.sum(axis=0)  # how often each device is an end of a hosted pair
        out = out + dense.comm[:, dense.dev_class] @ weight / pairs
    return out

"""Hierarchical platforms (Tarnawski App. C.3; PipeDream's levels): servers of devices,
possibly servers of servers, each level with the bandwidth of its own fabric.

Cost semantics. Each device keeps its port: its class's `link` (a `host` class reads and
writes host memory for free). A transfer from device a to device b also crosses the
fabrics on the path between them in the server tree: the fabric of every server that holds
one of them but not the other, and the fabric of the innermost level holding both (the
platform's own `link` when no server holds both). It pays the slowest of them:

- each receiving device pays a tensor once, |t| / min(its port, path(a, b));
- the sending device pays it once, |t| / min(its port, slowest path to any receiver).

Without servers and a platform fabric the paths are free and this is Tarnawski's host
memory model (sec. 3), the same numbers as `Dense.comm`. Every charge is at least the flat
one, so a bound computed without the hierarchy stays a bound. The paths themselves:
core/server_paths.py (`Dense.path_bw`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from partdsl.core.dense import Dense

INF = float("inf")


def port(dense: Dense) -> np.ndarray:
    """[C] each class's own bandwidth to its server (inf: a host class, or no link)."""
    return np.where(dense.host, INF, dense.link)


def _ms(size: np.ndarray, bw: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.isfinite(bw), size / bw * 1e3, 0.0)


def receive_ms(dense: Dense, u: np.ndarray, a: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Time for device d to receive node u's tensor from device a (a != d)."""
    cls = dense.dev_class[d]
    if dense.path_bw is None:
        return dense.comm[u, cls]
    return _ms(dense.out_bytes[u], np.minimum(port(dense)[cls], dense.path_bw[a, d]))


def send_ms(dense: Dense, u: np.ndarray, a: np.ndarray, far: np.ndarray | None) -> np.ndarray:
    """Time for device a to send node u's tensor once; `far`: the slowest path to any of
    its receivers (see `farthest`), unused on a flat platform."""
    cls = dense.dev_class[a]
    if dense.path_bw is None or far is None:
        return dense.comm[u, cls]
    return _ms(dense.out_bytes[u], np.minimum(port(dense)[cls], far))


def farthest(dense: Dense, src: np.ndarray, a: np.ndarray, d: np.ndarray) -> np.ndarray | None:
    """[n] per node, the slowest path bandwidth from its device a to a receiving device d
    over the pairs given (inf for a node that sends nothing); None on a flat platform."""
    if dense.path_bw is None:
        return None
    far = np.full(dense.n, INF)
    np.minimum.at(far, src, dense.path_bw[a, d])
    return far

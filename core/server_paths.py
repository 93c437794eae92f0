"""The slowest fabric between two devices of a hierarchical platform (evaluator/levels.py has
the cost semantics), and the declared direct links between devices, computed once per
spec into `Dense.path_bw` and `Dense.direct_bw`."""
from __future__ import annotations

from typing import Protocol, Sequence

import numpy as np

INF = float("inf")


class _Level(Protocol):
    name: str
    count: int
    link: float | None
    parent: str | None


class _Class(Protocol):
    count: int
    server: str | None


class _Link(Protocol):
    a: str
    b: str
    bandwidth: float
    directed: bool


class _Platform(Protocol):  # core.ir.Platform (not imported: the IR builds Dense, which builds this)
    servers: Sequence[_Level]
    classes: Sequence[_Class]
    links: Sequence[_Link]
    link: float | None

    @property
    def devices(self) -> Sequence[str]: ...
    @property
    def hierarchical(self) -> bool: ...
    @property
    def device_class(self) -> Sequence[int]: ...
    @property
    def class_index(self) -> dict[str, int]: ...
    def chain(self, server: str | None) -> Sequence[_Level]: ...
    def per_server(self, k: _Class) -> int: ...  # type: ignore[misc]


def instances(p: _Platform) -> dict[str, np.ndarray]:
    """Per server level, [D] the global index of the instance holding each device (-1: none)."""
    D = len(p.devices)
    inst = {s.name: np.full(D, -1, dtype=np.int64) for s in p.servers}
    j0 = 0
    for k in p.classes:
        j = np.arange(k.count)
        block = p.per_server(k)
        for s in p.chain(k.server):
            inst[s.name][j0:j0 + k.count] = j // block
            block *= s.count
        j0 += k.count
    return inst


def path_bandwidth(p: _Platform) -> np.ndarray | None:
    """[D, D] the slowest fabric between two devices (inf on the diagonal and where no
    fabric is declared), or None for a flat platform."""
    if not p.hierarchical:
        return None
    D = len(p.devices)
    inst = instances(p)
    same = {name: (i[:, None] == i[None, :]) & (i[:, None] >= 0) for name, i in inst.items()}
    bw = np.full((D, D), INF)
    top_same = np.zeros((D, D), dtype=bool)
    for s in p.servers:
        i = inst[s.name]
        fabric = INF if s.link is None else s.link
        under = (i[:, None] >= 0) | (i[None, :] >= 0)
        inner = np.zeros((D, D), dtype=bool)
        for c in p.servers:
            if c.parent == s.name:
                inner |= same[c.name]
        crossed = (under & ~same[s.name]) | (same[s.name] & ~inner)  # left on the way, or the meeting level
        bw = np.where(crossed, np.minimum(bw, fabric), bw)
        if s.parent is None:
            top_same |= same[s.name]
    if p.link is not None:
        bw = np.where(top_same, bw, np.minimum(bw, p.link))
    np.fill_diagonal(bw, INF)
    return bw


def direct_bandwidth(p: _Platform) -> np.ndarray | None:
    """[D, D] the declared direct links' bandwidths (B/s; 0 where none; class links expanded
    to every pair of their devices, a later declaration winning), or None without links."""
    if not p.links:
        return None
    D = len(p.devices)
    index = {d: j for j, d in enumerate(p.devices)}
    cls = np.asarray(p.device_class)

    def ends(x: str) -> np.ndarray:  # an unknown name (validation reports it) or an empty class: no device
        if x in index:
            return np.array([index[x]])
        return np.flatnonzero(cls == p.class_index[x]) if x in p.class_index else np.zeros(0, dtype=np.int64)

    out = np.zeros((D, D))
    for ln in p.links:
        a, b = ends(ln.a), ends(ln.b)
        out[np.ix_(a, b)] = ln.bandwidth
        if not ln.directed:
            out[np.ix_(b, a)] = ln.bandwidth
    np.fill_diagonal(out, 0.0)
    return out

"""Contract the graph into units that must share a device and order them.

Colocation components are contracted, then the strongly connected components this
creates (Tarnawski App. B). For training graphs the order is taken on the forward part
only, each backward node riding with its colocated forward nodes; backward nodes with
no forward partner ("orphans") are placed by mirroring their backward edges, as in
App. B. A contiguous run of units in the returned order is a contiguous set of nodes
(for training graphs: per forward/backward part)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from ..core.dense import Dense


@dataclass(frozen=True)
class Units:
    unit: np.ndarray  # [n] unit id of each node
    count: int
    src: np.ndarray  # unit-level order edges
    dst: np.ndarray


def contract(dense: Dense) -> Units:
    n = dense.n
    _, comp = np.unique(dense.colo, return_inverse=True)
    k = int(comp.max()) + 1 if n else 0
    src, dst = dense.src, dense.dst
    if dense.backward.any():
        has_fw = np.zeros(k, dtype=bool)
        has_fw[comp[~dense.backward]] = True
        fw_edge = ~dense.backward[src] & ~dense.backward[dst]
        orphan_edge = dense.backward[src] & dense.backward[dst] & (~has_fw[comp[src]] | ~has_fw[comp[dst]])
        a = np.concatenate([comp[src[fw_edge]], comp[dst[orphan_edge]]])
        b = np.concatenate([comp[dst[fw_edge]], comp[src[orphan_edge]]])
    else:
        a, b = comp[src], comp[dst]
    keep = a != b
    a, b = a[keep], b[keep]
    g = coo_matrix((np.ones(len(a)), (a, b)), shape=(k, k)).tocsr()
    _, scc = connected_components(g, directed=True, connection="strong")
    unit = scc[comp]
    ua, ub = scc[a], scc[b]
    keep = ua != ub
    pairs = np.unique(np.stack([ua[keep], ub[keep]], axis=1), axis=0) if keep.any() else np.zeros((0, 2), np.int64)
    return Units(unit=unit.astype(np.int64), count=int(scc.max()) + 1 if n else 0,
                 src=pairs[:, 0].astype(np.int64), dst=pairs[:, 1].astype(np.int64))

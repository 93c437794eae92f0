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
from partdsl.core.dense import Dense, groups
from partdsl.core.graphs import forward_edges
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components


@dataclass(frozen=True)
class Contraction:
    unit: np.ndarray  # [n] unit id of each node
    count: int
    src: np.ndarray  # unit-level order edges
    dst: np.ndarray

    def members(self) -> list[np.ndarray]:
        """The nodes of each unit, in index order: one sort, linear in the graph's size
        (a scan per unit was quadratic: minutes at 50,000 units)."""
        return groups(self.unit)  # every unit 0 .. count - 1 has a node

    def csr(self) -> tuple[np.ndarray, np.ndarray]:
        """(ptr, idx): unit k's nodes are idx[ptr[k]:ptr[k + 1]], in index order (the
        members as two int64 arrays, for compiled kernels)."""
        idx = np.argsort(self.unit, kind="stable").astype(np.int64)
        return np.searchsorted(self.unit[idx], np.arange(self.count + 1)).astype(np.int64), idx


def absorbable_sinks(dense: Dense, memory_binds: bool) -> list[tuple[int, int]]:
    """(pred, sink) pairs whose colocation is without loss of generality.

    A colocation component K of sinks (no successors, one predecessor each, zero work on
    every class, params that cannot matter) whose predecessors all lie in one other
    component R, and whose nodes may run wherever R's may, can join R: it adds no load
    anywhere and removes transfers, and a contiguous set (or an acyclic quotient) stays
    so when sinks join their predecessors' set. Each such dead-end output doubles the
    number of ideals otherwise (GNMT has 17; in training graphs they come as colocated
    forward/backward pairs)."""
    n = dense.n
    outdeg = np.bincount(dense.src, minlength=n)
    indeg = np.bincount(dense.dst, minlength=n)
    zero = (np.nan_to_num(dense.work, posinf=0.0) == 0).all(axis=1)
    held = dense.weights + (0.0 if dense.stashed is None else dense.stashed)
    ok = (outdeg == 0) & (indeg == 1) & zero & ((held == 0) | (not memory_binds))
    pred = np.full(n, -1, dtype=np.int64)
    pred[dense.dst] = dense.src
    pairs: list[tuple[int, int]] = []
    for members in groups(dense.colo):
        k = dense.colo[members[0]]
        if not ok[members].all():
            continue
        preds = pred[members]
        targets = np.unique(dense.colo[preds])
        if len(targets) != 1 or targets[0] == k:
            continue
        if (dense.allowed[members] >= dense.allowed[preds]).all():
            pairs += [(int(p), int(v)) for p, v in zip(preds, members)]
    return pairs


def has_forward(dense: Dense, comp: np.ndarray) -> np.ndarray:
    """[labels] whether each component label of `comp` holds a forward node; a backward
    node whose component holds none is an orphan (ordered by mirroring)."""
    out = np.zeros(int(comp.max()) + 1 if len(comp) else 0, dtype=bool)
    out[comp[~dense.backward]] = True
    return out


def memory_can_bind(dense: Dense, mode: str) -> bool:
    """False when every node together fits on any single memory-limited device (stashes
    counted for as many micro-batches as there are devices)."""
    if mode == "ignore":
        return False
    cap = dense.memory[np.isfinite(dense.memory)]
    held = dense.params.sum() + dense.shares_once(np.ones(dense.n, dtype=bool)) + (
        0.0 if dense.stashed is None else dense.stashed.sum() * dense.D)
    return bool(len(cap)) and held > cap.min()


def colocation_blocks(dense: Dense) -> np.ndarray:
    """[n] colocation components merged along the strongly connected components of the
    graph they contract to (every edge), labelled by scipy's component numbers."""
    _, comp = np.unique(dense.colo, return_inverse=True)
    k = int(comp.max()) + 1 if dense.n else 0
    cs, cd = comp[dense.src], comp[dense.dst]
    keep = cs != cd
    g = coo_matrix((np.ones(int(keep.sum())), (cs[keep], cd[keep])), shape=(k, k)).tocsr()
    _, scc = connected_components(g, directed=True, connection="strong")
    return scc[comp].astype(np.int64)


def contract(dense: Dense, absorb: list[tuple[int, int]] | None = None) -> Contraction:
    """Contraction over the colocation components, plus any (pred, sink) pairs in `absorb`."""
    n = dense.n
    colo = dense.colo
    if absorb:
        from partdsl.core.dense import union_find_labels

        colo = union_find_labels(n, [(int(a), int(b)) for a, b in zip(np.arange(n), colo)] + list(absorb))
    _, comp = np.unique(colo, return_inverse=True)
    k = int(comp.max()) + 1 if n else 0
    src, dst = dense.src, dense.dst
    if dense.backward.any():
        has_fw = has_forward(dense, comp)
        fw_edge = forward_edges(dense)  # the order `acyclic` follows (core/graphs.py)
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
    return Contraction(unit=unit.astype(np.int64), count=int(scc.max()) + 1 if n else 0,
                 src=pairs[:, 0].astype(np.int64), dst=pairs[:, 1].astype(np.int64))

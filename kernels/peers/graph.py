"""The graph a plain partitioner sees (METIS, Scotch, Mt-KaHyPar; kernels/peers/runners.py).

A peer balances vertex weights and minimizes a cut, so the spec is reduced to:
- vertices: the nodes (or, `contract=True`, the colocation components), weighted by their
  compute on the reference class (the accelerator class with the most devices; a node
  that cannot run there weighs its cheapest compute elsewhere);
- edges (METIS, Scotch): one undirected edge per adjacent pair, weighted by the transfer
  time of the tensors between them on the reference class (both directions summed) - so
  a tensor read by three consumers elsewhere is counted three times;
- hyperedges (Mt-KaHyPar): one per tensor, its producer and consumers, weighted by its
  transfer time - with the connectivity-1 objective a tensor is charged once per extra
  block that touches it, close to partdsl's once-per-receiving-device transfers;
- one block per device, with a target share of the total weight proportional to the
  device's speed (reference work / the class's work over all nodes), as Scotch's
  weighted complete-graph target does for heterogeneous processors (Tarnawski sec. 6
  ran Scotch on the same kind of input).

Weights are scaled to integers (peers take integer weights): vertex weights to a total
of about 1e6, edge weights to a largest of 1e6 (at least 1, as Scotch and METIS require
positive edge weights), so every sum stays inside 32-bit integers.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from partdsl.core.dense import Dense
from partdsl.core.ir import Spec

VERTEX_TOTAL = 1e6
EDGE_MAX = 1e6
SPEED_MAX = 1e9  # a class this many times faster than the reference is as good as infinitely faster
INT32_SUM = 2**31 - 1


@dataclass(frozen=True)
class PeerGraph:
    vertex: np.ndarray  # [n] vertex id of each node
    count: int  # vertices
    vwgt: np.ndarray  # [count] int64 vertex weights
    xadj: np.ndarray  # CSR of the undirected simple graph
    adjncy: np.ndarray
    adjwgt: np.ndarray  # [len(adjncy)] int64, symmetric
    edges: np.ndarray  # [m, 2] each undirected edge once (a < b)
    ewgt: np.ndarray  # [m] int64
    hyperedges: list[list[int]]  # one per tensor with a consumer in another vertex
    hwgt: np.ndarray  # [len(hyperedges)] int64
    share: np.ndarray  # [D] target fraction of the total vertex weight per device (sums to 1)
    reference: int  # the reference class index


def reference_class(dense: Dense) -> int:
    """The non-host class with the most devices (ties: the first); the first class if all are hosts."""
    counts = np.bincount(dense.dev_class, minlength=len(dense.class_names))
    acc = [c for c in range(len(counts)) if not dense.host[c] and counts[c] > 0]
    return max(acc, key=lambda c: (counts[c], -c)) if acc else int(dense.dev_class[0])


def _int_weights(x: np.ndarray, scale: float, low: int) -> np.ndarray:
    return np.maximum(np.rint(x * scale), low).astype(np.int64)


def device_shares(dense: Dense, ref: int) -> np.ndarray:
    """Each device's share of the work: its speed relative to the reference class (total
    reference work / total work on its class, nodes it cannot run left out of both)."""
    w = dense.work
    speed = np.zeros(len(dense.class_names))
    for c in range(len(speed)):
        ok = np.isfinite(w[:, c]) & np.isfinite(w[:, ref])
        own, theirs = w[ok, c].sum(), w[ok, ref].sum()
        with np.errstate(over="ignore"):  # subnormal times: a ratio past SPEED_MAX is capped there
            speed[c] = min(theirs / own, SPEED_MAX) if own > 0 else (1.0 if ok.any() else 0.0)
    s = speed[dense.dev_class]
    return s / s.sum() if s.sum() > 0 else np.full(dense.D, 1.0 / dense.D)


def peer_graph(spec: Spec, contract: bool = False) -> PeerGraph:
    d = spec.dense
    ref = reference_class(d)
    if contract:
        _, vertex = np.unique(d.colo, return_inverse=True)
    else:
        vertex = np.arange(d.n)
    vertex = vertex.astype(np.int64)
    count = int(vertex.max()) + 1 if d.n else 0
    node_w = np.where(np.isfinite(d.work[:, ref]), d.work[:, ref],
                      np.where(np.isfinite(d.work), d.work, np.inf).min(axis=1))
    node_w = np.nan_to_num(node_w, posinf=0.0)
    vw = np.bincount(vertex, weights=node_w, minlength=count)
    vwgt = _int_weights(vw / vw.sum() if vw.sum() > 0 else vw, VERTEX_TOTAL, 1)  # normalized first: no overflow
    # edges between vertices, one per unordered pair, transfer times summed
    tensor = d.comm[:, ref]
    a, b = vertex[d.src], vertex[d.dst]
    keep = a != b
    lo, hi = np.minimum(a[keep], b[keep]), np.maximum(a[keep], b[keep])
    pairs, inv = np.unique(np.stack([lo, hi], axis=1).reshape(-1, 2), axis=0, return_inverse=True)
    ew = np.bincount(inv.ravel(), weights=tensor[d.src[keep]], minlength=len(pairs))
    top = ew.max() if len(ew) and ew.max() > 0 else 1.0
    ew = ew / top  # in [0, 1]: the scale below stays finite whatever the times' magnitude
    scale = min(EDGE_MAX, INT32_SUM / 4 / max(ew.sum(), 1.0))  # both directions summed stay in int32
    ewgt = _int_weights(ew, scale, 1)
    # CSR, both directions
    both_a = np.concatenate([pairs[:, 0], pairs[:, 1]]).astype(np.int64)
    both_b = np.concatenate([pairs[:, 1], pairs[:, 0]]).astype(np.int64)
    both_w = np.concatenate([ewgt, ewgt])
    order = np.lexsort((both_b, both_a))
    xadj = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(np.bincount(both_a, minlength=count), out=xadj[1:])
    # hyperedges: a tensor and the vertices that read it
    hyper: list[list[int]] = []
    hw: list[float] = []
    for u in range(d.n):
        pins = {int(vertex[u])} | {int(vertex[v]) for v in d.succ_idx[d.succ_ptr[u]:d.succ_ptr[u + 1]]}
        if len(pins) > 1:
            hyper.append(sorted(pins))
            hw.append(tensor[u])
    hwa = np.array(hw, dtype=float)
    htop = hwa.max() if len(hwa) and hwa.max() > 0 else 1.0
    hwgt = _int_weights(hwa / htop, EDGE_MAX, 1)
    return PeerGraph(vertex=vertex, count=count, vwgt=vwgt, xadj=xadj, adjncy=both_b[order],
                     adjwgt=both_w[order], edges=pairs.astype(np.int64), ewgt=ewgt, hyperedges=hyper,
                     hwgt=hwgt, share=device_shares(d, ref), reference=ref)

"""Scotch as Tarnawski et al. ran it (sec. 6-7, Tables 1 and 4), reimplemented from the
authors' code's behaviour (msr-fiddle/dnn-partitioning, `throughput-dp/dp.cpp -scotch`):

- one vertex per colour class (forward and backward nodes together), weighing its nodes'
  accelerator time x 1e6, truncated to an integer;
- between two classes, an edge weighing x 1e6 the output costs of the nodes of either class
  that feed the other (each such node once per direction), the two directions summed;
- the vertices listed in the order the code's hash maps hold them: libstdc++'s
  `unordered_map` iteration after its contractions (kernels/bottleneck/libstdcxx_hash.py), for
  Scotch's result depends on it;
- Scotch's `gpart` on the accelerators: a complete target of k parts, its default mapping
  strategy at 1% imbalance (what `gpart k` runs), part i on accelerator i; CPUs stay empty.

`-O graph=tarnawski` on the `scotch` method (kernels/peers/runners.py) runs this.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from partdsl.core.errors import PartError
from partdsl.core.ir import Spec
from partdsl.kernels.bottleneck.libstdcxx_hash import unordered_order
from partdsl.kernels.bottleneck.reference_chain import hash_vertices


@dataclass(frozen=True)
class ReferenceGraph:
    labels: np.ndarray  # [V] colour class of each vertex, in the file's order
    vwgt: np.ndarray
    xadj: np.ndarray
    adjncy: np.ndarray
    adjwgt: np.ndarray
    vertex: np.ndarray  # [n] the vertex of each node


def original_ids(spec: Spec) -> list[int]:
    """Each node's id in the dnn-partitioning file (our importer names node 12 `n12`), else its index."""
    out = []
    for i, name in enumerate(spec.dense.names):
        out.append(int(name[1:]) if name[:1] == "n" and name[1:].isdigit() else i)
    return out


def reference_graph(spec: Spec) -> ReferenceGraph:
    """The graph `dp.cpp -scotch` writes to scotch.grf, for a spec with one accelerator class."""
    d = spec.dense
    acc = [c for c in range(len(d.class_names)) if not d.host[c]]
    if len(acc) != 1:
        raise PartError("graph=tarnawski needs one accelerator class (the dnn-partitioning platform)", None,
                        "use the scotch peer's own graph (without -O graph=tarnawski)")
    c = acc[0]
    if not d.class_allowed[:, c].all():
        raise PartError("graph=tarnawski: a node cannot run on the accelerators (the authors' code refuses it too)",
                        None, "use the scotch peer's own graph (without -O graph=tarnawski)")
    vertices, cls = hash_vertices(spec)
    order = unordered_order(c for c, _ in vertices)  # its map of classes, filled from its vertices
    at = {k: i for i, k in enumerate(order)}
    vertex = np.array([at[int(k)] for k in cls], dtype=np.int64)
    V = len(order)
    vwgt = np.zeros(V)
    for v, w in zip(vertex.tolist(), d.work[:, c].tolist()):  # summed in node order, as the code does
        vwgt[v] += w
    ids = original_ids(spec)
    feeds: dict[tuple[int, int], set[int]] = {}
    for a, b in zip(d.src.tolist(), d.dst.tolist()):
        if cls[a] != cls[b]:
            feeds.setdefault((int(cls[a]), int(cls[b])), set()).add(a)
    weight: dict[tuple[int, int], float] = {}
    for (ca, cb), nodes in sorted(feeds.items()):  # a pair's feeding nodes summed in id order, then both ways
        s = 0.0
        for a in sorted(nodes, key=lambda v: ids[v]):
            s += float(d.comm[a, c])
        for key in ((ca, cb), (cb, ca)):
            weight[key] = weight.get(key, 0.0) + s
    nbrs: list[list[tuple[int, int]]] = [[] for _ in range(V)]
    for (ca, cb), w in sorted(weight.items()):
        nbrs[at[ca]].append((at[cb], int(1e6 * w)))
    xadj = np.zeros(V + 1, dtype=np.int64)
    xadj[1:] = np.cumsum([len(x) for x in nbrs])
    adjncy = np.array([j for x in nbrs for j, _ in x], dtype=np.int64)
    adjwgt = np.array([w for x in nbrs for _, w in x], dtype=np.int64)
    return ReferenceGraph(np.array(order, dtype=np.int64), (1e6 * vwgt).astype(np.int64), xadj, adjncy, adjwgt,
                          vertex)


def grf_text(g: ReferenceGraph) -> str:
    """The graph in Scotch's .grf format with vertex labels, as the code writes it."""
    lines = ["0", f"{len(g.labels)} {len(g.adjncy)}", "0 111"]
    for v, label in enumerate(g.labels.tolist()):
        lo, hi = g.xadj[v], g.xadj[v + 1]
        edges = "".join(f" {w} {g.labels[j]}" for j, w in zip(g.adjncy[lo:hi].tolist(), g.adjwgt[lo:hi].tolist()))
        lines.append(f"{label} {g.vwgt[v]} {hi - lo}{edges}")
    return "\n".join(lines) + "\n"

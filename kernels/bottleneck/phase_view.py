"""One phase of a training graph as a graph of its own, for the contiguous path bound
(kernels/bottleneck/path_bound.py; Tarnawski et al. sec. 5.3).

On a training graph `contiguous` binds each device's forward part and its backward part
separately (core/graphs.stage_labels), each convex in the whole graph and so in the
phase's own subgraph. The view keeps one phase's nodes and the edges between them, and
adds to each group's first node of that phase the work (per class), parameters and
allowed devices of the group's nodes of the other phase, which share its device
(`colocate`). A contiguous split of the spec gives one of the view where every device's
load is at most its load in the spec (the other phase's tensors, and nodes of it in no
group with this phase, are dropped), so a bound on the view bounds the spec.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
from partdsl.core.dense import Dense, topological_order
from partdsl.core.ir import Spec


def phase_view(spec: Spec, backward: bool) -> Spec:
    """A copy of `spec` whose `dense` is the phase's graph (module docstring). Only for
    bounds over `dense`: its IR (graph, names in messages) is still the whole spec's."""
    view = replace(spec)
    view.__dict__["dense"] = phase_dense(spec.dense, backward)  # the cached_property's slot
    return view


def phase_dense(d: Dense, backward: bool) -> Dense:
    """The phase's nodes (in index order), its internal edges, the other phase's grouped
    work, parameters and device limits folded onto the group's first node of the phase."""
    mine = d.backward if backward else ~d.backward
    keep = np.flatnonzero(mine)
    at = np.full(d.n, -1, dtype=np.int64)
    at[keep] = np.arange(len(keep))
    first = np.full(d.n, -1, dtype=np.int64)  # per colocation component: its first node of the phase
    first[d.colo[keep[::-1]]] = keep[::-1]
    work, params, allowed = d.work[keep].copy(), d.params[keep].copy(), d.allowed[keep].copy()
    other = np.flatnonzero(~mine)
    host = first[d.colo[other]]
    folded, onto = other[host >= 0], at[host[host >= 0]]
    np.add.at(work, onto, d.work[folded])
    np.add.at(params, onto, d.params[folded])
    np.logical_and.at(allowed, onto, d.allowed[folded])
    inner = mine[d.src] & mine[d.dst]
    src, dst = at[d.src[inner]], at[d.dst[inner]]
    order = np.lexsort((dst, src))
    src, dst = src[order], dst[order]
    n = len(keep)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=ptr[1:])
    return replace(d, n=n, names=tuple(d.names[v] for v in keep), work=work, params=params, comm=d.comm[keep],
                   out_bytes=d.out_bytes[keep], src=src, dst=dst, succ_ptr=ptr, succ_idx=dst,
                   backward=np.zeros(n, dtype=bool), colo=at[first[d.colo[keep]]], allowed=allowed,
                   topo=np.asarray(topological_order(n, src, dst), dtype=np.int64), tensor_source=None,
                   stashed=None, shared=None)

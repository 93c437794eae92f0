"""Interleaved pipelines (`interleave V`; Narayanan et al. 2021, sec. 2.2, Megatron's
virtual pipeline stages): the forward graph is cut into a chain of P x V chunks, chunk k
runs on rank k mod P, so each of the P devices runs V of them. An edge may not go back to
an earlier chunk.

The ranks are the devices in the order their first forward operator runs (the spec's
topological order). Given them, each forward node takes the least chunk on its device's
rank that is not before any of its predecessors' chunks: no labelling uses fewer chunks,
and a plan is interleaved exactly when that labelling ends in chunk P x V - 1 (a chunk
the labelling steps over is empty, which Megatron's layouts allow). Backward nodes ride
with their forward partners (`colocate by group`) and take no chunk.
"""
from __future__ import annotations

import numpy as np
from partdsl.core.dense import Dense
from partdsl.core.evaluation import Violation


def ranks(dense: Dense, dev: np.ndarray) -> list[int]:
    """The devices running forward nodes, in the order their first one runs."""
    fw = ~dense.backward[dense.topo]
    seen = dev[dense.topo[fw]]
    _, first = np.unique(seen, return_index=True)
    return [int(seen[i]) for i in np.sort(first)]


def chunks(dense: Dense, dev: np.ndarray) -> tuple[list[int], np.ndarray]:
    """(ranks, [n] each forward node's chunk; -1 for backward nodes): the least chunks."""
    order = ranks(dense, dev)
    rank_of = np.full(dense.D, -1, dtype=np.int64)
    rank_of[order] = np.arange(len(order))
    P = max(len(order), 1)
    chunk = np.full(dense.n, -1, dtype=np.int64)
    back, preds = dense.backward.tolist(), dense.preds
    for v in dense.topo.tolist():
        if back[v]:
            continue
        lo = max((int(chunk[p]) for p in preds[v] if not back[p]), default=0)
        r = int(rank_of[dev[v]])
        chunk[v] = lo + (r - lo) % P
    return order, chunk


def violations(dense: Dense, dev: np.ndarray, V: int) -> list[Violation]:
    """One violation when the plan's chunks, round robin, are not V per device."""
    order, chunk = chunks(dense, dev)
    need = int(chunk.max()) + 1 if len(chunk) else 0
    P = len(order)
    if need == P * V:
        return []
    v = int(np.argmax(chunk))
    return [Violation("interleave", f"the plan's chunks, round robin over its {P} device(s) "
                      f"({', '.join(dense.devices[d] for d in order)}), number {need}, where `interleave {V}` "
                      f"asks for {P * V}: {V} per device (the last, {need - 1}, ends at {dense.names[v]})",
                      (dense.names[v],))]

"""Activation memory (Archer et al. sec. 2.2, eq. 2): a block's peak memory is its
parameters plus the largest amount of activations live at once while it runs, its nodes
executed in the spec's topological order (Archer's segment structure, App. B, takes
peak(S) in the order pi as well). Under `subject to { activations }` this is the memory
that `memory hard` limits and that `memory overflow` streams when it exceeds the device.

Live tensors, on each device, per step of its schedule:
- a tensor from another device: from the block's start (its inputs arrive first, Tarnawski
  sec. 3) until its last consumer on the device has run;
- a node's output (`out`): from the node's step until its last consumer on the device has
  run, or until the block's end if a consumer is elsewhere (it leaves after the compute);
  a sized edge tensor (`a -> b out 4 MB`) from its source's step.
The step of a node holds its inputs and its output together.
"""
from __future__ import annotations

import numpy as np
from partdsl.core.dense import Dense


def peak(dense: Dense, dev: np.ndarray) -> np.ndarray:
    """[D] bytes: each device's peak live activations (0 where it runs nothing)."""
    n, D = dense.n, dense.D
    counts = np.bincount(dev, minlength=D)[:D]
    offs = np.r_[0, np.cumsum(counts)[:-1]]
    order = np.lexsort((dense.topo_position, dev))  # device by device, each in topological order
    slot = np.empty(n, dtype=np.int64)
    slot[order] = np.arange(n)
    size = dense.out_bytes
    src, dst = dense.src, dense.dst
    keep = dense.tensor_source[dst] < 0  # a source's `out` does not flow into its own sized tensors
    s, t = src[keep], dst[keep]
    local = dev[s] == dev[t]
    start = np.where(dense.tensor_source >= 0, slot[np.maximum(dense.tensor_source, 0)], slot)
    end = slot.copy()
    np.maximum.at(end, s[local], slot[t[local]])
    sent = np.zeros(n, dtype=bool)
    sent[s[~local]] = True
    end = np.where(sent, (offs + counts - 1)[dev], end)
    diff = np.zeros(n + 1)
    np.add.at(diff, start, size)
    np.add.at(diff, end + 1, -size)
    u, d = s[~local], dev[t[~local]]
    key, inv = np.unique(u * D + d, return_inverse=True)
    last = np.full(len(key), -1, dtype=np.int64)
    np.maximum.at(last, inv.ravel(), slot[t[~local]])
    np.add.at(diff, offs[key % D], size[key // D])
    np.add.at(diff, last + 1, -size[key // D])
    live = np.cumsum(diff)[:n]
    out = np.zeros(D)
    used = counts > 0
    if n:
        out[used] = np.maximum.reduceat(live, offs[used])
    return out

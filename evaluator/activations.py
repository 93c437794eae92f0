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

Training under the PipeDream schedule (1F1B, Tarnawski sec. 5.3): a stage keeps the
forward activations of every micro-batch in flight until its backward pass. Stage i of a
k-stage pipeline has k - i micro-batches in flight (PipeDream's optimizer stashes for
ceil((N - r) / r') of them, "the stages after this one"), so beyond the one the peak
covers, a device stashes its forward nodes' outputs once per stage downstream of it: the
devices its forward nodes reach through forward edges (`stash`).

A node's `stash` (bytes it keeps from its forward pass until its backward pass: a layer
profile's activation_bytes) is held the same way, once per micro-batch in flight
(`in_flight`), with or without `activations`.
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
    # each device's block of slots gets one spare slot after it, where a tensor live to the
    # block's end is released, and is summed on its own: a global running sum would carry
    # the rounding of one device's large sizes into the next device's peak
    base = offs + np.arange(D)  # where each device's block starts
    at = np.arange(n) + np.repeat(np.arange(D), counts)  # where each slot is
    diff = np.zeros(n + D)
    np.add.at(diff, at[start], size)
    np.add.at(diff, at[end] + 1, -size)
    u, d = s[~local], dev[t[~local]]
    key, inv = np.unique(u * D + d, return_inverse=True)
    last = np.full(len(key), -1, dtype=np.int64)
    np.maximum.at(last, inv.ravel(), slot[t[~local]])
    np.add.at(diff, base[key % D], size[key // D])
    np.add.at(diff, at[last] + 1, -size[key // D])
    out = np.zeros(D)
    for k in np.flatnonzero(counts):
        out[k] = np.cumsum(diff[base[k]:base[k] + counts[k]]).max()
    return out


def stash(dense: Dense, dev: np.ndarray) -> np.ndarray:
    """[D] bytes: per device, its forward outputs times the stages downstream of it (the
    other used devices its forward nodes reach through forward edges)."""
    fw = ~dense.backward
    forward_out = np.bincount(dev[fw], weights=dense.out_bytes[fw], minlength=dense.D)[:dense.D]
    return downstream(dense, dev) * forward_out


def in_flight(dense: Dense, dev: np.ndarray) -> np.ndarray:
    """[D] micro-batches each device holds a stash for under 1F1B: 1 + the stages downstream
    of it. In a linear pipeline of P stages, stage s (from 0) holds P - s (Narayanan et al.
    2021, sec. 2.2: PipeDream-Flush's warm-up)."""
    return 1 + downstream(dense, dev)


def downstream(dense: Dense, dev: np.ndarray) -> np.ndarray:
    """[D] the other devices each device's forward nodes reach through forward edges (through
    other devices too): the stages downstream of it."""
    D = dense.D
    fw = ~dense.backward
    s, t = dense.src, dense.dst
    cross = fw[s] & fw[t] & (dev[s] != dev[t])
    if not cross.any():
        return np.zeros(D, dtype=np.int64)
    from scipy.sparse import csr_matrix  # here: scipy.sparse costs 0.3 s to import, and only a stash needs it
    from scipy.sparse.csgraph import shortest_path

    hops = csr_matrix((np.ones(int(cross.sum())), (dev[s[cross]], dev[t[cross]])), shape=(D, D))
    reach = np.isfinite(shortest_path(hops, unweighted=True, directed=True))
    np.fill_diagonal(reach, False)
    return reach.sum(axis=1)

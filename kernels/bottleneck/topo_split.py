"""Method `topo`: the best of a few topological-order splits.

For each order of the contracted units (kernels/graph/contraction.py) - Kahn by index, Kahn by depth,
a DFS order and a few seeded random priority orders - cut into blocks when it is long
(coarse_order.py) and refined around the cuts (order_split.py), build the segment costs
and run the exact segmentation DP for every combination of device counts; every split is a
candidate, re-scored by the evaluator. It optimizes the pipelined max load, and GPipe's
max FW + max BW by a sweep of DPs (order_gpipe.py); latency and batched-throughput
objectives pick the best candidate by their own score.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np
from partdsl.core.events import Candidate
from partdsl.core.ir import Spec
from partdsl.kernels.bottleneck.order_split import split_order
from partdsl.kernels.bottleneck.replica_layout import place
from partdsl.kernels.bottleneck.segment_dp import Split
from partdsl.kernels.graph.contraction import contract
from partdsl.kernels.graph.orders import dfs_order, kahn, levels
from partdsl.runtime.deadline import NEVER, Deadline


def orders(spec: Spec, seed: int, n_random: int = 3) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    """(name, node positions, number of positions) for each order tried (of the units)."""
    u = contract(spec.dense)
    rng = np.random.default_rng(seed)
    tried: set[bytes] = set()
    plans = [("kahn", None), ("depth", levels(u.count, u.src, u.dst)), ("dfs", "dfs")]
    plans += [(f"random{i}", rng.random(u.count)) for i in range(n_random)]
    for name, pr in plans:
        if isinstance(pr, str):
            order = dfs_order(u.count, u.src, u.dst)
        else:
            order = kahn(u.count, u.src, u.dst, pr)
        key = order.tobytes()
        if key in tried:
            continue
        tried.add(key)
        at = np.empty(u.count, dtype=np.int64)
        at[order] = np.arange(u.count)
        yield name, at[u.unit], u.count


def assign(spec: Spec, split: Split, pos: np.ndarray) -> np.ndarray:
    """Devices for a split of an order (segments of positions)."""
    return assign_masks(spec, [((pos >= l) & (pos <= r), c) for l, r, c in split.segments], split.replicas)


def replicas_of(spec: Spec, split: Split, dev: np.ndarray, pos: np.ndarray) -> np.ndarray | None:
    """Each device's replication factor in `split` (None when it has none)."""
    if not split.replicas:
        return None
    r = np.ones(spec.dense.D, dtype=np.int64)
    for (l, _, _), k in zip(split.segments, split.replicas):
        r[dev[np.flatnonzero(pos == l)[0]]] = k
    return r


def assign_masks(spec: Spec, segments: list[tuple[np.ndarray, int]], replicas: tuple[int, ...] = ()) -> np.ndarray:
    """Devices for node sets with classes: each set gets an unused device of its class,
    preferring one that every node in the set may use (pins to single devices); a set with
    r replicas keeps r - 1 more devices of its class free of other sets. Where taking the
    first such device leaves a set on a device it may not use, a maximum bipartite matching
    of sets to devices finds a placement whenever one exists (`pin block[1..12] to gpu[0]`
    with `embed` first in the chain took gpu[0] from the blocks)."""
    d = spec.dense
    usable = [d.allowed[m].all(axis=0) & (d.dev_class == c) for m, c in segments]  # [set][device]
    dev, fits = _first_fit(spec, segments, replicas, usable)
    if not fits:
        dev = _matched(spec, segments, replicas, usable, dev)
    return dev


def _first_fit(spec: Spec, segments: list[tuple[np.ndarray, int]], replicas: tuple[int, ...],
               usable: list[np.ndarray]) -> tuple[np.ndarray, bool]:
    """Each set the first unused device of its class it may use (any unused one of the
    class if none): the devices, and whether every set may use its device."""
    d = spec.dense
    dev = np.full(d.n, -1, dtype=np.int64)
    used = np.zeros(d.D, dtype=bool)
    fits = True
    for i, (members, c) in enumerate(segments):
        ok = usable[i] & ~used
        fits &= bool(ok.any())
        pool = np.flatnonzero(ok) if ok.any() else np.flatnonzero((d.dev_class == c) & ~used)
        j = int(pool[0])
        used[j] = True
        dev[members] = j
        spare = np.flatnonzero((d.dev_class == c) & ~used)[::-1]  # replicas: from the class's last devices
        used[spare[: (replicas[i] if replicas else 1) - 1]] = True
    return dev, fits


def _matched(spec: Spec, segments: list[tuple[np.ndarray, int]], replicas: tuple[int, ...],
             usable: list[np.ndarray], fallback: np.ndarray) -> np.ndarray:
    """A placement by maximum bipartite matching: one slot per set and replica, each slot
    to a distinct device of the set's class that all its nodes may use; `fallback` when
    no matching places every slot."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_bipartite_matching

    d = spec.dense
    if not segments:
        return fallback
    reps = np.asarray(replicas or (1,) * len(segments), dtype=np.int64)
    slot_of = np.repeat(np.arange(len(segments)), reps)
    match = maximum_bipartite_matching(csr_matrix(np.array(usable)[slot_of]), perm_type="column")
    if (match < 0).any():
        return fallback
    dev = np.full(d.n, -1, dtype=np.int64)
    lead = np.r_[0, np.cumsum(reps)[:-1]]  # each set's first slot holds its nodes
    for i, (members, _) in enumerate(segments):
        dev[members] = match[lead[i]]
    return dev


def run(spec: Spec, seed: int = 0, deadline: Deadline = NEVER, n_random: int = 3, **_: object) -> Iterator[Candidate]:
    """Every order's splits; `n_random`: how many seeded random orders after the fixed ones."""
    plain = spec.objective.kind == "bottleneck"  # (under GPipe the splits are valued max FW + max BW)
    for name, fine, U in orders(spec, seed, n_random):
        if deadline.passed():
            return
        for pos, splits, how in split_order(spec, fine, U, deadline=deadline):  # long orders: blocks, refined
            if plain:  # the DP value is the score: only the best few need the evaluator
                splits = sorted(splits, key=lambda s: s.value)[:3]
            label = f"{name} order" + (f" ({how})" if how else "")
            for sp in splits:
                dev = assign(spec, sp, pos)
                reps = replicas_of(spec, sp, dev, pos)
                if reps is not None and spec.dense.path_bw is not None:  # on levels replicas follow their lead
                    placed = place(spec.dense, dev, reps)
                    if placed is None:
                        continue
                    dev, reps = placed
                yield Candidate(f"{label}, {'+'.join(map(str, sp.counts))} devices", dev, replicas=reps)


def best_split(spec: Spec, seed: int = 0, deadline: Deadline = NEVER) -> tuple[float, np.ndarray | None]:
    """The best feasible `topo` candidate's value and devices (inf, None if there is
    none), without its replicas: the latency baseline's split (kernels/latency/fill.py)."""
    value, cand = best_candidate(spec, seed, deadline)
    return value, None if cand is None else cand.devices


def best_candidate(spec: Spec, seed: int = 0, deadline: Deadline = NEVER) -> tuple[float, Candidate | None]:
    """The best feasible `topo` candidate by the evaluator, with its replicas (inf, None if
    there is none): the incumbent that prunes the DP over ideals."""
    best, out = float("inf"), None
    for best, out in improving(spec, seed, deadline):
        pass
    return best, out


def improving(spec: Spec, seed: int = 0, deadline: Deadline = NEVER, n_random: int = 3
              ) -> Iterator[tuple[float, Candidate]]:
    """(value, candidate) for each feasible `topo` candidate better than all before it, by
    the evaluator with its replicas: `load_search`'s starts as they come."""
    from partdsl.evaluator.evaluate import evaluate

    best = float("inf")
    for cand in run(spec, seed, deadline, n_random):
        ev = evaluate(spec, cand.devices, replicas_of=cand.replicas)
        if ev.feasible and ev.objective < best:
            best = ev.objective
            yield best, cand

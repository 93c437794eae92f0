"""Symmetry among nodes for the DiviML MILP (models/diviml.py), with whole nodes (`split 1`).

An automorphism of a module maps each node to one with the same predecessors and
successors (mapped alike), devices, times, transfers, bytes and releases; it maps every
schedule to one of the same value. From the automorphisms (found by networkx's VF2 on
graphs of up to MAX_NODES nodes, kept when there are at most MAX_AUTOMORPHISMS) the rows
are a stabilizer chain: v_1 takes a device number at most that of every node in its orbit;
among the automorphisms that fix v_1, v_2 at most every node of its orbit; and so on.
Any schedule is mapped onto one that meets them by picking, link by link, the automorphism
that gives v_k the least device (`canonical`). Twins (nodes any permutation of which is
an automorphism: same neighbours and costs) on one device run lowest number first.
"""
from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np
from partdsl.core.ir import Spec
from partdsl.models.matrix import Rows

MAX_NODES = 60  # VF2 over a module's self-matchings: small modules only
MAX_AUTOMORPHISMS = 5_000


@dataclass(frozen=True)
class NodeSymmetry:
    chain: tuple[tuple[int, tuple[int, ...]], ...]  # (v_k, the other nodes of its orbit)
    autos: tuple[tuple[int, ...], ...]  # every automorphism, as the image of each node
    twins: tuple[tuple[int, ...], ...]  # groups of interchangeable nodes


NONE = NodeSymmetry((), (), ())


def signatures(spec: Spec, t: np.ndarray, tr: np.ndarray, release: np.ndarray | None) -> list[tuple]:  # type: ignore[type-arg]
    """What an automorphism must keep of each node (colocated nodes: their own number)."""
    from partdsl.evaluator.schedule_checks import sample_bytes

    d = spec.dense
    held = sample_bytes(spec)
    tied = {v for pair in d.colocated_pairs for v in pair}
    rel = np.zeros((d.n, d.D)) if release is None else np.asarray(release, dtype=float)
    tensor = d.tensor_source if d.tensor_source is not None else np.full(d.n, -1)
    return [(v,) if v in tied else (d.allowed[v].tobytes(), t[v].tobytes(), tr[v].tobytes(), float(d.params[v]),
                                    float(held[v]), rel[v].tobytes(), bool(tensor[v] >= 0)) for v in range(d.n)]


def find(spec: Spec, t: np.ndarray, tr: np.ndarray, release: np.ndarray | None) -> NodeSymmetry:
    """The automorphisms, their stabilizer chain and the twins (NONE under a split batch)."""
    d = spec.dense
    if spec.objective.split != 1 or d.n > MAX_NODES or d.n < 2:
        return NONE
    sig = signatures(spec, t, tr, release)
    if len(set(sig)) == d.n:
        return NONE
    g = nx.DiGraph()
    g.add_nodes_from((v, {"sig": sig[v]}) for v in range(d.n))
    g.add_edges_from(zip(d.src.tolist(), d.dst.tolist()))
    gm = nx.algorithms.isomorphism.DiGraphMatcher(g, g, node_match=lambda a, b: a["sig"] == b["sig"])
    autos = []
    for m in gm.isomorphisms_iter():
        autos.append(tuple(m[v] for v in range(d.n)))
        if len(autos) > MAX_AUTOMORPHISMS:
            return NONE
    ident = tuple(range(d.n))
    chain = []
    left = [a for a in autos if a != ident]
    while left:
        orbits = {v: sorted({a[v] for a in left} - {v}) for v in range(d.n)}
        v = max(range(d.n), key=lambda w: (len(orbits[w]), -w))
        chain.append((v, tuple(orbits[v])))
        left = [a for a in left if a[v] == v]
    return NodeSymmetry(tuple(chain), tuple(autos), _twins(spec, sig))


def _twins(spec: Spec, sig: list) -> tuple[tuple[int, ...], ...]:  # type: ignore[type-arg]
    d = spec.dense
    groups: dict[tuple, list[int]] = {}  # type: ignore[type-arg]
    for v in range(d.n):
        key = (tuple(sorted(d.preds[v])), tuple(d.succ_idx[d.succ_ptr[v]:d.succ_ptr[v + 1]].tolist()), sig[v])
        groups.setdefault(key, []).append(v)
    return tuple(tuple(g) for g in groups.values() if len(g) > 1)


def add_rows(rows: Rows, spec: Spec, x: np.ndarray, sym: NodeSymmetry) -> None:
    """dev(v_k) <= dev(u) for u in v_k's orbit, link by link (dev: the device's number)."""
    d = spec.dense
    for v, orbit in sym.chain:
        cv = x[v, :, 0]
        kv = cv >= 0
        for u in orbit:
            cu = x[u, :, 0]
            ku = cu >= 0
            rows.add_one(np.r_[cv[kv], cu[ku]], np.r_[np.flatnonzero(kv), -np.flatnonzero(ku)].astype(float),
                         -np.inf, 0.0, ("node_symmetry", (d.names[v], d.names[u])))


def fixed_orders(ys: dict, sym: NodeSymmetry, D: int) -> list[int]:  # type: ignore[type-arg]
    """The order columns fixed at 0: on device u, twin i (< j) runs before twin j."""
    return [ys[(i, j, u)] for g in sym.twins for a, i in enumerate(g) for j in g[a + 1:] for u in range(D)
            if (i, j, u) in ys]


def canonical(sym: NodeSymmetry, start: dict[tuple[int, int], float]) -> dict[int, int]:
    """Where each node's share goes so that a schedule meets the rows: `start` maps (node,
    device) -> the start of its one share; returns node -> the node it becomes."""
    dev = {v: u for (v, u) in start}
    at = {v: s for (v, _), s in start.items()}
    where = list(range(len(sym.autos[0]))) if sym.autos else []  # node w's share is now at where[w]
    group = list(sym.autos)
    for v, _ in sym.chain:
        # the automorphism (among those fixing v_1..v_k-1) putting the least device at v
        inv = {where[w]: w for w in range(len(where))}  # position -> original node
        best = min(group, key=lambda a: dev[inv[_pre(a, v)]])
        where = [best[p] for p in where]
        group = [a for a in group if a[v] == v]
    inv = {where[w]: w for w in range(len(where))}
    for g in sym.twins:  # twins on one device: the earlier start takes the lower number
        ranked = sorted(g, key=lambda p: (dev[inv[p]], at[inv[p]]))
        placed = {inv[p]: q for p, q in zip(ranked, sorted(g))}
        for w, q in placed.items():
            where[w] = q
        inv = {where[w]: w for w in range(len(where))}
    return {w: where[w] for w in range(len(where)) if where[w] != w}


def _pre(a: tuple[int, ...], v: int) -> int:
    """The position a maps onto v (a is a permutation)."""
    return a.index(v)

"""The chains Tarnawski et al.'s DPL and PipeDream baselines split, as the authors' code builds
them (msr-fiddle/dnn-partitioning, MIT: `throughput-dp/dp.cpp`, modes `-linearize` and
`-pipeDream`; the paper's sec. 5.1.2 and sec. 6), reimplemented from that code's behaviour:

1. colour classes (our colocation groups) are contracted, forward and backward apart;
2. PipeDream only: the biconnected components of the contracted graph, edges out of the
   `ignore`d vertices left out, each fuse the vertices that are the tail of one of their edges
   (PipeDream's profiler groups a branching layer's fan-out);
3. backward classes without a forward part get an empty forward vertex, tied by their
   backward edges mirrored; forward strongly connected components are fused;
4. a forward vertex of no work (on any device, its backward part too) with one forward
   neighbour and no backward one joins that neighbour, until none is left;
5. the forward vertices are put in a line: a stack of the vertices whose forward inputs are
   all placed, starting with the sources; the top is placed next, and the vertices it
   completes are pushed in increasing id order. The DP then splits that line.

Up to HASH_ORDER_LIMIT nodes (the papers' graphs have at most 2,012), `-linearize` follows the
code's own tie-breaks as well (`hash_line`): the sources are stacked, and the work-free leaves
merged one at a time, in the order its hash maps list them (libstdc++'s), which gives its
chain position by position on all 16 bundled inputs. That costs a pass per merge (37 s for a
5,000-node chain with a leaf on every node), so above the limit, and for `-pipeDream`, the
sources and merges go in id order in one linear pass.

A vertex's id is its colour class number (the dnn-partitioning `colorClass`, our group `cN`),
which orders the pushes; a node with no group gets a fresh id counting down from
2^31 - 1 - 12345678, in file order, as the authors' reader does.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

import networkx as nx
import numpy as np
from partdsl.core.ir import Spec
from partdsl.kernels.bottleneck.libstdcxx_hash import unordered_order

FRESH = 2**31 - 1 - 12345678
TRIVIAL = 1e-6  # the reference's "no work" (ms)
HASH_ORDER_LIMIT = 2_500  # nodes up to which DPL follows the code's hash-map order (one pass per merge)


def class_ids(spec: Spec, per_label: bool = True) -> np.ndarray:
    """Each node's colour class number: the `N` of group `cN`, else a fresh number, counting
    down in file order, per group label (nodes of one label share it; `per_label=False`: per
    node, as reference_dp numbers them)."""
    out = np.empty(len(spec.graph.nodes), dtype=np.int64)
    fresh, named = FRESH, {}
    for i, node in enumerate(spec.graph.nodes):
        m = re.fullmatch(r"c(-?\d+)", node.group or "")
        if m:
            out[i] = int(m[1])
            continue
        shared = per_label and node.group is not None
        if not shared or node.group not in named:
            fresh -= 1
            if shared:
                named[node.group] = fresh
        out[i] = named[node.group] if shared else fresh
    return out


class _Classes:
    """Colour classes under merges (union-find); the surviving id is the one the merge names."""

    def __init__(self, ids: np.ndarray, backward: np.ndarray, src: np.ndarray, dst: np.ndarray) -> None:
        self.ids, self.backward = ids, backward
        self.parent: dict[int, int] = {int(c): int(c) for c in np.unique(ids)}
        self.src, self.dst = src, dst

    def find(self, c: int) -> int:
        root = c
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[c] != root:
            self.parent[c], c = root, self.parent[c]
        return root

    def merge(self, into: int, absorbed: Iterable[int]) -> None:
        into = self.find(into)
        for a in absorbed:
            a = self.find(a)
            if a != into:
                self.parent[a] = into

    def cls(self) -> np.ndarray:
        """Each node's class now."""
        uniq, inv = np.unique(self.ids, return_inverse=True)
        return np.array([self.find(int(c)) for c in uniq], dtype=np.int64)[inv]

    def vertex(self) -> np.ndarray:
        """Each node's vertex: its class, times two, plus one if backward."""
        return self.cls() * 2 + self.backward

    def edges(self) -> set[tuple[int, int]]:
        """The contracted graph's edges between vertices (no self-loops), with the mirrored
        forward edges of step 3."""
        cls = self.cls()
        v = cls * 2 + self.backward
        a, b = v[self.src], v[self.dst]
        keep = a != b
        _, mirrored = _forward_edges(cls, self.backward, self.src, self.dst)
        return set(zip(a[keep].tolist(), b[keep].tolist())) | {(2 * u, 2 * w) for u, w in mirrored}


def _biconnected(cl: _Classes, skip: set[int]) -> None:
    """Step 2: the tails of each biconnected component's edges share a class. A class
    keeps the largest id among those it joins."""
    g = nx.Graph()
    for u, v in cl.edges():
        if u not in skip:
            g.add_edge(u, v, tail=u)
    for comp in nx.biconnected_component_edges(g):
        tails = {g.edges[e]["tail"] // 2 for e in comp}
        cl.merge(max(tails), tails)


def _fuse_cycles(cl: _Classes, order: list[tuple[int, bool]] | None = None) -> None:
    """Step 3: classes whose forward vertices lie on a common cycle (mirrored edges included)
    become one: the largest id, or with `order` the class whose forward vertex comes last in
    it (the code's union-find order)."""
    where = {c: i for i, (c, b) in enumerate(order) if not b} if order is not None else None
    true, mirrored = _forward_edges(cl.cls(), cl.backward, cl.src, cl.dst)
    for comp in nx.strongly_connected_components(nx.DiGraph(true | mirrored)):
        if len(comp) > 1:
            cl.merge(max(comp, key=where.__getitem__) if where is not None else max(comp), comp)


def _trivial(cl: _Classes, cost: np.ndarray) -> None:
    """Step 4: a forward vertex of no work (its backward part neither), with one forward
    neighbour and no backward one, joins its neighbour. Joining removes a leaf of the forward
    graph, so the leaves are pruned from a work list: linear in the graph."""
    v = cl.vertex()
    work: dict[int, float] = {}
    for x, w in zip(v.tolist(), cost.tolist()):
        work[x] = work.get(x, 0.0) + w
    fwd: dict[int, set[int]] = {}
    bwd: dict[int, int] = {}
    for a, b in cl.edges():
        for x, y in ((a, b), (b, a)):
            if x % 2 == 0:
                if y % 2 == 0:
                    fwd.setdefault(x, set()).add(y)
                else:
                    bwd[x] = bwd.get(x, 0) + 1
    free = {x for x in work if x % 2 == 0} | set(fwd)

    def trivial(x: int) -> bool:
        return (work.get(x, 0.0) < TRIVIAL and work.get(x + 1, 0.0) < TRIVIAL and not bwd.get(x)
                and len(fwd.get(x, ())) == 1)

    todo = sorted(x for x in free if trivial(x))
    while todo:
        x = todo.pop()
        if not trivial(x):
            continue
        (m,) = fwd.pop(x)
        fwd[m].discard(x)
        work[m + 1] = work.get(m + 1, 0.0) + work.get(x + 1, 0.0)
        cl.merge(m // 2, [x // 2])
        if trivial(m):
            todo.append(m)


def reference_chain(spec: Spec, pipedream: bool = False, ignore: Iterable[str] = ()) -> tuple[np.ndarray, int]:
    """(position of each node on the line, number of positions): the reference's `-linearize`
    chain, or with `pipedream` its `-pipeDream` one (`ignore`: names of nodes whose vertices'
    outgoing edges the biconnected search leaves out, as the reference does for BERT-24's and
    GNMT's inputs)."""
    d = spec.dense
    if not pipedream and d.n <= HASH_ORDER_LIMIT:
        return hash_line(spec)
    cl = _Classes(class_ids(spec), d.backward.astype(bool), d.src, d.dst)
    if pipedream:
        named = set(ignore)
        v = cl.vertex()
        _biconnected(cl, {int(v[i]) for i, name in enumerate(d.names) if name in named})
    _fuse_cycles(cl)
    _trivial(cl, np.nan_to_num(d.work, posinf=0.0).sum(axis=1))
    cls = cl.cls()
    true, mirrored = _forward_edges(cls, cl.backward, cl.src, cl.dst)
    classes = np.unique(cls).tolist()
    indeg = dict.fromkeys(classes, 0)
    succ: dict[int, list[int]] = {c: [] for c in classes}
    for u, w in sorted(true | mirrored):
        indeg[w] += 1
        succ[u].append(w)
    return _stack_line([c for c in classes if indeg[c] == 0], succ, indeg, cls)


def _stack_line(stack: list[int], succ: dict[int, list[int]], indeg: dict[int, int],
                cls: np.ndarray) -> tuple[np.ndarray, int]:
    """Step 5: the top of the stack goes next on the line; the vertices it completes are pushed
    in `succ`'s order. (Each node's position on the line, the number of positions.)"""
    line: list[int] = []
    while stack:
        c = stack.pop()
        line.append(c)
        for w in succ[c]:
            indeg[w] -= 1
            if indeg[w] == 0:
                stack.append(w)
    pos = {c: p for p, c in enumerate(line)}
    return np.array([pos[int(c)] for c in cls.tolist()], dtype=np.int64), len(line)


def _vcc(cls: np.ndarray) -> tuple[int, dict[int, int]]:
    classes = np.unique(cls)
    return int(classes[-1]), {int(c): r for r, c in enumerate(classes)}


def _contract(order: list[tuple[int, bool]], find: dict[int, int], cls: np.ndarray) -> list[tuple[int, bool]]:
    """The code's contraction: the vertices (class, backward) in the order its hash map of
    vertex ids lists them, after inserting the current vertices' new ids in `order`."""
    top, rank = _vcc(cls)
    key = [(top + 1 + rank[find.get(c, c)]) if b else find.get(c, c) for c, b in order]
    back = {top + 1 + r: c for c, r in rank.items()}
    return [(back[k], True) if k > top else (k, False) for k in unordered_order(key)]


def hash_line(spec: Spec) -> tuple[np.ndarray, int]:
    """The `-linearize` chain with the code's own tie-breaks: the sources stacked in the order
    of its hash map of vertices after each contraction (kernels/bottleneck/libstdcxx_hash.py),
    a work-free leaf merged one at a time, the first in that order, with a contraction after
    each, and the vertices a placed one completes pushed artificial edges first, each group
    in id order. Linear per merge, so for graphs of up to HASH_ORDER_LIMIT nodes (above,
    reference_chain takes the sources and merges in id order, in one linear pass)."""
    d = spec.dense
    back = d.backward.astype(bool)
    src, dst = d.src, d.dst
    order, cls = hash_vertices(spec)
    cpu_fpga = np.nan_to_num(d.work, posinf=0.0)
    while True:  # the first work-free leaf in the current order joins its neighbour; contract; again
        leaf = _first_trivial(cls, back, cpu_fpga, src, dst, order)
        if leaf is None:
            break
        (c, into) = leaf
        cls = np.where(cls == c, into, cls)
        order = _contract(order, {c: into}, cls)
    true, artificial = _forward_edges(cls, back, src, dst)
    indeg: dict[int, int] = {c: 0 for c, b in order if not b}
    for u, v in true | artificial:
        indeg[v] += 1
    out: dict[int, list[int]] = {c: [] for c in indeg}
    for group in (sorted(artificial), sorted(true)):
        for u, v in group:
            out[u].append(v)
    return _stack_line([c for c, b in order if not b and indeg[c] == 0], out, indeg, cls)


def hash_vertices(spec: Spec) -> tuple[list[tuple[int, bool]], np.ndarray]:
    """The code's contracted graph after steps 1 and 3: its vertices (class, backward) in the
    order its hash map lists them, and each node's class. Read in file order and contracted;
    a forward vertex appended for each backward-only class, in its hash set's order; forward
    cycles fused; contracted again."""
    d = spec.dense
    back = d.backward.astype(bool)
    cls = class_ids(spec)
    order = _contract([(int(c), bool(b)) for c, b in zip(cls, back)], {}, cls)  # from the file's order
    forward = set(cls[~back].tolist())
    top, rank = _vcc(cls)
    by_rank = {r: c for c, r in rank.items()}
    orphans = unordered_order(top + 1 + rank[c] for c, b in order if b and c not in forward)
    order += [(by_rank[k - top - 1], False) for k in orphans]
    cl = _Classes(cls, back, d.src, d.dst)
    _fuse_cycles(cl, order)
    cls = cl.cls()
    return _contract(order, {c: cl.find(c) for c in cl.parent}, cls), cls


def _forward_edges(cls: np.ndarray, back: np.ndarray, src: np.ndarray, dst: np.ndarray) -> tuple[set, set]:
    """(true, artificial) forward edges between classes: the contracted graph's own, and the
    mirrored ones of backward-only classes."""
    forward = set(cls[~back].tolist())
    true, artificial = set(), set()
    for a, b in zip(src.tolist(), dst.tolist()):
        ca, cb = int(cls[a]), int(cls[b])
        if (ca, back[a]) == (cb, back[b]):
            continue
        if not back[a] and not back[b]:
            true.add((ca, cb))
        elif back[a] and back[b] and (ca not in forward or cb not in forward):
            artificial.add((cb, ca))
    return true, artificial


def _first_trivial(cls: np.ndarray, back: np.ndarray, work: np.ndarray, src: np.ndarray, dst: np.ndarray,
                   order: list[tuple[int, bool]]) -> tuple[int, int] | None:
    """(class, the class it joins) for the first vertex in `order` the code merges: forward, no
    work on any device (its class's backward part neither), one incident forward edge (the
    contracted true and artificial edges counted apart) and no backward neighbour."""
    key = cls * 2 + back
    uniq, inv = np.unique(key, return_inverse=True)
    cost = np.zeros((len(uniq), work.shape[1]))
    np.add.at(cost, inv, work)
    cost_of = {int(k): row for k, row in zip(uniq.tolist(), cost)}
    true, artificial = _forward_edges(cls, back, src, dst)
    fwd: dict[int, list[int]] = {}
    for u, v in list(true) + list(artificial):
        fwd.setdefault(u, []).append(v)
        fwd.setdefault(v, []).append(u)
    has_bwd = {int(cls[a]) for a, b in zip(src.tolist(), dst.tolist()) if not back[a] and back[b]}
    has_bwd |= {int(cls[b]) for a, b in zip(src.tolist(), dst.tolist()) if back[a] and not back[b]}
    for c, b in order:
        if b or c in has_bwd or len(fwd.get(c, ())) != 1:
            continue
        if (cost_of.get(c * 2, np.zeros(1)) >= TRIVIAL).any():
            continue
        if cost_of.get(c * 2 + 1, np.zeros(1)).sum() >= TRIVIAL:
            continue
        return c, fwd[c][0]
    return None

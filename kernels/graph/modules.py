"""Modules of a DNN graph for MILP-SPLIT (Ghannane & Abdelfattah sec. IV-B).

Single channel (IV-B1): an articulation point that is no bridge's endpoint, and whose
removal leaves its inputs and its outputs in different parts, becomes a bridge: a
zero-cost copy takes its out-edges (`split_articulations`; both ends later go on one
device). Multi-channel (IV-B2): modules are built from the k-edge-connected components,
k = channels + 1 (networkx), so modules talk through at most `channels` edges; on graphs of
more than K_EDGE_EDGES edges, where networkx takes seconds, each node is its own component
(the cuts are then those of one topological order: valid, perhaps fewer).

`chain` orders the components topologically (cycles between components merged) and
cuts the order wherever at most `channels` edges cross, so each module is a maximal run
of components between two such cuts: every edge goes forward in the chain, and a cut
with one crossing edge is a single channel (o_k -> i_{k+1})."""
from __future__ import annotations

from dataclasses import dataclass, replace

import networkx as nx
import numpy as np
from partdsl.core.dense import groups
from partdsl.core.ir import Graph, Node, Spec, Target, Work


@dataclass(frozen=True)
class Split:
    """A spec with articulation points split, and where each node came from."""

    spec: Spec
    origin: tuple[int, ...]  # node of the new spec -> node of the original
    twin: dict[int, int]  # copy -> the node it was split from (same device)


def undirected(spec: Spec) -> nx.Graph:
    g = nx.Graph()
    g.add_nodes_from(range(len(spec.graph.nodes)))
    g.add_edges_from(spec.graph.edges)
    return g


def split_articulations(spec: Spec) -> Split:
    """Turn articulation points between their inputs and outputs into bridges."""
    n = len(spec.graph.nodes)
    und = undirected(spec)
    on_bridge = {v for e in nx.bridges(und) for v in e}
    preds: dict[int, set[int]] = {v: set() for v in range(n)}
    succs: dict[int, set[int]] = {v: set() for v in range(n)}
    for a, b in spec.graph.edges:
        preds[b].add(a)
        succs[a].add(b)
    cut = []
    for a in sorted(nx.articulation_points(und)):
        if a in on_bridge or not preds[a] or not succs[a]:
            continue
        rest = und.subgraph(v for v in range(n) if v != a)
        if all(not (c & preds[a] and c & succs[a]) for c in map(set, nx.connected_components(rest))):
            cut.append(a)
    if not cut:
        return Split(spec, tuple(range(n)), {})
    nodes = list(spec.graph.nodes)
    origin = list(range(n))
    twin: dict[int, int] = {}
    copy_of: dict[int, int] = {}
    for a in cut:
        nd = nodes[a]
        copy_of[a] = len(nodes)
        twin[len(nodes)] = a
        origin.append(a)
        nodes.append(Node(f"{nd.name}'", (Work(0.0),), 0.0, nd.out, nd.comm, nd.backward, None, nd.only, nd.forbid))
    edges = sorted({(copy_of[a], b) if a in copy_of else (a, b) for a, b in spec.graph.edges}
                   | {(a, c) for a, c in copy_of.items()})
    graph = Graph(spec.graph.name, tuple(nodes), tuple(edges))
    return Split(replace(spec, graph=graph), tuple(origin), twin)


# networkx finds k-edge-connected components (k >= 3) by a max flow per node (a 200-node
# graph of 1,040 edges: 3.3 s; 25,100 edges: past Python's recursion limit); one channel
# uses bridges (linear time). Above this many edges the chain is cut in topological order.
K_EDGE_EDGES = 500


def chain(spec: Spec, channels: int = 1, min_size: int = 1) -> list[list[int]]:
    """Modules in chain order, each a sorted list of nodes (see the module docstring); a
    module of fewer than `min_size` nodes joins the next one (the last, the one before)."""
    n = len(spec.graph.nodes)
    und = undirected(spec)
    comp = np.arange(n, dtype=np.int64)  # above K_EDGE_EDGES: every node its own component
    if channels == 1 or len(spec.graph.edges) <= K_EDGE_EDGES:
        for c, members in enumerate(nx.k_edge_components(und, k=channels + 1)):
            comp[list(members)] = c
    q = nx.DiGraph()
    q.add_nodes_from(range(int(comp.max()) + 1) if n else [])
    q.add_edges_from((int(comp[a]), int(comp[b])) for a, b in spec.graph.edges if comp[a] != comp[b])
    scc = nx.condensation(q)  # components on a cycle of component edges become one
    atom = np.array([scc.graph["mapping"][int(c)] for c in comp], dtype=np.int64) if n else comp
    pos = spec.dense.topo_position
    first = np.full(len(scc), n, dtype=np.int64)  # atoms are numbered 0 .. len(scc) - 1
    np.minimum.at(first, atom, pos)  # each atom's first topological position (a scan per atom is quadratic)
    order = list(nx.lexicographical_topological_sort(scc, key=lambda a: first[a]))
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    where = rank[atom]  # node -> position of its atom in the order
    # edges crossing the cut after position p: those with tail <= p < head
    cross = np.zeros(len(order) + 1, dtype=np.int64)
    for a, b in spec.graph.edges:
        lo, hi = int(where[a]), int(where[b])
        if lo < hi:
            cross[lo] += 1
            cross[hi] -= 1
    cross = np.cumsum(cross)
    modules, cur = [], []
    for p, at in enumerate(groups(where)):  # the nodes at each position (each holds an atom), in index order
        cur += at.tolist()
        if p == len(order) - 1 or cross[p] <= channels:
            modules.append(sorted(cur))
            cur = []
    merged: list[list[int]] = []
    for m in modules:
        if merged and len(merged[-1]) < min_size:
            merged[-1] = sorted(merged[-1] + m)
        else:
            merged.append(m)
    if len(merged) > 1 and len(merged[-1]) < min_size:
        last = merged.pop()
        merged[-1] = sorted(merged[-1] + last)
    return merged


def boundary_edges(spec: Spec, modules: list[list[int]]) -> list[list[tuple[int, int]]]:
    """For each cut between module k and k+1, the edges crossing it."""
    where = np.empty(len(spec.graph.nodes), dtype=np.int64)
    for k, m in enumerate(modules):
        where[m] = k
    out: list[list[tuple[int, int]]] = [[] for _ in range(max(len(modules) - 1, 0))]
    for a, b in spec.graph.edges:
        for k in range(int(where[a]), int(where[b])):
            out[k].append((a, b))
    return out


def restrict(spec: Spec, nodes: list[int], pins: dict[int, str] | None = None) -> Spec:
    """The spec on a subset of nodes (edges among them), with nodes pinned to devices;
    pins, forbids and colocation sets of other nodes are dropped."""
    keep = {v: i for i, v in enumerate(nodes)}
    g = spec.graph
    graph = Graph(g.name, tuple(g.nodes[v] for v in nodes),
                  tuple(sorted((keep[a], keep[b]) for a, b in g.edges if a in keep and b in keep)))
    names = {g.nodes[v].name for v in nodes}
    c = spec.constraints
    own = tuple((t, ts) for t, ts in c.pins if t.name in names)
    extra = tuple((Target(g.nodes[v].name), (Target(d),)) for v, d in (pins or {}).items())
    sets = tuple(s for s in (tuple(t for t in s if t.name in names) for s in c.colocate_sets) if len(s) > 1)
    cons = replace(c, pins=own + extra, forbids=tuple((t, ts) for t, ts in c.forbids if t.name in names),
                   colocate_sets=sets)
    return replace(spec, graph=graph, constraints=cons)

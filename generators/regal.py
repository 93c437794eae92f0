"""Synthetic computation graphs in the style of REGAL (Archer et al. App. C.2, after
Paliwal et al.): a classic random graph (Erdos-Renyi, Barabasi-Albert or Watts-Strogatz)
made acyclic by a random topological order; each node's output tensor costs
N(50, 10); a node's work is the sum of its input and output tensor costs plus a random
fraction r ~ |N(0, 0.1)| of the total tensor cost. Tensor costs are transfer times
(`comm`, in ms), so the platform needs no link bandwidth.

`work="sampled"` draws each node's work from N(50, 10) instead, like the tensors: the
scale of the `compute_cost`s in the example graph of REGAL's dataset README (58, 47, 58
beside tensors of 70, 52, 55), which App. C.2's formula does not give."""
from __future__ import annotations

import numpy as np
from partdsl.core.ir import Constraints, DeviceClass, Graph, Node, Objective, Platform, Spec, Work

MODELS = ("er", "ba", "ws")
WORKS = ("appendix", "sampled")


def _undirected(n: int, model: str, rng: np.random.Generator, degree: float) -> set[tuple[int, int]]:
    edges: set[tuple[int, int]] = set()
    if model == "er":
        m = int(round(degree * n / 2))
        while len(edges) < m:
            a, b = rng.integers(0, n, 2)
            if a != b:
                edges.add((min(a, b), max(a, b)))
    elif model == "ba":
        k = max(1, int(round(degree / 2)))
        targets = list(range(k))
        repeated: list[int] = []
        for v in range(k, n):
            for t in set(targets):
                edges.add((min(v, t), max(v, t)))
            repeated += targets + [v] * k
            targets = [repeated[i] for i in rng.integers(0, len(repeated), k)]
    elif model == "ws":
        k = max(2, int(round(degree)) // 2 * 2)
        for v in range(n):
            for j in range(1, k // 2 + 1):
                w = (v + j) % n
                if rng.random() < 0.1:
                    w = int(rng.integers(0, n))
                if w != v:
                    edges.add((min(v, w), max(v, w)))
    else:
        raise ValueError(f"unknown random graph model '{model}' (use one of {MODELS})")
    return edges


def regal_graph(n: int, model: str = "er", seed: int = 0, degree: float = 3.0, work: str = "appendix") -> Graph:
    if work not in WORKS:
        raise ValueError(f"unknown work model '{work}' (use one of {WORKS})")
    rng = np.random.default_rng(seed)
    und = _undirected(n, model, rng, degree)
    order = rng.permutation(n)  # a random topological order orients every edge
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    edges = sorted({(a, b) if rank[a] < rank[b] else (b, a) for a, b in und})
    size = np.maximum(rng.normal(50.0, 10.0, n), 1.0)
    total = size.sum()
    preds: list[list[int]] = [[] for _ in range(n)]
    has_succ = np.zeros(n, dtype=bool)
    for a, b in edges:
        preds[b].append(a)
        has_succ[a] = True
    nodes = []
    for v in range(n):
        r = abs(rng.normal(0.0, 0.1))
        w = sum(size[u] for u in preds[v]) + (size[v] if has_succ[v] else 0.0) + r * total
        if work == "sampled":
            w = max(rng.normal(50.0, 10.0), 1.0)
        nodes.append(Node(name=f"v{v}", work=(Work(float(round(w, 6))),), comm=float(round(size[v], 6))))
    tag = "" if work == "appendix" else f"_{work}"
    return Graph(f"regal_{model}_{n}_{seed}{tag}", tuple(nodes), tuple(edges))


def regal_spec(n: int, k: int, model: str = "er", seed: int = 0, degree: float = 3.0, work: str = "appendix") -> Spec:
    return mtpp_spec(regal_graph(n, model, seed, degree, work), k)


def mtpp_spec(graph: Graph, k: int) -> Spec:
    """MTPP on k identical stages (Archer sec. 2): acyclic quotient graph."""
    return Spec(graph, Platform((DeviceClass("stage", k, link=None),)), Objective("bottleneck"),
                Constraints(acyclic=True, memory="ignore"))

"""PipeDream's profiles -> training specs (`part convert graph.txt --from pipedream`, issue 30
item 6). PipeDream's profiler (msr-fiddle/pipedream, `profiler/*/profiles/*/graph.txt`, MIT)
writes one line per layer and one per edge:

    node5 -- Conv2d(64, 192, ...) -- forward_compute_time=3.128, backward_compute_time=5.612, activation_size=143327232.000, parameter_size=1229568.000
    \tnode4 -- node5

(times in ms, sizes in bytes; an activation size may be a list `[a; b]`, summed, as
PipeDream's graph.Node.from_str does). Each layer becomes a forward node (its forward time,
its parameters) and a backward node (its backward time) in one group, the backward nodes
mirroring the forward edges (Tarnawski et al.'s training graphs), under PipeDream's
objective, max over stages of FW + BW. As PipeDream's optimizer does
(optimizer_graph_hierarchical.main), `Input` sources cost nothing and unused `__getitem__`
sinks are dropped. Its DP charges no activation transfers unless asked to compress them,
so the spec has none either; `transfers=True` gives each node its activation size as its
output, sent over the platform's link. The platform: `machines` devices with a link of
`bandwidth` B/s (PipeDream's -n and -b), stages replicated up to all of them (`replicate
<= n`: PipeDream's hybrid parallelism), `memory` bytes each (its -s; memory is not
constrained without it, as PipeDream's --use_memory_constraint is off by default).

Several levels (`machines` [4, 2], innermost first, with a bandwidth each, as PipeDream's
-n 4 2 -b B1 B2) become server levels (evaluator/levels.py): `server node[2] { device gpu[4]
{ link B1 }; link B1 }; link B2`, a third level `rack`, then `pod`. Their cost is
partdsl's, not PipeDream's recursive one (a top-level stage's cross-server sync of its
whole segment added to the inner pipeline's time): a replicated stage syncs over the
slowest level its replicas span. `acyclic=False` drops the acyclic stage order (any split:
`exact` then models the levels and the replicas; under `acyclic` only brute force does).
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from partdsl.core.errors import PartError
from partdsl.core.ir import Spec
from partdsl.core.names import identifier
from partdsl.dsl.builder import GraphBuilder, SpecBuilder
from partdsl.importers.import_text import read_import_text

HINT = "a PipeDream graph.txt: `nodeN -- desc -- forward_compute_time=..., ...` lines and `\\tnodeA -- nodeB` edges"
FIELDS = ("forward_compute_time", "backward_compute_time", "activation_size", "parameter_size")


def _number(text: str, where: str) -> float:
    text = text.strip()
    try:
        if text.startswith("["):
            return sum(float(x) for x in text.strip("[]").split(";") if x.strip())
        return float(text)
    except ValueError:
        raise PartError(f"{where}: '{text}' is not a number", None, HINT) from None


def read_profile(path: Path | str) -> tuple[dict[str, tuple[str, list[float]]], list[tuple[str, str]], dict[str, int]]:
    """({node id: (description, [fw ms, bw ms, activation B, parameters B])}, edges, and the
    `stage_id` of each node that has one: PipeDream's optimizer writes its plan this way)."""
    nodes: dict[str, tuple[str, list[float]]] = {}
    edges: list[tuple[str, str]] = []
    stages: dict[str, int] = {}
    for k, line in enumerate(read_import_text(path, None, "a PipeDream graph.txt").splitlines(), start=1):
        where = f"{path}:{k}"
        if not line.strip():
            continue
        if line.startswith("\t"):
            ends = [x.strip() for x in line.strip().split(" -- ")]
            if len(ends) != 2 or any(e not in nodes for e in ends):
                raise PartError(f"{where}: an edge names a node not declared above it: {line.strip()!r}", None, HINT)
            edges.append((ends[0], ends[1]))
            continue
        parts = line.strip().split(" -- ")
        if len(parts) < 3:
            raise PartError(f"{where}: expected `id -- description -- fields`, got {line.strip()[:80]!r}", None, HINT)
        meta = dict(re.findall(r"(\w+)=(\[[^\]]*\]|[^,\s]+)", parts[-2] if len(parts) > 3 else parts[2]))
        missing = [f for f in FIELDS if f not in meta]
        if missing:
            raise PartError(f"{where}: node {parts[0]} has no {', '.join(missing)}", None, HINT)
        nodes[parts[0]] = (" -- ".join(parts[1:-2 if len(parts) > 3 else -1]),
                           [_number(meta[f], f"{where}: {f}") for f in FIELDS])
        if len(parts) > 3 and parts[-1].startswith("stage_id="):
            stages[parts[0]] = int(_number(parts[-1].split("=", 1)[1], f"{where}: stage_id"))
    if not nodes:
        raise PartError(f"{path}: no nodes", None, HINT)
    return nodes, edges, stages


LEVELS = ("node", "rack", "pod")  # the names of the server levels, innermost first


def pipedream_spec(path: Path | str, machines: int | list[int], bandwidth: float | list[float] = 1e9,
                   memory: float | None = None, transfers: bool = False, acyclic: bool = True) -> Spec:
    """The training spec of a PipeDream profile on `machines` devices, or on levels of them
    (lists, innermost first; module docstring)."""
    path = Path(path)
    counts = [int(machines)] if isinstance(machines, int) else [int(m) for m in machines]
    bws = [float(bandwidth)] if isinstance(bandwidth, (int, float)) else [float(b) for b in bandwidth]
    if len(counts) != len(bws) or len(counts) > len(LEVELS) + 1:
        raise PartError(f"{len(counts)} levels of machines and {len(bws)} bandwidths", None,
                        f"give one bandwidth per level, at most {len(LEVELS) + 1} levels")
    nodes, edges, _ = read_profile(path)
    sinks = {a for a in nodes} - {a for a, _ in edges}
    dropped = {a for a in sinks if nodes[a][0].startswith("__getitem__")}
    edges = [(a, b) for a, b in edges if b not in dropped]
    used: set[str] = set()
    name = {a: identifier(a, used) for a in nodes if a not in dropped}
    g = GraphBuilder(identifier(path.parent.name or path.stem, set()))
    for a, (desc, (fw, bw, act, params)) in nodes.items():
        if a in dropped:
            continue
        if desc.startswith("Input"):  # PipeDream's optimizer: inputs cost nothing
            fw = bw = act = params = 0.0
        out = act if transfers and act > 0 else None
        g.node(name[a], fw, params=params, out=out, group=name[a])
        g.node(identifier(name[a] + "_bw", used), bw, out=out, group=name[a], backward=True)
    for a, b in edges:
        g.edge(name[a], name[b]).edge(name[b] + "_bw", name[a] + "_bw")
    for a in name:
        if not any(x == a for x, _ in edges):  # a forward sink: its backward starts there
            g.edge(name[a], name[a] + "_bw")
    b = SpecBuilder(g)
    for k in range(len(counts) - 1, 0, -1):  # outermost first: each level inside the one above
        b.server(LEVELS[k - 1], counts[k], link=bws[k - 1], within=LEVELS[k] if k < len(counts) - 1 else None)
    b.device("gpu", counts[0], link=bws[0], memory=memory, server=LEVELS[0] if len(counts) > 1 else None)
    if len(counts) > 1:
        b.fabric(bws[-1])
    return (b.minimize("bottleneck", training="pipedream")
            .subject_to(acyclic=acyclic, colocate=True, memory="hard" if memory is not None else "ignore",
                        replicate=int(np.prod(counts))).build())


def plan(spec: Spec, path: Path | str, factors: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """PipeDream's plan as an assignment of `spec` (its `pipedream_spec`): the `stage_id`s of
    the graph its optimizer writes (-o DIR: gpus=N.txt) and the replication factor of each
    stage in order (its printed configuration). Stage s runs on the devices after those of
    stages 0 .. s-1; a layer's backward node with its forward node. -> (device per node,
    replication factor per device)."""
    _, _, stages = read_profile(path)
    if not stages:
        raise PartError(f"{path}: no stage_id on any node: not a plan PipeDream's optimizer wrote", None,
                        "run its optimizer with -o DIR and give DIR/gpus=N.txt")
    first = np.r_[0, np.cumsum(factors)].astype(np.int64)
    if len(factors) <= max(stages.values()) or first[-1] > spec.dense.D:
        raise PartError(f"{path}: {max(stages.values()) + 1} stages on {first[-1]} devices do not fit the spec's "
                        f"{spec.dense.D} with factors {factors}", None, "give the factors PipeDream printed")
    index = spec.graph.index
    dev = np.full(spec.dense.n, -1, dtype=np.int64)
    for a, s in stages.items():
        name = identifier(a, set())
        for x in (name, name + "_bw"):
            if x in index:
                dev[index[x]] = first[s]
    reps = np.ones(spec.dense.D, dtype=np.int64)
    reps[first[:-1]] = factors
    return dev, reps

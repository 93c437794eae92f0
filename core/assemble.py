"""From parsed pieces to IR: nodes and named edges to a Graph (duplicate and unknown node
errors), top-level items to a Spec (one graph, one platform, at most one of the rest).
Shared by the Transformer, the Python builder and the graph importers."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from partdsl.core import ranges
from partdsl.core.errors import PartError, Span, close_names, did_you_mean
from partdsl.core.ir import Graph, Node, Work
from partdsl.core.limits import MAX_EDGES, MAX_NODES, check_count

Edge = tuple[str, "Span | None", str, "Span | None"]  # (from, its span, to, its span)


@dataclass(frozen=True)
class EdgeTensor:
    """`source -> {targets} out SIZE` (or `comm TIME`): a tensor of its own that `source`
    sends to `targets`, on those edges instead of the source's `out`."""

    source: str
    targets: tuple[str, ...]
    out: float | None = None
    comm: float | None = None
    span: Span | None = None


def carriers(nodes: list[Node], tensors: list[EdgeTensor]) -> tuple[list[Node], list[Edge]]:
    """Tarnawski App. B's subdivision: each tensor becomes a carrier node `source~k` (no
    work, colocated with its source, sending the tensor) on the path source -> carrier ->
    each target; the direct edges source -> target are the ones it replaces. A carrier is
    in its source's group and module (plans place it with its layer)."""
    by_name = {nd.name: nd for nd in nodes}
    count: dict[str, int] = {}
    extra: list[Node] = []
    edges: list[Edge] = []
    for t in tensors:
        src = by_name.get(t.source)
        if src is None:
            continue  # assemble_graph reports the unknown node at its edge
        count[t.source] = k = count.get(t.source, 0) + 1
        name = f"{t.source}~{k}"
        extra.append(Node(name, (Work(0.0),), out=t.out, comm=t.comm, backward=src.backward,
                          tensor_of=t.source, span=t.span, group=src.group, module=src.module))
        edges += [(t.source, t.span, name, t.span)] + [(name, t.span, b, t.span) for b in t.targets]
    return extra, edges


def output_tensors(nodes: list[Node], outputs: list[list[str]], readers: dict[str, set[int]],
                   nbytes: Callable[[str], float], span: Span | None) -> tuple[list[Node], list[EdgeTensor]]:
    """For an imported operator with several outputs that other nodes read (a Split, TopK, an
    LSTM's Y and Y_h; torch's `split`, `chunk`): each output is a tensor of its own, sent
    once to each device that reads it (Tarnawski App. B), instead of the sum of all outputs
    to every consumer. `outputs[k]`: node k's output tensors; `readers[t]`: the other nodes
    reading tensor t. The nodes (such a node's own `out` dropped: its outputs are the
    tensors) and the tensors."""
    tensors = []
    for k, outs in enumerate(outputs):
        sent = [(t, sorted(readers[t])) for t in outs if readers.get(t)]
        if len(sent) > 1:
            tensors += [EdgeTensor(nodes[k].name, tuple(nodes[r].name for r in to), nbytes(t), None, span)
                        for t, to in sent]
    senders = {t.source for t in tensors}
    return [replace(nd, out=None) if nd.name in senders else nd for nd in nodes], tensors


def _close_or_known(name: str, names: list[str]) -> str:
    """The close names, else the graph's nodes in the order declared, each family as one
    range (`embed, block[1..12], head`) and a hint to declare the node."""
    close = close_names(name, names)
    if close is not None or not names:
        return close or did_you_mean(name, names)
    listed = ranges.shown(names, 12)
    return f"no node has a name like it; the graph has {listed} (declare it: `node {name} {{ work 1 ms }}`)"


def assemble_graph(name: str, nodes: list[Node], edges: list[Edge], span: Span | None,
                   tensors: list[EdgeTensor] | None = None, measured: str = "") -> Graph:
    """Nodes + named edges (+ edge tensors, as carriers) -> Graph, with duplicate-node and
    unknown-node errors. A tensor's own edges replace the direct ones it was written on."""
    if tensors:
        known = {nd.name for nd in nodes}
        direct = {(t.source, b) for t in tensors if t.source in known for b in t.targets}
        edges = [e for e in edges if (e[0], e[2]) not in direct]
        extra, via = carriers(nodes, tensors)
        nodes, edges = nodes + extra, edges + via
    check_count(len(nodes), MAX_NODES, f"graph '{name}' has too many nodes", span,
                "split the model, or fuse operators before partitioning")
    check_count(len(edges), MAX_EDGES, f"graph '{name}' has too many edges", span,
                "split the model, or fuse operators before partitioning")
    index: dict[str, int] = {}
    for i, nd in enumerate(nodes):
        if nd.name in index:
            first = nodes[index[nd.name]].span
            where = f" (first declared at line {first.line})" if first else ""
            raise PartError(f"node '{nd.name}' is declared twice{where}", nd.span,
                            "give each node a unique name, or use a family like `node layer[1..4]`")
        index[nd.name] = i
    families = {nm.split("[")[0] for nm in index if "[" in nm}
    pairs: dict[tuple[int, int], Span | None] = {}
    for a, sa, b, sb in edges:
        for x, sp in ((a, sa), (b, sb)):
            if x not in index:
                fam = x.split("[")[0]
                members = sorted(int(nm[len(fam) + 1:-1]) for nm in index
                                 if nm.startswith(fam + "[") and nm[len(fam) + 1:-1].isdigit()) if "[" in x else []
                hint = (f"'{x}' is a family; name a member like `{x}[1]` or a range like `{x}[1..4]`"
                        if x in families else
                        f"family {fam} has members {fam}[{members[0]}] .. {fam}[{members[-1]}]" if members else
                        _close_or_known(x, list(index)))
                raise PartError(f"unknown node '{x}' in graph '{name}'", sp, hint)
        if a == b:
            raise PartError(f"graph '{name}' has a cycle: {a} -> {a}", sb, "a node cannot feed itself")
        pairs.setdefault((index[a], index[b]), sb)
    order = sorted(pairs)
    pos = {e: i for i, e in enumerate(order)}
    return Graph(name, tuple(nodes), tuple(order), span, tuple(pairs[e] for e in order),
                 tuple(pos[e] for e in pairs), measured)



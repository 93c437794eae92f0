"""From parsed pieces to IR: nodes and named edges to a Graph (duplicate and unknown node
errors), top-level items to a Spec (one graph, one platform, at most one of the rest).
Shared by the Transformer, the Python builder and the graph importers."""
from __future__ import annotations

from partdsl.core.errors import PartError, Span, did_you_mean
from partdsl.core.ir import Graph, Node
from partdsl.core.limits import MAX_EDGES, MAX_NODES, check_count

Edge = tuple[str, "Span | None", str, "Span | None"]  # (from, its span, to, its span)


def assemble_graph(name: str, nodes: list[Node], edges: list[Edge], span: Span | None) -> Graph:
    """Nodes + named edges -> Graph, with duplicate-node and unknown-node errors."""
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
                        did_you_mean(x, list(index)))
                raise PartError(f"unknown node '{x}' in graph '{name}'", sp, hint)
        if a == b:
            raise PartError(f"graph '{name}' has a cycle: {a} -> {a}", sb, "a node cannot feed itself")
        pairs.setdefault((index[a], index[b]), sb)
    order = sorted(pairs)
    pos = {e: i for i, e in enumerate(order)}
    return Graph(name, tuple(nodes), tuple(order), span, tuple(pairs[e] for e in order),
                 tuple(pos[e] for e in pairs))



"""REGAL's graphs (Paliwal et al.; the 1,000 test graphs behind Archer et al. App. C.2,
deepmind-research/regal): TensorFlow CostGraphDef protocol buffers in text form
(`.pbtxt`), one `node { ... }` block per node.

As Archer et al. read them: a node's work is its `compute_cost`; its tensor is its first
`output_info`'s `size` (they take the lexicographically least output when there are
several), paid as a transfer time (`comm`) wherever it crosses stages; an edge runs from
each `input_info { preceding_node: N }`, and from each `control_input: N` (an order
constraint; in this model it carries the node's tensor too). Node `_SOURCE` (id 0), which
every root names as its control input, is left out. Node id N becomes node `nN`.
"""
from __future__ import annotations

import re
from pathlib import Path

from partdsl.core.assemble import assemble_graph
from partdsl.core.errors import PartError, Span
from partdsl.core.ir import Graph, Node, Work
from partdsl.importers.import_text import read_import_text

TOKEN = re.compile(r'\s*(?:(#[^\n]*)|([A-Za-z_][\w]*)\s*(:)?|(\{)|(\})|("(?:[^"\\]|\\.)*")|([-+\w.]+))')
Message = dict[str, list[object]]


def parse_text_proto(text: str, where: str, span: Span | None = None) -> Message:
    """A protocol buffer in text format as nested dicts: field -> its values in order."""
    stack: list[Message] = [{}]
    key: str | None = None
    pos = 0
    while pos < len(text):
        m = TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip() == "":
                break
            line = text.count("\n", 0, pos) + 1
            raise PartError(f"import: '{where}' line {line}: cannot read {text[pos:pos + 20]!r} as a text protobuf",
                            span, "a REGAL graph is a CostGraphDef in text form: node { name: ... id: ... }")
        pos = m.end()
        comment, name, colon, opened, closed, string, scalar = m.groups()
        if comment:
            continue
        if name is not None and key is None:
            key = name
            if colon is None:  # `name {`: a message follows
                continue
        elif name is not None:  # a bare word as a value (an enum)
            scalar = name
        if opened:
            if key is None:
                raise PartError(f"import: '{where}': a block with no field name", span)
            child: Message = {}
            stack[-1].setdefault(key, []).append(child)
            stack.append(child)
            key = None
        elif closed:
            if len(stack) == 1:
                raise PartError(f"import: '{where}': a '}}' closes nothing", span)
            stack.pop()
        elif string is not None or scalar is not None:
            if key is None:
                raise PartError(f"import: '{where}': a value with no field name", span)
            stack[-1].setdefault(key, []).append(string[1:-1] if string is not None else scalar)
            key = None
    if len(stack) != 1:
        raise PartError(f"import: '{where}': a block is not closed", span, "close each node { ... }")
    return stack[0]


def _number(msg: Message, key: str, default: float = 0.0) -> float:
    values = msg.get(key, [])
    return float(values[0]) if values else default  # type: ignore[arg-type]


def read_regal(path: Path, name: str, span: Span | None = None, options: object = None) -> Graph:
    """importers/formats.py's reader of `regal` (no import options apply)."""
    text = read_import_text(path, span, "a REGAL graph (.pbtxt)")
    return graph_from_costgraph(parse_text_proto(text, str(path), span), name, str(path), span)


def graph_from_costgraph(msg: Message, name: str, where: str, span: Span | None = None) -> Graph:
    nodes: list[Node] = []
    edges: list[tuple[str, Span | None, str, Span | None]] = []
    index: dict[int, int] = {}
    blocks = [b for b in msg.get("node", []) if isinstance(b, dict)]
    try:
        ids = [int(_number(b, "id")) for b in blocks]  # _SOURCE's too: roots name it
    except ValueError as e:
        raise PartError(f"import: '{where}': a node id is not a number ({e})", span) from None
    keep = [(i, b) for i, b in zip(ids, blocks) if b.get("name", [""])[0] != "_SOURCE"]
    if not keep:
        raise PartError(f"import: '{where}' has no nodes", span, "a REGAL graph lists node { ... } blocks")
    for i, b in keep:
        if i in index:
            raise PartError(f"import: '{where}': node id {i} appears twice", span)
        index[i] = len(nodes)
        outputs = [o for o in b.get("output_info", []) if isinstance(o, dict)]
        size = _number(outputs[0], "size") if outputs else 0.0
        nodes.append(Node(name=f"n{i}", work=(Work(_number(b, "compute_cost")),), comm=size))
    known = set(ids)
    for i, b in keep:
        preds = [int(_number(x, "preceding_node")) for x in b.get("input_info", []) if isinstance(x, dict)]
        preds += [int(float(c)) for c in b.get("control_input", [])]  # type: ignore[arg-type]
        for p in dict.fromkeys(preds):
            if p in index:
                edges.append((f"n{p}", None, f"n{i}", None))
            elif p not in known:
                raise PartError(f"import: '{where}': node {i} names node {p} as an input, and there is none", span)
    return assemble_graph(name, nodes, edges, span)

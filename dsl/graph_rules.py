"""The Transformer rules of a `graph` block (dsl/transformer.py composes them): nodes and
their work, families, references, chains with `...` and fans, graph imports."""
from __future__ import annotations

from typing import Any

from lark import Token, v_args
from partdsl.core.assemble import Edge, EdgeTensor, assemble_graph
from partdsl.core.errors import PartError, Span
from partdsl.core.ir import Graph, Node, Work
from partdsl.core.limits import MAX_NODES, check_count
from partdsl.core.quantities import FLOPS, NUMBER, SIZE, TIME
from partdsl.dsl.tokens import Ref, tok_span, unquote


def plain_chain(ends: list[tuple[str, Span]]) -> tuple[str, list[Edge], list[EdgeTensor]]:
    """`a -> b -> c` of plain names (name, span): each to the next (dsl/fast_lines.py reads
    such lines without Lark and calls this too)."""
    return ("edges", [(a, sa, b, sb) for (a, sa), (b, sb) in zip(ends, ends[1:])], [])


def _misplaced_ellipsis(span: Span) -> PartError:
    return PartError("`...` must stand between two members of one family, in increasing order", span,
                     "write e.g. `block[1] -> ... -> block[12]`")


class GraphRules:
    """Mixin of ToIR: one method per graph rule of grammars/part.lark."""

    # ------------------------------------------------------------------ graph
    @v_args(meta=True)
    def plain_name(self, meta: Any, ch: list) -> tuple[list[str], Span]:
        return [str(ch[0])], self.span(meta)

    @v_args(meta=True)
    def indexed_name(self, meta: Any, ch: list) -> tuple[list[str], Span]:
        i = self.need_int(ch[1], "an index")
        return [f"{ch[0]}[{i}]"], self.span(meta)

    @v_args(meta=True)
    def family_name(self, meta: Any, ch: list) -> tuple[list[str], Span]:
        a, b = self.need_int(ch[1], "a range start"), self.need_int(ch[2], "a range end")
        if b < a:
            raise PartError(f"empty range {a}..{b}", self.span(meta), f"write {ch[0]}[{b}..{a}]")
        check_count(b - a + 1, MAX_NODES, f"the range {ch[0]}[{a}..{b}] has too many members", self.span(meta),
                    "a range names members of a family: check its bounds")
        return [f"{ch[0]}[{i}]" for i in range(a, b + 1)], self.span(meta)

    @v_args(meta=True)
    def work_item(self, meta: Any, ch: list) -> Work:
        t = self.need(ch[0], TIME, "work")
        on, batch = "", 1
        for x in ch[1:]:
            if isinstance(x, Token):
                on = str(x)
                self.class_refs.append((on, tok_span(self.file, x)))
            elif x is not None:
                batch = self.need_batch(x)
        return Work(t, on, batch)

    def work(self, ch: list) -> tuple[str, Any]:
        return ("work", tuple(ch))

    def params(self, ch: list) -> tuple[str, Any]:
        return ("params", self.need(ch[0], SIZE, "params"))

    def share_item(self, ch: list) -> tuple[str, float]:
        return (str(ch[0]), self.need(ch[1], SIZE, "shares"))

    def shares(self, ch: list) -> tuple[str, Any]:
        return ("shares", tuple(ch))

    def stash(self, ch: list) -> tuple[str, Any]:
        return ("stash", self.need(ch[0], SIZE, "stash"))

    def out(self, ch: list) -> tuple[str, Any]:
        return ("out", self.need(ch[0], SIZE, "out"))

    def comm(self, ch: list) -> tuple[str, Any]:
        return ("comm", self.need(ch[0], TIME, "comm"))

    def flops(self, ch: list) -> tuple[str, Any]:
        return ("flops", self.need(ch[0], FLOPS, "flops"))

    def rows(self, ch: list) -> tuple[str, Any]:
        n = self.need(ch[0], NUMBER, "rows")
        if n <= 0:
            raise PartError(f"rows must be positive, got {n:g}", ch[0].span,
                            "rows: the rows of the operator's matrix product per sample, e.g. rows 4096 (its tokens)")
        return ("rows", n)

    def dtype(self, ch: list) -> tuple[str, Any]:
        from partdsl.importers.cost_model import DTYPES

        name = str(ch[0])
        if name not in DTYPES:
            raise PartError(f"unknown dtype '{name}'", tok_span(self.file, ch[0]), "dtypes: " + ", ".join(DTYPES))
        return ("dtype", name)

    def only(self, ch: list) -> tuple[str, Any]:
        self.class_refs += [(str(x), tok_span(self.file, x)) for x in ch]
        return ("only", tuple(str(x) for x in ch))

    def forbid_classes(self, ch: list) -> tuple[str, Any]:
        self.class_refs += [(str(x), tok_span(self.file, x)) for x in ch]
        return ("forbid", tuple(str(x) for x in ch))

    def group(self, ch: list) -> tuple[str, Any]:
        return ("group", str(ch[0]))

    def module(self, ch: list) -> tuple[str, Any]:
        from partdsl.dsl.tokens import unquote

        return ("module", unquote(ch[0], self.file))

    def backward(self, ch: list) -> tuple[str, Any]:
        return ("backward", True)

    @v_args(meta=True)
    def node_decl(self, meta: Any, ch: list) -> list[Node]:
        names, sp = ch[0]
        props: dict[str, Any] = {}
        for key, val in (x for x in ch[1:] if isinstance(x, tuple)):
            if key in props and key != "work":
                raise PartError(f"'{key}' is given twice for node {names[0]}", sp)
            props[key] = props.get("work", ()) + val if key == "work" else val
        return [Node(name=nm, span=sp, **props) for nm in names]

    @v_args(meta=True)
    def ref_plain(self, meta: Any, ch: list) -> Ref:
        return Ref((str(ch[0]),), self.span(meta))

    @v_args(meta=True)
    def ref_index(self, meta: Any, ch: list) -> Ref:
        i = self.need_int(ch[1], "an index")
        return Ref((f"{ch[0]}[{i}]",), self.span(meta), str(ch[0]), i)

    @v_args(meta=True)
    def ref_range(self, meta: Any, ch: list) -> Ref:
        names, sp = self.family_name(meta, ch)
        return Ref(tuple(names), sp, str(ch[0]))

    @v_args(meta=True)
    def fan(self, meta: Any, ch: list) -> tuple[str, list[Ref]]:
        return ("fan", ch)

    @v_args(meta=True)
    def ellipsis(self, meta: Any, ch: list) -> tuple[str, Span]:
        return ("...", self.span(meta))

    @v_args(meta=True)
    def tensor_out(self, meta: Any, ch: list) -> tuple[str, float, Span]:
        return ("out", self.need(ch[0], SIZE, "out"), self.span(meta))

    @v_args(meta=True)
    def tensor_comm(self, meta: Any, ch: list) -> tuple[str, float, Span]:
        return ("comm", self.need(ch[0], TIME, "comm"), self.span(meta))

    @v_args(meta=True)
    def chain(self, meta: Any, ch: list) -> tuple[str, list, list[EdgeTensor]]:
        if isinstance(ch[-1], tuple) and ch[-1][0] in ("out", "comm"):
            return self.sized_hop(meta, ch[:-1], ch[-1])
        if all(type(e) is Ref and len(e.names) == 1 for e in ch):  # plain names: each to the next
            return plain_chain([(e.names[0], e.span) for e in ch])
        eps: list = []
        for i, e in enumerate(ch):
            if isinstance(e, tuple) and e[0] == "...":
                prev, nxt = (ch[i - 1] if i else None), (ch[i + 1] if i + 1 < len(ch) else None)
                ok = (isinstance(prev, Ref) and isinstance(nxt, Ref) and prev.index is not None
                      and nxt.index is not None and prev.family == nxt.family and prev.index < nxt.index)
                if not ok and self._two_families(prev, nxt, e[1]):
                    continue  # graph_block names the mistake once it knows the graph's nodes
                if not ok:
                    raise _misplaced_ellipsis(e[1])
                check_count(nxt.index - prev.index - 1, MAX_NODES, f"`...` between {prev.names[0]} and "
                            f"{nxt.names[0]} stands for too many members", e[1], "check the two indices")
                mid = tuple(f"{prev.family}[{j}]" for j in range(prev.index + 1, nxt.index))
                if mid:
                    eps.append(Ref(mid, e[1], prev.family))
            else:
                eps.append(e)
        edges: list[Edge] = []
        prev_lasts: list[tuple[str, Span]] | None = None
        for e in eps:
            refs = e[1] if isinstance(e, tuple) else [e]
            for r in refs:  # a range is a chain of its members
                edges += [(a, r.span, b, r.span) for a, b in zip(r.names, r.names[1:])]
            firsts = [(r.names[0], r.span) for r in refs]
            if prev_lasts is not None:
                edges += [(a, sa, b, sb) for a, sa in prev_lasts for b, sb in firsts]
            prev_lasts = [(r.names[-1], r.span) for r in refs]
        return ("edges", edges, [])

    def sized_hop(self, meta: Any, ch: list, size: tuple[str, float, Span]) -> tuple[str, list, list[EdgeTensor]]:
        """`a -> {b, c} out 4 MB`: one hop; each source node sends one tensor of that size to
        all the targets (Tarnawski App. B's per-edge costs, docs/language.md)."""
        kind, value, sp = size
        ends = [[e] if isinstance(e, Ref) else e[1] if isinstance(e, tuple) and e[0] == "fan" else None for e in ch]
        if len(ch) != 2 or any(e is None or any(len(r.names) != 1 for r in e) for e in ends):
            raise PartError(f"a tensor size (`{kind} ...`) belongs to one hop between named nodes", sp,
                            f"write the sized hop on its own, e.g. `a -> {{b, c}} {kind} ...`, and the rest of "
                            "the chain without it")
        targets = tuple(r.names[0] for r in ends[1])
        edges = [(a.names[0], a.span, b.names[0], b.span) for a in ends[0] for b in ends[1]]
        span = self.span(meta)
        return ("edges", edges, [EdgeTensor(a.names[0], targets, value if kind == "out" else None,
                                            value if kind == "comm" else None, span) for a in ends[0]])

    def _two_families(self, prev: Any, nxt: Any, span: Span) -> bool:
        """`blok[1] -> ... -> block[12]`: most likely a misspelt member, which only the graph's
        nodes tell. Kept for graph_block (the chain runs prev -> nxt meanwhile)."""
        if not (isinstance(prev, Ref) and isinstance(nxt, Ref) and prev.index is not None
                and nxt.index is not None and prev.family != nxt.family):
            return False
        self.__dict__.setdefault("_loose_ellipses", []).append(span)
        return True

    @v_args(meta=True)
    def measured(self, meta: Any, ch: list) -> tuple[str, str, Span]:
        """`graph g measured "..." {`: where the graph's given times were measured (part check
        says it). In the header, where no node name can stand, so no node name is taken."""
        return ("measured", unquote(ch[0], self.file), self.span(meta))

    @v_args(meta=True)
    def graph_block(self, meta: Any, ch: list) -> Graph:
        loose, self.__dict__["_loose_ellipses"] = self.__dict__.get("_loose_ellipses", []), []
        name = str(ch[0])
        nodes: list[Node] = []
        edges: list[Edge] = []
        tensors: list[EdgeTensor] = []
        measured = ""
        for x in ch[1:]:
            if isinstance(x, list):
                nodes += x
            elif isinstance(x, tuple) and x[0] == "edges":
                edges += x[1]
                tensors += x[2]
            elif isinstance(x, tuple) and x[0] == "measured":  # in the header: `graph g measured "..." {`
                measured = x[1]
        # an unknown member is named here
        graph = assemble_graph(name, nodes, edges, self.span(meta), tensors, measured)
        if loose:
            raise _misplaced_ellipsis(loose[0])
        return graph

    @v_args(meta=True)
    def import_format(self, meta: Any, ch: list) -> str:
        return "-".join(str(x) for x in ch)

    @v_args(meta=True)
    def graph_import(self, meta: Any, ch: list) -> Graph:
        from partdsl.importers.graph_formats import import_graph

        name, path_tok = str(ch[0]), ch[1]
        fmt = ch[2] if len(ch) > 2 else None
        path = self.base / unquote(path_tok, self.file)
        return import_graph(path, fmt, name=name, span=tok_span(self.file, path_tok), options=self.imports)

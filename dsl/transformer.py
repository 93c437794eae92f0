"""Lark Transformer: parse tree -> typed IR (core/ir.py). One method per grammar rule.

Quantities are checked for dimension where they are used; params are resolved in
document order (declare before use) with command-line overrides applied at the
declaration. Indexed families (`node block[1..12]`), chains (`a -> b[1..3] -> {c, d}`),
and `...` between two members of a family are expanded here.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lark import Token, Transformer, v_args

from partdsl.core.errors import PartError, Span, did_you_mean
from partdsl.core.limits import MAX_BATCH, MAX_DEVICES, MAX_NODES, MAX_SUBGRAPHS, check_count
from partdsl.core.ir import (
    Constraints,
    DeviceClass,
    Graph,
    Link,
    Node,
    Objective,
    Platform,
    SolveOptions,
    Target,
    Work,
)
from partdsl.dsl.assemble import Edge, assemble_graph
from partdsl.core.quantities import (
    BANDWIDTH,
    EXAMPLES,
    FLOPS,
    FRACTION,
    NUMBER,
    SIZE,
    TIME,
    Quantity,
    make_quantity,
)


@dataclass(frozen=True)
class Q:
    """A quantity with the place it was written."""

    q: Quantity
    span: Span
    unit: str | None = None  # as written, for options that keep their own unit (time limits)
    number: float | None = None


@dataclass(frozen=True)
class Ref:
    """A reference to one node, or a family range (expanded as a chain)."""

    names: tuple[str, ...]
    span: Span
    family: str | None = None
    index: int | None = None


def _tok_span(file: str, t: Token) -> Span:
    return Span(file, t.line or 0, t.column or 0, t.end_line, t.end_column)


class ToIR(Transformer):
    def __init__(self, file: str, overrides: dict[str, Quantity | str] | None = None) -> None:
        super().__init__()
        self.file = file
        self.base = Path(file).parent if file not in ("<spec>", "<string>") else Path.cwd()
        self.overrides = dict(overrides or {})
        self.values: dict[str, Quantity | str] = {}
        self.param_order: list[tuple[str, Quantity | str]] = []
        self.class_refs: list[tuple[str, Span]] = []  # device classes named by nodes
        self.block_spans: dict[type, list[Span]] = {}  # `subject to` and `solve` blocks, in order

    # ------------------------------------------------------------------ helpers
    def span(self, meta: Any) -> Span:
        return Span(self.file, getattr(meta, "line", 0), getattr(meta, "column", 0),
                    getattr(meta, "end_line", None), getattr(meta, "end_column", None))

    def need(self, x: Q, dim: str, what: str) -> float:
        if x.q.dim != dim:
            got = "a plain number" if x.q.dim == NUMBER else f"a {x.q.dim}"
            raise PartError(f"{what} needs a {dim}, got {got} ({x.q})", x.span,
                            f"write e.g. `{what} {EXAMPLES[dim]}`")
        return x.q.value

    def need_int(self, x: Q, what: str, lo: int = 0) -> int:
        v = self.need(x, NUMBER, what)
        if not float(v).is_integer() or v < lo:
            raise PartError(f"{what} needs a whole number >= {lo}, got {v:g}", x.span)
        return int(v)

    def need_batch(self, x: Q) -> int:
        b = self.need_int(x, "batch", 1)
        check_count(b, MAX_BATCH, "batch is too large", x.span, "a batch of samples: check the number")
        return b

    def need_fraction(self, x: Q, what: str) -> float:
        if x.q.dim == FRACTION or (x.q.dim == NUMBER and 0 <= x.q.value < 1):
            return x.q.value
        raise PartError(f"{what} needs a fraction, got {x.q}", x.span, f"write e.g. `{what} 1%` or `{what} 0.01`")

    # ------------------------------------------------------------------ params
    @v_args(meta=True)
    def lit_quantity(self, meta: Any, ch: list) -> Q:
        number, unit = ch[0], (str(ch[1]) if len(ch) > 1 else None)
        return Q(make_quantity(float(number), unit), self.span(meta), unit, float(number))

    @v_args(meta=True)
    def ref_quantity(self, meta: Any, ch: list) -> Q:
        name, unit = str(ch[0]), (str(ch[1]) if len(ch) > 1 else None)
        sp = self.span(meta)
        if name not in self.values:
            raise PartError(f"unknown name '{name}'", sp,
                            did_you_mean(name, list(self.values)) + " (params are declared with "
                            f"`param {name} = ...` before they are used)")
        val = self.values[name]
        if isinstance(val, str):
            raise PartError(f"param '{name}' is a string, not a number", sp)
        if unit is not None:
            if val.dim != NUMBER:
                raise PartError(f"param '{name}' already has a unit ({val}); do not add '{unit}'", sp)
            return Q(make_quantity(val.value, unit), sp)
        return Q(val, sp)

    @v_args(meta=True)
    def string_value(self, meta: Any, ch: list) -> str:
        return _unquote(ch[0], self.file)

    @v_args(meta=True)
    def param_decl(self, meta: Any, ch: list) -> None:
        name = str(ch[0])
        val = ch[1].q if isinstance(ch[1], Q) else ch[1]
        if name in self.values:
            raise PartError(f"param '{name}' is declared twice", self.span(meta))
        if name in self.overrides:
            new = self.overrides.pop(name)
            if isinstance(val, Quantity) and isinstance(new, Quantity) and new.dim != val.dim:
                if new.dim == NUMBER:
                    new = Quantity(make_quantity(new.value, _canon_unit(val.dim)).value, val.dim)
                else:
                    raise PartError(f"-D {name}: the spec declares a {val.dim}, the override is a "
                                    f"{new.dim} ({new})", self.span(meta),
                                    f"write e.g. -D {name}={EXAMPLES[val.dim].replace(' ', '')}")
            val = new
        self.values[name] = val
        self.param_order.append((name, val))
        return None

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
                self.class_refs.append((on, _tok_span(self.file, x)))
            elif x is not None:
                batch = self.need_batch(x)
        return Work(t, on, batch)

    def work(self, ch: list) -> tuple[str, Any]:
        return ("work", tuple(ch))

    def params(self, ch: list) -> tuple[str, Any]:
        return ("params", self.need(ch[0], SIZE, "params"))

    def out(self, ch: list) -> tuple[str, Any]:
        return ("out", self.need(ch[0], SIZE, "out"))

    def comm(self, ch: list) -> tuple[str, Any]:
        return ("comm", self.need(ch[0], TIME, "comm"))

    def flops(self, ch: list) -> tuple[str, Any]:
        return ("flops", self.need(ch[0], FLOPS, "flops"))

    def dtype(self, ch: list) -> tuple[str, Any]:
        from partdsl.dsl.cost_model import DTYPES

        name = str(ch[0])
        if name not in DTYPES:
            raise PartError(f"unknown dtype '{name}'", _tok_span(self.file, ch[0]), "dtypes: " + ", ".join(DTYPES))
        return ("dtype", name)

    def only(self, ch: list) -> tuple[str, Any]:
        self.class_refs += [(str(x), _tok_span(self.file, x)) for x in ch]
        return ("only", tuple(str(x) for x in ch))

    def forbid_classes(self, ch: list) -> tuple[str, Any]:
        self.class_refs += [(str(x), _tok_span(self.file, x)) for x in ch]
        return ("forbid", tuple(str(x) for x in ch))

    def group(self, ch: list) -> tuple[str, Any]:
        return ("group", str(ch[0]))

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
        span = Span(sp.file, sp.line, sp.column, sp.end_line, sp.end_column)
        return [Node(name=nm, span=span, **props) for nm in names]

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

    def chain(self, ch: list) -> tuple[str, list]:
        eps: list = []
        for i, e in enumerate(ch):
            if isinstance(e, tuple) and e[0] == "...":
                prev, nxt = (ch[i - 1] if i else None), (ch[i + 1] if i + 1 < len(ch) else None)
                ok = (isinstance(prev, Ref) and isinstance(nxt, Ref) and prev.index is not None
                      and nxt.index is not None and prev.family == nxt.family and prev.index < nxt.index)
                if not ok:
                    raise PartError("`...` must stand between two members of one family, in "
                                    "increasing order", e[1], "write e.g. `block[1] -> ... -> block[12]`")
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
        return ("edges", edges)

    @v_args(meta=True)
    def graph_block(self, meta: Any, ch: list) -> Graph:
        name = str(ch[0])
        nodes: list[Node] = []
        edges: list[Edge] = []
        for x in ch[1:]:
            if isinstance(x, list):
                nodes += x
            elif isinstance(x, tuple) and x[0] == "edges":
                edges += x[1]
        return assemble_graph(name, nodes, edges, self.span(meta))

    @v_args(meta=True)
    def import_format(self, meta: Any, ch: list) -> str:
        return "-".join(str(x) for x in ch)

    @v_args(meta=True)
    def graph_import(self, meta: Any, ch: list) -> Graph:
        from partdsl.dsl.graph_formats import import_graph

        name, path_tok = str(ch[0]), ch[1]
        fmt = ch[2] if len(ch) > 2 else None
        path = self.base / _unquote(path_tok, self.file)
        return import_graph(path, fmt, name=name, span=_tok_span(self.file, path_tok))

    # ------------------------------------------------------------------ platform
    def memory(self, ch: list) -> tuple[str, Any]:
        return ("memory", self.need(ch[0], SIZE, "memory"))

    def host_link(self, ch: list) -> tuple[str, Any]:
        return ("link", self.need(ch[0], BANDWIDTH, "link"))

    def host(self, ch: list) -> tuple[str, Any]:
        return ("host", True)

    def speed(self, ch: list) -> tuple[str, Any]:
        return ("speed", self.need(ch[0], NUMBER, "speed"))

    def batches(self, ch: list) -> tuple[str, Any]:
        return ("batches", tuple(sorted({self.need_batch(x) for x in ch})))

    def profile_field(self, ch: list) -> tuple[str, float, Any]:
        return (str(ch[0]), ch[1], _tok_span(self.file, ch[0]))

    def profile(self, ch: list) -> tuple[str, Any]:
        from partdsl.dsl.cost_model import check_field, names

        name = str(ch[0])
        if name not in names():
            raise PartError(f"unknown device profile '{name}'", _tok_span(self.file, ch[0]),
                            did_you_mean(name, names()) or "profiles: " + ", ".join(names()))
        fields = tuple(check_field(key, q.q, sp) for key, q, sp in ch[1:] if isinstance(q, Q))
        return ("profile", (name, fields))

    @v_args(meta=True)
    def device_decl(self, meta: Any, ch: list) -> DeviceClass:
        name = str(ch[0])
        count = 1
        props: dict[str, Any] = {}
        for x in ch[1:]:
            if isinstance(x, Q):
                count = self.need_int(x, "a device count", 0)  # 0: declared, with no devices
                check_count(count, MAX_DEVICES, f"device class '{name}' has too many devices", x.span,
                            "check the count (a param, or -D)")
            elif isinstance(x, tuple):
                if x[0] in props:
                    raise PartError(f"'{x[0]}' is given twice for device {name}", self.span(meta))
                props[x[0]] = x[1]
        if "profile" in props:
            props["profile"], props["profile_fields"] = props["profile"]
        return DeviceClass(name=name, count=count, span=self.span(meta), **props)

    @v_args(meta=True)
    def dev_class(self, meta: Any, ch: list) -> Target:
        return Target(str(ch[0]), self.span(meta))

    @v_args(meta=True)
    def dev_index(self, meta: Any, ch: list) -> Target:
        return Target(f"{ch[0]}[{self.need_int(ch[1], 'a device index')}]", self.span(meta))

    @v_args(meta=True)
    def link_decl(self, meta: Any, ch: list) -> Link:
        a, op, b, bw = ch
        return Link(a.name, b.name, self.need(bw, BANDWIDTH, "link"), str(op) == "->", self.span(meta))

    @v_args(meta=True)
    def platform_decl(self, meta: Any, ch: list) -> Platform:
        classes = [x for x in ch if isinstance(x, DeviceClass)]
        seen: dict[str, DeviceClass] = {}
        for k in classes:
            if k.name in seen:
                raise PartError(f"device class '{k.name}' is declared twice", k.span)
            seen[k.name] = k
        return Platform.of(classes, tuple(x for x in ch if isinstance(x, Link)), self.span(meta))

    # ------------------------------------------------------------------ objective
    def training(self, ch: list) -> tuple[str, str]:
        return ("training", str(ch[0]) if ch else "pipedream")

    def overlap(self, ch: list) -> tuple[str, str]:
        return ("overlap", str(ch[0]) if ch else "simplex")

    @v_args(meta=True)
    def min_bottleneck(self, meta: Any, ch: list) -> Objective:
        return Objective("bottleneck", span=self.span(meta), **dict(ch))

    @v_args(meta=True)
    def min_latency(self, meta: Any, ch: list) -> Objective:
        by = str(ch[0]) if ch else "subgraphs"
        return Objective("task_latency" if by == "tasks" else "latency", span=self.span(meta))

    @v_args(meta=True)
    def max_throughput(self, meta: Any, ch: list) -> Objective:
        batch = self.need_batch(ch[0]) if ch else 1
        split = ch[1] if len(ch) > 1 else 1
        if batch % split:
            raise PartError(f"split {split} does not divide batch {batch}", self.span(meta),
                            f"pieces are whole multiples of batch / split: use a divisor of {batch}, e.g. "
                            f"`split {next(k for k in (4, 2, 1) if batch % k == 0)}`")
        return Objective("throughput", batch=batch, split=split, span=self.span(meta))

    def split(self, ch: list) -> int:
        k = self.need_int(ch[0], "split", 1)
        check_count(k, MAX_BATCH, "split is too large", ch[0].span, "pieces of batch / split samples: e.g. `split 4`")
        return k

    # ------------------------------------------------------------------ constraints
    def acyclic(self, ch: list) -> tuple:
        return ("acyclic", True)

    def contiguous(self, ch: list) -> tuple:
        return ("contiguous", True)

    def memory_mode(self, ch: list) -> tuple:
        return ("memory", str(ch[0]))

    @v_args(meta=True)
    def colocate_groups(self, meta: Any, ch: list) -> tuple:
        if ch and str(ch[0]) not in ("group", "colorClass"):
            raise PartError(f"cannot colocate by '{ch[0]}'", self.span(meta),
                            "write `colocate` or `colocate by group` (imports map colorClass to group)")
        return ("colocate", True)

    def _targets(self, refs: list[Ref]) -> tuple[Target, ...]:
        return tuple(Target(nm, r.span) for r in refs for nm in r.names)

    def colocate_nodes(self, ch: list) -> tuple:
        return ("colocate_sets", (self._targets(ch),))

    def pin(self, ch: list) -> tuple:
        return ("pins", tuple((t, tuple(ch[1:])) for t in self._targets([ch[0]])))

    def forbid(self, ch: list) -> tuple:
        return ("forbids", tuple((t, tuple(ch[1:])) for t in self._targets([ch[0]])))

    def stages(self, ch: list) -> tuple:
        return ("max_stages", self.need_int(ch[0], "stages", 1))

    def subgraphs(self, ch: list) -> tuple:
        q = self.need_int(ch[0], "subgraphs", 1)
        check_count(q, MAX_SUBGRAPHS, "subgraphs per accelerator", ch[0].span,
                    "q contiguous subgraphs per accelerator (Tarnawski sec. 4.1): a small number, e.g. 2")
        return ("subgraphs", q)

    @v_args(meta=True)
    def constraints_decl(self, meta: Any, ch: list) -> Constraints:
        self.block_spans.setdefault(Constraints, []).append(self.span(meta))
        acc: dict[str, Any] = {}
        for key, val in ch:
            acc[key] = acc.get(key, ()) + val if key in ("colocate_sets", "pins", "forbids") else val
        return Constraints(**acc)

    # ------------------------------------------------------------------ solve
    def time_opt(self, ch: list) -> tuple:
        ms = self.need(ch[0], TIME, "time")
        return ("time_limit", ch[0].number if ch[0].unit == "s" else ms / 1e3)

    def gap_opt(self, ch: list) -> tuple:
        g = self.need_fraction(ch[0], "gap")
        if not 0 <= g < 1:
            raise PartError(f"gap {ch[0].q.value:g} is not a fraction in [0, 1)", ch[0].span, "write e.g. `gap 1%`")
        return ("gap", g)

    def seed_opt(self, ch: list) -> tuple:
        return ("seed", self.need_int(ch[0], "seed"))

    def threads_opt(self, ch: list) -> tuple:
        return ("threads", self.need_int(ch[0], "threads", 1))

    def method_opt(self, ch: list) -> tuple:
        return ("options", ((str(ch[0]), self.need(ch[1], NUMBER, str(ch[0]))),))

    def solve_method(self, ch: list) -> tuple:
        return ("method", str(ch[0]))

    def solve_with(self, ch: list) -> tuple:
        return ("solver", str(ch[0]))

    @v_args(meta=True)
    def solve_decl(self, meta: Any, ch: list) -> SolveOptions:
        self.block_spans.setdefault(SolveOptions, []).append(self.span(meta))
        acc: dict[str, Any] = {}
        for key, val in ch:
            acc[key] = acc.get(key, ()) + val if key == "options" else val
        return SolveOptions(**acc)


def _canon_unit(dim: str) -> str | None:
    return {TIME: "ms", SIZE: "B", BANDWIDTH: "B/s", FRACTION: "%"}.get(dim)


def _unquote(tok: Any, file: str) -> str:
    """A "string" token's text (JSON escapes), or a located error for a bad one."""
    import json

    try:
        return json.loads(str(tok))
    except ValueError as e:  # a control character or a bad escape inside the quotes
        line, col = getattr(tok, "line", 0), getattr(tok, "column", 0)
        raise PartError(f"bad string {str(tok)[:40]}: {getattr(e, 'msg', e)}",
                        Span(file, line, col, getattr(tok, "end_line", None), getattr(tok, "end_column", None)),
                        'write a plain path in double quotes, e.g. "models/bert.json"') from None



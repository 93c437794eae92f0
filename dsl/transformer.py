"""Lark Transformer: parse tree -> typed IR (core/ir.py). One method per grammar rule.

Quantities are checked for dimension where they are used; params are resolved in
document order (declare before use) with command-line overrides applied at the
declaration. Indexed families (`node block[1..12]`), chains (`a -> b[1..3] -> {c, d}`),
and `...` between two members of a family are expanded here.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from lark import Transformer, v_args
from partdsl.core.errors import PartError, Span, did_you_mean
from partdsl.core.limits import MAX_BATCH, check_count
from partdsl.core.quantities import EXAMPLES, FRACTION, NUMBER, Quantity, make_quantity
from partdsl.dsl.graph_rules import GraphRules
from partdsl.dsl.spec_rules import SpecRules
from partdsl.dsl.tokens import Q, canon_unit, unquote
from partdsl.importers.import_options import ImportOptions


class ToIR(GraphRules, SpecRules, Transformer):
    def __init__(self, file: str, overrides: dict[str, Quantity | str] | None = None,
                 imports: ImportOptions = ImportOptions()) -> None:
        super().__init__()
        self.file = file
        self.imports = imports
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
        return unquote(ch[0], self.file)

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
                    new = Quantity(make_quantity(new.value, canon_unit(val.dim)).value, val.dim)
                else:
                    raise PartError(f"-D {name}: the spec declares a {val.dim}, the override is a "
                                    f"{new.dim} ({new})", self.span(meta),
                                    f"write e.g. -D {name}={EXAMPLES[val.dim].replace(' ', '')}")
            val = new
        self.values[name] = val
        self.param_order.append((name, val))
        return None









"""What the Transformer rules share: a quantity with where it was written (Q), a node
reference (Ref), a token's span, a string token's text."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lark import Token
from partdsl.core.errors import PartError, Span
from partdsl.core.quantities import BANDWIDTH, FRACTION, SIZE, TIME, Quantity


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


def tok_span(file: str, t: Token) -> Span:
    return Span(file, t.line or 0, t.column or 0, t.end_line, t.end_column)


def canon_unit(dim: str) -> str | None:
    return {TIME: "ms", SIZE: "B", BANDWIDTH: "B/s", FRACTION: "%"}.get(dim)


def unquote(tok: Any, file: str) -> str:
    """A "string" token's text (JSON escapes), or a located error for a bad one."""
    import json

    try:
        return json.loads(str(tok))
    except ValueError as e:  # a control character or a bad escape inside the quotes
        line, col = getattr(tok, "line", 0), getattr(tok, "column", 0)
        raise PartError(f"bad string {str(tok)[:40]}: {getattr(e, 'msg', e)}",
                        Span(file, line, col, getattr(tok, "end_line", None), getattr(tok, "end_column", None)),
                        'write a plain path in double quotes, e.g. "models/bert.json"') from None

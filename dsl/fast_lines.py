"""A fast path for the two line shapes large graph blocks are made of (issue 29, parsing at
scale): a one-line `node NAME { ... }` whose quantities are literal numbers, and a chain of
plain names `a -> b -> c`.

Each such line is turned into IR by the Transformer's own rule methods (dsl/graph_rules.py;
a chain by `plain_chain`, which the `chain` rule calls for plain names too), so it means
what the grammar says; the rest of the text, with those lines blanked, goes
through Lark. The lines' items are spliced into the graph block's children in document
order, and only if every one of them stands between two items of a graph block. Anything
else (a line elsewhere, a line inside a multi-line item, a syntax error in the rest) makes
`splice` answer None, and the caller parses the whole text with Lark. A line whose rule
raises (a unit of the wrong kind, a bad dtype, a property given twice) is left to Lark, which
raises the same error with its caret.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from types import MethodType, SimpleNamespace
from typing import Any, Callable

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedInput
from partdsl.core.errors import PartError, Span
from partdsl.dsl.graph_rules import plain_chain

_W = r"[ \t\f\r]"
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_NUM = r"(?:[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?)"
_END = rf"{_W}*(?:(?:#|//)[^\n]*)?$"  # blanks and a comment to the end of the line
PROPS = ("work", "params", "stash", "out", "comm", "flops", "rows", "dtype", "only", "not", "group", "module",
         "backward")


@dataclass(slots=True)
class At:
    """Where a rule's text is (a stand-in for Lark's Meta): 1-based, end exclusive."""

    line: int
    column: int
    end_line: int
    end_column: int


class Patterns:
    """The line shapes, built from the grammar's own UNIT terminal and keywords."""

    def __init__(self, parser: Lark) -> None:
        unit = parser.get_terminal("UNIT").pattern.value
        self.keywords = frozenset(t.pattern.value for t in parser.terminals
                                  if t.pattern.type == "str" and t.pattern.value.isidentifier())
        self.unit = re.compile(unit)
        self.node = re.compile(rf"{_W}*node{_W}+({_NAME}){_W}*\{{([^{{}}\n]*)\}}{_END}")
        self.chain = re.compile(rf"{_W}*{_NAME}(?:{_W}*->{_W}*{_NAME})+{_W}*;?{_END}")
        self.name = re.compile(_NAME)
        self.gap = re.compile(rf"(?:{_W}|;)*")
        self.prop = re.compile(rf"({'|'.join(PROPS)})(?![A-Za-z0-9_])")
        self.qty = re.compile(rf"{_W}*({_NUM})(?:{_W}*({unit}))?")
        self.on = re.compile(rf"{_W}+on{_W}+({_NAME})")
        self.batch = re.compile(rf"{_W}+batch(?![A-Za-z0-9_])")
        self.word = re.compile(rf"{_W}*({_NAME})")
        self.string = re.compile(rf'{_W}*("(?:[^"\\\n]|\\.)*")')
        self.more = re.compile(rf"{_W}*,")
        self.stop = re.compile(rf"{_W}|;|$")
        self.comment = re.compile(r"(#|//).*")

    def plain(self, word: str) -> bool:
        """A name Lark's lexer surely reads as NAME: not a keyword, not a unit."""
        return word not in self.keywords and self.unit.fullmatch(word) is None


@lru_cache(maxsize=1)
def patterns(parser: Lark) -> Patterns:
    return Patterns(parser)


Rule = Callable[[list], tuple[str, Any]]
RULES = ("lit_quantity", "work_item", "work", "params", "stash", "out", "comm", "flops", "rows", "dtype", "group",
         "module", "only", "forbid_classes", "backward", "node_decl")


def bound_rules(tr: Any) -> SimpleNamespace:
    """The Transformer's rule methods, bound once: Lark's v_args wrapper builds a new wrapper
    on every attribute access, which cost more than the parse itself at 100,000 nodes."""
    out = {}
    for name in RULES:
        f = getattr(type(tr), name)
        out[name] = MethodType(getattr(f, "base_func", f), tr)
    return SimpleNamespace(**out)


class Reader:
    """Reads lines with `Patterns`: tokens and quantities carry Lark's positions; a shape it
    does not take raises ValueError."""

    def __init__(self, tr: Any, pat: Patterns) -> None:
        self.tr, self.pat, self.rule = tr, pat, bound_rules(tr)
        r = self.rule
        self.props_of: dict[str, Callable[[int], tuple[tuple[str, Any], int]]] = {
            "work": self.work, "backward": lambda p: (r.backward([]), p),
            "params": lambda p: self.one(r.params, p), "stash": lambda p: self.one(r.stash, p),
            "out": lambda p: self.one(r.out, p),
            "comm": lambda p: self.one(r.comm, p), "flops": lambda p: self.one(r.flops, p),
            "rows": lambda p: self.one(r.rows, p),
            "dtype": lambda p: self.word(r.dtype, p), "group": lambda p: self.word(r.group, p),
            "only": lambda p: self.listed(r.only, p), "not": lambda p: self.listed(r.forbid_classes, p),
            "module": self.string,
        }
        self.text, self.line = "", 0
        self.bodies: dict[str, tuple[list[tuple[str, Any]], list[tuple[str, int, int]]]] = {}
        self.plain: dict[str, bool] = {}  # Patterns.plain of the names met so far

    def read(self, text: str, line: int) -> Any | None:
        """One line -> the item its rule gives (a list of Nodes, or ("edges", ...)), or None
        when the line is not one of the two shapes or its rule raises (Lark then reads it)."""
        self.text, self.line = text, line
        pat, r = self.pat, self.rule
        refs = len(self.tr.class_refs)
        try:
            if text.lstrip(" \t\f\r")[:4] == "node" and (m := pat.node.match(text)):
                a, b = m.span(1)  # plain_name's ([name], span), built here (no Token, no Meta)
                named = ([self.name(m.group(1))], Span(self.tr.file, line, a + 1, line, b + 1))
                return r.node_decl(None, [named] + self.props(*m.span(2)))
            if "->" in text and pat.chain.match(text):  # the chain rule's plain names, without Refs
                code = pat.comment.sub("", text) if "#" in text or "//" in text else text
                file = self.tr.file
                return plain_chain([(self.name(w.group()), Span(file, line, w.start() + 1, line, w.end() + 1))
                                    for w in pat.name.finditer(code)])
        except (ValueError, PartError):
            del self.tr.class_refs[refs:]
        return None

    def at(self, a: int, b: int) -> At:
        return At(self.line, a + 1, self.line, b + 1)

    def name(self, word: str) -> str:
        """`word`, if Lark's lexer surely reads it as a NAME; else ValueError."""
        if (plain := self.plain.get(word)) is None:
            plain = self.plain[word] = self.pat.plain(word)
        if not plain:
            raise ValueError(word)
        return word

    def token(self, m: re.Match, g: int = 1) -> Token:
        word = self.name(m.group(g))
        a, b = m.span(g)
        return Token("NAME", word, a, self.line, a + 1, self.line, b + 1, b)

    def match(self, pattern: re.Pattern, pos: int) -> re.Match:
        m = pattern.match(self.text, pos)
        if m is None:
            raise ValueError(pos)
        return m

    def quantity(self, pos: int) -> tuple[Any, int]:
        m = self.match(self.pat.qty, pos)
        parts = [m.group(1)] + ([m.group(2)] if m.group(2) else [])
        return self.rule.lit_quantity(self.at(m.start(1), m.end()), parts), m.end()

    def names(self, pos: int) -> tuple[list[Token], int]:
        m = self.match(self.pat.word, pos)
        out = [self.token(m)]
        while c := self.pat.more.match(self.text, m.end()):
            m = self.match(self.pat.word, c.end())
            out.append(self.token(m))
        return out, m.end()

    def work(self, pos: int) -> tuple[tuple[str, Any], int]:
        items = []
        while True:
            q, pos = self.quantity(pos)
            ch: list[Any] = [q]
            if m := self.pat.on.match(self.text, pos):
                ch.append(self.token(m))
                pos = m.end()
            if m := self.pat.batch.match(self.text, pos):
                b, pos = self.quantity(m.end())
                ch.append(b)
            items.append(self.rule.work_item(self.at(q.span.column - 1, pos), ch))
            if (c := self.pat.more.match(self.text, pos)) is None:
                return self.rule.work(items), pos
            pos = c.end()

    def one(self, rule: Rule, pos: int) -> tuple[tuple[str, Any], int]:
        q, pos = self.quantity(pos)
        return rule([q]), pos

    def word(self, rule: Rule, pos: int) -> tuple[tuple[str, Any], int]:
        m = self.match(self.pat.word, pos)
        return rule([self.token(m)]), m.end()

    def string(self, pos: int) -> tuple[tuple[str, Any], int]:
        m = self.match(self.pat.string, pos)
        a, b = m.span(1)
        return self.rule.module([Token("STRING", m.group(1), a, self.line, a + 1, self.line, b + 1, b)]), b

    def listed(self, rule: Rule, pos: int) -> tuple[tuple[str, Any], int]:
        toks, pos = self.names(pos)
        return rule(toks), pos

    def props(self, start: int, end: int) -> list[tuple[str, Any]]:
        """The `{ ... }` of a node between `start` and `end`: its properties in order. A body
        written before (layer after layer of a model) means what it meant then: its rules'
        values are reused, and only the device classes it names get this line's spans."""
        body, refs = self.text[start:end], self.tr.class_refs
        if (seen := self.bodies.get(body)) is not None:
            props, named = seen
            refs += [(nm, Span(self.tr.file, self.line, start + a, self.line, start + b)) for nm, a, b in named]
            return props
        k = len(refs)
        props = self.read_props(start, end)
        self.bodies[body] = props, [(nm, sp.column - start, sp.end_column - start) for nm, sp in refs[k:]]
        return props

    def read_props(self, start: int, end: int) -> list[tuple[str, Any]]:
        self.text = self.text[:end]
        out = []
        pos = self.pat.gap.match(self.text, start).end()
        while pos < end:
            m = self.match(self.pat.prop, pos)
            prop, pos = self.props_of[m.group(1)](m.end())
            self.match(self.pat.stop, pos)
            out.append(prop)
            pos = self.pat.gap.match(self.text, pos).end()
        return out


def splice(text: str, tr: Any, parser: Lark) -> Tree | None:
    """The parse tree of `text` with fast lines' items already in their graph block, or None
    when the whole text must go through Lark (see the module docstring)."""
    reader = Reader(tr, patterns(parser))
    lines = text.split("\n")
    fast: dict[int, Any] = {}  # 1-based line -> item
    for i, ln in enumerate(lines):
        if ("node" in ln or "->" in ln) and (item := reader.read(ln, i + 1)) is not None:
            fast[i + 1] = item
    if not fast:
        return None
    rest = "\n".join("" if i + 1 in fast else ln for i, ln in enumerate(lines))
    try:
        tree = parser.parse(rest)
    except UnexpectedInput:
        return None
    placed = 0
    for block in tree.find_data("graph_block"):
        lo, hi = block.meta.line, block.meta.end_line
        inside = sorted(ln for ln in fast if lo < ln < hi)
        merged: list[Any] = [c for c in block.children if not isinstance(c, Tree)]  # the graph's NAME
        k = 0
        for c in (c for c in block.children if isinstance(c, Tree)):  # Lark's items, in order
            while k < len(inside) and inside[k] < c.meta.line:
                merged.append(fast[inside[k]])
                k += 1
            if k < len(inside) and inside[k] <= c.meta.end_line:
                return None  # a fast line inside a multi-line item
            merged.append(c)
        merged += [fast[ln] for ln in inside[k:]]
        block.children = merged
        placed += len(inside)
    return tree if placed == len(fast) else None

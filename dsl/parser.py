"""Text -> Spec: load the shipped grammar, parse, turn syntax errors into PartErrors,
transform to the IR, validate. The public entry points are `parse` and `parse_file`."""
from __future__ import annotations

import gc
import re
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np
from lark import Lark, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError
from partdsl.core.errors import PartError, Span, close_names, did_you_mean
from partdsl.core.ir import Constraints, Graph, Objective, Platform, SolveOptions, Spec
from partdsl.core.limits import MAX_NESTING, MAX_SPEC_BYTES
from partdsl.core.quantities import UNITS, Quantity, make_quantity
from partdsl.core.solver_errors import SolverUnavailable
from partdsl.core.validate import validate
from partdsl.dsl.fast_lines import splice
from partdsl.dsl.transformer import ToIR
from partdsl.importers.import_options import ImportOptions
from partdsl.runtime.files import read_limited

Override = Quantity | str | int | float


@lru_cache(maxsize=1)
def grammar() -> Lark:
    return Lark.open_from_package("partdsl.grammars", "part.lark", parser="lalr",
                                  propagate_positions=True, maybe_placeholders=False)


UNIT_LIST = "ns us ms s min h; B KB MB GB KiB MiB GiB; B/s MB/s GB/s GiB/s; FLOP GFLOP TFLOP; GFLOP/s TFLOP/s; %"


def _pretty_expected(parser: Lark, names: set[str]) -> list[str]:
    out = []
    for nm in sorted(names):
        special = {"NAME": "a name", "NUMBER": "a number", "UNIT": "a unit", "STRING": 'a "string"',
                   "$END": "end of file", "LINK_OP": "'->' or '<->'", "TRAINING_FORM": "pipedream or gpipe",
                   "MEMORY_MODE": "hard, overflow or ignore", "DUPLEX": "duplex", "ELLIPSIS": "'...'"}
        if nm in special:
            out.append(special[nm])
            continue
        try:
            pat = parser.get_terminal(nm).pattern
            out.append(f"'{pat.value}'" if pat.type == "str" else nm)
        except KeyError:
            out.append(nm)
    return sorted(set(out))


def syntax_error(e: UnexpectedInput, text: str, file: str) -> PartError:
    parser = grammar()
    line, col = e.line if e.line > 0 else 1, e.column if e.column > 0 else 1
    if isinstance(e, UnexpectedCharacters):
        ch = text[e.pos_in_stream] if e.pos_in_stream < len(text) else "?"
        word = re.match(r"[^\s;{}\[\],]+", text[e.pos_in_stream:])
        span = Span(file, line, col, line, col + (len(word.group(0)) if word else 1))
        return PartError(f"unexpected character '{ch}'", span,
                         "expected " + ", ".join(_pretty_expected(parser, set(e.allowed or ())))
                         if e.allowed else None, text, "syntax")
    if isinstance(e, UnexpectedEOF):
        last = text.rstrip().splitlines() or [""]
        return PartError("the file ends too early", Span(file, len(last), len(last[-1]) + 1), "expected " +
                         ", ".join(_pretty_expected(parser, set(e.expected))), text, "syntax")
    assert isinstance(e, UnexpectedToken)
    tok = e.token
    expected = set(e.expected) | set(getattr(e, "accepts", None) or ())
    shown = _pretty_expected(parser, expected)
    val = str(tok)
    span = Span(file, line, col, tok.end_line, tok.end_column)
    if tok.type == "$END":
        last = text.rstrip().splitlines() or [""]
        span = Span(file, len(last), len(last[-1]) + 1)
        return PartError("the file ends too early", span, "expected " + ", ".join(shown), text, "syntax")
    if re.fullmatch(r"[A-Za-zµ/]+", val) and _after_number(text, tok.start_pos):
        import difflib

        close = difflib.get_close_matches(val, list(UNITS), n=3, cutoff=0.5)
        if "UNIT" in expected or close:
            hint = (f"did you mean {' or '.join(repr(c) for c in close)}? " if close else "") + f"units are: {UNIT_LIST}"
            return PartError(f"unknown unit '{val}'", span, hint, text, "syntax")
    misspelt = _misspelt_keyword(parser, text, tok.start_pos, file, line)
    if misspelt is not None:
        return misspelt
    keywords = [s.strip("'") for s in shown if s.startswith("'")]
    hint = close_names(val, [k for k in keywords if k.isalpha()]) or "expected " + ", ".join(shown)
    return PartError(f"unexpected '{val}'", span, hint, text, "syntax")


TOP_LEVEL = ("graph", "platform", "minimize", "maximize", "subject", "param", "import")  # what starts a top-level item


def _misspelt_keyword(parser: Lark, text: str, pos: int | None, file: str, line: int) -> PartError | None:
    """`nodes embed { ... }`: a line that opens with a word close to a keyword, then a name,
    was read as an edge chain (`nodes -> ...`) and failed at the name. Say the keyword."""
    if pos is None:
        return None
    start = text.rfind("\n", 0, pos) + 1
    m = re.fullmatch(r"(\s*)([A-Za-z_]\w*)\s+", text[start:pos])
    if m is None:
        return None
    word = m.group(2)
    col = len(m.group(1)) + 1
    span = Span(file, line, col, line, col + len(word))
    if word in TOP_LEVEL:  # `platform {` read as an edge inside a graph: the graph was not closed
        stack: list[int] = []  # the braces still open before the line (comments and strings aside: a hint)
        for k in re.finditer(r"[{}]", text[:start]):
            if k.group() == "{":
                stack.append(k.start())
            elif stack:
                stack.pop()
        if stack:
            return PartError(f"'{word}' inside a block: is a '}}' missing before it?", span,
                             f"close the block opened on line {text.count(chr(10), 0, stack[-1]) + 1} with '}}'",
                             text, "syntax")
    keywords = {t.pattern.value for t in parser.terminals if t.pattern.type == "str" and t.pattern.value.isalpha()}
    close = close_names(word, keywords)
    if word in keywords or close is None:
        return None
    return PartError(f"unknown keyword '{word}'", span, close, text, "syntax")


def _after_number(text: str, pos: int | None) -> bool:
    return pos is not None and re.search(r"[0-9]\s*$", text[:pos]) is not None


def parse_override(name: str, value: Override) -> Quantity | str:
    """`-D name=value`: a number with an optional unit (`8`, `32 GiB`, `12GB/s`)."""
    if isinstance(value, Quantity):
        return value
    if isinstance(value, (int, float)):
        return Quantity(float(value), "number")
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-zµ/%]+)?\s*", value)
    if not m:
        if value.startswith('"') and value.endswith('"') and len(value) >= 2:
            return value[1:-1]
        raise PartError(f"-D {name}={value}: not a number with an optional unit", None,
                        f"write e.g. -D {name}=8 or -D {name}=32GiB")
    unit = m.group(2)
    if unit is not None and unit not in UNITS:
        raise PartError(f"-D {name}={value}: unknown unit '{unit}'", None, f"units are: {UNIT_LIST}")
    return make_quantity(float(m.group(1)), unit)


_QUOTED_OR_COMMENT = re.compile(rb'"([^"\\\n]|\\.)*"|#[^\n]*|//[^\n]*')
_DEPTH = np.zeros(256, dtype=np.int8)  # per byte: +1 opens a bracket, -1 closes one
_DEPTH[list(b"{([")], _DEPTH[list(b"})]")] = 1, -1


def _blanked(raw: bytes) -> bytes:
    """`raw` with its strings and comments as blanks. Both end on their line, so only the lines
    holding a quote, `#` or `/` are scanned (a regular expression over all of a 20 MB spec
    took 0.25 s)."""
    codes = np.frombuffer(raw, dtype=np.uint8)
    marks = np.flatnonzero((codes == 34) | (codes == 35) | (codes == 47))
    if len(marks) == 0:
        return raw
    out, done = bytearray(raw), -1
    for p in marks.tolist():
        if p < done:
            continue
        done = raw.find(b"\n", p) % (len(raw) + 1)  # the line's end (the text's, on the last line)
        for m in _QUOTED_OR_COMMENT.finditer(raw, raw.rfind(b"\n", 0, p) + 1, done):
            out[m.start():m.end()] = b" " * (m.end() - m.start())
    return bytes(out)


def check_nesting(text: str, file: str) -> None:
    """Blocks and brackets nested deeper than MAX_NESTING are a located error before Lark
    and the Transformer, which recurse per level, see them (about 500 nested `server`
    blocks ended in a RecursionError). One linear pass over the text's UTF-8 bytes
    (brackets, quotes and comment marks are ASCII, which no multi-byte character's bytes
    are), strings and comments blanked out."""
    if text.count("{") + text.count("(") + text.count("[") <= MAX_NESTING:
        return
    raw = text.encode("utf-8")
    step = _DEPTH[np.frombuffer(_blanked(raw), dtype=np.uint8)]
    at = np.flatnonzero(step)  # the brackets: the running depth over them alone (a cumsum over every
    depth = np.cumsum(step[at], dtype=np.int64)  # character was a fifth of a 5 MB spec's parse)
    if len(depth) == 0 or depth.max() <= MAX_NESTING:
        return
    pos = len(raw[:int(at[np.argmax(depth > MAX_NESTING)])].decode("utf-8"))
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    raise PartError(f"blocks nested more than {MAX_NESTING} deep here", Span(file, line, col, line, col + 1),
                    "a spec nests a few levels (platform, racks, servers, devices): flatten the servers, e.g. "
                    "one `server node[8]` instead of a server in each server", text, "syntax")


def parse_tree(text: str, file: str = "<spec>") -> Tree:
    try:
        return grammar().parse(text)
    except UnexpectedInput as e:
        raise syntax_error(e, text, file) from None


def parse(text: str, file: str = "<spec>", overrides: Mapping[str, Override] | None = None,
          imports: ImportOptions = ImportOptions(), fast: bool = True) -> Spec:
    """Parse and validate a `.part` spec; raises PartError for any mistake. `imports`:
    how imported models are read (importers/import_options.py). `fast=False`: Lark reads every
    line (the reference the fast path of dsl/fast_lines.py is tested against)."""
    ov = {k: parse_override(k, v) for k, v in (overrides or {}).items()}
    check_nesting(text, file)
    with no_gc():
        return _parse(text, file, ov, imports, fast)


@contextmanager
def no_gc() -> Iterator[None]:
    """Python's cycle collector off while a parse allocates its millions of small objects (it
    halves the time of a 100,000-node spec); back to what it was after."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _parse(text: str, file: str, ov: dict[str, Quantity | str], imports: ImportOptions, fast: bool) -> Spec:
    tr = ToIR(file, ov, imports)
    tree = splice(text, tr, grammar()) if fast else None  # one-line nodes and chains without Lark
    if tree is None:
        tr = ToIR(file, ov, imports)
        tree = parse_tree(text, file)
    try:
        items = tr.transform(tree).children
        spec = assemble_spec(tr, items, Span(file, 1, 1))
        validate(spec)
    except VisitError as e:
        if isinstance(e.orig_exc, PartError):
            raise e.orig_exc.with_source(text) from None
        if isinstance(e.orig_exc, SolverUnavailable):  # an importer's optional package: exit 5, its hint
            raise e.orig_exc from None
        raise
    except PartError as e:
        raise e.with_source(text) from None
    return spec


def parse_file(path: str | Path, overrides: Mapping[str, Override] | None = None,
               imports: ImportOptions = ImportOptions()) -> Spec:
    p = Path(path)
    data = read_limited(p, MAX_SPEC_BYTES, "a .part spec", regular=False)  # a pipe too: part solve <(gen)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:  # point at the first byte that is not UTF-8
        before = data[:e.start].decode("utf-8")
        line, col = before.count("\n") + 1, len(before) - (before.rfind("\n") + 1) + 1
        shown = data.decode("utf-8", errors="replace")
        raise PartError(f"{p} is not UTF-8 text: byte 0x{data[e.start]:02x} at line {line}, column {col}",
                        Span(str(p), line, col, line, col + 1), "save the file as UTF-8",
                        shown, "syntax") from None
    return parse(text, str(p), overrides, imports)


def assemble_spec(tr: ToIR, items: list[Any], span: Span) -> Spec:
    """Top-level items -> Spec: exactly one graph and one platform, at most one of the rest."""
    kinds = {Graph: "graph", Platform: "platform", Objective: "objective",
             Constraints: "subject to", SolveOptions: "solve"}
    found: dict[type, Any] = {}
    for x in items:
        if x is None:
            continue
        t = type(x)
        if t in found:
            what = kinds[t]
            spans = tr.block_spans.get(t, [])  # blocks whose IR carries no span: the second one
            where = getattr(x, "span", None) or (spans[1] if len(spans) > 1 else None)
            hint = {Graph: "one spec partitions one graph: put the other graph in its own file",
                    Objective: "a spec has one objective: keep one `minimize`/`maximize` line (compare "
                               "objectives with two specs, or `part solve -D` on a param)"
                    }.get(t, f"merge the two `{what}` blocks into one")
            raise PartError(f"more than one `{what}` in this spec", where, hint)
        found[t] = x
    if Graph not in found:
        raise PartError("the spec declares no graph", span,
                        'add `graph g { node a { work 1 ms } }` or `graph g = import "file.json"`')
    if Platform not in found:
        raise PartError("the spec declares no platform", span,
                        "add e.g. `platform { device gpu[2] { memory 16 GiB; link 12 GB/s } }`")
    classes = {k.name for k in found[Platform].classes} | found[Platform].empty_names
    for ref, sp in sorted(tr.class_refs, key=lambda r: (r[1].line, r[1].column)):  # the first one written
        if ref not in classes:
            raise PartError(f"unknown device class '{ref}'", sp, did_you_mean(ref, classes))
    if tr.overrides:
        name = next(iter(tr.overrides))
        raise PartError(f"-D {name}: the spec has no param named '{name}'", None,
                        did_you_mean(name, list(tr.values)))
    from partdsl.importers.cost_model import apply

    objective = found.get(Objective, Objective())
    graph, platform = apply(found[Graph], found[Platform], objective)  # profiles -> work entries
    return Spec(graph=graph, platform=platform,
                objective=objective,
                constraints=found.get(Constraints, Constraints()),
                solve=found.get(SolveOptions, SolveOptions()),
                params=tuple(tr.param_order), file=tr.file)

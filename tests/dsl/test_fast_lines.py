"""The parser's fast path (dsl/fast_lines.py) against Lark reading every line: the same IR,
spans included, and the same errors with the same carets, on the bundled examples, on
generated graphs, and on random graph blocks mixing lines the fast path takes with lines it
must leave to Lark."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from partdsl.core.errors import PartError
from partdsl.core.ir import Spec
from partdsl.dsl.fast_lines import Reader, patterns, splice
from partdsl.dsl.parser import grammar, parse, parse_tree
from partdsl.dsl.transformer import ToIR

ROOT = Path(__file__).resolve().parents[2]
PLATFORM = "platform { device gpu[2] { memory 16 GiB; link 12 GB/s } device cpu { link 1 GB/s } }\n"


def outcome(text: str, fast: bool) -> Any:
    """What parsing gives: the spec with every span, or the error as the user sees it."""
    try:
        spec = parse(text, "t.part", fast=fast)
    except PartError as e:
        return ("error", str(e), e.span)
    return same_as(spec)


def same_as(spec: Spec) -> tuple:
    g = spec.graph
    return (spec, [n.span for n in g.nodes], g.edge_spans, g.written, g.span)


def fast_lines_taken(text: str) -> int:
    reader = Reader(ToIR("t.part"), patterns(grammar()))
    return sum(reader.read(ln, i + 1) is not None for i, ln in enumerate(text.split("\n")))


@pytest.mark.parametrize("path", sorted((ROOT / "examples").glob("*.part")), ids=lambda p: p.name)
def test_every_example_parses_to_the_same_spec(path: Path) -> None:
    text = path.read_text()
    assert outcome(text, True) == outcome(text, False)


def test_a_generated_transformer_is_read_by_the_fast_path_and_gives_lark_s_spec(tmp_path: Path) -> None:
    from partdsl.cli.main import main

    out = tmp_path / "t.part"
    assert main(["generate", "transformer", "--layers", "6", "--gpus", "2", "--output", str(out)]) == 0
    text = out.read_text()
    nodes = text.count("\n  node ")
    assert fast_lines_taken(text) >= nodes > 80  # every node line and edge line
    assert outcome(text, True) == outcome(text, False)


GOOD = [  # lines the fast path takes ({} is a fresh node name)
    "node {} {{ work 1ms on gpu, 2 ms on cpu batch 2 }}",
    "node {} {{ work .5 us; out 1 KiB; comm 0.1 ms; flops 2 GFLOP; dtype fp16; only gpu, cpu; group g; backward }}",
    "node {} {{ work 1 ms params 5 MB }}",  # properties without `;`
    "node {} {{ work 1 ms; params 5 MB; stash 1.5 GiB; group g }}",
    "node {} {{ work 1 ms; shares wte 2 MB, wpe 1 KB }}",  # the fast path leaves it to Lark
    "node {} {{ work 1 ms }} # a comment",
    "node {} {{ work 1e-3 s on gpu batch 1; not cpu ; }}",
    "node {} {{ flops 3 TFLOP; dtype bf16 }}",
    "node {} {{ flops 3 TFLOP; rows 4096; dtype bf16 }}",
    'node {} {{ work 1 ms; module "model.layers.3.mlp"; group g }}',
    r'node {} {{ module "a \"quoted\" \\ path" }}',
    "a -> b -> c",
    "a->b;",
    "c -> d // a comment",
]
BAD = [  # lines with a mistake: Lark's error, at the same place
    "node {} {{ work 1 ms; params 5 GB }}",  # a size where a time is due
    "node {} {{ work 1 ms on tpu }}",  # unknown class, reported where written
    "node {} {{ params 1 B; params 2 B }}",  # given twice
    "node {} {{ stash 3 ms }}",  # a time where a size is due
    "node {} {{ rows 4 KB }}",  # a size where a plain number is due
    "node {} {{ rows 0 }}",  # not positive
    "node {} {{ dtype fp64 }}",
    'node {} {{ module "x"; module "y" }}',  # given twice
    r'node {} {{ module "bad \q escape" }}',
    "node {} {{ module model.layers }}",  # not in quotes
    "node work {{ work 1 ms }}",  # a keyword as a name
    "node ms {{ work 1 ms }}",  # a unit as a name
    "node {} {{ work 1 ms # swallows the brace }}",
    "node {} {{ work 5 }}",
    "node {} {{ work 1 ms on gpu batch 0 }}",
    "node {} {{ work 1msx }}",
    "a -> a",
    "a -> zz",
]
MULTI = [  # items over several lines: Lark reads them
    "node {} {{\n  work 1 ms\n}}",
    "node {} {{\n node n {{ work 1 ms }}\n}}",
    "a ->\n b -> c",
    "a\n b -> c\n -> d",
    "node f[1..3] {{ work 2 ms }}\n  f[1] -> ... -> f[3]",
]


@st.composite
def graph_blocks(draw: st.DrawFn) -> str:
    decl = [f"node {n} {{ work {i + 1} ms }}" for i, n in enumerate("abcd")]
    picked = (draw(st.lists(st.sampled_from(GOOD), max_size=8)) + draw(st.lists(st.sampled_from(BAD), max_size=1))
              + draw(st.lists(st.sampled_from(MULTI), max_size=2)))
    lines = draw(st.permutations(decl + [ln.format(f"x{i}") for i, ln in enumerate(picked)]))
    where = draw(st.sampled_from(["graph"] * 4 + ["platform", "subject to"]))
    body = "\n".join("  " + ln for ln in lines)
    if where == "graph":
        return f"graph g {{\n{body}\n}}\n{PLATFORM}"
    if where == "platform":  # lines outside the graph block: Lark's syntax error
        return f"graph g {{\n  node z {{ work 1 ms }}\n}}\nplatform {{\n{body}\n}}\n"
    return f"graph g {{\n{body}\n}}\n{PLATFORM}subject to {{\n  node q {{ work 1 ms }}\n}}\n"


@settings(max_examples=150, deadline=None)
@given(graph_blocks())
def test_random_graph_blocks_parse_as_lark_parses_them(text: str) -> None:
    assert outcome(text, True) == outcome(text, False)


def test_the_fast_path_leaves_a_line_inside_a_multi_line_node_to_lark() -> None:
    text = f"graph g {{\n  node m {{\n  node n {{ work 1 ms }}\n  }}\n}}\n{PLATFORM}"
    assert fast_lines_taken(text) == 1  # it reads the line; the splice must refuse to place it
    err = outcome(text, True)
    assert err[0] == "error" and err[2].line == 3 and err == outcome(text, False)


def test_the_first_unknown_class_written_is_the_one_reported() -> None:
    text = (f"graph g {{\n  node m {{\n    work 1 ms on tpu1\n  }}\n  node n {{ work 1 ms on tpu2 }}\n"
            f"  m -> n\n}}\n{PLATFORM}")
    err = outcome(text, True)
    assert err[0] == "error" and "tpu1" in err[1] and err == outcome(text, False)


def test_a_body_read_again_names_its_classes_where_this_line_writes_them() -> None:
    """The fast path reuses a repeated body's values; the device classes it names must still
    carry each line's own line and column, as Lark gives them."""
    body = "{ work 1 ms on gpu, 2 ms on cpu; only gpu, cpu }"
    text = f"graph g {{\n  node a {body}\n      node bb {body}\n node c {body}\n}}\n"
    tr = ToIR("t.part")
    assert fast_lines_taken(text) == 3
    assert splice(text, tr, grammar()) is not None
    ref = ToIR("t.part")
    ref.transform(parse_tree(text, "t.part"))
    assert sorted(tr.class_refs, key=str) == sorted(ref.class_refs, key=str)
    assert len({sp.line for _, sp in tr.class_refs}) == 3


def test_imported_names_avoid_what_the_lexer_reads_otherwise() -> None:
    """core/names.py reads the keywords and units from the grammar file: the same verdict as
    the fast path's, which asks the Lark parser, on every keyword and unit and a few names."""
    from partdsl.core.names import identifier, plain

    pat = patterns(grammar())
    words = sorted(pat.keywords) + ["ms", "GB", "GiB/s", "TFLOP", "h", "s", "B", "add", "to_x", "node_1", "l3_q"]
    assert [plain(w) for w in words] == [pat.plain(w) for w in words]
    used: set[str] = set()
    assert [identifier(w, used) for w in ("to", "to", "ms", "/m/x.0/y", "3d")] == ["n_to", "n_to_2", "n_ms",
                                                                                    "_m_x_0_y", "n_3d"]

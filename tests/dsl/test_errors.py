"""Every user mistake is a PartError with a message, a file:line:column, a caret excerpt
and a hint; the CLI prints it and exits 2 without a traceback."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from partdsl import PartError, parse
from partdsl.dsl.builder import GraphBuilder, SpecBuilder

from tests.support import run_part

PLAT = "platform { device gpu[2] { memory 16 GiB; link 12 GB/s } device cpu[1] { host } }"
G = "graph g { node a { work 1 ms } node b { work 2 ms } a -> b }"

# (case id, spec text, message fragment, line, text under the caret, hint fragment);
# "~x" means the last "x" on the line, "$END" the end of the line
CASES = [
    ("syntax-unknown-unit", f"{G}\nplatform {{ device gpu[2] {{ memory 16 GiBs }} }}",
     "unknown unit 'GiBs'", 2, "GiBs", "GiB"),
    ("syntax-keyword-typo", f"graph g {{ node a {{ wrok 1 ms }} }}\n{PLAT}", "unexpected 'wrok'", 1, "wrok",
     "did you mean 'work'"),
    ("syntax-bad-character", f"{G}\n{PLAT} $", "unexpected character '$'", 2, "$", "'platform'"),
    ("syntax-eof", "graph g { node a { work 1 ms", "ends too early", 1, "$END", "'}'"),
    ("unit-mismatch", f"graph g {{ node a {{ work 1 MB }} }}\n{PLAT}", "work needs a time, got a size", 1, "1 MB",
     "`work 3 ms`"),
    ("unit-mismatch-memory", f"{G}\nplatform {{ device gpu[2] {{ memory 3 ms }} }}", "memory needs a size", 2, "3 ms",
     "16 GiB"),
    ("batch-sizes-never-run-a-chunk",  # issue 28, defect 5: accepted silently before
     f"{G}\nplatform {{ device gpu[1] {{ batch 3 }} device cpu[1] {{ host }} }}\nmaximize throughput batch 4 split 2",
     "it could never run anything", 2, "device gpu", "`batch 1, 2`"),
    ("plain-number-needs-unit", f"graph g {{ node a {{ work 3 }} }}\n{PLAT}", "got a plain number", 1, "3 }", "3 ms"),
    ("unknown-param", f"param k = 2\n{G}\nplatform {{ device gpu[kk] }}", "unknown name 'kk'", 3, "kk",
     "did you mean 'k'"),
    ("duplicate-param", f"param k = 2\nparam k = 3\n{G}\n{PLAT}", "param 'k' is declared twice", 2, "param", None),
    ("duplicate-node", f"graph g {{ node a {{ work 1 ms }}\n  node a {{ work 2 ms }} }}\n{PLAT}",
     "node 'a' is declared twice (first declared at line 1)", 2, "a {", "unique name"),
    ("cycle", f"graph g {{ node a {{ work 1 ms }} node b {{ work 1 ms }} node c {{ work 1 ms }}\n"
     f"  a -> b -> c -> a }}\n{PLAT}", "has a cycle: a -> b -> c -> a", 2, "~a", "acyclic"),
    ("self-loop", f"graph g {{ node a {{ work 1 ms }}\n a -> a }}\n{PLAT}", "cycle: a -> a", 2, "~a", None),
    ("unknown-node", f"graph g {{ node a {{ work 1 ms }}\n  a -> c }}\n{PLAT}", "unknown node 'c'", 2, "c",
     "the graph has a (declare it: `node c"),
    # issue 76.4: the hint listed block[10], block[11], ... in string order instead of the graph's nodes
    ("unknown-node-among-families", f"graph g {{ node embed {{ work 1 ms }} node block[1..12] {{ work 1 ms }}\n"
     f"  node head {{ work 1 ms }} embed -> block[1] -> ... -> block[12] -> head -> tail }}\n{PLAT}",
     "unknown node 'tail'", 2, "tail", "the graph has embed, block[1..12], head"),
    ("family-without-index", f"graph g {{ node L[1..3] {{ work 1 ms }}\n  L -> L[2] }}\n{PLAT}",
     "unknown node 'L'", 2, "L", "name a member like `L[1]`"),
    ("bad-ellipsis", f"graph g {{ node L[1..3] {{ work 1 ms }} node a {{ work 1 ms }}\n  a -> ... -> L[3] }}\n{PLAT}",
     "`...` must stand between", 2, "...", "block[1] -> ... -> block[12]"),
    ("empty-range", f"graph g {{ node L[3..1] {{ work 1 ms }} }}\n{PLAT}", "empty range 3..1", 1, "L[3..1]", "L[1..3]"),
    ("unknown-device-class", f"graph g {{ node a {{ work 1 ms on tpu }} }}\n{PLAT}",
     "unknown device class 'tpu'", 1, "tpu", "did you mean 'gpu'"),
    ("unknown-class-in-only", f"graph g {{ node a {{ work 1 ms; only gpus }} }}\n{PLAT}",
     "unknown device class 'gpus'", 1, "gpus", "did you mean 'gpu'"),
    ("no-device-supports", f"graph g {{ node a {{ work 1 ms on cpu }} }}\n{PLAT}\nsubject to {{ pin a to gpu }}",
     "no device can run node 'a'", 1, "a {", "loosen its placement"),
    ("no-work-anywhere", f"graph g {{ node a {{ params 1 MB }} }}\n{PLAT}", "no device can run node 'a'", 1, "a {",
     "give its work"),
    ("memory-too-small-total", "graph g { node a { work 1 ms; params 50 GB } node b { work 1 ms; params 50 GB }"
     " node c { work 1 ms; params 50 GB } }\nplatform { device gpu[2] { memory 60 GB } }",
     "all of them together hold", 2, "platform", "memory overflow"),
    ("memory-node-too-big", "graph g { node a { work 1 ms; params 70 GB } }\nplatform { device gpu[2] { memory 60 GB } }",
     "node 'a' needs 65.19 GiB of memory", 1, "a {", "raise the device memory"),
    ("missing-link", "graph g { node a { work 1 ms; out 1 MB } node b { work 1 ms } a -> b }\nplatform { device gpu[2] }",
     "has no link bandwidth", 2, "device", "link 12 GB/s"),
    ("pin-unknown-device", f"{G}\n{PLAT}\nsubject to {{ pin a to gpu[5] }}", "unknown device or class 'gpu[5]'", 3, "gpu[5]",
     "gpu[1]"),
    ("pin-unknown-node", f"{G}\n{PLAT}\nsubject to {{ pin z to gpu }}", "pin names unknown node 'z'", 3, "z", None),
    ("colocate-conflict", f"{G}\n{PLAT}\nsubject to {{ colocate a, b; pin a to gpu[0]; pin b to gpu[1] }}",
     "have no device they can all run on", 1, "a {", "pins"),
    ("gpipe-without-backward", f"{G}\n{PLAT}\nminimize bottleneck training gpipe", "needs backward nodes", 3, "minimize",
     "`backward`"),
    ("two-graphs", f"{G}\n{G.replace('graph g', 'graph h')}\n{PLAT}", "more than one `graph`", 2, "graph", "own file"),
    ("two-objectives", f"{G}\n{PLAT}\nminimize latency\nminimize bottleneck", "more than one `objective`", 4, "minimize",
     "keep one `minimize`/`maximize` line"),  # issue 76.4: it said to merge two objectives
    # issue 76.4: these three ended in "expected '->'" or blamed `...`
    ("misspelt-statement-keyword", f"graph g {{\n  nodes a {{ work 1 ms }}\n}}\n{PLAT}", "unknown keyword 'nodes'", 2,
     "nodes", "did you mean 'node'"),
    ("graph-not-closed", f"graph g {{ node a {{ work 1 ms }}\n{PLAT}", "'platform' inside a block", 2, "platform",
     "opened on line 1"),
    ("misspelt-member-before-ellipsis", f"graph g {{ node L[1..3] {{ work 1 ms }}\n  Lx[1] -> ... -> L[3] }}\n{PLAT}",
     "unknown node 'Lx[1]'", 2, "Lx[1]", "did you mean 'L[1]'"),
    ("no-graph", PLAT, "declares no graph", 1, "platform", "import"),
    ("no-platform", G, "declares no platform", 1, "graph", "device gpu"),
    ("gap-out-of-range", f"{G}\n{PLAT}\nsolve {{ gap 150% }}", "gap 1.5 is not a fraction", 3, "150%", "1%"),
    ("device-count-not-integer", f"{G}\nplatform {{ device gpu[2.5] }}", "whole number", 2, "2.5", None),
    ("bad-colocate-key", f"{G}\n{PLAT}\nsubject to {{ colocate by color }}", "cannot colocate by 'color'", 3, "colocate",
     "colocate by group"),
]


def column(text: str, line: int, token: str) -> int:
    src = text.splitlines()[line - 1]
    if token == "$END":
        return len(src) + 1
    if token.startswith("~"):
        return src.rindex(token[1:]) + 1
    return src.index(token) + 1


@pytest.mark.parametrize("text,msg,line,token,hint", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_error_message_and_location(text: str, msg: str, line: int, token: str, hint: str | None) -> None:
    col = column(text, line, token)
    with pytest.raises(PartError) as exc:
        parse(text, "spec.part")
    e = exc.value
    assert msg in e.message
    assert e.span is not None and (e.span.line, e.span.column) == (line, col), e.render()
    if hint:
        assert e.hint and hint in e.hint, e.render()
    rendered = e.render()
    assert f"spec.part:{line}:{col}" in rendered
    caret_line = rendered.splitlines()[4]
    assert caret_line.index("^") - caret_line.index("|") - 2 == col - 1, rendered


def test_bad_import_files(tmp_path: Path) -> None:
    (tmp_path / "broken.json").write_text("{ not json")
    (tmp_path / "wrong.json").write_text(json.dumps({"nodes": [{"id": 1}], "edges": []}))
    (tmp_path / "dangling.json").write_text(json.dumps({
        "nodes": [{"id": 1, "supportedOnFpga": 1, "cpuLatency": 1, "fpgaLatency": 1, "size": 0}],
        "edges": [{"sourceId": 1, "destId": 7, "cost": 0.5}]}))
    cases = {"missing.json": ("no such file", "relative to the spec"),
             "broken.json": ("not valid JSON", None),
             "wrong.json": ("not a valid dnn-partitioning file", "format description"),
             "dangling.json": ("names node 7, which is not in `nodes`", None)}
    for name, (msg, hint) in cases.items():
        spec = tmp_path / "s.part"
        spec.write_text(f'graph g = import "{name}" as dnn-partitioning\n{PLAT}\n')
        with pytest.raises(PartError) as exc:
            from partdsl import parse_file

            parse_file(spec)
        assert msg in exc.value.message, exc.value.render()
        assert (exc.value.span.line, exc.value.span.column) == (1, 18)
        if hint:
            assert hint in exc.value.hint


def test_unknown_import_format(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("{}")
    with pytest.raises(PartError, match="unknown import format 'tflite'"):
        parse(f'graph g = import "x.json" as tflite\n{PLAT}', str(tmp_path / "s.part"))


def test_override_errors() -> None:
    with pytest.raises(PartError, match="no param named 'kk'") as exc:
        parse(f"param k = 2\n{G}\n{PLAT}", overrides={"kk": "3"})
    assert "did you mean 'k'" in exc.value.hint
    with pytest.raises(PartError, match="unknown unit 'GiBs'"):
        parse(f"param m = 16 GiB\n{G}\n{PLAT}", overrides={"m": "3 GiBs"})
    with pytest.raises(PartError, match="declares a size, the override is a time"):
        parse(f"param m = 16 GiB\n{G}\n{PLAT}", overrides={"m": "3 ms"})


def test_builder_errors_have_no_span_but_a_message() -> None:
    g = GraphBuilder("g").node("a", work={"gpu": 1.0}).edge("a", "zz")
    with pytest.raises(PartError, match="unknown node 'zz'"):
        g.build()
    g = GraphBuilder("g").node("bad name", work=1.0)
    with pytest.raises(PartError, match="not a valid node name"):
        SpecBuilder(g).device("gpu", 1).build()
    with pytest.raises(PartError, match="expected a time"):
        GraphBuilder("g").node("a", work="3 GB")


@pytest.mark.parametrize("args,fragment", [
    (["check", "{spec}"], "unknown unit 'GiBs'"),
    (["solve", "{spec}", "--json"], "unknown unit 'GiBs'"),
    (["check", "does-not-exist.part"], "no such file"),
])
def test_cli_prints_error_and_exits_2(tmp_path: Path, args: list[str], fragment: str) -> None:
    spec = tmp_path / "bad.part"
    spec.write_text(f"{G}\nplatform {{ device gpu[2] {{ memory 16 GiBs }} }}\n")
    r = run_part(*[a.format(spec=spec) for a in args], cwd=tmp_path)
    assert r.returncode == 2
    assert fragment in r.stderr
    if "{spec}" in args:
        assert "bad.part:2:38" in r.stderr and "^^^^" in r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    if "--json" in args:
        assert json.loads(r.stdout)["error"].startswith("unknown unit")


def test_cli_bad_define_and_partition(tmp_path: Path) -> None:
    spec = tmp_path / "ok.part"
    spec.write_text(f"param k = 2\n{G}\nplatform {{ device gpu[k] }}\n")
    r = run_part("check", str(spec), "-D", "k")
    assert r.returncode == 2 and "expected name=value" in r.stderr
    r = run_part("check", str(spec), "-D", "nope=3")
    assert r.returncode == 2 and "no param named 'nope'" in r.stderr
    part = tmp_path / "p.json"
    part.write_text(json.dumps({"a": "gpu[0]", "b": "tpu[0]"}))
    r = run_part("eval", str(spec), str(part))
    assert r.returncode == 2 and "unknown device 'tpu[0]'" in r.stderr and "Traceback" not in r.stderr


def test_a_zero_link_bandwidth_is_a_located_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Found by the robustness campaign: `link 0 GB/s` divided by zero in the cost tables."""
    from partdsl.core.errors import PartError
    from partdsl.dsl.parser import parse

    text = "graph g { node a { work 1 ms; out 1 MB }\n node b { work 1 ms }\n a -> b }\n" \
           "platform { device gpu[2] { link 0 GB/s } }\nminimize bottleneck\n"
    try:
        parse(text, "zero.part")
    except PartError as e:
        assert "link bandwidth 0" in e.message and e.span is not None and e.span.line == 4
    else:
        raise AssertionError("a zero link bandwidth was accepted")

"""The README and docs/ say only what works: every fenced block is tagged; every `part`
block parses as a spec (imports resolve from examples/); every `$ command` of a `console`
block runs and exits 0, and the output lines shown under it appear in its real output
(a command too long for the suite ends in `# illustrative: why`); the `python` blocks
run; the `sh` block (the README's two commands) is what `.ci/run` runs; every relative
link points at a file that exists."""
from __future__ import annotations

import os
import re
import runpy
import shlex
from pathlib import Path

import pytest
from partdsl import parse

from tests.support import ROOT, run_part

PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
TAGS = {"part", "console", "sh", "python", "text", "json"}
FENCE = re.compile(r"^( *)```(\w*)\n(.*?)^\1```", re.S | re.M)
ILLUSTRATIVE = re.compile(r"#\s*illustrative:\s*(\S.*)$")


def blocks(tag: str) -> list[tuple[str, str]]:
    return [(f"{p.relative_to(ROOT)}:{p.read_text()[:m.start()].count(chr(10)) + 1}", m[3])
            for p in PAGES for m in FENCE.finditer(p.read_text()) if m[2] == tag]


def commands() -> list[tuple[str, str, list[str]]]:
    """(where, command, output lines shown under it) of every console block."""
    out = []
    for where, text in blocks("console"):
        lines = [ln.strip() for ln in text.splitlines()]
        for i, ln in enumerate(lines):
            if ln.startswith("$ "):
                shown = []
                for nxt in lines[i + 1:]:
                    if nxt.startswith("$ "):
                        break
                    shown.append(nxt)
                out.append((where, ln[2:], shown))
    return out


def test_every_fenced_block_is_tagged() -> None:
    untagged = [f"{p.relative_to(ROOT)}: ```{m[2]}" for p in PAGES for m in FENCE.finditer(p.read_text())
                if m[2] not in TAGS]
    assert untagged == [], f"tag each block with one of {sorted(TAGS)}"


@pytest.mark.parametrize("where,text", blocks("part"), ids=lambda x: x if ":" in str(x) else "")
def test_part_blocks_parse(where: str, text: str) -> None:
    spec = parse(text, file=str(ROOT / "examples" / "snippet.part"))
    assert spec.graph.nodes, where


@pytest.mark.parametrize("where,command,shown", commands(), ids=lambda x: x if ":" in str(x) else "")
def test_console_commands_run(where: str, command: str, shown: list[str], tmp_path: Path) -> None:
    why = ILLUSTRATIVE.search(command)
    if why:  # too long or too heavy for the suite; the reason is written beside it
        assert len(why[1]) > 10, f"{where}: say why `{command}` is illustrative"
        return
    argv = shlex.split(command, comments=True)
    assert argv[0] == "part", f"{where}: only `part` commands run here: {command}"
    for name in ("examples", "data"):  # relative paths as from the repository root; outputs go to tmp
        os.symlink(ROOT / name, tmp_path / name)
    r = run_part(*argv[1:], cwd=tmp_path)
    assert r.returncode == 0, f"{where}: `{command}` exited {r.returncode}\n{r.stderr[-2000:]}"
    real = {" ".join(ln.split()) for ln in r.stdout.splitlines()}
    for ln in shown:
        if ln and ln != "..." and not ln.startswith("time "):  # wall times vary
            assert " ".join(ln.split()) in real, f"{where}: `{command}` no longer prints:\n{ln}\n\n{r.stdout}"


@pytest.mark.parametrize("where,text", blocks("python"), ids=lambda x: x if ":" in str(x) else "")
def test_python_blocks_run(where: str, text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "snippet.py"
    script.write_text(text)
    monkeypatch.chdir(ROOT)
    runpy.run_path(str(script), run_name="__main__")


def test_the_two_commands_are_what_ci_runs() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    (where, text), = blocks("sh")
    for line in text.splitlines():
        command = line.split("#")[0].strip()
        if command:
            assert re.search(rf"^{re.escape(command)}$", ci, re.M), f"{where}: `{command}` is not in .ci/run"


def test_relative_links_point_at_files() -> None:
    broken = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if not re.match(r"\w+://", target) and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert broken == []

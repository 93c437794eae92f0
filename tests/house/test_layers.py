"""The house rules, checked: the import layers of pyproject.toml (import-linter), no
import circle but core/dense <-> core/ir, no source file over 400 lines (benchmarks too),
no function over 80 lines (but the four MIP builders and the numba kernel issue 70 left,
listed so that the list can only shrink), every module named in docs/architecture.md."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import grimp
import networkx as nx

ROOT = Path(__file__).resolve().parents[2]
SOURCE_DIRS = ("core", "evaluator", "importers", "dsl", "convert", "generators", "models", "solvers", "methods",
               "runtime", "kernels", "plans", "cli", "viz", "grammars")
# functions still over 80 lines (issue 70: split them into row families); a new one fails, and so
# does one that got shorter but is still listed
ALLOWED_CIRCLES = [{"partdsl.core.dense", "partdsl.core.ir"}]  # Spec.dense, built lazily


def sources() -> list[Path]:
    return sorted([ROOT / "__init__.py"] + [p for d in SOURCE_DIRS for p in (ROOT / d).rglob("*.py")])


def test_imports_follow_the_layers() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    r = subprocess.run([str(lint), "--config", str(ROOT / "pyproject.toml")], cwd=ROOT, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "0 broken" in r.stdout


def test_no_import_circles_but_the_lazy_one() -> None:
    graph = grimp.build_graph("partdsl")
    g = nx.DiGraph()
    for m in graph.modules:
        for imported in graph.find_modules_directly_imported_by(m):
            if imported.startswith("partdsl."):
                g.add_edge(m, imported)
    circles = [c for c in nx.strongly_connected_components(g) if len(c) > 1]
    assert [c for c in circles if c not in ALLOWED_CIRCLES] == []


def scripts() -> list[Path]:
    """The benchmarks and the framework conformance tier: no package, the same length rules."""
    return sorted((ROOT / "benchmarks").glob("*.py")) + sorted((ROOT / "conformance").glob("*.py"))


def test_no_source_file_over_400_lines() -> None:
    files = sources() + scripts()
    long = {str(p.relative_to(ROOT)): n for p in files if (n := len(p.read_text().splitlines())) > 400}
    assert long == {}


def test_no_function_over_80_lines() -> None:
    long = set()
    for p in sources() + scripts():
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno + 1 > 80:
                long.add(f"{p.relative_to(ROOT)}:{node.name}")
    assert long == set()


def test_docs_architecture_names_every_module() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text()
    missing = [str(p.relative_to(ROOT)) for p in sources()
               if p.suffix == ".py" and p.name != "__init__.py" and p.parent != ROOT
               and p.parent.name != "grammars" and f"`{p.relative_to(ROOT)}`" not in text]
    assert missing == []


def test_renamed_modules_the_old_readme_named_still_import_with_a_deprecation() -> None:
    import importlib
    import sys

    import pytest

    for old, name in (("partdsl.solvers.backends", "BACKENDS"), ("partdsl.dsl.generate", "regal_spec")):
        sys.modules.pop(old, None)
        with pytest.warns(DeprecationWarning, match="deprecated"):
            module = importlib.import_module(old)
        assert hasattr(module, name)
    assert sys.modules["partdsl.solvers.backends"].BACKENDS["highs"][1] == "pip install highspy"

"""Node names for imported operators: identifiers the language reads back as names (not a
keyword such as `to` or `node`, not a unit such as `ms`), unique within the graph. The
keywords and the UNIT terminal are read from the grammar file itself."""
from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources


@lru_cache(maxsize=1)
def _reserved() -> tuple[frozenset[str], re.Pattern]:
    text = resources.files("partdsl.grammars").joinpath("part.lark").read_text()
    keywords = frozenset(w for w in re.findall(r'"([A-Za-z_][A-Za-z0-9_]*)"', text))
    unit = re.search(r"^UNIT(?:\.\d+)?:\s*/(.*)/\s*$", text, re.M)
    return keywords, re.compile(unit.group(1) if unit else r"(?!)")


def plain(word: str) -> bool:
    keywords, unit = _reserved()
    return word not in keywords and unit.fullmatch(word) is None


def identifier(raw: str, used: set[str]) -> str:
    """`/model/layers.0/MatMul` -> `_model_layers_0_MatMul`; `to` -> `n_to`; `add` twice -> `add_2`."""
    base = re.sub(r"[^A-Za-z0-9_]", "_", raw) or "op"
    if not re.match(r"[A-Za-z_]", base) or not plain(base):
        base = "n_" + base
    out, i = base, 1
    while out in used:
        i += 1
        out = f"{base}_{i}"
    used.add(out)
    return out

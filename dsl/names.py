"""Node names for imported operators: identifiers the language reads back as names (not a
keyword such as `to` or `node`, not a unit such as `ms`), unique within the graph."""
from __future__ import annotations

import re


def identifier(raw: str, used: set[str]) -> str:
    """`/model/layers.0/MatMul` -> `_model_layers_0_MatMul`; `to` -> `n_to`; `add` twice -> `add_2`."""
    from partdsl.dsl.fast_lines import patterns
    from partdsl.dsl.parser import grammar

    base = re.sub(r"[^A-Za-z0-9_]", "_", raw) or "op"
    if not re.match(r"[A-Za-z_]", base) or not patterns(grammar()).plain(base):
        base = "n_" + base
    out, i = base, 1
    while out in used:
        i += 1
        out = f"{base}_{i}"
    used.add(out)
    return out

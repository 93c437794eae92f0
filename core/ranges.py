"""Names of a family written as ranges: `block[1], block[2], block[3]` -> `block[1..3]`,
`model_layers_0, model_layers_1` -> `model_layers_0..1`, kept in the order given (a
device's layers in stage order, a graph's nodes as declared). A gap starts a new range."""
from __future__ import annotations

import re
from typing import Iterable

_INDEXED = re.compile(r"^(.*?)(\[(\d+)\]|(?<![0-9])(\d+))$")


def _split(name: str) -> tuple[str, int, bool] | None:
    """(family, index, bracketed) of `block[3]` or `layer_3`; None for a name without one."""
    m = _INDEXED.match(name)
    if not m or not m.group(1):
        return None
    return (m.group(1), int(m.group(3)), True) if m.group(3) is not None else (m.group(1), int(m.group(4)), False)


def compact(names: Iterable[str]) -> list[str]:
    """Consecutive members of one family as one range; each name once, first seen first."""
    out: list[str] = []
    run: tuple[str, int, int, bool] | None = None  # family, first, last, bracketed
    seen: set[str] = set()

    def close() -> None:
        if run is not None:
            fam, a, b, br = run
            out.append((f"{fam}[{a}..{b}]" if br else f"{fam}{a}..{b}") if b > a else
                       (f"{fam}[{a}]" if br else f"{fam}{a}"))

    for name in names:
        if name in seen:
            continue
        seen.add(name)
        s = _split(name)
        if s is not None and run is not None and s[0] == run[0] and s[2] == run[3] and s[1] == run[2] + 1:
            run = (run[0], run[1], s[1], run[3])
            continue
        close()
        run = None
        if s is None:
            out.append(name)
        else:
            run = (s[0], s[1], s[1], s[2])
    close()
    return out


def shown(names: Iterable[str], limit: int = 12) -> str:
    """`compact`, joined, the first `limit` ranges and a count of the rest."""
    parts = compact(names)
    more = f", ... ({len(parts) - limit} more)" if len(parts) > limit else ""
    return ", ".join(parts[:limit]) + more

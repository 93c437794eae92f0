"""Times side by side with their ratios against a saved baseline run (shared by the
benchmark scripts; speed is measured here, never asserted in tests)."""
from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Callable

Rows = dict[str, dict[str, float]]


def print_ratios(rows: Rows, baseline: Path, cols: list[str], *, save: bool, width: int = 12,
                 lead: Callable[[str, dict[str, float]], str], lead_head: str,
                 trail: Callable[[dict[str, float]], str] = lambda r: "", trail_head: str = "") -> None:
    """Print one line per row: `lead`, then each column's time and time / baseline time
    (`-` for a column the row lacks), then `trail`; the geometric mean of the ratios last.
    With `save`, the rows become the new baseline first."""
    if save:
        baseline.write_text(json.dumps(rows, indent=1) + "\n")
        print(f"baseline saved to {baseline}")
    base: Rows = json.loads(baseline.read_text()) if baseline.exists() else {}
    head = lead_head + " " + " ".join(f"{c:>{width}} {'x base':>7}" for c in cols) + trail_head
    print(head)
    print("-" * len(head))
    ratios: dict[str, list[float]] = {c: [] for c in cols}
    for name, r in rows.items():
        cells = []
        for c in cols:
            if c not in r:
                cells.append(f"{'-':>{width}} {'':>7}")
                continue
            b = base.get(name, {}).get(c)
            if b:
                ratios[c].append(r[c] / b)
            cells.append(f"{r[c]:{width}.4f} {r[c] / b if b else float('nan'):7.2f}")
        print(lead(name, r) + " " + " ".join(cells) + trail(r))
    if base:
        print(f"{'geometric mean':{len(lead_head)}} " + " ".join(
            f"{'':{width}} {statistics.geometric_mean(v) if v else float('nan'):7.2f}" for v in ratios.values()))
        print(f"(x base: time now / time in {baseline.parent.name}/{baseline.name}; < 1 is faster)")

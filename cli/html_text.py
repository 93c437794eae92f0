"""The HTML report's text pieces (cli/html_report.py, cli/html_plan.py): escaped text,
numbers ('-' for none or not finite), and a table of (heading, cell) rows."""
from __future__ import annotations

import html
import math


def esc(x: object) -> str:
    return html.escape(str(x), quote=True)


def num(x: float | None, digits: int = 6) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{x:.{digits}g}"


def pairs(rows: list[tuple[str, str]]) -> str:
    """A two-column table: each heading escaped, each cell HTML as given."""
    return "<table>" + "".join(f"<tr><th>{esc(k)}</th><td>{v}</td></tr>" for k, v in rows) + "</table>"

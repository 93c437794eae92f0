"""`part report SPEC --html OUT.html`: one self-contained HTML page (issue 32, item 3): the
spec in brief, the answer (status, method, objective, proven bound, gap, why it stopped),
the picture of `part plot` inline as SVG, the plan device by device (cli/html_plan.py),
and the command that reproduces it. No script, no stylesheet or font from elsewhere: it opens offline."""
from __future__ import annotations

import io
import re
from datetime import UTC, datetime

import numpy as np
from partdsl.cli.html_plan import plan_section
from partdsl.cli.html_text import esc, num, pairs
from partdsl.cli.report import gap_text, objective_name
from partdsl.core.ir import Spec
from partdsl.core.result import Result

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 72em; color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; } td, th { padding: .2em .8em; text-align: left; vertical-align: top; }
tr:nth-child(even) { background: #f6f6f6; } th { border-bottom: 1px solid #bbb; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
pre { background: #f4f4f4; padding: .8em; overflow-x: auto; }
.optimal { color: #1a7f37; } .feasible { color: #9a6700; } .infeasible, .no_solution { color: #cf222e; }
figure { margin: 1em 0; } figure svg { max-width: 100%; height: auto; }
"""


def inline_svg(fig) -> str:  # type: ignore[no-untyped-def]
    """A matplotlib figure as an <svg> element to paste into HTML (no XML prolog, no DOCTYPE)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    text = buf.getvalue()
    return text[text.index("<svg"):]


SHOWN_CONSTRAINTS = 12  # lines of `subject to` shown before "... and N more"


def spec_summary(spec: Spec, source: str) -> str:
    """The spec in brief: its objective and constraints as the spec writes them (issue 76:
    `training pipedream`, the batch and class-level pins were left out)."""
    from partdsl.dsl.printer import constraint_lines

    d = spec.dense
    classes = ", ".join(f"{k.name} x {k.count}" + (" (host)" if k.host else "") for k in spec.platform.classes)
    lines = constraint_lines(spec.constraints)
    if len(lines) > SHOWN_CONSTRAINTS:
        lines = lines[:SHOWN_CONSTRAINTS - 1] + [f"... and {len(lines) - SHOWN_CONSTRAINTS + 1} more"]
    return pairs([
        ("spec", esc(source)),
        ("graph", f"{esc(spec.graph.name)}: {d.n:,} nodes, {len(spec.graph.edges):,} edges"),
        ("platform", esc(classes)),
        ("objective", esc(objective_name(spec))),
        ("constraints", "<br>".join(esc(u) for u in lines) or "none"),
    ])


def answer_summary(r: Result) -> str:
    which = "upper" if r.sense == "max" else "lower"
    method = esc(r.method) + (f" (answer from {esc(r.chosen)})" if r.chosen else "")
    return pairs([
        ("status", f'<span class="{esc(r.status.value)}">{esc(r.status.value)}</span> ({esc(r.stopped)})'),
        ("method", f"{method}, solver {esc(r.solver)}"),
        ("objective", f"{num(r.objective)} {esc(r.unit)}"),
        ("bound", f"{num(r.bound)} {esc(r.unit)} ({which} bound on the optimum, proven)"),
        ("gap", gap_text(r.gap)),
        ("time", f"{r.wall_time_s:.3f} s"),
    ])


def page(spec: Spec, source: str, r: Result, dev: np.ndarray | None, svg: str | None, command: str,
         micro_batches: int | None = None) -> str:
    """The whole report as one HTML document."""
    from partdsl import __version__

    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts = [f"<h1>partdsl report: {esc(spec.graph.name)}</h1>",
             "<h2>Spec</h2>", spec_summary(spec, source),
             "<h2>Answer</h2>", answer_summary(r)]
    if svg is not None:
        parts += ["<h2>Picture</h2>", f"<figure>{svg}</figure>"]
    if dev is not None and r.evaluation is not None:
        parts += ["<h2>Plan</h2>", plan_section(spec, r, dev, micro_batches)]
        if r.evaluation.violations:
            parts += ["<p>violations:</p><ul>"
                      + "".join(f"<li>{esc(v.message)}</li>" for v in r.evaluation.violations) + "</ul>"]
    parts += ["<h2>Reproduce</h2>", f"<pre><code>{esc(command)}</code></pre>",
              f"<p><small>partdsl {esc(__version__)}, {now}</small></p>"]
    title = f"partdsl report: {spec.graph.name}"
    doc = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
           f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>\n"
           + "\n".join(parts) + "\n</body></html>\n")
    return doc


EXTERNAL = re.compile(r"""<(?:script|link|img|iframe|object|embed)\b[^>]*\b(?:src|href)\s*=\s*["']?(?:https?:)?//""",
                      re.IGNORECASE)


def external_references(doc: str) -> list[str]:
    """Anything the page would fetch from elsewhere (none: the report is self-contained)."""
    return EXTERNAL.findall(doc) + re.findall(r"url\(\s*['\"]?(?:https?:)?//", doc, re.IGNORECASE)

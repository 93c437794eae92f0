"""`part report SPEC --html OUT.html`: solve (or score a given partition) and write one
self-contained HTML page with the spec, the answer and its certificate, the picture, the
plan and the command that reproduces it (cli/html_report.py)."""
from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from partdsl.cli.common import EXIT_OK, answer_of, duration, emit, load_figures, load_spec, spec_arguments


def add(sub) -> None:  # type: ignore[no-untyped-def]
    p = sub.add_parser("report", help="one self-contained HTML page: the spec, the answer, bound and gap, the "
                                      "picture, the plan, and the command that reproduces it")
    spec_arguments(p)
    p.add_argument("--html", required=True, metavar="FILE", help="the page to write (out.html)")
    p.add_argument("--method", help="the method to solve with (default: the spec's, else the default method)")
    p.add_argument("--time-limit", type=duration, metavar="SECONDS")
    p.add_argument("--gap", type=float, metavar="FRACTION")
    p.add_argument("--seed", type=int, metavar="N")
    p.add_argument("--micro-batches", type=int, metavar="M",
                   help="micro-batches per step, for the pipeline's bubble (bottleneck; default 4 per stage)")
    p.set_defaults(func=run)


def command(args: argparse.Namespace) -> str:
    """The `part solve` command that gives this answer again."""
    argv = ["part", "solve", args.spec]
    for d in args.define or []:
        argv += ["-D", d]
    for flag, value in (("--method", args.method), ("--time-limit", args.time_limit), ("--gap", args.gap),
                        ("--seed", args.seed)):
        if value is not None:
            argv += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    return shlex.join(argv)


def run(args: argparse.Namespace) -> int:
    from partdsl.cli import html_report
    from partdsl.core.errors import PartError
    from partdsl.methods.solve import solve

    if not args.html.lower().endswith((".html", ".htm")):
        raise PartError(f"--html {args.html}: the report is an HTML page", None, "name it *.html")
    figures = load_figures()
    spec = load_spec(args)
    r = solve(spec, method=args.method, time_limit=args.time_limit, gap=args.gap, seed=args.seed)
    dev = svg = None
    if r.evaluation is not None and (r.assignment is not None or r.evaluation.schedule is not None):
        dev, bound = answer_of(spec, r)
        fig = figures.answer_figure(spec, r.evaluation, dev, r.evaluation.subgraph, bound)
        svg = html_report.inline_svg(fig)
        figures._pyplot().close(fig)
    if args.micro_batches is not None and args.micro_batches < 1:
        raise PartError(f"--micro-batches {args.micro_batches}: a step has at least one micro-batch", None,
                        "e.g. --micro-batches 16")
    doc = html_report.page(spec, args.spec, r, dev, svg, command(args), args.micro_batches)
    Path(args.html).write_text(doc, encoding="utf-8")
    emit(args, {"ok": True, "file": args.html, "status": r.status.value, "objective": r.objective,
                "bound": r.bound, "gap": r.gap},
         f"wrote {args.html} ({r.status.value}, {spec.objective.entity.label} {r.objective:.6g} {r.unit}, "
         f"gap {100 * r.gap:.3g}%)")
    return EXIT_OK

"""`part bound SPEC`: the lower-bound hierarchy (Archer sec. 3: simple, LP, bottleneck,
bottleneck-guess, exact; under latency: critical path, path segmentation, LP, exact)."""
from __future__ import annotations

import argparse
import math
import sys

from partdsl.cli.common import (
    EXIT_INTERRUPTED,
    EXIT_NO_SOLUTION,
    EXIT_OK,
    duration,
    executor_argument,
    load_figures,
    progress_printer,
    solver_names,
    spec_arguments,
)
from partdsl.cli.sweep import run_points


def add(sub) -> None:  # type: ignore[no-untyped-def]
    p = sub.add_parser("bound", help="the lower-bound hierarchy (simple, LP, bottleneck, bottleneck-guess, exact)")
    spec_arguments(p)
    p.add_argument("--time-limit", type=duration, metavar="SECONDS", help="budget of each MIP (bottleneck-guess: of all k)")
    p.add_argument("--solver", help="MIP backend of the MIP bounds: " + solver_names() + " (the LP bound is HiGHS's simplex)")
    p.add_argument("--threads", type=int, metavar="N")
    p.add_argument("--workers", type=int, metavar="N",
                   help="processes for the bottleneck-guess MIPs (default: this process for the first second, "
                   "then one per core)")
    p.add_argument("--only", metavar="LIST", help="a comma-separated subset of simple,lp,bottleneck,bottleneck_guess,exact")
    p.add_argument("--plot", metavar="FILE", help="also draw the bounds as fractions of the best solution (png, svg, pdf)")
    p.add_argument("--seed", type=int, metavar="N")
    p.add_argument("--progress", action="store_true", help="progress on stderr even when not a terminal")
    executor_argument(p)
    p.set_defaults(func=run)


def _bound_one(spec, args: argparse.Namespace, executor=None):  # type: ignore[no-untyped-def]
    from partdsl.cli.report import fmt, hierarchy_report
    from partdsl.methods.hierarchy import NAMES, hierarchy

    progress = progress_printer(args)
    only = tuple(args.only.split(",")) if args.only else NAMES
    h = hierarchy(spec, time_limit=args.time_limit, solver=args.solver, threads=args.threads,
                  workers=args.workers, seed=args.seed or 0, progress=progress, only=only, executor=executor)
    fr = [h.fraction(n) for n in NAMES]
    row = [fmt(h.best)] + [f"{f:.4f}" if f is not None else "-" for f in fr]
    code = EXIT_OK if math.isfinite(h.best) else EXIT_NO_SOLUTION
    if h.interrupted:
        print("interrupted: the bounds computed so far are printed", file=sys.stderr)
        code = EXIT_INTERRUPTED
    if getattr(args, "plot", None) and not args.sweeping:
        figures = load_figures()
        figures.save(figures.bounds_figure(h), args.plot)
    return h.to_json(), hierarchy_report(spec, h), code, row, None


def run(args: argparse.Namespace) -> int:
    from partdsl.core.errors import PartError
    from partdsl.methods.hierarchy import NAMES

    if args.only:
        bad = [x for x in args.only.split(",") if x not in NAMES]
        if bad:
            raise PartError(f"--only {bad[0]}: no such bound", None, "choose from " + ",".join(NAMES))
    return run_points(args, _bound_one, ["best"] + [n.replace("_", "-") for n in NAMES])

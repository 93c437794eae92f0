"""`part solve SPEC`: run a method (the spec's, --method, or the default) and print the incumbent, the
proven bound and the gap; `-D k=2,4,8` sweeps a param, one row per point."""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from partdsl.cli.common import (
    EXIT_INFEASIBLE,
    EXIT_INTERRUPTED,
    EXIT_NO_SOLUTION,
    EXIT_OK,
    Deferred,
    HelpFormatter,
    defines,
    duration,
    executor_argument,
    method_names,
    method_options,
    progress_printer,
    solver_names,
    spec_arguments,
)
from partdsl.cli.sweep import run_points


def add(sub) -> None:  # type: ignore[no-untyped-def]
    p = sub.add_parser("solve", help="find a partition, with a bound and a gap", formatter_class=HelpFormatter)
    spec_arguments(p)
    p.add_argument("--method", help=Deferred(method_names))
    p.add_argument("-O", dest="option", action="append", metavar="NAME=VALUE",
                   help="a method option, e.g. -O population=50 -O generations=20 (brkga), -O samples=100 (random)")
    p.add_argument("--solver", help="MIP backend: " + solver_names()
                   + ", or another solver Pyomo knows (glpk, xpress_direct, ...)")
    p.add_argument("--time-limit", type=duration, metavar="SECONDS",
                   help="wall-clock budget: seconds, or with a unit (500ms, 30s, 2min, 1.5h)")
    p.add_argument("--gap", type=float, metavar="FRACTION", help="stop when the gap is at most this")
    p.add_argument("--seed", type=int, metavar="N")
    p.add_argument("--threads", type=int, metavar="N")
    p.add_argument("--output", "-o", metavar="FILE", help="also write the assignment (and, for DiviML objectives, the schedule) as JSON")
    p.add_argument("--solver-log", metavar="FILE", help="write the MIP solvers' own logs (method exact)")
    p.add_argument("--progress", action="store_true", help="progress on stderr even when not a terminal")
    executor_argument(p)
    p.set_defaults(func=run)


def _solve_one(spec, args: argparse.Namespace, executor=None):  # type: ignore[no-untyped-def]
    """One solve: (json, text, exit code, sweep-table row, Result)."""
    from partdsl.cli.report import fmt, result_report
    from partdsl.core.result import Status, Termination
    from partdsl.methods.solve import solve

    progress = progress_printer(args)
    method_opts = method_options(defines(args.option)) if args.option else None
    r = solve(spec, method=args.method, solver=args.solver, time_limit=args.time_limit, gap=args.gap,
              seed=args.seed, threads=args.threads, progress=progress, options=method_opts, executor=executor)
    code = EXIT_OK
    if r.stopped == Termination.INTERRUPTED:
        print("interrupted: the best answer found so far is printed", file=sys.stderr)
        code = EXIT_INTERRUPTED
    elif r.status == Status.INFEASIBLE:
        print("error: the spec is infeasible: no assignment satisfies its constraints", file=sys.stderr)
        code = EXIT_INFEASIBLE
    elif r.status == Status.NO_SOLUTION:
        from partdsl.kernels.peers import PEERS

        hint = ("a raw peer partitioner ignores memory, colocation and pins: try -O repair=1, or another --method"
                if r.method in PEERS and not (method_opts or {}).get("repair") else
                "try a longer --time-limit or another --method")
        print(f"error: no feasible solution found ({r.stopped}); this does not prove the spec "
              f"infeasible: {hint}", file=sys.stderr)
        code = EXIT_NO_SOLUTION
    gap = f"{100 * r.gap:.3g}%" if math.isfinite(r.gap) else "inf"
    row = [r.status.value, fmt(r.objective), fmt(r.bound), gap, f"{r.wall_time_s:.2f} s"]
    return r.to_json(), result_report(spec, r), code, row, r


def _solve_point(spec, args: argparse.Namespace, executor=None):  # type: ignore[no-untyped-def]
    """One point of `part solve`: (json, text, exit code, sweep-table row, solver log)."""
    obj, text, code, row, r = _solve_one(spec, args, executor)
    return obj, text, code, row, (r.solver_log or f"(method {r.method} ran no MIP solver)")


def run(args: argparse.Namespace) -> int:
    if args.solver_log:
        Path(args.solver_log).write_text("")

    def after(point: str, res) -> None:  # type: ignore[no-untyped-def]  # files are written here, not on a worker
        obj, _text, _code, _row, log = res
        if args.output and not args.sweeping and (obj.get("assignment") is not None or obj.get("schedule")):
            keep = {k: obj[k] for k in ("assignment", "schedule") if obj.get(k) is not None}
            Path(args.output).write_text(json.dumps(keep, indent=1) + "\n")
        if args.solver_log:  # a sweep appends one part per point
            with open(args.solver_log, "a") as f:
                f.write((f"#### {point}\n" if args.sweeping else "") + log + "\n")

    return run_points(args, _solve_point, ["status", "objective", "bound", "gap", "time"], after)

"""`part sweep SPEC...`: cross specs, methods, solvers and -D values; one tidy row per run
(CSV or JSON lines), resumed from an existing output file (cli/sweep.py)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from partdsl.cli.common import (
    EXIT_OK,
    EXIT_SOLVER,
    EXIT_UNAVAILABLE,
    EXIT_USER,
    Deferred,
    HelpFormatter,
    defines,
    duration,
    emit,
    import_arguments,
    import_options,
    method_options,
)


def default_method() -> str:
    from partdsl.methods.registry import DEFAULT_METHOD

    return DEFAULT_METHOD


def add(sub) -> None:  # type: ignore[no-untyped-def]
    p = sub.add_parser("sweep", help="cross specs, methods, solvers and -D values; one tidy row per run (CSV or JSON lines)",
                       formatter_class=HelpFormatter)
    p.add_argument("specs", nargs="+", metavar="SPEC", help=".part files")
    p.add_argument("--method", help=Deferred(lambda: f"comma-separated methods (default {default_method()})"))
    p.add_argument("--solver", help="comma-separated MIP solvers, for the methods that run one (default highs)")
    p.add_argument("-D", dest="define", action="append", metavar="NAME=V1,V2", help="param values to cross (repeatable)")
    p.add_argument("-O", dest="option", action="append", metavar="NAME=VALUE", help="a method option for every run")
    p.add_argument("--time-limit", type=duration, metavar="SECONDS", help="wall-clock budget of each run")
    p.add_argument("--gap", type=float, metavar="FRACTION")
    p.add_argument("--seed", type=int, default=0, metavar="N")
    p.add_argument("--output", "-o", metavar="FILE", help="runs.csv, or runs.jsonl for JSON lines; an existing file "
                   "is resumed: its rows are not run again, but for the failed ones")
    p.add_argument("--executor", metavar="URL", help="local (default) or dask://HOST:PORT / tcp://HOST:PORT")
    p.add_argument("--workers", type=int, metavar="N", help="local processes (default 1: this process)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    import_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from partdsl.cli import sweep
    from partdsl.cli.report import fmt, table
    from partdsl.core.errors import PartError
    from partdsl.runtime.executor import open_executor

    for f in args.specs:
        if not Path(f).is_file():
            raise PartError(f"no such spec file: {f}", None, "give .part files")
    methods = [m for m in (args.method or default_method()).split(",") if m]
    solvers = [x for x in args.solver.split(",") if x] if args.solver else [None]
    options = method_options(defines(args.option)) if args.option else None
    parsed = {}  # every point's -D values checked before any run starts; the runs take these specs
    points = sweep.grid(defines(args.define))
    for spec in args.specs if args.define else []:
        specs = sweep.check_points(spec, points, import_options(args))
        parsed.update({sweep.spec_key(spec, p, import_options(args)): s for p, s in zip(points, specs)})
    jobs = sweep.jobs(args.specs, defines(args.define), methods, solvers, args.seed, args.time_limit, args.gap,
                      options, import_options(args))
    out = Path(args.output) if args.output else None
    got: dict[int, dict] = {}
    ran = 0
    with open_executor(args.executor) as executor:
        for i, row, was_run in sweep.sweep(jobs, out, args.workers, executor, parsed):
            got[i] = row
            ran += was_run
            if was_run and not args.json:
                print(f"  ... {len(got)}/{len(jobs)} {row['spec']} {row['params']} {row['method']} "
                      f"{row['solver']}: {row['status']}", file=sys.stderr, flush=True)
    rows = [got[i] for i in sorted(got)]  # in the sweep's order, whatever order they finished in
    resumed = len(jobs) - ran
    head = ["spec", "params", "method", "solver", "status", "objective", "bound", "gap", "time"]
    cells = [[str(r.get(k, "")) if k not in ("objective", "bound", "gap", "time") or r.get(k, "") == "" else
              (f"{100 * r[k]:.3g}%" if k == "gap" and r[k] > 1e-9 else "0%" if k == "gap" else fmt(r[k])) for k in head] for r in rows]
    note = f"{ran} run(s)" + (f", {resumed} already in {out}" if resumed else "") + (f"; rows in {out}" if out else "")
    emit(args, {"rows": rows, "ran": ran, "resumed": resumed},
          table(cells, head) + "\n" + note)
    bad = {"error": EXIT_USER, "unavailable": EXIT_UNAVAILABLE, "solver_failed": EXIT_SOLVER}
    failed = sum(1 for r in rows if r.get("status") in bad)
    if failed:
        print(f"{failed} run(s) failed: see the error column" + (f" of {out}" if out else " (--json)"),
              file=sys.stderr)
    return max((bad.get(r.get("status", ""), EXIT_OK) for r in rows), default=EXIT_OK)

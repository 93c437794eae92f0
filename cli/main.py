"""`part`: check | eval | solve | bound | convert. Exit codes are a stable contract:

0 success; 1 internal error (a bug: please report); 2 user error in the spec, a file or
the arguments; 3 infeasible (proven); 4 no solution within the limits; 5 solver not
installed; 6 the solver failed (a license or size limit, a crash of its own); 130
interrupted by Ctrl-C (the best answer found so far is printed).
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
import traceback
from pathlib import Path
from typing import Sequence

EXIT_OK, EXIT_INTERNAL, EXIT_USER, EXIT_INFEASIBLE, EXIT_NO_SOLUTION, EXIT_UNAVAILABLE, EXIT_SOLVER = range(7)
EXIT_INTERRUPTED = 130  # Ctrl-C, as shells report it; the best answer so far is printed


def _defines(items: list[str]) -> dict[str, str]:
    from partdsl.core.errors import PartError

    out = {}
    for it in items or []:
        if "=" not in it:
            raise PartError(f"-D {it}: expected name=value", None, "e.g. -D k=8 or -D mem=32GiB")
        k, v = it.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def _numbers(opts: dict[str, str]) -> dict[str, float]:
    from partdsl.core.errors import PartError

    try:
        return {k: float(v) for k, v in opts.items()}
    except ValueError:
        bad = next(k for k, v in opts.items() if not v.replace(".", "", 1).isdigit())
        raise PartError(f"-O {bad}={opts[bad]}: not a number", None, f"e.g. -O {bad}=50") from None


def _load(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from partdsl.dsl.parser import parse_file

    return parse_file(args.spec, _defines(args.define))


def _emit(args: argparse.Namespace, obj: dict, text: str) -> None:
    """The command's one answer; printed by `main` once the command has run."""
    args.emitted = json.dumps(obj, indent=1) if getattr(args, "json", False) else text


def cmd_check(args: argparse.Namespace) -> int:
    from partdsl.cli.report import describe
    from partdsl.methods.bounds import bound

    spec = _load(args)
    b = bound(spec)
    d = spec.dense
    _emit(args, {"ok": True, "file": spec.file, "graph": spec.graph.name, "nodes": d.n, "edges": d.m,
                 "devices": list(d.devices), "objective": spec.objective.kind,
                 "training": spec.graph.is_training, "bound": b}, describe(spec, b))
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    from partdsl.cli.export_mip import exact_mip, relaxed, write
    from partdsl.core.errors import PartError

    targets = [(f, x) for f, x in ((args.mps, ".mps"), (args.lp, ".lp")) if f]
    if not targets:
        raise PartError("nothing to write", None, "give --mps FILE and/or --lp FILE")
    for f, ext in targets:
        if not f.lower().endswith(ext):
            raise PartError(f"'{f}' does not end in {ext}", None, f"name the file *{ext}, or use --{'lp' if ext == '.mps' else 'mps'}")
    spec = _load(args)
    mip, name = exact_mip(spec, args.horizon)
    if args.relaxation:
        mip, name = relaxed(mip), f"the LP relaxation of {name}"
    for f, _ in targets:
        write(mip, f)
    rows, cols = mip.A.shape
    ints = int(mip.integer.sum())
    _emit(args, {"ok": True, "model": name, "rows": rows, "columns": cols, "integer_columns": ints,
                 "files": [f for f, _ in targets]},
          f"wrote {name}: {rows:,} rows x {cols:,} columns ({ints:,} integer) to " + ", ".join(f for f, _ in targets))
    return EXIT_OK


def _evaluate_file(spec, path: str, data):  # type: ignore[no-untyped-def]
    """Score a partition or schedule file: (Evaluation, device per node, subgraphs)."""
    from partdsl.core.assignment import parse_partition
    from partdsl.core.errors import PartError
    from partdsl.core.evaluate import evaluate
    from partdsl.core.schedule import from_json as schedule_from_json
    from partdsl.core.schedule_eval import evaluate_schedule

    if isinstance(data, dict) and "schedule" in data and data["schedule"] is not None:  # DiviML: pieces and starts
        if not spec.objective.scheduled:
            raise PartError(f"{path} holds a schedule, but the spec's objective is {spec.objective.kind}",
                            None, "schedules are scored under `minimize latency by tasks` or `maximize throughput`")
        ev = evaluate_schedule(spec, schedule_from_json(spec, data["schedule"], f"{path}: schedule"))
        return ev, ev.schedule.node_devices(spec.dense.n), None
    arr, sub = parse_partition(spec, data, str(path))
    ev = evaluate(spec, arr, sub)
    return ev, arr, ev.subgraph


def cmd_eval(args: argparse.Namespace) -> int:
    from partdsl.cli.report import evaluation_report
    from partdsl.core.assignment import read_json, subgraph_map

    spec = _load(args)
    data = read_json(args.partition)
    ev, arr, sub = _evaluate_file(spec, args.partition, data)
    doc = ev.to_json()
    if ev.schedule is not None:
        doc["schedule"] = ev.schedule.to_json(spec)
    if sub is not None and spec.constraints.subgraphs > 1:
        doc["subgraphs"] = subgraph_map(spec, arr, sub)
    _emit(args, doc, evaluation_report(spec, ev, arr))
    return EXIT_INFEASIBLE if (args.strict and not ev.feasible) else EXIT_OK


def _progress(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """Progress lines on stderr when it is a terminal, or always with --progress."""
    if args.progress or (not args.json and sys.stderr.isatty()):
        return lambda msg: print(f"  ... {msg}", file=sys.stderr, flush=True)
    return None


def _solve_one(spec, args: argparse.Namespace, executor=None):  # type: ignore[no-untyped-def]
    """One solve: (json, text, exit code, sweep-table row, Result)."""
    from partdsl.cli.report import fmt, result_report
    from partdsl.core.result import Status, Termination
    from partdsl.methods.solve import solve

    progress = _progress(args)
    method_opts = _numbers(_defines(args.option)) if args.option else None
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
        from partdsl.kernels.peers.runners import PEERS

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


def cmd_solve(args: argparse.Namespace) -> int:
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

    return _run(args, _solve_point, ["status", "objective", "bound", "gap", "time"], after)


def _bound_one(spec, args: argparse.Namespace, executor=None):  # type: ignore[no-untyped-def]
    from partdsl.cli.report import fmt, hierarchy_report
    from partdsl.methods.hierarchy import NAMES, hierarchy

    progress = _progress(args)
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
        figures = _figures()
        figures.save(figures.bounds_figure(h), args.plot)
    return h.to_json(), hierarchy_report(spec, h), code, row, None


def cmd_bound(args: argparse.Namespace) -> int:
    from partdsl.core.errors import PartError
    from partdsl.methods.hierarchy import NAMES

    if args.only:
        bad = [x for x in args.only.split(",") if x not in NAMES]
        if bad:
            raise PartError(f"--only {bad[0]}: no such bound", None, "choose from " + ",".join(NAMES))
    return _run(args, _bound_one, ["best"] + [n.replace("_", "-") for n in NAMES])


def _point(fn, args: argparse.Namespace, defines: dict[str, str]):  # type: ignore[no-untyped-def]
    """One point of a sweep, wherever the executor runs it."""
    from partdsl.dsl.parser import parse_file

    return fn(parse_file(args.spec, defines), args)


def _run(args: argparse.Namespace, fn, header: list[str], after=None) -> int:  # type: ignore[no-untyped-def]
    """One spec, or a sweep when a -D value lists several (`-D k=2,4,8`): one row each,
    the points run on `--executor` (local: `--workers` processes, default this process).
    Without a sweep, the independent subproblems run there: `part bound`'s
    bottleneck-guess MIPs, MILP-SPLIT's module MILPs."""
    from partdsl.cli.report import table
    from partdsl.dsl.parser import parse_file
    from partdsl.runtime.executor import open_executor, run_all

    defines = _defines(args.define)
    swept = {k: v.split(",") for k, v in defines.items() if "," in v}
    args.sweeping = bool(swept)
    with open_executor(getattr(args, "executor", None)) as executor:
        if not swept:
            spec = parse_file(args.spec, defines)
            res = fn(spec, args, executor)
            if after:
                after("", res)
            _emit(args, res[0], res[1])
            return res[2]
        keys = list(swept)
        points = [dict(zip(keys, combo)) for combo in itertools.product(*swept.values())]
        labels = [", ".join(f"{k}={v}" for k, v in p.items()) for p in points]
        jobs = [(fn, _picklable(args), {**defines, **p}) for p in points]
        got: dict[int, tuple] = {}
        workers = getattr(args, "sweep_workers", None) or 1
        for i, res in run_all(_point, jobs, workers, executor):
            if not args.json:
                print(f"  ... {labels[i]}: done", file=sys.stderr, flush=True)
            got[i] = res
            if after:
                after(labels[i], res)
            if res[2] == EXIT_INTERRUPTED:  # Ctrl-C ends the sweep, not just this point
                break
    order = sorted(got)
    rows = [list(points[i].values()) + got[i][3] for i in order]
    objs = [{"params": points[i], **got[i][0]} for i in order]
    _emit(args, {"sweep": objs}, table(rows, keys + header))
    return max((got[i][2] for i in order), default=EXIT_OK)


def _picklable(args: argparse.Namespace) -> argparse.Namespace:
    """The arguments without what cannot travel to another process."""
    out = argparse.Namespace(**vars(args))
    out.func = None
    out.emitted = None
    return out


def cmd_sweep(args: argparse.Namespace) -> int:
    from partdsl.cli import sweep
    from partdsl.cli.report import fmt, table
    from partdsl.core.errors import PartError
    from partdsl.runtime.executor import open_executor

    for f in args.specs:
        if not Path(f).is_file():
            raise PartError(f"no such spec file: {f}", None, "give .part files")
    methods = [m for m in args.method.split(",") if m]
    solvers = [x for x in args.solver.split(",") if x] if args.solver else [None]
    options = _numbers(_defines(args.option)) if args.option else None
    jobs = sweep.jobs(args.specs, _defines(args.define), methods, solvers, args.seed, args.time_limit, args.gap,
                      options)
    out = Path(args.output) if args.output else None
    got: dict[int, dict] = {}
    ran = 0
    with open_executor(args.executor) as executor:
        for i, row, was_run in sweep.sweep(jobs, out, args.workers, executor):
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
    _emit(args, {"rows": rows, "ran": ran, "resumed": resumed},
          table(cells, head) + "\n" + note)
    bad = {"error": EXIT_USER, "unavailable": EXIT_UNAVAILABLE, "solver_failed": EXIT_SOLVER}
    failed = sum(1 for r in rows if r.get("status") in bad)
    if failed:
        print(f"{failed} run(s) failed: see the error column" + (f" of {out}" if out else " (--json)"),
              file=sys.stderr)
    return max((bad.get(r.get("status", ""), EXIT_OK) for r in rows), default=EXIT_OK)


def cmd_plot(args: argparse.Namespace) -> int:
    """The graph colored by device, with the load bars or the Gantt chart below it."""
    import numpy as np
    from partdsl.core.assignment import read_json
    from partdsl.core.errors import PartError

    figures = _figures()
    spec = _load(args)
    if args.partition:
        ev, dev, sub = _evaluate_file(spec, args.partition, read_json(args.partition))
        how = f"scored {args.partition}"
    else:
        from partdsl.methods.solve import solve

        r = solve(spec, method=args.method, time_limit=args.time_limit, seed=args.seed)
        if r.evaluation is None:
            raise PartError(f"method {r.method} found nothing to draw ({r.stopped})", None,
                            "give a partition file, or try another --method or a longer --time-limit")
        ev = r.evaluation
        dev = (np.array([spec.dense.devices.index(r.assignment[v]) for v in spec.dense.names])
               if r.assignment is not None else ev.schedule.node_devices(spec.dense.n))
        sub = ev.subgraph
        how = f"solved by {r.method}: {r.status.value}"
    fig = figures.answer_figure(spec, ev, dev, sub)
    figures.save(fig, args.output)
    _emit(args, {"ok": True, "file": args.output, "objective": ev.objective, "feasible": ev.feasible},
          f"wrote {args.output} ({how}; {spec.objective.kind} {ev.objective:.6g} {ev.unit})")
    return EXIT_OK


def _figures():  # type: ignore[no-untyped-def]
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        from partdsl.core.solver_errors import SolverUnavailable

        raise SolverUnavailable("matplotlib", hint="pip install 'partdsl[plot]' (or pip install matplotlib)",
                                what="plotting library") from None
    from partdsl.viz import figures

    return figures


def cmd_convert(args: argparse.Namespace) -> int:
    from partdsl.cli.convert import dnn_partitioning_to_part, graph_json
    from partdsl.core.errors import PartError

    src = Path(args.file)
    fmt = args.from_format or ("dnn-partitioning" if src.suffix == ".json" else
                               "onnx" if src.suffix.lower() == ".onnx" else "part")
    out_dir = Path(args.output).parent if args.output else None
    if fmt == "onnx":
        from partdsl.cli.convert import onnx_to_part

        if args.to not in (None, "part"):
            raise PartError(f"cannot convert onnx to '{args.to}'", None, "use --to part")
        text = onnx_to_part(src, args.objective or "latency", args.fuse)
    elif fmt == "dnn-partitioning":
        if args.to not in (None, "part"):
            raise PartError(f"cannot convert dnn-partitioning to '{args.to}'", None, "use --to part")
        text = dnn_partitioning_to_part(src, args.objective or "bottleneck", args.split, out_dir)
    elif fmt == "part":
        from partdsl.dsl.parser import parse_file
        from partdsl.dsl.printer import to_part

        spec = parse_file(src, _defines(args.define))
        if args.to in (None, "part"):
            text = to_part(spec, header=f"{src.name}, normalized by `part convert`")
        elif args.to == "json":
            text = graph_json(spec.graph)
        else:
            raise PartError(f"unknown target format '{args.to}'", None, "use --to part or --to json")
    else:
        raise PartError(f"unknown source format '{fmt}'", None, "use --from dnn-partitioning or --from part")
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def cmd_generate(args: argparse.Namespace) -> int:
    from partdsl.core.validate import validate
    from partdsl.dsl.printer import to_part
    from partdsl.dsl.randwire import RandWire, randwire_spec

    rw = RandWire(model=args.model, size=args.size, modules=args.modules, channels=args.channels,
                  variant=args.variant, p=args.p, k=args.k, m=args.m, seed=args.seed)
    spec = randwire_spec(rw, args.objective, args.batch, args.split)
    validate(spec)
    what = (f"RandWire {args.model.upper()} {args.variant}, {args.modules} module(s) of {args.size} nodes, "
            f"{args.channels} channel(s), made by\n#   part generate randwire --model {args.model} --size {args.size} "
            f"--modules {args.modules} --channels {args.channels} --variant {args.variant} -p {args.p:g} "
            f"-k {args.k} -m {args.m} --objective {args.objective} --batch {args.batch} --split {args.split} "
            f"--seed {args.seed}")
    text = to_part(spec, header=what)
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    from partdsl.methods.registry import DEFAULT_METHOD, METHODS
    from partdsl.solvers.registry import DEFAULT_SOLVER
    from partdsl.solvers.registry import DISPLAY_NAMES as NAMES
    ap = argparse.ArgumentParser(
        prog="part", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Partition DNN computation graphs across devices, with certified answers.",
        epilog="exit codes:\n  0 success\n  1 internal error (a bug)\n  2 user error in the spec, a file "
               "or the arguments\n  3 infeasible\n  4 no solution within the limits\n  5 solver not installed\n"
               "  6 the solver failed (license or size limit, or its own crash)\n"
               "  130 interrupted by Ctrl-C (the best answer found so far is printed)")
    sub = ap.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser, spec: bool = True) -> None:
        if spec:
            p.add_argument("spec", help="a .part file")
        p.add_argument("-D", dest="define", action="append", metavar="NAME=VALUE",
                       help="override a param, e.g. -D k=8 or -D mem=32GiB (repeatable); -D k=2,4,8 sweeps")
        p.add_argument("--json", action="store_true", help="machine-readable output on stdout")

    p = sub.add_parser("check", help="parse and validate a spec, print a summary")
    common(p)
    p.set_defaults(func=cmd_check)
    p = sub.add_parser("eval", help="score a partition under the spec's cost model")
    common(p)
    p.add_argument("partition", help="JSON: {node: device}, a `part solve --json` result, or a human-expert file")
    p.add_argument("--strict", action="store_true", help="exit 3 if a constraint is violated")
    p.set_defaults(func=cmd_eval)
    p = sub.add_parser("solve", help="find a partition, with a bound and a gap")
    common(p)
    p.add_argument("--method", help=", ".join(f"{m} (default)" if m == DEFAULT_METHOD else m for m in METHODS))
    p.add_argument("-O", dest="option", action="append", metavar="NAME=VALUE",
                   help="a method option, e.g. -O population=50 -O generations=20 (brkga), -O samples=100 (random)")
    p.add_argument("--solver", help="MIP backend: " + ", ".join(f"{s} (default)" if s == DEFAULT_SOLVER else s for s in NAMES)
                   + ", or another solver Pyomo knows (glpk, xpress_direct, ...)")
    p.add_argument("--time-limit", type=float, metavar="SECONDS", help="wall-clock budget")
    p.add_argument("--gap", type=float, metavar="FRACTION", help="stop when the gap is at most this")
    p.add_argument("--seed", type=int, metavar="N")
    p.add_argument("--threads", type=int, metavar="N")
    p.add_argument("--output", "-o", metavar="FILE", help="also write the assignment (and, for DiviML objectives, the schedule) as JSON")
    p.add_argument("--solver-log", metavar="FILE", help="write the MIP solvers' own logs (method exact)")
    p.add_argument("--progress", action="store_true", help="progress on stderr even when not a terminal")
    p.add_argument("--executor", metavar="URL", help="where sweep points (and part bound's guess MIPs) run: local "
                   "(default) or a Dask scheduler, dask://HOST:PORT or tcp://HOST:PORT")
    p.set_defaults(func=cmd_solve)
    p = sub.add_parser("export", help="write the MIP that method exact solves as MPS or LP, for any solver")
    common(p)
    p.add_argument("--mps", metavar="FILE", help="write it as MPS (free format)")
    p.add_argument("--lp", metavar="FILE", help="write it in CPLEX LP format")
    p.add_argument("--relaxation", action="store_true", help="the LP relaxation (integrality dropped)")
    p.add_argument("--horizon", type=float, metavar="H", help="latency IP / DiviML MILP: the horizon (big-M), "
                   "an upper bound on the optimum (default: a proven safe one)")
    p.set_defaults(func=cmd_export)
    p = sub.add_parser("bound", help="the lower-bound hierarchy (simple, LP, bottleneck, bottleneck-guess, exact)")
    common(p)
    p.add_argument("--time-limit", type=float, metavar="SECONDS", help="budget of each MIP (bottleneck-guess: of all k)")
    p.add_argument("--solver", help="MIP backend of the MIP bounds: " + ", ".join(
        f"{s} (default)" if s == DEFAULT_SOLVER else s for s in NAMES) + " (the LP bound is HiGHS's simplex)")
    p.add_argument("--threads", type=int, metavar="N")
    p.add_argument("--workers", type=int, metavar="N", help="processes for the bottleneck-guess MIPs (default: cores)")
    p.add_argument("--only", metavar="LIST", help="a comma-separated subset of simple,lp,bottleneck,bottleneck_guess,exact")
    p.add_argument("--plot", metavar="FILE", help="also draw the bounds as fractions of the best solution (png, svg, pdf)")
    p.add_argument("--seed", type=int, metavar="N")
    p.add_argument("--progress", action="store_true", help="progress on stderr even when not a terminal")
    p.add_argument("--executor", metavar="URL", help="where sweep points (and part bound's guess MIPs) run: local "
                   "(default) or a Dask scheduler, dask://HOST:PORT or tcp://HOST:PORT")
    p.set_defaults(func=cmd_bound)
    p = sub.add_parser("sweep", help="cross specs, methods, solvers and -D values; one tidy row per run (CSV or JSON lines)")
    p.add_argument("specs", nargs="+", metavar="SPEC", help=".part files")
    p.add_argument("--method", default=DEFAULT_METHOD, help="comma-separated methods (default %(default)s)")
    p.add_argument("--solver", help="comma-separated MIP solvers, for the methods that run one (default highs)")
    p.add_argument("-D", dest="define", action="append", metavar="NAME=V1,V2", help="param values to cross (repeatable)")
    p.add_argument("-O", dest="option", action="append", metavar="NAME=VALUE", help="a method option for every run")
    p.add_argument("--time-limit", type=float, metavar="SECONDS", help="wall-clock budget of each run")
    p.add_argument("--gap", type=float, metavar="FRACTION")
    p.add_argument("--seed", type=int, default=0, metavar="N")
    p.add_argument("--output", "-o", metavar="FILE", help="runs.csv, or runs.jsonl for JSON lines; an existing file "
                   "is resumed: its rows are not run again")
    p.add_argument("--executor", metavar="URL", help="local (default) or dask://HOST:PORT / tcp://HOST:PORT")
    p.add_argument("--workers", type=int, metavar="N", help="local processes (default 1: this process)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.set_defaults(func=cmd_sweep)
    p = sub.add_parser("plot", help="draw an answer: the graph colored by device, with load bars or a Gantt chart")
    common(p)
    p.add_argument("partition", nargs="?", help="a partition or schedule JSON to draw (default: solve first)")
    p.add_argument("--output", "-o", required=True, metavar="FILE", help="out.png, out.svg or out.pdf")
    p.add_argument("--method", help="the method to solve with when no partition is given")
    p.add_argument("--time-limit", type=float, metavar="SECONDS")
    p.add_argument("--seed", type=int, metavar="N")
    p.set_defaults(func=cmd_plot)
    p = sub.add_parser("convert", help="dnn-partitioning JSON or ONNX -> .part spec; .part -> normalized .part or graph JSON")
    p.add_argument("file")
    p.add_argument("--from", dest="from_format", choices=["dnn-partitioning", "onnx", "part"])
    p.add_argument("--to", choices=["part", "json"])
    p.add_argument("--objective", choices=["bottleneck", "latency", "tasks", "throughput"],
                   help="bottleneck (default for dnn-partitioning), latency (default for onnx), tasks, throughput "
                        "(onnx only: batch 16 split 4)")
    p.add_argument("--fuse", action="store_true", help="onnx: fuse the usual chains (Conv + BatchNormalization + Relu, ...)")
    p.add_argument("--split", default="contiguous", choices=["contiguous", "any"],
                   help="contiguous (default) or any: non-contiguous splits allowed")
    p.add_argument("--output", "-o", metavar="FILE")
    p.add_argument("-D", dest="define", action="append", metavar="NAME=VALUE")
    p.set_defaults(func=cmd_convert)
    p = sub.add_parser("generate", help="write a generated workload as a .part spec (randwire: DiviML's RWNNs)")
    p.add_argument("kind", choices=["randwire"])
    p.add_argument("--model", default="er", choices=["er", "ws", "ba"], help="random graph of each module (default er)")
    p.add_argument("--size", type=int, default=10, metavar="N", help="nodes per module (default 10)")
    p.add_argument("--modules", type=int, default=1, metavar="Q", help="modules in a chain (default 1)")
    p.add_argument("--channels", type=int, default=1, metavar="C", help="edges between modules (default 1)")
    p.add_argument("--variant", default="sdep", choices=["sdep", "wdep"], help="channel dependence (Fig. 2)")
    p.add_argument("-p", type=float, default=0.2, help="ER and WS probability (default 0.2)")
    p.add_argument("-k", type=int, default=4, help="WS neighbours (default 4)")
    p.add_argument("-m", type=int, default=5, help="BA edges per new node (default 5)")
    p.add_argument("--objective", default="latency", choices=["latency", "throughput"])
    p.add_argument("--batch", type=int, default=1, metavar="B", help="throughput batch (default 1)")
    p.add_argument("--split", type=int, default=1, metavar="K", help="chunks of the batch (default 1)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output", "-o", metavar="FILE")
    p.set_defaults(func=cmd_generate)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    from partdsl.core.errors import PartError
    from partdsl.core.solver_errors import SolverFailed, SolverUnavailable

    args = build_parser().parse_args(argv)
    args.emitted = None
    try:
        code = _guarded(args)
        if args.emitted is not None:
            print(args.emitted)
        return code
    except PartError as e:
        print(e.render(), file=sys.stderr)
        if getattr(args, "json", False):
            print(json.dumps(e.to_json()))
        return EXIT_USER
    except (SolverUnavailable, SolverFailed) as e:
        unavailable = isinstance(e, SolverUnavailable)
        print(f"error: {e}\nhint: {e.hint}", file=sys.stderr)
        if getattr(args, "json", False):
            kind = "solver_unavailable" if unavailable else "solver_failed"
            print(json.dumps({"error": str(e), "kind": kind, "hint": e.hint}))
        return EXIT_UNAVAILABLE if unavailable else EXIT_SOLVER
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK
    except Exception as e:  # a bug in partdsl, not the user's fault
        from partdsl.runtime.interrupt import is_ctrl_c

        if is_ctrl_c(e):  # Ctrl-C inside a numba call, outside a solve
            print("interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
        if os.environ.get("PARTDSL_DEBUG"):
            traceback.print_exc()
        exc = sys.exc_info()[1]
        print(f"internal error: {type(exc).__name__}: {exc}\nThis is a bug in partdsl; rerun with "
              "PARTDSL_DEBUG=1 for the traceback and please report it.", file=sys.stderr)
        return EXIT_INTERNAL


def _guarded(args: argparse.Namespace) -> int:
    """Run the command. With --json, standard output must hold exactly one JSON document:
    whatever reaches descriptor 1 while the command runs (a library's print, a solver's
    banner that the adapters did not catch) goes to standard error instead."""
    if not getattr(args, "json", False):
        return args.func(args)
    from partdsl.runtime.capture import captured_stdout

    stray = None
    try:
        with captured_stdout() as stray:
            return args.func(args)
    finally:  # after the capture has ended and read its text
        if stray is not None and stray.text:
            sys.stderr.write(stray.text)


if __name__ == "__main__":
    sys.exit(main())

"""Sweeps, the one mechanism: `grid` expands `-D` values (a value with commas is swept),
`run_all` (runtime/executor.py) runs the points. `run_points` is `part solve` and `part
bound` with `-D k=2,4,8` (one table row per point); the rest is `part sweep`:
solver-agnostic experiments. The cross product of specs, `-D` parameter
values, methods and solvers, one solve each, on the executor of runtime/executor.py
(local processes, or a Dask cluster), written as one tidy row per run as it finishes
(CSV, or JSON lines for `.jsonl` / `.json`), so an interrupted sweep resumes: rows
already in the output file are not run again.

A method that runs no MIP solver runs once per point, whatever the solver list (its row
says `numpy`). A run that fails (a method that refuses the objective, a solver that is not
installed) gets a row too, its status saying why.
"""
from __future__ import annotations

import argparse
import csv
import itertools
import json
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterator, Mapping

from partdsl.cli.common import EXIT_INTERRUPTED, EXIT_OK, defines, emit, import_options
from partdsl.importers.import_options import ImportOptions

COLUMNS = ("spec", "params", "method", "solver", "seed", "status", "objective", "bound", "gap", "time",
           "stopped", "error")
FAILED = ("error", "unavailable", "solver_failed")  # the statuses of a run that did not run to its end
KEY = ("spec", "params", "method", "solver", "seed")


@dataclass(frozen=True)
class Job:
    spec: str
    params: tuple[tuple[str, str], ...]
    method: str
    solver: str | None
    seed: int
    time_limit: float | None
    gap: float | None
    options: tuple[tuple[str, float], ...] = ()
    imports: ImportOptions = ImportOptions()
    parsed: object = field(default=None, compare=False, repr=False)  # the Spec, parsed here: content travels

    def key(self, solver_label: str) -> tuple[str, ...]:
        return (self.spec, params_text(self.params), self.method, solver_label, str(self.seed))


def params_text(params: tuple[tuple[str, str], ...] | Mapping[str, str]) -> str:
    items = params.items() if isinstance(params, Mapping) else params
    return ";".join(f"{k}={v}" for k, v in items)


def grid(defines: Mapping[str, str]) -> list[dict[str, str]]:
    """Every point of a sweep: the product of the -D values, a value with commas swept
    (`-D k=2,4,8 -D mem=16GiB` gives three points), in a stable order."""
    swept = {k: v.split(",") for k, v in defines.items()}
    return [dict(zip(swept, combo)) for combo in itertools.product(*swept.values())]


def jobs(specs: list[str], defines: Mapping[str, str], methods: list[str], solvers: list[str | None],
         seed: int, time_limit: float | None, gap: float | None,
         options: Mapping[str, float] | None = None, imports: ImportOptions = ImportOptions()) -> list[Job]:
    """Every run of the sweep, in a stable order. A `-D` value with commas is swept."""
    from partdsl.methods.registry import ALIASES, METHODS

    out: list[Job] = []
    for spec in specs:
        for point in grid(defines):
            params = tuple(point.items())
            for method in methods:
                m = METHODS.get(ALIASES.get(method, method))
                for solver in (solvers if m is None or m.takes_solver else [None]):
                    out.append(Job(spec, params, method, solver, seed, time_limit, gap,
                                   tuple(sorted((options or {}).items())), imports))
    return out


def solver_label(job: Job) -> str:
    from partdsl.methods.registry import ALIASES, METHODS
    from partdsl.solvers.registry import DEFAULT_SOLVER

    m = METHODS.get(ALIASES.get(job.method, job.method))
    return "numpy" if m is not None and not m.takes_solver else (job.solver or DEFAULT_SOLVER)


def run_job(job: Job) -> dict:
    """One run, as a row (never raises for a user's mistake: the row says what went wrong)."""
    from partdsl.core.errors import PartError
    from partdsl.core.solver_errors import SolverFailed, SolverUnavailable
    from partdsl.dsl.parser import parse_file
    from partdsl.methods.solve import solve

    row: dict = dict(zip(KEY, job.key(solver_label(job))))
    row["seed"] = job.seed
    t0 = time.monotonic()
    try:
        spec = job.parsed if job.parsed is not None else parse_file(job.spec, dict(job.params), job.imports)
        r = solve(spec, method=job.method, solver=job.solver, time_limit=job.time_limit, gap=job.gap,
                  seed=job.seed, options=dict(job.options) or None)
        row.update(status=r.status.value, objective=r.objective, bound=r.bound, gap=r.gap,
                   time=round(r.wall_time_s, 3), stopped=r.stopped.value, error="")
    except PartError as e:
        row.update(status="error", error=str(e).splitlines()[0].removeprefix("error: "))
    except SolverUnavailable as e:
        row.update(status="unavailable", error=f"{e} ({e.hint})")
    except SolverFailed as e:
        row.update(status="solver_failed", error=str(e))
    row.setdefault("time", round(time.monotonic() - t0, 3))
    for c in COLUMNS:
        row.setdefault(c, "")
    return row


def _json_lines(path: Path) -> bool:
    return path.suffix.lower() in (".jsonl", ".json", ".ndjson")


def previous_rows(path: Path) -> dict[tuple[str, ...], dict]:
    """The rows already in `path`, by key: a resumed sweep does not run them again, but a
    row that failed (an error, a solver not installed or failed) is run again."""
    if not path.exists() or path.stat().st_size == 0:
        return {}
    with path.open(newline="") as f:
        if _json_lines(path):
            rows = [json.loads(line) for line in f if line.strip()]
        else:
            rows = [{k: _number(v) for k, v in r.items()} for r in csv.DictReader(f)]
    return {tuple(str(r.get(k, "")) for k in KEY): r for r in rows if r.get("status") not in FAILED}


def _number(x: str) -> object:
    try:
        return float(x) if any(c in x for c in ".ein") else int(x)
    except ValueError:
        return x


class Writer:
    """Appends rows to the output file, flushed one by one."""

    def __init__(self, path: Path) -> None:
        self.path = path
        fresh = not path.exists() or path.stat().st_size == 0
        self.f = path.open("a", newline="")
        self.csv = None if _json_lines(path) else csv.DictWriter(self.f, fieldnames=COLUMNS)
        if self.csv is not None and fresh:
            self.csv.writeheader()

    def write(self, row: dict) -> None:
        if self.csv is not None:
            self.csv.writerow({k: _cell(row[k]) for k in COLUMNS})
        else:
            self.f.write(json.dumps({k: _json_value(row[k]) for k in COLUMNS}) + "\n")
        self.f.flush()

    def close(self) -> None:
        self.f.close()


def _cell(x: object) -> object:
    return repr(x) if isinstance(x, float) else x  # repr: every digit, inf as 'inf'


def _json_value(x: object) -> object:
    if isinstance(x, float) and (x != x or x in (float("inf"), float("-inf"))):
        return str(x)
    return x


def sweep(all_jobs: list[Job], out: Path | None, workers: int | None = None,
          executor=None, parsed: dict | None = None) -> Iterator[tuple[int, dict, bool]]:  # type: ignore[no-untyped-def]
    """Run the jobs not already in `out`; (job index, row, was_run) for every job, rows of
    an earlier run first, then new rows as they complete. The runs get their specs parsed
    (with_parsed; `parsed`: specs already parsed, by spec_key): a Dask worker elsewhere
    needs no access to the files."""
    from partdsl.runtime.executor import run_all

    done = previous_rows(out) if out is not None else {}
    todo = [j for j in all_jobs if j.key(solver_label(j)) not in done]
    writer = Writer(out) if out is not None else None
    try:
        index = {id(j): i for i, j in enumerate(all_jobs)}
        for i, j in enumerate(all_jobs):
            key = j.key(solver_label(j))
            if key in done:
                yield i, done[key], False
        for t, row in run_all(run_job, [(j,) for j in with_parsed(todo, parsed)], workers or 1, executor):
            if writer is not None:
                writer.write(row)
            yield index[id(todo[t])], row, True
    finally:
        if writer is not None:
            writer.close()


def _point(fn, args: argparse.Namespace, spec):  # type: ignore[no-untyped-def]
    """One point of a sweep, wherever the executor runs it: the spec travels parsed (its
    imported files' content with it), so a remote worker needs none of the paths."""
    return fn(spec, args)


def run_points(args: argparse.Namespace, fn, header: list[str], after=None) -> int:  # type: ignore[no-untyped-def]
    """One spec, or a sweep when a -D value lists several (`-D k=2,4,8`): one row each,
    the points run on `--executor` (local: `--workers` processes, default this process).
    Without a sweep, the independent subproblems run there: `part bound`'s
    bottleneck-guess MIPs, MILP-SPLIT's module MILPs."""
    from partdsl.cli.report import table
    from partdsl.dsl.parser import parse_file
    from partdsl.runtime.executor import open_executor, run_all

    values = defines(args.define)
    args.sweeping = any("," in v for v in values.values())
    with open_executor(getattr(args, "executor", None)) as executor:
        if not args.sweeping:
            spec = parse_file(args.spec, values, import_options(args))
            res = fn(spec, args, executor)
            if after:
                after("", res)
            emit(args, res[0], res[1])
            return res[2]
        keys = [k for k, v in values.items() if "," in v]
        points = [{k: p[k] for k in keys} for p in grid(values)]
        specs = check_points(args.spec, [{**values, **p} for p in points], import_options(args))
        labels = [", ".join(f"{k}={v}" for k, v in p.items()) for p in points]
        todo = [(fn, _picklable(args), spec) for spec in specs]
        got: dict[int, tuple] = {}
        workers = getattr(args, "sweep_workers", None) or 1
        for i, res in run_all(_point, todo, workers, executor):
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
    emit(args, {"sweep": objs}, table(rows, keys + header))
    return max((got[i][2] for i in order), default=EXIT_OK)


def check_points(spec: str, points: list[dict[str, str]], imports: ImportOptions = ImportOptions()) -> list:
    """Every point's -D values, checked before any solve starts: each value parses as a
    number or quantity, names a param of the spec, has its dimension and gives a valid
    spec (each point is parsed here once; a bad one raises PartError naming it). The
    parsed specs, one per point: what the sweep's workers get."""
    from partdsl.core.errors import PartError
    from partdsl.dsl.parser import parse_file, parse_override

    for p in points:  # the values alone first: no parse for a typo
        for k, v in p.items():
            parse_override(k, v)
    out = []
    for p in points:
        try:
            out.append(parse_file(spec, p, imports))
        except PartError as e:
            point = ", ".join(f"{k}={v}" for k, v in p.items())
            raise PartError(f"{spec}, sweep point {point}: {e.message}", e.span, e.hint, e.source, e.kind) from None
    return out


def spec_key(spec: str, params: Mapping[str, str] | tuple, imports: ImportOptions) -> tuple:
    """What a parsed spec is kept under: its file, -D values and import options."""
    return (spec, tuple(params.items()) if isinstance(params, Mapping) else params, imports)


def with_parsed(jobs: list[Job], parsed: dict | None = None) -> list[Job]:
    """The jobs, each with its spec parsed here once per (file, point), so that the runs
    take the content, not the path, wherever they run; `parsed` (by spec_key) holds specs
    parsed already (check_points'). A spec that does not parse stays unparsed: its runs
    say why in their rows."""
    from partdsl.core.errors import PartError
    from partdsl.dsl.parser import parse_file

    parsed = dict(parsed or {})
    out = []
    for j in jobs:
        key = spec_key(j.spec, j.params, j.imports)
        if key not in parsed:
            try:
                parsed[key] = parse_file(j.spec, dict(j.params), j.imports)
            except PartError:
                parsed[key] = None
        out.append(replace(j, parsed=parsed[key]))
    return out


def _picklable(args: argparse.Namespace) -> argparse.Namespace:
    """The arguments without what cannot travel to another process."""
    out = argparse.Namespace(**vars(args))
    out.func = None
    out.emitted = None
    return out

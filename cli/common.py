"""What the `part` commands share: exit codes, -D and -O values, loading a spec, the one
answer a command prints, progress lines, scoring a partition file, and the -D sweep of
`part solve` and `part bound` (`-D k=2,4,8`: one row per point, run on `--executor`)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Callable

EXIT_OK, EXIT_INTERNAL, EXIT_USER, EXIT_INFEASIBLE, EXIT_NO_SOLUTION, EXIT_UNAVAILABLE, EXIT_SOLVER = range(7)
EXIT_INTERRUPTED = 130  # Ctrl-C, as shells report it; the best answer so far is printed
EXIT_CODES = """exit codes:
  0 success
  1 internal error (a bug)
  2 user error in the spec, a file or the arguments, or a method's table too large for the memory free
  3 infeasible
  4 no solution within the limits (time, memory)
  5 solver not installed
  6 the solver failed (license or size limit, or its own crash)
  130 interrupted by Ctrl-C (the best answer found so far is printed)"""


class Parser(argparse.ArgumentParser):
    """argparse with a did-you-mean for a value outside `choices` (`--format megatronn`,
    `part slove`); its subcommand parsers are of this class too."""

    def _check_value(self, action: argparse.Action, value: object) -> None:
        if action.choices is not None and value not in action.choices:
            from partdsl.core.errors import close_names

            options = [str(c) for c in action.choices]
            hint = close_names(str(value), options) or "choose from " + ", ".join(options)
            raise argparse.ArgumentError(action, f"invalid choice: '{value}' ({hint})")
        super()._check_value(action, value)


UNITS = {"": 1.0, "s": 1.0, "sec": 1.0, "ms": 1e-3, "m": 60.0, "min": 60.0, "h": 3600.0}


def duration(text: str) -> float:
    """A --time-limit: seconds as a bare number, or with a unit (500ms, 30s, 2min, 1.5h)."""
    import re

    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-z]*)\s*", text.lower())
    if not m or m.group(2) not in UNITS:
        raise argparse.ArgumentTypeError(f"'{text}' is not a duration: write seconds (30), or 500ms, 30s, 2min, 1.5h")
    return float(m.group(1)) * UNITS[m.group(2)]


def spec_arguments(p: argparse.ArgumentParser) -> None:
    """The spec file, -D overrides and --json: what every spec command takes."""
    p.add_argument("spec", help="a .part file")
    p.add_argument("-D", dest="define", action="append", metavar="NAME=VALUE",
                   help="override a param, e.g. -D k=8 or -D mem=32GiB (repeatable); -D k=2,4,8 sweeps")
    p.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    import_arguments(p)


def import_arguments(p: argparse.ArgumentParser) -> None:
    """How imported models (ONNX) are read: importers/import_options.py."""
    p.add_argument("--unknown-ops", choices=("warn", "zero", "error"), default="warn",
                   help="ONNX operators the cost model cannot cost: warn (default: 0 FLOPs, listed on stderr), "
                        "zero (0 FLOPs, quietly) or error (exit 2)")
    p.add_argument("--input-shape", action="append", metavar="NAME=DIMS", default=[],
                   help="the shape of an ONNX model input with symbolic dimensions, batch first as 1, e.g. "
                        "pixel_values=1x3x224x224 (repeatable)")


def import_options(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from partdsl.importers.import_options import ImportOptions, input_shape

    shapes = tuple(input_shape(x) for x in getattr(args, "input_shape", None) or [])
    return ImportOptions(getattr(args, "unknown_ops", "warn"), shapes)


class Deferred(str):
    """A help text made when help is shown (by `HelpFormatter`), not when the parser is
    built: the method list imports every kernel, a second of each `part check`."""

    make: Callable[[], str]

    def __new__(cls, make: Callable[[], str]) -> Deferred:
        text = super().__new__(cls, "(listed by --help)")
        text.make = make
        return text


class HelpFormatter(argparse.HelpFormatter):
    def _get_help_string(self, action: argparse.Action) -> str | None:
        return action.help.make() if isinstance(action.help, Deferred) else super()._get_help_string(action)


def method_names() -> str:
    """The methods --method takes, the default marked (for --help)."""
    from partdsl.methods.registry import DEFAULT_METHOD, METHODS

    return ", ".join(f"{m} (default)" if m == DEFAULT_METHOD else m for m in METHODS)


def solver_names() -> str:
    """The solvers --solver takes, the default marked (for --help)."""
    from partdsl.solvers.registry import DEFAULT_SOLVER, SOLVERS

    return ", ".join(f"{s} (default)" if s == DEFAULT_SOLVER else s for s in SOLVERS)


def executor_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--executor", metavar="URL", help="where sweep points (and part bound's guess MIPs) run: local "
                   "(default) or a Dask scheduler, dask://HOST:PORT or tcp://HOST:PORT")


def defines(items: list[str]) -> dict[str, str]:
    from partdsl.core.errors import PartError

    out = {}
    for it in items or []:
        if "=" not in it:
            raise PartError(f"-D {it}: expected name=value", None, "e.g. -D k=8 or -D mem=32GiB")
        k, v = it.split("=", 1)
        out[k.strip()] = v.strip()
    return out


WORD_OPTIONS = ("start", "step", "ignore", "devices", "graph", "decode", "compose")  # options whose value is a word (local_search -O start=random, pipedream -O ignore=n4,n37, sa -O decode=bfs, milp_split -O compose=dp)


def method_options(opts: dict[str, str]) -> dict[str, float | str | tuple[str, ...]]:
    """-O NAME=VALUE: numbers, but `order`, a file of node names (slicegraph), and the
    words of WORD_OPTIONS."""
    from partdsl.core.errors import PartError

    out: dict[str, float | str | tuple[str, ...]] = {}
    for k, v in opts.items():
        if k == "order":
            out[k] = read_order(Path(v))
            continue
        if k in WORD_OPTIONS:
            out[k] = v
            continue
        try:
            out[k] = float(v)
        except ValueError:
            raise PartError(f"-O {k}={v}: not a number", None, f"e.g. -O {k}=50") from None
    return out


def read_order(path: Path) -> tuple[str, ...]:
    """A node order: names one a line (blank lines and # comments skipped), or a JSON list."""
    from partdsl.core.errors import PartError
    from partdsl.core.limits import MAX_SMALL_FILE_BYTES
    from partdsl.runtime.files import read_limited

    try:
        text = read_limited(path, MAX_SMALL_FILE_BYTES, "a file of node names", regular=False).decode("utf-8")
    except (PartError, UnicodeDecodeError) as e:
        raise PartError(f"-O order={path}: cannot read it ({getattr(e, 'message', None) or e})", None,
                        "give a file of node names, one a line") from None
    if path.suffix == ".json":
        try:
            names = json.loads(text)
        except json.JSONDecodeError as e:
            raise PartError(f"-O order={path}: not JSON ({e.msg}, line {e.lineno})", None,
                            'write a list of node names, e.g. ["embed", "l1_ln1"]') from None
        if not isinstance(names, list) or not all(isinstance(x, (str, int)) for x in names):
            raise PartError(f"-O order={path}: not a list of node names", None, 'e.g. ["embed", "l1_ln1"]')
        return tuple(str(x) for x in names)
    lines = (ln.split("#", 1)[0].strip() for ln in text.splitlines())
    return tuple(ln for ln in lines if ln)


def load_spec(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from partdsl.dsl.parser import parse_file

    return parse_file(args.spec, defines(args.define), import_options(args))


def emit(args: argparse.Namespace, obj: dict, text: str) -> None:
    """The command's one answer; printed by `main` once the command has run."""
    args.emitted = json.dumps(obj, indent=1) if getattr(args, "json", False) else text


def progress_printer(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """Progress lines on stderr when it is a terminal, or always with --progress."""
    if args.progress or (not args.json and sys.stderr.isatty()):
        return lambda msg: print(f"  ... {msg}", file=sys.stderr, flush=True)
    return None


def evaluate_file(spec, path: str, data):  # type: ignore[no-untyped-def]
    """Score a partition or schedule file: (Evaluation, device per node, subgraphs)."""
    from partdsl.core.assignment import parse_partition, replica_factors
    from partdsl.core.errors import PartError
    from partdsl.core.schedule import from_json as schedule_from_json
    from partdsl.evaluator.evaluate import evaluate
    from partdsl.evaluator.schedule_eval import evaluate_schedule

    if isinstance(data, dict) and "schedule" in data and data["schedule"] is not None:  # DiviML: pieces and starts
        if not spec.objective.scheduled:
            raise PartError(f"{path} holds a schedule, but the spec's objective is {spec.objective.kind}",
                            None, "schedules are scored under `minimize latency by tasks` or `maximize throughput`")
        ev = evaluate_schedule(spec, schedule_from_json(spec, data["schedule"], f"{path}: schedule"))
        return ev, ev.schedule.node_devices(spec.dense.n), None
    arr, sub = parse_partition(spec, data, str(path))
    ev = evaluate(spec, arr, sub, replica_factors(spec, data, str(path)))
    return ev, arr, ev.subgraph


def answer_of(spec, r):  # type: ignore[no-untyped-def]
    """What `part plot` and `part report` draw of a Result: the device per node (a
    schedule's, -1 for a node it spreads over several devices) and the proven bound as a
    time, ms: a minimized objective's bound, or under batched throughput the makespan a
    batch cannot beat (batch / the throughput's upper bound)."""
    import math

    from partdsl.core.assignment import to_array

    dev = to_array(spec, r.assignment) if r.assignment is not None else r.evaluation.schedule.node_devices(spec.dense.n)
    if r.sense == "min":
        return dev, r.bound
    ok = r.bound is not None and math.isfinite(r.bound) and r.bound > 0
    return dev, (1e3 * spec.objective.batch / r.bound if ok else None)


def load_figures():  # type: ignore[no-untyped-def]
    from partdsl.core.solver_errors import optional

    optional("matplotlib", "plot", "plotting library")
    from partdsl.viz import figures

    return figures



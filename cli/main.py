"""`part`: the command line. One module per command in cli/commands/, each with `add`
(its arguments) and `run` (exit code):

    check     parse and validate a spec, print a summary and the simple bound
    eval      score a partition or schedule file under the spec's cost model
    solve     find a partition with a bound and a gap (-D k=2,4,8 sweeps)
    bound     the lower-bound hierarchy (simple, LP, bottleneck, bottleneck-guess, exact)
    export    write the MIP that method exact solves as MPS or LP
    sweep     cross specs, methods, solvers and -D values into tidy CSV / JSON-lines rows
    plot      draw an answer: the graph by device, load bars or a Gantt chart
    report    one self-contained HTML page: spec, answer, bound and gap, picture, plan
    convert   dnn-partitioning JSON or ONNX -> .part; .part -> normalized .part or graph JSON
    generate  write a generated workload (RandWire, DiviML's RWNNs) as a .part spec
    profile   time a model's layers with torch on this machine -> a layer profile to plan from

Exit codes are a stable contract (cli/common.py): 0 success; 1 internal error (a bug:
please report); 2 user error in the spec, a file or the arguments; 3 infeasible
(proven); 4 no solution within the limits; 5 solver not installed; 6 the solver failed
(a license or size limit, a crash of its own); 130 interrupted by Ctrl-C (the best answer
found so far is printed).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
import warnings
from typing import Sequence

from partdsl.cli.commands import bound, check, convert, evaluate, export, generate, plot, profile, report, solve, sweep
from partdsl.cli.common import (
    EXIT_CODES,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_NO_SOLUTION,
    EXIT_OK,
    EXIT_SOLVER,
    EXIT_UNAVAILABLE,
    EXIT_USER,
    Parser,
)
from partdsl.importers.import_options import UncostedOperators
from partdsl.runtime.memory import SCALABLE

COMMANDS = (check, evaluate, solve, export, bound, sweep, plot, report, convert, generate, profile)  # in --help's order


def build_parser() -> argparse.ArgumentParser:
    ap = Parser(
        prog="part", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Partition DNN computation graphs across devices, with certified answers.",
        epilog=EXIT_CODES)
    sub = ap.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add(sub)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    from partdsl.core.errors import PartError
    from partdsl.core.solver_errors import SolverFailed, SolverUnavailable

    args = build_parser().parse_args(argv)
    args.emitted = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always", UncostedOperators)  # every run says it, also in one process
            warnings.showwarning = _plain_warning
            code = _guarded(args)
        if args.emitted is not None:
            print(args.emitted)
        return code
    except PartError as e:
        e = _with_file_source(e)
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
    except MemoryError:  # a limit of the machine, not a bug (issue 29): no answer within it
        print("error: out of memory: this method's tables for this graph do not fit in the memory free\n"
              f"hint: methods that scale to large graphs: {SCALABLE}", file=sys.stderr)
        if getattr(args, "json", False):
            print(json.dumps({"error": "out of memory", "kind": "out_of_memory"}))
        return EXIT_NO_SOLUTION
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


def _with_file_source(e):  # type: ignore[no-untyped-def]
    """An error located in a spec file but raised after parsing (a method refusing a
    feature, say) gets the file's text, for the caret."""
    from pathlib import Path

    if e.span is None or e.source is not None or not Path(e.span.file).is_file():
        return e
    try:
        return e.with_source(Path(e.span.file).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return e


def _plain_warning(message, category, filename, lineno, file=None, line=None) -> None:  # type: ignore[no-untyped-def]
    """A warning on stderr as one `warning: ...` line (no file and line of partdsl's code)."""
    print(f"warning: {message}", file=sys.stderr, flush=True)


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

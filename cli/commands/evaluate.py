"""`part eval`: score a partition or schedule file under the spec's cost model."""
from __future__ import annotations

import argparse

from partdsl.cli.common import EXIT_INFEASIBLE, EXIT_OK, emit, evaluate_file, load_spec, spec_arguments


def add(sub) -> None:  # type: ignore[no-untyped-def]
    p = sub.add_parser("eval", help="score a partition under the spec's cost model")
    spec_arguments(p)
    p.add_argument("partition", help="JSON: {node: device}, a `part solve --json` result, or a human-expert file")
    p.add_argument("--strict", action="store_true", help="exit 3 if a constraint is violated")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from partdsl.cli.report import evaluation_report
    from partdsl.core.assignment import subgraph_map
    from partdsl.runtime.files import read_json

    spec = load_spec(args)
    data = read_json(args.partition)
    ev, arr, sub = evaluate_file(spec, args.partition, data)
    doc = ev.to_json()
    if ev.schedule is not None:
        doc["schedule"] = ev.schedule.to_json(spec)
    if sub is not None and spec.constraints.subgraphs > 1:
        doc["subgraphs"] = subgraph_map(spec, arr, sub)
    emit(args, doc, evaluation_report(spec, ev, arr))
    return EXIT_INFEASIBLE if (args.strict and not ev.feasible) else EXIT_OK

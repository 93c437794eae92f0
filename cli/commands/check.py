"""`part check SPEC`: parse and validate a spec; print its size, devices, objective and the simple bound,
or with --table where its costs are (cli/cost_table.py)."""
from __future__ import annotations

import argparse

from partdsl.cli.common import EXIT_OK, emit, load_spec, spec_arguments
from partdsl.cli.cost_table import SORT_KEYS

BOUND_SECONDS = 0.5  # the bound `part check` prints: its cuts stop after this (a solve gives them a quarter of --time-limit)


def add(sub) -> None:  # type: ignore[no-untyped-def]
    p = sub.add_parser("check", help="parse and validate a spec, print a summary")
    spec_arguments(p)
    p.add_argument("--table", action="store_true",
                   help="per-node FLOPs, parameter and output bytes and work per device class, then per-layer totals")
    p.add_argument("--sort", default="order", choices=SORT_KEYS,
                   help="--table's order: as the graph lists the nodes (default), or largest first by flops, "
                        "params, out (bytes) or work (on the cheapest class)")
    p.add_argument("--top", type=int, default=50, metavar="N", help="--table: the first N nodes (default 50; 0: all)")
    p.add_argument("--layers", metavar="REGEX",
                   help="--table: a node's layer is what REGEX captures from its name (default: its group, "
                        "else its name up to the last / or .)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from partdsl.cli.report import cost_provenance, describe
    from partdsl.methods.bounds import bound
    from partdsl.runtime.deadline import Deadline

    spec = load_spec(args)
    if args.table:
        from partdsl.cli.cost_table import cost_table

        if args.top < 0:
            from partdsl.core.errors import PartError

            raise PartError(f"--top {args.top}: must be at least 0", None, "e.g. --top 20, or --top 0 for every node")
        obj, text = cost_table(spec, args.sort, args.top or None, args.layers)
        emit(args, {"ok": True, "file": spec.file, **obj}, text)
        return EXIT_OK
    b = bound(spec, Deadline.after(BOUND_SECONDS))
    d = spec.dense
    emit(args, {"ok": True, "file": spec.file, "graph": spec.graph.name, "nodes": d.n, "edges": d.m,
                 "devices": list(d.devices), "objective": spec.objective.kind,
                 "training": spec.graph.is_training, "bound": b, "costs": cost_provenance(spec) or None},
         describe(spec, b))
    return EXIT_OK

"""`part check SPEC`: parse and validate a spec; print its size, devices, objective and the simple bound."""
from __future__ import annotations

import argparse

from partdsl.cli.common import EXIT_OK, emit, load_spec, spec_arguments


def add(sub) -> None:  # type: ignore[no-untyped-def]
    p = sub.add_parser("check", help="parse and validate a spec, print a summary")
    spec_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from partdsl.cli.report import describe
    from partdsl.methods.bounds import bound

    spec = load_spec(args)
    b = bound(spec)
    d = spec.dense
    emit(args, {"ok": True, "file": spec.file, "graph": spec.graph.name, "nodes": d.n, "edges": d.m,
                 "devices": list(d.devices), "objective": spec.objective.kind,
                 "training": spec.graph.is_training, "bound": b}, describe(spec, b))
    return EXIT_OK

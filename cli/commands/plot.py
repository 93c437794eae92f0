"""`part plot SPEC [PARTITION] -o FILE`: the graph colored by device, with load bars or a
Gantt chart (viz/figures.py)."""
from __future__ import annotations

import argparse

from partdsl.cli.common import (
    EXIT_OK,
    answer_of,
    duration,
    emit,
    evaluate_file,
    load_figures,
    load_spec,
    spec_arguments,
)


def add(sub) -> None:  # type: ignore[no-untyped-def]
    p = sub.add_parser("plot", help="draw an answer: the graph colored by device, with load bars or a Gantt chart")
    spec_arguments(p)
    p.add_argument("partition", nargs="?", help="a partition or schedule JSON to draw (default: solve first)")
    p.add_argument("--output", "-o", required=True, metavar="FILE", help="out.png, out.svg or out.pdf")
    p.add_argument("--method", help="the method to solve with when no partition is given")
    p.add_argument("--time-limit", type=duration, metavar="SECONDS")
    p.add_argument("--seed", type=int, metavar="N")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """The graph colored by device, with the load bars or the Gantt chart below it."""
    from partdsl.core.errors import PartError
    from partdsl.runtime.files import read_json

    figures = load_figures()
    spec = load_spec(args)
    bound = None
    if args.partition:
        ev, dev, sub = evaluate_file(spec, args.partition, read_json(args.partition))
        how = f"scored {args.partition}"
    else:
        from partdsl.methods.solve import solve

        r = solve(spec, method=args.method, time_limit=args.time_limit, seed=args.seed)
        if r.evaluation is None:
            raise PartError(f"method {r.method} found nothing to draw ({r.stopped})", None,
                            "give a partition file, or try another --method or a longer --time-limit")
        ev = r.evaluation
        dev, bound = answer_of(spec, r)  # the bound is drawn on the load bars or the Gantt's time axis
        sub = ev.subgraph
        how = f"solved by {r.method}{f' ({r.chosen})' if r.chosen else ''}: {r.status.value}"
    fig = figures.answer_figure(spec, ev, dev, sub, bound)
    figures.save(fig, args.output)
    emit(args, {"ok": True, "file": args.output, "objective": ev.objective, "feasible": ev.feasible},
          f"wrote {args.output} ({how}; {spec.objective.entity.label} {ev.objective:.6g} {ev.unit})")
    return EXIT_OK

"""`part export SPEC --plan ANSWER.json --format F`: a partition as the pipeline layout a
framework reads (plans/), scored by the evaluator; refused, with nothing written, when the
format cannot express it."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from partdsl.core.errors import PartError


def export_plan(args: argparse.Namespace, spec) -> tuple[dict, str]:  # type: ignore[no-untyped-def]
    from partdsl.cli.common import evaluate_file
    from partdsl.core.layers import layer_pattern
    from partdsl.plans.formats import WRITERS, text
    from partdsl.plans.stages import pipeline
    from partdsl.plans.units import units
    from partdsl.runtime.files import read_json

    if args.format is None:
        raise PartError("--plan needs --format", None, "give --format " + " | ".join(WRITERS))
    if spec.objective.scheduled:
        raise PartError(f"the spec's objective ({spec.objective.kind}) schedules pieces over devices; the "
                        "frameworks' pipelines place each layer on one device", None,
                        "plan under `minimize bottleneck` or `minimize latency`")
    data = read_json(args.plan)
    if isinstance(data, dict) and data.get("replicas"):
        raise PartError(f"{args.plan} has replicated stages ({', '.join(data['replicas'])}); the plan formats "
                        "written here carry one device per stage", None,
                        "export a plan without `replicate`, or read the factors from the --json result")
    ev, dev, _ = evaluate_file(spec, args.plan, data)
    if not ev.feasible:
        raise PartError(f"{args.plan} violates the spec: " + "; ".join(map(str, ev.violations[:3])), None,
                        "export a feasible plan (part eval --strict tells what is wrong)")
    doc = WRITERS[args.format](pipeline(spec, dev, units(spec, layer_pattern(args.layers))))
    doc["objective"] = {"kind": spec.objective.kind, "value": ev.objective, "plan": str(args.plan)}
    if args.output:
        Path(args.output).write_text(json.dumps(doc, indent=1) + "\n")
    said = text(doc) + f"\n# {spec.objective.kind} of this plan (part eval): {ev.objective:.6g}"
    return doc, said + (f"\n# written to {args.output}" if args.output else "")

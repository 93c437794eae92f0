"""`part export SPEC --mps F --lp F`: the MIP that method exact solves (or its LP
relaxation), written by HiGHS for any other solver. `part export SPEC --plan ANSWER.json
--format F`: a partition as the pipeline layout Megatron-LM, torchtitan/PiPPy, vLLM or
DeepSpeed reads (cli/export_plan.py)."""
from __future__ import annotations

import argparse

from partdsl.cli.common import EXIT_OK, emit, load_spec, spec_arguments


def add(sub) -> None:  # type: ignore[no-untyped-def]
    p = sub.add_parser("export", help="write the MIP that method exact solves as MPS or LP, "
                       "or a plan as the pipeline layout of Megatron-LM, torchtitan, vLLM or DeepSpeed")
    spec_arguments(p)
    p.add_argument("--mps", metavar="FILE", help="write it as MPS (free format)")
    p.add_argument("--lp", metavar="FILE", help="write it in CPLEX LP format")
    p.add_argument("--names", metavar="FILE.json", help="write the map from each written row and column name to "
                   "the model's (they differ where a name had characters the formats do not take, was over 255 "
                   "characters or clashed)")
    p.add_argument("--relaxation", action="store_true", help="the LP relaxation (integrality dropped)")
    p.add_argument("--horizon", type=float, metavar="H", help="latency IP / DiviML MILP: the horizon (big-M), "
                   "an upper bound on the optimum (default: a proven safe one)")
    g = p.add_argument_group("plans out (docs/plans.md)")
    g.add_argument("--plan", metavar="ANSWER.json", help="a partition: `part solve --json` output or {node: device}")
    g.add_argument("--format", choices=("megatron", "fqn", "vllm", "deepspeed"),
                   help="megatron: --pipeline-model-parallel-layout; fqn: torchtitan's module_fqns_per_model_part "
                   "and PiPPy's split_spec; vllm: VLLM_PP_LAYER_PARTITION; deepspeed: PipelineModule parts")
    g.add_argument("--output", "-o", metavar="FILE.json", help="write the layout as JSON (default: print only)")
    g.add_argument("--layers", metavar="REGEX", help="the part of a node name that is its decoder layer (default: "
                   "`layers.3`, `h.3`, `blocks.3`, `l3_` ...)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from partdsl.cli.export_mip import exact_mip, mip_names, relaxed, write
    from partdsl.core.errors import PartError

    targets = [(f, x) for f, x in ((args.mps, ".mps"), (args.lp, ".lp")) if f]
    if args.plan or args.format:
        if targets or args.relaxation or args.names:
            raise PartError("--plan exports a partition, --mps/--lp/--names/--relaxation the MIP", None,
                            "give one or the other")
        if not args.plan:
            raise PartError("--format needs --plan ANSWER.json", None, "e.g. part solve SPEC --json > a.json, then "
                            "part export SPEC --plan a.json --format megatron")
        from partdsl.cli.export_plan import export_plan

        doc, text = export_plan(args, load_spec(args))
        emit(args, doc, text)
        return EXIT_OK
    if not targets:
        raise PartError("nothing to write", None, "give --mps FILE and/or --lp FILE")
    for f, ext in targets:
        if not f.lower().endswith(ext):
            raise PartError(f"'{f}' does not end in {ext}", None, f"name the file *{ext}, or use --{'lp' if ext == '.mps' else 'mps'}")
    spec = load_spec(args)
    mip, name = exact_mip(spec, args.horizon)
    if args.relaxation:
        mip, name = relaxed(mip), f"the LP relaxation of {name}"
    names = mip_names(mip)
    for f, _ in targets:
        write(mip, f, names)
    if args.names:
        Path(args.names).write_text(json.dumps({"rows": names.rows, "columns": names.cols,
                                                "model_names": names.changed}, indent=1) + "\n")
    rows, cols = mip.A.shape
    ints = int(mip.integer.sum())
    emit(args, {"ok": True, "model": name, "rows": rows, "columns": cols, "integer_columns": ints,
                 "files": [f for f, _ in targets] + ([args.names] if args.names else []),
                 "renamed": len(names.changed)},
          f"wrote {name}: {rows:,} rows x {cols:,} columns ({ints:,} integer) to " + ", ".join(f for f, _ in targets))
    return EXIT_OK

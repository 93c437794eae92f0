"""`part convert FILE`: dnn-partitioning JSON or ONNX to a .part spec; a .part spec to a
normalized .part or graph JSON (convert/to_part.py)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from partdsl.cli.common import EXIT_OK, defines, import_arguments, import_options
from partdsl.importers.formats import CONVERTIBLE, FORMATS


def add(sub) -> None:  # type: ignore[no-untyped-def]
    p = sub.add_parser("convert", help="dnn-partitioning JSON, ONNX or torch.export (.pt2) -> .part spec; .part -> "
                       "normalized .part or graph JSON")
    p.add_argument("file")
    p.add_argument("--from", dest="from_format", choices=CONVERTIBLE,
                   help="the source's format (importers/formats.py; default: by its suffix, a folder is metis, else "
                        "part): " + "; ".join(f"{f.name}: {f.what}" for f in FORMATS if f.convert))
    p.add_argument("--to", choices=["part", "json", "layers"],
                   help="part (default), json (a spec's graph) or layers: a partdsl-layers profile of the model's "
                        "layers, estimated by the cost model, to edit or plan from (docs/importers.md)")
    p.add_argument("--backward", type=float, metavar="RATIO", help="with --to layers: write backward times, "
                   "RATIO x forward (2 is the usual estimate), and the stashed activations, for training")
    p.add_argument("--objective", choices=["bottleneck", "latency", "tasks", "throughput"],
                   help="bottleneck (default for dnn-partitioning), latency (default for onnx), tasks, throughput "
                        "(onnx only: batch 16 split 4)")
    p.add_argument("--fuse", action="store_true", help="onnx: fuse the usual chains (Conv + BatchNormalization + Relu, ...)")
    p.add_argument("--split", default="contiguous", choices=["contiguous", "any"],
                   help="contiguous (default) or any: non-contiguous splits allowed")
    p.add_argument("--group-by", metavar="HOW", help="collapse operators into the units people split: `layer` "
                   "(embedding, each decoder layer, head) or `module[:DEPTH]` (module path prefix); each unit becomes "
                   "a `group` under `colocate by group` (docs/plans.md)")
    p.add_argument("--interleave", type=int, metavar="V", default=1,
                   help="with --group-by and the bottleneck objective: V chunks of the pipeline per device, round "
                        "robin (Megatron's interleaved 1F1B; `interleave V` instead of `acyclic`)")
    p.add_argument("--layers", metavar="REGEX", help="with --group-by layer: the part of a node name that is its "
                   "decoder layer (default: `layers.3`, `h.3`, `blocks.3`, `l3_` ...)")
    p.add_argument("--devices", metavar="TYPE=N,...", help="onnx, torch-export: the platform, N devices of each "
                   "device profile (e.g. h100=4,a100=4; default two A100s and a Xeon); metis: how many GPUs of each "
                   "profiled type, e.g. A100=4,H100=4; regal: stage=K, the pipeline stages (default 4)")
    m = p.add_argument_group("metis: a folder of Metis's DeviceType.<GPU>_tp<T>_bs<B>.json profiles")
    m.add_argument("--output-bytes", metavar="SIZE", help="the tensor one layer passes the next (micro-batch x "
                   "sequence x hidden x bytes), e.g. 16MB: Metis's profiles do not record it")
    m.add_argument("--mbs", type=int, default=1, help="the micro-batch size of the files to read (default 1)")
    p.add_argument("--tp", type=int, default=1, metavar="T", help="layers, metis: tensor-parallel degree T (default 1): "
                   "each layer's tensor_parallel variant, or Metis's _tp<T> files; every T GPUs form one pipeline rank")
    p.add_argument("--optimizer", choices=["none", "sgd", "momentum", "adam"],
                   help="memory for training: each node's parameters count weights, gradients and optimizer state "
                        "(adam: 16 bytes per bf16 parameter, ZeRO's count; docs/importers.md)")
    p.add_argument("--activations", action="store_true", help="training: each operator stashes its output for the "
                   "backward pass (no recomputation), held once per micro-batch in flight under 1F1B (`training "
                   "pipedream`): stage s of P holds P - s")
    p.add_argument("--kv-cache", metavar="SIZE", help="serving: the KV cache of the batch and context you serve "
                   "(e.g. 8GiB), spread evenly over the decoder layers' memory (docs/importers.md)")
    pd = p.add_argument_group("pipedream: a PipeDream profile (graph.txt), as its optimizer reads it")
    pd.add_argument("--machines", metavar="N[,N...]", help="devices (PipeDream's -n), or devices per level, "
                    "innermost first (4,2: 2 servers of 4 GPUs; with --split any, as server levels)")
    pd.add_argument("--bandwidths", metavar="B[,B...]", help="their link in bytes/s (PipeDream's -b, default 1e9), one "
                    "per level")
    pd.add_argument("--memory", metavar="BYTES", help="memory per device (PipeDream's -s; unconstrained without it)")
    pd.add_argument("--transfers", action="store_true", help="send each layer's activations over the link (PipeDream's "
                    "DP charges none)")
    p.add_argument("--output", "-o", metavar="FILE")
    p.add_argument("-D", dest="define", action="append", metavar="NAME=VALUE")
    import_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from partdsl.convert.to_part import graph_json
    from partdsl.dsl.printer import to_part
    from partdsl.importers.formats import BY_NAME, by_name, guess

    src = Path(args.file)
    fmt = by_name(args.from_format, None, CONVERTIBLE, "source format") if args.from_format \
        else guess(src, CONVERTIBLE) or BY_NAME["part"]
    check_options(args, fmt.name)
    args.import_options, args.defines = import_options(args), defines(args.define)
    out = fmt.converter()(src, args)  # the row's converter (convert/formats.py)
    spec, text = out.spec, out.text
    header = out.header or f"{src.name}, converted by `part convert`"
    if args.group_by or args.optimizer or args.kv_cache or args.activations or args.to == "layers":
        spec, header = adjusted(spec or parse_text(text, src, args), header, args)
    if args.to == "layers":
        from partdsl.core.layers import layer_pattern
        from partdsl.plans.profile_out import layer_profile

        text = json.dumps(layer_profile(spec, args.backward, layer_pattern(args.layers)), indent=1) + "\n"
    elif spec is not None:
        text = graph_json(spec.graph) if args.to == "json" else to_part(spec, header=header)
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    if args.to not in ("json", "layers"):
        print(summary(text, args.output, args.import_options), file=sys.stderr)
    return EXIT_OK


def parse_text(text: str, src: Path, args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from partdsl.dsl.parser import parse

    return parse(text, str(src), None, args.import_options)


def check_options(args: argparse.Namespace, fmt: str) -> None:
    """The options that go with another format or target, refused with what to write."""
    from partdsl.core.errors import PartError

    if (args.machines or args.bandwidths or args.memory or args.transfers) and fmt != "pipedream":
        raise PartError("--machines, --bandwidths, --memory and --transfers go with --from pipedream", None,
                        "add --from pipedream")
    if fmt != "part" and args.to not in (None, "part", "layers") or fmt in ("layers", "metis") and args.to == "layers":
        raise PartError(f"cannot convert {fmt} to '{args.to}'", None, "use --to part")
    if args.to == "layers" and (args.optimizer or args.group_by or args.kv_cache or args.activations):
        raise PartError("--to layers writes what a profiler measures: no --optimizer, --activations, --kv-cache or "
                        "--group-by", None,
                        "give them when you convert the profile to a spec")
    if args.backward is not None and args.to != "layers":
        raise PartError("--backward goes with --to layers", None, "add --to layers")
    if args.tp < 1:
        raise PartError(f"--tp {args.tp}: the tensor-parallel degree is a positive integer", None, "e.g. --tp 2")
    if args.tp != 1 and fmt not in ("layers", "metis"):
        raise PartError(f"--tp goes with --from layers or metis, not {fmt}", None,
                        "an operator graph has no tensor-parallel variants: leave --tp out")
    if args.interleave != 1 and (not args.group_by or args.interleave < 1):
        raise PartError(f"--interleave {args.interleave} goes with --group-by, a whole number of chunks per device",
                        None, "add --group-by layer, and give V >= 2 (1: no interleaving)")
    if args.layers and not args.group_by and args.to != "layers" and not args.kv_cache:
        raise PartError("--layers goes with --group-by layer, --kv-cache or --to layers", None, "add --group-by layer")
    if args.devices and fmt not in ("onnx", "torch-export", "metis", "regal"):
        raise PartError(f"--devices goes with --from onnx, torch-export, metis or regal, not {fmt}", None,
                        "a layer profile lists its devices; a spec has its platform")


def adjusted(spec, header: str, args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """--optimizer, --activations, --kv-cache and --group-by on the converted spec, without
    printing and parsing it again; the header says what was done."""
    from partdsl.convert.formats import size_of
    from partdsl.core.layers import layer_pattern
    from partdsl.importers.memory_model import with_activations, with_optimizer
    from partdsl.plans.grouping import group_by

    if args.optimizer:
        spec = with_optimizer(spec, args.optimizer)
        header += f", memory for training with {args.optimizer}"
    if args.activations:
        spec = with_activations(spec)
        header += ", stashed activations"
    if args.kv_cache:
        from partdsl.plans.serving import with_kv_cache
        from partdsl.plans.units import units

        spec = with_kv_cache(spec, size_of("kv-cache", args.kv_cache), units(spec, layer_pattern(args.layers)))
        header += f", a {args.kv_cache} KV cache"
    if args.group_by:
        spec = group_by(spec, args.group_by, layer_pattern(args.layers), args.interleave)
        header += f", grouped by {args.group_by}"
        header += f", {args.interleave} chunks per device" if args.interleave > 1 else ""
    return spec, header


def summary(text: str, output: str | None, options) -> str:  # type: ignore[no-untyped-def]
    """What was written, from the written spec parsed back (so it is also checked): nodes,
    edges, devices, objective and constraints; then a warning per device class whose
    profile's model was never checked against measurements (cli/report.uncalibrated)."""
    from partdsl.cli.report import objective_name, uncalibrated
    from partdsl.dsl.parser import parse

    where = output or "<stdout>"
    spec = parse(text, str(Path(output) if output else Path.cwd() / "<stdout>"), None, options)
    d, c = spec.dense, spec.constraints
    kinds = ", ".join(f"{k.count} x {k.name}" for k in spec.platform.classes)
    rules = [r for r, on in (("acyclic", c.acyclic), ("contiguous", c.contiguous), ("colocate by group", c.colocate),
                             (f"interleave {c.interleave}", c.interleave > 1),
                             (f"memory {c.memory}", c.memory != "ignore")) if on]
    return (f"wrote {where}: {d.n:,} nodes, {d.m:,} edges; devices {kinds}; {objective_name(spec)}"
            + (f"; {', '.join(rules)}" if rules else "") + "".join(f"\nwarning: {w}" for w in uncalibrated(spec)))



"""`part convert FILE`: dnn-partitioning JSON or ONNX to a .part spec; a .part spec to a
normalized .part or graph JSON (cli/convert.py)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from partdsl.cli.common import EXIT_OK, defines, import_arguments, import_options


def add(sub) -> None:  # type: ignore[no-untyped-def]
    p = sub.add_parser("convert", help="dnn-partitioning JSON, ONNX or torch.export (.pt2) -> .part spec; .part -> "
                       "normalized .part or graph JSON")
    p.add_argument("file")
    p.add_argument("--from", dest="from_format", choices=["dnn-partitioning", "onnx", "torch-export", "regal", "layers",
                                                                 "metis", "pipedream", "part"])
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
    p.add_argument("--activations", action="store_true", help="training: each operator also holds its output, "
                   "stashed for the backward pass (one micro-batch in flight, no recomputation)")
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
    from partdsl.cli.convert import dnn_partitioning_to_part, graph_json
    from partdsl.core.errors import PartError
    from partdsl.core.layers import layer_pattern
    from partdsl.dsl.memory_model import with_activations, with_optimizer
    from partdsl.dsl.parser import parse
    from partdsl.dsl.printer import to_part
    from partdsl.plans.grouping import group_by

    src = Path(args.file)
    if (args.machines or args.bandwidths or args.memory or args.transfers) and args.from_format != "pipedream":
        raise PartError("--machines, --bandwidths, --memory and --transfers go with --from pipedream", None,
                        "add --from pipedream")
    fmt = args.from_format or ("metis" if src.is_dir() else "dnn-partitioning" if src.suffix == ".json" else
                               "onnx" if src.suffix.lower() == ".onnx" else
                               "torch-export" if src.suffix.lower() == ".pt2" else
                               "regal" if src.suffix.lower() == ".pbtxt" else "part")
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
    if args.layers and not args.group_by and args.to != "layers" and not args.kv_cache:
        raise PartError("--layers goes with --group-by layer, --kv-cache or --to layers", None, "add --group-by layer")
    if args.devices and fmt not in ("onnx", "torch-export", "metis", "regal"):
        raise PartError(f"--devices goes with --from onnx, torch-export, metis or regal, not {fmt}", None,
                        "a layer profile lists its devices; a spec has its platform")
    devices = device_counts(args.devices) if args.devices and fmt != "metis" else None
    spec, text, header = None, "", f"{src.name}, converted by `part convert`"
    if fmt == "onnx":
        from partdsl.cli.convert import onnx_to_part

        text = onnx_to_part(src, args.objective or "latency", args.fuse, import_options(args), devices)
    elif fmt in ("layers", "metis"):
        from partdsl.dsl.layer_profile import layers_spec, profile_spec

        objective = args.objective or "bottleneck"
        if objective not in ("bottleneck", "latency"):
            raise PartError(f"a layer profile plans for bottleneck or latency, not '{objective}'", None,
                            "--objective bottleneck (default) or latency")
        spec = profile_spec(src, objective, tp=args.tp) if fmt == "layers" else \
            layers_spec(metis(src, args), src, objective)
        header = f"{src.name}, a {'Metis ' if fmt == 'metis' else ''}layer profile converted by `part convert`"
    elif fmt == "pipedream":
        spec = pipedream(src, args)
        header = f"{src.name}, a PipeDream profile converted by `part convert`"
    elif fmt == "torch-export":
        from partdsl.cli.convert import torch_export_to_part

        text = torch_export_to_part(src, args.objective or "latency", import_options(args), devices)
    elif fmt == "regal":
        from partdsl.cli.convert import regal_to_part

        if devices is not None and set(devices) != {"stage"}:
            raise PartError("a REGAL graph runs on identical stages: --devices stage=K", None, "e.g. --devices stage=16")
        text = regal_to_part(src, (devices or {}).get("stage", 4), Path(args.output).parent if args.output else None)
    elif fmt == "dnn-partitioning":
        text = dnn_partitioning_to_part(src, args.objective or "bottleneck", args.split,
                                        Path(args.output).parent if args.output else None)
    elif fmt == "part":
        from partdsl.dsl.parser import parse_file

        spec, header = parse_file(src, defines(args.define), import_options(args)), f"{src.name}, normalized by `part convert`"
    else:
        raise PartError(f"unknown source format '{fmt}'", None, "use --from dnn-partitioning or --from part")
    if args.group_by or args.optimizer or args.kv_cache or args.activations or args.to == "layers":
        if spec is None:
            spec = parse(text, str(src), None, import_options(args))
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
        if args.group_by:  # grouped here, without printing and parsing the spec again
            spec = group_by(spec, args.group_by, layer_pattern(args.layers))
            header += f", grouped by {args.group_by}"
    if args.to == "layers":
        from partdsl.plans.profile_out import layer_profile

        text = json.dumps(layer_profile(spec, args.backward, layer_pattern(args.layers)), indent=1) + "\n"
    elif spec is not None:
        text = graph_json(spec.graph) if args.to == "json" else to_part(spec, header=header)
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    if args.to not in ("json", "layers"):
        print(summary(text, args.output, import_options(args)), file=sys.stderr)
    return EXIT_OK


def metis(src: Path, args: argparse.Namespace) -> dict:
    """Metis's profiles in `src` as a partdsl-layers document (dsl/metis_profile.py)."""
    from partdsl.core.errors import PartError
    from partdsl.dsl.metis_profile import metis_layers

    if not args.devices or not args.output_bytes:
        raise PartError("--from metis needs --devices and --output-bytes", None,
                        "e.g. --devices A100=4,H100=4 --output-bytes 16MB (Metis's profiles record neither)")
    counts = device_counts(args.devices)
    return metis_layers(src, args.tp, args.mbs, size_of("output-bytes", args.output_bytes), counts)


def size_of(option: str, text: str) -> float:
    """`--option 16MB` -> 16e6 bytes (a plain number is bytes)."""
    from partdsl.core.errors import PartError
    from partdsl.core.quantities import NUMBER, SIZE
    from partdsl.dsl.parser import parse_override

    size = parse_override(option, text)
    if isinstance(size, str) or size.dim not in (SIZE, NUMBER) or size.value < 0:
        raise PartError(f"--{option} {text}: not a size", None, f"e.g. --{option} 16MB")
    return float(size.value)


def device_counts(given: str) -> dict[str, int]:
    """`--devices h100=4,a100=4` -> {"h100": 4, "a100": 4}."""
    from partdsl.core.errors import PartError

    counts = {}
    for item in given.split(","):
        name, _, n = item.partition("=")
        if not name.strip() or not n.isdigit() or int(n) < 1:
            raise PartError(f"--devices {given}: '{item}' is not TYPE=COUNT", None, "e.g. --devices h100=4,a100=4")
        counts[name.strip()] = int(n)
    return counts


def summary(text: str, output: str | None, options) -> str:  # type: ignore[no-untyped-def]
    """What was written, from the written spec parsed back (so it is also checked): nodes,
    edges, devices, objective and constraints."""
    from partdsl.cli.report import objective_name
    from partdsl.dsl.parser import parse

    where = output or "<stdout>"
    spec = parse(text, str(Path(output) if output else Path.cwd() / "<stdout>"), None, options)
    d, c = spec.dense, spec.constraints
    kinds = ", ".join(f"{k.count} x {k.name}" for k in spec.platform.classes)
    rules = [r for r, on in (("acyclic", c.acyclic), ("contiguous", c.contiguous), ("colocate by group", c.colocate),
                             (f"memory {c.memory}", c.memory != "ignore")) if on]
    return (f"wrote {where}: {d.n:,} nodes, {d.m:,} edges; devices {kinds}; {objective_name(spec)}"
            + (f"; {', '.join(rules)}" if rules else ""))


def pipedream(src: Path, args: argparse.Namespace):  # type: ignore[no-untyped-def]
    """The spec of a PipeDream profile with PipeDream's own platform options: one level, or
    server levels (`--machines 4,2 --bandwidths 10e9,1e9`, innermost first) with any split."""
    from partdsl.core.errors import PartError
    from partdsl.dsl.pipedream_profile import pipedream_spec

    def numbers(text: str | None, what: str, default: str) -> list[float]:
        try:
            out = [float(x) for x in (text or default).split(",")]
        except ValueError:
            raise PartError(f"{what} {text}: expected numbers separated by commas", None, f"e.g. {what} {default}") \
                from None
        if not all(x > 0 for x in out):
            raise PartError(f"{what} {text}: must be positive", None, f"e.g. {what} {default}")
        return out

    machines = numbers(args.machines, "--machines", "4")
    if any(m != int(m) for m in machines):
        raise PartError(f"--machines {args.machines}: whole numbers of devices", None, "e.g. --machines 4")
    bandwidths = numbers(args.bandwidths, "--bandwidths", ",".join(["1e9"] * len(machines)))
    if len(bandwidths) != len(machines):
        raise PartError(f"--bandwidths {args.bandwidths}: {len(bandwidths)} values for {len(machines)} levels of "
                        "--machines", None, "give one bandwidth per level, innermost first, e.g. --machines 4,2 "
                        "--bandwidths 10e9,1e9")
    memory = numbers(args.memory, "--memory", "16e9")[0] if args.memory else None
    return pipedream_spec(src, [int(m) for m in machines], bandwidths, memory, args.transfers,
                          acyclic=args.split != "any")

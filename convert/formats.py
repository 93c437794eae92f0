"""`part convert --from NAME`: the converters importers/formats.py's rows name. Each takes
the source path and the request (the command line's options: objective, split, fuse,
devices, tp, output, ...; an argparse.Namespace or any object with those attributes)
and returns the spec as text or as a Spec, with the header line for the written file."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from partdsl.core.errors import PartError
from partdsl.core.ir import Spec


@dataclass(frozen=True)
class Converted:
    text: str = ""  # the spec as .part text, or
    spec: Spec | None = None  # the spec itself
    header: str = ""  # the comment the written spec starts with (with a Spec)


def _out_dir(req: Any) -> Path | None:
    return Path(req.output).parent if req.output else None


def _devices(req: Any) -> dict[str, int] | None:
    return device_counts(req.devices) if req.devices else None


def dnn_partitioning(src: Path, req: Any) -> Converted:
    from partdsl.convert.to_part import dnn_partitioning_to_part

    return Converted(dnn_partitioning_to_part(src, req.objective or "bottleneck", req.split, _out_dir(req)))


def onnx(src: Path, req: Any) -> Converted:
    from partdsl.convert.to_part import onnx_to_part

    return Converted(onnx_to_part(src, req.objective or "latency", req.fuse, req.import_options, _devices(req)))


def torch_export(src: Path, req: Any) -> Converted:
    from partdsl.convert.to_part import torch_export_to_part

    return Converted(torch_export_to_part(src, req.objective or "latency", req.import_options, _devices(req)))


def regal(src: Path, req: Any) -> Converted:
    from partdsl.convert.to_part import regal_to_part

    devices = _devices(req)
    if devices is not None and set(devices) != {"stage"}:
        raise PartError("a REGAL graph runs on identical stages: --devices stage=K", None, "e.g. --devices stage=16")
    return Converted(regal_to_part(src, (devices or {}).get("stage", 4), _out_dir(req)))


def _layer_objective(req: Any) -> str:
    objective = req.objective or "bottleneck"
    if objective not in ("bottleneck", "latency"):
        raise PartError(f"a layer profile plans for bottleneck or latency, not '{objective}'", None,
                        "--objective bottleneck (default) or latency")
    return objective


def layers(src: Path, req: Any) -> Converted:
    from partdsl.convert.layer_profile import layers_spec, load

    return Converted(spec=layers_spec(load(src), src, _layer_objective(req), tp=req.tp),
                     header=f"{src.name}, a layer profile converted by `part convert`")


def metis(src: Path, req: Any) -> Converted:
    """Metis's profiles in `src` as a partdsl-layers document (importers/metis_profile.py)."""
    from partdsl.convert.layer_profile import layers_spec
    from partdsl.importers.metis_profile import metis_layers

    objective = _layer_objective(req)
    if not req.devices or not req.output_bytes:
        raise PartError("--from metis needs --devices and --output-bytes", None,
                        "e.g. --devices A100=4,H100=4 --output-bytes 16MB (Metis's profiles record neither)")
    doc = metis_layers(src, req.tp, req.mbs, size_of("output-bytes", req.output_bytes), device_counts(req.devices))
    return Converted(spec=layers_spec(doc, src, objective),
                     header=f"{src.name}, a Metis layer profile converted by `part convert`")


def part(src: Path, req: Any) -> Converted:
    from partdsl.dsl.parser import parse_file

    return Converted(spec=parse_file(src, req.defines, req.import_options),
                     header=f"{src.name}, normalized by `part convert`")


def pipedream(src: Path, req: Any) -> Converted:
    """The spec of a PipeDream profile with PipeDream's own platform options: one level, or
    server levels (`--machines 4,2 --bandwidths 10e9,1e9`, innermost first) with any split."""
    from partdsl.convert.pipedream_profile import pipedream_spec

    machines = _numbers(req.machines, "--machines", "4")
    if any(m != int(m) for m in machines):
        raise PartError(f"--machines {req.machines}: whole numbers of devices", None, "e.g. --machines 4")
    bandwidths = _numbers(req.bandwidths, "--bandwidths", ",".join(["1e9"] * len(machines)))
    if len(bandwidths) != len(machines):
        raise PartError(f"--bandwidths {req.bandwidths}: {len(bandwidths)} values for {len(machines)} levels of "
                        "--machines", None, "give one bandwidth per level, innermost first, e.g. --machines 4,2 "
                        "--bandwidths 10e9,1e9")
    memory = _numbers(req.memory, "--memory", "16e9")[0] if req.memory else None
    spec = pipedream_spec(src, [int(m) for m in machines], bandwidths, memory, req.transfers,
                          acyclic=req.split != "any")
    return Converted(spec=spec, header=f"{src.name}, a PipeDream profile converted by `part convert`")


def _numbers(text: str | None, what: str, default: str) -> list[float]:
    try:
        out = [float(x) for x in (text or default).split(",")]
    except ValueError:
        raise PartError(f"{what} {text}: expected numbers separated by commas", None, f"e.g. {what} {default}") \
            from None
    if not all(x > 0 for x in out):
        raise PartError(f"{what} {text}: must be positive", None, f"e.g. {what} {default}")
    return out


def _quantity(option: str, text: str, dims: tuple[str, ...], what: str, example: str, positive: bool) -> float:
    """`--option TEXT` as a number in canonical units, one of `dims` (a plain number too)."""
    from partdsl.core.quantities import NUMBER
    from partdsl.dsl.parser import parse_override

    q = parse_override(option, text)
    if isinstance(q, str) or q.dim not in (*dims, NUMBER) or q.value < 0 or (positive and q.value == 0):
        raise PartError(f"--{option} {text}: not a {what}", None, f"e.g. --{option} {example}")
    return float(q.value)


def size_of(option: str, text: str) -> float:
    """`--option 16MB` -> 16e6 bytes (a plain number is bytes)."""
    from partdsl.core.quantities import SIZE

    return _quantity(option, text, (SIZE,), "size", "16MB", positive=False)


def rate_of(option: str, text: str) -> float:
    """`--option 12GB/s` -> 12e9 bytes per second (a plain number is bytes per second)."""
    from partdsl.core.quantities import BANDWIDTH

    return _quantity(option, text, (BANDWIDTH,), "bandwidth", "12GB/s", positive=True)


def device_counts(given: str) -> dict[str, int]:
    """`--devices h100=4,a100=4` -> {"h100": 4, "a100": 4}."""
    counts = {}
    for item in given.split(","):
        name, _, n = item.partition("=")
        if not name.strip() or not n.isdigit() or int(n) < 1:
            raise PartError(f"--devices {given}: '{item}' is not TYPE=COUNT", None, "e.g. --devices h100=4,a100=4")
        counts[name.strip()] = int(n)
    return counts

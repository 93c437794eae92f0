"""`part convert`: external formats -> a complete .part spec, and .part -> graph JSON."""
from __future__ import annotations

import json
import os
from pathlib import Path

from partdsl.core.errors import PartError, did_you_mean
from partdsl.importers.graph_formats import graph_from_dnn_partitioning, graph_to_json, load_json, platform_fields
from partdsl.importers.import_options import ImportOptions


def dnn_partitioning_to_part(path: Path, objective: str = "bottleneck", split: str = "contiguous",
                             relative_to: Path | None = None) -> str:
    """A spec for a dnn-partitioning file: the graph by import, platform from maxFPGAs /
    maxCPUs / maxSizePerFPGA, contiguity, hard memory, colocation by colorClass, and the
    training form when the file has backward nodes. The import path is relative to
    `relative_to` (the folder the spec is written to), or absolute when that is not known
    (the spec goes to stdout), so the spec runs from wherever it is saved. A platform
    with no CPUs (maxCPUs 0) or no accelerators (maxFPGAs 0) keeps the class, with no
    devices (`device cpu[l]`, l = 0), so the nodes' work on it stays valid."""
    data = load_json(path, None)
    name = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in path.stem) or "g"
    if name[0].isdigit():
        name = "g_" + name
    try:
        graph = graph_from_dnn_partitioning(data, name)
        k, l, mem = platform_fields(data)
    except (KeyError, TypeError, ValueError) as e:
        raise PartError(f"{path} is not a dnn-partitioning file ({type(e).__name__}: {e})", None,
                        "see data/dnn-partitioning/README.md for the format") from None
    if k < 0 or l < 0 or k + l == 0:
        raise PartError(f"{path}: maxFPGAs = {k} and maxCPUs = {l}: the platform needs at least one device",
                        None, "a dnn-partitioning platform has maxFPGAs accelerators and maxCPUs CPU cores")
    where = (os.path.relpath(path.resolve(), relative_to.resolve()) if relative_to is not None
             else str(path.resolve()))
    if objective == "latency":
        obj = "minimize latency"
    elif objective == "bottleneck":
        obj = "minimize bottleneck" + (" training pipedream" if graph.is_training else "")
    else:
        raise PartError(f"unknown objective '{objective}'", None, "use bottleneck or latency")
    cons = (["contiguous"] if split == "contiguous" else []) + ["memory hard", "colocate by group"]
    lines = [
        f"# {path.name}, converted from the dnn-partitioning format by `part convert`",
        f"# {len(graph.nodes)} nodes, {len(graph.edges)} edges"
        + (", training graph" if graph.is_training else "") + "; times in ms",
        f"param k = {k}          # accelerators (maxFPGAs)",
        f"param l = {l}          # CPU cores (maxCPUs)",
        f"param mem = {int(mem) if float(mem).is_integer() else mem} B   # memory per accelerator (maxSizePerFPGA)",
        f"graph {name} = import {json.dumps(where)} as dnn-partitioning",
        "platform {",
        "  device acc[k] { memory mem }",
        "  device cpu[l] { host }",
        "}",
        obj,
        "subject to { " + "; ".join(cons) + " }",
    ]
    return "\n".join(lines) + "\n"


def regal_to_part(path: Path, stages: int = 4, relative_to: Path | None = None) -> str:
    """A spec for a REGAL graph (CostGraphDef text): MTPP on `stages` identical stages
    with an acyclic quotient, as Archer et al. App. C.2 run them."""
    from partdsl.importers.regal_import import read_regal

    graph = read_regal(path, _graph_name(path))  # read now: a bad file is refused here, not when solved
    where = (os.path.relpath(path.resolve(), relative_to.resolve()) if relative_to is not None
             else str(path.resolve()))
    return "\n".join([
        f"# {path.name}, a REGAL graph converted by `part convert` (Archer et al. App. C.2)",
        f"# {len(graph.nodes)} nodes, {len(graph.edges)} edges; work = compute_cost, tensor = the first output's size",
        f"param k = {stages}          # pipeline stages",
        f"graph {graph.name} = import {json.dumps(where)} as regal",
        "platform { device stage[k] }",
        "minimize bottleneck",
        "subject to { acyclic }",
    ]) + "\n"


def onnx_to_part(path: Path, objective: str = "latency", fuse: bool = False,
                 options: ImportOptions = ImportOptions(), devices: dict[str, int] | None = None) -> str:
    """A spec for an ONNX model: its graph written out (nodes with FLOPs, parameter and
    output bytes per sample, from importers/onnx_import.py), on two A100s and a Xeon by device
    profile, with the objective asked for."""
    from partdsl.importers.onnx_import import import_onnx

    graph = import_onnx(path, _graph_name(path), fuse=fuse, options=options)
    return model_to_part(graph, f"{path.name}, converted from ONNX by `part convert`" + (" (chains fused)" if fuse
                                                                                           else ""), objective, devices)


def torch_export_to_part(path: Path, objective: str = "latency", options: ImportOptions = ImportOptions(),
                         devices: dict[str, int] | None = None) -> str:
    """The same for a torch.export program (.pt2, importers/torch_export.py), read without torch."""
    from partdsl.importers.torch_export import import_torch_export

    graph = import_torch_export(path, _graph_name(path), options=options)
    return model_to_part(graph, f"{path.name}, converted from torch.export by `part convert`", objective, devices)


def _graph_name(path: Path) -> str:
    name = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in path.stem) or "g"
    return "g_" + name if name[0].isdigit() else name


def model_to_part(graph, title: str, objective: str,  # type: ignore[no-untyped-def]
                  devices: dict[str, int] | None = None) -> str:
    """An imported model's graph on `devices` ({profile: count}; default two A100s and a
    Xeon), each class's work from its device profile."""
    from partdsl.core.names import identifier
    from partdsl.dsl.printer import graph_head, graph_lines
    from partdsl.importers.cost_model import names, profile_key

    platform = ["  device gpu[k] { profile a100 }", "  device cpu[1] { profile xeon }"]
    if devices:
        known, used = names(), set()
        for dev in devices:
            if profile_key(dev) not in known:
                raise PartError(f"--devices: '{dev}' is not a device profile", None,
                                did_you_mean(dev.lower(), known) + " (profiles: " + ", ".join(known) + ")")
        platform = [f"  device {identifier(profile_key(dev), used)}[{n}] {{ profile {profile_key(dev)} }}"
                    for dev, n in devices.items()]

    objectives = {"bottleneck": "minimize bottleneck", "latency": "minimize latency",
                  "tasks": "minimize latency by tasks", "throughput": "maximize throughput batch 16 split 4"}
    if objective not in objectives:
        raise PartError(f"unknown objective '{objective}'", None, "use " + ", ".join(objectives))
    lines = [f"# {title}",
             f"# {len(graph.nodes)} nodes, {len(graph.edges)} edges; per sample: flops, params and out bytes;",
             "# the work on each device class comes from its profile (importers/device_profiles.json)",
             "param k = 2", graph_head(graph)]
    lines += graph_lines(graph)  # tensors of multi-output operators as sized hops
    lines += ["}", "platform {", *platform, "}", objectives[objective], "subject to { memory hard }"]
    return "\n".join(lines) + "\n"


def graph_json(spec_graph) -> str:  # type: ignore[no-untyped-def]
    return json.dumps(graph_to_json(spec_graph), indent=1) + "\n"

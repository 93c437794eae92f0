"""The one table of input formats: what `import "file" as NAME` reads and what
`part convert --from NAME` converts. A new format is one row here and one module.

A row names its readers by dotted path ("module:function"), imported when used, so the
table sits below the language and the converters above it without importing either:
- `graph`: (path, name, span, options) -> Graph, for `import ... as NAME` (None: a
  format that is a whole spec or profile, not a graph, so convert only);
- `convert`: (path, request) -> .part text or a Spec, for `part convert --from NAME`
  (partdsl.convert.formats; None: import only).
Detection without a name: by suffix, then (JSON) by content.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from partdsl.core.errors import PartError, Span


@dataclass(frozen=True)
class Format:
    name: str
    what: str  # for messages and `part convert --help`
    suffixes: tuple[str, ...] = ()
    graph: str | None = None  # "module:function" reading a Graph
    convert: str | None = None  # "module:function" writing a spec

    def reader(self) -> Callable[..., Any]:
        return _load(self.graph)

    def converter(self) -> Callable[..., Any]:
        return _load(self.convert)


def _load(ref: str | None) -> Callable[..., Any]:
    assert ref is not None
    module, func = ref.split(":")
    return getattr(importlib.import_module(module), func)


G = "partdsl.importers"
C = "partdsl.convert.formats"
FORMATS: tuple[Format, ...] = (
    Format("dnn-partitioning", "the JSON of Tarnawski et al.'s code release", (".json",),
           f"{G}.graph_formats:read_dnn_partitioning", f"{C}:dnn_partitioning"),
    Format("partdsl", "partdsl's graph JSON (`part convert --to json`)", (".json",),
           f"{G}.graph_formats:read_graph_json"),
    Format("onnx", "an ONNX model, costed by the device profiles", (".onnx",),
           f"{G}.onnx_import:read_onnx", f"{C}:onnx"),
    Format("onnx-fused", "an ONNX model with its operator chains fused", (),
           f"{G}.onnx_import:read_onnx_fused"),
    Format("torch-export", "a torch.export program (.pt2), read without torch", (".pt2",),
           f"{G}.torch_export:read_torch_export", f"{C}:torch_export"),
    Format("regal", "a REGAL CostGraphDef text file", (".pbtxt",),
           f"{G}.regal_import:read_regal", f"{C}:regal"),
    Format("layers", "a partdsl-layers profile (JSON)", (), None, f"{C}:layers"),
    Format("metis", "a folder of Metis profiles (DeviceType.*.json)", (), None, f"{C}:metis"),
    Format("pipedream", "a PipeDream profile (graph.txt)", (), None, f"{C}:pipedream"),
    Format("part", "a .part spec, normalized", (".part",), None, f"{C}:part"),
)
BY_NAME = {f.name: f for f in FORMATS}
IMPORTABLE = tuple(f.name for f in FORMATS if f.graph)
CONVERTIBLE = tuple(f.name for f in FORMATS if f.convert)


def by_name(name: str, span: Span | None, of: tuple[str, ...], what: str = "format") -> Format:
    if name not in of:
        raise PartError(f"unknown {what} '{name}'", span, "formats: " + ", ".join(of))
    return BY_NAME[name]


def guess(path: Path, of: tuple[str, ...]) -> Format | None:
    """The format of `path` by its suffix (a folder: metis); None when the suffix says
    nothing (JSON: the caller looks at the content)."""
    if path.is_dir() and "metis" in of:
        return BY_NAME["metis"]
    suffix = path.suffix.lower()
    hits = [f for f in FORMATS if f.name in of and suffix in f.suffixes]
    return hits[0] if len(hits) == 1 else None

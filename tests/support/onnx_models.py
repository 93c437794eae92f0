"""ONNX files written for a test: a graph of the given nodes saved as a model."""
from __future__ import annotations

from pathlib import Path

import onnx
from onnx import helper


def save(path: Path, nodes, inputs, outputs, inits=(), opsets=(("", 21),)) -> Path:  # type: ignore[no-untyped-def]
    graph = helper.make_graph(nodes, "m", inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    onnx.save(model, str(path))
    return path

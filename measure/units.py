"""A model's layers, as a pipeline cuts it: the children of its longest `nn.ModuleList`
(the decoder layers: `model.layers.0`, ...) and the modules beside that list's ancestors
(`model.embed_tokens`, `model.norm`, `lm_head`), in the order one forward pass first
calls them, each with its output of that pass.

A module with no parameters of its own (a rotary embedding's cosines, a dropout) is left
out (`skipped`): it is not a layer a stage holds, and its time counts to the layer before
it (measure/timing.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from partdsl.core.errors import PartError


@dataclass
class Unit:
    """One layer and its output of one forward pass."""
    name: str
    module: Any
    output: Any = None


def candidates(model: Any) -> list[tuple[str, Any]]:
    """The model's layers by module path, in definition order (module docstring)."""
    import torch

    lists = [(n, m) for n, m in model.named_modules() if isinstance(m, torch.nn.ModuleList) and len(m)]
    if not lists:
        raise PartError(f"part profile: {type(model).__name__} has no nn.ModuleList of layers", None,
                        "profile a model whose repeated layers sit in an nn.ModuleList (model.layers, transformer.h)")
    top, layers = max(lists, key=lambda x: len(x[1]))
    spine = {""} | {".".join(top.split(".")[:i]) for i in range(1, top.count(".") + 2)}
    out = []
    for s in sorted(spine, key=len):
        for child, mod in model.get_submodule(s).named_children():
            path = f"{s}.{child}" if s else child
            if path not in spine:
                out.append((path, mod))
    return out  # the spine's last module is the list: its children are the layers


def capture(model: Any, inputs: tuple) -> tuple[list[Unit], list[str]]:
    """Run `model(*inputs)` once with hooks: the units it called, in call order (the units
    do not nest, so the order they end in), each with its first output, and the
    parameter-free ones it skipped."""
    import torch

    called: list[Unit] = []
    handles = []
    for name, mod in candidates(model):
        def post(m: Any, args: tuple, out: Any, unit: Unit = Unit(name, mod)) -> None:
            if unit.output is None:
                unit.output = out
                called.append(unit)
        handles.append(mod.register_forward_hook(post))
    try:
        with torch.no_grad():
            model(*inputs)
    finally:
        for h in handles:
            h.remove()
    held = [any(True for _ in u.module.parameters()) for u in called]
    return [u for u, h in zip(called, held) if h], [u.name for u, h in zip(called, held) if not h]

"""A model's layers, as a pipeline cuts it: the children of its longest `nn.ModuleList`
(the decoder layers: `model.layers.0`, ...) and the modules beside that list's ancestors
(`model.embed_tokens`, `model.norm`, `lm_head`), in the order one forward pass first
calls them, each with the arguments it was called with (to run it alone).

A module with no parameters of its own (a rotary embedding's cosines, a dropout) is left
out: it is not a layer a stage holds, and its time is not in the profile (`skipped`)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from partdsl.core.errors import PartError


@dataclass
class Unit:
    """One layer and what one forward pass gave it and got from it."""
    name: str
    module: Any
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
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
    """Run `model(*inputs)` once with hooks: the units it called (in call order, with
    their arguments and outputs) and the parameter-free ones it skipped."""
    import torch

    units, order, handles = {}, [], []
    for name, mod in candidates(model):
        unit = units[name] = Unit(name, mod)

        def pre(m: Any, args: tuple, kwargs: dict, unit: Unit = unit) -> None:
            if unit.output is None and unit.name not in order:
                unit.args, unit.kwargs = args, kwargs
                order.append(unit.name)

        def post(m: Any, args: tuple, kwargs: dict, out: Any, unit: Unit = unit) -> None:
            if unit.output is None:
                unit.output = out
        handles += [mod.register_forward_pre_hook(pre, with_kwargs=True),
                    mod.register_forward_hook(post, with_kwargs=True)]
    try:
        with torch.no_grad():
            model(*inputs)
    finally:
        for h in handles:
            h.remove()
    called = [units[n] for n in order]
    return ([u for u in called if any(True for _ in u.module.parameters(recurse=True))],
            [u.name for u in called if not any(True for _ in u.module.parameters(recurse=True))])

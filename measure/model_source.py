"""What `part profile` measures: a model from a `transformers` config (a config.json, or
a folder holding one) with random weights, or a Python callable named `module:function`
or `path/to/file.py:function` returning an `nn.Module` or `(module, example_input)`.

An example input is for a micro-batch of one sample; a bigger micro-batch repeats it
along dimension 0. Without one, the model's `config.vocab_size` gives random token ids."""
from __future__ import annotations

import importlib
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from partdsl.core.errors import PartError

SOURCE_HINT = ("give a transformers config (config.json, or its folder) or a callable as module:function or "
               "file.py:function returning an nn.Module or (module, example_input)")


def need_torch() -> Any:
    """torch, or exit 5 naming the extra that installs it."""
    from partdsl.core.solver_errors import optional

    return optional("torch", "profile", "part profile's timer (Python package torch)")


@dataclass
class Model:
    """A model to measure, and its input for a micro-batch of b samples."""
    name: str
    module: Any
    inputs: Callable[[int], tuple]


def load(source: str, tokens: int, dtype: str, device: str) -> Model:
    """The model `source` names (module docstring), in `dtype`, on `device`, in train mode."""
    torch = need_torch()
    path = Path(source)
    if source.endswith(".json") or (path.is_dir() and (path / "config.json").exists()):
        model, example, name = _from_config(path, tokens)
    elif ":" in source:
        model, example, name = _from_callable(source, tokens)
    else:
        raise PartError(f"part profile: cannot read a model from '{source}'", None, SOURCE_HINT)
    if not isinstance(model, torch.nn.Module):
        raise PartError(f"part profile: {source} gave a {type(model).__name__}, not an nn.Module", None, SOURCE_HINT)
    model = model.to(device=device, dtype=_dtype(torch, dtype)).train()

    def inputs(b: int) -> tuple:
        return tuple(x.repeat(b, *([1] * (x.dim() - 1))).to(device) if isinstance(x, torch.Tensor) else x
                     for x in example)
    return Model(name, model, inputs)


def _dtype(torch: Any, name: str) -> Any:
    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]


def _token_ids(model: Any, tokens: int, where: str) -> tuple:
    import torch

    vocab = getattr(getattr(model, "config", None), "vocab_size", None)
    if not isinstance(vocab, int):
        raise PartError(f"part profile: {where} gave no example input and its model has no config.vocab_size",
                        None, "return (module, example_input) for one sample")
    return (torch.randint(0, vocab, (1, tokens), generator=torch.Generator().manual_seed(0)),)


def _from_config(path: Path, tokens: int) -> tuple[Any, tuple, str]:
    from partdsl.core.solver_errors import optional

    transformers = optional("transformers", "profile", "model builder for a config (Python package transformers)")
    file = path / "config.json" if path.is_dir() else path
    try:
        data = json.loads(file.read_text())
    except (OSError, ValueError) as e:
        raise PartError(f"part profile: cannot read {file}: {e}", None, SOURCE_HINT) from None
    try:
        config = transformers.AutoConfig.for_model(**data)
        model = transformers.AutoModelForCausalLM.from_config(config)
    except (ValueError, KeyError, TypeError) as e:
        raise PartError(f"part profile: {file} is not a causal LM config transformers can build: {e}", None,
                        "give a config.json with a model_type transformers knows (e.g. llama)") from None
    _no_cache(model)
    return model, _token_ids(model, tokens, str(file)), str(data.get("_name_or_path") or file.parent.name or "model")


def _no_cache(model: Any) -> None:
    """No KV cache: a training step keeps none."""
    if getattr(model, "config", None) is not None and hasattr(model.config, "use_cache"):
        model.config.use_cache = False


def _from_callable(source: str, tokens: int) -> tuple[Any, tuple, str]:
    where, _, attr = source.rpartition(":")
    try:
        if where.endswith(".py"):
            spec = importlib.util.spec_from_file_location(Path(where).stem, where)
            if spec is None or spec.loader is None:
                raise ImportError(f"no such file {where}")
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
        else:
            mod = importlib.import_module(where)
        fn = getattr(mod, attr)
    except (ImportError, AttributeError, OSError) as e:
        raise PartError(f"part profile: cannot load {source}: {e}", None, SOURCE_HINT) from None
    got = fn()
    model, example = (got[0], got[1]) if isinstance(got, tuple) else (got, None)
    _no_cache(model)
    if example is None:
        example = _token_ids(model, tokens, source)
    return model, example if isinstance(example, tuple) else (example,), attr

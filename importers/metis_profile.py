"""Metis's per-layer profiles -> a partdsl-layers document (convert/layer_profile.py). Metis
(Um et al., "Metis: Fast Automatic Distributed Training on Heterogeneous GPUs", USENIX ATC
2024) profiles a model once per device type, tensor-parallel degree and micro-batch size,
one JSON file each, `DeviceType.<GPU>_tp<T>_bs<B>.json` (the format its ProfileDataLoader
reads):

    {"model": {"model_name": ..., "num_layers": N,
               "parameters": {"total_parameters_bytes": ..., "parameters_per_layer_bytes": [...]}},
     "execution_time": {"forward_backward_time_ms": ..., "optimizer_time_ms": ...,
                        "layer_compute_total_ms": [...]},
     "execution_memory": {"total_memory_mb": ..., "layer_memory_total_mb": [...]}}

Its layers are the embedding, the N - 2 decoder layers and the post-process (final norm,
LM head, loss). A layer's time is its forward and backward compute in one, so the graph is
a chain of training steps (no separate backward nodes); its memory (`layer_memory_total_mb`,
weights, gradients, optimizer state and activations as Metis measured them) is the node's
memory. Metis records no tensor sizes between layers: `output_bytes` (micro-batch x
sequence x hidden x bytes per element) is given by the user, and a device type named as a
device profile (`A100`, `H100`, `A100-80`) takes its memory and link from the profile. We chose Metis's format as the
real planner's to read because it is per layer and per device type, as heterogeneous
clusters need; Alpa and Galvatron profile per operator or per layer type."""
from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from partdsl.core.errors import PartError
from partdsl.importers.import_text import read_import_text

FILE = re.compile(r"DeviceType\.(.+)_tp(\d+)_bs(\d+)\.json")


def _bad(where: str, what: str, hint: str = "see Metis's profile format in docs/importers.md") -> PartError:
    return PartError(f"import: {where}: {what}", None, hint)


def _list(doc: Any, keys: tuple[str, ...], name: str) -> list[float]:
    x = doc
    for k in keys:
        if not isinstance(x, dict) or k not in x:
            raise _bad(name, f"missing field '{'.'.join(keys)}'")
        x = x[k]
    if not isinstance(x, list) or not x or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                     and math.isfinite(v) and v >= 0 for v in x):
        raise _bad(name, f"'{'.'.join(keys)}' is not a list of non-negative numbers")
    return [float(v) for v in x]


def _profile(gpu: str) -> dict:
    """A device profile of the same name (`A100-80` -> `a100_80`) gives memory and link."""
    from partdsl.importers.cost_model import names, profile_key

    key = profile_key(gpu)
    return {"profile": key} if key in names() else {}


def metis_layers(folder: Path, tp: int, mbs: int, output_bytes: float, counts: dict[str, int]) -> dict:
    """The files of `folder` for tensor-parallel degree `tp` and micro-batch size `mbs`, one
    per device type, as a partdsl-layers document: `counts` GPUs of each type, every `tp` of
    them one pipeline rank."""
    if not folder.is_dir():
        raise _bad(str(folder), "not a folder of Metis profiles", "give the folder holding DeviceType.*_tp*_bs*.json")
    files = {m[1]: folder / m[0] for m in (FILE.fullmatch(p.name) for p in sorted(folder.iterdir()))
             if m and int(m[2]) == tp and int(m[3]) == mbs}
    if not files:
        raise _bad(str(folder), f"no DeviceType.<GPU>_tp{tp}_bs{mbs}.json file",
                   "--tp and --mbs pick the files; the folder holds " +
                   (", ".join(sorted(p.name for p in folder.glob("DeviceType.*.json"))) or "none"))
    if set(counts) != set(files):
        raise _bad("--devices", f"the profiles are of {', '.join(sorted(files))}, the devices given "
                   f"{', '.join(sorted(counts)) or 'none'}", "give a count for each profiled type, e.g. --devices "
                   + ",".join(f"{t}=4" for t in sorted(files)))
    if any(n % tp for n in counts.values()):
        raise _bad("--devices", f"with --tp {tp}, every {tp} GPUs form one pipeline rank: "
                   + ", ".join(f"{t}={n}" for t, n in counts.items() if n % tp) + f" is not a multiple of {tp}",
                   f"give GPU counts that are multiples of {tp}")
    per: dict[str, tuple[list[float], list[float]]] = {}
    for gpu, path in files.items():
        try:
            doc = json.loads(read_import_text(path, None, "a Metis profile (JSON)"))
        except ValueError as e:
            raise _bad(path.name, f"not JSON ({e})") from None
        per[gpu] = (_list(doc, ("execution_time", "layer_compute_total_ms"), path.name),
                    _list(doc, ("execution_memory", "layer_memory_total_mb"), path.name))
    sizes = {gpu: len(t) for gpu, (t, _) in per.items()} | {f"{gpu} memory": len(m) for gpu, (_, m) in per.items()}
    if len(set(sizes.values())) != 1 or min(sizes.values()) < 3:
        raise _bad(str(folder), "the profiles list different numbers of layers (or fewer than 3): "
                   + ", ".join(f"{k} {v}" for k, v in sizes.items()))
    n = next(iter(sizes.values()))
    names = ["embedding"] + [f"layers.{i}" for i in range(n - 2)] + ["post_process"]
    return {"format": "partdsl-layers", "version": 1, "model": folder.name,
            "devices": {gpu: {"count": counts[gpu] // tp, **_profile(gpu)} for gpu in per},
            "layers": [{"name": names[i], "output_bytes": output_bytes,
                        "forward_ms": {gpu: t[i] for gpu, (t, _) in per.items()},
                        "params_bytes": max(m[i] for _, m in per.values()) * 2**20}
                       for i in range(n)]}

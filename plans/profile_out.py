"""A model's layers as a partdsl-layers profile (`part convert MODEL --to layers`,
docs/importers.md): the estimate of each layer that the operator graph's cost model gives,
in the format a profiler's measurements go in, to edit or to plan from.

One entry per decoder layer (plans/units.py), and one per module of what runs before the
first (`model.embed_tokens`, ...) and after the last (`model.norm`, `lm_head`), in the
order they first run; a node without a module goes with its unit's first. Per entry:
- `forward_ms` on each device class: the sum of its operators' times at micro-batch 1;
- `params_bytes`: the sum of its operators' parameters;
- `output_bytes`: what crosses the cut after it, each producer's output counted once
  whatever entry after the cut reads it;
- with `backward` = r (`--backward r`): `backward_ms` = r x `forward_ms` (r = 2 is
  Narayanan et al.'s, SC'21 sec. 3.5) and `activation_bytes`, every operator's output
  stashed for the backward pass (no recomputation).
Linear in the graph."""
from __future__ import annotations

import math
import re

import numpy as np
from partdsl.core.errors import PartError
from partdsl.core.ir import Spec
from partdsl.plans.units import HEAD, Units, units

FORMAT, VERSION = "partdsl-layers", 1


def _entries(spec: Spec, u: Units) -> tuple[np.ndarray, list[str]]:
    """entry[v] for every forward node (-1 for backward ones), and each entry's module."""
    nodes, unit, pos = spec.graph.nodes, u.unit, spec.dense.topo_position
    first: dict[tuple[int, str], int] = {}
    entry_key: list[tuple[int, str] | None] = [None] * len(nodes)
    for v in np.flatnonzero(unit >= 0).tolist():
        k = int(unit[v])
        mods = u.modules[k] or (("embedding",) if k == HEAD else ("head",))
        m = nodes[v].module if k in (HEAD, u.tail) and nodes[v].module in mods else mods[0]
        entry_key[v] = (k, m)
        first[(k, m)] = min(first.get((k, m), len(nodes)), int(pos[v]))
    order = sorted(first, key=lambda km: (km[0], first[km]))
    number = {km: i for i, km in enumerate(order)}
    entry = np.array([-1 if km is None else number[km] for km in entry_key], dtype=np.int64)
    return entry, [m for _, m in order]


def layer_profile(spec: Spec, backward: float | None = None, pattern: re.Pattern | None = None) -> dict:
    """The profile (module docstring) of `spec`'s forward graph on its device classes, its
    layers found by plans/units.py (`pattern`: a user's --layers)."""
    d = spec.dense
    if backward is not None and (not math.isfinite(backward) or backward < 0):
        raise PartError(f"--backward {backward}: not a non-negative ratio", None, "e.g. --backward 2")
    if spec.graph.is_training:
        raise PartError(f"--to layers reads a forward graph; '{spec.graph.name}' has backward nodes", None,
                        "convert the forward model, with --backward R for backward times")
    entry, modules = _entries(spec, units(spec, pattern))
    fw = entry >= 0
    n = len(modules)
    work = np.zeros((n, len(d.class_names)))
    np.add.at(work, entry[fw], np.where(np.isfinite(d.work[fw]), d.work[fw], 0.0))
    params = np.bincount(entry[fw], d.weights[fw], minlength=n)  # a tied weight in each reader's layer
    stashed = np.bincount(entry[fw], d.out_bytes[fw], minlength=n)
    last = np.full(d.n, -1, dtype=np.int64)  # each producer's last reading entry
    ok = fw[d.src] & fw[d.dst]
    np.maximum.at(last, d.src[ok], entry[d.dst[ok]])
    crossing = np.zeros(n + 1)
    out = fw & (last > entry)
    np.add.at(crossing, entry[out], d.out_bytes[out])
    np.add.at(crossing, last[out], -d.out_bytes[out])
    cut = np.cumsum(crossing)[:n]
    cut[-1] = d.out_bytes[fw & (entry == n - 1)].sum() if n else 0.0  # the model's output
    classes = spec.platform.classes
    layers = []
    for e, module in enumerate(modules):
        times = {k.name: float(work[e, c]) for c, k in enumerate(classes)}
        layer = {"name": module, "module": module, "forward_ms": times, "params_bytes": float(params[e]),
                 "output_bytes": float(cut[e])}
        if backward is not None:
            layer |= {"backward_ms": {k: backward * t for k, t in times.items()}, "activation_bytes": float(stashed[e])}
        layers.append(layer)
    devices = {}
    for c, k in enumerate(classes):
        facts: dict = {"count": int(k.count)}
        if math.isfinite(d.memory[c]):
            facts["memory_bytes"] = float(d.memory[c])
        if math.isfinite(d.link[c]):
            facts["link_bytes_per_s"] = float(d.link[c])
        devices[k.name] = facts
    return {"format": FORMAT, "version": VERSION, "model": spec.graph.name, "devices": devices, "layers": layers}

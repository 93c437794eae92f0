"""Per-layer profiles -> specs (`part convert profile.json --from layers`): what a profiler
measures of each layer, in partdsl's own JSON format (docs/importers.md):

    {"format": "partdsl-layers", "version": 1, "model": "llama-8b",
     "devices": {"h100": {"count": 4, "memory_bytes": 80e9, "link_bytes_per_s": 50e9}, ...},
     (or {"count": 4, "profile": "h100"}: memory and link from a device profile)
     "layers": [{"name": "embed", "module": "model.embed_tokens",
                 "forward_ms": {"h100": 0.4, "a100": {"1": 0.7, "4": 2.5}},
                 "backward_ms": {"h100": 0.8, "a100": 1.4},
                 "params_bytes": 1.05e9, "activation_bytes": 3.4e7, "output_bytes": 3.4e7}, ...]}

The layers run in the order listed, each feeding the next. A time is per micro-batch; a
device type may give one per micro-batch size (`{"1": 0.7, "4": 2.5}`). With backward
times, each layer gets a backward node in its group (Tarnawski et al.'s training graphs:
backward layers in reverse order, after the last forward layer) and the spec asks for
`colocate by group`. Under the bottleneck objective it asks for `acyclic`: the stages form a
pipeline, as a framework runs them (and the DP over ideals proves its split).

Memory: a forward node holds the layer's `params_bytes` (`part convert --optimizer adam`
scales them, importers/memory_model.py); under training it stashes the
layer's `activation_bytes` for its backward pass (`stash`), once per micro-batch in flight
under 1F1B: stage s of P holds P - s of them (evaluator/activations.in_flight); without
backward times (serving) the forward node also holds the layer's `kv_cache_bytes`.
`"dtype"` (top level, default bf16) is the weights' dtype, for the optimizer factor.

Tensor-parallel variants: a layer may list `"tensor_parallel": {"2": {...}}`, the fields
measured on one GPU of a 2-way tensor-parallel group (times of the group, bytes of one
GPU's share). `tp=2` (`--tp 2`) reads those; every 2 GPUs of a type form one pipeline
rank, so each type's count must be a multiple of 2."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from partdsl.core.errors import PartError, Span, did_you_mean
from partdsl.core.ir import Spec
from partdsl.core.names import identifier
from partdsl.dsl.builder import GraphBuilder, SpecBuilder
from partdsl.importers.cost_model import names as profile_names
from partdsl.importers.memory_model import DTYPE_BYTES

FORMAT, VERSION = "partdsl-layers", 1
HINT = "see the partdsl-layers format in docs/importers.md"


class Reader:
    def __init__(self, path: Path, span: Span | None) -> None:
        self.path, self.span = path, span

    def bad(self, where: str, what: str, hint: str = HINT) -> PartError:
        return PartError(f"import: {self.path.name}: {where}: {what}", self.span, hint)

    def need(self, obj: Any, key: str, where: str) -> Any:
        if not isinstance(obj, dict) or key not in obj:
            raise self.bad(where, f"missing field '{key}'")
        return obj[key]

    def number(self, x: Any, where: str, positive: bool = False) -> float:
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x < 0 or \
                (positive and x == 0):
            raise self.bad(where, f"{x!r} is not a {'positive' if positive else 'non-negative'} number",
                           "write a number such as 0.5 (times in ms, sizes in bytes)")
        return float(x)

    def times(self, obj: Any, where: str, devices: dict) -> dict[tuple[str, int], float]:
        """{device: ms or {micro-batch: ms}} -> {(device, micro-batch): ms}."""
        if not isinstance(obj, dict) or not obj:
            raise self.bad(where, "expected {device type: time in ms}")
        out = {}
        for dev, t in obj.items():
            if dev not in devices:
                raise self.bad(f"{where}.{dev}", f"unknown device type '{dev}'",
                               did_you_mean(dev, list(devices)) + " (the types are the keys of 'devices')")
            for mb, ms in (t.items() if isinstance(t, dict) else [("1", t)]):
                if not str(mb).isdigit() or int(mb) < 1:
                    raise self.bad(f"{where}.{dev}", f"micro-batch size '{mb}' is not a positive integer")
                out[(dev, int(mb))] = self.number(ms, f"{where}.{dev}.{mb}" if isinstance(t, dict) else f"{where}.{dev}")
        return out


def _work(times: dict[tuple[str, int], float], cls: dict[str, str]) -> dict:
    """GraphBuilder.node's work (micro-batch 1) and batch_work (the other sizes) by class."""
    return {"work": {cls[d]: t for (d, mb), t in times.items() if mb == 1},
            "batch_work": {(cls[d], mb): t for (d, mb), t in times.items() if mb != 1}}


def load(path: Path, span: Span | None = None) -> dict:
    from partdsl.importers.graph_formats import load_json

    data = load_json(path, span)
    r = Reader(path, span)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise r.bad("format", f"not a {FORMAT} file (its 'format' is {data.get('format') if isinstance(data, dict) else None!r})")
    if data.get("version") != VERSION:
        raise r.bad("version", f"version {data.get('version')!r} is not {VERSION}")
    return data


def measured(data: dict) -> str:
    """Where a profile's times were measured, as `part profile` records it ("" if it does not
    say): the graph header's `measured "..."`, which `part check` reports."""
    m = data.get("measured")
    if not isinstance(m, dict):
        return ""
    how = ", ".join(str(x) for x in (m.get("torch_device"), m.get("torch") and f"torch {m['torch']}",
                                      m.get("threads") and f"{m['threads']} threads",
                                      m.get("tokens") and f"{m['tokens']} tokens", m.get("date")) if x)
    return f"by {m.get('by', 'a profiler')} on {m.get('device', 'an unnamed device')}" + \
        (f" ({how})" if how else "")


def _variant(r: Reader, layer: Any, where: str, tp: int) -> tuple[dict, str]:
    """The layer's fields at tensor-parallel degree `tp` (its own fields at 1)."""
    if tp == 1:
        return layer, where
    tps = r.need(layer, "tensor_parallel", where)
    if not isinstance(tps, dict) or str(tp) not in tps:
        raise r.bad(f"{where}.tensor_parallel", f"no variant for tp {tp}",
                    f"add \"{tp}\": {{forward_ms, ...}} or pick a degree the profile has"
                    + (f": {', '.join(map(str, tps))}" if isinstance(tps, dict) else ""))
    return tps[str(tp)], f"{where}.tensor_parallel.{tp}"


def layers_spec(data: dict, path: Path, objective: str = "bottleneck", span: Span | None = None,
                tp: int = 1) -> Spec:
    """A partdsl-layers document (read from `path`, named in errors) as a spec, at
    tensor-parallel degree `tp` (module docstring)."""
    r = Reader(path, span)
    devices = r.need(data, "devices", "devices")
    if not isinstance(devices, dict) or not devices:
        raise r.bad("devices", "expected {device type: {count, memory_bytes, link_bytes_per_s}}")
    layers = r.need(data, "layers", "layers")
    if not isinstance(layers, list) or not layers:
        raise r.bad("layers", "expected a list of layers, first to last")
    dtype = data.get("dtype", "bf16")
    if dtype not in DTYPE_BYTES:
        raise r.bad("dtype", f"unknown dtype {dtype!r}", "use one of " + ", ".join(DTYPE_BYTES))
    g, used = GraphBuilder(identifier(str(data.get("model", path.stem)), set()), measured(data)), set()
    cls = {dev: identifier(str(dev), set()) for dev in devices}
    names, training = [], any(isinstance(x, dict) and "backward_ms" in x for x in layers)
    for i, layer in enumerate(layers):
        name = identifier(str(r.need(layer, "name", f"layers[{i}]")), used)
        module = layer.get("module")
        if module is not None and not isinstance(module, str):
            raise r.bad(f"layers[{i}].module", f"{module!r} is not a module path", 'write e.g. "model.layers.3"')
        fields, where = _variant(r, layer, f"layers[{i}]", tp)
        fw = r.times(r.need(fields, "forward_ms", where), f"{where}.forward_ms", devices)
        params = r.number(fields.get("params_bytes", 0), f"{where}.params_bytes")
        act = r.number(fields.get("activation_bytes", 0), f"{where}.activation_bytes")
        kv = r.number(fields.get("kv_cache_bytes", 0), f"{where}.kv_cache_bytes")
        out = r.number(r.need(fields, "output_bytes", where), f"{where}.output_bytes")
        g.node(name, params=params + (0.0 if training else kv), out=out, module=module, dtype=dtype,
               group=name if training else None, stash=act if training else 0.0, **_work(fw, cls))
        names.append(name)
        if training:
            bw = r.times(r.need(fields, "backward_ms", where), f"{where}.backward_ms", devices)
            g.node(identifier(name + "_bw", used), backward=True, group=name, module=module, out=out,
                   dtype=dtype, **_work(bw, cls))
    g.chain(*names)
    if training:
        bws = [n + "_bw" for n in names]
        g.edge(names[-1], bws[-1]).chain(*reversed(bws))
    b = SpecBuilder(g)
    for dev, facts in devices.items():
        where = f"devices.{dev}"
        count = r.need(facts, "count", where)
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise r.bad(f"{where}.count", f"{count!r} is not a positive integer")
        if count % tp:
            raise r.bad(f"{where}.count", f"{count} GPUs do not form groups of tp {tp}",
                        f"give a multiple of {tp}: every {tp} GPUs form one pipeline rank")
        mem, link, profile = facts.get("memory_bytes"), facts.get("link_bytes_per_s"), facts.get("profile")
        if profile is not None and profile not in profile_names():
            raise r.bad(f"{where}.profile", f"unknown device profile '{profile}'",
                        did_you_mean(str(profile), profile_names()) + " (profiles give memory and link by default)")
        b.device(cls[dev], count // tp, memory=None if mem is None else r.number(mem, f"{where}.memory_bytes", True),
                 link=None if link is None else r.number(link, f"{where}.link_bytes_per_s", True), profile=profile)
    b.minimize(objective)
    b.subject_to(colocate=training, acyclic=objective == "bottleneck")
    return b.build()

"""An analytic device cost model: a node's time on a device class for a batch of b samples
is a roofline plus a launch overhead,

    t(b) = overhead + max(flops * (b + batch_half) / (peak * efficiency),
                          (params + b * (in + out)) / memory_bandwidth),

i.e. compute efficiency b / (b + batch_half) of the sustained rate grows with the batch
(the batch-efficiency curve), and memory time counts the weights once per batch and each
sample's activations. That is the convolution's shape (DiviML's randomly wired networks,
calibrated to its Table II).

An operator that states its matrix product's `rows` per sample (a transformer's tokens,
issue 72) has its efficiency from its shape instead: the GEMM has R = rows * b rows and
runs at gemm_efficiency * R / (R + rows_half) of the dtype's peak (never below the batch
model's efficiency, which a GEMM of a few rows is), and its bytes move at
bandwidth_efficiency of the memory bandwidth (norms, softmax and elementwise operators are
bound by it):

    e(b) = max(gemm_efficiency * R / (R + rows_half), efficiency * b / (b + batch_half))
    t(b) = overhead + max(flops * b / (peak * e(b)),
                          (params + b * (in + out)) / (memory_bandwidth * bandwidth_efficiency)).

Profiles (importers/device_profiles.json) carry vendor data-sheet values and the calibrated
model parameters (docs/cost_model.md: the calibration table); any field can be overridden."""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from pathlib import Path

from partdsl.core.errors import PartError, Span
from partdsl.core.ir import GENERIC, Graph, Node, Objective, Platform
from partdsl.core.quantities import BANDWIDTH, FLOP_RATE, FRACTION, NUMBER, TIME, Quantity

DTYPES = ("fp32", "fp16", "bf16", "int8")
# the fields a spec may override (`device gpu[2] { profile a100 { overhead 20 us } }`): dimension, scale to
# the profile's units (memory and link are the device's own `memory` and `link`)
FIELDS: dict[str, tuple[str, float]] = {
    "peak": (FLOP_RATE, 1.0), "peak_fp16": (FLOP_RATE, 1.0), "peak_bf16": (FLOP_RATE, 1.0),
    "peak_int8": (FLOP_RATE, 1.0), "memory_bandwidth": (BANDWIDTH, 1.0), "overhead": (TIME, 1e-3),
    "batch_half": (NUMBER, 1.0), "efficiency": (NUMBER, 1.0), "rows_half": (NUMBER, 1.0),
    "gemm_efficiency": (NUMBER, 1.0), "bandwidth_efficiency": (NUMBER, 1.0)}
PROFILES_FILE = Path(__file__).with_name("device_profiles.json")


@dataclass(frozen=True)
class DeviceProfile:
    name: str
    peak_flops: float  # FLOP/s
    memory_bandwidth: float  # B/s
    memory: float  # bytes
    link: float  # B/s, to host memory (one direction)
    overhead: float  # s per operator
    batch_half: float  # batch size at half the sustained rate
    efficiency: float  # sustained fraction of peak
    host: bool = False
    source: str = ""
    peak_fp16: float | None = None  # FLOP/s per dtype (None: no faster path than FP32)
    peak_bf16: float | None = None
    peak_int8: float | None = None
    rows_half: float = 256.0  # a GEMM's rows at half its sustained rate (operators that state `rows`)
    gemm_efficiency: float = 0.6  # sustained fraction of the dtype's peak on large matrix products
    bandwidth_efficiency: float = 0.8  # sustained fraction of the memory bandwidth (operators that state `rows`)
    calibrated: tuple[str, ...] = ()  # the models its parameters were calibrated for: "batch", "shape"

    def trust(self, shaped: bool) -> str:
        """How far its times for an operator with (`shaped`) or without rows were checked."""
        if shaped:
            return "calibrated against published training runs" if "shape" in self.calibrated else "not calibrated"
        return "calibrated to DiviML Table II" if "batch" in self.calibrated else "not calibrated"

    def peak(self, dtype: str | None) -> float:
        """The rate for `dtype`; a dtype without a fast path on this device runs at its FP32
        rate (as PyTorch runs bf16 on a V100: no tensor-core path), said once (issue 72)."""
        key = dtype or "fp32"
        fast = {"fp16": self.peak_fp16, "bf16": self.peak_bf16, "int8": self.peak_int8}.get(key)
        if fast:
            return fast
        if key != "fp32" and (self.name, key) not in _TOLD:
            _tell_fallback(self, key)
        return self.peak_flops

    def time_ms(self, flops: float, params: float, act: float, batch: int, dtype: str | None = None,
                rows: float | None = None) -> float:
        """Milliseconds for `batch` samples of an operator with `flops` per sample, `params`
        bytes of weights and `act` bytes of activations (inputs + output) per sample; `rows`:
        its matrix product's rows per sample (the shape model, see the module docstring)."""
        if rows:  # never below the batch model's efficiency: a GEMM of few rows is a batch-1 operator
            R = rows * batch
            eff = max(self.gemm_efficiency * R / (R + self.rows_half),
                      self.efficiency * batch / (batch + self.batch_half))
            compute = flops * batch / (self.peak(dtype) * eff)
            memory = (params + batch * act) / (self.memory_bandwidth * self.bandwidth_efficiency)
        else:
            compute = flops * (batch + self.batch_half) / (self.peak(dtype) * self.efficiency)
            memory = (params + batch * act) / self.memory_bandwidth
        return (self.overhead + max(compute, memory)) * 1e3


_TOLD: set[tuple[str, str]] = set()


def _tell_fallback(p: DeviceProfile, dtype: str) -> None:
    import warnings

    _TOLD.add((p.name, dtype))
    faster = [f"{d} {rate / 1e12:g} TFLOP/s" for d, rate in (("fp16", p.peak_fp16), ("bf16", p.peak_bf16),
                                                              ("int8", p.peak_int8)) if rate]
    hint = f"; its fast path{'s' if len(faster) > 1 else ''}: {', '.join(faster)}" if faster else ""
    warnings.warn(f"{p.name} has no {dtype} fast path: its {dtype} operators are costed at its FP32 rate, "
                  f"{p.peak_flops / 1e12:g} TFLOP/s{hint}", UserWarning, stacklevel=3)


@lru_cache(maxsize=1)
def _library() -> dict[str, dict]:
    raw = json.loads(PROFILES_FILE.read_text())
    return {k: v for k, v in raw.items() if not k.startswith("_")}


def names() -> list[str]:
    return sorted(_library())


def profile_key(device: str) -> str:
    """The profile a device type's name means: `A100-80` -> `a100_80`."""
    return device.lower().replace("-", "_")


def profile(name: str, **override: float) -> DeviceProfile:
    """A profile from the library, with any field overridden."""
    lib = _library()
    if name not in lib:
        raise PartError(f"unknown device profile '{name}'", None, "profiles: " + ", ".join(names()))
    known = {f.name for f in fields(DeviceProfile)}
    bad = sorted(set(override) - known)
    if bad:
        raise PartError(f"unknown profile field(s) {', '.join(bad)}", None, "fields: " + ", ".join(sorted(known)))
    fields_ = dict(lib[name], calibrated=tuple(lib[name].get("calibrated", ())))
    return replace(DeviceProfile(name=name, **fields_), **override)


def check_field(key: str, q: Quantity, span: Span | None) -> tuple[str, float]:
    """A profile override from a spec, in the profile's units (FLOP/s, B/s, s)."""
    from difflib import get_close_matches

    if key not in FIELDS:
        close = get_close_matches(key, list(FIELDS), n=1)
        raise PartError(f"unknown profile field '{key}'", span,
                        (f"did you mean '{close[0]}'? " if close else "") + "fields: " + ", ".join(FIELDS))
    dim, scale = FIELDS[key]
    ok = q.dim == dim or (key == "efficiency" and q.dim == FRACTION)
    if not ok:
        raise PartError(f"profile field '{key}' needs a {dim}, got {q}", span, f"e.g. {key} " + {
            FLOP_RATE: "19.5 TFLOP/s", BANDWIDTH: "900 GB/s", TIME: "20 us", NUMBER: "0.5"}[dim])
    return ("peak_flops" if key == "peak" else key, q.value * scale)


def batch_sizes(platform: Platform, objective: Objective, cls_batches: tuple[int, ...]) -> list[int]:
    """The batch sizes a class may run: 1, its declared sizes, and the objective's chunks."""
    sizes = {1, *cls_batches}
    if objective.kind == "throughput":
        L, K = objective.batch, max(objective.split, 1)
        sizes |= {L * j // K for j in range(1, K + 1) if L * j % K == 0} | {L}
    return sorted(s for s in sizes if s >= 1)


def with_work(nd: Node, work: tuple) -> Node:
    """`dataclasses.replace(nd, work=work)` in half its time."""
    new = copy.copy(nd)
    object.__setattr__(new, "work", work)
    return new


def apply(graph: Graph, platform: Platform, objective: Objective) -> tuple[Graph, Platform]:
    """Work entries from the cost model: for every class with a profile and every node with
    `flops` and no work given for that class (a generic `work` is given for every class), its
    time at each batch size the class may run (roofline + overhead); the class's memory and
    link default to the profile's."""
    from dataclasses import replace as dc_replace

    from partdsl.core.ir import Work

    with_profile = [k for k in platform.classes if k.profile]
    if not with_profile:
        return graph, platform
    profiles = {k.name: profile(k.profile, **dict(k.profile_fields)) for k in with_profile}
    out_of = {nd.name: nd.out or 0.0 for nd in graph.nodes}
    inputs: dict[str, float] = {}
    for a, b in graph.edges:
        inputs[graph.nodes[b].name] = inputs.get(graph.nodes[b].name, 0.0) + out_of[graph.nodes[a].name]
    sizes = {k.name: batch_sizes(platform, objective, k.batches) for k in with_profile}
    made: dict[tuple, tuple[Work, ...]] = {}  # a model's layers repeat their operators' shapes
    nodes = []
    named = frozenset(k.name for k in with_profile)
    for nd in graph.nodes:
        given = frozenset(w.on for w in nd.work)
        if nd.flops is None or GENERIC in given or named <= given:  # generic `work` is for every class: it wins
            nodes.append(nd)
            continue
        act = (nd.out or 0.0) + inputs.get(nd.name, 0.0)
        key = (nd.flops, nd.weights, act, nd.dtype, nd.rows, given)
        if (extra := made.get(key)) is None:
            extra = made[key] = tuple(Work(prof.time_ms(nd.flops, nd.weights, act, b, nd.dtype, nd.rows), k.name, b)
                                      for k in with_profile if k.name not in given and (prof := profiles[k.name])
                                      for b in sizes[k.name])
        nodes.append(with_work(nd, nd.work + extra) if extra else nd)
    classes = tuple(dc_replace(k, memory=k.memory if k.memory is not None else profiles[k.name].memory,
                               link=k.link if k.link is not None or profiles[k.name].host else profiles[k.name].link,
                               host=k.host or profiles[k.name].host)
                    if k.profile else k for k in platform.classes)
    return dc_replace(graph, nodes=tuple(nodes)), dc_replace(platform, classes=classes)

"""What a device holds for the layers it trains (issue 31, item 4): `part convert
--optimizer NAME` multiplies each forward node's parameter bytes by the training factor
of NAME, so a spec's memory limits count weights, gradients and optimizer state.

Per parameter of w bytes (its node's dtype: fp32 when none), mixed-precision training
(w < 4) keeps the weight, its gradient (w each), an fp32 master copy (4) and the
optimizer's fp32 state; fp32 training keeps no master copy (Rajbhandari et al., ZeRO,
SC'20, sec. 3.1: Adam under mixed precision holds 2 + 2 + 12 = 16 bytes per parameter).

    optimizer   state   bf16/fp16 factor   fp32 factor
    none          -          1                 1        (inference: the weights only)
    sgd           0          4                 2
    momentum      4          6                 3
    adam          8          8                 4

Backward nodes are left alone: they carry what the importers put there (a layer profile's
stashed activations, docs/importers.md). `--activations` (with_activations) gives each
forward node of an operator graph its output as its `stash`, kept for the backward pass
(no recomputation), and a bottleneck objective the 1F1B schedule (`training pipedream`):
stage s of P then holds P - s micro-batches' stashes (evaluator/activations.in_flight)."""
from __future__ import annotations

from dataclasses import replace

from partdsl.core.errors import PartError
from partdsl.core.ir import Spec

STATE_BYTES = {"none": None, "sgd": 0, "momentum": 4, "adam": 8}  # fp32 optimizer state per parameter
DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "int8": 1}


def factor(optimizer: str, dtype: str | None) -> float:
    """Bytes a device holds per byte of weights of `dtype` trained with `optimizer`."""
    if optimizer not in STATE_BYTES:
        raise PartError(f"unknown optimizer '{optimizer}'", None, "use one of " + ", ".join(STATE_BYTES))
    state = STATE_BYTES[optimizer]
    if state is None:
        return 1.0
    w = DTYPE_BYTES.get(dtype or "fp32", 4)
    return (2 * w + (4 if w < 4 else 0) + state) / w


def with_optimizer(spec: Spec, optimizer: str) -> Spec:
    """`spec` with each forward node's parameters (shared weights too) scaled by
    factor(optimizer, its dtype)."""
    if STATE_BYTES.get(optimizer, 0) is None:
        return spec
    scale: dict[str, float] = {}  # a shared weight's factor: its first reader's dtype (one tensor, one size)
    for nd in spec.graph.nodes:
        for w, _ in nd.shares:
            scale.setdefault(w, factor(optimizer, nd.dtype))
    nodes = tuple(replace(nd, params=nd.params if nd.backward else nd.params * factor(optimizer, nd.dtype),
                          shares=tuple((w, b * scale[w]) for w, b in nd.shares))
                  if nd.weights else nd for nd in spec.graph.nodes)
    return replace(spec, graph=replace(spec.graph, nodes=nodes))


def with_activations(spec: Spec) -> Spec:
    """`spec` (a forward graph) with each node stashing its output bytes, trained under 1F1B
    when its objective is the bottleneck."""
    if spec.graph.is_training:
        raise PartError("--activations is for forward graphs: this one has backward nodes", None,
                        "a layer profile's backward nodes hold its activation_bytes already; leave --activations out")
    nodes = tuple(nd if nd.backward or not nd.out else replace(nd, stash=nd.stash + nd.out)
                  for nd in spec.graph.nodes)
    o = spec.objective
    if o.kind == "bottleneck" and o.training is None:
        o = replace(o, training="pipedream")
    return replace(spec, graph=replace(spec.graph, nodes=nodes), objective=o)

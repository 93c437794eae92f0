"""A serving KV cache in an operator graph's memory (`part convert MODEL --kv-cache SIZE`,
issue 31, item 4): the cache of the batch and context you serve, SIZE in all, is spread
evenly over the decoder layers (plans/units.py), as every layer of a standard decoder
caches keys and values of the same shape (2 x batch x context x KV heads x head
dimension x bytes per layer). Each layer's share is added to the parameters of its first
node, so it counts on the device that runs the layer (`--group-by layer` keeps a layer on
one device). A layer profile gives its own `kv_cache_bytes` per layer instead."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from partdsl.core.errors import PartError
from partdsl.core.ir import Spec
from partdsl.plans.units import Units


def with_kv_cache(spec: Spec, total: float, u: Units) -> Spec:
    """`spec` with `total` bytes of KV cache over its decoder layers."""
    if not math.isfinite(total) or total < 0:
        raise PartError(f"--kv-cache {total:g} B: not a size", None, "e.g. --kv-cache 8GiB")
    pos = spec.dense.topo_position
    share = total / u.layers
    first: dict[int, int] = {}
    for v in np.flatnonzero((u.unit >= 1) & (u.unit <= u.layers)).tolist():
        k = int(u.unit[v])
        if k not in first or pos[v] < pos[first[k]]:
            first[k] = v
    heads = set(first.values())
    nodes = tuple(replace(nd, params=nd.params + share) if v in heads else nd for v, nd in enumerate(spec.graph.nodes))
    return replace(spec, graph=replace(spec.graph, nodes=nodes))

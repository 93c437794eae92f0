"""The pipeline units of an LLM graph, read from its node names: the decoder layers, what
runs before the first (Megatron's `E`: the embedding) and what runs after the last (its
`L`: final norm, LM head, loss).

A node is in a decoder layer when its module path (`module "model.layers.3.mlp"`, which
the ONNX import keeps), else its `group`, else its name holds a layer path:
`model.layers.3`, `transformer.h.3`, `blocks.3`, `layer3`, `_model_layers_3_...` or
`l3_...` (`part generate transformer`); or what a user's `--layers REGEX` captures there.
The layers are ordered by where their first node runs in a topological order, not by
their number. Every other forward node belongs to `E` when it has no layer before it and
to `L` when it has no layer after it (a node with neither, such as a constant, goes with
its consumers); one between two layers is an error. Backward nodes follow their stage and
are not units (unit -1). Linear in the graph."""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from partdsl.core.dense import adjacency
from partdsl.core.errors import PartError
from partdsl.core.ir import Node, Spec
from partdsl.core.layers import layer_of

LAYER = re.compile(r"^(.*?(?:^|[./_])(?:layers|layer|h|blocks|block|l)[._]?\d+)(?=$|[./_])")
HEAD, BACKWARD = 0, -1


_OP = re.compile(r"_[A-Z][A-Za-z]*(?:_\d+)?$")  # the op type the ONNX import leaves at the end: `_MatMul_2`


def module_path(name: str) -> str:
    """A node's module as its name gives it: `/model/layers.3/mlp` -> `model.layers.3.mlp`; an
    ONNX import's `_model_norm_Mul_1` (its names are identifiers) -> `model_norm`."""
    if name.startswith("_") and "/" not in name and "." not in name:
        name = _OP.sub("", name)
    return name.strip("/_").replace("/", ".")


def contains(outer: str, inner: str) -> bool:
    """`model` contains `model.layers.3` (and, in an ONNX import's names, `model_layers_3`)."""
    return inner.startswith(outer + ".") or inner.startswith(outer + "_")


@dataclass(frozen=True)
class Units:
    """unit[v]: 0 for E, k = 1..layers for the k-th decoder layer, layers + 1 for L, -1 for a
    backward node. `modules[u]`: the module paths of unit u, in the order first met."""

    unit: np.ndarray
    layers: int
    modules: tuple[tuple[str, ...], ...]

    @property
    def tail(self) -> int:
        return self.layers + 1

    def label(self, u: int) -> str:
        return "E (before the layers)" if u == HEAD else "L (after the layers)" if u == self.tail \
            else f"layer {self.modules[u][0]}"


def _layer_key(nd: Node, pattern: re.Pattern | None) -> str | None:
    text = nd.module or nd.group or nd.tensor_of or nd.name  # a tensor carrier goes with its source
    if pattern is not None:
        m = pattern.search(text)
        return None if m is None else (m.group(1) if m.groups() and m.group(1) is not None else m.group(0))
    m = LAYER.match(text)
    return m.group(1) if m else None


def _reach(spec: Spec, seed: np.ndarray, forward: bool) -> np.ndarray:
    """Nodes with a seed node strictly before them (forward) or after them (backward)."""
    d = spec.dense
    out = np.zeros(d.n, dtype=bool)
    carry = seed.copy()
    order = d.topo if forward else d.topo[::-1]
    nxt = adjacency(d.n, d.src, d.dst) if forward else d.preds
    for v in order.tolist():
        if carry[v]:
            for w in nxt[v]:
                out[w] = carry[w] = True
    return out


def units(spec: Spec, pattern: re.Pattern | None = None) -> Units:
    d, nodes = spec.dense, spec.graph.nodes
    keys = [None if nd.backward else _layer_key(nd, pattern) for nd in nodes]
    in_layer = np.array([k is not None for k in keys])
    if not in_layer.any():
        raise PartError(f"no node of graph '{spec.graph.name}' is in a decoder layer", None,
                        "plans list layers: name them like `layers.3`, `h.3`, `blocks.3` or `l3_...`, or say which "
                        r"part of a name is the layer with --layers REGEX (e.g. --layers '(enc\.\d+)')")
    pos = d.topo_position
    first: dict[str, int] = {}
    for v in np.flatnonzero(in_layer).tolist():
        k = keys[v]
        first[k] = min(first.get(k, d.n), int(pos[v]))
    order = sorted(first, key=first.__getitem__)
    number = {k: i + 1 for i, k in enumerate(order)}
    tail = len(order) + 1
    after, before = _reach(spec, in_layer, True), _reach(spec, in_layer, False)
    unit = np.full(d.n, BACKWARD, dtype=np.int64)
    between = []
    for v in d.topo[::-1].tolist():  # consumers first: a node with no layer on either side joins them
        nd = nodes[v]
        if nd.backward:
            continue
        if keys[v] is not None:
            unit[v] = number[keys[v]]
        elif after[v] and before[v]:
            between.append(nd.name)
        elif after[v]:
            unit[v] = tail
        elif before[v]:
            unit[v] = HEAD
        else:
            outs = unit[d.succ_idx[d.succ_ptr[v]:d.succ_ptr[v + 1]]]
            unit[v] = tail if len(outs) and (outs == tail).all() else HEAD
    if between:
        raise PartError(f"{len(between)} node(s) run between decoder layers but are in none: "
                        + ", ".join(between[:3]) + (" ..." if len(between) > 3 else ""), None,
                        "plans move whole layers: name these nodes into a layer, or say which part of a name is "
                        r"the layer with --layers REGEX")
    mods: list[dict[str, None]] = [{} for _ in range(tail + 1)]
    for k, i in number.items():
        mods[i][module_path(k)] = None
    layer_paths = [module_path(k) for k in order]
    named = any(nd.module for nd in nodes)  # then a node without a module path (an alias) names no module
    for v in np.flatnonzero((unit == HEAD) | (unit == tail)).tolist():
        nd = nodes[v]
        m = nd.module or (None if named else module_path(layer_of(nd.name, None)))
        if m and not any(contains(m, p) for p in layer_paths):  # a container of the layers (`model`) is not one
            mods[int(unit[v])][m] = None
    return Units(unit=unit, layers=len(order), modules=tuple(tuple(m) for m in mods))

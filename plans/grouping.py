"""`--group-by`: operators collapsed into the units people split, by putting each unit's
nodes in one `group` and adding `colocate by group`. The methods contract colocated nodes
(kernels/graph/contraction.py), so a 100,000-operator decoder is planned as its layers,
while the evaluator still scores every operator of the plan.

- `layer`: the pipeline units of plans/units.py: the embedding (everything before the
  first decoder layer), each decoder layer, the head (everything after the last); and,
  under `minimize bottleneck`, `acyclic` (Archer et al. sec. 2: the stages form a
  pipeline, each device one run of consecutive units), under which the DP over ideals
  proves its split optimal (the latency model has no `acyclic`: its IP proves there);
- `module:DEPTH`: the first DEPTH parts of each node's module path (`model.layers.3` at
  depth 3 for `/model/layers.3/mlp/down_proj/MatMul`); a node whose path is shorter (glue
  such as `/model/Constant_3`) stays free.
"""
from __future__ import annotations

import re
from dataclasses import replace

from partdsl.core.errors import PartError
from partdsl.core.ir import Node, Spec
from partdsl.core.layers import layer_of
from partdsl.plans.units import module_path, units

EMBEDDING, OUTPUT = "embedding", "head"


def _name(group: str) -> str:
    """A group name the language takes (a NAME): `model.layers.3` -> `model_layers_3`."""
    out = re.sub(r"[^A-Za-z0-9_]", "_", group)
    return out if not out[:1].isdigit() else "_" + out


def parse_group_by(text: str) -> tuple[str, int | None]:
    kind, _, depth = text.partition(":")
    if kind == "layer" and not depth:
        return kind, None
    if kind == "module" and (not depth or depth.isdigit() and int(depth) >= 1):
        return kind, int(depth) if depth else None
    raise PartError(f"--group-by {text}: not a grouping", None,
                    "write --group-by layer, --group-by module or --group-by module:DEPTH (DEPTH >= 1)")


def _module_groups(spec: Spec, depth: int | None) -> list[str | None]:
    out: list[str | None] = []
    for nd in spec.graph.nodes:
        parts = (nd.module or module_path(layer_of(nd.name, None))).split(".")
        if depth is None:
            out.append(".".join(parts))
        else:
            out.append(".".join(parts[:depth]) if len(parts) >= depth else None)
    return out


def _layer_groups(spec: Spec, pattern: re.Pattern | None) -> list[str | None]:
    u = units(spec, pattern)
    names = [EMBEDDING] + [m[0] for m in u.modules[1:u.tail]] + [OUTPUT]
    return [None if k < 0 else names[k] for k in u.unit.tolist()]


def group_by(spec: Spec, how: str, pattern: re.Pattern | None = None, interleave: int = 1) -> Spec:
    """`spec` with its nodes grouped (`colocate by group`); by layer under the bottleneck,
    its pipeline `acyclic`, or with `interleave` > 1 its chunks round robin (`interleave V`)."""
    kind, depth = parse_group_by(how)
    pipelined = spec.objective.kind == "bottleneck"  # Tarnawski's latency model takes no `acyclic`
    groups = _layer_groups(spec, pattern) if kind == "layer" else _module_groups(spec, depth)
    distinct = {g for g in groups if g is not None}
    if len(distinct) < 2:
        raise PartError(f"--group-by {how} leaves {len(distinct)} group(s) of {len(groups):,} nodes: nothing "
                        "left to split", None, "group deeper (module:DEPTH with a larger DEPTH) or by layer")
    # a backward node follows its forward nodes: their old group's new one (a layer profile's
    # `embed_bw` in group `embed` joins `embedding`), else it keeps its own
    follow: dict[str, str] = {}
    for nd, g in zip(spec.graph.nodes, groups):
        if not nd.backward and nd.group is not None and g is not None:
            follow.setdefault(nd.group, g)
    def regroup(nd: Node, g: str | None) -> Node:
        if g is not None:
            return replace(nd, group=_name(g))
        if not nd.backward:
            return replace(nd, group=None)  # outside every unit: free
        return replace(nd, group=_name(follow[nd.group])) if nd.group in follow else nd

    nodes = tuple(regroup(nd, g) for nd, g in zip(spec.graph.nodes, groups))
    if interleave > 1:
        if not pipelined:
            raise PartError(f"--interleave {interleave} splits a pipeline, and this spec's objective is "
                            f"{spec.objective.kind}", None, "add --objective bottleneck")
        return replace(spec, graph=replace(spec.graph, nodes=nodes),
                       constraints=replace(spec.constraints, colocate=True, acyclic=False, contiguous=False,
                                           interleave=interleave))
    return replace(spec, graph=replace(spec.graph, nodes=nodes),
                   constraints=replace(spec.constraints, colocate=True,
                                       acyclic=spec.constraints.acyclic or (kind == "layer" and pipelined)))

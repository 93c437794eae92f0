"""Reading partitions: node -> device mappings as the CLI and API take them.

Accepted JSON: `part solve --json` output (its `assignment`, and under latency its
`subgraphs`), a bare {node: device} object, an object whose values are
{"device": "acc[0]", "subgraph": 1} (latency with `subgraphs <= q`: the subgraph number
gives the order on the accelerator, 0 first), or the human-expert format of data/dnn-partitioning/human-experts
({"fpgas": [{"nodes": [ids]}], "cpus": [...]}: the i-th fpga list goes to the i-th device
of the spec's non-host class, the i-th cpu list to the i-th host device). Node ids may be
given as the imported names (n12) or as the bare ids (12). `order_keys` reads a node order
(SliceGraph's `-O order=FILE`) the same way.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
from partdsl.core.errors import PartError, did_you_mean
from partdsl.core.ir import Spec


def _node_index(spec: Spec, key: Any, where: str) -> int:
    idx = spec.graph.index
    k = str(key)
    if k in idx:
        return idx[k]
    if f"n{k}" in idx:
        return idx[f"n{k}"]
    raise PartError(f"{where}: unknown node '{k}'", None, did_you_mean(k, list(idx)))


def to_array(spec: Spec, mapping: Mapping[Any, str], where: str = "assignment") -> np.ndarray:
    """{node: device} -> int array (node index -> device index, -1 where unassigned)."""
    devs = {d: j for j, d in enumerate(spec.platform.devices)}
    out = np.full(len(spec.graph.nodes), -1, dtype=np.int64)
    for key, dev in mapping.items():
        i = _node_index(spec, key, where)
        if dev not in devs:
            raise PartError(f"{where}: unknown device '{dev}' for node '{key}'", None,
                            did_you_mean(str(dev), list(devs)))
        out[i] = devs[dev]
    return with_carriers(spec, out)


def with_carriers(spec: Spec, dev: np.ndarray) -> np.ndarray:
    """`dev` with each unassigned tensor carrier on its source's device (they are colocated,
    so assignments leave carriers out: core/ir.Node.tensor_of)."""
    g = spec.graph
    for i, src in g.carriers:
        if dev[i] < 0:
            dev[i] = dev[src]
    return dev


def from_expert(spec: Spec, data: dict, where: str) -> np.ndarray:
    p = spec.platform
    acc = [k for k in p.classes if not k.host]
    cpu = [k for k in p.classes if k.host]
    mapping: dict[Any, str] = {}
    for key, pool in (("fpgas", acc), ("cpus", cpu)):
        groups = data.get(key, [])
        if groups and len(pool) != 1:
            raise PartError(f"{where}: cannot map '{key}' to devices: the spec has "
                            f"{len(pool)} {'non-host' if key == 'fpgas' else 'host'} device classes", None,
                            "expert files need one accelerator class and one host class")
        for i, grp in enumerate(groups):
            if grp.get("nodes") and i >= pool[0].count:
                raise PartError(f"{where}: {key}[{i}] has nodes, but the spec has only "
                                f"{pool[0].count} {pool[0].name} devices", None, "raise the device count")
            for nd in grp.get("nodes", []):
                if nd in mapping:
                    raise PartError(f"{where}: node {nd} is listed twice", None)
                mapping[nd] = f"{pool[0].name}[{i}]"
    return _with_colocated(spec, to_array(spec, mapping, where), where)


def _with_colocated(spec: Spec, dev: np.ndarray, where: str) -> np.ndarray:
    """An expert split lists forward nodes only: each node it leaves out takes the device of
    the nodes it is colocated with (a training graph's backward nodes), as the authors' code
    infers it (dnn-partitioning, dp.cpp -expert)."""
    missing = np.flatnonzero(dev < 0)
    if missing.size == 0:
        return dev
    colo = spec.dense.colo
    placed = dev >= 0
    pairs = np.unique(np.stack([colo[placed], dev[placed]], axis=1), axis=0)  # (component, device), each once
    comp, count = np.unique(pairs[:, 0], return_counts=True)
    split = set(comp[count > 1].tolist())  # components the listed nodes already split: the evaluator reports them
    bad = next((v for v in missing.tolist() if int(colo[v]) in split), None)
    if bad is not None:
        raise PartError(f"{where}: node {spec.dense.names[bad]} is not listed, and the nodes it is colocated with are "
                        "on several devices", None, "list it, or place its colocated nodes together")
    where_of = dict(zip(pairs[:, 0].tolist(), pairs[:, 1].tolist()))
    for v in missing.tolist():
        dev[v] = where_of.get(int(colo[v]), -1)
    return dev


def parse_assignment(spec: Spec, data: Any, where: str = "assignment") -> np.ndarray:
    return parse_partition(spec, data, where)[0]


def _subgraph_number(x: Any, where: str, key: Any) -> int:
    if isinstance(x, bool) or not isinstance(x, int) or x < 0:
        raise PartError(f"{where}: the subgraph of node '{key}' must be a whole number >= 0, got {x!r}", None,
                        'e.g. {"a": {"device": "acc[0]", "subgraph": 1}}')
    return x


def parse_partition(spec: Spec, data: Any, where: str = "assignment") -> tuple[np.ndarray, np.ndarray | None]:
    """(device per node, subgraph number per node or None when no subgraph is given)."""
    if isinstance(data, dict) and ("fpgas" in data or "cpus" in data):
        return from_expert(spec, data, where), None
    subgraphs: dict = {}
    if isinstance(data, dict) and isinstance(data.get("assignment"), dict):
        subgraphs = data.get("subgraphs") or {}
        if not isinstance(subgraphs, dict):
            raise PartError(f"{where}: `subgraphs` must be an object {{node: number}}", None)
        data = data["assignment"]
    if isinstance(data, dict):
        flat: dict = {}
        for key, v in data.items():
            if isinstance(v, dict) and isinstance(v.get("device"), str):
                flat[key] = v["device"]
                if "subgraph" in v:
                    subgraphs[key] = v["subgraph"]
            else:
                flat[key] = v
        data = flat
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise PartError(f"{where}: expected an object {{node: device}}, a `part solve --json` "
                        "result, or a human-expert file", None,
                        'e.g. {"embed": "gpu[0]", "head": "gpu[1]"}, or under latency with subgraphs '
                        '{"embed": {"device": "gpu[0]", "subgraph": 0}}')
    dev = to_array(spec, data, where)
    if not subgraphs:
        return dev, None
    sub = np.zeros(len(dev), dtype=np.int64)
    for key, x in subgraphs.items():
        sub[_node_index(spec, key, where)] = _subgraph_number(x, where, key)
    for i, src in spec.graph.carriers:  # a carrier not given runs in its source's subgraph
        if spec.graph.nodes[i].name not in subgraphs:
            sub[i] = sub[src]
    return dev, sub


def replica_factors(spec: Spec, data: Any, where: str = "assignment") -> np.ndarray | None:
    """The `replicas` of a `part solve --json` result ({lead device: factor}) as a factor per
    device (evaluator/replicas.py), or None when it has none."""
    reps = data.get("replicas") if isinstance(data, dict) else None
    if reps is None:
        return None
    devs = {d: j for j, d in enumerate(spec.platform.devices)}
    out = np.ones(len(devs), dtype=np.int64)
    if not isinstance(reps, dict):
        raise PartError(f"{where}: `replicas` must be an object {{device: factor}}", None, 'e.g. {"gpu[0]": 2}')
    for d, r in reps.items():
        if d not in devs:
            raise PartError(f"{where}: replicas: unknown device '{d}'", None, did_you_mean(str(d), list(devs)))
        if isinstance(r, bool) or not isinstance(r, int) or r < 1:
            raise PartError(f"{where}: the replicas of {d} must be a whole number >= 1, got {r!r}", None)
        out[devs[d]] = r
    return out


def subgraph_map(spec: Spec, dev: np.ndarray, sub: np.ndarray | None) -> dict[str, int] | None:
    """{node: subgraph number} for the accelerator nodes (the JSON form), or None."""
    if sub is None:
        return None
    d = spec.dense
    acc = ~d.host[d.dev_class[dev]]
    acc[d.tensor_source >= 0] = False  # carriers ride with their sources
    return {d.names[i]: int(sub[i]) for i in np.flatnonzero(acc)}


def order_keys(spec: Spec, names: Sequence[str], where: str = "order") -> np.ndarray:
    """A node order (names, first first) -> a key per node, its position; the nodes it leaves
    out come after it, in the spec's order. An unknown or repeated name is an error."""
    n = len(spec.graph.nodes)
    keys = np.full(n, np.inf)
    for pos, name in enumerate(names):
        i = _node_index(spec, name, where)
        if np.isfinite(keys[i]):
            raise PartError(f"{where}: node '{name}' is listed twice", None, "list each node once")
        keys[i] = pos
    rest = ~np.isfinite(keys)
    keys[rest] = len(names) + np.arange(int(rest.sum()))
    return keys

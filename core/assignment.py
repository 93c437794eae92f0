"""Reading partitions: node -> device mappings as the CLI and API take them.

Accepted JSON: `part solve --json` output (its `assignment`), a bare {node: device}
object, or the human-expert format of data/dnn-partitioning/human-experts
({"fpgas": [{"nodes": [ids]}], "cpus": [...]}: the i-th fpga list goes to the i-th device
of the spec's non-host class, the i-th cpu list to the i-th host device). Node ids may be
given as the imported names (n12) or as the bare ids (12).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from .errors import PartError, did_you_mean
from .ir import Spec


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
    return out


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
    return to_array(spec, mapping, where)


def parse_assignment(spec: Spec, data: Any, where: str = "assignment") -> np.ndarray:
    if isinstance(data, dict) and ("fpgas" in data or "cpus" in data):
        return from_expert(spec, data, where)
    if isinstance(data, dict) and isinstance(data.get("assignment"), dict):
        data = data["assignment"]
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise PartError(f"{where}: expected an object {{node: device}}, a `part solve --json` "
                        "result, or a human-expert file", None,
                        'e.g. {"embed": "gpu[0]", "head": "gpu[1]"}')
    return to_array(spec, data, where)


def read_assignment(spec: Spec, path: str | Path) -> np.ndarray:
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PartError(f"no such file: {p}", None) from None
    except json.JSONDecodeError as e:
        raise PartError(f"{p} is not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})", None) from None
    return parse_assignment(spec, data, str(p))

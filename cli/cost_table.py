"""`part check --table`: where a graph's costs are, node by node and layer by layer.

A node's layer is its `group` when it has one, else what `--layers REGEX` captures from
its name (the first group, or the whole match), else its name up to the last `/` or `.`
(ONNX and torch names: `/encoder/layer.0/attention/MatMul` -> `/encoder/layer.0/attention`)
or up to the first `_` after a layer number (`l3_q` -> `l3`), else the name itself. A
node's `times` column says where its times come from (cli/report.time_sources: measured,
given, or the cost model), and the line above the table how far they were checked.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from partdsl.core.errors import PartError
from partdsl.core.ir import Spec
from partdsl.core.layers import layer_of, layer_pattern
from partdsl.core.quantities import human_size

SORT_KEYS = ("order", "flops", "params", "out", "work")


@dataclass(frozen=True)
class Costs:
    """Per node: FLOPs per sample (nan: not given), parameter bytes, output bytes, and the
    work on each device class (ms; nan where the class may not run it)."""

    names: list[str]
    layers: list[str]
    flops: np.ndarray
    params: np.ndarray
    out: np.ndarray
    work: np.ndarray  # [n, C]
    classes: tuple[str, ...]

    def key(self, by: str) -> np.ndarray:
        """The sort key, largest first (cheapest allowed class for `work`)."""
        if by == "work":
            w = np.where(np.isnan(self.work), np.inf, self.work).min(axis=1, initial=np.inf)
            return np.where(np.isfinite(w), w, -1.0)
        return np.nan_to_num(getattr(self, by), nan=-1.0)


def costs(spec: Spec, pattern: re.Pattern | None = None) -> Costs:
    d = spec.dense
    nodes = spec.graph.nodes
    allowed = d.class_allowed
    return Costs(names=list(d.names), layers=[layer_of(nd.name, nd.group, pattern) for nd in nodes],
                 flops=np.array([np.nan if nd.flops is None else nd.flops for nd in nodes], dtype=float),
                 params=d.params.astype(float), out=d.out_bytes.astype(float),
                 work=np.where(allowed, d.work, np.nan), classes=d.class_names)


def _num(x: float, size: bool = False) -> str:
    if np.isnan(x):
        return "-"
    return human_size(x) if size else f"{x:.4g}"


def cost_table(spec: Spec, sort: str = "order", top: int | None = None,
               layers: str | None = None) -> tuple[dict, str]:
    """(the --json object, the text): the nodes sorted by `sort` (largest first; `order`:
    as the graph lists them), the first `top` of them, then every layer's totals, largest
    first by the same key, with each layer's share of the graph's total."""
    from partdsl.cli.report import cost_provenance, table, time_sources

    if sort not in SORT_KEYS:
        raise PartError(f"--sort {sort}: unknown key", None, "use one of " + ", ".join(SORT_KEYS))
    c = costs(spec, layer_pattern(layers))
    n = len(c.names)
    order = np.arange(n) if sort == "order" else np.argsort(-c.key(sort), kind="stable")
    shown = order[:top] if top else order
    sources = time_sources(spec)
    head = ["node", "layer", "FLOPs", "params", "out"] + [f"{k} ms" for k in c.classes] + ["times"]
    rows = [[c.names[i], c.layers[i], _num(c.flops[i]), _num(c.params[i], True), _num(c.out[i], True)]
            + [_num(w) for w in c.work[i]] + [sources[i]] for i in shown]
    first: dict[str, int] = {}  # layers in the order their first node comes
    inverse = np.array([first.setdefault(x, len(first)) for x in c.layers], dtype=np.int64)
    names, L = list(first), len(first)

    def total(x: np.ndarray) -> np.ndarray:
        return np.bincount(inverse, weights=np.nan_to_num(x), minlength=L) if n else np.zeros(0)

    t = {"flops": np.where(total(~np.isnan(c.flops)) > 0, total(c.flops), np.nan),  # "-": no node says
         "params": total(c.params), "out": total(c.out)}
    t["work"] = np.stack([np.where(total(np.isnan(c.work[:, k])) > 0, np.nan, total(c.work[:, k]))
                          for k in range(len(c.classes))], axis=1) if L else np.zeros((0, 0))
    count = np.bincount(inverse, minlength=L) if n else np.zeros(0, int)
    cheapest = np.where(np.isnan(t["work"]), np.inf, t["work"]).min(axis=1, initial=np.inf)
    cheapest = np.where(np.isfinite(cheapest), cheapest, 0.0)
    lkey = cheapest if sort == "work" else np.nan_to_num(t[sort], nan=-1.0) if sort in t else None
    lorder = np.arange(L) if lkey is None else np.argsort(-lkey, kind="stable")
    share_of = np.nan_to_num(t["flops"]) if sort in ("order", "flops") and np.nansum(c.flops) > 0 else \
        t["params"] if sort == "params" else t["out"] if sort == "out" else cheapest
    whole = float(share_of.sum()) or 1.0
    lrows = [[names[j], str(count[j]), _num(t["flops"][j]), _num(t["params"][j], True), _num(t["out"][j], True)]
             + [_num(w) for w in t["work"][j]] + [f"{100 * share_of[j] / whole:.1f}%"] for j in lorder]
    lhead = ["layer", "nodes", "FLOPs", "params", "out"] + [f"{k} ms" for k in c.classes] + ["share"]
    lrows = lrows[:top] if top else lrows
    more = f"\n({n - len(shown):,} more nodes: --top 0 shows all)" if len(shown) < n else ""
    said = cost_provenance(spec, sources)
    text = (f"{n:,} nodes" + (f", sorted by {sort}" if sort != "order" else "") + "\n"
            + (f"costs: {said}\n" if said else "")
            + table(rows, head, left=(0, 1)) + more + "\n\n")
    if L == n:
        text += "every node is its own layer: --layers REGEX names a node's layer by part of its name"
    else:
        text += f"{L:,} layers\n" + table(lrows, lhead) + (f"\n({L - len(lrows):,} more layers)" if len(lrows) < L else "")

    def num(x: float) -> float | None:
        return None if np.isnan(x) else float(x)

    obj = {"nodes": [{"name": c.names[i], "layer": c.layers[i], "flops": num(c.flops[i]),
                      "params": float(c.params[i]), "out": float(c.out[i]),
                      "work_ms": {k: num(w) for k, w in zip(c.classes, c.work[i])}, "times": sources[i]}
                     for i in shown],
           "layers": [{"name": names[j], "nodes": int(count[j]), "flops": num(t["flops"][j]),
                       "params": float(t["params"][j]), "out": float(t["out"][j]),
                       "work_ms": {k: num(w) for k, w in zip(c.classes, t["work"][j])}} for j in lorder[:top or L]]}
    return {"costs": said or None, **obj}, text

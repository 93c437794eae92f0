"""The splits people make today, as partitions the evaluator scores beside partdsl's: the
embedding on the first rank, the head on the last, and the decoder layers cut by

- `uniform`: Megatron-LM's default, layers / P per stage (it requires P to divide them);
- `vllm`: vLLM's even split (vllm/distributed/utils.py, get_pp_indices): layers // P per
  rank, the remainder one each to the ranks before the last, from the back;
- `parameters`: DeepSpeed's `partition_method="parameters"` (deepspeed/runtime/pipe/
  module.py, `_partition_layers`) as DeepSpeed 0.19 computes it: the layer specs (the
  embedding, the layers, each module after them: final norm, head) weighed by their
  parameters and cut by `partition_balanced` (deepspeed/runtime/utils.py), a DP that keeps
  for each prefix and part count the split of least spread (largest part minus smallest).

`ranks` is the device of each pipeline rank, in order; `best_ranks` tries every order of
the device classes over the ranks, as a user who launched the split would."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
from partdsl.core.errors import PartError
from partdsl.core.ir import Spec
from partdsl.core.orders import multiset_orders
from partdsl.evaluator.evaluate import evaluate
from partdsl.plans.units import Units

BASELINES = ("uniform", "vllm", "parameters")


def _layer_counts(kind: str, layers: int, p: int) -> list[int]:
    if kind == "uniform":
        if layers % p:
            raise PartError(f"Megatron's uniform split needs the {p} stages to divide the {layers} layers", None,
                            "use an uneven layout (part export --format megatron)")
        return [layers // p] * p
    counts = [layers // p] * p
    for i in range(2, layers % p + 2):
        counts[-i] += 1
    return counts


def deepspeed_balanced(weights: np.ndarray, p: int) -> list[int]:
    """DeepSpeed's partition_balanced: the part boundaries (p + 1 of them, 0 first, n last).
    best[i, j] is the least spread of a split of the first i items into j parts that extends
    the best split of its first k items into j - 1 parts; ties go to the latest k. With no
    more items than parts, DeepSpeed's partition_uniform: one item each, the rest empty."""
    w = np.asarray(weights, dtype=float)
    n = len(w)
    if n <= p:
        return [min(k, n) for k in range(p + 1)]
    prefix = np.concatenate([[0.0], np.cumsum(w)])
    hi = np.full((n + 1, p + 1), np.inf)  # the largest and smallest part of the best split
    lo = np.full((n + 1, p + 1), np.inf)
    cut = np.zeros((n + 1, p + 1), dtype=np.int64)
    hi[0, 0] = 0.0
    for i in range(1, n + 1):
        seg = prefix[i] - prefix[:i]  # the last part, items k..i-1, for k = 0..i-1
        for j in range(1, min(i, p) + 1):
            top, bottom = np.maximum(hi[:i, j - 1], seg), np.minimum(lo[:i, j - 1], seg)
            cost = top - bottom
            k = int(np.flatnonzero(cost == cost.min())[-1])
            hi[i, j], lo[i, j], cut[i, j] = top[k], bottom[k], k
    bounds = [n]
    for j in range(p, 0, -1):
        bounds.append(int(cut[bounds[-1], j]))
    return bounds[::-1]


def _spec_weights(spec: Spec, units: Units, fw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """DeepSpeed's layer specs of a decoder: E, each layer, then each module of L (its final
    norm and head) on its own. The parameters of each spec, and each node's spec (unit k < L
    is spec k, so a unit's first spec has its number)."""
    nodes = spec.graph.nodes
    tail_mods = list(units.modules[units.tail]) or [""]
    spec_of = units.unit.copy()
    for v in np.flatnonzero(units.unit == units.tail).tolist():
        m = nodes[v].module or ""
        spec_of[v] = units.tail + next((i for i, t in enumerate(tail_mods) if m == t or m.startswith(t + ".")), 0)
    params = np.array([nd.weights for nd in nodes])  # a tied weight in each layer spec reading it, as DeepSpeed counts
    weights = np.bincount(spec_of[fw], weights=params[fw], minlength=units.tail + len(tail_mods))
    return weights, spec_of


def baseline(spec: Spec, units: Units, kind: str, ranks: list[str]) -> np.ndarray:
    """A device per node: the split `kind` over `ranks`; a backward node goes with the
    forward nodes it is colocated with (its layer's group)."""
    if kind not in BASELINES:
        raise PartError(f"unknown baseline '{kind}'", None, "baselines: " + ", ".join(BASELINES))
    unit, fw = units.unit.copy(), units.unit >= 0
    if not fw.all():
        colo = spec.dense.colo
        of_component = np.full(len(unit), -1, dtype=np.int64)
        of_component[colo[fw]] = unit[fw]
        unit[~fw] = of_component[colo[~fw]]
        if (unit < 0).any():
            raise PartError("the baselines move whole layers; a backward node is in no layer's group", None,
                            "group each backward node with its layer (part convert --group-by layer)")
    p, idx = len(ranks), {d: i for i, d in enumerate(spec.platform.devices)}
    if kind == "parameters":
        weights, spec_of = _spec_weights(spec, units, fw)
        bounds = deepspeed_balanced(weights, p)
        rank_of = np.concatenate([np.full(bounds[r + 1] - bounds[r], r) for r in range(p)])
        node_rank = rank_of[unit]  # a backward node goes with its unit's first spec
        node_rank[fw] = rank_of[spec_of[fw]]
    else:
        counts = _layer_counts(kind, units.layers, p)
        node_rank = np.concatenate([[0], np.repeat(np.arange(p), counts), [p - 1]])[unit]
    return np.array([idx[ranks[r]] for r in node_rank], dtype=np.int64)


def _objective(spec: Spec) -> Callable[[np.ndarray], float]:
    """The evaluator's objective of an assignment, inf where it breaks the spec."""
    def score(dev: np.ndarray) -> float:
        ev = evaluate(spec, dev)
        return ev.objective if ev.feasible else float("inf")
    return score


def best_ranks(spec: Spec, units: Units, kind: str, score: Callable[[np.ndarray], float] | None = None,
               limit: int = 5040) -> tuple[list[str], np.ndarray]:
    """The split `kind` over the order of device classes that scores best (least; by default
    the evaluator's objective, inf when infeasible), trying each distinct order of the
    classes over the ranks (devices of one class alike), at most `limit` of them."""
    score = score or _objective(spec)
    devices, of_class = spec.platform.devices, spec.platform.device_class
    pool: dict[int, list[str]] = {}
    for d, c in zip(devices, of_class):
        pool.setdefault(c, []).append(d)
    best: tuple[float, list[str], np.ndarray] | None = None
    for n, order in enumerate(multiset_orders(list(of_class))):
        if n == limit:
            break
        taken = {c: iter(ds) for c, ds in pool.items()}
        ranks = [next(taken[c]) for c in order]
        dev = baseline(spec, units, kind, ranks)
        value = score(dev)
        if best is None or value < best[0]:
            best = (value, ranks, dev)
    assert best is not None
    return best[1], best[2]

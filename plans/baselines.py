"""The splits people make today, as partitions the evaluator scores beside partdsl's: the
embedding on the first rank, the head on the last, and the decoder layers cut by

- `uniform`: Megatron-LM's default, layers / P per stage (it requires P to divide them);
- `vllm`: vLLM's even split (vllm/distributed/utils.py, get_pp_indices): layers // P per
  rank, the remainder one each to the ranks before the last, from the back;
- `parameters`: DeepSpeed's `partition_method="parameters"` (deepspeed/runtime/pipe/
  module.py): the layer specs (embedding modules, layers, head modules) cut into P
  contiguous parts whose largest parameter count is least (the linear partition problem).

`ranks` is the device of each pipeline rank, in order."""
from __future__ import annotations

import numpy as np
from partdsl.core.errors import PartError
from partdsl.core.ir import Spec
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


def _min_max_cuts(weights: np.ndarray, p: int) -> list[int]:
    """The first item of each of p contiguous parts, the heaviest part as light as can be
    (binary search on the bound over the prefix sums; greedy probes)."""
    n = len(weights)
    prefix = np.concatenate([[0.0], np.cumsum(weights)])

    def cuts(bound: float) -> list[int] | None:
        starts, i = [0], 0
        while True:
            j = int(np.searchsorted(prefix, prefix[i] + bound, side="right")) - 1  # items i..j-1 fit
            if j >= n:
                return starts + [n] * (p - len(starts))
            if j == i or len(starts) == p:
                return None
            starts.append(j)
            i = j

    lo, hi = float(weights.max(initial=0.0)), float(prefix[-1])
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if cuts(mid) is not None else (mid, hi)
    return cuts(hi) or [0] * p


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
        params = np.array([nd.params for nd in spec.graph.nodes])
        per_unit = np.bincount(units.unit[fw], weights=params[fw], minlength=units.tail + 1)
        starts = _min_max_cuts(per_unit, p) + [units.tail + 1]
        rank_of = np.concatenate([np.full(starts[r + 1] - starts[r], r) for r in range(p)])
    else:
        counts = _layer_counts(kind, units.layers, p)
        rank_of = np.concatenate([[0], np.repeat(np.arange(p), counts), [p - 1]])
    return np.array([idx[ranks[r]] for r in rank_of[unit]], dtype=np.int64)

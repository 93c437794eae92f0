"""How a device's memory enters a model, one rule for every formulation (the evaluator's
semantics, evaluator/evaluate.py): a knapsack under `memory hard`; Archer's eq. 2 overflow term
under `memory overflow` when there is a link to stream over (with no link at all the excess
cannot be streamed, so the limit is hard; with an unlimited link overflow costs nothing);
nothing under `memory ignore` or unlimited memory."""
from __future__ import annotations

import math


def treatment(mode: str, capacity: float, bandwidth: float) -> str | None:
    """"hard", "overflow" or None."""
    if mode == "ignore" or not math.isfinite(capacity):
        return None
    if mode == "hard" or bandwidth <= 0:
        return "hard"
    return "overflow" if math.isfinite(bandwidth) else None

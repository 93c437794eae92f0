"""Repair an assignment by moves: colocation, placement (support, only/not, pins) and
memory, the constraints a plain graph partitioner ignores (kernels/peers/runners.py, `repair 1`).

1. A colocation component split over devices goes whole to the device that holds most of
   its compute (of those every member may use).
2. While a unit (colocation component) is on a device it may not use, or a device holds
   more parameters than its memory: move one unit, the best move by the evaluator's
   score (repaired violations first, then the objective). Units on the boundary of the
   offending device are tried first, to devices that hold a neighbour or are hosts;
   every unit and device only if no such move helps.
Only moves that reduce the violations are made, so the loop ends; a spec no move can
satisfy stays violated and the evaluator says so.
"""
from __future__ import annotations

import numpy as np
from partdsl.core.dense import groups
from partdsl.core.ir import Spec
from partdsl.evaluator.evaluate import evaluate

FIXES = ("colocate", "placement", "unsupported", "memory")


def _score(spec: Spec, dev: np.ndarray) -> tuple[int, float, float]:
    ev = evaluate(spec, dev)
    bad = sum(1 for v in ev.violations if v.kind in FIXES)
    excess = 0.0
    if spec.constraints.memory == "hard":
        d = spec.dense
        used = np.bincount(dev, weights=d.params, minlength=d.D)
        excess = float(np.maximum(used - d.memory[d.dev_class], 0).sum())
    sign = -1.0 if spec.objective.sense == "max" else 1.0
    return bad, excess, sign * ev.objective


def _colocate(spec: Spec, dev: np.ndarray) -> np.ndarray:
    d = spec.dense
    dev = dev.copy()
    for members in groups(d.colo):
        if len(members) == 1 or (dev[members] == dev[members[0]]).all():
            continue
        ok = d.allowed[members].all(axis=0)
        held = np.bincount(dev[members], weights=np.nan_to_num(d.work[members, d.dev_class[dev[members]]],
                                                                posinf=0.0) + 1e-12, minlength=d.D)
        held = np.where(ok, held, -1.0)
        dev[members] = int(np.argmax(held))
    return dev


def _offending(spec: Spec, dev: np.ndarray) -> set[int]:
    d = spec.dense
    bad = set(np.flatnonzero(~d.allowed[np.arange(d.n), dev]).tolist())
    if spec.constraints.memory == "hard":
        used = np.bincount(dev, weights=d.params, minlength=d.D)
        for j in np.flatnonzero(used > d.memory[d.dev_class] * (1 + 1e-12)):
            bad |= set(np.flatnonzero(dev == j).tolist())
    return bad


def repair(spec: Spec, dev: np.ndarray, max_moves: int | None = None) -> np.ndarray:
    d = spec.dense
    dev = _colocate(spec, np.asarray(dev, dtype=np.int64))
    units = groups(d.colo)
    unit_of = np.empty(d.n, dtype=np.int64)
    for k, m in enumerate(units):
        unit_of[m] = k
    hosts = np.flatnonzero(d.host[d.dev_class])
    cur = _score(spec, dev)
    for _ in range(max_moves or 2 * d.n):
        if cur[0] == 0 and cur[1] == 0:
            break
        bad = _offending(spec, dev)
        if not bad:
            break
        best, best_move = cur, None
        for wide in (False, True):
            tried = sorted({int(unit_of[v]) for v in bad}) if wide else sorted(
                {int(unit_of[v]) for v in bad if _on_boundary(d, dev, v)} or {int(unit_of[v]) for v in bad})
            for k in tried:
                m = units[k]
                here = dev[m[0]]
                if wide:
                    targets = np.arange(d.D)
                else:
                    nb = np.concatenate([d.succ_idx[d.succ_ptr[v]:d.succ_ptr[v + 1]] for v in m] + [
                        np.array([u for v in m for u in d.preds[v]], dtype=np.int64)])
                    targets = np.union1d(np.unique(dev[nb]) if len(nb) else np.array([], np.int64), hosts)
                for j in targets:
                    if j == here or not d.allowed[m, j].all():
                        continue
                    dev[m] = j
                    s = _score(spec, dev)
                    if s[:2] < cur[:2] and s < best:  # fewer violations (or less excess) only
                        best, best_move = s, (k, int(j))
                    dev[m] = here
            if best_move is not None:
                break
        if best_move is None:
            break
        k, j = best_move
        dev[units[k]] = j
        cur = best
    return dev


def _on_boundary(d, dev: np.ndarray, v: int) -> bool:  # type: ignore[no-untyped-def]
    succ = d.succ_idx[d.succ_ptr[v]:d.succ_ptr[v + 1]]
    return bool((dev[succ] != dev[v]).any() or any(dev[u] != dev[v] for u in d.preds[v]))

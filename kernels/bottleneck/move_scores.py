"""The local-search baseline's score of an assignment, (violated constraints, objective),
and of every move of one colocation unit to another device.

Under `bottleneck` without constraints a move can break far from the unit (contiguity,
acyclicity, a stage limit, peak activations), the objective comes from the compiled load
table (kernels/bottleneck/load_table.py, the evaluator's cost model) and the violations
are the devices over their memory, counted as `core.violations` counts them: a move costs
O(n) compiled instead of an `evaluate` call (17 ms on BERT-L-12's 2,012 operators, so a
pass over its units took minutes). Otherwise every trial is the evaluator's own score.
The returned assignment is re-scored by the evaluator either way (methods/run.py).
"""
from __future__ import annotations

import numpy as np
from partdsl.core.ir import Spec
from partdsl.evaluator.evaluate import evaluate
from partdsl.evaluator.levels import routed
from partdsl.kernels.bottleneck.load_table import LoadTable
from partdsl.kernels.graph.contraction import Contraction

Score = tuple[int, float]


class MoveScores:
    """`scores(dev)` -> (violations, signed objective); `moves(dev, ks, js)` -> the same
    after each move of unit ks[i] to device js[i], as two arrays."""

    def __init__(self, spec: Spec, units: Contraction) -> None:
        d = spec.dense
        c = spec.constraints
        self.spec, self.d = spec, d
        self.sign = -1.0 if spec.objective.sense == "max" else 1.0
        self.members = units.members()
        self.unit = units.unit
        self.fast = spec.objective.kind == "bottleneck" and not (
            c.contiguous or c.acyclic or c.max_stages is not None or d.placed_memory)
        if not self.fast:
            return
        self.loads = LoadTable(spec)
        self.mptr, self.midx = units.csr()
        self.params = np.bincount(units.unit, weights=d.params, minlength=units.count)
        hard = c.memory == "hard"
        self.cap = d.memory[d.dev_class] * (1 + 1e-12) if hard else np.full(d.D, np.inf)

    def _memory(self, dev: np.ndarray) -> np.ndarray:
        return np.bincount(dev, weights=self.d.params, minlength=self.d.D)

    def scores(self, dev: np.ndarray) -> Score:
        if not self.fast:
            ev = evaluate(self.spec, dev)
            return len(ev.violations), self.sign * ev.objective
        return int((self._memory(dev) > self.cap).sum()), self.sign * self.loads(dev)[0]

    def moves(self, dev: np.ndarray, ks: np.ndarray, js: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(violations, signed objective) after each single move of unit ks[i] to device js[i]."""
        if not self.fast:
            trial = dev.copy()
            out = []
            for k, j in zip(ks, js):
                nodes = self.members[k]
                trial[nodes] = j
                out.append(self.scores(trial))
                trial[nodes] = dev[nodes]
            viol, obj = zip(*out) if out else ((), ())
            return np.array(viol, dtype=np.int64), np.array(obj, dtype=np.float64)
        obj, _ = self.loads.scan(dev, ks.astype(np.int64), js.astype(np.int64), self.mptr, self.midx)
        mem, cap, p = self._memory(dev), self.cap, self.params[ks]
        here = dev[self.midx[self.mptr[ks]]]
        over = mem > cap
        viol = (int(over.sum()) - over[here] - over[js] + (mem[here] - p > cap[here])  # the unit leaves `here`
                + (mem[js] + p > cap[js])).astype(np.int64)  # and joins js
        return viol, self.sign * obj

    def touching(self, dev: np.ndarray) -> np.ndarray | None:
        """The units whose move can lower the score: those on a device over its memory, on a
        device whose load is the max (of a phase, under GPipe), or with a neighbour on one.
        A move changes the loads of its two devices and of its neighbours' devices only, and
        a unit joining a bottleneck it has no neighbour on only adds to it. None: every unit
        (outside the fast path, or with transfers routed over levels and links)."""
        if not self.fast or routed(self.d):
            return None
        d = self.d
        table = self.loads(dev)[1].reshape(d.D, -1)
        top = table.max(axis=0)
        tol = np.where(np.isfinite(top), 1e-12 * np.maximum(1.0, np.abs(top)), 0.0)
        hot = (table >= top - tol).any(axis=1) | (self._memory(dev) > self.cap)
        on = hot[dev]
        near = on.copy()
        near[d.src[on[d.dst]]] = True
        near[d.dst[on[d.src]]] = True
        return np.unique(self.unit[near])

"""The fitness of DiviML's string searches (Ghannane & Abdelfattah sec. V-A) re-timed
incrementally: for `latency by tasks` at batch 1 (one piece per node), a move re-times
only the nodes from the first moved one onwards in the list-scheduling order, in a
compiled loop, instead of decoding and evaluating a whole schedule (0.75 s a string at
5,000 tasks; this: about 0.1 ms).

The arithmetic is the evaluator's own (evaluator/schedule_eval.list_schedule and
levels.pair_ms, operation by operation), so the makespan is the same float; the
violation count is the memory check's (the only constraint a string can break in the
specs taken here: `applies` says which). The searches yield decoded schedules, which
the evaluator re-scores; tests/kernels/test_task_times.py checks both against it.
"""
from __future__ import annotations

import numpy as np
from partdsl.core.dense import INF, work_time
from partdsl.core.ir import Spec
from partdsl.core.schedule import runnable
from partdsl.evaluator.schedule_checks import sample_bytes
from partdsl.kernels.jit import njit, njit_inline

MAX_TABLE = 1 << 23  # entries of the [node, device, device] transfer table (64 MB)


def applies(spec: Spec) -> str | None:
    """None if the string searches may score `spec` here, else why not."""
    o, c, d = spec.objective, spec.constraints, spec.dense
    if o.kind != "task_latency" or o.batch != 1 or o.split != 1:
        return "only `latency by tasks` at batch 1 (one piece per node)"
    if c.contiguous or c.acyclic or c.max_stages is not None:
        return "contiguous, acyclic and stage limits are checked on whole schedules"
    if (np.bincount(d.colo, minlength=d.n) > 1).any():
        return "colocated nodes are checked on whole schedules"
    if any(k.batches and 1 not in k.batches for k in spec.platform.classes):
        return "a class that does not run batch 1"
    if any(not r for r in runnable(spec)):
        return "a node that runs nowhere"
    if d.n * d.D * d.D > MAX_TABLE:
        return f"{d.n:,} nodes on {d.D} devices: the transfer table would pass {MAX_TABLE:,} entries"
    return None


@njit_inline
def _transfer(u: int, a: int, b: int, size: np.ndarray, comm: np.ndarray, cls: np.ndarray, direct: np.ndarray,
              has_direct: bool, send: np.ndarray, recv: np.ndarray, has_pair: bool) -> float:
    """levels.pair_ms, the same operations in the same order."""
    if a == b:
        return 0.0
    s = size[u]
    if has_direct and direct[a, b] > 0:
        return s / direct[a, b] * 1e3
    if not has_pair:
        return comm[u, cls[a]] + comm[u, cls[b]]
    bw = send[a, b]
    out = s / bw * 1e3 if bw > 0 and bw != np.inf else 0.0
    bw = recv[a, b]
    return out + (s / bw * 1e3 if bw > 0 and bw != np.inf else 0.0)


@njit
def _table(size: np.ndarray, comm: np.ndarray, cls: np.ndarray, direct: np.ndarray, has_direct: bool,
           send: np.ndarray, recv: np.ndarray, has_pair: bool, D: int) -> np.ndarray:
    """[n, D, D]: each node's output from device a to device b (levels.pair_ms)."""
    n = size.shape[0]
    out = np.zeros((n, D, D))
    for u in range(n):
        for a in range(D):
            for b in range(D):
                out[u, a, b] = _transfer(u, a, b, size, comm, cls, direct, has_direct, send, recv, has_pair)
    return out


@njit
def _retime(first: int, order: np.ndarray, dev: np.ndarray, dur: np.ndarray, ptr: np.ndarray, preds: np.ndarray,
            pred_node: np.ndarray, move: np.ndarray, end: np.ndarray, top: np.ndarray, D: int, tail: np.ndarray,
            cutoff: float) -> float:
    """List scheduling (schedule_eval.list_schedule) from position `first` of `order` on:
    end[p] for p >= first, top[p + 1] = the largest end up to p; returns the makespan.
    `dev` is per node; `preds` holds positions (`pred_node` their nodes); `move[u, a, b]`
    is u's output from a to b; end[p] for p < first is kept. inf as soon as the makespan
    must pass `cutoff`: a node's end plus `tail`, its successors' longest chain of
    cheapest times, is a lower bound on it."""
    free = np.zeros(D)
    seen = np.zeros(D, dtype=np.bool_)
    left = D
    p = first - 1
    while p >= 0 and left > 0:  # each device's last piece before `first`
        d = dev[order[p]]
        if not seen[d]:
            seen[d] = True
            free[d] = end[p]
            left -= 1
        p -= 1
    n = order.shape[0]
    for p in range(first, n):
        v = order[p]
        d = dev[v]
        ready = 0.0
        for j in range(ptr[p], ptr[p + 1]):
            u = pred_node[j]
            t = end[preds[j]] + move[u, dev[u], d]
            if t > ready:
                ready = t
        start = ready if ready > free[d] else free[d]
        free[d] = start + dur[v, d]
        end[p] = free[d]
        if end[p] + tail[v] > cutoff:
            return np.inf
        top[p + 1] = end[p] if end[p] > top[p] else top[p]
    return top[n]


class TaskTimes:
    """The makespan and memory violations of a device per node, list-scheduled in `order`
    (positions); `try_move` scores a change of some nodes' devices from the current
    state, `accept` makes it the state."""

    def __init__(self, spec: Spec, order: list[int], dev: np.ndarray) -> None:
        d = spec.dense
        self.spec, self.D = spec, d.D
        self.order = np.asarray(order, dtype=np.int64)
        self.pos = np.empty(d.n, dtype=np.int64)
        self.pos[self.order] = np.arange(d.n)
        cls = spec.platform.classes
        self.dur = np.full((d.n, d.D), INF)
        for v, opts in enumerate(runnable(spec)):
            for j in opts:
                k = cls[int(d.dev_class[j])]
                self.dur[v, j] = work_time(spec.graph.nodes[v], k.name, k.speed, 1)
        preds = [sorted(int(self.pos[u]) for u in d.preds[v]) for v in self.order.tolist()]
        self.ptr = np.zeros(d.n + 1, dtype=np.int64)
        self.ptr[1:] = np.cumsum([len(x) for x in preds])
        self.preds = np.array([q for x in preds for q in x], dtype=np.int64)
        self.pred_node = self.order[self.preds]
        pair = d.pair_bw
        self.move = _table(d.out_bytes.astype(float), d.comm.astype(float), d.dev_class.astype(np.int64),
                           d.direct_bw if d.direct_bw is not None else np.zeros((1, 1)), d.direct_bw is not None,
                           pair[0] if pair is not None else np.zeros((1, 1)),
                           pair[1] if pair is not None else np.zeros((1, 1)), pair is not None, d.D)
        self.tail = np.zeros(d.n)  # the longest chain of cheapest times after each node
        cheapest = self.dur.min(axis=1)
        for v in reversed(self.order.tolist()):
            for u in d.preds[v]:
                self.tail[u] = max(self.tail[u], cheapest[v] + self.tail[v])
        self.held = sample_bytes(spec) + d.params
        self.cap = d.memory[d.dev_class] * (1 + 1e-12)
        self.check_memory = spec.constraints.memory != "ignore" and bool(np.isfinite(self.cap).any())
        self.dev = np.asarray(dev, dtype=np.int64).copy()
        self.used = np.bincount(self.dev, weights=self.held, minlength=self.D)
        self.end, self.top = np.zeros(d.n), np.zeros(d.n + 1)
        self.score = (self._count(self.used), self._time(0, self.dev, self.end, self.top))
        self._next: tuple | None = None

    def _time(self, first: int, dev: np.ndarray, end: np.ndarray, top: np.ndarray, cutoff: float = np.inf) -> float:
        return float(_retime(first, self.order, dev, self.dur, self.ptr, self.preds, self.pred_node, self.move, end,
                             top, self.D, self.tail, cutoff))

    def _used(self, nodes: np.ndarray, devices: np.ndarray) -> np.ndarray:
        """Bytes per device with `nodes` moved to `devices`, from the state's (a sum kept
        up to date, not recomputed: it drifts by rounding only, far below the 1e-12 slack
        the memory check allows)."""
        used = self.used.copy()
        for v, b in zip(nodes.tolist(), np.asarray(devices).tolist()):
            a = int(self.dev[v])
            if a != b:
                used[a] -= self.held[v]
                used[b] += self.held[v]
        return used

    def try_move(self, nodes: np.ndarray, devices: np.ndarray, cutoff: tuple[int, float] | None = None
                 ) -> tuple[int, float]:
        """(violations, makespan) with `nodes` moved to `devices`; the state is unchanged.
        With a `cutoff`, a score sure to be above it comes back as (its violations, inf),
        or (violations, inf) with no re-timing if its violations are more."""
        used = self._used(nodes, devices)
        dev = self.dev.copy()
        dev[nodes] = devices
        viol = self._count(used)
        limit = np.inf if cutoff is None or viol < cutoff[0] else cutoff[1]
        if cutoff is not None and viol > cutoff[0]:
            self._next = None
            return viol, np.inf
        end, top = self.end.copy(), self.top.copy()
        score = (viol, self._time(int(self.pos[nodes].min()), dev, end, top, limit))
        self._next = (dev, used, end, top, score) if score[1] < np.inf or limit == np.inf else None
        return score

    def _count(self, used: np.ndarray) -> int:
        return int((used > self.cap).sum()) if self.check_memory else 0

    def accept(self) -> None:
        """The last `try_move` becomes the state (one not cut short)."""
        assert self._next is not None, "a move cut short by its cutoff cannot be accepted"
        self.dev, self.used, self.end, self.top, self.score = self._next
        self._next = None

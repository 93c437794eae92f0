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
def _retime(first: int, last: int, order: np.ndarray, dev: np.ndarray, dur: np.ndarray, ptr: np.ndarray,
            preds: np.ndarray, pred_node: np.ndarray, move: np.ndarray, D: int, tail: np.ndarray, succ_end: np.ndarray,
            end: np.ndarray, free_at: np.ndarray, top: np.ndarray, suf: np.ndarray, new_end: np.ndarray,
            new_free: np.ndarray, cutoff: float) -> tuple[float, int]:
    """List scheduling (schedule_eval.list_schedule) of `dev` from position `first` of
    `order` on, where the current state (end, free_at: each device's free time before each
    position, top / suf: prefix / suffix maxima of end) has other devices for nodes at
    positions first..last only. Writes new_end[p] and new_free[p] for first <= p < stop and
    returns (makespan, stop): it stops where the new schedule is the state's again (no
    changed end or moved node has successors left, and every device is free when it was),
    or at the end.
    `preds` holds positions (`pred_node` their nodes), `succ_end[p]` the last position of
    p's successors, `move[u, a, b]` u's output from a to b. (inf, p) as soon as the makespan
    must pass `cutoff`: a node's end plus `tail` (its successors' longest chain of
    cheapest times) is a lower bound on it (in exact arithmetic; it is held to 1e-9 above
    the cutoff, as the two sums round differently)."""
    free = free_at[first].copy()
    horizon = last
    best = top[first]
    n = order.shape[0]
    for p in range(first, n):
        if p > horizon:
            same = True
            for d in range(D):
                if free[d] != free_at[p, d]:
                    same = False
                    break
            if same:
                return max(best, suf[p]), p
        for d in range(D):
            new_free[p, d] = free[d]
        v = order[p]
        d = dev[v]
        ready = 0.0
        for j in range(ptr[p], ptr[p + 1]):
            q = preds[j]
            u = pred_node[j]
            t = (new_end[q] if q >= first else end[q]) + move[u, dev[u], d]
            if t > ready:
                ready = t
        start = ready if ready > free[d] else free[d]
        free[d] = start + dur[v, d]
        new_end[p] = free[d]
        # a moved node (at most `last`) changes its successors' transfers even where its end stays
        if (new_end[p] != end[p] or p <= last) and succ_end[p] > horizon:
            horizon = succ_end[p]
        if new_end[p] + tail[v] > cutoff * (1.0 + 1e-9):  # the sum's rounding may pass a makespan equal to it
            return np.inf, p + 1
        if new_end[p] > best:
            best = new_end[p]
    for d in range(D):
        new_free[n, d] = free[d]
    return best, n


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
        self.succ_end = np.full(d.n, -1, dtype=np.int64)  # the last position of each position's successors
        np.maximum.at(self.succ_end, self.pos[d.src], self.pos[d.dst])
        self.dev = np.asarray(dev, dtype=np.int64).copy()
        self.used = np.bincount(self.dev, weights=self.held, minlength=self.D)
        self.new_end, self.new_free = np.zeros(d.n), np.zeros((d.n + 1, d.D))  # a move's, from its first position
        self.end, self.free_at = np.zeros(d.n), np.full((d.n + 1, d.D), np.nan)
        self.free_at[0] = 0.0
        self.top, self.suf = np.zeros(d.n + 1), np.zeros(d.n + 1)
        value, _ = self._time(0, d.n - 1, self.dev, np.inf)
        self._next = (self.dev, self.used, 0, d.n, (self._count(self.used), value))
        self.accept()

    def _time(self, first: int, last: int, dev: np.ndarray, cutoff: float) -> tuple[float, int]:
        value, stop = _retime(first, last, self.order, dev, self.dur, self.ptr, self.preds, self.pred_node, self.move,
                              self.D, self.tail, self.succ_end, self.end, self.free_at, self.top, self.suf,
                              self.new_end, self.new_free, cutoff)
        return float(value), int(stop)

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
        at = self.pos[nodes]
        first = int(at.min())
        value, stop = self._time(first, int(at.max()), dev, limit)
        score = (viol, value)
        self._next = (dev, used, first, stop, score) if value < np.inf or limit == np.inf else None
        return score

    def _count(self, used: np.ndarray) -> int:
        return int((used > self.cap).sum()) if self.check_memory else 0

    def accept(self) -> None:
        """The last `try_move` becomes the state (one not cut short)."""
        assert self._next is not None, "a move cut short by its cutoff cannot be accepted"
        self.dev, self.used, first, stop, self.score = self._next
        self._next = None
        self.end[first:stop] = self.new_end[first:stop]
        rows = stop + 1 if stop == len(self.end) else stop  # the free times after the last node too
        self.free_at[first:rows] = self.new_free[first:rows]
        np.maximum.accumulate(np.maximum(self.end[first:], self.top[first]), out=self.top[first + 1:])
        tail = self.end[:stop][::-1].copy()
        tail[0] = max(tail[0], self.suf[stop]) if stop else tail[0]
        self.suf[:stop] = np.maximum.accumulate(tail)[::-1]

"""Method `latency_search`: a latency optimizer for Tarnawski's single-stream model (sec. 4).

1. Chain DP over topological orders. A run of consecutive positions of an order is a
   contiguous set, so cutting an order into runs gives a valid split: each run on its own
   accelerator (one subgraph; with q > 1 runs are then packed q to a device, in order) or
   a node on a host device. Run costs are the segment costs of the max-load kernels
   (kernels/bottleneck/segments.py: in + compute + out, inf where memory or support fails); the DP
   minimizes their sum, the latency if the runs executed one after another, with at most
   k * q accelerator runs: O(k P^2) per order, vectorized. Orders: Kahn, depth, DFS, the
   latency greedy's, then random Kahn orders and mutations of the best order's keys.
2. Iterated local search on the true latency (the evaluator) from the best DP split:
   single units move to a graph neighbour's subgraph, an unused accelerator or a host
   device (first improvement); kicks move a stretch of the order to an unused accelerator,
   and the result is kept if the search then improves on it. Parallel branches on
   different devices are what makes the true latency lower than the DP's sum; every move
   is scored by the evaluator (a move that breaks contiguity deadlocks and is rejected).
Every candidate is re-scored by the evaluator in solve(); solve() gives every latency
answer the path segmentation bound (kernels/latency/path_bound.py).
"""
from __future__ import annotations

import math
from typing import Callable, Iterator

import numpy as np
from partdsl.core.events import Candidate, Progress
from partdsl.core.ir import Spec
from partdsl.evaluator.evaluate import evaluate
from partdsl.kernels.bottleneck.coarse_order import coarsen
from partdsl.kernels.bottleneck.segments import segment_costs
from partdsl.kernels.graph.contraction import contract
from partdsl.kernels.graph.orders import dfs_order, kahn, levels
from partdsl.kernels.latency.starts import starts
from partdsl.runtime.deadline import NEVER, Deadline


def chain_dp(cost_acc: np.ndarray, host: np.ndarray, runs: int) -> tuple[float, list[tuple[int, int, bool]]]:
    """min sum of run costs over cuts of positions 0..P-1 into accelerator runs [l, r]
    (cost_acc[l, r], at most `runs` of them) and single host positions (host[p]).
    Returns (value, [(l, r, on_accelerator)])."""
    P = len(host)
    K = max(runs, 0)
    f = np.full((K + 1, P + 1), np.inf)
    f[0, 0] = 0.0
    arg = np.full((K + 1, P + 1), -1, dtype=np.int64)  # l of the last run, -1 = a host position
    for r in range(P):
        h = f[:, r] + host[r]  # position r on a host device
        f[:, r + 1] = h
        if K:
            # accelerator run [l, r] after s-1 runs: f[s-1, l] + cost[l, r]
            cand = f[:-1, : r + 1] + cost_acc[: r + 1, r][None, :]
            l = cand.argmin(axis=1)
            v = cand[np.arange(K), l]
            better = v < f[1:, r + 1]
            f[1:, r + 1] = np.where(better, v, f[1:, r + 1])
            arg[1:, r + 1] = np.where(better, l, -1)
    s = int(np.argmin(f[:, P]))
    value = float(f[s, P])
    if not np.isfinite(value):
        return value, []
    runs_out: list[tuple[int, int, bool]] = []
    r = P
    while r > 0:
        l = int(arg[s, r])
        if l < 0:
            runs_out.append((r - 1, r - 1, False))
            r -= 1
        else:
            runs_out.append((l, r - 1, True))
            s, r = s - 1, l
    return value, runs_out[::-1]


class Search:
    """Orders, DP splits and the boundary search for one spec."""

    def __init__(self, spec: Spec, seed: int) -> None:
        self.spec = spec
        self.d = spec.dense
        self.u = contract(self.d)
        self.rng = np.random.default_rng(seed)
        d = self.d
        self.q = spec.constraints.subgraphs
        self.acc_cls = [c for c in range(len(d.class_names)) if not d.host[c]]
        self.host_cls = [c for c in range(len(d.class_names)) if d.host[c]]
        self.n_acc = int(sum((d.dev_class == c).sum() for c in self.acc_cls))
        self.best = math.inf

    # ------------------------------------------------------------------ orders -> splits
    def positions(self, order: np.ndarray) -> np.ndarray:
        at = np.empty(self.u.count, dtype=np.int64)
        at[order] = np.arange(self.u.count)
        return at[self.u.unit]

    def split(self, order: np.ndarray) -> tuple[float, np.ndarray, np.ndarray, np.ndarray] | None:
        """The chain DP on one order of units: (DP value, devices, subgraphs, positions)."""
        pos, P = coarsen(self.spec, self.positions(order), self.u.count)  # long orders: blocks
        cost = segment_costs(self.spec, pos, P)  # [C, P, P]
        acc = cost[self.acc_cls].min(axis=0) if self.acc_cls else np.full((P, P), np.inf)
        acc_c = np.asarray(self.acc_cls)[cost[self.acc_cls].argmin(axis=0)] if self.acc_cls else None
        if self.host_cls:
            h = np.diagonal(cost[self.host_cls].min(axis=0)).copy()
        else:
            h = np.full(P, np.inf)
        value, runs = chain_dp(acc, h, self.n_acc * self.q)
        if not runs:
            return None
        dev, sub = self.place(runs, pos, acc_c)
        return value, dev, sub, pos

    def place(self, runs: list[tuple[int, int, bool]], pos: np.ndarray, acc_c: np.ndarray | None
              ) -> tuple[np.ndarray, np.ndarray]:
        """Runs -> devices: accelerator runs first-fit in order onto devices of their class
        (q subgraphs and the memory of one device each), host positions onto a host device."""
        d = self.d
        dev = np.full(d.n, -1, dtype=np.int64)
        sub = np.zeros(d.n, dtype=np.int64)
        slots = np.zeros(d.D, dtype=np.int64)
        mem = np.zeros(d.D)
        cap = d.memory[d.dev_class] if self.spec.constraints.memory == "hard" else np.full(d.D, np.inf)
        hosts = np.flatnonzero(d.host[d.dev_class])
        for l, r, on_acc in runs:
            members = (pos >= l) & (pos <= r)
            if not on_acc:
                ok = hosts[d.allowed[members][:, hosts].all(axis=0)] if len(hosts) else hosts
                dev[members] = ok[0] if len(ok) else (hosts[0] if len(hosts) else 0)
                continue
            need = float(d.params[members].sum())
            c = int(acc_c[l, r]) if acc_c is not None else 0
            fit = (d.dev_class == c) & (slots < self.q) & (mem + need <= cap * (1 + 1e-12)) \
                & d.allowed[members].all(axis=0)
            pool = np.flatnonzero(fit)
            if not len(pool):  # another accelerator with room, else the least used (re-scored anyway)
                pool = np.flatnonzero(~d.host[d.dev_class] & (slots < self.q)) if (slots < self.q).any() \
                    else np.argsort(slots)
            j = int(pool[0])
            dev[members] = j
            sub[members] = slots[j]
            slots[j] += 1
            mem[j] += need
        return dev, sub

    def orders(self) -> Iterator[tuple[str, np.ndarray]]:
        u = self.u
        yield "kahn", kahn(u.count, u.src, u.dst)
        yield "depth", kahn(u.count, u.src, u.dst, levels(u.count, u.src, u.dst))
        yield "dfs", dfs_order(u.count, u.src, u.dst)
        from partdsl.kernels.latency.fill import blocks

        seen = np.zeros(u.count, dtype=bool)
        order = []
        for blk in blocks(self.spec):  # the greedy's order, by units
            for v in blk:
                x = int(u.unit[v])
                if not seen[x]:
                    seen[x] = True
                    order.append(x)
        try:
            yield "greedy order", kahn(u.count, u.src, u.dst, np.argsort(np.asarray(order)))
        except ValueError:
            pass

    def fallback(self) -> Iterator:
        """The best feasible start of kernels/latency/starts.py, yielded as a candidate and
        returned with Kahn's positions (for the kicks); None, with a note naming the
        constraints the starts broke, when none is feasible."""
        best, broken = None, set()
        for name, dev, sub in starts(self.spec, self.u):
            ev = evaluate(self.spec, dev, sub)
            if ev.feasible and ev.objective < self.best:
                self.best, best = ev.objective, (name, dev, sub)
            broken |= {v.kind for v in ev.violations}
        if best is None:
            yield Progress("latency search: no chain DP split and no fallback start meets the constraints"
                           + (f" (they break: {', '.join(sorted(broken))})" if broken else ""))
            return None
        name, dev, sub = best
        yield Candidate(f"{name} (no chain DP split is feasible)", dev, sub)
        return dev, sub, self.positions(kahn(self.u.count, self.u.src, self.u.dst))

    def score(self, dev: np.ndarray, sub: np.ndarray) -> float:
        ev = evaluate(self.spec, dev, sub)
        return ev.objective if ev.feasible else math.inf

    # ------------------------------------------------------------------ local search
    def polish(self, dev: np.ndarray, sub: np.ndarray, deadline: Deadline) -> tuple[float, np.ndarray, np.ndarray]:
        """First-improvement moves of one unit (a colocated group) to the subgraph of a
        graph neighbour, to an unused accelerator, or to a host device, each scored by the
        evaluator (a move that breaks contiguity deadlocks and is rejected), until none
        improves or the deadline passes."""
        d, u = self.d, self.u
        best = self.score(dev, sub)
        hosts = np.flatnonzero(d.host[d.dev_class])
        accs = np.flatnonzero(~d.host[d.dev_class])
        members = u.members()
        nbrs: list[set[int]] = [set() for _ in range(u.count)]
        for a, b in zip(u.src.tolist(), u.dst.tolist()):
            nbrs[a].add(b)
            nbrs[b].add(a)
        improved = True
        while improved and not deadline.passed():
            improved = False
            for x in self.rng.permutation(u.count).tolist():
                if deadline.passed():
                    break
                m = members[x]
                mixed = self.q > 1 and 0 < int(d.backward[m].sum()) < len(m)  # forward and backward nodes
                here = (int(dev[m[0]]), int(sub[m[0]]))
                targets = {(int(dev[members[y][0]]), int(sub[members[y][0]])) for y in nbrs[x]}
                free = accs[np.bincount(dev, minlength=d.D)[accs] == 0]
                if len(free):
                    targets.add((int(free[0]), 0))
                if len(hosts):
                    targets.add((int(hosts[0]), 0))
                targets.discard(here)
                for tgt in sorted(targets):
                    if d.host[d.dev_class[tgt[0]]]:
                        tgt = (tgt[0], 0)
                    old = dev[m].copy(), sub[m].copy()
                    dev[m], sub[m] = tgt
                    v = self.score(dev, sub)
                    if v < best - 1e-9:
                        best, improved = v, True
                        break
                    if mixed and not d.host[d.dev_class[tgt[0]]]:
                        v, moved = self._split_phases(dev, sub, m, best)
                        if moved:
                            best, improved = v, True
                            break
                    dev[m], sub[m] = old
        return best, dev, sub

    def _split_phases(self, dev: np.ndarray, sub: np.ndarray, m: np.ndarray, best: float) -> tuple[float, bool]:
        """A unit of forward and backward nodes (colocated: one device, not one subgraph)
        on an accelerator: its backward nodes to another subgraph of that device. In place;
        (value, whether it improved)."""
        back = m[self.d.backward[m]]
        old = sub[back].copy()
        for s2 in range(self.q):
            if s2 == int(old[0]):
                continue
            sub[back] = s2
            v = self.score(dev, sub)
            if v < best - 1e-9:
                return v, True
        sub[back] = old
        return best, False

    def kick(self, dev: np.ndarray, sub: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A perturbation: a stretch of consecutive positions of the order that share a
        subgraph moves to an unused accelerator, another accelerator's last subgraph, or a
        host device (the search then repairs what it breaks)."""
        d = self.d
        dev, sub = dev.copy(), sub.copy()
        accs = np.flatnonzero(~d.host[d.dev_class])
        free = accs[np.bincount(dev, minlength=d.D)[accs] == 0]
        hosts = np.flatnonzero(d.host[d.dev_class])
        pick = self.rng.integers(3)
        if pick == 1 and len(accs):
            free = accs[self.rng.permutation(len(accs))]
        elif pick == 2 or not len(free):
            free = np.zeros(0, np.int64)
        if not len(free) and not len(hosts):
            return dev, sub
        P = int(pos.max()) + 1
        p0 = int(self.rng.integers(P))
        v0 = int(np.flatnonzero(pos == p0)[0])
        lab = (dev[v0], sub[v0])
        length = int(self.rng.integers(1, 12))
        stretch = [p for p in range(p0, min(P, p0 + length))]
        sel = np.isin(pos, stretch) & (dev == lab[0]) & (sub == lab[1])
        if len(free):
            tgt = int(free[0])
            dev[sel] = tgt
            sub[sel] = int(sub[dev == tgt].max(initial=0)) if (dev == tgt).any() else 0
        else:
            dev[sel], sub[sel] = hosts[0], 0
        return dev, sub


def run(spec: Spec, seed: int = 0, deadline: Deadline = NEVER, progress: Callable[[str], None] | None = None,
        restarts: float = 200, iterations: float = 1000, stall: float = 60, **_: object) -> Iterator:
    """`restarts`: random orders tried after the fixed ones; `iterations`: kicks of the
    iterated local search, which stops after `stall` kicks in a row bring nothing (all
    within the deadline)."""
    s = Search(spec, seed)
    start: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # the best DP split: dev, sub, positions
    budget_end = deadline.share(0.5) if deadline.limited else deadline

    def consider(name: str, order: np.ndarray) -> Iterator:
        out = s.split(order)
        if out is None:
            return
        nonlocal start
        _, dev, sub, pos = out
        v = s.score(dev, sub)
        if v < s.best:
            s.best, start = v, (dev, sub, pos)
            yield Candidate(f"chain DP on the {name} order", dev, sub)

    for name, order in s.orders():
        yield from consider(name, order)
    u = s.u
    keys_best = None
    for i in range(int(restarts)):
        if budget_end.passed():
            break
        if keys_best is None or i % 2 == 0:
            keys = s.rng.random(u.count)
        else:  # mutate the keys of the best order so far
            keys = keys_best + s.rng.normal(0, 0.1, u.count)
        before = s.best
        yield from consider(f"random #{i}", kahn(u.count, u.src, u.dst, keys))
        if s.best < before:
            keys_best = keys
        if progress and i % 20 == 19:
            progress(f"latency search: {i + 1} orders, best {s.best:.6g}")
    if start is None:  # no chain DP split is feasible (e.g. colocated forward and backward nodes that
        start = yield from s.fallback()  # need two subgraphs): the best whole plan of kernels/latency/starts.py
        if start is None:
            return
    dev, sub, pos = start
    yield Progress(f"local search from the best chain DP split ({s.best:.6g})")
    cur, dev, sub = s.polish(dev.copy(), sub.copy(), deadline)
    if cur < s.best:
        s.best = cur
        yield Candidate("chain DP + local search", dev.copy(), sub.copy())
    kicks = idle = 0
    while not deadline.passed() and kicks < int(iterations) and idle < int(stall):
        kicks += 1
        idle += 1
        d2, s2 = s.kick(dev, sub, pos)
        v, d2, s2 = s.polish(d2, s2, deadline)
        if v < cur - 1e-9:
            cur, dev, sub, idle = v, d2, s2, 0
            if v < s.best:
                s.best = v
                yield Candidate(f"iterated local search (kick {kicks})", dev.copy(), sub.copy())
        if progress and kicks % 10 == 0:
            progress(f"latency search: {kicks} kicks, best {s.best:.6g}")

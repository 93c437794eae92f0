"""The max-load DP of Tarnawski et al. sec. 5.1.1 as the paper's code runs it, for the
latency baseline that scores its split (sec. 7, Table 4, "Max-load DP").

Many splits reach the optimal max load; which one the paper's code returns, and so the
latency it published, is decided by the order it visits them in. This kernel follows that
order (our own DP, kernels/ideal_dp.py, orders ideals by cost and returns another split):

- units: colocation classes, then strongly connected classes fused, then each unit with
  no work and a single incident edge merged into its neighbour (when that loses nothing),
  one at a time, in node order (units are numbered by first appearance);
- ideals numbered as a depth-first growth from the empty set finds them (adding units in
  number order), each ideal remembering the ideals it was grown from;
- sub-ideals of an ideal visited depth first from the ideal itself over those links;
- a table over (CPUs, accelerators) used, CPUs outer; for each ideal the options in the
  order: a CPU left empty, each sub-ideal's difference on a CPU (its CPU time), an
  accelerator left empty, each difference on an accelerator (its time + every tensor
  that crosses it, once per producer; infinite if a unit is unsupported or the set
  exceeds memory); the first option strictly better than those before it is kept.

Only values up to the optimal max load matter for the split returned, so differences
whose compute alone exceeds it are never formed (a pruning that keeps the visiting order
of the others: a sub-ideal below a pruned one is pruned too).
"""
from __future__ import annotations

import math
import sys

import numpy as np
from ..core.ir import Spec
from .units import colocation_blocks

INF = 1e30


class NotApplicable(Exception):
    """The spec is not the paper's two-class platform (one accelerator class, one CPU class)."""


def _relabel(labels: list[int]) -> list[int]:
    first: dict[int, int] = {}
    return [first.setdefault(x, len(first)) for x in labels]


def units(spec: Spec, acc: int, cpu: int) -> tuple[np.ndarray, int]:
    """Node -> unit (numbered by first appearance) after the three contractions."""
    d = spec.dense
    lab = _relabel(colocation_blocks(d).tolist())
    node_ok = [d.allowed[:, d.dev_class == c].any(axis=1) for c in (acc, cpu)]
    cpu_w = np.where(np.isfinite(d.work[:, cpu]), d.work[:, cpu], 0.0)
    acc_w = np.where(np.isfinite(d.work[:, acc]), d.work[:, acc], 0.0)
    while True:  # merge work-free leaves into their only neighbour, first in node order
        L = np.asarray(lab)
        k = max(lab) + 1
        cpu_t = np.bincount(L, weights=cpu_w, minlength=k)
        acc_t = np.bincount(L, weights=acc_w, minlength=k)
        pairs = {(int(a), int(b)) for a, b in zip(L[d.src], L[d.dst]) if a != b}
        nbrs: list[list[int]] = [[] for _ in range(k)]
        for a, b in pairs:
            nbrs[a].append(b)
            nbrs[b].append(a)
        # classes each unit may run on, and its memory: a leaf joins only a neighbour whose
        # classes it may run on, only without memory and only with no work at all, so no
        # optimal split is lost (the paper's code merges below 1e-6 of work, regardless of
        # classes and memory; its files never notice)
        ok = np.stack([np.bincount(L, weights=~m, minlength=k) == 0 for m in node_ok], axis=1)
        size = np.bincount(L, weights=d.params, minlength=k)
        order = list(dict.fromkeys(lab))
        leaf = next((x for x in order if cpu_t[x] == 0 and acc_t[x] == 0 and len(nbrs[x]) == 1
                     and size[x] == 0 and (ok[x] | ~ok[nbrs[x][0]]).all()), None)
        if leaf is None:
            return L, k
        lab = _relabel([nbrs[leaf][0] if x == leaf else x for x in lab])


def grow_ideals(n: int, preds: list[int], limit_ideals: int = math.inf) -> tuple[list[int], list[list[int]]]:  # type: ignore[assignment]
    """Ideals (bitsets) in the order a depth-first growth from the empty set finds them,
    and for each the ideals it was grown from, in the order they reached it. More than
    `limit_ideals`: NotApplicable."""
    ideals = [0]
    index = {0: 0}
    parents: list[list[int]] = [[]]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * n + 1000))

    def grow(ideal: int, me: int) -> None:
        for v in range(n):
            if not (ideal >> v) & 1 and preds[v] & ~ideal == 0:
                new = ideal | (1 << v)
                j = index.get(new)
                if j is None:
                    if len(ideals) >= limit_ideals:
                        raise NotApplicable(f"more than {limit_ideals:,} ideals")
                    j = index[new] = len(ideals)
                    ideals.append(new)
                    parents.append([])
                    grow(new, j)
                parents[j].append(me)
    try:
        grow(0, 0)
    finally:
        sys.setrecursionlimit(limit)
    return ideals, parents


IDEAL_LIMIT = 5_000  # its pair lists grow about quadratically: GNMT's 17,914 ideals take a minute, Inception's 36,596 far more


def split(spec: Spec, bound: float, limit_ideals: int = IDEAL_LIMIT) -> np.ndarray:
    """The paper's code's optimal max-load split, as a device per node. `bound`: a max
    load no worse than the optimum (an incumbent's); options above it are left out."""
    d = spec.dense
    accs = [c for c in range(len(d.class_names)) if not d.host[c]]
    hosts = [c for c in range(len(d.class_names)) if d.host[c]]
    if len(accs) != 1 or len(hosts) > 1:
        raise NotApplicable("one accelerator class and at most one CPU class")
    for c in accs + hosts:  # a device per node is chosen by class only: no pins to one device
        a = d.allowed[:, d.dev_class == c]
        if (a.any(axis=1) != a.all(axis=1)).any():
            raise NotApplicable("a node is pinned to some devices of a class")
    acc = accs[0]
    cpu = hosts[0] if hosts else acc
    F = int((d.dev_class == acc).sum())
    C = int((d.dev_class == cpu).sum()) if hosts else 0
    unit, n = units(spec, acc, cpu)
    B = bound * (1 + 1e-9) + 1e-9
    ok_acc = d.allowed[:, d.dev_class == acc].any(axis=1)
    ok_cpu = d.allowed[:, d.dev_class == cpu].any(axis=1) if hosts else np.zeros(d.n, bool)
    u_cpu = np.bincount(unit, weights=np.where(ok_cpu, d.work[:, cpu], 0.0), minlength=n)
    u_cpu[np.bincount(unit, weights=~ok_cpu, minlength=n) > 0] = INF
    u_acc = np.bincount(unit, weights=np.where(ok_acc, d.work[:, acc], 0.0), minlength=n)
    u_bad = np.bincount(unit, weights=~ok_acc, minlength=n) > 0
    u_size = np.bincount(unit, weights=d.params, minlength=n)
    cap = d.memory[acc] if spec.constraints.memory != "ignore" else math.inf
    preds = [0] * n
    for a, b in zip(unit[d.src].tolist(), unit[d.dst].tolist()):
        if a != b:
            preds[b] |= 1 << a
    ideals, parents = grow_ideals(n, preds, limit_ideals)
    NI = len(ideals)
    member = np.array([[(I >> v) & 1 for v in range(n)] for I in ideals], dtype=bool) if NI else np.zeros((0, n), bool)
    cpu_sum, acc_sum, size_sum = ((member @ u).tolist() for u in (u_cpu, u_acc, u_size))
    # sub-ideals of each ideal, depth first from itself, left out where neither a CPU (its
    # time > B) nor an accelerator (time > B, or memory exceeded) can take the difference:
    # both only grow further down, so everything below is left out too
    pi, pj = [], []
    for i in range(NI):
        stack, seen = [i], {i}
        ci, ai, si = cpu_sum[i], acc_sum[i], size_sum[i]
        while stack:
            s = stack.pop()
            if ci - cpu_sum[s] > B and (ai - acc_sum[s] > B or si - size_sum[s] > cap * (1 + 1e-12)):
                continue
            pi.append(i)
            pj.append(s)
            for t in parents[s]:
                if t not in seen:
                    seen.add(t)
                    stack.append(t)
    pi_a, pj_a = np.asarray(pi, dtype=np.int64), np.asarray(pj, dtype=np.int64)
    c_cpu, c_acc = _pair_costs(spec, unit, member, pi_a, pj_a, u_cpu, u_acc, u_bad, u_size, cap, acc, B)
    starts = np.r_[0, np.flatnonzero(np.diff(pi_a)) + 1] if len(pi_a) else np.zeros(0, np.int64)
    owners = pi_a[starts] if len(pi_a) else np.zeros(0, np.int64)
    dp: dict[tuple[int, int], np.ndarray] = {}
    for c in range(C + 1):
        for f in range(F + 1):
            cur = np.full(NI, INF)
            if c:
                cur = np.minimum(cur, dp[c - 1, f])
                cur[owners] = np.minimum(cur[owners], np.minimum.reduceat(np.maximum(dp[c - 1, f][pj_a], c_cpu), starts))
            if f:
                cur = np.minimum(cur, dp[c, f - 1])
                cur[owners] = np.minimum(cur[owners], np.minimum.reduceat(np.maximum(dp[c, f - 1][pj_a], c_acc), starts))
            cur[0] = 0.0
            dp[c, f] = cur
    full = int(np.flatnonzero(member.all(axis=1))[0]) if NI else 0
    if NI and dp[C, F][full] >= INF / 2:  # no chain of contiguous sets, one per device, fits
        raise NotApplicable("no split with one contiguous set per device")
    dev = np.full(d.n, -1, dtype=np.int64)
    acc_devs = np.flatnonzero(d.dev_class == acc)
    cpu_devs = np.flatnonzero(d.dev_class == cpu) if hosts else np.zeros(0, np.int64)
    i, c, f = full, C, F
    seg = {int(o): (int(s), int(e)) for o, s, e in zip(owners, starts, np.r_[starts[1:], len(pi_a)])}
    while i != 0:
        target = dp[c, f][i]
        s, e = seg.get(i, (0, 0))
        choice = None
        for on_acc, prev, costs in ((False, dp.get((c - 1, f)), c_cpu), (True, dp.get((c, f - 1)), c_acc)):
            if prev is None:  # no CPU (c = 0) or no accelerator (f = 0) left
                continue
            if prev[i] == target:
                choice = (on_acc, i)
                break
            cand = np.maximum(prev[pj_a[s:e]], costs[s:e])
            hit = np.flatnonzero(cand == target)
            if len(hit):
                choice = (on_acc, int(pj_a[s + hit[0]]))
                break
        if choice is None:  # cannot happen: the value came from one of these options
            raise RuntimeError("reference DP: no option reaches the table's value")
        on_acc, j = choice
        S = member[i] & ~member[j]
        nodes = S[unit]
        if on_acc:
            f -= 1
            dev[nodes] = acc_devs[f]
        else:
            c -= 1
            dev[nodes] = cpu_devs[c]
        i = j
    return dev


def _pair_costs(spec: Spec, unit: np.ndarray, member: np.ndarray, pi: np.ndarray, pj: np.ndarray,
                u_cpu: np.ndarray, u_acc: np.ndarray, u_bad: np.ndarray, u_size: np.ndarray, cap: float,
                acc: int, B: float) -> tuple[np.ndarray, np.ndarray]:
    """CPU and accelerator cost of each difference ideals[pi] minus ideals[pj]: CPU time;
    accelerator time + each producer's tensor once if an edge of it crosses the set
    (infinite where a unit is unsupported or memory is exceeded; tensors are only added up
    where the time alone is at most B, as nothing above B is used)."""
    d = spec.dense
    cs, cd = unit[d.src], unit[d.dst]
    keep = cs != cd
    order = np.argsort(d.src[keep], kind="stable")
    es, ed, prod = cs[keep][order], cd[keep][order], d.src[keep][order]
    first = np.r_[0, np.flatnonzero(np.diff(prod)) + 1] if len(prod) else np.zeros(0, np.int64)
    pc = d.comm[prod[first], acc] if len(prod) else np.zeros(0)
    c_cpu = np.empty(len(pi))
    c_acc = np.full(len(pi), INF)
    step = max(1, 4_000_000 // max(member.shape[1] + len(es), 1))
    for a in range(0, len(pi), step):
        S = member[pi[a:a + step]] & ~member[pj[a:a + step]]
        Sf = S.astype(float)
        c_cpu[a:a + step] = Sf @ u_cpu
        t = Sf @ u_acc
        ok = (Sf @ u_bad.astype(float) < 0.5) & (Sf @ u_size <= cap * (1 + 1e-12)) & (t <= B)
        rows = np.flatnonzero(ok)
        if len(rows) and len(es):
            Sr = S[rows]
            crossing = np.logical_or.reduceat(Sr[:, es] != Sr[:, ed], first, axis=1)  # [rows, producers]
            c_acc[a + rows] = t[rows] + crossing @ pc
        elif len(rows):
            c_acc[a + rows] = t[rows]
    return np.minimum(c_cpu, INF), c_acc

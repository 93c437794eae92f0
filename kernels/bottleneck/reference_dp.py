"""The max-load DP of Tarnawski et al. sec. 5.1.1 as the paper's code runs it, for the
latency baseline that scores its split (sec. 7, Table 4, "Max-load DP").

Many splits reach the optimal max load; which one the paper's code returns, and so the
latency it published, is decided by the order it visits them in. This kernel follows that
order (our own DP, kernels/bottleneck/ideal_dp.py, orders ideals by cost and returns another split):

- units: colocation classes, then strongly connected classes fused, then each unit with
  no work and a single incident edge merged into its neighbour (when that loses nothing),
  one at a time; numbered as the code numbers them, in the order of its hash map of
  colour classes after each of these contractions (`units`, kernels/bottleneck/libstdcxx_hash.py);
- ideals numbered as a depth-first growth from the empty set finds them (adding units in
  number order), each ideal remembering the ideals it was grown from; above the code's
  own limit of 60,000 ideals it gives up (and falls back to DPL), and so does this;
- sub-ideals of an ideal visited depth first from the ideal itself over those links;
- a table over (CPUs, accelerators) used, CPUs outer; for each ideal the options in the
  order: a CPU left empty, each sub-ideal's difference on a CPU (its CPU time), an
  accelerator left empty, each difference on an accelerator (its time + every tensor
  that crosses it, once per producer; infinite if a unit is unsupported or the set
  exceeds memory); the first option strictly better than those before it is kept.

The table's values do not depend on that order, so they are filled smallest ideal first
(compiled, `_fill`), in integer units so that equal sums are equal whichever pair of
ideals a set is the difference of; the order is applied where it decides: walking back
from the full ideal, each step takes the first option, in the code's order, that reaches
the table's value. Only values up to the optimal max load matter for the split returned,
so differences that neither class can take within it are never formed (a pruning that
keeps the visiting order of the others: a sub-ideal below a pruned one is pruned too).
InceptionV3's 36,596 ideals give 2.4e8 such pairs: about 30 s on one core.
"""
from __future__ import annotations

import math
import sys
from typing import Callable

import numpy as np
from partdsl.core.ir import Spec
from partdsl.kernels.bottleneck.ideal_kernels import frontiers_until, words
from partdsl.kernels.bottleneck.libstdcxx_hash import unordered_order
from partdsl.kernels.bottleneck.reference_chain import class_ids
from partdsl.kernels.graph.contraction import colocation_blocks
from partdsl.kernels.jit import njit
from partdsl.runtime.deadline import NEVER, Deadline


class NotApplicable(Exception):
    """The spec is not the paper's two-class platform (one accelerator class, one CPU class)."""


def class_keys(spec: Spec) -> list[int]:
    """The paper's code's colour class of each node: the JSON's colorClass (our importer's
    group cN), else a fresh number, counting down in node order as its reader does
    (reference_chain.class_ids, one per node)."""
    return class_ids(spec, per_label=False).tolist()


def units(spec: Spec, acc: int, cpu: int) -> tuple[np.ndarray, int]:
    """Node -> unit, units numbered as the paper's code numbers them, after its three
    contractions. Each contraction rebuilds the graph by iterating a hash map keyed by
    colour class (kernels/bottleneck/libstdcxx_hash.py): once on reading, once after strongly connected
    classes are fused (our colocation_blocks; a fused class keeps its first node's key),
    and once after each work-free leaf joins its neighbour (first in the current order)."""
    d = spec.dense
    key = class_keys(spec)
    blocks = colocation_blocks(d).tolist()
    first = {k: i for i, k in enumerate(unordered_order(key))}
    block_key: dict[int, int] = {}
    for v in range(d.n):
        block_key.setdefault(blocks[v], key[v])
    seq = [block_key[blocks[v]] for v in sorted(range(d.n), key=lambda v: (first[key[v]], v))]
    order = unordered_order(seq)  # the units, as their keys, in the code's order
    pos = {k: i for i, k in enumerate(order)}
    lab = [pos[block_key[b]] for b in blocks]
    node_ok = [d.class_allowed[:, c] for c in (acc, cpu)]
    cpu_w = np.where(np.isfinite(d.work[:, cpu]), d.work[:, cpu], 0.0)
    acc_w = np.where(np.isfinite(d.work[:, acc]), d.work[:, acc], 0.0)
    while True:  # merge work-free leaves into their only neighbour, first in the current order
        L = np.asarray(lab, dtype=np.int64)
        k = len(order)
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
        leaf = next((x for x in range(k) if cpu_t[x] == 0 and acc_t[x] == 0 and len(nbrs[x]) == 1
                     and size[x] == 0 and (ok[x] | ~ok[nbrs[x][0]]).all()), None)
        if leaf is None:
            return L, k
        seq = [order[nbrs[leaf][0]] if u == leaf else order[u] for u in range(k)]  # the leaf takes its neighbour's class
        order = unordered_order(seq)
        pos = {kk: i for i, kk in enumerate(order)}
        lab = [pos[seq[x]] for x in lab]


def grow_ideals(n: int, preds: list[int], limit_ideals: int = math.inf,  # type: ignore[assignment]
                deadline: Deadline = NEVER) -> tuple[list[int], list[list[int]]]:
    """Ideals (bitsets) in the order a depth-first growth from the empty set finds them,
    and for each the ideals it was grown from, in the order they reached it. More than
    `limit_ideals`, or past `deadline`: NotApplicable."""
    ideals = [0]
    index = {0: 0}
    parents: list[list[int]] = [[]]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * n + 1000))

    def grow(ideal: int, me: int) -> None:
        if deadline.passed():  # each call scans every node: at 10,000 nodes, seconds per 1,024 ideals
            raise NotApplicable("the time limit passed while listing the ideals")
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


IDEAL_LIMIT = 60_000  # the paper's code's IDEALS_LIMIT: GNMT's units (17 dead-end outputs unmerged) have over a million, and it falls back to DPL
INF_I = np.int64(2 ** 62)


def _fixed(values: np.ndarray, scale: float) -> np.ndarray:
    """Costs as integers (units of 1/scale), so a sum over a set is the same whichever
    pair of ideals it is the difference of, and ties stay ties."""
    return np.rint(np.asarray(values, dtype=float) * scale).astype(np.int64)


def split(spec: Spec, bound: float, limit_ideals: int = IDEAL_LIMIT, deadline: Deadline = NEVER,
          progress: Callable[[str], None] | None = None) -> np.ndarray:
    """The paper's code's optimal max-load split, as a device per node. `bound`: a max
    load no worse than the optimum (an incumbent's); options above it are left out. Past
    `deadline` (time.monotonic()): NotApplicable."""
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
    ok_acc = d.class_allowed[:, acc]
    ok_cpu = d.class_allowed[:, cpu] if hosts else np.zeros(d.n, bool)
    w_cpu = np.where(ok_cpu, d.work[:, cpu], 0.0)
    w_acc = np.where(ok_acc, d.work[:, acc], 0.0)
    total = float(np.abs(w_cpu).sum() + np.abs(w_acc).sum() + np.abs(d.comm[:, acc]).sum())
    scale = 2.0 ** min(50 - math.ceil(math.log2(total)), 1000) if total > 0 else 1.0  # sums below 2**51
    u_cpu = np.bincount(unit, weights=w_cpu, minlength=n)
    u_acc = np.bincount(unit, weights=w_acc, minlength=n)
    u_cpu_bad = (np.bincount(unit, weights=~ok_cpu, minlength=n) > 0).astype(np.int64)
    u_acc_bad = (np.bincount(unit, weights=~ok_acc, minlength=n) > 0).astype(np.int64)
    u_size = np.bincount(unit, weights=d.params, minlength=n)
    cap = d.memory[acc] * (1 + 1e-12) if spec.constraints.memory != "ignore" else math.inf
    preds = [0] * n
    for a, b in zip(unit[d.src].tolist(), unit[d.dst].tolist()):
        if a != b:
            preds[b] |= 1 << a
    ideals, parents = grow_ideals(n, preds, limit_ideals, deadline)
    NI = len(ideals)
    bits = words(ideals, n)
    member = np.unpackbits(bits.astype("<u8").view(np.uint8), axis=1, bitorder="little")[:, :n].astype(np.int64)
    sums = (member @ _fixed(u_cpu, scale), member @ u_cpu_bad, member @ _fixed(u_acc, scale),
            member @ u_acc_bad, member.astype(float) @ u_size)
    # producers of tensors between units: a set pays a producer's tensor once if an edge of
    # it crosses the set's boundary
    cs, cd = unit[d.src], unit[d.dst]
    keep = cs != cd
    prods = np.unique(d.src[keep])
    index = np.full(d.n, -1, dtype=np.int64)
    index[prods] = np.arange(len(prods))
    cons = np.zeros((len(prods), bits.shape[1]), dtype=np.uint64)
    for p, b in zip(index[d.src[keep]].tolist(), cd[keep].tolist()):
        cons[p, b // 64] |= np.uint64(1) << np.uint64(b % 64)
    prod_unit = unit[prods].astype(np.int64)
    fptr, fidx = frontiers_until(bits, prod_unit, cons, False, NEVER)
    comm = _fixed(d.comm[prods, acc], scale) if len(prods) else np.zeros(0, np.int64)
    pptr = np.r_[0, np.cumsum([len(p) for p in parents])].astype(np.int64)
    pidx = np.array([t for p in parents for t in p], dtype=np.int64)
    Bf = bound * (1 + 1e-9) * scale
    B = int(Bf) + 1 if Bf < 2.0 ** 61 else int(INF_I) - 1
    graph = (bits, pptr, pidx, *sums, cap, prod_unit, cons, comm, fptr, fidx, np.int64(B))
    by_size = np.argsort(member.sum(axis=1), kind="stable")
    dp = np.full((NI, C + 1, F + 1), INF_I, dtype=np.int64)
    buf = _buffers(NI)
    chunk = max(256, NI // 50)
    for r0 in range(0, NI, chunk):  # chunks keep the wall-clock budget and report progress
        if progress:  # also before the first chunk: a slow machine may stop before a second
            progress(f"max-load DP in the paper's code's order: {r0:,} of {NI:,} ideals")
        if deadline.passed():
            raise NotApplicable("the time limit passed")
        _fill(graph, by_size, dp, r0, min(r0 + chunk, NI), *buf)
    full = int(np.flatnonzero(member.all(axis=1))[0]) if NI else 0
    if NI and dp[full, C, F] >= INF_I:  # no chain of contiguous sets, one per device, fits
        raise NotApplicable("no split with one contiguous set per device")
    devices = (np.flatnonzero(d.dev_class == cpu) if hosts else np.zeros(0, np.int64),
               np.flatnonzero(d.dev_class == acc))
    return _walk_back(dp, graph, member, unit, full, devices, buf)


def _walk_back(dp: np.ndarray, graph: tuple, member: np.ndarray, unit: np.ndarray, full: int,
               devices: tuple[np.ndarray, np.ndarray], buf: tuple[np.ndarray, ...]) -> np.ndarray:
    """The split, from the full ideal down: at each step the first option in the code's
    order (a device left empty, then each sub-ideal depth first; CPUs before
    accelerators) whose value is the table's."""
    dev = np.full(len(unit), -1, dtype=np.int64)
    i, c, f = full, dp.shape[1] - 1, dp.shape[2] - 1
    while i != 0:
        target = dp[i, c, f]
        m = _visit(i, graph, *buf)
        js, costs = buf[3][:m], (buf[4][:m], buf[5][:m])
        choice = None
        for on_acc, (c2, f2) in ((0, (c - 1, f)), (1, (c, f - 1))):
            if c2 < 0 or f2 < 0:  # no CPU (c = 0) or no accelerator (f = 0) left
                continue
            if dp[i, c2, f2] == target:  # this device left empty
                choice = (on_acc, i)
                break
            hit = np.flatnonzero(np.maximum(dp[js, c2, f2], costs[on_acc]) == target)
            if len(hit):
                choice = (on_acc, int(js[hit[0]]))
                break
        if choice is None:  # cannot happen: the value came from one of these options
            raise RuntimeError("reference DP: no option reaches the table's value")
        on_acc, j = choice
        if on_acc:
            f -= 1
        else:
            c -= 1
        dev[(member[i] & ~member[j]).astype(bool)[unit]] = devices[on_acc][f if on_acc else c]
        i = j
    return dev


def _buffers(NI: int) -> tuple[np.ndarray, ...]:
    """Scratch for _visit: stamps, stack, a visit counter, and its output (sub-ideal, CPU cost, accelerator cost)."""
    return (np.full(NI, -1, dtype=np.int64), np.empty(NI, dtype=np.int64), np.zeros(1, dtype=np.int64),
            np.empty(NI, dtype=np.int64), np.empty(NI, dtype=np.int64), np.empty(NI, dtype=np.int64))


@njit
def _visit(i, graph, seen, stack, visits, out_j, out_cpu, out_acc):  # pragma: no cover - compiled
    """The sub-ideals of ideal i, depth first from i itself over the ideals each was grown
    from, with the CPU and accelerator cost of each difference (INF_I where the class
    cannot take it or it costs more than the bound B). A sub-ideal neither class can take
    is left out with everything below it: both costs only grow downwards (the tensors
    aside, which are added only where the time fits), so the order of the rest is kept."""
    bits, pptr, pidx, cpu, cpu_bad, acc, acc_bad, size, cap, prod_unit, cons, comm, fptr, fidx, B = graph
    inf = np.int64(2 ** 62)
    one = np.uint64(1)
    nw = bits.shape[1]
    visits[0] += 1
    mark = visits[0]
    stack[0] = i
    seen[i] = mark
    top, m = 1, 0
    while top:
        top -= 1
        s = stack[top]
        c_cpu = cpu[i] - cpu[s]
        if cpu_bad[i] != cpu_bad[s] or c_cpu > B:
            c_cpu = inf
        t = acc[i] - acc[s]
        c_acc = inf
        if acc_bad[i] == acc_bad[s] and t <= B and size[i] - size[s] <= cap:
            c_acc = t
            for k in range(fptr[i], fptr[i + 1]):  # out: producers in the set with a consumer outside i
                a = prod_unit[fidx[k]]
                if not (bits[s, a // 64] >> np.uint64(a % 64)) & one:
                    c_acc += comm[fidx[k]]
            for k in range(fptr[s], fptr[s + 1]):  # in: producers in s with a consumer in the set
                p = fidx[k]
                for w in range(nw):
                    if cons[p, w] & bits[i, w] & ~bits[s, w]:
                        c_acc += comm[p]
                        break
        if c_cpu == inf and c_acc == inf:
            continue
        out_j[m] = s
        out_cpu[m] = c_cpu
        out_acc[m] = c_acc
        m += 1
        for k in range(pptr[s], pptr[s + 1]):
            t2 = pidx[k]
            if seen[t2] != mark:
                seen[t2] = mark
                stack[top] = t2
                top += 1
    return m


@njit
def _fill(graph, by_size, dp, r0, r1, seen, stack, visits, out_j, out_cpu, out_acc):  # pragma: no cover - compiled
    """dp[i, c, f] for the ideals by_size[r0:r1]: the least max load of ideal i's nodes on
    at most c CPUs and f accelerators, one difference of a chain of ideals each (sec.
    5.1.1). Ideals come smallest first, so every sub-ideal's row is complete when read."""
    C, F = dp.shape[1] - 1, dp.shape[2] - 1
    inf = np.int64(2 ** 62)
    best_cpu = np.empty((C + 1, F + 1), dtype=np.int64)
    best_acc = np.empty((C + 1, F + 1), dtype=np.int64)
    for r in range(r0, r1):
        i = by_size[r]
        if r == 0:  # the empty ideal
            dp[i, :, :] = 0
            continue
        m = _visit(i, graph, seen, stack, visits, out_j, out_cpu, out_acc)
        best_cpu[:, :] = inf
        best_acc[:, :] = inf
        for k in range(m):
            j = out_j[k]
            if j == i:  # i itself: the devices left empty, below
                continue
            x = out_cpu[k]
            if x < inf:  # a row of best_* never increases along f: stop where it is <= x
                for c in range(1, C + 1):
                    for f in range(F + 1):
                        if best_cpu[c, f] <= x:
                            break
                        v = max(dp[j, c - 1, f], x)
                        if v < best_cpu[c, f]:
                            best_cpu[c, f] = v
            x = out_acc[k]
            if x < inf:
                for c in range(C + 1):
                    for f in range(1, F + 1):
                        if best_acc[c, f] <= x:
                            break
                        v = max(dp[j, c, f - 1], x)
                        if v < best_acc[c, f]:
                            best_acc[c, f] = v
        for c in range(C + 1):
            for f in range(F + 1):
                v = inf
                if c > 0:
                    v = min(v, dp[i, c - 1, f], best_cpu[c, f])
                if f > 0:
                    v = min(v, dp[i, c, f - 1], best_acc[c, f])
                dp[i, c, f] = v

"""Cheap proven bounds valid for every method (tighter ones come from the MIP hierarchy).

bottleneck: a device's load is at least the compute of its nodes (divided by the stage's
replicas under `replicate <= r`), so OPT >= the largest colocated component's cheapest
compute (over the most replicas its class allows), and >= total cheapest compute / devices
usable (each of a stage's r replicas has its load, r times which is at least its compute);
and, on platforms of several classes, OPT >= the least T of the LP "each node's compute
spread over the classes it may run on, class c's total <= its k_c devices x T" (a slow
host takes the nodes it runs least badly, not an equal share), taken through the dual
as below: for class weights w_c >= 0 with sum_c k_c w_c = 1, T >= sum_v min_c w_c t_vc;
on two classes the same weights with the transfers of every tensor that crosses between
them charged, by minimum cut (methods/cut_bound.py).
latency: OPT >= the critical path with each node at its cheapest allowed time (Tarnawski
sec. 4: a subgraph's finish includes every node of it on the path).
throughput and latency by tasks (DiviML schedules, core/schedule.py): every sample passes
each node in some piece, so the makespan >= the critical path of each node's shortest
piece; and the devices' busy time >= the cheapest way to run each node's L samples in
pieces of supported sizes on allowed classes, so makespan >= that total / devices; and
(the work bound) a device runs x samples of a node in at least x times the node's least
time per sample there (the best of t(b) / b over its supported sizes b), so the makespan
>= the least C of the LP "each node's L samples spread over its allowed devices, each
device's time <= C". The LP's value is taken through its dual: for device weights
lambda >= 0 summing to 1, C >= sum_d lambda_d time_d >= L sum_v min_d lambda_d r_vd, which
holds for any such weights, so the bound does not rest on the LP solver's tolerances.
Throughput <= L / that makespan (an upper bound, the objective being maximized).

A bound depends on the spec alone, so one computed to its end is kept with the spec
(`_finished`): every `solve` on it (a portfolio's members, a sweep's methods, the tests'
heuristics on one drawn spec) then takes it without re-solving its LP and cuts.
"""
from __future__ import annotations

import weakref

import numpy as np
from partdsl.core.dense import INF, work_time
from partdsl.core.ir import Spec
from partdsl.evaluator.schedule_eval import as_objective
from partdsl.kernels.graph.orders import kahn, successors
from partdsl.methods.cut_bound import crossing_bound
from partdsl.runtime.deadline import NEVER, Deadline


def _cheapest(spec: Spec, times: np.ndarray) -> np.ndarray:
    """times[n, C] -> cheapest allowed time per node."""
    d = spec.dense
    t = times[:, d.dev_class]  # [n, D]
    return np.where(d.allowed, t, INF).min(axis=1)


def _critical_path(spec: Spec, w: np.ndarray) -> float:
    d = spec.dense
    succ = successors(d.n, d.src, d.dst)
    dist = w.copy()
    for u in kahn(d.n, d.src, d.dst):
        for v in succ[u]:
            dist[v] = max(dist[v], dist[u] + w[v])
    return float(dist.max()) if d.n else 0.0


def _spread(spec: Spec, w: np.ndarray) -> float:
    d = spec.dense
    stages = spec.constraints.max_stages
    usable = d.D if stages is None or spec.constraints.replicate > 1 else min(d.D, stages)
    return float(w.sum() / max(usable, 1))


def bound(spec: Spec, deadline: Deadline = NEVER) -> float:
    """The objective's cheap bound; a bottleneck's crossing bound (methods/cut_bound.py)
    stops at `deadline` with what it has. A bound that ran to its end is kept per spec."""
    kept = _finished.get(spec)
    if kept is not None:
        return kept
    value = _bound(spec, deadline)
    if not deadline.passed():  # the crossing bound's search was not cut short
        _finished[spec] = value
    return value


_finished: "weakref.WeakKeyDictionary[Spec, float]" = weakref.WeakKeyDictionary()


def _bound(spec: Spec, deadline: Deadline) -> float:
    d = spec.dense
    kind = spec.objective.kind
    if kind == "bottleneck":
        t = np.where(d.allowed, d.work[:, d.dev_class], INF)  # [n, D]
        _, comp = np.unique(d.colo, return_inverse=True)
        per = np.zeros((comp.max() + 1, d.D))
        np.add.at(per, comp, t)
        # a stage of r replicas has load >= its compute / r (evaluator/replicas.py)
        most = np.minimum(spec.constraints.replicate, np.bincount(d.dev_class)[d.dev_class])
        return float(max((per / most).min(axis=1).max(), _spread(spec, _cheapest(spec, d.work)), class_spread(spec),
                         crossing_bound(spec, deadline)))
    if kind == "latency":
        return _critical_path(spec, _cheapest(spec, d.work))
    makespan = makespan_bound(spec)
    if kind == "task_latency":
        return makespan
    return as_objective(spec, makespan)


def makespan_bound(spec: Spec) -> float:
    """Schedule objectives: no schedule ends before the critical path of each node's
    shortest piece, or before the devices' least busy time spread over them."""
    shortest, least = piece_costs(spec)
    return max(_critical_path(spec, shortest), _spread(spec, least), work_bound(spec))


def per_sample(spec: Spec) -> np.ndarray:
    """[n, D]: each node's least time per sample on each device (inf where not allowed)."""
    d = spec.dense
    L = spec.objective.batch
    rate = np.full((d.n, len(spec.platform.classes)), INF)
    for v, nd in enumerate(spec.graph.nodes):
        for c, k in enumerate(spec.platform.classes):
            sizes = [b for b in (k.batches or range(1, L + 1)) if b <= L]
            rate[v, c] = min((work_time(nd, k.name, k.speed, b) / b for b in sizes), default=INF)
    return np.where(d.allowed, rate[:, d.dev_class], INF)


def work_bound(spec: Spec) -> float:
    """The work bound (module docstring): the LP over sample shares, certified by its dual."""
    d = spec.dense
    return spec.objective.batch * spread_lp(per_sample(spec), np.ones(d.D))


def class_spread(spec: Spec) -> float:
    """The bottleneck's LP bound by class (module docstring); 0 on one class, where it is
    the plain spread."""
    d = spec.dense
    C = len(d.class_names)
    if C < 2 or d.n == 0:
        return 0.0
    return spread_lp(np.where(d.class_allowed, d.work, INF), np.bincount(d.dev_class, minlength=C).astype(float))


def spread_lp(r: np.ndarray, k: np.ndarray) -> float:
    """min T s.t. each row's one unit spread over its finite columns, column g's total of
    r[v, g] x share <= k[g] T; returned as the dual certificate sum_v min_g w_g r[v, g] for
    the LP's weights w scaled to sum_g k_g w_g = 1, valid for any weights, so the bound
    does not rest on the LP solver's tolerances. 0 where a row has no finite column.
    Equal rows are one row of their total (an operator repeated in every layer): an optimal
    split of the total, given to each row, is optimal, and the LP is the size of the
    distinct rows (a 100,000-operator decoder has 9: its LP took 1.0 s, now 0.1 s)."""
    n, G = r.shape
    finite = np.isfinite(r)
    if n == 0 or G == 0 or not finite.any(axis=1).all():
        return 0.0
    rows, counts = np.unique(r, axis=0, return_counts=True)
    lam = _weights(rows, counts.astype(float), k)
    if lam is None:
        return 0.0
    return float(np.where(finite, lam[None, :] * np.where(finite, r, 0.0), INF).min(axis=1).sum())


def _weights(r: np.ndarray, count: np.ndarray, k: np.ndarray) -> np.ndarray | None:
    """The LP's class weights, scaled to sum_g k_g w_g = 1: row v holds count[v] units."""
    from partdsl.solvers.highs_lp import lp_duals
    from scipy.sparse import coo_matrix, vstack

    n, G = r.shape
    finite = np.isfinite(r)
    v_idx, g_idx = np.nonzero(finite)
    m = len(v_idx)
    # variables: the shares (one per finite pair), then T; rows: the classes' loads
    # sum_v r[v,g] share[v,g] - k_g T <= 0, then each row's shares sum to its count
    eq = coo_matrix((np.ones(m), (v_idx, np.arange(m))), shape=(n, m + 1))
    ub = coo_matrix((np.r_[r[v_idx, g_idx], -k], (np.r_[g_idx, np.arange(G)], np.r_[np.arange(m), np.full(G, m)])),
                    shape=(G, m + 1))
    cost = np.zeros(m + 1)
    cost[m] = 1.0
    duals = lp_duals(cost, vstack([ub, eq]).tocsr(), np.r_[np.full(G, -np.inf), count], np.r_[np.zeros(G), count],
                     np.zeros(m + 1), np.full(m + 1, np.inf))
    if duals is None:
        return None
    lam = np.maximum(-duals[:G], 0.0)
    if (lam * k).sum() <= 0:
        return None
    return lam / (lam * k).sum()


def piece_costs(spec: Spec) -> tuple[np.ndarray, np.ndarray]:
    """Per node: the shortest piece on any allowed class and size, and the least total
    time of pieces covering its L samples (a DP over sample counts, for all nodes at once
    in blocks of CHUNK: it was a Python loop per node and count, 0.65 s on DenseNet-121 at
    B = 128, and MILP-SPLIT takes it for every module)."""
    d = spec.dense
    L = spec.objective.batch
    nodes = spec.graph.nodes
    by_size: dict[int, np.ndarray] = {}  # size -> [n] least time of a piece of that size on an allowed class
    for c, k in enumerate(spec.platform.classes):
        allowed = d.allowed[:, d.dev_class == c].any(axis=1)
        for b in (k.batches or range(1, L + 1)):
            if b <= L and allowed.any():
                t = np.where(allowed, [work_time(nd, k.name, k.speed, b) for nd in nodes], INF)
                by_size[b] = np.minimum(by_size[b], t) if b in by_size else t
    if not by_size:
        return np.full(d.n, INF), np.full(d.n, INF)
    sizes = sorted(by_size)
    T = np.stack([by_size[b] for b in sizes], axis=1)  # [n, sizes]
    least = np.empty(d.n)
    for lo in range(0, d.n, CHUNK):
        t = T[lo:lo + CHUNK]
        best = np.full((len(t), L + 1), INF)
        best[:, 0] = 0.0
        for x in range(1, L + 1):
            for i, b in enumerate(sizes):
                if b > x:
                    break
                np.minimum(best[:, x], best[:, x - b] + t[:, i], out=best[:, x])
        least[lo:lo + CHUNK] = best[:, L]
    return T.min(axis=1), least


CHUNK = 4096  # nodes per block of piece_costs' DP: a block's table is CHUNK x (L + 1) floats

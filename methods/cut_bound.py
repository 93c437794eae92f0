"""The bottleneck's class bound with crossings, on platforms of two device classes.

The class LP of methods/bounds.py spreads each node's compute over the classes for free,
so a host that runs small elementwise operators half as fast as an accelerator takes
them all, and the bound ignores that every such node costs a transfer each way (on a
10k-operator decoder over 8 GPUs and a CPU: 119.1 ms against 125.9 here, the optimum
being near 128.6). This bound charges the crossings.

For class weights lambda_c >= 0 with sum_c k_c lambda_c = 1 (k_c devices of class c),
every device's load is <= T, so T >= sum_c lambda_c (total load of class c). A class's
total load holds the compute of its nodes and, under the evaluator's cost semantics
(evaluator/evaluate.py: a tensor once per sending device and at least once per receiving
device), every tensor that leaves the class (comm[u, a] out) and enters the other
(comm[u, b] in). With two classes the charge of node u's tensor, when u and some
consumer sit on different classes, is h_u = lambda_0 comm[u, 0] + lambda_1 comm[u, 1]
whichever side u is on. So T >= min over class assignments of
    sum_v lambda_{c(v)} work[v, c(v)] + sum_u h_u [u's tensor crosses],
a minimum s-t cut with one hyperedge per tensor (Lawler's gadget: two auxiliary nodes
joined by an arc of capacity h_u, arcs of unbounded capacity from each member into the
first and from the second to each member). Capacities are floored to integers (scipy's
max flow takes int32), which lowers every cut, so the bound stays a bound. The best
weights are searched by golden section over the logit of lambda_0 k_0 (the cut value is
concave in the weights, a minimum of linear functions, so unimodal in any monotone
parameter; the logit reaches the splits near 0 or 1 where a slow host puts the best one
in few steps); every value tried is a valid bound and the largest is returned.

Pins, colocation, memory and stage limits only shrink the feasible set, so dropping them
keeps the bound. Under `overlap` a load is a max, not a sum, of compute and transfers,
and the crossings are not charged (the bound is then the class LP's). GPipe's
max FW + max BW is at least the largest FW + BW, the load bounded here.
"""
from __future__ import annotations

import math

import numpy as np
from partdsl.core.dense import Dense
from partdsl.core.ir import Spec
from partdsl.runtime.deadline import NEVER, Deadline

SCALE = 2.0 ** 28  # integer capacity units for the finite total; int32 leaves room for sums
SPAN = 25.0  # the weight split theta = lambda_0 k_0 searched as logit(theta) in [-SPAN, SPAN]
ITERATIONS = 24  # golden-section steps: logit(theta) to 1e-3, which finds a split near 0 or 1
GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


def applies(spec: Spec) -> bool:
    """Whether the bound charges crossings here: a bottleneck without overlap on two
    classes, each with devices, every node able to run on one, every transfer finite."""
    d = spec.dense
    if spec.objective.kind != "bottleneck" or spec.objective.overlap is not None or len(d.class_names) != 2:
        return False
    runs = d.class_allowed & np.isfinite(d.work)
    return bool(d.n and runs.any(axis=1).all() and np.isfinite(d.comm).all()
                and (np.bincount(d.dev_class, minlength=2) > 0).all())


def crossing_bound(spec: Spec, deadline: Deadline = NEVER) -> float:
    """T >= the best Lagrangian cut bound above; 0 where it does not apply (`applies`).
    The search stops at `deadline` with the best value so far (one cut takes 0.1 s at
    100k nodes)."""
    if not applies(spec):
        return 0.0
    d = spec.dense
    k = np.bincount(d.dev_class, minlength=2).astype(float)
    cut = _CutProblem(d)

    def value(z: float) -> float:  # theta = 1 / (1 + e^-z), 1 - theta = 1 / (1 + e^z)
        return cut.value(np.array([1.0 / (1.0 + math.exp(-z)) / k[0], 1.0 / (1.0 + math.exp(z)) / k[1]]))

    lo, hi = -SPAN, SPAN
    a, b = hi - GOLDEN * (hi - lo), lo + GOLDEN * (hi - lo)
    fa, fb = value(a), value(b)
    best = max(fa, fb)
    for _ in range(ITERATIONS):
        if deadline.passed():
            break
        if fa < fb:
            lo, a, fa = a, b, fb
            b = lo + GOLDEN * (hi - lo)
            fb = value(b)
        else:
            hi, b, fb = b, a, fa
            a = hi - GOLDEN * (hi - lo)
            fa = value(a)
        best = max(best, fa, fb)
    return best


class _CutProblem:
    """The s-t network of the bound, its arcs fixed and its capacities set per weights:
    nodes 0..n-1 the graph's (source side = class 0), then s, t, and two auxiliary
    nodes per node that sends a tensor."""

    def __init__(self, d: Dense) -> None:
        from scipy.sparse import csr_matrix

        self.runs = d.class_allowed & np.isfinite(d.work)  # [n, 2]
        self.work = np.where(self.runs, d.work, 0.0)
        self.comm = d.cheapest_comm  # a direct link may beat the host route: the cheapest charge
        n = d.n
        pairs = np.unique(np.stack([d.src, d.dst], axis=1), axis=0).reshape(-1, 2)
        src, dst = pairs[:, 0], pairs[:, 1]
        senders = np.unique(src)
        m = len(senders)
        where = np.full(n, -1, dtype=np.int64)
        where[senders] = np.arange(m)
        s, t = n, n + 1
        e1, e2 = n + 2 + np.arange(m), n + 2 + m + np.arange(m)
        h_in, h_out = e1[where[src]], e2[where[src]]
        self.senders, self.size, self.s, self.t = senders, n + 2 + 2 * m, s, t
        nodes = np.arange(n)
        # arcs: v->t (v on class 0), s->v (v on class 1), e1->e2 (the tensor crosses),
        # then the unbounded ones: u->e1, e2->u, consumer->e1, e2->consumer
        rows = np.concatenate([nodes, np.full(n, s), e1, senders, e2, dst, h_out])
        cols = np.concatenate([np.full(n, t), nodes, e2, e1, senders, h_in, dst])
        self.unbounded = 2 * m + 2 * len(src)
        # the network's CSR pattern once; each weight only refills its capacities
        self.net = csr_matrix((np.arange(1, len(rows) + 1, dtype=np.int32), (rows, cols)), shape=(self.size,) * 2)
        self.slot = self.net.data.astype(np.int64) - 1  # CSR position -> arc

    def value(self, lam: np.ndarray) -> float:
        from scipy.sparse.csgraph import maximum_flow

        unary = np.where(self.runs, self.work * lam[None, :], np.inf)
        base = unary.min(axis=1)
        extra = unary - base[:, None]  # 0 on the cheaper class, inf where not allowed
        h = self.comm[self.senders] @ lam
        finite = np.isfinite(extra)
        total = float(extra[finite].sum() + h.sum())
        scale = SCALE / total if total > 0.0 else math.inf
        if not math.isfinite(scale):  # nothing to cut: every node's cheaper class is the least
            return float(base.sum())
        big = SCALE + 1  # above every cut that respects the classes, so never cut
        caps = np.concatenate([np.where(finite[:, 0], np.floor(extra[:, 0] * scale), big),
                               np.where(finite[:, 1], np.floor(extra[:, 1] * scale), big),
                               np.floor(h * scale), np.full(self.unbounded, big)]).astype(np.int32)
        self.net.data = caps[self.slot]
        flow = maximum_flow(self.net, self.s, self.t, method="dinic").flow_value
        return float(base.sum() + flow / scale)

"""The DiviML MILP (models/diviml.py) against brute force over schedules, on HiGHS and SCIP.

Brute force: every way to put each node's chunks on devices (colocated nodes alike), and
for each, every order of the shares on every device; each combination that precedence
allows is timed as early as possible (a semi-active schedule: any schedule can be shifted
left into one) and scored by the evaluator. The best is the optimum over the schedules the
evaluator accepts, which the MILP must equal."""
from __future__ import annotations

import itertools
import math
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from partdsl.core.ir import Constraints, DeviceClass, Graph, Link, Node, Objective, Platform, Spec, Work
from partdsl.core.schedule import Piece, Schedule, batch_split
from partdsl.core.schedule_eval import evaluate_schedule, list_schedule
from partdsl.methods.solve import solve


def brute_schedules(spec: Spec) -> float:
    d = spec.dense
    L, K = spec.objective.batch, spec.objective.split
    g = L // K
    best = math.inf if spec.objective.sense == "min" else 0.0
    options = [[u for u in range(d.D) if d.allowed[v, u]] for v in range(d.n)]
    for maps in itertools.product(*[itertools.product(o, repeat=K) for o in options]):
        if any(maps[v] != maps[int(d.colo[v])] for v in range(d.n)):
            continue
        shares = [(v, u, [c for c in range(K) if maps[v][c] == u]) for v in range(d.n) for u in dict.fromkeys(maps[v])]
        per_dev = [[k for k, (_, u, _) in enumerate(shares) if u == dev] for dev in range(d.D)]
        for seqs in itertools.product(*[itertools.permutations(p) for p in per_dev]):
            order = _topological(spec, shares, seqs)
            if order is None:
                continue
            pieces, piece_order = [], []
            for k in order:
                v, u, chunks = shares[k]
                samples = [x for c in chunks for x in range(c * g, (c + 1) * g)]
                sizes = batch_split(spec, v, int(d.dev_class[u]), len(samples)) or [len(samples)]
                lo = 0
                for b in sizes:
                    piece_order.append(len(pieces))
                    pieces.append(Piece(v, u, tuple(samples[lo:lo + b])))
                    lo += b
            ev = evaluate_schedule(spec, list_schedule(spec, Schedule(tuple(pieces), L), piece_order=piece_order))
            if ev.feasible:
                best = min(best, ev.objective) if spec.objective.sense == "min" else max(best, ev.objective)
    return best


def _topological(spec: Spec, shares: list, seqs: tuple) -> list[int] | None:
    """Shares in an order that respects node precedence and each device's sequence."""
    d = spec.dense
    n = len(shares)
    after: list[set[int]] = [set() for _ in range(n)]
    for a, (va, _, _) in enumerate(shares):
        for b, (vb, _, _) in enumerate(shares):
            if vb in d.succ_idx[d.succ_ptr[va]:d.succ_ptr[va + 1]]:
                after[a].add(b)
    for seq in seqs:
        for a, b in zip(seq, seq[1:]):
            after[a].add(b)
    indeg = [0] * n
    for a in range(n):
        for b in after[a]:
            indeg[b] += 1
    ready = [k for k in range(n) if indeg[k] == 0]
    out = []
    while ready:
        k = ready.pop()
        out.append(k)
        for b in after[k]:
            indeg[b] -= 1
            if indeg[b] == 0:
                ready.append(b)
    return out if len(out) == n else None


@st.composite
def tiny(draw) -> Spec:  # type: ignore[no-untyped-def]
    n = draw(st.integers(2, 3))
    edges = tuple(sorted({(a, b) for a in range(n) for b in range(a + 1, n) if draw(st.booleans())}))
    kind = draw(st.sampled_from(["task_latency", "throughput"]))
    L = 1 if kind == "task_latency" else draw(st.sampled_from([2, 4]))
    K = 1 if L == 1 else draw(st.sampled_from([1, 2]))
    batches = draw(st.sampled_from([(), (1, 2)]))
    nodes = []
    for v in range(n):
        work = [Work(draw(st.sampled_from([0.5, 1.0, 2.0, 4.0])), "gpu"),
                Work(draw(st.sampled_from([2.0, 5.0, 9.0])), "cpu")]
        if draw(st.booleans()):
            work.append(Work(draw(st.sampled_from([1.0, 1.5, 3.0])), "gpu", 2))
        nodes.append(Node(f"v{v}", tuple(work), params=draw(st.sampled_from([0.0, 1e6])),
                          out=draw(st.sampled_from([0.0, 1e6, 4e6]))))
    gpu = DeviceClass("gpu", draw(st.integers(1, 2)), memory=draw(st.sampled_from([None, 2.5e7])), link=1e9,
                      batches=batches)
    cpu = DeviceClass("cpu", 1, host=True)
    links = (Link("gpu[0]", "gpu[1]", 1e10),) if gpu.count == 2 and draw(st.booleans()) else ()
    if gpu.count == 2 and K == 2 and n == 3:  # keep the enumeration small
        cpu = DeviceClass("cpu", 0, host=True)
    return Spec(Graph("g", tuple(nodes), edges), Platform((gpu, cpu), links), Objective(kind, batch=L, split=K),
                Constraints(memory="hard"))


SAMPLE = Spec(Graph("g", (Node("a", (Work(1.0, "gpu"), Work(5.0, "cpu"), Work(1.5, "gpu", 2)), out=1e6),
                          Node("b", (Work(2.0, "gpu"), Work(2.0, "cpu")), out=1e6),
                          Node("c", (Work(1.0, "gpu"), Work(9.0, "cpu")))), ((0, 1), (0, 2))),
              Platform((DeviceClass("gpu", 2, link=1e9, batches=(1, 2)), DeviceClass("cpu", 0, host=True))),
              Objective("throughput", batch=4, split=2), Constraints(memory="hard"))


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(tiny(), st.sampled_from([1, 2, 3]))
@example(SAMPLE, 1)
def test_the_milp_equals_brute_force_over_schedules_on_highs_scip_and_pyomo(spec: Spec, symmetry: int) -> None:
    """The matrix model on HiGHS and SCIP, the Pyomo reference (on HiGHS), and the matrix
    model with sec. V-E's symmetry rows (one criterion per case) all reach the optimum."""
    opt = brute_schedules(spec)
    for solver, options in (("highs", {}), ("scip", {}), ("highs", {"pyomo": 1}), ("highs", {"symmetry": symmetry})):
        r = solve(spec, method="exact", solver=solver, time_limit=60, gap=0.0, options=options)
        if spec.objective.sense == "min" and math.isinf(opt) or spec.objective.sense == "max" and opt == 0.0:
            assert not r.status.has_solution() or not r.evaluation.feasible
            continue
        assert r.status.value == "optimal", (solver, options, r.status, r.stopped, r.objective, opt)
        assert r.objective == pytest.approx(opt, rel=1e-6, abs=1e-6), (solver, options)
        bound_ok = r.bound >= opt - 1e-6 if spec.objective.sense == "max" else r.bound <= opt + 1e-6
        assert bound_ok


def test_symmetry_rows_order_identical_devices_and_the_start_is_relabelled() -> None:
    from partdsl.kernels.schedule.list_schedulers import schedule
    from partdsl.models import diviml

    assert diviml.identical_devices(SAMPLE) == ((0, 1),)
    linked = replace(SAMPLE, platform=replace(SAMPLE.platform, classes=(DeviceClass("gpu", 3, link=1e9),
                                                                          DeviceClass("cpu", 0, host=True)),
                                              links=(Link("gpu[0]", "gpu[1]", 1e10),)))
    assert diviml.identical_devices(linked) == ((0, 1),)  # gpu[2] has no fast link
    for criterion in (0, 1, 2, 3):  # 0: the plain model takes the start as it is (its y orders the pairs)
        s = diviml.canonical(SAMPLE, criterion, schedule(SAMPLE, "heft")) if criterion else schedule(SAMPLE, "heft")
        if criterion:
            key = diviml.symmetry_key(SAMPLE, criterion, s)
            assert key[0] >= key[1]
        assert evaluate_schedule(SAMPLE, s).objective == evaluate_schedule(SAMPLE, schedule(SAMPLE, "heft")).objective
        mip, vm = diviml.build(SAMPLE, 100.0, symmetry=criterion)
        x0 = diviml.encode(SAMPLE, vm, evaluate_schedule(SAMPLE, s).schedule)
        assert x0 is not None
        lhs = mip.A @ x0
        assert (lhs >= mip.row_lo - 1e-9).all() and (lhs <= mip.row_hi + 1e-9).all(), "the relabelled start fits"


def test_the_milp_splits_the_batch_where_it_pays() -> None:
    r = solve(SAMPLE, method="exact", time_limit=60)
    assert r.status.value == "optimal" and r.objective == pytest.approx(brute_schedules(SAMPLE))
    assert r.assignment is None  # some node's samples run on both GPUs


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(tiny())
@example(SAMPLE)
def test_the_cheap_bounds_hold_against_brute_force_over_schedules(spec: Spec) -> None:
    """The critical-path, spread and work bounds (methods/bounds.py) never pass the optimum
    over schedules; the work bound alone neither, and it is at least the spread over the
    devices of each node's cheapest per-sample work."""
    from partdsl.methods.bounds import bound, per_sample, work_bound

    opt = brute_schedules(spec)
    if spec.objective.sense == "min" and math.isinf(opt) or spec.objective.sense == "max" and opt == 0.0:
        return
    L = spec.objective.batch
    makespan = opt if spec.objective.sense == "min" else L / opt * 1e3
    assert work_bound(spec) <= makespan * (1 + 1e-9)
    assert work_bound(spec) >= L * per_sample(spec).min(axis=1).sum() / spec.dense.D * (1 - 1e-9)
    assert (bound(spec) >= opt * (1 - 1e-9)) if spec.objective.sense == "max" else (bound(spec) <= opt * (1 + 1e-9))


PIECE_ORDER_CASE = Spec(Graph("g", (Node("v0", (Work(4.0, "gpu"), Work(2.0, "cpu")), out=4e6),
                                    Node("v1", (Work(0.5, "gpu"), Work(2.0, "cpu"))),
                                    Node("v2", (Work(0.5, "gpu"), Work(5.0, "cpu")))), ((0, 2),)),
                        Platform((DeviceClass("gpu", 1, link=1e9, batches=(1, 2)), DeviceClass("cpu", 1, host=True))),
                        Objective("throughput", batch=2, split=2), Constraints(memory="hard"))


@pytest.mark.xfail(strict=True, reason="issue 28, defect 1: the evaluator accepts piece-level schedules the "
                   "DiviML MILP cannot express; here the EA's 307.69 samples/s schedule is optimal, the MILP "
                   "capped at its makespan is infeasible, so exact certifies nothing")
def test_exact_certifies_a_schedule_only_the_evaluator_can_express() -> None:
    """Found by the random test above on main (not by CI's derandomized draw): the known
    gap between the evaluator's and the MILP's schedule spaces. strict: it fails loudly
    once the trust issue closes the gap."""
    opt = brute_schedules(PIECE_ORDER_CASE)
    r = solve(PIECE_ORDER_CASE, method="exact", solver="highs", time_limit=60, gap=0.0)
    assert r.objective == pytest.approx(opt, rel=1e-6)
    assert r.status.value == "optimal"

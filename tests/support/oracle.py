"""The brute-force oracle (issue 28): random tiny specs of every objective, every method
that takes the objective run on them, each answer checked against the optimum over the
evaluator's whole space (method `brute`: every assignment, with subgraph numbers under
latency; every schedule under the DiviML objectives, kernels/schedule/brute.py).

A finding is one of:
- `false optimal`: a method says optimal (or infeasible) and the oracle disagrees;
- `invalid bound`: a proven bound (a method's, or one of `part bound`'s) on the wrong side
  of the optimum;
- `wrong side`: a feasible answer better than the optimum (the evaluator and the oracle
  disagree about the space);
- `error`: a method raised something other than a PartError refusing the spec.
tests/methods/test_oracle.py runs a few hundred cases; benchmarks/oracle.py runs thousands and
prints the counts.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from hypothesis import assume
from hypothesis import strategies as st
from partdsl.core.errors import PartError
from partdsl.core.ir import Constraints, DeviceClass, Graph, Node, Objective, Platform, Spec, Work
from partdsl.core.result import Result
from partdsl.evaluator.schedule_eval import evaluate_schedule
from partdsl.methods.registry import METHODS
from partdsl.methods.solve import ABS_TOL, solve

from tests.support.strategies import on_levels, specs, valid

KINDS = ("bottleneck", "latency", "task_latency", "throughput", "training")  # training: bottleneck on training graphs
EXACT = (("exact", "highs"), ("exact", "scip"))  # every MIP method on both solvers
TOL = 1e-6


@dataclass(frozen=True)
class Finding:
    kind: str  # false optimal | invalid bound | wrong side | error
    method: str
    detail: str


@st.composite
def tiny_specs(draw, kinds: tuple[str, ...] = KINDS) -> Spec:  # type: ignore[no-untyped-def]
    """Specs the brute force enumerates in well under a second: at most 4 nodes and 3
    devices (2 and batch <= 4 under the schedule objectives), every constraint the
    language has drawn at random (tests/support/strategies.py), one in four on server levels or
    direct links, one in four bottleneck/latency cases with activation memory."""
    kind = draw(st.sampled_from(kinds))
    if kind == "training":  # training graphs: the bottleneck under `acyclic`, or latency
        spec = draw(training_specs() if draw(st.integers(0, 2)) else latency_training_specs())
        from partdsl.kernels import brute_force

        assume(brute_force.count(spec) <= 20_000)  # 2 subgraphs on 3 devices: 262,144 once, past brute's limit
        return spec
    scheduled = kind in ("task_latency", "throughput")
    spec = draw(specs(max_nodes=3 if scheduled else 4, kinds=(kind,), max_devices=2 if scheduled else 3))
    if kind == "latency":
        spec = replace(spec, constraints=replace(spec.constraints, subgraphs=draw(st.sampled_from([1, 1, 2]))))
    if scheduled and spec.objective.batch > 4:
        spec = replace(spec, objective=replace(spec.objective, batch=4, split=min(spec.objective.split, 2)))
    spec = replace(spec, solve=replace(spec.solve, method=None, options=(), time_limit=None, gap=None))
    if draw(st.integers(0, 3)) == 0:  # one case in four on server levels (evaluator/levels.py)
        spec = draw(on_levels(spec))
    if not scheduled and spec.constraints.memory != "ignore" and draw(st.integers(0, 3)) == 0:
        spec = replace(spec, constraints=replace(spec.constraints, activations=True))  # evaluator/activations.py
    valid(spec)
    from partdsl.kernels import brute_force
    from partdsl.kernels.schedule import brute

    assume((brute.count(spec) if scheduled else brute_force.count(spec)) <= 20_000)
    return spec


@st.composite
def training_specs(draw) -> Spec:  # type: ignore[no-untyped-def]
    """Training graphs under `acyclic` (issue 69): a forward DAG of 1-3 nodes, a backward
    twin for most (colocated by group, or not), the backward edges mirrored plus now and
    then one more, forward-to-backward edges (a sink to its twin always, stashes at
    random); the training form implied or explicit (pipedream, gpipe); half on one class of
    identical stages without a host (Archer's MTPP MIP), half on accelerators and a host."""
    nf = draw(st.integers(1, 3))
    fw = [(a, b) for a in range(nf) for b in range(a + 1, nf) if draw(st.booleans())]
    twin = [i for i in range(nf) if draw(st.integers(0, 5))]
    nodes = [Node(f"f{i}", (Work(draw(st.floats(0, 20))),), params=draw(st.sampled_from([0.0, 1e9, 3e9])),
                  out=draw(st.sampled_from([None, 1e6, 5e7])), group=f"g{i}") for i in range(nf)]
    nodes += [Node(f"b{i}", (Work(draw(st.floats(0, 20))),), params=draw(st.sampled_from([0.0, 1e9])),
                   out=draw(st.sampled_from([None, 1e6, 5e7])), backward=True,
                   group=f"g{i}" if draw(st.integers(0, 4)) else None) for i in twin]
    at = {i: nf + j for j, i in enumerate(twin)}
    edges = set(fw)
    edges |= {(at[b], at[a]) for a, b in fw if a in at and b in at}  # mirrored
    sinks = {a for a in range(nf)} - {a for a, _ in fw}
    edges |= {(i, at[i]) for i in twin if i in sinks or draw(st.booleans())}
    if len(twin) >= 2 and draw(st.integers(0, 3)) == 0:  # one more backward edge, high twin to low
        hi, lo = sorted(draw(st.lists(st.sampled_from(twin), min_size=2, max_size=2, unique=True)), reverse=True)
        edges.add((at[hi], at[lo]))
    k = draw(st.integers(1, 3))
    memory = draw(st.sampled_from([None, 4e9, 6e9]))
    if draw(st.booleans()):
        classes: tuple[DeviceClass, ...] = (DeviceClass("stage", k, memory=memory, link=1e10),)
    else:
        classes = (DeviceClass("acc", k, memory=memory, link=1e10), DeviceClass("cpu", 1, host=True))
    training = draw(st.sampled_from([None, "pipedream", "gpipe"])) if twin else None
    spec = Spec(Graph("g", tuple(nodes), tuple(sorted(edges))), Platform(classes),
                Objective("bottleneck", training),
                Constraints(acyclic=True, contiguous=draw(st.booleans()),
                            memory=draw(st.sampled_from(["hard", "ignore", "overflow"])),
                            colocate=draw(st.integers(0, 3)) > 0))
    return valid(spec)


@st.composite
def latency_training_specs(draw) -> Spec:  # type: ignore[no-untyped-def]
    """training_specs under single-stream latency: 1 or 2 subgraphs an accelerator, with
    and without `acyclic` (which the latency IP refuses by name)."""
    spec = draw(training_specs())
    c = replace(spec.constraints, subgraphs=draw(st.sampled_from([1, 2])), acyclic=draw(st.booleans()))
    return valid(replace(spec, objective=Objective("latency"), constraints=c))


def methods_for(spec: Spec) -> list[tuple[str, str | None, dict | None]]:
    """(method, solver, options) to run: every method that optimizes the objective, the MIP
    methods on HiGHS and SCIP, and `exact` once more with heuristics off (-O heuristics=0:
    no MIP start, so its answer and bound are the model's own, not the portfolio's)."""
    kind = spec.objective.kind
    out: list[tuple[str, str | None, dict | None]] = []
    for m in METHODS.values():
        if kind not in m.objectives or m.name == "brute":
            continue
        out += [(m.name, s, BUDGETS.get(m.name)) for s in ("highs", "scip")] if m.mip \
            else [(m.name, None, BUDGETS.get(m.name))]
    out += [("exact", s, {"heuristics": 0.0}) for s in ("highs", "scip")]
    return out


def _better(spec: Spec, a: float, b: float) -> bool:
    """a is strictly better than b, beyond the tolerance."""
    tol = TOL * max(1.0, abs(b)) if math.isfinite(b) else 0.0
    return a < b - tol if spec.objective.sense == "min" else a > b + tol


def check_result(spec: Spec, opt: float, feasible: bool, label: str, r: Result) -> list[Finding]:
    out: list[Finding] = []
    status = r.status.value
    if status == "infeasible" and feasible:
        out.append(Finding("false optimal", label, f"says infeasible, the optimum is {opt:.9g}"))
    if status == "optimal" and not feasible:
        out.append(Finding("false optimal", label, f"says optimal at {r.objective:.9g}, nothing is feasible"))
    if not feasible:
        return out
    # "optimal" holds within the relative gap or ABS_TOL (10 ns) absolute, the MIP solvers'
    # tolerance (methods/solve.py, docs/certificates.md): an answer 5e-6 ms above an optimum of
    # 5e-6 ms is optimal in that sense, and no finding
    if status == "optimal" and abs(r.objective - opt) > ABS_TOL and (
            _better(spec, r.objective, opt) or _better(spec, opt, r.objective)):
        out.append(Finding("false optimal", label, f"says optimal at {r.objective:.9g}, the optimum is {opt:.9g}"))
    if r.status.has_solution() and r.evaluation is not None and r.evaluation.feasible and _better(spec, r.objective, opt):
        out.append(Finding("wrong side", label, f"feasible {r.objective:.9g} beats the optimum {opt:.9g}"))
    if _better(spec, opt, r.bound):  # a lower (upper) bound above (below) the optimum
        out.append(Finding("invalid bound", label, f"bound {r.bound:.9g}, the optimum is {opt:.9g}"))
    return out


def check_bounds(spec: Spec, opt: float, feasible: bool) -> list[Finding]:
    """`part bound`'s hierarchy (bottleneck and latency) against the optimum."""
    from partdsl.methods.hierarchy import hierarchy

    if spec.objective.kind not in ("bottleneck", "latency") or not feasible:
        return []
    try:
        h = hierarchy(spec, time_limit=10, workers=1)
    except PartError:
        return []
    except AssertionError as e:  # the hierarchy's own check: a bound above a solution it found
        return [Finding("invalid bound", "part bound", str(e))]
    return [Finding("invalid bound", f"part bound {name}", f"{e.value:.9g} > optimum {opt:.9g}")
            for name, e in h.bounds.items() if e.value is not None and _better(spec, opt, e.value)]


def oracle(spec: Spec) -> tuple[float, bool]:
    """The optimum over the evaluator's space, and whether anything is feasible."""
    b = solve(spec, method="brute", gap=0.0)
    assert b.status.value in ("optimal", "infeasible"), (b.status, b.stopped, b.log[-3:])
    return b.objective, b.status.value == "optimal"


# the searches' budgets, small for specs of at most 4 nodes (BRKGA's 100 x 100 default was
# three quarters of a bottleneck case's time, SA's and EA's 2,000 iterations four fifths of
# a schedule case's); what is checked, their claims, is the same
BUDGETS: dict[str, dict[str, float]] = {
    **{m: {"population": 20, "generations": 10} for m in ("brkga", "mla", "mla_weighted")},
    "random": {"samples": 100}, "sa": {"iterations": 200}, "ea": {"iterations": 200},
}


def check_case(spec: Spec, time_limit: float = 20.0) -> tuple[list[Finding], int]:
    """Every method (and bound) on one spec against the oracle: the findings, and how
    many (method, solver) runs answered (the others refused the spec by name)."""
    opt, feasible = oracle(spec)
    findings: list[Finding] = []
    runs = 0
    for name, solver, options in methods_for(spec):
        label = (f"{name}/{solver}" if solver else name) + (" -O heuristics=0" if options == {"heuristics": 0.0} else "")
        try:
            r = solve(spec, method=name, solver=solver, time_limit=time_limit, gap=0.0, seed=0, options=options)
        except PartError:
            continue  # refused by name: the spec has something the method does not take
        except Exception as e:  # noqa: BLE001 - a crash is a finding, not a test error
            findings.append(Finding("error", label, f"{type(e).__name__}: {e}"))
            continue
        runs += 1
        findings += check_result(spec, opt, feasible, label, r)
    return findings + check_bounds(spec, opt, feasible), runs



def check_load_search(spec: Spec, seconds: float = 5.0) -> None:
    """The load search on a spec (assumed away if invalid): each answer it yields, not only
    the best (solve would drop a violating one silently), is one the evaluator accepts with
    its replication factors, none beats brute force, and it answers whenever brute force
    finds a feasible split."""
    from partdsl.evaluator.evaluate import evaluate
    from partdsl.kernels import brute_force
    from partdsl.kernels.bottleneck import load_search
    from partdsl.runtime.deadline import Deadline

    valid(spec)
    assume(brute_force.count(spec) <= brute_force.LIMIT)  # a spec brute force enumerates (as tiny_specs)
    brute = solve(spec, method="brute", gap=0.0, time_limit=1e6)
    found = list(load_search.run(spec, deadline=Deadline.after(seconds), stall=5))
    for cand in found:
        ev = evaluate(spec, cand.devices, replicas_of=cand.replicas)
        assert ev.feasible, (cand.label, cand.replicas, ev.violations)
        assert ev.objective >= brute.objective - 1e-9 * max(1.0, brute.objective)
    assert found or brute.status.value != "optimal"


def brute_schedules(spec: Spec) -> float:
    """The optimum over the evaluator's whole schedule space (kernels/schedule/brute.py:
    chunk maps, share orders, every batching and piece order of a share), each schedule
    re-scored by the evaluator here."""
    from partdsl.kernels.schedule.brute import schedules

    best = math.inf if spec.objective.sense == "min" else 0.0
    for s in schedules(spec):
        ev = evaluate_schedule(spec, s)
        if ev.feasible:
            best = min(best, ev.objective) if spec.objective.sense == "min" else max(best, ev.objective)
    return best


# found by tests/models/test_diviml_milp.py (issue 28, defect 1): the evaluator once checked
# precedence per piece and accepted a schedule the MILP could not express
PIECE_ORDER_CASE = Spec(Graph("g", (Node("v0", (Work(4.0, "gpu"), Work(2.0, "cpu")), out=4e6),
                                    Node("v1", (Work(0.5, "gpu"), Work(2.0, "cpu"))),
                                    Node("v2", (Work(0.5, "gpu"), Work(5.0, "cpu")))), ((0, 2),)),
                        Platform((DeviceClass("gpu", 1, link=1e9, batches=(1, 2)), DeviceClass("cpu", 1, host=True))),
                        Objective("throughput", batch=2, split=2), Constraints(memory="hard"))

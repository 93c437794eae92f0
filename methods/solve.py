"""`solve(spec, method=...)`: the one entry point for Python users and the CLI.

A method is looked up in the method table (methods/registry.py); it yields events
(core/events.py). Every Candidate is re-scored by the evaluator (evaluator/evaluate.py,
evaluator/schedule_eval.py); the best feasible one becomes the incumbent, certified against
the best proven bound. The wall-clock budget is one Deadline, enforced here, not trusted
to a backend.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np
from partdsl.core.assignment import subgraph_map, to_array
from partdsl.core.errors import PartError
from partdsl.core.evaluation import Evaluation
from partdsl.core.events import BudgetSpent, Candidate, Event, Progress, Proven, SolverLog
from partdsl.core.ir import SolveOptions, Spec
from partdsl.core.result import Result, Status, Termination, relative_gap
from partdsl.core.validate import check_routes
from partdsl.evaluator.evaluate import evaluate
from partdsl.evaluator.replicas import factors as replica_factors
from partdsl.evaluator.schedule_eval import evaluate_schedule
from partdsl.kernels.bottleneck.path_bound import applies as contiguous_applies
from partdsl.kernels.bottleneck.path_bound import contiguous_path_bound
from partdsl.methods import capabilities
from partdsl.methods.bounds import bound as trivial_bound
from partdsl.methods.class_view import class_view
from partdsl.methods.registry import KERNEL_SOLVER, METHODS, Method, lookup
from partdsl.runtime import interrupt
from partdsl.runtime.deadline import Deadline
from partdsl.solvers import registry as solver_registry

ABS_TOL = 1e-5  # ms: 10 ns, above HiGHS's default feasibility tolerances
BOUND_SHARE = 0.25  # of a time limit, at most, for a cheap bound (bottleneck crossings, latency path) before the method starts


def assignment_array(spec: Spec, assignment: Mapping[str, str]) -> np.ndarray:
    return to_array(spec, assignment)


def score(spec: Spec, cand: Candidate) -> tuple[Evaluation, np.ndarray]:
    """The evaluator's verdict on a candidate, and its device per node (-1: a node whose
    samples a schedule spreads over several devices)."""
    if cand.schedule is not None:  # a DiviML schedule (pieces, starts): scored as it is
        return evaluate_schedule(spec, cand.schedule), cand.schedule.node_devices(spec.dense.n)
    return evaluate(spec, cand.devices, cand.subgraphs, cand.replicas), cand.devices


def modelled_by(spec: Spec, feature: str) -> list[str]:
    """The methods for the spec's objective that model `feature` (brute and portfolios aside)."""
    kind = spec.objective.kind
    return [m.name for m in METHODS.values() if kind in m.objectives and m.name != "brute" and not m.portfolio
            and capabilities.models(m.ignores, feature, capabilities.features(spec))]


def _better(spec: Spec, a: Evaluation, b: Evaluation | None) -> bool:
    if b is None:
        return True
    if a.feasible != b.feasible:
        return a.feasible
    return a.objective > b.objective if spec.objective.sense == "max" else a.objective < b.objective


def _checked_options(spec: Spec, m: Method, method: str | None, options: Mapping[str, object] | None,
                     opts: SolveOptions, log: list[str]) -> dict[str, object]:
    """The method's own options: the solve block's (dropped, with a note, when another
    method is asked for) overridden by `options`; an unknown one is a PartError."""
    kind = spec.objective.kind
    if kind not in m.objectives:
        fits = ", ".join(x.name for x in METHODS.values() if kind in x.objectives and x.name != "brute")
        raise PartError(f"method {m.name} optimizes {' or '.join(m.objectives)}, and this spec has the {kind} "
                        "objective", None, f"methods for {kind}: {fits}")
    spec_opts = dict(opts.options)
    if method is not None and (spec.solve.method is None or m.name != lookup(spec.solve.method, kind).name):
        for key in [k for k in spec_opts if k not in m.options]:
            log.append(f"solve-block option '{key}' is not used by method {m.name}")
            del spec_opts[key]
    merged = {**spec_opts, **dict(options or {})}
    for key in merged:
        if key not in m.options:
            takes = ", ".join(m.options) if m.options else "no options"
            raise PartError(f"method {m.name} has no option '{key}'", None, f"method {m.name} takes {takes}")
    return merged


UNKEPT_LOGGED = 20  # a search may yield thousands of candidates; the first ones say enough


@dataclass
class _Run:
    """What a solve has so far: the incumbent, the proven bound, its log, why it stopped."""

    spec: Spec
    bound: float
    t0: float = field(default_factory=time.monotonic)
    best: Evaluation | None = None
    best_dev: np.ndarray | None = None
    best_label: str = ""
    best_method: str = ""  # the portfolio member whose candidate is the incumbent
    best_rep: np.ndarray | None = None  # its replication factors (`replicate <= r`)
    count: int = 0
    unkept: int = 0  # feasible candidates not better than the incumbent, logged up to UNKEPT_LOGGED
    stopped: Termination = Termination.ALL_TRIED
    budget_spent: bool = False  # a portfolio's search budget (no time limit) cut a member short
    log: list[str] = field(default_factory=list)
    solver_logs: list[str] = field(default_factory=list)

    def note(self, message: str, progress: Callable[[str], None] | None = None) -> None:
        """A timed log line, shown live too when there is a `progress` callback."""
        self.log.append(f"{time.monotonic() - self.t0:8.3f}s  {message}")
        if progress:
            progress(message)

    def take(self, event: Event, progress: Callable[[str], None] | None) -> None:
        """Record one event: a progress line, a solver log, a proof, or a candidate to score."""
        if isinstance(event, Progress):
            self.note(event.message, progress)
        elif isinstance(event, BudgetSpent):
            self.note(event.message, progress)
            self.budget_spent = True
        elif isinstance(event, SolverLog):
            self.solver_logs.append(f"==== {event.solver} ====\n{event.text}")
        elif isinstance(event, Proven):  # a kernel's proof that nothing beats event.bound
            self.bound = max(self.bound, event.bound) if self.spec.objective.sense == "min" else min(
                self.bound, event.bound)
            self.log.append(f"proven bound {event.bound:.6g}: {event.why}")
        else:
            self.count += 1  # scored even past the deadline: a MIP's last incumbent arrives just after it
            ev, dev = score(self.spec, event)
            by = f"{event.method}: " if event.method else ""
            if _better(self.spec, ev, self.best):
                self.best, self.best_dev, self.best_label, self.best_method = ev, dev, event.label, event.method
                self.best_rep = event.replicas
                if ev.feasible:
                    self.note(f"incumbent {ev.objective:.6g} ({by}{event.label})")
            elif ev.feasible and self.unkept < UNKEPT_LOGGED:  # why a method's own answer is not the result
                self.unkept += 1
                last = " (further ones not logged)" if self.unkept == UNKEPT_LOGGED else ""
                self.note(f"not kept: {ev.objective:.6g} ({by}{event.label}), no better than the incumbent "
                          f"{self.best.objective:.6g}{last}")

    def has_feasible(self) -> bool:
        return self.best is not None and self.best.feasible

    def closed(self, rel: float) -> bool:
        """The incumbent meets the proven bound within the relative gap `rel`."""
        return self.has_feasible() and relative_gap(self.best.objective, self.bound) <= rel


def solve(spec: Spec, method: str | None = None, solver: str | None = None,
          time_limit: float | None = None, gap: float | None = None, seed: int | None = None,
          threads: int | None = None, warm_start: Mapping[str, str] | None = None,
          progress: Callable[[str], None] | None = None, options: Mapping[str, object] | None = None,
          executor=None) -> Result:  # type: ignore[no-untyped-def]
    """Solve `spec`; keyword arguments override its `solve` block. `options` are the
    method's own settings (e.g. {"population": 50} for brkga). `executor` (a
    concurrent.futures Executor, e.g. a Dask cluster's) runs a method's independent
    subproblems (MILP-SPLIT's modules)."""
    opts = spec.solve.merged(method=method, solver=solver, time_limit=time_limit, gap=gap,
                             seed=seed, threads=threads)
    m = lookup(opts.method, spec.objective.kind)
    check_routes(spec)  # a spec built in Python skips validate(): what no method models with levels and links
    log: list[str] = []
    method_opts = _checked_options(spec, m, method, options, opts, log)
    capabilities.check(spec, m.name, m.ignores, method_opts, lambda f: modelled_by(spec, f))
    if opts.solver:
        solver_registry.require(opts.solver)
        if not m.takes_solver:
            log.append(f"method {m.name} uses no MIP solver; solver {opts.solver} not needed")
    deadline = Deadline.after(opts.time_limit)
    share = deadline.share(BOUND_SHARE) if deadline.limited else deadline  # the method keeps the rest
    run = _Run(spec, trivial_bound(spec, share), log=log)
    if spec.objective.kind == "latency":  # every latency answer gets the path segmentation bound (kept per spec)
        from partdsl.kernels.latency.path_bound import path_bound

        run.bound = max(run.bound, path_bound(spec, seed=opts.seed or 0, deadline=share)[0])
    elif contiguous_applies(spec):  # a contiguous bottleneck gets its path bound (kept per spec)
        value = contiguous_path_bound(spec, seed=opts.seed or 0, deadline=share)
        if value > run.bound:
            run.bound = value
            run.log.append(f"proven bound {value:.6g}: the contiguous path bound (a path meets each device "
                           "in one run)")
    start = assignment_array(spec, warm_start) if warm_start else None
    view = class_view(spec)  # device-level pins as classes: the same devices, scored on `spec`

    def events() -> Iterator[Event]:
        if start is not None:
            yield Candidate("warm start", start)
        extra = {"start": start} if m.mip else {}  # a MIP method may use it as its MIP start
        if executor is not None:
            extra["executor"] = executor
        if m.portfolio:  # the method table, and the best answer so far (the members' MIP start)
            extra["methods"] = METHODS
            extra["incumbent"] = lambda: (run.best.objective, run.best_dev) if run.has_feasible() else None
        yield from m.run(view, seed=opts.seed or 0, deadline=deadline,  # a kernel's progress, live and logged
                         progress=lambda message: run.note(message, progress), solver=opts.solver,
                         gap=opts.gap, threads=opts.threads, **extra, **method_opts)

    rel = max(opts.gap if opts.gap is not None else 0.0, 1e-9)  # 1e-9: float summation order
    _consume(run, events(), m, deadline, rel, progress)
    ran = METHODS[run.best_method] if run.best_method else m  # a portfolio's: the member that won
    solver_name = (opts.solver or solver_registry.DEFAULT_SOLVER) if ran.mip else KERNEL_SOLVER
    return _result(run, m.name, solver_name, rel)


def _consume(run: _Run, events: Iterator[Event], m: Method, deadline: Deadline, rel: float,
             progress: Callable[[str], None] | None) -> None:
    """Read the method's events until it ends, the deadline passes, Ctrl-C, or the gap is
    met (`rel`, relative; exhaustive methods stay exact references: no other early stop)."""
    last_report = -math.inf  # report after the first candidate, then twice a second
    interrupt.clear()
    try:
        for event in events:
            run.take(event, progress)
            if isinstance(event, Proven):  # a proof may close the gap; the deadline is checked at candidates
                if run.closed(rel):  # (a MIP yields its bound, then its incumbent, past the deadline)
                    run.stopped = Termination.BOUND_REACHED
                    return
                continue
            if not isinstance(event, Candidate):
                continue
            if deadline.passed():
                run.stopped = Termination.TIME_LIMIT
                return
            if interrupt.requested():  # Ctrl-C while a solver ran: it handed back what it had
                run.stopped = Termination.INTERRUPTED
                return
            if progress and time.monotonic() - last_report > 0.5:
                last_report = time.monotonic()
                inc = f"{run.best.objective:.6g}" if run.has_feasible() else "none"
                progress(f"{run.count} candidates, incumbent {inc}, bound {run.bound:.6g}")
            if run.closed(rel):
                run.stopped = Termination.BOUND_REACHED
                return
        if interrupt.requested():
            run.stopped = Termination.INTERRUPTED
        elif deadline.passed():  # the method itself stopped at the deadline
            run.stopped = Termination.TIME_LIMIT
        elif m.exhaustive:
            run.stopped = Termination.EXHAUSTED
        elif run.budget_spent:
            run.stopped = Termination.BUDGET
    except (KeyboardInterrupt, SystemError) as e:  # Ctrl-C in a kernel: keep the best candidate so far
        if not interrupt.is_ctrl_c(e):
            raise
        run.stopped = Termination.INTERRUPTED
        interrupt.request()


def _result(run: _Run, method: str, solver: str, rel: float) -> Result:
    """The Result: what the run has (status, incumbent, bound, gap), kept apart from why it stopped."""
    spec, lb = run.spec, run.bound
    wall = time.monotonic() - run.t0
    unit = spec.objective.unit
    sense = spec.objective.sense
    run.log.append(f"{run.count} candidates evaluated; stopped: {run.stopped.value}")
    logs = "\n".join(run.solver_logs)
    if not run.has_feasible():
        proven_empty = math.isinf(lb) and sense == "min"  # nothing can be feasible
        status = Status.INFEASIBLE if run.stopped == Termination.EXHAUSTED or proven_empty else Status.NO_SOLUTION
        worst = 0.0 if sense == "max" else math.inf
        return Result(status, method, solver, worst, lb, math.inf, sense, unit,
                      wall, None, run.best, tuple(run.log), run.stopped, logs)
    best, dev = run.best, run.best_dev
    value = best.objective
    if run.stopped == Termination.EXHAUSTED:
        lb = value  # every assignment was scored: the incumbent is optimal
    g = relative_gap(value, lb)
    # near zero a relative gap means nothing: ABS_TOL absolute is the solvers' tolerance
    status = Status.OPTIMAL if g <= rel or abs(value - lb) <= ABS_TOL else Status.FEASIBLE
    # a node whose samples run on several devices has no one device: the schedule says where
    carrier = spec.dense.tensor_source >= 0  # they ride with their sources: left out
    assignment = None if (dev < 0).any() else {
        spec.dense.names[i]: spec.dense.devices[j] for i, j in enumerate(dev.tolist()) if not carrier[i]}
    run.log.append(f"best: {run.best_method + ': ' if run.best_method else ''}{run.best_label}")
    subgraphs = subgraph_map(spec, dev, best.subgraph) if spec.constraints.subgraphs > 1 else None
    schedule = best.schedule.to_json(spec) if best.schedule is not None else None
    reps = None
    if spec.constraints.replicate > 1:
        r = replica_factors(spec.dense, dev, run.best_rep)
        reps = {spec.dense.devices[j]: int(r[j]) for j in np.unique(dev) if r[j] > 1}
    return Result(status, method, solver, value, lb, g, sense, unit, wall, assignment, best, tuple(run.log),
                  run.stopped, logs, subgraphs, schedule, run.best_method or None, reps)

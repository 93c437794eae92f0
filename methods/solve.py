"""`solve(spec, method=...)`: the one entry point for Python users and the CLI.

A method is looked up in a table; it yields candidate assignments, each re-scored by the
evaluator (core/evaluate.py); the best feasible one becomes the incumbent, certified
against the best proven bound. The wall-clock budget is enforced here, not trusted to
a backend.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable, Iterator, Mapping

import numpy as np

from partdsl.core.assignment import subgraph_map
from partdsl.core.errors import PartError
from partdsl.core.evaluation import Evaluation
from partdsl.core.evaluate import evaluate
from partdsl.core.ir import OBJECTIVES, SCHEDULED, Spec
from partdsl.core.schedule import Schedule
from partdsl.core.schedule_eval import evaluate_schedule
from partdsl.core.events import Progress, Proven, SolverLog
from partdsl.kernels.bottleneck import baselines, ideal_dp, load_search, order_search, topo_split
from partdsl.kernels import brute_force, single_device
from partdsl.kernels.latency import fill as latency_greedy, search as latency_search
from partdsl.kernels.schedule import list_schedulers, search as schedule_search
from partdsl.kernels.peers import runners as peers
from partdsl.solvers import registry as backends
from partdsl.methods import exact, milp_split
from partdsl.runtime import interrupt
from partdsl.methods.bounds import bound as trivial_bound
from partdsl.core.result import Result, Status, relative_gap

MAX_LOAD = ("bottleneck", "latency")  # methods that optimize the max load (scored under latency); schedule
# objectives (DiviML) refuse them: an assignment cannot express a batch split, and max load is not makespan
Candidates = Iterator[tuple[str, np.ndarray] | tuple[str, np.ndarray, np.ndarray] | tuple[str, Schedule]]  # label, devices[, subgraphs] | label, schedule


@dataclass(frozen=True)
class Method:
    name: str
    run: Callable[..., Candidates]
    exhaustive: bool  # an exhausted run proves optimality / infeasibility
    about: str
    options: tuple[str, ...] = ()  # the method's own options (`population 100` in a solve block)
    mip: bool = False  # runs a MIP solver
    objectives: tuple[str, ...] = OBJECTIVES  # the objectives it optimizes (others are refused up front)


METHODS: dict[str, Method] = {m.name: m for m in (
    Method("topo", topo_split.run, False,
           "best of several topological-order splits, each split optimally by a DP (default)", objectives=MAX_LOAD),
    Method("slicegraph", order_search.slicegraph, False, "SliceGraph on Kahn's order (Archer sec. 4)",
           objectives=MAX_LOAD),
    Method("random", order_search.random_orders, False, "random-T: best SliceGraph of T random orders",
           ("samples",), objectives=MAX_LOAD),
    Method("brkga", order_search.brkga, False, "BRKGA over orders, decoded by SliceGraph",
           ("population", "generations"), objectives=MAX_LOAD),
    Method("mla", order_search.mla, False, "SliceGraph on a minimum linear arrangement order",
           ("population", "generations"), objectives=MAX_LOAD),
    Method("mla_weighted", order_search.mla_weighted, False,
           "SliceGraph on a tensor-weighted minimum linear arrangement order", ("population", "generations"),
           objectives=MAX_LOAD),
    Method("dp", ideal_dp.run, False, "DP over ideals: optimal contiguous splits (Tarnawski sec. 5.1.1)",
           objectives=("bottleneck",)),
    Method("exact", exact.run, False, "Archer's MTPP MIP (Fig. 3), Tarnawski's max-load IP (Fig. 6) or latency IP "
           "(Figs. 3-4), or the DiviML MILP (eqs. 1-7) for schedule objectives, with a MIP start",
           ("pyomo", "symmetry", "heuristics", "relax"), mip=True),
    Method("dpl", baselines.dpl, False, "the DP on one DFS linearization (Tarnawski's DPL)", objectives=MAX_LOAD),
    Method("pipedream", baselines.pipedream, False, "PipeDream's linear DP on a chain, accelerators only (baseline)",
           objectives=MAX_LOAD),
    Method("greedy", baselines.greedy, False, "fill devices in topological order up to an even share (baseline)",
           objectives=MAX_LOAD),
    Method("local_search", baselines.local_search, False, "single-node moves with restarts (baseline)",
           ("restarts", "passes"), objectives=MAX_LOAD),
    Method("load_search", load_search.run, False, "iterated local search on max load from the best topo split: "
           "unit moves scored by (max load, sum of squared loads), any split", ("stall",), objectives=MAX_LOAD),
    Method("single", single_device.run, False, "everything on one device (baseline)"),
    Method("fill", latency_greedy.run, False, "latency greedy: fill each accelerator in topological order up to "
           "its memory, the rest on CPUs (Tarnawski sec. 7, baseline)", objectives=MAX_LOAD),
    Method("latency_search", latency_search.run, False,
           "latency optimizer: chain DP over many topological orders, then iterated local search scored "
           "by the evaluator", ("restarts", "iterations", "stall"), objectives=("latency",)),
    Method("maxload_dp", latency_greedy.maxload_dp, False,
           "the max-load DP's split (Tarnawski sec. 5.1.1), scored for the spec's objective (baseline)",
           objectives=MAX_LOAD),
    Method("brute", brute_force.run, True, "exhaustive enumeration, exact, tiny graphs only"),
    Method("milp_split", milp_split.run, False, "MILP-SPLIT (DiviML sec. IV-B): the DiviML MILP per module "
           "(bridges, or k-edge-connected components for channels > 1), combined by a DP over the devices at "
           "each bridge, with the Remark's lower bound", ("channels", "module_limit", "workers", "min_module",
                                                         "bound_limit", "lookahead"), mip=True, objectives=SCHEDULED),
    *(Method(name, peers.run(name), False, f"{package} as a peer: k-way partition (edge weights = transfers, "
             "vertex weights = compute, one block per device), mapped to devices; -O repair=1 contracts colocation "
             "and fixes memory and placement by moves (baseline)", ("repair", "imbalance"))
      for name, (package, _, _) in peers.PEERS.items()),
    Method("met", list_schedulers.run("met"), False, "DiviML's MET (bMET under a batch): each node where it runs "
           "fastest, list-scheduled (baseline)", objectives=SCHEDULED),
    Method("eft", list_schedulers.run("eft"), False, "DiviML's Greedy (bGreedy under a batch): each node where it "
           "finishes earliest, in topological order (baseline)", objectives=SCHEDULED),
    Method("heft", list_schedulers.run("heft"), False, "HEFT (bHEFT under a batch): upward rank, earliest finish "
           "with insertion (DiviML sec. V-A baseline)", objectives=SCHEDULED),
    Method("sa", schedule_search.sa, False, "simulated annealing on DiviML's integer strings (a device per node, "
           "per chunk under a batch), breadth-first list schedules (baseline)", ("iterations",), objectives=SCHEDULED),
    Method("ea", schedule_search.ea, False, "DiviML's biased (1+1) EA on the same strings, from each chunk where "
           "it runs fastest (baseline)", ("iterations",), objectives=SCHEDULED),
)}
ALIASES = {"mla-weighted": "mla_weighted"}
DEFAULT_METHOD = "topo"
DEFAULT_SCHEDULE_METHOD = "heft"  # the default under a schedule objective (DiviML)
ABS_TOL = 1e-5  # ms: 10 ns, above HiGHS's default feasibility tolerances
KERNEL_SOLVER = "numpy"  # the solver reported by methods that run no MIP (NumPy kernels)


def assignment_array(spec: Spec, assignment: Mapping[str, str]) -> np.ndarray:
    from partdsl.core.assignment import to_array

    return to_array(spec, assignment)


def _better(spec: Spec, a: Evaluation, b: Evaluation | None) -> bool:
    if b is None:
        return True
    if a.feasible != b.feasible:
        return a.feasible
    return a.objective > b.objective if spec.objective.sense == "max" else a.objective < b.objective


def solve(spec: Spec, method: str | None = None, solver: str | None = None,
          time_limit: float | None = None, gap: float | None = None, seed: int | None = None,
          threads: int | None = None, warm_start: Mapping[str, str] | None = None,
          progress: Callable[[str], None] | None = None, options: Mapping[str, float] | None = None,
          executor=None) -> Result:  # type: ignore[no-untyped-def]
    """Solve `spec`; keyword arguments override its `solve` block. `options` are the
    method's own settings (e.g. {"population": 50} for brkga). `executor` (a
    concurrent.futures Executor, e.g. a Dask cluster's) runs a method's independent
    subproblems (MILP-SPLIT's modules)."""
    opts = spec.solve.merged(method=method, solver=solver, time_limit=time_limit, gap=gap,
                             seed=seed, threads=threads)
    name = opts.method or (DEFAULT_SCHEDULE_METHOD if spec.objective.scheduled else DEFAULT_METHOD)
    name = ALIASES.get(name, name)
    if name not in METHODS:
        raise PartError(f"unknown method '{name}'", None,
                        "methods: " + "; ".join(f"{m.name} ({m.about})" for m in METHODS.values()))
    m = METHODS[name]
    kind = spec.objective.kind
    if kind not in m.objectives:
        fits = ", ".join(x.name for x in METHODS.values() if kind in x.objectives and x.name != "brute")
        raise PartError(f"method {name} optimizes {' or '.join(m.objectives)}, and this spec has the {kind} "
                        "objective", None, f"methods for {kind}: {fits}")
    log: list[str] = []
    # options of the spec's solve block belong to its method: dropped if another is chosen
    spec_opts = dict(opts.options)
    if method is not None and ALIASES.get(method, method) != spec.solve.method:
        for key in [k for k in spec_opts if k not in m.options]:
            log.append(f"solve-block option '{key}' is not used by method {name}")
            del spec_opts[key]
    method_opts = {**spec_opts, **dict(options or {})}
    for key in method_opts:
        if key not in m.options:
            takes = ", ".join(m.options) if m.options else "no options"
            raise PartError(f"method {name} has no option '{key}'", None, f"method {name} takes {takes}")
    if opts.solver:
        backends.require(opts.solver)
        if not m.mip:
            log.append(f"method {name} uses no MIP solver; solver {opts.solver} not needed")
    solver_name = (opts.solver or exact.DEFAULT_SOLVER) if m.mip else KERNEL_SOLVER
    t0 = time.monotonic()
    deadline = t0 + opts.time_limit if opts.time_limit is not None else math.inf
    lb = trivial_bound(spec)
    if kind == "latency":  # every latency answer gets the path segmentation bound (kept per spec)
        from partdsl.kernels.latency.path_bound import path_bound

        lb = max(lb, path_bound(spec, seed=opts.seed or 0, deadline=deadline)[0])
    rel = max(opts.gap if opts.gap is not None else 0.0, 1e-9)  # 1e-9: float summation order
    best: Evaluation | None = None
    best_dev: np.ndarray | None = None
    best_sub: np.ndarray | None = None
    best_label = ""
    stopped = "all candidates tried"
    n_cand = 0

    def report(message: str) -> None:  # a kernel's progress, live
        log.append(f"{time.monotonic() - t0:8.3f}s  {message}")
        if progress:
            progress(message)

    start = assignment_array(spec, warm_start) if warm_start else None

    def candidates() -> Candidates:
        if start is not None:
            yield "warm start", start
        extra = {"start": start} if m.mip else {}  # a MIP method may use it as its MIP start
        if executor is not None:
            extra["executor"] = executor
        yield from m.run(spec, seed=opts.seed or 0, deadline=deadline, progress=report, solver=opts.solver,
                         gap=opts.gap, threads=opts.threads, **extra, **method_opts)

    last_report = -math.inf  # report after the first candidate, then twice a second
    solver_logs: list[str] = []
    interrupt.clear()
    try:
        for item in candidates():
            if isinstance(item, Progress):
                report(item.message)
                continue
            if isinstance(item, SolverLog):
                solver_logs.append(f"==== {item.solver} ====\n{item.text}")
                continue
            if isinstance(item, Proven):  # a kernel's proof that nothing beats item.bound
                lb = max(lb, item.bound) if spec.objective.sense == "min" else min(lb, item.bound)
                log.append(f"proven bound {item.bound:.6g}: {item.why}")
                continue
            n_cand += 1  # scored even past the deadline: a MIP's last incumbent arrives just after it
            if isinstance(item[1], Schedule):  # a DiviML schedule (pieces, starts): scored as it is
                label, sched = item
                ev = evaluate_schedule(spec, sched)
                dev, sub = sched.node_devices(spec.dense.n), None
            else:
                label, dev, sub = item if len(item) == 3 else (*item, None)
                ev = evaluate(spec, dev, sub)
            if _better(spec, ev, best):
                best, best_dev, best_label, best_sub = ev, dev, label, ev.subgraph
                if ev.feasible:
                    log.append(f"{time.monotonic() - t0:8.3f}s  incumbent {ev.objective:.6g} ({label})")
            if time.monotonic() > deadline:
                stopped = "time limit"
                break
            if interrupt.requested():  # Ctrl-C while a solver ran: it handed back what it had
                stopped = "interrupted"
                break
            if progress and time.monotonic() - last_report > 0.5:
                last_report = time.monotonic()
                inc = f"{best.objective:.6g}" if best and best.feasible else "none"
                progress(f"{n_cand} candidates, incumbent {inc}, bound {lb:.6g}")
            # stop early only on the relative gap: exhaustive methods stay exact references
            if best is not None and best.feasible and relative_gap(best.objective, lb) <= rel:
                stopped = "bound reached"
                break
        else:
            if interrupt.requested():
                stopped = "interrupted"
            elif time.monotonic() > deadline:  # the method itself stopped at the deadline
                stopped = "time limit"
            elif m.exhaustive and not spec.objective.scheduled:
                # under a schedule objective an assignment's list schedule is one schedule of many
                # (other orders on a device, other batchings, data-parallel splits): no proof
                stopped = "exhausted"
            elif m.exhaustive:
                log.append("every assignment tried, but list-scheduled: not a proof for a schedule objective")
    except (KeyboardInterrupt, SystemError) as e:  # Ctrl-C in a kernel: keep the best candidate so far
        if not interrupt.is_ctrl_c(e):
            raise
        stopped = "interrupted"
        interrupt.request()
    wall = time.monotonic() - t0
    unit = "samples/s" if spec.objective.kind == "throughput" else "ms"
    sense = spec.objective.sense
    log.append(f"{n_cand} candidates evaluated; stopped: {stopped}")
    if best is None or not best.feasible:
        proven_empty = math.isinf(lb) and spec.objective.sense == "min"  # nothing can be feasible
        status = Status.INFEASIBLE if stopped == "exhausted" or proven_empty else Status.NO_SOLUTION
        worst = 0.0 if sense == "max" else math.inf
        return Result(status, name, solver_name, worst, lb, math.inf, sense, unit,
                      wall, None, best, tuple(log), stopped, "\n".join(solver_logs))
    value = best.objective
    if stopped == "exhausted":
        lb = value  # every assignment was scored: the incumbent is optimal
    g = relative_gap(value, lb)
    # near zero a relative gap means nothing: ABS_TOL absolute is the solvers' tolerance
    status = Status.OPTIMAL if g <= rel or abs(value - lb) <= ABS_TOL else Status.FEASIBLE
    # a node whose samples run on several devices has no one device: the schedule says where
    assignment = None if (best_dev < 0).any() else {
        spec.dense.names[i]: spec.dense.devices[j] for i, j in enumerate(best_dev.tolist())}
    log.append(f"best: {best_label}")
    subgraphs = subgraph_map(spec, best_dev, best_sub) if spec.constraints.subgraphs > 1 else None
    schedule = best.schedule.to_json(spec) if best.schedule is not None else None
    return Result(status, name, solver_name, value, lb, g, sense, unit, wall,
                  assignment, best, tuple(log), stopped, "\n".join(solver_logs), subgraphs, schedule)


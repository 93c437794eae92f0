"""The lower-bound hierarchy of Archer et al. sec. 3 (`part bound`), as in their Table 1:
simple (Lemma 3.3), the LP relaxation of the exact MIP, the three-superblock
"bottleneck" MIP (sec. 3.2), "bottleneck-guess" (sec. 3.3: k independent MIPs, min over
the guesses; those a 1 s probe here leaves run concurrently in local processes) and the
exact MIP's dual bound, each with its wall time, next to the best solution found (topo,
dp where it is exact, the exact MIP's incumbent).

Every number is a proven lower bound: a MIP stopped by its time limit contributes its
dual bound, never its incumbent; a relaxation that could not be solved is reported as
such, with no value. Specs outside MTPP (several device classes, no `acyclic`) get
simple, LP (of Tarnawski's IP, with its stage rows under `acyclic`) and exact; the
superblock bounds say why they do not apply.
"""
from __future__ import annotations

import math
import time
from concurrent.futures import Executor
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np
from partdsl.core.errors import PartError
from partdsl.core.ir import Spec
from partdsl.core.result import Result, Status, Termination
from partdsl.methods.bounds import bound as trivial_bound
from partdsl.methods.exact import solve_mtpp_variant
from partdsl.models import mtpp
from partdsl.models.formulations import formulation_for
from partdsl.runtime import interrupt
from partdsl.runtime.executor import job_threads, run_all
from partdsl.solvers.highs_matrix import solve_highs
from partdsl.solvers.outcome import MipOutcome
from partdsl.solvers.registry import require

NAMES = ("simple", "lp", "bottleneck", "bottleneck_guess", "exact")


@dataclass(frozen=True)
class BoundEntry:
    name: str
    value: float | None  # a proven lower bound on the optimum; None if not applicable / not solved
    seconds: float
    solved: bool  # the relaxation was solved to optimality (else: a dual bound at a limit)
    note: str = ""
    mip_seconds: float | None = None  # bottleneck-guess: its k MIPs' times summed (they run concurrently)

    def to_json(self) -> dict:
        v = self.value
        return {"value": None if v is None else (v if math.isfinite(v) else "inf"),
                "seconds": round(self.seconds, 3), "solved": self.solved, "note": self.note} \
            | ({} if self.mip_seconds is None else {"mip_seconds": round(self.mip_seconds, 3)})


@dataclass(frozen=True)
class Hierarchy:
    best: float  # the best solution value found (inf if none)
    best_method: str
    bounds: dict[str, BoundEntry] = field(default_factory=dict)
    proven: bool = False  # the best solution is a proven optimum (dp under `acyclic`, or a solved MIP)
    assignment: dict[str, str] | None = None
    interrupted: bool = False  # Ctrl-C: the bounds after it were not computed

    def fraction(self, name: str) -> float | None:
        e = self.bounds.get(name)
        if e is None or e.value is None or not math.isfinite(self.best) or self.best <= 0:
            return None
        return e.value / self.best

    def to_json(self) -> dict:
        return {"best": self.best if math.isfinite(self.best) else None, "best_method": self.best_method,
                "best_proven_optimal": self.proven, "interrupted": self.interrupted,
                "bounds": {k: {**e.to_json(), "fraction": self.fraction(k)} for k, e in self.bounds.items()},
                "assignment": self.assignment}


def _why(e: PartError) -> str:
    return e.message.split("does not fit this spec: ")[-1]


REPLICAS = "the relaxations model no replicated stages (`replicate <= r`)"


def is_mtpp(spec: Spec) -> str | None:
    """None if the spec is an MTPP instance, else why not."""
    if spec.constraints.replicate > 1:
        return REPLICAS
    try:
        mtpp.check(spec)
    except PartError as e:
        return _why(e)
    return None


def mip_bound(outcome: MipOutcome, floor: float = -math.inf) -> float:
    if outcome.status == Status.INFEASIBLE:
        return math.inf
    b = outcome.bound if outcome.status != Status.OPTIMAL else min(outcome.bound, outcome.objective)
    return max(float(b), floor) if np.isfinite(b) else floor


def _guess(spec: Spec, j: int, deadline: float, solver: str | None, threads: int | None,
           floor: float) -> tuple[int, float, bool, float]:
    """LB_j of sec. 3.3, its dual bound if the wall-clock deadline stops it (time.time(), not
    a Deadline: the guesses run in other processes, perhaps on other machines of a cluster);
    never below `floor`, a bound every LB_j is known to meet. Last: its seconds."""
    t = time.monotonic()
    left = deadline - time.time()
    L = max(mtpp.simple_bound(spec), floor)
    if left <= 0:
        return j, L, False, time.monotonic() - t
    out = solve_mtpp_variant(spec, mtpp.Variant("guess", j), solver, None if math.isinf(left) else left, 0.0, threads)
    return j, mip_bound(out, L), out.status in (Status.OPTIMAL, Status.INFEASIBLE), time.monotonic() - t


SPAWN_SECONDS = 1.0  # about what a spawned worker takes to start (Python, NumPy, SciPy, partdsl)


def bottleneck_guess(spec: Spec, time_limit: float | None = None, solver: str | None = None,
                     threads: int | None = None, workers: int | None = None,
                     progress: Callable[[str], None] | None = None, floor: float = -math.inf,
                     executor: Executor | None = None) -> tuple[float, bool, float]:
    """min_j LB_j over the k guesses, whether all were solved, and their seconds summed.
    The k MIPs run on `executor` if given (any concurrent.futures Executor: threads,
    processes, a cluster's), else in `workers` local processes (1: in this process; by
    default they run here one after another for up to SPAWN_SECONDS, about what starting
    processes for them would take, and those left, with the one the probe stopped, on one
    process per core).
    `time_limit` is the wall-clock budget of the whole set. `floor`: a proven bound of the
    three-superblock MIP, which every LB_j meets (each LB_j MIP is that MIP with more
    constraints and a larger objective), so a guess stopped by the limit never reports less."""
    k = spec.platform.classes[0].count
    deadline = time.time() + time_limit if time_limit is not None else math.inf
    results: dict[int, tuple[float, bool, float]] = {}

    def record(j: int, b: float, ok: bool, secs: float) -> None:
        results[j] = (b, ok, secs)
        if progress:
            progress(f"bottleneck-guess j={j} done ({len(results)}/{k}): {b:.6g}")

    first, probed = 1, (0, -math.inf, 0.0)
    if executor is None and workers is None:  # the probe: guesses here, one after another, for SPAWN_SECONDS
        probe = min(deadline, time.time() + SPAWN_SECONDS)
        while first <= k:
            _, b, ok, secs = _guess(spec, first, probe, solver, threads, floor)
            if not (ok or probe >= deadline or interrupt.requested()):  # stopped by the probe: to the cores
                probed = (first, b, secs)  # it runs again with the others, keeping the better dual bound
                break
            record(first, b, ok, secs)  # after Ctrl-C all run here, where the flag stops each at once
            first += 1
    left = range(first, k + 1)
    per_threads = job_threads(threads, workers, executor, len(left))
    jobs = [(spec, j, deadline, solver, per_threads, floor) for j in left]
    for _, (j, b, ok, secs) in run_all(_guess, jobs, workers, executor):
        record(j, *((max(b, probed[1]), ok, secs + probed[2]) if j == probed[0] else (b, ok, secs)))
    return (min(b for b, _, _ in results.values()), all(ok for _, ok, _ in results.values()),
            sum(s for _, _, s in results.values()))


def lp_bound(spec: Spec, time_limit: float | None = None) -> tuple[float | None, bool]:
    """The LP relaxation of the exact formulation (HiGHS simplex); None if not solved."""
    mip, _ = formulation_for(spec).build(spec, None, 0)
    out = solve_highs(replace(mip, integer=np.zeros_like(mip.integer)), time_limit)
    if out.status == Status.INFEASIBLE:
        return math.inf, True
    if out.status != Status.OPTIMAL:
        return None, False
    return float(out.objective), True


def _exact_entry(r: Result, note: str, floor: tuple[str, float] | None = None) -> BoundEntry:
    """The exact row from a MIP's Result: its dual bound, solved unless stopped early. A MIP
    stopped by its limit reports at least `floor` (name, value): a bound of the hierarchy
    below the optimum (Archer sec. 3: each relaxes the exact MIP), so a short limit never
    shows the exact bound under a weaker one."""
    solved = r.status in (Status.OPTIMAL, Status.INFEASIBLE) and r.stopped != Termination.INTERRUPTED
    value = r.bound
    if floor is not None and not solved and math.isfinite(floor[1]) and floor[1] > value:
        name = floor[0].replace("_", "-")
        value, note = floor[1], note + f", at least the {name} bound (its dual bound: {r.bound:.6g})"
    return BoundEntry("exact", value, r.wall_time_s, solved,
                      note + (": interrupted" if r.stopped == Termination.INTERRUPTED else ""))


@dataclass
class _Found:
    """The best solution so far, and dp's proven optimum under `acyclic` (value, seconds)."""
    best: float = math.inf
    method: str = "none"
    assignment: dict[str, str] | None = None
    proven: bool = False
    dp: tuple[float, float] | None = None

    def consider(self, r, label: str) -> None:  # type: ignore[no-untyped-def]
        if r.status.has_solution() and r.objective < self.best:
            self.best, self.method, self.assignment = r.objective, label, r.assignment
        self.proven = self.proven or r.status.value == "optimal"
        if label == "dp" and r.status.value == "optimal":
            self.dp = (r.bound, r.wall_time_s)


def hierarchy(spec: Spec, time_limit: float | None = None, solver: str | None = None,
              threads: int | None = None, workers: int | None = None, seed: int = 0,
              progress: Callable[[str], None] | None = None, only: tuple[str, ...] = NAMES,
              executor: Executor | None = None) -> Hierarchy:
    """Every bound of the hierarchy that applies to `spec` (each MIP gets `time_limit`),
    and the best solution found by topo, dp (exact under `acyclic`) and the exact MIP.
    The bottleneck-guess MIPs run on `executor` if given (see bottleneck_guess). Ctrl-C
    stops it: the bounds computed so far are kept, the others say so."""
    if spec.platform.routed and spec.objective.kind in ("bottleneck", "latency"):
        raise PartError("`part bound` runs relaxations and exact methods that model no server levels or direct "
                        "links", spec.platform.routes_span, "use `part solve`: its certificate uses bounds that hold "
                        "on every route")
    if spec.objective.kind == "latency":
        return latency_hierarchy(spec, time_limit, solver, threads, seed, say=progress or (lambda _m: None))
    if spec.objective.kind != "bottleneck":
        raise PartError("`part bound` computes the lower-bound hierarchy for the bottleneck and latency "
                        "objectives", None, "use `part solve` for batched throughput (it prints a bound too)")
    if solver is not None:
        require(solver)  # an unknown or missing solver is the caller's to fix, not a bound to skip
    say = progress or (lambda _m: None)
    not_mtpp = is_mtpp(spec)
    bounds: dict[str, BoundEntry] = {}
    t = time.monotonic()
    simple = mtpp.simple_bound(spec) if not_mtpp is None else trivial_bound(spec)
    bounds["simple"] = BoundEntry("simple", max(simple, 0.0), time.monotonic() - t, True,
                                  "Lemma 3.3" if not_mtpp is None else "cheapest compute per device")
    say(f"simple: {simple:.6g}")
    found = _Found()
    interrupt.clear()
    try:
        _compute(spec, bounds, found, say, progress, only, not_mtpp, simple, time_limit, solver, threads,
                 workers, seed, executor)
    except (KeyboardInterrupt, SystemError) as e:  # Ctrl-C between solver runs (inside one, it stops and returns)
        if not interrupt.is_ctrl_c(e):
            raise
        interrupt.request()
    stopped = interrupt.requested()
    for name in NAMES:
        if stopped and name in only and name not in bounds:
            bounds[name] = BoundEntry(name, None, 0.0, False, "not computed: interrupted")
    _below_best(bounds, found.best)
    return Hierarchy(found.best, found.method, bounds, found.proven, found.assignment, stopped)


def _below_best(bounds: dict[str, BoundEntry], best: float) -> None:
    """The best solution is an upper bound on the optimum: no proven bound may pass it."""
    if not math.isfinite(best):
        return
    for e in bounds.values():
        if e.value is not None and math.isfinite(e.value) and e.value > best * (1 + 1e-6) + 1e-6:
            raise AssertionError(f"bound {e.name} = {e.value} exceeds a solution of value {best}")


def _compute(spec: Spec, bounds: dict[str, BoundEntry], found: _Found, say: Callable[[str], None],
             progress: Callable[[str], None] | None, only: tuple[str, ...], not_mtpp: str | None, simple: float,
             time_limit: float | None, solver: str | None, threads: int | None, workers: int | None,
             seed: int, executor: Executor | None) -> None:
    """The solutions and the bounds after `simple`, in order of cost, until done or Ctrl-C."""
    from partdsl.methods.solve import solve

    stop = interrupt.requested
    try:
        found.consider(solve(spec, method="topo", seed=seed, time_limit=time_limit), "topo")
    except PartError:  # topo does not model the spec (stashes, shared weights, interleaving): the portfolio does
        found.consider(solve(spec, method="auto", seed=seed, time_limit=time_limit or 10.0), "auto")
    if spec.constraints.replicate > 1:  # no MIP or LP here models replicas: their bounds would not hold
        for name in ("lp", "bottleneck", "bottleneck_guess", "exact"):
            if name in only:
                bounds[name] = BoundEntry(name, None, 0.0, False, f"not applicable: {REPLICAS}")
        return
    if spec.constraints.acyclic and not stop():
        try:
            found.consider(solve(spec, method="dp", seed=seed, time_limit=time_limit), "dp")
        except PartError as e:  # too many ideals: dp refuses up front
            say(f"dp skipped: {e.message}")
    say(f"best heuristic: {found.best:.6g} ({found.method})")
    if "lp" in only and not stop():
        t = time.monotonic()
        try:
            v, ok = lp_bound(spec, time_limit)
        except PartError as e:
            bounds["lp"] = BoundEntry("lp", None, 0.0, False, f"not applicable: {_why(e)}")
        else:
            bounds["lp"] = BoundEntry("lp", v, time.monotonic() - t, ok,
                                      "LP relaxation of " + ("Fig. 3" if not_mtpp is None else "Tarnawski's IP")
                                      + ("" if ok else ": not solved within the limit"))
            say(f"lp: {v}")
    for name in ("bottleneck", "bottleneck_guess"):
        if name not in only or stop():
            continue
        if not_mtpp is not None:
            bounds[name] = BoundEntry(name, None, 0.0, False, f"not applicable: {not_mtpp}")
            continue
        t, mip = time.monotonic(), None
        if name == "bottleneck":
            out = solve_mtpp_variant(spec, mtpp.Variant("bottleneck"), solver, time_limit, 0.0, threads)
            v, ok = mip_bound(out, simple), out.status in (Status.OPTIMAL, Status.INFEASIBLE)
            note = "sec. 3.2, three superblocks"
        else:
            below = bounds.get("bottleneck")
            floor = below.value if below is not None and below.value is not None else -math.inf
            v, ok, mip = bottleneck_guess(spec, time_limit, solver, threads, workers, progress, floor, executor)
            note = f"sec. 3.3, min over {spec.platform.classes[0].count} guesses ({mip:.3g} s of MIPs in all)"
            if not ok and math.isfinite(floor):
                note += ", each at least the bottleneck bound"
        bounds[name] = BoundEntry(name, v, time.monotonic() - t, ok, note + ("" if ok else ": dual bound at the limit"),
                                  mip)
        say(f"{name}: {v:.6g}")
    if "exact" in only and not stop():
        try:
            r = solve(spec, method="exact", solver=solver, time_limit=time_limit, threads=threads, seed=seed,
                      warm_start=found.assignment)  # the best solution so far is the MIP start
        except PartError as e:
            if found.dp is not None:  # under `acyclic` the DP over ideals is the exact method
                bounds["exact"] = BoundEntry("exact", found.dp[0], found.dp[1], True,
                                             f"DP over ideals (Tarnawski sec. 5.1.1); no MIP: {_why(e)}")
            else:
                bounds["exact"] = BoundEntry("exact", None, 0.0, False, f"not applicable: {_why(e)}")
        else:
            found.consider(r, "exact")
            floors = [(n, bounds[n].value) for n in ("bottleneck", "bottleneck_guess")
                      if n in bounds and bounds[n].value is not None]
            bounds["exact"] = _exact_entry(r, "Fig. 3" if not_mtpp is None else "Tarnawski's IP (Fig. 6)",
                                           max(floors, key=lambda f: f[1], default=None))
            say(f"exact: {r.bound:.6g}")


LATENCY_NAMES = ("critical_path", "path_segmentation", "lp", "exact")


def latency_hierarchy(spec: Spec, time_limit: float | None, solver: str | None, threads: int | None,
                      seed: int, say: Callable[[str], None]) -> Hierarchy:
    """Latency bounds (Tarnawski sec. 4), weakest first: the critical path at each node's
    cheapest time; the path segmentation bound (kernels/latency/path_bound.py: memory, contiguity
    and the transfers a cut forces); the LP relaxation of the latency IP (Figs. 3-4, H from
    the best split found); the IP's dual bound. The best solution: latency_search, fill and
    the IP's incumbent."""
    from partdsl.kernels.latency.path_bound import path_bound
    from partdsl.methods.solve import solve
    from partdsl.models import latency as latency_ip

    if solver is not None:
        require(solver)
    bounds: dict[str, BoundEntry] = {}
    t = time.monotonic()
    cp = trivial_bound(spec)
    bounds["critical_path"] = BoundEntry("critical_path", cp, time.monotonic() - t, True,
                                         "each node at its cheapest allowed time")
    t = time.monotonic()
    pb, path = path_bound(spec, seed=seed)
    bounds["path_segmentation"] = BoundEntry("path_segmentation", max(pb, cp), time.monotonic() - t, True,
                                             f"best of the paths tried ({len(path)} nodes)")
    say(f"path segmentation: {pb:.6g}")
    found = _Found()
    found.consider(solve(spec, method="fill", seed=seed), "fill")
    found.consider(solve(spec, method="latency_search", seed=seed, time_limit=time_limit), "latency_search")
    say(f"best heuristic: {found.best:.6g} ({found.method})")
    t = time.monotonic()
    mip, _ = latency_ip.build(spec, found.best)
    out = solve_highs(replace(mip, integer=np.zeros_like(mip.integer)), time_limit)
    lp = float(out.objective) if out.status == Status.OPTIMAL else None
    bounds["lp"] = BoundEntry("lp", lp, time.monotonic() - t, lp is not None,
                              f"LP relaxation of the latency IP (Figs. 3-4), H = {found.best:.6g}")
    r = solve(spec, method="exact", solver=solver, time_limit=time_limit, threads=threads, seed=seed,
              warm_start=found.assignment)
    found.consider(r, "exact")
    bounds["exact"] = _exact_entry(r, "latency IP (Figs. 3-4) with the path bound as a floor")
    _below_best(bounds, found.best)
    return Hierarchy(found.best, found.method, bounds, found.proven, found.assignment, False)

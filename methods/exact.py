"""Method `exact`: the objective's MIP from the formulation table (models/formulations.py)
- Archer's MTPP MIP (Fig. 3) for identical stages under `acyclic`, Tarnawski's max-load
IP (Fig. 6) otherwise, Tarnawski's latency IP (Figs. 3-4), the DiviML MILP (eqs. 1-7) -
seeded with a MIP start found by the kernels in a share of the time limit
(methods/mip_start.py), which also sets the horizon H of the latency IP and the DiviML
MILP. Under contiguity the non-contiguous max-load IP runs first, for a proven bound.
HiGHS and SCIP take the direct matrix path; `pyomo 1` (or a solver only Pyomo drives:
gurobi, cplex, cbc) builds the Pyomo twin. One loop for every row: start, build, encode,
solve, decode; it yields the incumbents for the evaluator and the solver's dual bound as
a proven bound (never passed off as an optimum: solve() compares it with the re-scored
incumbent)."""
from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import Callable, Generator, Iterator

import numpy as np
from partdsl.core.errors import PartError
from partdsl.core.events import Candidate, Event, Proven, SolverLog
from partdsl.core.ir import Spec
from partdsl.core.result import Status, relative_gap
from partdsl.methods.mip_start import best_start, latency_start, mip_start, schedule_start
from partdsl.models import mtpp
from partdsl.models.formulations import MAXLOAD, Formulation, formulation_for
from partdsl.runtime.deadline import NEVER, Deadline
from partdsl.solvers import registry
from partdsl.solvers.dispatch import solve_matrix, solve_pyomo_model
from partdsl.solvers.outcome import MipOutcome

Start = Generator[Event, None, tuple[Candidate | None, float]]


def _bottleneck_start(spec: Spec, seed: int, deadline: Deadline, given: np.ndarray | None,
                      progress: Callable[[str], None] | None) -> Start:
    return (yield from mip_start(spec, seed, deadline, given, progress))


STARTS: dict[str, Callable[..., Start]] = {"mtpp": _bottleneck_start, "maxload": _bottleneck_start,
                                            "latency": latency_start, "diviml": schedule_start}


def run(spec: Spec, seed: int = 0, deadline: Deadline = NEVER, progress: Callable[[str], None] | None = None,
        solver: str | None = None, gap: float | None = None, threads: int | None = None,
        pyomo: float = 0, symmetry: float = 0, heuristics: float = 0.2, relax: float = 0.3,
        start: np.ndarray | None = None, **_: object) -> Iterator[Event]:
    """`start`: the caller's warm start, the MIP start when it beats the kernels' best.
    `heuristics`: the share of the time limit spent finding the MIP start. `relax`: under
    contiguity, the share of the time left spent on the non-contiguous relaxation first.
    `symmetry`: the symmetry rows among identical devices (max-load IP; DiviML sec. V-E)."""
    f = formulation_for(spec)
    f.check(spec)
    solver = solver or registry.DEFAULT_SOLVER
    via_pyomo = not registry.uses_matrix(solver, bool(pyomo))
    if via_pyomo and symmetry and not f.pyomo_symmetry:
        raise PartError(f"symmetry breaking for {f.title} is on the matrix path only", None,
                        "use --solver highs or scip without -O pyomo=1, or drop -O symmetry")
    if via_pyomo and not f.pyomo_routes:
        from partdsl.models.pyomo_rules import flat_only

        flat_only(spec, f.title)
    name = registry.display(solver, via_pyomo)
    best, value = yield from STARTS[f.name](spec, seed, deadline.share(heuristics), start, progress)
    # under `acyclic` (not on training graphs) every split it takes is contiguous: no relaxation to run
    relaxes = spec.constraints.contiguous and (not spec.constraints.acyclic or spec.graph.is_training)
    if f is MAXLOAD and relaxes and relax > 0 and deadline.limited:
        floor = yield from _relaxation(spec, seed, solver, via_pyomo, deadline.share(relax), heuristics, gap,
                                       threads, best, progress, name)
        if floor == math.inf or relative_gap(value, floor) <= (gap or 0.0):
            return  # no split at all, so no contiguous one; or the relaxation's bound certifies the start
    safe = f.safe_horizon(spec)  # None: a MIP without a horizon (the bottleneck's)
    H = None if safe is None else value if math.isfinite(value) else safe
    t0 = time.monotonic()
    out, decode = _solve(spec, f, solver, via_pyomo, deadline, gap, threads, best, H, int(symmetry), progress)
    if progress:
        progress(f"{name}: {out.why} after {time.monotonic() - t0:.1f} s")
    yield SolverLog(name, out.log)
    found = decode() if out.status.has_solution() else None
    # the bound first: a caller past its deadline stops reading after the next candidate
    proof = _proof(spec, f, out, found, value, best is not None, H is not None, name)
    if proof is not None:
        yield proof
    if found is not None:
        yield replace(found, label=f"{f.label} ({name}: {out.why})")


def _proof(spec: Spec, f: Formulation, out: MipOutcome, found: Candidate | None, value: float, started: bool,
           horizon: bool, name: str) -> Proven | None:
    """What the solver's answer proves. An infeasible MIP proves the spec infeasible only
    when its horizon did not come from a start (then it means nothing better than the start
    exists inside the MIP's space, which the start's own value already says)."""
    if not horizon:  # the bottleneck MIPs
        if out.status == Status.INFEASIBLE:
            return Proven(math.inf, f"{name} proved the MIP infeasible")
        return Proven(float(out.bound), f"{name} dual bound ({out.why})") if np.isfinite(out.bound) else None
    if out.status == Status.INFEASIBLE:
        if started:
            return None
        return Proven(math.inf if spec.objective.sense == "min" else 0.0, f"{name} proved {f.title} infeasible")
    if not np.isfinite(out.bound):
        return None
    C = min(float(out.bound), value)
    if f.name == "latency":
        return Proven(C, f"{name} dual bound ({out.why})")
    from partdsl.evaluator.schedule_eval import as_makespan, as_objective, evaluate_schedule

    if out.status == Status.OPTIMAL and found is not None:  # optimal within the solver's relative tolerance
        ev = evaluate_schedule(spec, found.schedule)
        mine = as_makespan(spec, ev.objective) if ev.feasible else math.inf
        # relative only: an absolute 1e-6 ms snapped a dual bound of 1.1e-72 ms up to a schedule of
        # 3.7e-72 ms, twice the optimum (found by the oracle; its throughput bound was then too low)
        if abs(mine - C) <= 1e-6 * abs(C):
            C = mine
    return Proven(as_objective(spec, C), f"{name} dual bound on the makespan, {C:.6g} ms ({out.why})")


def _solve(spec: Spec, f: Formulation, solver: str, via_pyomo: bool, deadline: Deadline, gap: float | None,
           threads: int | None, start: Candidate | None, H: float | None, symmetry: int,
           progress: Callable[[str], None] | None) -> tuple[MipOutcome, Callable[[], Candidate]]:
    """Build the row's model on the solver's path, start it from `start`, solve it within
    the deadline: the outcome, and how to decode its solution."""
    if via_pyomo:
        m = f.pyomo_build(spec, H)
        warm = start is not None and f.pyomo_warm(spec, m, start)
        out = solve_pyomo_model(m, solver, deadline, gap, threads, warm)
        return out, lambda: f.pyomo_decode(spec, m)
    mip, vm = f.build(spec, H, symmetry)
    x0 = f.encode(spec, vm, start, symmetry) if start is not None else None
    if progress:
        what = "" if H is None else (f" (latency IP, H = {vm.H:.6g})" if f.name == "latency" else
                                     f" (DiviML MILP, H = {H:.6g} ms)")
        progress(f"{registry.display(solver)} on {mip.A.shape[0]:,} rows x {mip.A.shape[1]:,} columns{what}")
    out = solve_matrix(mip, solver, deadline, gap, threads, x0, progress)
    return out, lambda: f.decode(spec, vm, out.x)


def _relaxation(spec: Spec, seed: int, solver: str, via_pyomo: bool, deadline: Deadline, heuristics: float,
                gap: float | None, threads: int | None, start: Candidate | None,
                progress: Callable[[str], None] | None, name: str) -> Generator[Event, None, float]:
    """Tarnawski's IP without contiguity, whose dual bound is a lower bound for the
    contiguous problem (every contiguous split is a split). It gets its own MIP start (the
    contiguous start polished without contiguity: HiGHS's bound moved far faster from it
    on BERT-24); its splits are not contiguous and are not yielded."""
    relaxed = replace(spec, constraints=replace(spec.constraints, contiguous=False))
    if progress:
        progress(f"the non-contiguous relaxation first, for a lower bound ({deadline.left():.0f} s)")
    if start is not None:
        dev = best_start(relaxed, seed, deadline.share(heuristics), start.devices, progress)[0]
        start = Candidate("start", dev) if dev is not None else None
    out, _ = _solve(relaxed, MAXLOAD, solver, via_pyomo, deadline, gap, threads, start, None, 0, progress)
    yield SolverLog(f"{name}, non-contiguous relaxation", out.log)
    if out.status == Status.INFEASIBLE:
        yield Proven(math.inf, f"{name} proved the non-contiguous relaxation infeasible")
        return math.inf
    if not np.isfinite(out.bound):
        return -math.inf
    if progress:
        progress(f"non-contiguous relaxation: bound {out.bound:.6g} ({out.why})")
    yield Proven(float(out.bound), f"{name} dual bound of the non-contiguous relaxation ({out.why})")
    return float(out.bound)


def solve_mtpp_variant(spec: Spec, variant: mtpp.Variant, solver: str | None, time_limit: Deadline | float | None,
                       gap: float | None, threads: int | None) -> MipOutcome:
    """Archer's MIP or one of its relaxations (sec. 3.2-3.3) on any solver: the matrix
    model on HiGHS and SCIP, the Pyomo reference model on the others."""
    solver = solver or registry.DEFAULT_SOLVER
    if registry.uses_matrix(solver):
        return solve_matrix(mtpp.build(spec, variant)[0], solver, time_limit, gap, threads)
    from partdsl.models import pyomo_mtpp

    return solve_pyomo_model(pyomo_mtpp.build(spec, variant), solver, time_limit, gap, threads)

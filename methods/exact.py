"""Method `exact`: Archer's MTPP MIP (models/mtpp.py) for identical stages under
`acyclic`, Tarnawski's max-load IP (models/maxload.py) otherwise, seeded with a MIP
start: the best of topo, the caller's warm start and (under contiguity) dp, polished by
the load search (methods/mip_start.py), in a share of the time limit. Under contiguity
the non-contiguous relaxation runs first, for a proven bound. HiGHS and SCIP take the
direct matrix path (scipy.sparse -> highspy / PySCIPOpt); `pyomo 1` (or a solver only Pyomo drives: gurobi, cplex, cbc)
builds the Pyomo reference model instead (models/pyomo_*.py, solvers/pyomo_adapter.py).
Yields the incumbent(s) for the evaluator and the solver's dual bound as a proven bound
(a bound, never passed off as an optimum: solve() compares it with the re-scored
incumbent)."""
from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import Callable, Generator, Iterator

import numpy as np
from partdsl.core.deadline import NEVER, Deadline
from partdsl.core.events import Candidate, Proven, SolverLog
from partdsl.core.ir import Spec
from partdsl.core.result import Status, relative_gap
from partdsl.methods.mip_start import best_start, mip_start
from partdsl.models import latency, maxload, mtpp
from partdsl.solvers.dispatch import solve_matrix, solve_pyomo_model
from partdsl.solvers.outcome import MipOutcome

DEFAULT_SOLVER = "highs"
MATRIX_SOLVERS = ("highs", "scip")
NAMES = {"highs": "HiGHS", "scip": "SCIP", "gurobi": "Gurobi", "cplex": "CPLEX", "cbc": "CBC"}


def run(spec: Spec, seed: int = 0, deadline: Deadline = NEVER, progress: Callable[[str], None] | None = None,
        solver: str | None = None, gap: float | None = None, threads: int | None = None,
        pyomo: float = 0, symmetry: float = 0, heuristics: float = 0.2, relax: float = 0.3,
        start: np.ndarray | None = None, **_: object) -> Iterator:
    """`start`: the caller's warm start, the MIP start when it beats the kernels' best.
    `heuristics`: the share of the time limit spent finding the MIP start. `relax`: under
    contiguity, the share of the time left spent on the non-contiguous relaxation first."""
    solver = solver or DEFAULT_SOLVER
    via_pyomo = bool(pyomo) or solver not in MATRIX_SOLVERS
    if spec.objective.kind == "latency":
        yield from _latency(spec, seed, deadline, progress, solver, via_pyomo, gap, threads, heuristics, start)
        return
    if spec.objective.scheduled:
        yield from _schedule(spec, seed, deadline, progress, solver, via_pyomo, gap, threads, heuristics,
                             int(symmetry))
        return
    model = formulation(spec)
    model.check(spec)
    start_dev, start_value = yield from mip_start(spec, seed, deadline.share(heuristics), start, progress)
    name = NAMES.get(solver, solver) + (" via Pyomo" if via_pyomo else "")
    if model is maxload and spec.constraints.contiguous and relax > 0 and deadline.limited:
        floor = yield from _relaxation(spec, seed, solver, via_pyomo, deadline.share(relax), heuristics, gap,
                                       threads, start_dev, progress, name)
        if floor == math.inf:
            return  # no split at all, so no contiguous one
        if relative_gap(start_value, floor) <= (gap or 0.0):
            return  # the relaxation's bound certifies the start: nothing left for the MIP
    t0 = time.monotonic()
    if via_pyomo:
        out, decode = _pyomo(spec, model, solver, deadline, gap, threads, start_dev)
    else:
        out, decode = _matrix(spec, model, solver, deadline, gap, threads, start_dev, progress, bool(symmetry))
    if progress:
        progress(f"{name}: {out.why} after {time.monotonic() - t0:.1f} s")
    yield SolverLog(name, out.log)
    # the bound first: a caller past its deadline stops reading after the next assignment
    if out.status == Status.INFEASIBLE:
        yield Proven(math.inf, f"{name} proved the MIP infeasible")
    elif np.isfinite(out.bound):
        yield Proven(float(out.bound), f"{name} dual bound ({out.why})")
    if out.status.has_solution():
        yield Candidate(f"exact MIP ({name}: {out.why})", decode())


def _relaxation(spec: Spec, seed: int, solver: str, via_pyomo: bool, deadline: Deadline, heuristics: float,
                gap: float | None, threads: int | None, start_dev: np.ndarray | None,
                progress: Callable[[str], None] | None, name: str) -> Generator[Proven | SolverLog, None, float]:
    """Tarnawski's IP without contiguity, whose dual bound is a lower bound for the
    contiguous problem (every contiguous split is a split). It gets its own MIP start (the
    contiguous start polished without contiguity: HiGHS's bound moved far faster from it
    on BERT-24); its splits are not contiguous and are not yielded."""
    relaxed = replace(spec, constraints=replace(spec.constraints, contiguous=False))
    if progress:
        progress(f"the non-contiguous relaxation first, for a lower bound ({deadline.left():.0f} s)")
    if start_dev is not None:
        start_dev = best_start(relaxed, seed, deadline.share(heuristics), start_dev, progress)[0]
    if via_pyomo:
        out, _ = _pyomo(relaxed, maxload, solver, deadline, gap, threads, start_dev)
    else:
        out, _ = _matrix(relaxed, maxload, solver, deadline, gap, threads, start_dev, progress, False)
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


def _latency(spec: Spec, seed: int, deadline: Deadline, progress: Callable[[str], None] | None, solver: str,
             via_pyomo: bool, gap: float | None, threads: int | None, heuristics: float,
             given: np.ndarray | None) -> Iterator:
    """Tarnawski's latency IP (Figs. 3-4, models/latency.py), H from the incumbent, the MIP
    start from latency_search (which also yields its path segmentation bound)."""
    from partdsl.core.evaluate import evaluate
    from partdsl.kernels.latency import search as latency_search

    latency.check(spec)
    best: tuple[float, np.ndarray | None, np.ndarray | None] = (math.inf, None, None)
    if given is not None:
        ev = evaluate(spec, given)
        if ev.feasible:
            best = (ev.objective, given, ev.subgraph)
    for item in latency_search.run(spec, seed, deadline.share(heuristics), progress):
        if isinstance(item, Candidate):
            ev = evaluate(spec, item.devices, item.subgraphs)
            if ev.feasible and ev.objective < best[0]:
                best = (ev.objective, item.devices, ev.subgraph)
            yield Candidate(f"exact: MIP start ({item.label})", item.devices, item.subgraphs)
        else:
            yield item
    name = NAMES.get(solver, solver) + (" via Pyomo" if via_pyomo else "")
    t0 = time.monotonic()
    if via_pyomo:
        from partdsl.models import pyomo_latency

        m = pyomo_latency.build(spec, best[0])
        warm = best[1] is not None and pyomo_latency.warm_start(spec, m, best[1], best[2])
        out = solve_pyomo_model(m, solver, deadline, gap, threads, warm)

        def decode() -> tuple[np.ndarray, np.ndarray]:
            return pyomo_latency.decode(spec, m)
    else:
        mip, vm = latency.build(spec, best[0])
        x0 = latency.encode(spec, vm, best[1], best[2]) if best[1] is not None else None
        if progress:
            progress(f"{NAMES[solver]} on {mip.A.shape[0]:,} rows x {mip.A.shape[1]:,} columns (latency IP, "
                     f"H = {vm.H:.6g})")
        out = solve_matrix(mip, solver, deadline, gap, threads, x0, progress)

        def decode() -> tuple[np.ndarray, np.ndarray]:
            return latency.decode(spec, vm, out.x)
    if progress:
        progress(f"{name}: {out.why} after {time.monotonic() - t0:.1f} s")
    yield SolverLog(name, out.log)
    if out.status == Status.INFEASIBLE and not np.isfinite(best[0]):  # H is safe here: no split at all
        yield Proven(math.inf, f"{name} proved the latency IP infeasible")
    elif out.status != Status.INFEASIBLE and np.isfinite(out.bound):
        yield Proven(min(float(out.bound), best[0]), f"{name} dual bound ({out.why})")
    if out.status.has_solution():
        yield Candidate(f"exact latency IP ({name}: {out.why})", *decode())


def _schedule(spec: Spec, seed: int, deadline: Deadline, progress: Callable[[str], None] | None, solver: str,
              via_pyomo: bool, gap: float | None, threads: int | None, heuristics: float,
              symmetry: int = 0) -> Iterator:
    """The DiviML MILP (models/diviml.py; models/pyomo_diviml.py via Pyomo), H from the
    best of HEFT, Greedy and the biased (1+1) EA (also its MIP start); its dual bound, as a
    makespan, is proven for every schedule the evaluator accepts (the MILP's space is
    exactly that: whole chunks, one share per node and device in one go, starts free).
    `symmetry` (matrix path): sec. V-E's rows among identical devices, the start relabelled
    to satisfy them."""
    from partdsl.core.errors import PartError
    from partdsl.core.schedule import Schedule
    from partdsl.core.schedule_eval import evaluate_schedule
    from partdsl.kernels.schedule import list_schedulers
    from partdsl.kernels.schedule import search as schedule_search
    from partdsl.models import diviml

    diviml.check(spec)
    if via_pyomo and symmetry:
        raise PartError("symmetry breaking for the DiviML MILP is on the matrix path only", None,
                        "use --solver highs or scip without -O pyomo=1, or drop -O symmetry")
    L = spec.objective.batch
    makespan = (lambda v: L / v * 1e3 if v > 0 else math.inf) if spec.objective.kind == "throughput" else (lambda v: v)
    best: tuple[float, Schedule | None] = (math.inf, None)
    until = deadline.share(heuristics)
    starts = [(f"exact: MIP start ({r})", list_schedulers.schedule(spec, r)) for r in ("heft", "eft")]
    for item in schedule_search.ea(spec, seed, until, iterations=300):
        if isinstance(item, Candidate):
            starts.append((f"exact: MIP start ({item.label})", item.schedule))
    for label, sched in starts:
        ev = evaluate_schedule(spec, sched)
        if ev.feasible and makespan(ev.objective) < best[0]:
            best = (makespan(ev.objective), ev.schedule)
        yield Candidate(label, schedule=sched)
    H = best[0] if best[1] is not None else diviml.safe_horizon(spec)
    name = NAMES.get(solver, solver) + (" via Pyomo" if via_pyomo else "")
    t0 = time.monotonic()
    if via_pyomo:
        from partdsl.models import pyomo_diviml

        m = pyomo_diviml.build(spec, H)
        warm = best[1] is not None and pyomo_diviml.warm_start(spec, m, best[1])
        out = solve_pyomo_model(m, solver, deadline, gap, threads, warm)
        decoded = (lambda: pyomo_diviml.decode(spec, m))
    else:
        mip, vm = diviml.build(spec, H, symmetry=symmetry)
        seed_sched = diviml.canonical(spec, symmetry, best[1]) if symmetry and best[1] is not None else best[1]
        x0 = diviml.encode(spec, vm, seed_sched) if seed_sched is not None else None
        if progress:
            progress(f"{name} on {mip.A.shape[0]:,} rows x {mip.A.shape[1]:,} columns (DiviML MILP, H = {H:.6g} ms)")
        out = solve_matrix(mip, solver, deadline, gap, threads, x0, progress)
        decoded = (lambda: diviml.decode(spec, vm, out.x))
    if progress:
        progress(f"{name}: {out.why} after {time.monotonic() - t0:.1f} s")
    yield SolverLog(name, out.log)
    if out.status == Status.INFEASIBLE:
        if best[1] is None:  # H is safe: no schedule at all
            yield Proven(math.inf if spec.objective.sense == "min" else 0.0, f"{name} proved the DiviML MILP infeasible")
        return
    found = decoded() if out.status.has_solution() else None
    if np.isfinite(out.bound):
        C = min(float(out.bound), best[0])
        if out.status == Status.OPTIMAL and found is not None:  # optimal within the solver's tolerance (1e-6 ms)
            ev = evaluate_schedule(spec, found)
            mine = makespan(ev.objective) if ev.feasible else math.inf
            if abs(mine - C) <= 1e-6 * max(1.0, C):
                C = mine
        value = L / C * 1e3 if spec.objective.kind == "throughput" and C > 0 else (math.inf if spec.objective.kind
                                                                                     == "throughput" else C)
        yield Proven(value, f"{name} dual bound on the makespan, {C:.6g} ms ({out.why})")
    if found is not None:
        yield Candidate(f"exact DiviML MILP ({name}: {out.why})", schedule=found)


def _matrix(spec: Spec, model, solver: str, deadline: Deadline, gap: float | None,  # type: ignore[no-untyped-def]
            threads: int | None, start_dev: np.ndarray | None, progress: Callable[[str], None] | None,
            symmetry: bool) -> tuple[MipOutcome, Callable[[], np.ndarray]]:
    mip, vm = model.build(spec, symmetry=symmetry) if model is maxload else model.build(spec)
    start = model.encode(spec, vm, start_dev) if start_dev is not None else None
    if progress:
        progress(f"{NAMES[solver]} on {mip.A.shape[0]:,} rows x {mip.A.shape[1]:,} columns")
    out = solve_matrix(mip, solver, deadline, gap, threads, start, progress)
    return out, lambda: model.decode(spec, vm, out.x)



def _pyomo(spec: Spec, model, solver: str, deadline: Deadline, gap: float | None,  # type: ignore[no-untyped-def]
           threads: int | None, start_dev: np.ndarray | None) -> tuple[MipOutcome, Callable[[], np.ndarray]]:
    from partdsl.models import pyomo_maxload, pyomo_mtpp

    ref = pyomo_mtpp if model is mtpp else pyomo_maxload
    m = ref.build(spec)
    warm = start_dev is not None and ref.warm_start(spec, m, start_dev)
    out = solve_pyomo_model(m, solver, deadline, gap, threads, warm)
    return out, lambda: ref.decode(spec, m)



def solve_mtpp_variant(spec: Spec, variant: mtpp.Variant, solver: str | None, time_limit: float | None,
                       gap: float | None, threads: int | None) -> MipOutcome:
    """Archer's MIP or one of its relaxations (sec. 3.2-3.3) on any solver: the matrix
    model on HiGHS and SCIP, the Pyomo reference model on the others."""
    solver = solver or DEFAULT_SOLVER
    if solver in MATRIX_SOLVERS:
        return solve_matrix(mtpp.build(spec, variant)[0], solver, time_limit, gap, threads)
    from partdsl.models import pyomo_mtpp

    return solve_pyomo_model(pyomo_mtpp.build(spec, variant), solver, time_limit, gap, threads)


def formulation(spec: Spec):  # type: ignore[no-untyped-def]
    """Archer's MTPP MIP for identical stages under `acyclic`, else Tarnawski's max-load IP."""
    p = spec.platform
    if len(p.classes) == 1 and not p.classes[0].host and spec.constraints.acyclic:
        return mtpp
    return maxload

"""Solve a Pyomo model with any solver Pyomo knows: time limit, relative gap, threads and
a MIP start (the model's current variable values), mapped to one MipOutcome.

HiGHS goes through `appsi_highs` (the new `highs` interface takes no MIP start), SCIP and
Gurobi through Pyomo's new `scip_direct` / `gurobi_direct`, CPLEX and CBC through the
classic SolverFactory. CBC is also found where PuLP bundles it. The solution stays loaded
in the model (decode it from there); `x` of the outcome is None. The solver's own log
comes back in the outcome (a file or a stream per interface).
"""
from __future__ import annotations

import io
import math
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyomo.environ as pyo
from partdsl.core.result import Status
from partdsl.runtime import interrupt
from partdsl.runtime.capture import captured_stdout, solver_call
from partdsl.runtime.deadline import Deadline
from partdsl.solvers.highs_matrix import fit_scheduler
from partdsl.solvers.outcome import MipOutcome, checked, outcome, solver_gap
from partdsl.solvers.registry import SOLVERS, cbc_executable, pyomo_interface


def solve_pyomo(model: pyo.ConcreteModel, solver: str = "highs", time_limit: Deadline | float | None = None,
                gap: float | None = None, threads: int | None = None, warm: bool = False) -> MipOutcome:
    """Solve with `solver`; whatever the solver prints on stdout goes to the head of its log.
    `time_limit`: a Deadline, or seconds from now (None: no limit)."""
    with captured_stdout() as printed:
        out = checked(solver, lambda until, use_start: _solve(model, solver, until, gap, threads, warm and use_start),
                      lambda o: _objective(model) if o.status.has_solution() else None,
                      Deadline.of(time_limit), warm)
    return replace(out, log=printed.text + out.log)


def _objective(model: pyo.ConcreteModel) -> float:
    """The value of the model's active objective at the loaded solution."""
    return float(pyo.value(next(model.component_data_objects(pyo.Objective, active=True))))


def _solve(model: pyo.ConcreteModel, solver: str, deadline: Deadline, gap: float | None,
           threads: int | None, warm: bool) -> MipOutcome:
    kind, name = pyomo_interface(solver)
    rel = solver_gap(gap)
    limit = deadline.seconds()  # the one conversion: the solver's own limit, in seconds
    if kind == "contrib":
        return _contrib(model, name, limit, rel, threads, warm)
    with tempfile.TemporaryDirectory() as tmp:  # the others write their log to a file
        log = Path(tmp) / f"{solver}.log"
        if kind == "appsi":
            return _appsi(model, deadline, rel, threads, warm, log)
        return _classic(model, solver, name, limit, rel, threads, warm, log)


def _appsi(model: pyo.ConcreteModel, deadline: Deadline, rel: float, threads: int | None,
           warm: bool, log: Path, presolve: bool = True) -> MipOutcome:
    """HiGHS through appsi. An "infeasible" MIP verdict is checked as on the matrix path
    (solvers/highs_matrix._run): solved again with presolve off, and only kept if that agrees."""
    from pyomo.contrib.appsi.base import TerminationCondition as TC
    from pyomo.contrib.appsi.solvers import Highs

    opt = Highs()
    opt.config.load_solution = False
    opt.config.mip_gap = rel
    opt.config.warmstart = warm
    opt.config.logfile = str(log)
    limit = deadline.seconds()
    if limit is not None:
        opt.config.time_limit = limit
    opt.highs_options = {"mip_abs_gap": 0.0, **({"threads": int(threads)} if threads else {}),
                         **({} if presolve else {"presolve": "off"})}
    fit_scheduler(threads or None)  # the same process-wide HiGHS scheduler as the matrix path
    with solver_call():
        res = opt.solve(model)
    tc = res.termination_condition
    if tc == TC.infeasible and presolve and any(v.is_integer() or v.is_binary() for v in
                                                model.component_data_objects(pyo.Var, active=True)):
        first = _read(log)
        again = _appsi(model, deadline, rel, threads, warm, log, presolve=False)
        note = "HiGHS said infeasible; solved again with presolve off: " + (
            "infeasible too" if again.status == Status.INFEASIBLE else f"{again.status.value} ({again.why})")
        return replace(again, log=first + "\n" + note + "\n" + again.log)
    has = res.best_feasible_objective is not None
    if has:
        res.solution_loader.load_vars()
    bound = res.best_objective_bound if res.best_objective_bound is not None else -math.inf
    return _outcome(str(tc.name), tc == TC.optimal, tc == TC.infeasible, has,
                    res.best_feasible_objective, bound, _read(log))


def _contrib(model: pyo.ConcreteModel, name: str, limit: float | None, rel: float, threads: int | None,
             warm: bool) -> MipOutcome:
    from pyomo.contrib.solver.common.factory import SolverFactory
    from pyomo.contrib.solver.common.results import SolutionStatus
    from pyomo.contrib.solver.common.results import TerminationCondition as TC

    opt = SolverFactory(name)
    log = io.StringIO()
    kw: dict[str, Any] = {"load_solutions": False, "raise_exception_on_nonoptimal_result": False,
                          "rel_gap": rel, "abs_gap": 0.0, "tee": [log]}
    if limit is not None:
        kw["time_limit"] = limit
    if threads:
        kw["threads"] = int(threads)
    if name == "scip_direct":  # as in scip_matrix: a dual bound that does not lag the incumbent
        kw["solver_options"] = {"numerics/feastol": 1e-7}
    if warm and "warmstart_discrete_vars" in opt.config:
        kw["warmstart_discrete_vars"] = True
    with solver_call():
        res = opt.solve(model, **kw)
    tc = res.termination_condition
    has = res.solution_status in (SolutionStatus.feasible, SolutionStatus.optimal)
    if has:
        res.solution_loader.load_vars()
    bound = res.objective_bound if res.objective_bound is not None else -math.inf
    return _outcome(str(tc.name), tc == TC.convergenceCriteriaSatisfied, tc == TC.provenInfeasible, has,
                    res.incumbent_objective, bound, log.getvalue())


def _classic(model: pyo.ConcreteModel, solver: str, name: str, limit: float | None, rel: float,
             threads: int | None, warm: bool, log: Path) -> MipOutcome:
    from pyomo.opt import SolutionStatus
    from pyomo.opt import TerminationCondition as TC
    from pyomo.solvers.plugins.solvers.persistent_solver import PersistentSolver

    opt = pyo.SolverFactory(name, executable=cbc_executable()) if solver == "cbc" else pyo.SolverFactory(name)
    kw: dict[str, Any] = {"load_solutions": False}
    names = SOLVERS[solver].gap_threads if solver in SOLVERS else None
    if names:  # other solvers name their options their own way, and some take no logfile
        gap_name, threads_name = names
        kw["options"] = {gap_name: rel, **({threads_name: int(threads)} if threads else {})}
        kw["logfile"] = str(log)
    if limit is not None:
        kw["timelimit"] = limit
    if warm and getattr(opt, "warm_start_capable", lambda: False)():
        kw["warmstart"] = True
    with solver_call():
        if isinstance(opt, PersistentSolver):  # gurobi_persistent, cplex_persistent, ...
            opt.set_instance(model)
            res = opt.solve(**kw)
        else:
            res = opt.solve(model, **kw)
    tc = res.solver.termination_condition
    has = len(res.solution) > 0 and res.solution(0).status in (SolutionStatus.optimal, SolutionStatus.feasible,
                                                                 SolutionStatus.stoppedByLimit)
    if has:
        model.solutions.load_from(res)
    lb = res.problem.lower_bound
    bound = float(lb) if lb is not None and math.isfinite(float(lb)) else -math.inf
    obj = pyo.value(model.objective) if has else None
    return _outcome(str(tc), tc == TC.optimal, tc == TC.infeasible, has, obj, bound, _read(log))


def _outcome(why: str, optimal: bool, infeasible: bool, has: bool, objective: float | None,
             bound: float, log: str) -> MipOutcome:
    if why in ("interrupted", "userInterrupt"):  # the solver caught Ctrl-C (Gurobi does): stop the solve too
        interrupt.request()
    return outcome(why, optimal, infeasible, has, None, objective, bound, log)


def _read(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""

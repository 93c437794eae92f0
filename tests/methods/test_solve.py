"""solve(): exhaustive search is exact; every method's answer is re-scored by the
evaluator; bounds never cross the optimum; statuses and exit codes follow the contract."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from partdsl import PartError, evaluate, parse, solve
from partdsl.core.assignment import replica_factors, to_array
from partdsl.core.ir import Spec
from partdsl.core.result import Status
from partdsl.core.solver_errors import SolverFailed
from partdsl.kernels import brute_force
from partdsl.methods.capabilities import unmodelled
from partdsl.methods.registry import METHODS
from partdsl.solvers.registry import SOLVERS, failures, is_installed

from tests.support import EXAMPLES, run_part
from tests.support.strategies import specs

HEURISTICS = [("topo", {}), ("single", {}), ("slicegraph", {}), ("random", {"samples": 8}),
              ("brkga", {"population": 8, "generations": 3}), ("mla", {"population": 8, "generations": 3}),
              ("mla_weighted", {"population": 8, "generations": 3}), ("dp", {}), ("dpl", {}),
              ("pipedream", {}), ("greedy", {}), ("local_search", {"restarts": 2, "passes": 3}),
              ("local_search", {"restarts": 2, "passes": 3, "start": "random"}), ("load_search", {"stall": 4})]


def better_or_equal(spec: Spec, a: float, b: float) -> bool:
    tol = 1e-9 * max(1.0, abs(b))
    return a >= b - tol if spec.objective.sense == "max" else a <= b + tol


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(specs(max_nodes=7, max_devices=3, kinds=("bottleneck", "latency")))
def test_brute_is_exact_and_bounds_hold(spec: Spec) -> None:
    """brute enumerates assignments: exact for bottleneck and latency (the schedule
    objectives, where it enumerates schedules, are in tests/methods/test_oracle.py)."""
    # the generated spec's own solve block may ask for a loose gap or a tiny time limit
    assume(brute_force.count(spec) <= brute_force.LIMIT)  # replicas multiply the candidates
    exact = solve(spec, method="brute", gap=0.0, time_limit=1e6)
    assert exact.status in (Status.OPTIMAL, Status.INFEASIBLE)
    for method, opts in HEURISTICS:
        if spec.objective.kind not in METHODS[method].objectives:  # refused up front (tested in test_cli)
            continue
        if unmodelled(spec, METHODS[method].ignores, opts):  # refused by name (tests/methods/test_capabilities.py)
            continue
        r = solve(spec, method=method, gap=0.0, time_limit=1e6, options=opts)
        if r.status.has_solution():
            assert exact.status.has_solution()
            # re-scored by the evaluator, feasible, never better than the best assignment
            ev = evaluate(spec, to_array(spec, r.assignment), replicas_of=replica_factors(spec, {"replicas": r.replicas}))
            assert ev.feasible and ev.objective == r.objective
            assert better_or_equal(spec, exact.objective, r.objective)
            assert r.gap >= 0
        assert r.status != Status.INFEASIBLE  # heuristics never claim a proof
        if method in ("random", "brkga", "local_search", "load_search"):  # seeded: the same answer twice
            again = solve(spec, method=method, gap=0.0, time_limit=1e6, options=opts)
            assert again.assignment == r.assignment
    if exact.status.has_solution():
        ev = evaluate(spec, to_array(spec, exact.assignment), replicas_of=replica_factors(spec, {"replicas": exact.replicas}))
        assert ev.feasible and ev.objective == exact.objective
        # the cheap bound is valid: never beyond the optimum (nor, so, beyond any solution)
        from partdsl.methods.bounds import bound

        b, opt = bound(spec), exact.objective
        tol = 1e-9 * max(1.0, abs(opt))
        assert (b >= opt - tol) if spec.objective.sense == "max" else (b <= opt + tol)


INFEASIBLE = """
graph g { node a { work 1 ms } node b { work 1 ms } node c { work 1 ms } a -> b -> c }
platform { device gpu[2] { link 1 GB/s } }
subject to { contiguous; colocate a, c; pin b to gpu[1]; pin a to gpu[0] }
"""


def test_proven_infeasible_spec_exits_3(tmp_path: Path) -> None:
    spec = parse(INFEASIBLE)
    r = solve(spec, method="brute")
    assert r.status == Status.INFEASIBLE and r.assignment is None and math.isinf(r.objective)
    t = solve(spec, method="topo")
    assert t.status == Status.NO_SOLUTION  # a heuristic that finds nothing proves nothing
    f = tmp_path / "inf.part"
    f.write_text(INFEASIBLE)
    p = run_part("solve", str(f), "--method", "brute", "--json")
    assert p.returncode == 3 and json.loads(p.stdout)["status"] == "infeasible"
    assert "infeasible" in p.stderr
    p = run_part("solve", str(f), "--json", "--method", "topo")
    assert p.returncode == 4 and json.loads(p.stdout)["status"] == "no_solution"
    p = run_part("solve", str(f), "--json")  # the default, auto, ends with the brute force on a spec this small
    assert p.returncode == 3 and json.loads(p.stdout)["status"] == "infeasible", p.stderr


def test_time_limit_without_incumbent_exits_4() -> None:
    p = run_part("solve", str(EXAMPLES / "tiny.part"), "--time-limit", "0", "--json")
    assert p.returncode == 4
    out = json.loads(p.stdout)
    assert out["status"] == "no_solution" and out["stopped"] == "time limit" and out["assignment"] is None


def test_unknown_method_and_solver_exit_2() -> None:
    p = run_part("solve", str(EXAMPLES / "tiny.part"), "--method", "exactish")
    assert p.returncode == 2 and "unknown method 'exactish'" in p.stderr and "topo" in p.stderr
    p = run_part("solve", str(EXAMPLES / "tiny.part"), "--solver", "cbcx")
    assert p.returncode == 2 and "unknown solver 'cbcx'" in p.stderr


def test_missing_solver_exits_5_and_installed_ones_work() -> None:
    assert is_installed("highs") and is_installed("scip")  # both come from pip
    for name in SOLVERS:
        p = run_part("solve", str(EXAMPLES / "tiny.part"), "--solver", name, "--json")
        if is_installed(name):
            assert p.returncode == 0, p.stderr
        else:
            assert p.returncode == 5, p.stderr
            assert f"solver '{name}' is not installed" in p.stderr and "hint:" in p.stderr
            assert json.loads(p.stdout)["kind"] == "solver_unavailable"
    # a solver Pyomo knows but does not find: the same exit, with a hint naming Pyomo
    assert not is_installed("xpress_direct")  # (the xpress package is not among our dependencies)
    p = run_part("solve", str(EXAMPLES / "mtpp_overflow.part"), "--method", "exact", "--solver", "xpress_direct")
    assert p.returncode == 5 and "Pyomo knows 'xpress_direct' but does not find it" in p.stderr


def test_solver_failure_exits_6_with_its_message() -> None:
    """Gurobi's pip edition refuses models over 2,000 columns: the CLI says so plainly, with
    the model's size and a hint, and exits 6, not 1 ("internal error: a bug")."""
    spec = str(EXAMPLES / "bert24_training.part")
    p = run_part("solve", spec, "--method", "exact", "--solver", "gurobi", "--time-limit", "10")
    assert p.returncode == 6, p.stderr
    assert "solver 'gurobi' failed on a model of" in p.stderr and "size-limited license" in p.stderr
    assert "hint: gurobi's license limits the model size" in p.stderr and "internal error" not in p.stderr
    out = json.loads(run_part("solve", spec, "--method", "exact", "--solver", "gurobi", "--time-limit", "10",
                              "--json").stdout)
    assert out["kind"] == "solver_failed" and "--solver highs" in out["hint"]
    with pytest.raises(SolverFailed):  # the same for Python users
        solve(parse_file_example("bert24_training.part"), method="exact", solver="gurobi", time_limit=10)


def test_only_a_solver_library_error_counts_as_a_solver_failure() -> None:
    import gurobipy
    import highspy
    from pyscipopt import Model

    with pytest.raises(SolverFailed, match="solver 'gurobi' failed on a model of 3 rows x 4 columns"):
        with failures("gurobi", 3, 4):
            gurobipy.Model().setParam("NoSuchParam", 1)  # a GurobiError
    with pytest.raises(SolverFailed, match="SCIP: file not found"):  # PySCIPOpt: a built-in error, "SCIP: ..."
        with failures("scip", 3, 4):
            m = Model()
            m.hideOutput()
            m.readProblem("/nonexistent/model.lp")
    for bug in (lambda: highspy.Highs().passModel(None), lambda: 1 / 0):  # our misuse, our bug: exit 1
        with pytest.raises((TypeError, ZeroDivisionError)):
            with failures("highs", 3, 4):
                bug()
    from pyomo.common.errors import ApplicationError  # Pyomo's "the solver run failed"

    with pytest.raises(SolverFailed, match="solver 'glpk' failed"):
        with failures("glpk", 3, 4):
            raise ApplicationError("glpk exited with status 1")


def test_the_matrix_path_does_not_import_pyomo() -> None:
    """HiGHS and SCIP models go to the solver's own API: importing Pyomo after SciPy also
    imports scipy.stats (0.9 s in every worker process of MILP-SPLIT, 2 cores)."""
    import subprocess
    import sys

    code = ("import sys; from partdsl import parse_file, solve; "
            f"r = solve(parse_file({str(EXAMPLES / 'latency.part')!r}), method='exact', time_limit=20); "
            "print(r.status.value, 'pyomo' in sys.modules, 'scipy.stats' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["optimal", "False", "False"], out.stdout


def parse_file_example(name: str) -> Spec:
    from partdsl import parse_file

    return parse_file(EXAMPLES / name)


def test_solve_json_contract_and_overrides() -> None:
    p = run_part("solve", str(EXAMPLES / "tiny.part"), "--json", "-D", "k=2")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    for key in ("status", "objective", "lower_bound", "gap", "method", "solver", "wall_time_s", "assignment"):
        assert key in out
    assert set(out["assignment"].values()) <= {"gpu[0]", "gpu[1]", "cpu[0]"}
    four = json.loads(run_part("solve", str(EXAMPLES / "tiny.part"), "--json").stdout)
    assert four["objective"] < out["objective"]  # more GPUs, lower bottleneck
    assert out["lower_bound"] <= out["objective"] and out["gap"] == pytest.approx(
        (out["objective"] - out["lower_bound"]) / out["objective"])


def test_warm_start_is_scored_and_kept_when_best() -> None:
    spec = parse((EXAMPLES / "tiny.part").read_text(), str(EXAMPLES / "tiny.part"))
    r = solve(spec, method="single")
    seeded = solve(spec, method="single", warm_start=solve(spec).assignment)
    assert seeded.objective < r.objective
    with pytest.raises(PartError, match="unknown node"):
        solve(spec, warm_start={"nope": "gpu[0]"})


def test_progress_is_reported() -> None:
    spec = parse((EXAMPLES / "tiny.part").read_text())
    seen: list[str] = []
    solve(spec, progress=seen.append)
    assert seen and "incumbent" in seen[0]
    p = run_part("solve", str(EXAMPLES / "tiny.part"), "--progress")
    assert "candidates, incumbent" in p.stderr


def test_the_log_names_each_candidate_not_kept_up_to_a_cap() -> None:
    """A method's answer that is not the result says so in the log, with its score: MILP-SPLIT's
    split schedule, worse than its HEFT start on Table V's spec, left no trace. topo on
    tiny.part tries three device counts, keeps one and logs the other two; on latency.part
    its 24 candidates log the first UNKEPT_LOGGED and say that the rest are not logged."""
    from partdsl.methods.solve import UNKEPT_LOGGED

    def lines(r) -> tuple[list[str], list[str], int]:  # type: ignore[no-untyped-def]
        body = [line.strip().split("  ", 1)[-1] for line in r.log]  # after the time stamp
        count = int(next(b for b in body if "candidates evaluated" in b).split()[0])
        return [b for b in body if b.startswith("incumbent ")], [b for b in body if b.startswith("not kept: ")], count

    r = solve(parse((EXAMPLES / "tiny.part").read_text().replace("contiguous; ", "")), method="topo")  # no path bound
    kept, unkept, count = lines(r)
    assert count == 3 and len(kept) + len(unkept) == count, r.log
    for b in unkept:
        assert float(b.split()[2]) >= r.objective and f"incumbent {r.objective:.6g}" in b
    r = solve(parse((EXAMPLES / "latency.part").read_text()), method="topo")
    kept, unkept, count = lines(r)
    assert count > UNKEPT_LOGGED + len(kept) and len(unkept) == UNKEPT_LOGGED, r.log
    assert unkept[-1].endswith("(further ones not logged)") and not unkept[0].endswith("not logged)")


def test_gap_option_stops_early() -> None:
    spec = parse((EXAMPLES / "tiny.part").read_text())
    loose = solve(spec, gap=0.5)
    assert loose.stopped == "bound reached" and loose.status == Status.OPTIMAL and loose.gap <= 0.5
    strict = solve(parse((EXAMPLES / "tiny.part").read_text().replace("contiguous; ", "")), method="topo")
    assert strict.status == Status.FEASIBLE and strict.gap > 0.01  # the cheap bound is far; never called optimal
    assert solve(spec, method="topo").status == Status.OPTIMAL  # under `contiguous` the path bound proves it
    proven = solve(spec)  # the example's own solve block: dp, exact under `acyclic`
    assert proven.method == "dp" and proven.status == Status.OPTIMAL and proven.bound == pytest.approx(proven.objective)


def test_result_reports_bounds_in_the_objective_direction() -> None:
    spec = parse((EXAMPLES / "diviml_batched.part").read_text(), str(EXAMPLES / "diviml_batched.part"))
    r = solve(spec)
    assert r.sense == "max" and r.lower_bound == r.objective and r.upper_bound == r.bound >= r.objective
    d = r.to_json()
    assert d["lower_bound"] <= d["upper_bound"]
    from partdsl.core.schedule import from_json
    from partdsl.evaluator.schedule_eval import evaluate_schedule

    assert r.method == "auto" and r.chosen in ("heft", "eft", "met", "milp_split", "exact")  # the default
    assert evaluate_schedule(spec, from_json(spec, r.schedule)).objective == r.objective  # its schedule, as given


def test_method_options_are_checked(tmp_path: Path) -> None:
    spec = parse((EXAMPLES / "tiny.part").read_text())
    with pytest.raises(PartError, match="method brkga has no option 'pop'"):
        solve(spec, method="brkga", options={"pop": 3})
    with pytest.raises(PartError, match="method dp has no option 'samples'"):  # the spec's method
        solve(spec, options={"samples": 3})
    p = run_part("solve", str(EXAMPLES / "tiny.part"), "--method", "random", "-O", "samples=abc")
    assert p.returncode == 2 and "not a number" in p.stderr
    f = tmp_path / "s.part"
    text = (EXAMPLES / "tiny.part").read_text()
    assert "solve dp { time 60 s }" in text
    f.write_text(text.replace("solve dp { time 60 s }", "solve brkga { population 6; generations 2; seed 3 }"))
    s = parse(f.read_text())
    assert s.solve.options == (("population", 6.0), ("generations", 2.0)) and s.solve.seed == 3
    out = json.loads(run_part("solve", str(f), "--json").stdout)
    assert out["method"] == "brkga" and out["status"] in ("feasible", "optimal")


def test_order_search_improves_on_a_fixed_order() -> None:
    from partdsl.generators.regal import regal_spec

    spec = regal_spec(60, 4, seed=5)
    fixed = solve(spec, method="slicegraph")
    rnd = solve(spec, method="random", options={"samples": 60}, seed=1)
    ga = solve(spec, method="brkga", options={"population": 20, "generations": 10}, seed=1)
    assert rnd.objective <= fixed.objective * 1.05
    assert ga.objective <= rnd.objective * 1.05
    for r in (fixed, rnd, ga):
        assert r.evaluation.feasible and r.objective >= r.bound


def test_the_solver_registry_knows_each_solver_once() -> None:
    """Every fact about a solver comes from its one row (solvers/registry.py)."""
    import importlib.metadata

    from partdsl.solvers import registry

    assert registry.DEFAULT_SOLVER in registry.MATRIX_SOLVERS == ("highs", "scip")
    assert registry.version("highs") == importlib.metadata.version("highspy")
    assert registry.version("scip") == importlib.metadata.version("PySCIPOpt")
    assert registry.version("cbc") is None  # an executable, no Python package of its own
    assert registry.display("scip", via_pyomo=True) == "SCIP via Pyomo" and registry.display("glpk") == "glpk"
    assert registry.pyomo_interface("cplex") == ("classic", "cplex_direct")
    assert registry.pyomo_interface("glpk") == ("classic", "glpk")  # any other Pyomo solver: its classic interface
    assert registry.uses_matrix(None) and not registry.uses_matrix("highs", pyomo=True)
    assert not registry.uses_matrix("gurobi")
    assert set(registry.SOLVER_LIBRARIES) == {"highspy", "pyscipopt", "gurobipy", "cplex"}

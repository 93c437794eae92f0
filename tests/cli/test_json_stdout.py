"""`--json` output is machine-readable: for every method, every installed MIP solver and
every command, standard output holds exactly one JSON document, with --progress and
--solver-log too. Runs the real CLI in-process; pytest's capfd reads descriptor 1 itself,
so a solver's C-level print (HiGHS 1.16's banner) would show up here."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from partdsl import parse_file
from partdsl.cli.main import main
from partdsl.methods.capabilities import unmodelled
from partdsl.methods.registry import METHODS
from partdsl.solvers.registry import DISPLAY_NAMES as SOLVERS
from partdsl.solvers.registry import is_installed

from tests.support import EXAMPLES

SPEC = str(EXAMPLES / "mtpp_overflow.part")  # every method for the bottleneck accepts it
LATENCY_SPEC = str(EXAMPLES / "latency.part")  # for the latency-only methods
DIVIML_SPEC = str(EXAMPLES / "diviml_batched.part")  # for the schedule-only methods (DiviML)
INSTALLED = [s for s in SOLVERS if is_installed(s)]
PLAIN = "graph g { node a { work 1 ms } node b { work 2 ms } a -> b }\nplatform { device gpu[2] { link 1 GB/s } }\n"


def spec_for(method: str, tmp_path: Path) -> str:
    """The first spec the method takes: its objective, no feature it refuses (the peers
    refuse contiguity, overflow, ...: a plain two-node spec)."""
    m = METHODS[method]
    plain = tmp_path / "plain.part"
    plain.write_text(PLAIN)
    chunked = tmp_path / "interleaved.part"  # the one spec method interleave takes
    chunked.write_text("graph g { node a { work 1 ms } node b { work 2 ms } node c { work 1 ms } node d { work 2 ms }"
                       " a -> b -> c -> d }\nplatform { device gpu[2] { link 1 GB/s } }\nminimize bottleneck\n"
                       "subject to { interleave 2 }\n")
    # a method that refuses some features: the plain spec right after the first
    if method == "interleave":  # the one method that needs a constraint: `interleave V`
        return str(chunked)
    for path in (SPEC, *([str(plain)] if m.ignores else []), LATENCY_SPEC, DIVIML_SPEC, str(plain)):
        spec = parse_file(path)
        if spec.objective.kind in m.objectives and not unmodelled(spec, m.ignores, {}):
            return path
    raise AssertionError(f"no spec here for {method}")


def one_document(capfd: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, dict]:
    capfd.readouterr()
    code = main(argv)
    out = capfd.readouterr().out
    doc, end = json.JSONDecoder().raw_decode(out.lstrip())
    assert out.lstrip()[end:].strip() == "", f"more than one document on stdout:\n{out}"
    return code, doc


def test_the_usual_solvers_are_installed() -> None:
    assert {"highs", "scip"} <= set(INSTALLED)  # the test extra installs gurobi, cplex, cbc too


@pytest.mark.slow  # a long solve (conftest.py: the tiers)
@pytest.mark.parametrize("method", sorted(METHODS))
def test_solve_json_is_one_document_for_every_method(method: str, capfd: pytest.CaptureFixture[str],
                                                     tmp_path: Path) -> None:
    log = tmp_path / "solver.log"
    spec = spec_for(method, tmp_path)
    budget = ["-O", "iterations=200"] if method in ("sa", "ea") else []  # else they search for all 20 s
    code, doc = one_document(capfd, ["solve", spec, "--method", method, "--json", "--progress", "--time-limit",
                                     "20", "--solver-log", str(log), *budget])
    assert code == 0 and doc["method"] == method and doc["status"] in ("optimal", "feasible")
    assert log.exists()


# the matrix path (pyomo=0) has HiGHS and SCIP; every installed solver runs through Pyomo
@pytest.mark.parametrize("solver,pyomo", [(s, 0) for s in ("highs", "scip")] + [(s, 1) for s in INSTALLED])
def test_solve_json_is_one_document_for_every_solver(solver: str, pyomo: int, capfd: pytest.CaptureFixture[str],
                                                     tmp_path: Path) -> None:
    log = tmp_path / "solver.log"
    code, doc = one_document(capfd, ["solve", SPEC, "--method", "exact", "--solver", solver, "-O", f"pyomo={pyomo}",
                                     "--json", "--progress", "--solver-log", str(log), "--time-limit", "60"])
    assert code == 0 and doc["solver"] == solver and doc["status"] == "optimal", doc
    assert log.read_text().strip()  # the solver's own log went to the file, not to stdout


@pytest.mark.parametrize("solver", INSTALLED)
def test_bound_json_is_one_document_for_every_solver(solver: str, capfd: pytest.CaptureFixture[str]) -> None:
    code, doc = one_document(capfd, ["bound", SPEC, "--solver", solver, "--json", "--progress", "--time-limit", "20",
                                     "--workers", "1"])
    assert code == 0 and doc["best"] > 0, doc


def test_check_eval_and_errors_are_one_document(capfd: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, doc = one_document(capfd, ["check", SPEC, "--json"])
    assert code == 0 and doc["ok"] is True
    result = tmp_path / "result.json"
    code, doc = one_document(capfd, ["solve", SPEC, "--json", "-o", str(result)])
    assert code == 0
    code, doc = one_document(capfd, ["eval", SPEC, str(result), "--json"])
    assert code == 0 and doc["feasible"] is True
    code, doc = one_document(capfd, ["solve", SPEC, "--json", "-D", "k=2,3", "--method", "exact", "--progress"])
    assert code == 0 and len(doc["sweep"]) == 2
    bad = tmp_path / "bad.part"
    bad.write_text("graph g { node a { work 1 ms } }\nplatform { device gpu[0] { } }\n")
    code, doc = one_document(capfd, ["check", str(bad), "--json"])
    assert code == 2 and "error" in doc

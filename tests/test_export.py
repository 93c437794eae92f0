"""`part export`: the MIP of method `exact` as MPS and LP files, read back by a fresh
HiGHS, solve to the same optimum as `exact`; the LP relaxation is a bound."""
from __future__ import annotations

import json

import highspy
import pytest
from conftest import EXAMPLES, run_part
from partdsl import parse_file, solve
from partdsl.core.result import Status


def _highs_optimum(path) -> float:  # type: ignore[no-untyped-def]
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    assert h.readModel(str(path)) == highspy.HighsStatus.kOk
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    return h.getInfo().objective_function_value


@pytest.mark.parametrize("example", ["mtpp_overflow.part", "latency.part", "diviml_batched.part"])
def test_exported_mip_resolves_to_the_exact_optimum(example: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    mps, lp, rel = tmp_path / "m.mps", tmp_path / "m.lp", tmp_path / "r.mps"
    p = run_part("export", str(EXAMPLES / example), "--mps", str(mps), "--lp", str(lp), "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)  # one JSON document, HiGHS's banner kept off stdout
    assert out["rows"] > 0 and out["integer_columns"] > 0
    spec = parse_file(EXAMPLES / example)
    r = solve(spec, method="exact")
    assert r.status == Status.OPTIMAL
    want = r.objective
    if spec.objective.kind == "throughput":  # the MILP minimizes the makespan C: samples/s = L / C * 1000
        want = spec.objective.batch / r.objective * 1e3
    assert _highs_optimum(mps) == pytest.approx(want, rel=1e-6)
    assert _highs_optimum(lp) == pytest.approx(want, rel=1e-6)
    p = run_part("export", str(EXAMPLES / example), "--mps", str(rel), "--relaxation")
    assert p.returncode == 0 and "LP relaxation" in p.stdout, p.stderr
    assert _highs_optimum(rel) <= want + 1e-6


def test_export_errors(tmp_path) -> None:  # type: ignore[no-untyped-def]
    p = run_part("export", str(EXAMPLES / "latency.part"))
    assert p.returncode == 2 and "give --mps FILE" in p.stderr
    p = run_part("export", str(EXAMPLES / "latency.part"), "--mps", str(tmp_path / "x.lp"))
    assert p.returncode == 2 and "does not end in .mps" in p.stderr
    p = run_part("export", str(EXAMPLES / "tiny.part"), "--lp", str(tmp_path / "x.lp"))  # acyclic on mixed devices
    assert p.returncode == 2 and "does not fit this spec" in p.stderr and not (tmp_path / "x.lp").exists()

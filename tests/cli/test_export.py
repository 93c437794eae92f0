"""`part export`: the MIP of method `exact` as MPS and LP files, read back by a fresh
HiGHS, solve to the same optimum as `exact`; the LP relaxation is a bound."""
from __future__ import annotations

import json

import highspy
import pytest
from partdsl import parse_file, solve
from partdsl.core.result import Status

from tests.support import EXAMPLES, run_part


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
    # a feature the MIP does not model is refused by name, with a caret, not written without it
    from tests.support.files import ACTIVATIONS_TEXT as TEXT

    (tmp_path / "a.part").write_text(TEXT)
    p = run_part("export", str(tmp_path / "a.part"), "--lp", str(tmp_path / "x.lp"))
    assert p.returncode == 2 and "does not model activation memory" in p.stderr and "^" in p.stderr
    assert not (tmp_path / "x.lp").exists()


def test_exported_names_map_the_solvers_answer_back(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Issue 32, item 5: rows and columns are named after nodes, devices and constraints,
    so a solver's answer read from the file maps back to a partition (scored here by the
    evaluator to the file's optimum)."""
    from partdsl.dsl.parser import parse
    from partdsl.evaluator.evaluate import evaluate
    from partdsl.methods.solve import assignment_array

    text = (EXAMPLES / "tiny.part").read_text().replace("acyclic; ", "")  # the max-load IP's spec
    (tmp_path / "t.part").write_text(text)
    lp, names = tmp_path / "t.lp", tmp_path / "names.json"
    p = run_part("export", str(tmp_path / "t.part"), "--lp", str(lp), "--names", str(names), "--json")
    assert p.returncode == 0, p.stderr
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    assert h.readModel(str(lp)) == highspy.HighsStatus.kOk
    h.run()
    value = h.getInfo().objective_function_value
    cols = h.getLp().col_names_
    x = h.getSolution().col_value
    spec = parse(text)
    written = json.loads(names.read_text())
    assert sorted(written["columns"]) == sorted(cols)
    model = {w: written["model_names"].get(w, w) for w in cols}  # written name -> the model's
    chosen = {}
    for w, v in zip(cols, x):
        name = model[w]
        if name.startswith("x(") and v > 0.5:
            node, device = name[2:-1].rsplit(",", 1)
            chosen[node] = device
    assert sorted(chosen) == sorted(nd.name for nd in spec.graph.nodes)
    scored = evaluate(spec, assignment_array(spec, chosen))
    assert scored.feasible and scored.objective == pytest.approx(value, rel=1e-6)
    assert scored.objective == pytest.approx(solve(spec, method="exact").objective, rel=1e-6)
    rows = set(h.getLp().row_names_)
    assert {f"assign({nd.name.replace('[', '(').replace(']', ')')})" for nd in spec.graph.nodes} <= rows
    assert "memory(gpu(0))" in rows and "load(gpu(0))" in rows and "maxload" in cols


@pytest.mark.parametrize("example", ["mtpp_overflow.part", "latency.part", "diviml_batched.part",
                                     "bert24_training.part"])
def test_every_row_and_column_has_a_unique_readable_name(example: str) -> None:
    from partdsl.cli.export_mip import exact_mip, mip_names

    mip, _ = exact_mip(parse_file(EXAMPLES / example))
    names = mip_names(mip)
    assert len(names.rows) == mip.A.shape[0] and len(set(names.rows)) == len(names.rows)
    assert len(names.cols) == mip.A.shape[1] and len(set(names.cols)) == len(names.cols)
    for name in names.rows + names.cols:  # a family, then its entities: never a bare r17 / c17
        assert name[0].isalpha() and not name[1:].isdigit(), name


def test_names_the_formats_do_not_take_are_changed_and_mapped(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import numpy as np
    from partdsl.cli.export_mip import MAX_NAME, mip_names, write
    from partdsl.models.matrix import MatrixMIP
    from scipy.sparse import csr_matrix

    long = "x(" + "a" * 300 + ")"
    cols = ["x(a b,c)", "x(a_b,c)", long, 'x("q")']  # a space, a clash once cleaned, too long, quotes
    mip = MatrixMIP(np.ones(4), csr_matrix(np.ones((1, 4))), np.array([1.0]), np.array([np.inf]), np.zeros(4),
                    np.ones(4), np.ones(4, bool), lambda: ["cover"], lambda: cols)
    names = mip_names(mip)
    assert names.cols[0] == "x(a_b,c)" and names.cols[1] == "x(a_b,c)~2" and names.cols[3] == "x(_q_)"
    assert len(names.cols[2]) == MAX_NAME and names.changed[names.cols[2]] == long
    assert names.changed["x(a_b,c)"] == "x(a b,c)" and "cover" not in names.changed
    for ext in (".lp", ".mps"):
        write(mip, tmp_path / f"m{ext}", names)
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        assert h.readModel(str(tmp_path / f"m{ext}")) == highspy.HighsStatus.kOk
        assert list(h.getLp().col_names_) == names.cols
        h.run()
        assert h.getInfo().objective_function_value == pytest.approx(1.0)

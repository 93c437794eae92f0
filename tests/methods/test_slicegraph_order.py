"""SliceGraph on an order the user gives (Archer sec. 4; issue 33, item 3): `-O order=FILE`
and `options={"order": names}` split that order, and nothing else, optimally."""
from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from partdsl import parse, solve
from partdsl.core.dense import topological_order
from partdsl.core.ir import Spec
from partdsl.evaluator.evaluate import evaluate

from tests.support import run_part
from tests.support.effort import examples
from tests.support.strategies import mtpp_specs

BRANCHES = """
graph br {
  node a { work 2 ms; out 1 MB }
  node b { work 3 ms; out 1 MB }
  node c { work 1 ms; out 1 MB }
  node d { work 4 ms; out 1 MB }
  node e { work 2 ms; out 1 MB }
  a -> b -> e
  a -> c -> d -> e
}
platform { device gpu[2] { link 1 GB/s } }
minimize bottleneck
"""


def best_split_of(spec: Spec, order: list[int]) -> float:
    """The brute force: every cut of `order` into at most k consecutive runs, run i on stage i,
    scored by the evaluator; inf when none is feasible."""
    n, k = len(order), len(spec.platform.devices)
    best = math.inf
    for runs in range(1, min(k, n) + 1):
        for cuts in itertools.combinations(range(1, n), runs - 1):
            dev = np.empty(spec.dense.n, dtype=np.int64)
            for i, (lo, hi) in enumerate(zip((0, *cuts), (*cuts, n))):
                dev[order[lo:hi]] = i
            ev = evaluate(spec, dev)
            if ev.feasible:
                best = min(best, ev.objective)
    return best


# the filter drops most drawn specs (colocation and groups are drawn often): expected, not a slow strategy
@settings(max_examples=examples(40), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(mtpp_specs(max_nodes=6).filter(lambda s: not s.constraints.colocate and all(nd.group is None for nd in s.graph.nodes)),
       st.data())
def test_the_split_of_a_given_order_is_the_best_of_that_order(spec: Spec, data: st.DataObject) -> None:
    d = spec.dense
    keys = np.array(data.draw(st.permutations(range(d.n))), dtype=float)
    order = topological_order(d.n, d.src, d.dst, keys)
    assert order is not None
    want = best_split_of(spec, order)
    r = solve(spec, method="slicegraph", options={"order": [d.names[i] for i in order]})
    if math.isinf(want):
        assert not r.status.has_solution(), r.log
    else:
        assert r.status.has_solution(), r.log
        assert math.isclose(r.objective, want, rel_tol=1e-9, abs_tol=1e-9), (r.objective, want, order)


def test_the_order_changes_the_answer_and_the_cli_reads_it(tmp_path: Path) -> None:
    spec = tmp_path / "br.part"
    spec.write_text(BRANCHES)
    s = parse(BRANCHES)
    listed = tmp_path / "order.txt"
    listed.write_text("# node names, one a line\na\nb\nc\nd\ne\n")
    as_json = tmp_path / "order.json"
    as_json.write_text('["a", "c", "d", "b", "e"]')
    got = {}
    for f in (listed, as_json):
        p = run_part("solve", str(spec), "--method", "slicegraph", "-O", f"order={f}", "--json")
        assert p.returncode == 0, p.stderr
        got[f.suffix] = float(p.stdout.split('"objective":')[1].split(",")[0])
    order = {".txt": [0, 1, 2, 3, 4], ".json": [0, 2, 3, 1, 4]}
    for suffix, value in got.items():
        assert value == best_split_of(s, order[suffix])
    assert got[".txt"] != got[".json"]  # 8 ms (b on its own) against 9


def test_an_order_against_the_edges_is_followed_where_they_allow_and_said(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from partdsl.cli.main import main

    s = parse(BRANCHES)
    r = solve(s, method="slicegraph", options={"order": ["e", "d", "c", "b", "a"]})
    assert any("5 edges go against the order given" in ln for ln in r.log), r.log
    kahn = topological_order(5, s.dense.src, s.dense.dst, np.array([4.0, 3, 2, 1, 0]))
    assert r.objective == best_split_of(s, kahn)
    (tmp_path / "br.part").write_text(BRANCHES)
    (tmp_path / "rev.txt").write_text("e\nd\nc\nb\na\n")
    assert main(["solve", str(tmp_path / "br.part"), "--method", "slicegraph", "-O", f"order={tmp_path / 'rev.txt'}"]) == 0
    assert "note       slicegraph: 5 edges go against the order given" in capsys.readouterr().out


def test_bad_orders_are_refused_with_the_reason(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from partdsl.cli.main import main

    spec = tmp_path / "br.part"
    spec.write_text(BRANCHES)
    cases = {"unknown.txt": ("a\nbb\n", "order: unknown node 'bb'"),
             "twice.txt": ("a\nb\na\n", "node 'a' is listed twice"),
             "bad.json": ('{"a": 1}', "not a list of node names"),
             "broken.json": ('["a", ', "not JSON")}
    for name, (text, message) in cases.items():
        (tmp_path / name).write_text(text)
        code = main(["solve", str(spec), "--method", "slicegraph", "-O", f"order={tmp_path / name}"])
        err = capsys.readouterr().err
        assert code == 2 and message in err, err
    code = main(["solve", str(spec), "--method", "slicegraph", "-O", f"order={tmp_path / 'none.txt'}"])
    err = capsys.readouterr().err
    assert code == 2 and "cannot read it" in err, err
    code = main(["solve", str(spec), "--method", "topo", "-O", f"order={tmp_path / 'unknown.txt'}"])
    err = capsys.readouterr().err
    assert code == 2 and "method topo has no option 'order'" in err, err


def test_brkga_scores_population_times_generations_candidates() -> None:
    """Archer App. C.1: BRKGA at 100 x 100 is 10^4 candidate evaluations (brkga-10000) and
    10 x 10 is 100; the elite carried over unscored does not shrink the count (issue 74).
    The best yielded is the best of every chromosome scored."""
    from partdsl.kernels.bottleneck.order_search import brkga_keys

    for pop, gens in ((100, 100), (10, 10), (7, 3)):
        seen: list[float] = []

        def fitness(X: np.ndarray) -> np.ndarray:
            f = np.abs(X - 0.3).sum(axis=1)
            seen.extend(f)
            return f

        found = list(brkga_keys(fitness, 5, np.random.default_rng(0), pop, gens))
        assert len(seen) == pop * gens, (pop, gens, len(seen))
        assert found[-1][1] == min(seen)
        assert [f for _, f in found] == sorted((f for _, f in found), reverse=True)  # each yield improves

"""Data-parallel stages (issue 30, item 1; Tarnawski App. C.2, PipeDream's cost model):
`subject to { replicate <= r }` lets a stage run on up to r devices of its class, its load
(one-device load + 4 (r - 1) |w| / (r B)) / r. The evaluator against hand counts, `topo`
against brute force over every assignment and replication factor on chains (where one
order holds every acyclic split), the refusals of the methods that do not model it. The
random specs of tests/support/strategies.py draw `replicate`, so the oracle checks every bound."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from partdsl import GraphBuilder, PartError, SpecBuilder, parse, solve
from partdsl.core.assignment import to_array
from partdsl.core.validate import validate
from partdsl.evaluator.evaluate import evaluate

from tests.support import run_part

SPEC = """
graph g {
  node a { work 8 ms; params 10 MB; out 10 MB }
  node b { work 2 ms; params 40 MB }
  a -> b
}
platform { device gpu[4] { link 10 GB/s } }
minimize bottleneck
subject to { replicate <= 4 }
"""


def _score(text: str, where: dict[str, str], reps: dict[str, int]):  # type: ignore[no-untyped-def]
    spec = parse(text)
    r = np.ones(spec.dense.D, dtype=np.int64)
    for d, k in reps.items():
        r[spec.dense.devices.index(d)] = k
    return evaluate(spec, to_array(spec, where), replicas_of=r)


def test_a_replicated_stage_divides_its_load_after_paying_the_weight_sync() -> None:
    # a on 3 replicas: sync 4 x 2 x 10 MB / (3 x 10 GB/s) = 2.667 ms; (8 + 1 out + 2.667) / 3
    ev = _score(SPEC, {"a": "gpu[0]", "b": "gpu[1]"}, {"gpu[0]": 3})
    assert ev.feasible and ev.loads["gpu[0]"] == pytest.approx((8 + 1 + 8 / 3) / 3)
    assert ev.parts["gpu[0]"]["sync"] == pytest.approx(8 / 3) and ev.loads["gpu[1]"] == pytest.approx(3.0)
    # 1 GB of weights: the sync (266.7 ms) makes replication a loss
    heavy = SPEC.replace("params 10 MB", "params 1 GB")
    assert _score(heavy, {"a": "gpu[0]", "b": "gpu[1]"}, {"gpu[0]": 3}).objective == pytest.approx((9 + 800 / 3) / 3)


def test_under_gpipe_the_sync_is_paid_in_the_backward_phase() -> None:
    text = """graph g { node f { work 6 ms; params 10 MB; group l } node b { work 9 ms; group l; backward } f -> b }
    platform { device gpu[2] { link 10 GB/s } }
    minimize bottleneck training gpipe
    subject to { colocate by group; replicate <= 2 }"""
    ev = _score(text, {"f": "gpu[0]", "b": "gpu[0]"}, {"gpu[0]": 2})
    sync = 4 * 1 * 10e6 / (2 * 10e9) * 1e3  # 2 ms
    assert ev.parts["gpu[0]"]["fw"] == pytest.approx(6 / 2) and ev.parts["gpu[0]"]["bw"] == pytest.approx((9 + sync) / 2)
    assert ev.objective == pytest.approx(3 + 5.5)


def test_replicas_beyond_the_class_or_the_limit_are_violations() -> None:
    ev = _score(SPEC, {"a": "gpu[0]", "b": "gpu[1]"}, {"gpu[0]": 3, "gpu[1]": 2})
    assert [v.kind for v in ev.violations] == ["replicas"] and "take 5 devices" in ev.violations[0].message
    ev = _score(SPEC.replace("replicate <= 4", "replicate <= 2"), {"a": "gpu[0]", "b": "gpu[1]"}, {"gpu[0]": 3})
    assert [v.kind for v in ev.violations] == ["replicas"] and "at most 2" in ev.violations[0].message


def test_topo_and_brute_choose_the_replicas_and_the_answer_reads_back(tmp_path: Path) -> None:
    spec = parse(SPEC)
    topo, brute = solve(spec, method="topo"), solve(spec, method="brute")
    assert brute.status.value == "optimal" and topo.objective == pytest.approx(brute.objective)
    assert topo.objective == pytest.approx((8 + 1 + 8 / 3) / 3) and topo.replicas == {"gpu[0]": 3}
    path = tmp_path / "s.part"
    path.write_text(SPEC)
    out = run_part("solve", str(path), "--method", "topo", "--json")
    assert json.loads(out.stdout)["replicas"] == {"gpu[0]": 3}
    (tmp_path / "r.json").write_text(out.stdout)
    again = run_part("eval", str(path), str(tmp_path / "r.json"), "--json")
    assert json.loads(again.stdout)["objective"] == pytest.approx(topo.objective)
    table = run_part("solve", str(path), "--method", "topo").stdout
    assert "replicas" in table and "sync" in table


@st.composite
def chains(draw):  # type: ignore[no-untyped-def]
    n = draw(st.integers(2, 4))
    g = GraphBuilder("c")
    for i in range(n):
        g.node(f"v{i}", float(draw(st.integers(1, 20))), params=draw(st.sampled_from([0, 1e6, 1e8])),
               out=draw(st.sampled_from([None, 1e6, 3e7])))
    g.chain(*[f"v{i}" for i in range(n)])
    b = SpecBuilder(g).device("gpu", draw(st.integers(2, 4)), link="10 GB/s")
    if draw(st.booleans()):
        b = b.device("tpu", draw(st.integers(1, 2)), link="5 GB/s", speed=2.0)
    return b.minimize("bottleneck").subject_to(acyclic=True, replicate=draw(st.integers(2, 3))).build()


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(chains())
def test_topo_and_dp_are_exact_on_chains_with_replicas(spec) -> None:  # type: ignore[no-untyped-def]
    """On a chain under `acyclic` every feasible split is a split of its one order, so the
    order DP with a kind of segment per (class, replicas) is exact: it equals brute force
    over every assignment and every replication factor, and so does the DP over ideals
    (which proves it; on other DAGs: tests/kernels/test_kernels.py, against brute force)."""
    topo, dp, brute = solve(spec, method="topo"), solve(spec, method="dp"), solve(spec, method="brute")
    assert brute.status.value == "optimal"
    assert topo.objective == pytest.approx(brute.objective, rel=1e-9, abs=1e-9)
    assert dp.status.value == "optimal" and dp.objective == pytest.approx(brute.objective, rel=1e-9, abs=1e-9)
    assert brute.bound <= brute.objective + 1e-9


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_the_max_load_ip_with_replicas_equals_brute_force(data) -> None:  # type: ignore[no-untyped-def]
    """Tarnawski's max-load IP with a binary per (device, factor) (models/maxload_replicas.py)
    proves the optimum over every assignment and replication factor, under overlap, GPipe
    and overflow too (which topo and dp refuse), on HiGHS and SCIP, and with the symmetry rows
    (a start's factors move with its stages when its devices are relabelled)."""
    from tests.support.strategies import specs

    spec = data.draw(specs(max_nodes=4, kinds=("bottleneck",), max_devices=4))
    c = spec.constraints
    assume(not c.acyclic and c.max_stages is None)
    # parameters whose weight sync is of the order of the compute (strategies' reach 4 GB: seconds)
    nodes = tuple(replace(nd, params=data.draw(st.sampled_from([0.0, 1e6, 1e7, 5e7]))) for nd in spec.graph.nodes)
    spec = replace(spec, graph=replace(spec.graph, nodes=nodes),
                   constraints=replace(c, replicate=data.draw(st.sampled_from([2, 3]))))
    try:
        validate(spec)
    except PartError:
        assume(False)
    brute = solve(spec, method="brute", gap=0.0, time_limit=1e6)
    for solver, options in (("highs", {}), ("scip", {}), ("highs", {"symmetry": 1})):
        r = solve(spec, method="exact", solver=solver, gap=0.0, time_limit=60, options=options)
        assert r.status == brute.status
        if brute.status.value == "optimal":
            assert r.objective == pytest.approx(brute.objective, rel=1e-6, abs=1e-6)
            assert r.bound <= brute.objective + 1e-6 * max(1.0, brute.objective)


FOLD = """
graph g {
  node a { work 4 ms; params 1 MB; out 20 MB }
  node b { work 4 ms; params 1 MB; out 20 MB }
  node c { work 4 ms; params 1 MB; out 20 MB }
  node d { work 4 ms; params 1 MB }
  a -> b -> c -> d
}
PLATFORM
minimize bottleneck
subject to { replicate <= 4 }
"""
FLAT = "platform { device gpu[4] { link 10 GB/s } }"
LEVELS = "platform { server node[2] { device gpu[2] { link 10 GB/s }; link 10 GB/s }; link 10 GB/s }"


@pytest.mark.parametrize("platform", [FLAT, LEVELS], ids=["flat", "levels"])
def test_the_load_search_merges_a_pipeline_into_one_replicated_stage(platform: str) -> None:
    """A pipeline of four 4 ms stages pays 2 + 2 ms of transfers in the middle (8 ms); one
    stage on all four GPUs pays (16 + 4 * 3 * 4 MB / (4 * 10 GB/s)) / 4 = 4.3 ms. The unit
    moves keep every device busy; the factor moves (a stage takes over its neighbour with
    its replicas, Search.refactor) find it; brute force over every assignment and factor agrees."""
    from partdsl.kernels.bottleneck import load_search

    spec = parse(FOLD.replace("PLATFORM", platform))
    brute = solve(spec, method="brute")
    found = solve(spec, method="load_search", time_limit=10)  # topo's DP already has a kind (gpu, 4)
    assert brute.objective == pytest.approx(4.3) and found.objective == pytest.approx(4.3)
    assert found.replicas == {"gpu[0]": 4} and found.evaluation.feasible
    pipeline = np.arange(4)  # from the unreplicated pipeline, a node per GPU: the factor moves
    last = list(load_search.improve(spec, pipeline, stall=3))[-1]
    assert last.replicas is not None and sorted(last.replicas.tolist()) == [1, 1, 1, 4]
    assert evaluate(spec, last.devices, replicas_of=last.replicas).objective == pytest.approx(4.3)


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_the_load_search_answers_with_valid_replicas_never_below_the_optimum(data) -> None:  # type: ignore
    """On random specs with `replicate` (a third on server levels or direct links, where the
    replicas are placed), every answer of the load search is one the evaluator accepts with
    its factors (its layout keeps evaluator/replicas.py's rules), and none beats brute force."""
    from tests.support.oracle import check_load_search
    from tests.support.strategies import on_levels, specs

    spec = data.draw(specs(max_nodes=5, kinds=("bottleneck",), max_devices=4))
    nodes = tuple(replace(nd, params=data.draw(st.sampled_from([0.0, 1e6, 1e7]))) for nd in spec.graph.nodes)
    spec = replace(spec, graph=replace(spec.graph, nodes=nodes),
                   constraints=replace(spec.constraints, replicate=data.draw(st.sampled_from([2, 3, 4]))))
    if data.draw(st.integers(0, 2)) == 0:
        spec = data.draw(on_levels(spec))
    check_load_search(spec)


def test_methods_that_do_not_model_replicas_refuse_by_name(tmp_path: Path) -> None:
    spec = parse(SPEC)
    for method in ("local_search", "slicegraph", "metis"):
        with pytest.raises(PartError, match="does not model replication") as e:
            solve(spec, method=method)
        assert "topo" in (e.value.hint or "") and "exact" in (e.value.hint or "")
    acyclic = parse(SPEC.replace("replicate <= 4", "replicate <= 4; acyclic"))  # Tarnawski's IP, its stage rows
    assert solve(acyclic, method="exact").objective == pytest.approx(solve(acyclic, method="brute").objective)
    gpipe = SPEC.replace("minimize bottleneck", "minimize bottleneck overlap")
    for method in ("topo", "dp"):
        with pytest.raises(PartError, match="replicas with overlap or GPipe"):
            solve(parse(gpipe), method=method)
    with pytest.raises(PartError, match="replicas with a stage limit"):
        solve(parse(SPEC.replace("replicate <= 4", "replicate <= 4; stages <= 2")), method="dp")
    with pytest.raises(PartError, match="applies to `minimize bottleneck`"):
        parse(SPEC.replace("minimize bottleneck", "minimize latency"))
    path = tmp_path / "s.part"
    path.write_text(SPEC)
    r = run_part("solve", str(path), "--method", "slicegraph")
    assert r.returncode == 2 and "replicate <= 4" in r.stderr


def test_the_builder_writes_what_the_text_says() -> None:
    g = GraphBuilder("g").node("a", 8.0, params="10 MB", out="10 MB").node("b", 2.0, params="40 MB").edge("a", "b")
    built = SpecBuilder(g).device("gpu", 4, link="10 GB/s").minimize("bottleneck").subject_to(replicate=4).build()
    assert built == parse(SPEC)


def test_bounds_exports_and_plans_that_model_no_replicas_say_so(tmp_path: Path) -> None:
    """`part bound` keeps only the bounds that hold with replicas (Archer's LP and MIP
    relaxations would not); the MIP export writes the max-load IP with its factor columns and
    refuses Archer's; the framework plans refuse rather than drop the factors."""
    from partdsl.methods.hierarchy import hierarchy

    spec = parse(SPEC)
    h = hierarchy(spec, time_limit=10)
    assert h.bounds["simple"].value == pytest.approx(2.5) and h.best == pytest.approx((8 + 1 + 8 / 3) / 3)
    assert all(h.bounds[k].value is None and "replicated" in h.bounds[k].note
               for k in ("lp", "bottleneck", "bottleneck_guess", "exact"))
    path = tmp_path / "s.part"
    path.write_text(SPEC)
    r = run_part("export", str(path), "--lp", str(tmp_path / "m.lp"))  # the max-load IP models them
    assert r.returncode == 0 and "replicas(gpu(0),4)" in (tmp_path / "m.lp").read_text()
    path.write_text(SPEC.replace("replicate <= 4", "replicate <= 4; acyclic"))
    r = run_part("export", str(path), "--lp", str(tmp_path / "m.lp"))  # with its stage rows
    assert r.returncode == 0 and "stage_order(" in (tmp_path / "m.lp").read_text()
    path.write_text(SPEC)
    (tmp_path / "r.json").write_text(run_part("solve", str(path), "--method", "topo", "--json").stdout)
    r = run_part("export", str(path), "--plan", str(tmp_path / "r.json"), "--format", "megatron")
    assert r.returncode == 2 and "replicated stages" in r.stderr

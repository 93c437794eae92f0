"""Schedules with data-parallel batch splits (DiviML sec. III-IV, core/schedule.py): the
schedule evaluator's numbers by hand, each violation named, the JSON form through
`part eval`, and list schedules of random assignments checked against the cheap bounds."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from partdsl.core.errors import PartError
from partdsl.core.ir import Spec
from partdsl.core.schedule import Piece, Schedule, from_json, whole_batches
from partdsl.dsl.parser import parse
from partdsl.evaluator.evaluate import evaluate
from partdsl.evaluator.schedule_eval import evaluate_schedule, list_schedule
from partdsl.methods.bounds import bound

from tests.support.strategies import assignments, specs

TWO_GPUS = """
graph g {
  node a { work 2 ms on gpu, 3 ms on gpu batch 2; out 1 MB }
  node b { work 1 ms on gpu, 1.5 ms on gpu batch 2; out 1 MB }
  a -> b
}
platform { device gpu[2] { link 1 GB/s; batch 1, 2; memory 1 GB } }
"""


def spec_of(objective: str, links: str = ""):  # type: ignore[no-untyped-def]
    platform = "platform { device gpu[2] { link 1 GB/s; batch 1, 2; memory 1 GB } "
    return parse(TWO_GPUS.replace(platform + "}", platform + links + " }") + objective)


def P(node: int, device: int, lo: int, hi: int, start: float | None = None) -> Piece:
    return Piece(node, device, tuple(range(lo, hi)), start)


def test_a_split_batch_runs_on_both_devices() -> None:
    spec = spec_of("maximize throughput batch 4 split 2")
    one = evaluate(spec, np.array([0, 0]))  # a: 2 x 3 ms, b: 2 x 1.5 ms on gpu[0]
    assert one.feasible and one.objective == pytest.approx(4 / 9 * 1e3)
    half = Schedule((P(0, 0, 0, 2), P(0, 1, 2, 4), P(1, 0, 0, 2), P(1, 1, 2, 4)), 4)
    ev = evaluate_schedule(spec, half)
    # each GPU: a on 2 samples (3 ms), then b on the same 2 (1.5 ms): no transfer at all
    assert ev.feasible and ev.objective == pytest.approx(4 / 4.5 * 1e3)
    assert [p.start for p in ev.schedule.pieces] == [0.0, 0.0, 3.0, 3.0]


def test_one_input_crosses_through_host_memory_or_a_direct_link() -> None:
    spec = spec_of("maximize throughput batch 2")
    crossed = Schedule((P(0, 0, 0, 2), P(1, 1, 0, 2)), 2)
    # a on gpu[0] (3 ms), one input's 1 MB out to host and back in at 1 GB/s (1 + 1 ms), b (1.5 ms)
    assert evaluate_schedule(spec, crossed).objective == pytest.approx(2 / 6.5 * 1e3)
    linked = spec_of("maximize throughput batch 2", "link gpu[0] <-> gpu[1] 10 GB/s")
    assert evaluate_schedule(linked, crossed).objective == pytest.approx(2 / 4.6 * 1e3)


def test_latency_by_tasks_serializes_a_device_and_by_subgraphs_does_not_apply() -> None:
    spec = parse("""
    graph g { node s { work 1 ms } node x { work 5 ms } node y { work 5 ms } s -> {x, y} }
    platform { device gpu[2] { link 1 GB/s } }
    minimize latency by tasks
    """)
    assert spec.objective.kind == "task_latency"
    assert evaluate(spec, np.array([0, 0, 0])).objective == pytest.approx(11.0)
    assert evaluate(spec, np.array([0, 0, 1])).objective == pytest.approx(6.0)
    assert parse("graph g { node a { work 1 ms } } platform { device d[1] } minimize latency by subgraphs"
                 ).objective.kind == "latency"


@pytest.mark.parametrize("pieces, kind", [
    ([P(0, 0, 0, 1, 0.0), P(1, 0, 0, 2, 3.0)], "samples"),  # sample 1 of a runs nowhere
    ([P(0, 0, 0, 2, 0.0), P(0, 1, 1, 2, 0.0), P(1, 0, 0, 2, 3.0)], "samples"),  # sample 1 of a twice
    ([P(0, 0, 0, 2, 0.0), P(1, 1, 0, 2, 3.0)], "precedence"),  # b's inputs need 2 ms from host memory
    ([P(0, 0, 0, 2, 0.0), P(1, 0, 0, 2, 2.0)], "overlap"),  # b starts on gpu[0] before a ends (and early)
])
def test_each_violation_is_named(pieces: list[Piece], kind: str) -> None:
    spec = spec_of("maximize throughput batch 2")
    ev = evaluate_schedule(spec, Schedule(tuple(pieces), 2))
    assert not ev.feasible and kind in {v.kind for v in ev.violations}


def test_a_device_runs_its_share_of_a_node_in_one_go() -> None:
    """eq. 5 has one batch per node and device; with batch sizes {1, 2} a share of 2 may run
    as two batches of 1, but back to back, not with another node between them."""
    spec = parse(TWO_GPUS.replace("a -> b", "node c { work 1 ms on gpu } a -> {b, c}") + "maximize throughput batch 2")
    split = Schedule((P(0, 0, 0, 2, 0.0), P(2, 0, 0, 1, 3.0), P(1, 0, 0, 2, 4.0), P(2, 0, 1, 2, 5.5)), 2)
    assert {v.kind for v in evaluate_schedule(spec, split).violations} == {"block"}
    together = Schedule((P(0, 0, 0, 2, 0.0), P(2, 0, 0, 1, 3.0), P(2, 0, 1, 2, 4.0), P(1, 0, 0, 2, 5.0)), 2)
    assert evaluate_schedule(spec, together).feasible


def test_unsupported_batch_sizes_memory_and_pins_are_violations() -> None:
    spec = spec_of("maximize throughput batch 3")
    ev = evaluate_schedule(spec, Schedule((P(0, 0, 0, 3), P(1, 0, 0, 3)), 3))
    assert {v.kind for v in ev.violations} == {"batch"} and "supported: 1, 2" in ev.violations[0].message
    tight = parse(TWO_GPUS.replace("memory 1 GB", "memory 4 MB") + "maximize throughput batch 2")
    # per sample, a holds its 1 MB output, b its 1 MB input and 1 MB output (eq. 6): on one
    # GPU 2 x 3 MB = 6 MB, on two 2 MB and 4 MB
    kinds = {v.kind for v in evaluate(tight, np.array([0, 0])).violations}
    assert kinds == {"memory"}
    assert evaluate(tight, np.array([0, 1])).feasible
    pinned = parse(TWO_GPUS + "maximize throughput batch 2\nsubject to { pin a to gpu[1] }")
    assert {v.kind for v in evaluate(pinned, np.array([0, 0])).violations} == {"placement"}


def test_device_level_constraints_need_one_device_per_node() -> None:
    spec = parse(TWO_GPUS + "maximize throughput batch 2 split 2\nsubject to { contiguous }")
    split = Schedule((P(0, 0, 0, 1), P(0, 1, 1, 2), P(1, 0, 0, 2)), 2)
    assert {v.kind for v in evaluate_schedule(spec, split).violations} == {"split"}
    assert evaluate_schedule(spec, Schedule((P(0, 0, 0, 2), P(1, 1, 0, 2)), 2)).feasible


def test_split_sets_the_granularity_of_data_parallelism() -> None:
    """`split K`: each chunk of L/K samples of a node runs on one device (batched freely there)."""
    halves = Schedule((P(0, 0, 0, 2), P(0, 1, 2, 4), P(1, 0, 0, 2), P(1, 1, 2, 4)), 4)
    assert evaluate_schedule(spec_of("maximize throughput batch 4 split 2"), halves).feasible
    whole = evaluate_schedule(spec_of("maximize throughput batch 4"), halves)
    assert {v.kind for v in whole.violations} == {"granularity"}
    odd = Schedule((P(0, 0, 0, 1), P(0, 1, 1, 2), P(0, 1, 2, 4), P(1, 0, 0, 2), P(1, 0, 2, 4)), 4)
    assert {v.kind for v in evaluate_schedule(spec_of("maximize throughput batch 4 split 2"), odd).violations} \
        == {"granularity"}


def test_split_must_divide_the_batch() -> None:
    with pytest.raises(PartError) as e:
        parse(TWO_GPUS + "maximize throughput batch 6 split 4")
    assert "split 4 does not divide batch 6" in str(e.value)


def test_the_json_form_round_trips_and_part_eval_reads_it(tmp_path: Path) -> None:
    spec = spec_of("maximize throughput batch 4 split 2")
    s = Schedule((P(0, 0, 0, 2), P(0, 1, 2, 4), P(1, 0, 0, 2), P(1, 1, 2, 4)), 4)
    ev = evaluate_schedule(spec, s)
    doc = ev.schedule.to_json(spec)
    assert doc[1] == {"node": "a", "device": "gpu[1]", "samples": [[2, 4]], "start": 0.0}
    again = evaluate_schedule(spec, from_json(spec, doc))
    assert again.objective == ev.objective and again.schedule == ev.schedule
    f = tmp_path / "s.part"
    f.write_text(TWO_GPUS + "maximize throughput batch 4 split 2\n")
    (tmp_path / "s.json").write_text(json.dumps({"schedule": doc}))
    out = subprocess.run([sys.executable, "-m", "partdsl.cli.main", "eval", str(f), str(tmp_path / "s.json"),
                          "--json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["feasible"] and got["objective"] == pytest.approx(ev.objective) and len(got["schedule"]) == 4


@pytest.mark.parametrize("doc, says", [
    ([{"node": "zz", "device": "gpu[0]"}], "unknown node 'zz'"),
    ([{"node": "a", "device": "gpu[0]", "samples": [[0, 9]]}], "ranges within 0..4"),
    ([{"node": "a", "device": "gpu[0]", "start": 0}, {"node": "b", "device": "gpu[0]"}], "some pieces have a start"),
    ({"a": 1}, "non-empty list of pieces"),
    # issue 28, defect 5: impossible starts are input errors, not scores
    ([{"node": "a", "device": "gpu[0]", "start": -4.4}, {"node": "b", "device": "gpu[0]", "start": 2.0}],
     "at least 0"),
    ([{"node": "a", "device": "gpu[0]", "start": float("nan")}, {"node": "b", "device": "gpu[0]", "start": 2}],
     "finite number"),
    ([{"node": "a", "device": "gpu[0]", "start": float("inf")}, {"node": "b", "device": "gpu[0]", "start": 2}],
     "finite number"),
])
def test_bad_schedules_get_a_clear_error(doc: object, says: str) -> None:
    with pytest.raises(PartError) as e:
        from_json(spec_of("maximize throughput batch 4"), doc)
    assert says in str(e.value)


def test_a_shifted_schedule_is_refused_by_part_eval(tmp_path: Path) -> None:
    """Issue 28, defect 5: a valid schedule shifted by -4.4 ms was scored better than the
    optimum ("all constraints satisfied", exit 0); it is an input error now (exit 2)."""
    spec = spec_of("maximize throughput batch 4 split 2")
    doc = evaluate_schedule(spec, Schedule((P(0, 0, 0, 2), P(0, 1, 2, 4), P(1, 0, 0, 2), P(1, 1, 2, 4)), 4)
                            ).schedule.to_json(spec)
    f = tmp_path / "s.part"
    f.write_text(TWO_GPUS + "maximize throughput batch 4 split 2\n")
    (tmp_path / "s.json").write_text(json.dumps({"schedule": [{**p, "start": p["start"] - 4.4} for p in doc]}))
    out = subprocess.run([sys.executable, "-m", "partdsl.cli.main", "eval", str(f), str(tmp_path / "s.json")],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "at least 0" in out.stderr and "Traceback" not in out.stderr, out.stderr


def test_a_piece_where_its_node_has_no_work_is_one_violation() -> None:
    """Issue 28, defect 5: a piece on a class with no work for its node is "unsupported",
    without a spurious placement message or a follow-on precedence error."""
    spec = parse("""
graph g {
  node a { work 2 ms on gpu, 4 ms on cpu; out 1 MB }
  node b { work 1 ms on gpu; out 1 MB }
  a -> b
}
platform { device gpu[1] { link 1 GB/s }; device cpu[1] { host } }
minimize latency by tasks
""")
    ev = evaluate_schedule(spec, Schedule((P(0, 0, 0, 1, 0.0), P(1, 1, 0, 1, 3.0)), 1))  # a: 2 ms, 1 ms out
    assert [v.kind for v in ev.violations] == ["unsupported"]
    assert ev.violations[0].nodes == ("b",) and ev.violations[0].device == "cpu[0]"


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_list_schedules_are_valid_and_within_the_bounds(data: st.DataObject) -> None:
    """An assignment's list schedule never breaks precedence or overlaps on a device, and its
    value respects the proven bound (an upper bound on throughput, a lower one on latency)."""
    spec = data.draw(specs(max_nodes=6, kinds=("task_latency", "throughput")))
    dev = np.array(data.draw(assignments(spec)))
    ev = evaluate(spec, dev)
    assert ev.schedule is not None and ev.schedule.timed
    assert not {"precedence", "overlap", "samples"} & {v.kind for v in ev.violations}
    assert list_schedule(spec, whole_batches(spec, dev)) == ev.schedule
    b = bound(spec)
    if ev.feasible and ev.objective > 0:
        if spec.objective.sense == "max":
            assert ev.objective <= b * (1 + 1e-9)
        else:
            assert b <= ev.objective * (1 + 1e-9)


def test_brute_enumerates_schedules_not_assignments_under_a_schedule_objective() -> None:
    """Every assignment list-scheduled is one schedule of many: here splitting the batch
    beats every assignment, and `brute` (kernels/schedule/brute.py) finds and proves it."""
    from partdsl.methods.solve import solve

    spec = spec_of("maximize throughput batch 4 split 2")
    r = solve(spec, method="brute")
    halves = evaluate_schedule(spec, Schedule((P(0, 0, 0, 2), P(0, 1, 2, 4), P(1, 0, 0, 2), P(1, 1, 2, 4)), 4))
    whole = max(evaluate_schedule(spec, whole_batches(spec, np.array(dev))).objective
                for dev in ((0, 0), (0, 1), (1, 0), (1, 1)))
    assert halves.feasible and halves.objective > whole
    assert r.status.value == "optimal" and r.objective == pytest.approx(halves.objective)


@pytest.mark.parametrize("method", ["met", "eft", "heft"])
def test_the_batched_baselines_split_the_batch_where_it_pays(method: str) -> None:
    """bMET / bGreedy / bHEFT choose a chunk count per device for each node: here half the
    batch on each GPU, each GPU running a then b on its own samples, no transfer."""
    from partdsl.methods.solve import solve

    r = solve(spec_of("maximize throughput batch 4 split 2"), method=method)
    assert r.evaluation.feasible and r.objective == pytest.approx(4 / 4.5 * 1e3)
    assert r.assignment is None and {p["device"] for p in r.schedule if p["node"] == "a"} == {"gpu[0]", "gpu[1]"}
    whole = solve(spec_of("maximize throughput batch 4"), method=method)  # split 1: no data parallelism
    assert whole.evaluation.feasible and whole.assignment is not None


def test_heft_inserts_into_an_idle_gap() -> None:
    """HEFT's insertion: c (ranked after the chain a -> b) fits in slow's idle gap while b
    waits for a's tensor from host memory; MET puts c on slow too, but after b."""
    spec = parse("""
    graph g {
      node a { work 1 ms on fast, 9 ms on slow; out 4 MB }
      node b { work 4 ms on slow, 40 ms on fast }
      node c { work 1 ms on slow, 10 ms on fast }
      a -> b
    }
    platform { device slow[1] { link 1 GB/s } device fast[1] { link 1 GB/s } }
    minimize latency by tasks
    """)
    from partdsl.methods.solve import solve

    heft, met = solve(spec, method="heft"), solve(spec, method="met")
    assert heft.evaluation.feasible and met.evaluation.feasible and met.objective == pytest.approx(14.0)
    # a on fast (1 ms), 4 MB out and in (8 ms), b on slow from 9 to 13; c in the gap 0-1
    assert heft.objective == pytest.approx(13.0)
    starts = {p["node"]: (p["device"], p["start"]) for p in heft.schedule}
    assert starts["c"] == ("slow[0]", 0.0) and starts["b"] == ("slow[0]", 9.0)


def test_heft_puts_nothing_inside_a_span_its_tolerance_let_in() -> None:
    """Found by hypothesis: d (1e-13 ms) fits before c within HEFT's float tolerance, so
    both start at 1; b (0 ms, after d) was then put "before" c although c had begun, inside
    c's run (the evaluator: overlap; no schedule returned). A gap lies before a span only if
    the span starts at or after the piece."""
    text = """
    graph g {
      node a { work 1 ms }  node b { work 0 ms }  node c { work 1 ms }
      node d { work 8.2e-14 ms }  node e { work 0 ms }
      a -> b; a -> c; a -> d; a -> e; b -> e; c -> e; d -> b; d -> e
    }
    platform { device cpu[1] { link 1 GB/s } }
    """
    spec = parse(text + "minimize latency by tasks")
    from partdsl.methods.solve import solve

    r = solve(spec, method="heft")
    assert r.evaluation.feasible and r.objective == pytest.approx(2.0)
    starts = {p["node"]: p["start"] for p in r.schedule}
    assert starts["c"] == 1.0 and starts["b"] >= 2.0
    # two samples: b's zero-length pieces at c's first instant run before c's share, not
    # inside it (the evaluator called that interleaving, "block", and HEFT had no schedule)
    batch = solve(parse(text.replace("d -> b", "b -> d") + "maximize throughput batch 2"), method="heft")
    assert batch.evaluation.feasible and batch.objective == pytest.approx(2 / 4 * 1e3)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(specs(max_nodes=6, kinds=("task_latency", "throughput")), st.sampled_from(["met", "eft", "heft", "sa", "ea"]))
def test_the_baselines_return_valid_schedules(spec, method: str) -> None:  # type: ignore[no-untyped-def]
    """Whatever the spec, the schedule is a schedule: every sample once, in K chunks, no
    overlap, inputs before use; the result is the evaluator's score of it, within the bound."""
    from partdsl.methods.solve import solve

    opts = {"iterations": 40} if method in ("sa", "ea") else {}
    r = solve(spec, method=method, gap=0.0, time_limit=1e6, options=opts)
    ev = r.evaluation
    assert ev is not None and ev.schedule is not None
    assert not {"samples", "granularity", "overlap", "precedence", "block"} & {v.kind for v in ev.violations}
    if r.status.has_solution():
        assert r.objective == ev.objective and ev.feasible
        assert (r.objective <= bound(spec) * (1 + 1e-9)) if spec.objective.sense == "max" \
            else (bound(spec) <= r.objective * (1 + 1e-9))


@pytest.mark.slow  # a long solve (conftest.py: the tiers)
@pytest.mark.parametrize("method", ["sa", "ea"])
def test_the_searches_are_seeded_and_improve_on_their_biased_start(method: str) -> None:
    from partdsl.methods.solve import solve

    spec = parse(Path(__file__).parents[2].joinpath("examples", "diviml_batched.part").read_text()
                 .replace("batch 16", "batch 16 split 4"))
    a = solve(spec, method=method, seed=3, options={"iterations": 300})
    b = solve(spec, method=method, seed=3, options={"iterations": 300})
    assert a.schedule == b.schedule and a.evaluation.feasible
    start = solve(spec, method=method, seed=3, options={"iterations": 0})
    assert a.objective >= start.objective  # maximized: never below the biased string


TIGHT = """
graph g {
  node a { work 2 ms on gpu; params 600 MB; out 1 MB }
  node b { work 2 ms on gpu; params 600 MB; out 1 MB }
  a -> b
}
platform { device gpu[2] { link 1 MB/s; memory 1 GB } }
maximize throughput batch 2
"""


@pytest.mark.parametrize("method", ["met", "eft", "heft"])
def test_the_list_schedulers_keep_within_memory(method: str) -> None:
    """Issue 28: the list schedulers ignored memory. Both nodes on one GPU avoid a 1 s
    transfer but hold 1.2 GB of parameters on a 1 GB device: under `memory hard` the
    scheduler takes the combination that fits (b on the other GPU)."""
    from partdsl.methods.solve import solve

    spec = parse(TIGHT)
    r = solve(spec, method=method)
    assert r.evaluation is not None and r.evaluation.feasible, r.evaluation.violations
    roomy = parse(TIGHT.replace("memory 1 GB", "memory 2 GB"))
    assert solve(roomy, method=method).objective > r.objective  # together, when it fits, is faster


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3), st.integers(0, 8), st.integers(0, 3)),
                min_size=0, max_size=14))
@example([(0, 0, 0, 0), (0, 0, 0, 1), (0, 1, 0, 0)])  # a zero-length piece at a share's first instant
def test_the_one_go_check_is_its_definition(raw: list[tuple[int, int, int, int]]) -> None:
    """The block check by binary search (O(P log P)) finds exactly the shares the naive
    definition finds, and names a piece of another node on that device starting inside."""
    import numpy as np
    from partdsl.core.schedule import Piece, Schedule
    from partdsl.evaluator.schedule_checks import _interleaved

    from tests.support.reference import interleaved

    pieces = [Piece(v, d, (i,), float(t)) for i, (d, v, t, _) in enumerate(raw)]
    start = np.array([float(t) for _, _, t, _ in raw])
    finish = start + np.array([float(u) for _, _, _, u in raw])
    got = _interleaved(Schedule(tuple(pieces), max(len(raw), 1)), start, finish, 1e-9)
    assert {(d, v) for d, v, _ in got} == interleaved([(d, v) for d, v, _, _ in raw], list(start), list(finish), 1e-9)
    for d, v, k in got:
        assert raw[k][0] == d and raw[k][1] != v


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(specs(max_nodes=4, kinds=("task_latency", "throughput")), st.integers(1, 7))
def test_batch_splits_and_piece_costs_are_the_least_time_over_every_multiset_of_pieces(spec: Spec, L: int) -> None:
    """core/schedule.batch_split (one class) and methods/bounds.piece_costs (any allowed
    class) against every multiset of batch sizes summing to the samples
    (tests/reference.least_pieces)."""
    from dataclasses import replace

    from partdsl.core.dense import work_time
    from partdsl.core.schedule import batch_split
    from partdsl.methods.bounds import piece_costs

    from tests.support.reference import least_pieces

    spec = replace(spec, objective=replace(spec.objective, batch=L, split=1))
    d = spec.dense
    for v in range(d.n):
        for c, k in enumerate(spec.platform.classes):
            ref = least_pieces(spec, v, [c], L)
            sizes = batch_split(spec, v, c, L)
            if sizes is None:
                assert ref == math.inf
                continue
            assert sum(sizes) == L
            got = sum(work_time(spec.graph.nodes[v], k.name, k.speed, b) for b in sizes)
            assert math.isclose(got, ref, rel_tol=1e-9, abs_tol=1e-12)
    _, least = piece_costs(spec)
    for v in range(d.n):
        on = [c for c in range(len(spec.platform.classes)) if d.allowed[v, d.dev_class == c].any()]
        ref = least_pieces(spec, v, on, L)
        assert least[v] == ref or math.isclose(least[v], ref, rel_tol=1e-9, abs_tol=1e-12)


@pytest.mark.parametrize("method", ["heft", "eft", "met"])
def test_a_list_scheduler_past_its_time_limit_answers_nothing_and_says_so(method: str) -> None:
    """The list schedulers keep --time-limit (a 20,000-task graph takes them seconds): past
    it they give no schedule, and the run says no solution within the limit, not a proof."""
    from partdsl.core.result import Status
    from partdsl.generators.randwire import RandWire, randwire_spec
    from partdsl.methods.solve import solve

    rw = RandWire(model="er", size=32, modules=8, channels=1, variant="sdep", p=0.2, k=4, m=5, seed=0)
    spec = randwire_spec(rw, "throughput", 128, 4)
    said: list[str] = []
    r = solve(spec, method=method, time_limit=1e-6, progress=said.append)
    assert r.status == Status.NO_SOLUTION
    assert any("time limit passed before every node was placed" in m for m in said)
    assert solve(spec, method=method).status.has_solution()

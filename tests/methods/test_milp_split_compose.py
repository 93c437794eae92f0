"""MILP-SPLIT's composition (methods/milp_split.py `composition`): the DP over (input,
output) devices at batch 1, the modules in turn with release times under a split batch or
on request; a start re-timed to its module's release times (milp_split_modules.released)
never starts a piece before its release, stays a valid schedule, and never ends later
than the whole start moved past the last release."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from partdsl.core.errors import PartError
from partdsl.core.schedule import from_json
from partdsl.evaluator.schedule_eval import as_makespan, evaluate_schedule
from partdsl.generators.randwire import RandWire, randwire_spec
from partdsl.kernels.graph.modules import restrict
from partdsl.kernels.schedule import list_schedulers
from partdsl.methods.milp_split_modules import released
from partdsl.methods.solve import solve

from tests.support.effort import examples


def _composed(spec, **options):  # type: ignore[no-untyped-def]
    logs: list[str] = []
    r = solve(spec, method="milp_split", options={"workers": 1, **options}, progress=logs.append)
    ev = evaluate_schedule(spec, from_json(spec, r.schedule))
    assert ev.feasible and ev.objective == pytest.approx(r.objective)
    return r, " ".join(logs)


@pytest.mark.slow  # four solves without a limit (conftest.py: the tiers)
def test_the_dp_at_batch_one_modules_in_turn_under_a_split_batch_and_either_on_request() -> None:
    rw = RandWire(model="er", size=4, modules=3, p=0.5, seed=2)
    _, log = _composed(randwire_spec(rw))
    assert "single-channel DP" in log and "in turn" not in log
    batched = randwire_spec(rw, "throughput", 8, 4)
    turn, log = _composed(batched)
    assert "modules in turn with release times" in log and "bridges' ends split" in log
    dp, log = _composed(batched, compose="dp")
    assert "single-channel DP" in log and "pair (" in log
    for r in (turn, dp):  # either way an upper bound never below the answer (throughput: higher is better)
        assert r.bound >= r.objective * (1 - 1e-9)
    _, log = _composed(randwire_spec(rw), compose="rolling")
    assert "modules in turn" in log


def test_a_composition_that_does_not_apply_is_refused_with_one_that_does() -> None:
    wdep = randwire_spec(RandWire(model="er", size=4, modules=3, p=0.5, channels=2, variant="wdep", seed=1))
    with pytest.raises(PartError, match="single-channel") as e:
        solve(wdep, method="milp_split", options={"workers": 1, "channels": 2, "compose": "dp"})
    assert "compose=rolling" in (e.value.hint or "")
    with pytest.raises(PartError, match="unknown composition"):
        solve(wdep, method="milp_split", options={"compose": "greedy"})


@settings(max_examples=examples(20), deadline=None, suppress_health_check=list(HealthCheck))
@given(st.integers(0, 10_000), st.sampled_from(((1, 1), (8, 4), (4, 2))), st.data())
def test_a_start_re_timed_to_its_releases_is_valid_and_never_later_than_moved(seed: int, batch: tuple[int, int],
                                                                            data: st.DataObject) -> None:
    L, K = batch
    spec = randwire_spec(RandWire(model="er", size=5, modules=2, p=0.5, seed=seed),
                         "latency" if L == 1 else "throughput", L, K)
    sub = restrict(spec, list(range(1, 6)))  # the first module, the stem left out: its input arrives late
    n, D = sub.dense.n, sub.dense.D
    release = np.array(data.draw(st.lists(st.floats(0, 40), min_size=n * D, max_size=n * D))).reshape(n, D)
    start = list_schedulers.schedule(sub, "heft")
    timed = evaluate_schedule(sub, released(sub, start, release))
    assert timed.feasible, timed.violations
    for p in timed.schedule.pieces:
        assert p.start >= release[p.node, p.device] - 1e-9
    alone = as_makespan(sub, evaluate_schedule(sub, start).objective)
    assert as_makespan(sub, timed.objective) <= release.max() + alone + 1e-6


def test_a_module_without_time_for_its_milp_keeps_the_best_of_heft_and_the_schedule_it_is_given() -> None:
    """The whole graph's HEFT on a module's nodes is one more start in turn (milp_split_turns.in_turn):
    with no time for the MILP the module keeps the better of its own HEFT and that one.
    The one given here is the module's optimum, which its own HEFT misses on this draw."""
    from partdsl.methods.milp_split_modules import solve_module

    spec = randwire_spec(RandWire(model="er", size=5, modules=2, p=0.5, seed=7, regime="roofline"), "throughput", 4, 2)
    sub = restrict(spec, list(range(1, 6)))
    release = np.full((sub.dense.n, sub.dense.D), 3.0)
    best = from_json(sub, solve(sub, method="exact").schedule)
    ends = [as_makespan(sub, evaluate_schedule(sub, released(sub, s, release)).objective)
            for s in (best, list_schedulers.schedule(sub, "heft"))]
    assert ends[0] < ends[1] - 1e-6  # the draw this test needs: HEFT is not optimal on it
    r = solve_module(sub, release, 0.0, None, None, given=(best,))
    assert r.makespan == pytest.approx(ends[0])


def test_modules_in_turn_offer_an_answer_after_each_module_and_every_one_is_a_valid_schedule() -> None:
    from partdsl.core.events import Candidate
    from partdsl.methods.milp_split import run

    spec = randwire_spec(RandWire(model="er", size=5, modules=4, p=0.4, seed=3), "throughput", 8, 4)
    found = [e for e in run(spec, workers=1, module_limit=0.5) if isinstance(e, Candidate)]
    partial = [c for c in found if "HEFT after" in c.label]
    assert [c.label.split(" of ")[0] for c in partial] == [f"MILP-SPLIT (modules 1-{k}" for k in (1, 2, 3)]
    for c in found:
        ev = evaluate_schedule(spec, c.schedule)
        assert ev.feasible, (c.label, ev.violations)
        assert sorted(p.node for p in c.schedule.pieces if 0 in p.samples) == list(range(spec.dense.n))


def test_past_the_deadline_the_modules_left_take_hefts_pieces() -> None:
    """Modules in turn stop at their deadline: the first module is solved, the rest take the
    whole graph's HEFT pieces (a module's own starts on DenseNet-121's 941 nodes ran 4 s past
    it), and the composed schedule is valid and complete."""
    from partdsl.methods.milp_split_modules import ModulePlan
    from partdsl.methods.milp_split_turns import in_turn
    from partdsl.runtime.deadline import Deadline

    spec = randwire_spec(RandWire(model="er", size=5, modules=4, p=0.4, seed=3), "throughput", 8, 4)
    plan = ModulePlan(spec, 1, 4)
    steps = in_turn(spec, plan, Deadline.after(0.0), 0.5, None, None, None, lookahead=0)
    try:
        while True:
            next(steps)
    except StopIteration as done:
        sched, why = done.value
    assert len(plan.modules) == 4 and why.startswith("modules 1-1 of 4 in turn, HEFT after (time limit)"), why
    ev = evaluate_schedule(spec, sched)
    assert ev.feasible, ev.violations
    assert sorted(p.node for p in sched.pieces if 0 in p.samples) == list(range(spec.dense.n))

"""Method `auto` (issue 32, item 1; the default): a portfolio that answers whenever
one of its members does, proves what its members prove, and says which member won.
benchmarks/auto.py compares it with every single method on the bundled workloads."""
from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from partdsl import parse_file
from partdsl.core.ir import Spec
from partdsl.methods import auto
from partdsl.methods.registry import METHODS
from partdsl.methods.solve import solve

from tests.support import EXAMPLES, run_part
from tests.support.effort import examples
from tests.support.oracle import KINDS, TOL, oracle, tiny_specs
from tests.support.strategies import dp_replicas


def test_auto_names_the_member_it_kept() -> None:
    spec = parse_file(EXAMPLES / "mtpp_overflow.part")
    # a limit: without one, the long searches share 5 s, which a busy CI worker can spend
    # before dp's proof (seen once: 'feasible'); that budget has its own test below
    r = solve(spec, method="auto", time_limit=120)
    assert r.method == "auto" and r.chosen in {p.method for p in auto.members(spec, METHODS)}
    assert r.status.value == "optimal"
    assert r.to_json()["chosen"] == r.chosen
    assert any(line.split("  ", 1)[-1].startswith(f"best: {r.chosen}: ") for line in r.log), r.log[-3:]


@pytest.mark.parametrize("kind", KINDS)
def test_auto_is_optimal_on_tiny_specs(kind: str) -> None:
    """On specs the brute force enumerates: where auto enumerates them too (auto.enumerable)
    it says optimal, and whenever it says optimal its value is the optimum over the
    evaluator's whole space; nothing feasible: no answer."""
    @settings(max_examples=examples(15), deadline=None, suppress_health_check=list(HealthCheck))
    @given(tiny_specs(kinds=(kind,)))
    def case(spec: Spec) -> None:
        opt, feasible = oracle(spec)
        r = solve(spec, method="auto", time_limit=60)
        if not feasible:
            assert not r.status.has_solution()
            return
        assert r.status.value == "optimal" or not auto.enumerable(spec), (r.status, r.stopped, r.log[-6:], spec)
        if r.status.value == "optimal":
            assert math.isclose(r.objective, opt, rel_tol=TOL, abs_tol=TOL), (r.objective, opt, r.chosen)

    case()


def test_members_follow_the_objective_the_features_and_the_size() -> None:
    for path, expect in (("mtpp_overflow.part", ["greedy", "dp", "load_search", "exact"]),  # 11 ideals: the DP first
                         ("latency.part", ["fill", "latency_search", "maxload_dp", "exact"]),
                         ("diviml_batched.part", ["heft", "eft", "met", "milp_split", "exact"])):
        spec = parse_file(EXAMPLES / path)
        brute = ["brute"] if auto.enumerable(spec) else []
        assert [p.method for p in auto.members(spec, METHODS)] == expect + brute, path
        kind = spec.objective.kind
        assert all(kind in METHODS[p.method].objectives for p in auto.members(spec, METHODS))
    big = parse_file(EXAMPLES / "rwnn_throughput.part")
    assert big.dense.n > auto.EXACT_NODES or "exact" in [p.method for p in auto.members(big, METHODS)]


@pytest.mark.parametrize("example", ["latency.part", "bert24_training.part"])
def test_a_member_that_refuses_is_skipped_and_the_others_answer(example: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A memory budget of 1 byte: the members built on segment tables (load_search,
    latency_search, and exact through its MIP start) refuse them (a PartError with the
    sizes), as they do on graphs of tens of thousands of nodes; auto logs the refusals and
    answers from the others (the greedy members, which are linear, and the DP over ideals,
    which starts from auto's incumbent instead of a topo split)."""
    spec = parse_file(EXAMPLES / example)
    monkeypatch.setenv("PARTDSL_MEMORY_BYTES", "1")
    r = solve(spec, method="auto", time_limit=30)
    assert r.status.has_solution(), r.log
    skipped = [ln for ln in r.log if "skipped" in ln]
    assert skipped, r.log
    assert r.chosen is not None and all(f"auto: {r.chosen} skipped" not in ln for ln in skipped)


def test_part_solve_says_which_member_won() -> None:
    p = run_part("solve", str(EXAMPLES / "mtpp_overflow.part"))  # auto: the default
    assert p.returncode == 0, p.stderr
    assert "method     auto (answer from " in p.stdout
    # without --time-limit, the long searches share UNTIMED_SECONDS, and the output says so
    assert f"note       auto: no time limit, so dp, load_search, exact share {auto.UNTIMED_SECONDS:g} s" in p.stdout, p.stdout
    # the DP over its 11 ideals proves the optimum before load_search would run (48 ms to stall)
    assert "auto (answer from dp)" in p.stdout and "bound reached" in p.stdout


def test_exact_after_the_searches_starts_from_their_best_without_a_search_of_its_own() -> None:
    """On latency.part auto's exact member gets latency_search's best as its start and no
    share of its own for a start search (before: 0.3 s of latency search again)."""
    r = solve(parse_file(EXAMPLES / "latency.part"), method="auto")
    assert r.status.value == "optimal" and r.objective == pytest.approx(9.0)
    after = r.log[next(i for i, ln in enumerate(r.log) if ln.endswith("auto: exact") or "auto: exact for" in ln):]
    assert any("HiGHS" in ln for ln in after), r.log
    assert not any("latency search:" in ln for ln in after), after


def test_on_large_graphs_the_peers_join_and_one_not_installed_is_skipped(monkeypatch: pytest.MonkeyPatch,
                                                                         tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Above PEER_NODES (lowered here to a 4-layer decoder's size) METIS and Mt-KaHyPar,
    with repair, run after the greedy; the 56,003-node decoder of docs/benchmarks.md is where
    they win. Without pymetis installed, metis is skipped with the reason, and the others
    answer."""
    f = tmp_path / "decoder.part"
    assert run_part("generate", "transformer", "--layers", "4", "--gpus", "4", "-o", str(f)).returncode == 0
    spec = parse_file(f)
    monkeypatch.setattr(auto, "PEER_NODES", 10)
    names = [p.method for p in auto.members(spec, METHODS)]
    assert names[:3] == ["greedy", "metis", "kahypar"], names
    monkeypatch.setitem(sys.modules, "pymetis", None)  # import pymetis fails, as where it is not installed
    r = solve(spec, time_limit=8)
    assert r.status.has_solution() and r.evaluation.feasible
    assert any("auto: metis skipped: " in ln and "'metis' is not installed" in ln for ln in r.log), r.log
    assert any("auto: kahypar for " in ln for ln in r.log), r.log


def test_without_a_limit_a_search_cut_by_the_budget_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """No --time-limit: the long searches share UNTIMED_SECONDS (here 1 ms, so they are
    cut). The run then stopped at the search budget, not with all candidates tried, and
    claims no optimum; with a limit, running out is the time limit's."""
    from partdsl.core.result import Status, Termination

    spec = parse_file(EXAMPLES / "mtpp_overflow.part")
    monkeypatch.setattr(auto, "UNTIMED_SECONDS", 0.001)
    r = solve(spec)
    assert r.stopped == Termination.BUDGET, r.log
    assert r.status == Status.FEASIBLE and r.evaluation.feasible
    assert any("budget" in ln for ln in r.log)
    p = run_part("solve", str(EXAMPLES / "tiny.part"))  # a full budget: dp proves tiny's optimum
    assert p.returncode == 0 and "(search budget)" not in p.stdout, p.stdout


def test_a_stalling_deadline_passes_when_nothing_improves_for_a_quarter_of_the_time() -> None:
    """runtime/deadline.Stalling: not stalled before the search answers (better() = inf)
    nor within `least` seconds of its last progress; stalled after; always at `at`."""
    import time

    from partdsl.runtime.deadline import Stalling

    t = time.monotonic()
    hard = t + 60
    assert not Stalling(hard, since=t - 10, origin=t - 10, better=lambda: math.inf, least=0.01).passed()
    assert not Stalling(hard, since=t, origin=t, better=lambda: t, least=5).passed()
    # 10 s of searching, the last 3 without progress: more than max(0.01, a quarter of 10 s)
    assert Stalling(hard, since=t - 10, origin=t - 10, better=lambda: t - 3, least=0.01).passed()
    assert not Stalling(hard, since=t - 10, origin=t - 10, better=lambda: t - 2, least=0.01).passed()
    assert Stalling(t - 1, since=t, origin=t, better=lambda: math.inf).passed()
    assert Stalling(t + 1).left() > 0.5  # a solver is handed the hard limit


def test_without_a_limit_the_search_stops_when_it_stalls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 1,000-operator decoder and a search budget of 10 minutes: the load search finds
    its best within about a second and then nothing better, so auto stops it long before the
    budget and says why; the DP over ideals, which cannot prove anything here (no
    `acyclic`), is left out above DP_UNTIMED_UNITS units, and runs with a limit."""
    from partdsl.core.result import Termination

    f = tmp_path / "decoder.part"
    assert run_part("generate", "transformer", "--layers", "71", "--gpus", "8", "-o", str(f)).returncode == 0
    spec = parse_file(f)
    monkeypatch.setattr(auto, "UNTIMED_SECONDS", 600.0)
    monkeypatch.setattr(auto, "DP_UNTIMED_UNITS", 100)
    r = solve(spec)
    assert r.status.has_solution() and r.evaluation.feasible
    assert r.wall_time_s < 120, r.log
    assert any("auto: load_search stopped when it stalled" in ln for ln in r.log), r.log
    assert r.stopped == Termination.BUDGET
    left = [ln.split("so ", 1)[1].split(" left out")[0].split(", ") for ln in r.log if " left out (" in ln]
    assert left and "dp" in left[0] and not any("auto: dp for" in ln for ln in r.log), r.log
    timed = solve(spec, time_limit=3)
    assert any("auto: dp for" in ln for ln in timed.log), timed.log


@settings(max_examples=examples(40), deadline=None, suppress_health_check=list(HealthCheck))
@given(tiny_specs(kinds=("bottleneck",)))
def test_the_dp_seeded_with_an_incumbent_proves_the_brute_force_optimum(spec: Spec) -> None:
    """How auto runs `dp`: given the value of a feasible split (here a heuristic's), it
    finds no start of its own, and where it is exact (`acyclic`) what it proves is the
    optimum over the evaluator's whole space (the brute force); it never claims less."""
    from dataclasses import replace

    from partdsl.core.events import Candidate, Proven
    from partdsl.evaluator.evaluate import evaluate
    from partdsl.kernels.bottleneck import ideal_dp
    from partdsl.methods import capabilities
    from partdsl.methods.class_view import class_view

    spec = dp_replicas(replace(spec, constraints=replace(spec.constraints, acyclic=True)))
    if capabilities.unmodelled(spec, METHODS["dp"].ignores, {}) or ideal_dp.refusal(spec):
        return
    # the greedy's value; under replicas (the greedy has none) topo's, which chooses them
    start = "topo" if capabilities.unmodelled(spec, METHODS["greedy"].ignores, {}) else "greedy"
    heuristic = solve(spec, method=start)
    brute = solve(spec, method="brute", gap=0.0)
    if not heuristic.status.has_solution() or not brute.status.has_solution():
        return
    events = list(ideal_dp.run(class_view(spec), incumbent=heuristic.objective))  # as solve() hands it over
    assert not any(isinstance(e, Candidate) and "topo" in e.label for e in events)
    for e in events:
        if isinstance(e, Candidate):
            assert evaluate(spec, e.devices, replicas_of=e.replicas).feasible
    proven = [e.bound for e in events if isinstance(e, Proven)]
    assert all(v <= brute.objective + TOL for v in proven)
    if ideal_dp.exact_for(spec) and not spec.dense.backward.any():
        assert proven and math.isclose(proven[0], brute.objective, rel_tol=1e-9, abs_tol=TOL), (proven, brute.objective)


def test_the_first_member_may_use_the_whole_limit_and_the_others_their_share() -> None:
    """The greedy first member's answer is what the others improve on: it gets all the time
    left (HEFT now stops at its deadline, and on 20,000 tasks it needs seconds, more than
    its 5% of a 10 s limit), the middle ones their share, the last one the rest."""
    from partdsl.runtime.deadline import NEVER, Deadline

    limit = Deadline.after(10.0)
    heft = auto.Member("heft", 0.05)
    assert auto._budget(limit, NEVER, heft, last=False, first=True).left() > 9.0
    assert auto._budget(limit, NEVER, heft, last=False).left() < 0.6
    assert auto._budget(limit, NEVER, heft, last=True).left() > 9.0
    assert auto._budget(NEVER, NEVER, heft, last=False, first=True) is NEVER  # no limit: a heuristic runs to its end


def test_a_long_search_that_comes_first_leaves_the_others_time(tmp_path: Path) -> None:
    """On server levels with replicas no greedy models the spec, so the load search comes
    first. It took the whole limit as a first member, and the DP over ideals never ran:
    densenet121 on 8 servers of 4 GPUs, 11.22 ms after 120 s where the DP alone finds
    10.38 in 1 s. Here: an 800-layer PipeDream profile on 4 servers of 4 GPUs, a 4 s limit."""
    import numpy as np
    from partdsl.convert.pipedream_profile import pipedream_spec
    from partdsl.runtime.deadline import NEVER, Deadline

    search = auto.Member("load_search", 0.3, True, stall=True)
    assert auto._budget(Deadline.after(10.0), NEVER, search, last=False, first=True).left() < 3.1
    rng = np.random.default_rng(0)
    layers = [f"node{i} -- Layer -- forward_compute_time={rng.uniform(0.1, 3):.3f}, backward_compute_time="
              f"{rng.uniform(0.1, 5):.3f}, activation_size=1e6, parameter_size={rng.uniform(0, 2e7):.0f}"
              for i in range(800)]
    profile = tmp_path / "graph.txt"
    profile.write_text("\n".join(layers + [f"\tnode{i} -- node{i + 1}" for i in range(799)]) + "\n")
    spec = pipedream_spec(profile, [4, 4], [25e9, 1e9])
    assert [p.method for p in auto.members(spec, METHODS)][:2] == ["load_search", "dp"]
    r = solve(spec, time_limit=4.0)
    assert any("auto: dp for" in line for line in r.log), r.log
    assert r.objective <= solve(spec, method="dp").objective * (1 + 1e-9)


@pytest.mark.parametrize("example,first", [("bert24_training.part", "greedy"), ("latency.part", "fill"),
                                           ("llama_tiny.part", "greedy")])
def test_a_limit_past_before_the_first_member_still_gets_its_linear_answer(example: str, first: str) -> None:
    """Issue 75, item 7: on a machine 3x slower the default method on a 20,000-operator
    decoder at --time-limit 5 returned "no feasible solution". The first member, linear in
    the graph, now runs to its end even when the limit has passed (a limit passed at once
    stands for that machine); its answer is feasible, never called optimal."""
    from partdsl.core.result import Status

    from tests.support import EXAMPLES

    spec = parse_file(EXAMPLES / example)
    r = solve(spec, method="auto", time_limit=1e-9)
    assert r.status == Status.FEASIBLE and r.chosen == first and r.assignment is not None


def test_under_a_limit_a_stalled_search_hands_its_time_to_the_next_member() -> None:
    """Issue 75, item 9: a search that has found nothing better for a while stops before its
    share ends, and the log says which member gets the time; the last member keeps its
    whole share (a limit the user gave is not cut short), and without a limit the stall
    is the search budget's."""
    import time

    from partdsl.core.events import BudgetSpent, Progress
    from partdsl.runtime.deadline import Deadline, Stalling

    now = time.monotonic()
    stalled = Stalling(now + 100.0, since=now - 10.0, origin=now - 10.0, better=lambda: now - 10.0)
    member = auto.Member("load_search", 0.3, True, stall=True)
    said = list(auto._why_stopped(member, stalled, Deadline.after(200.0), "dp"))
    assert len(said) == 1 and isinstance(said[0], Progress)
    assert "load_search stopped when it stalled" in said[0].message and "dp gets that time" in said[0].message
    assert list(auto._why_stopped(member, stalled, Deadline.after(200.0), None)) == []  # the last member
    fresh = Stalling(now + 100.0, since=now, origin=now, better=lambda: now)
    assert list(auto._why_stopped(member, fresh, Deadline.after(200.0), "dp")) == []  # it did not stall
    untimed = list(auto._why_stopped(member, stalled, auto.NEVER, "dp"))
    assert isinstance(untimed[0], BudgetSpent) and "stalled (no --time-limit)" in untimed[0].message


CHAIN = """graph g {
  node a[1..30] { work 2 ms on gpu; out 1 MB }
  node b { work 9 ms on gpu; out 1 MB }
  a[1] -> ... -> a[30] -> b
}
platform { device gpu[4] { link 10 GB/s } }
minimize bottleneck
subject to { %s }
"""


def test_where_the_dp_proves_a_chain_it_runs_before_the_searches() -> None:
    """Issue 75, item 9: under `acyclic`, on units that form one path (a pipeline of layers),
    the DP over ideals proves the optimum in milliseconds, so it runs right after the greedy
    and the load search never starts; without `acyclic` the DP proves nothing and keeps its
    place after the search."""
    from partdsl import parse

    spec = parse(CHAIN % "acyclic")
    assert [p.method for p in auto.members(spec, METHODS)] == ["greedy", "dp", "load_search", "exact"]
    r = solve(spec, method="auto", time_limit=600)
    assert r.status.value == "optimal" and r.stopped == "bound reached"
    assert any(ln.startswith("proven bound") and "the DP over 32 ideals is exhaustive" in ln for ln in r.log), r.log
    assert not any("auto: load_search" in ln for ln in r.log), r.log
    free = parse(CHAIN % "memory hard")
    assert [p.method for p in auto.members(free, METHODS)][:3] == ["greedy", "load_search", "dp"]


def test_under_a_limit_the_max_load_ip_joins_mid_sized_bottleneck_specs() -> None:
    """Issue 75, items 4 and 9: between EXACT_NODES and LIMITED_EXACT_NODES the max-load IP
    is the last member under a time limit (the searches stall within seconds on BERT-12's
    operator graph and left 298 of 300 s unused), and is left out, saying so, without one."""
    from partdsl import parse

    n = auto.EXACT_NODES + 100
    text = f"""graph g {{ node a[1..{n}] {{ work 1 ms on gpu; out 1 MB }} a[1] -> ... -> a[{n}] }}
platform {{ device gpu[4] {{ link 10 GB/s }} }}
minimize bottleneck
"""
    spec = parse(text)
    last = auto.members(spec, METHODS)[-1]
    assert last.method == "exact" and not last.untimed
    r = solve(spec, method="auto")
    assert any("no time limit, so exact left out" in ln for ln in r.log), r.log
    latency = parse(text.replace("minimize bottleneck", "minimize latency"))
    assert "exact" not in [p.method for p in auto.members(latency, METHODS)]  # the latency IP is far dearer
    big = parse(text.replace(f"a[1..{n}]", f"a[1..{auto.LIMITED_EXACT_NODES + 1}]").replace(
        f"a[{n}]", f"a[{auto.LIMITED_EXACT_NODES + 1}]"))
    assert "exact" not in [p.method for p in auto.members(big, METHODS)]

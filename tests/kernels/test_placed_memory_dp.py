"""Memory that depends on the placement, in the DP over ideals. Stashes per micro-batch in
flight (issue 71, defect 8): under 1F1B stage s of P holds P - s micro-batches' stashes
(evaluator/activations.in_flight). Shared weights (defect 6): a weight several nodes read
is held once per device running any of them. On random layer chains (forward and backward
nodes colocated by layer, as `--group-by layer` makes them) the DP proves the brute-force
optimum over the evaluator's whole space; off a chain of units it steps aside from
stashes by name, and the evaluator-driven methods still answer."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from partdsl.core.errors import PartError
from partdsl.dsl.builder import GraphBuilder, SpecBuilder
from partdsl.evaluator.evaluate import evaluate
from partdsl.kernels.bottleneck.ideal_dp import chained
from partdsl.methods.solve import ABS_TOL, solve

from tests.support.oracle import oracle

GB = 1e9


def layer_chain(fw: list[float], stash: list[float], params: list[float], counts: tuple[int, int],
                memory: float, side: bool = False, tied: tuple[int, ...] = ()):  # type: ignore[no-untyped-def]
    """Layers f0 -> f1 -> ... with backward nodes b_i (2 x the forward time) in f_i's
    group; `side`: f0 also feeds the last layer directly (still a chain of units); `tied`:
    the layers that read a shared 2 GB weight."""
    g = GraphBuilder("layers")
    L = len(fw)
    for i in range(L):
        g.node(f"f{i}", work={"a": fw[i], "b": 1.5 * fw[i]}, params=params[i] * GB, stash=stash[i] * GB,
               out=1e6, group=f"l{i}", shares={"wte": 2 * GB} if i in tied else None)
        g.node(f"b{i}", work={"a": 2 * fw[i], "b": 3 * fw[i]}, backward=True, out=1e6, group=f"l{i}")
    g.chain(*[f"f{i}" for i in range(L)], *[f"b{i}" for i in reversed(range(L))])
    if side and L > 2:
        g.edge("f0", f"f{L - 1}")
    sb = SpecBuilder(g.build())
    sb.device("a", counts[0], memory=memory * GB, link="10 GB/s")
    sb.device("b", counts[1], memory=memory * GB, link="10 GB/s")
    return sb.minimize("bottleneck").subject_to(acyclic=True, memory="hard", colocate=True).build()


@st.composite
def chains(draw):  # type: ignore[no-untyped-def]
    L = draw(st.integers(2, 4))
    ms = st.floats(0.5, 8.0, allow_nan=False)
    gb = st.sampled_from([0.0, 1.0, 2.0, 3.0])
    try:
            spec = layer_chain([draw(ms) for _ in range(L)], [draw(gb) for _ in range(L)], [draw(gb) for _ in range(L)],
                           (draw(st.integers(1, 2)), draw(st.integers(0, 2))), draw(st.sampled_from([6.0, 9.0, 14.0])),
                           side=draw(st.booleans()), tied=tuple(draw(st.sets(st.integers(0, L - 1), max_size=3))))
    except PartError:  # more memory than the devices hold
        assume(False)
    from partdsl.kernels import brute_force

    assume(brute_force.count(spec) <= 20_000)
    return spec


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(chains())
def test_the_dp_proves_the_brute_force_optimum_with_stashes_and_shared_weights(spec) -> None:  # type: ignore[no-untyped-def]
    assert chained(spec)
    opt, feasible = oracle(spec)
    r = solve(spec, method="dp", time_limit=30)
    if not feasible:
        assert r.status.value != "optimal" and r.assignment is None
        return
    assert r.status.value == "optimal"
    assert r.objective == pytest.approx(opt, rel=1e-6, abs=ABS_TOL)
    assert evaluate(spec, np.array([spec.platform.devices.index(r.assignment[n]) for n in spec.dense.names])).feasible


def test_stage_s_of_p_holds_p_minus_s_stashes() -> None:
    """Three layers on three devices: 3, 2 and 1 micro-batches in flight; the plan that
    fits one micro-batch's stashes (9 GB each) does not fit 1F1B's (13 GB on the first)."""
    spec = layer_chain([1.0, 1.0, 1.0], [4.0, 4.0, 4.0], [1.0, 1.0, 1.0], (3, 0), 12.0)
    ev = evaluate(spec, np.array([0, 0, 1, 1, 2, 2]))
    assert [round(ev.parts[f"a[{k}]"]["memory"] / GB, 6) for k in range(3)] == [13.0, 9.0, 5.0]
    assert not ev.feasible and [v.kind for v in ev.violations] == ["memory"]
    r = solve(spec, method="dp", time_limit=30)
    assert r.status.value == "optimal" and r.objective == pytest.approx(oracle(spec)[0])
    assert len(set(r.assignment.values())) == 2  # two stages: 9 and 10 GB (6 ms of compute and 0.2 ms of transfers)


def test_off_a_chain_the_dp_steps_aside_and_the_search_answers() -> None:
    """Two branches (f0 -> f1, f0 -> f2): a split's stages need not each feed the next, so
    the DP's count of stages downstream is not the evaluator's; it refuses by name."""
    g = GraphBuilder("fork")
    for name, grp in (("f0", "x"), ("f1", "y"), ("f2", "z"), ("b1", "y"), ("b2", "z"), ("b0", "x")):
        g.node(name, work={"a": 1.0}, params=GB, stash=(0.0 if name[0] == "b" else 3 * GB), out=1e6, group=grp,
               backward=name[0] == "b")
    g.chain("f0", "f1", "b1", "b0").chain("f0", "f2", "b2", "b0")
    spec = (SpecBuilder(g.build()).device("a", 3, memory=10 * GB, link="10 GB/s").minimize("bottleneck")
            .subject_to(acyclic=True, memory="hard", colocate=True).build())
    assert not chained(spec)
    with pytest.raises(PartError, match="stashes off a chain"):
        solve(spec, method="dp", time_limit=10)
    r = solve(spec, method="load_search", time_limit=5)
    opt, _ = oracle(spec)
    assert r.assignment is not None and r.objective >= opt - ABS_TOL


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(chains(), st.sampled_from(["load_search", "local_search"]))
def test_the_searches_never_beat_brute_force_and_answer_feasibly(spec, method: str) -> None:  # type: ignore[no-untyped-def]
    opt, feasible = oracle(spec)
    r = solve(spec, method=method, time_limit=2)
    if r.assignment is not None:
        dev = np.array([spec.platform.devices.index(r.assignment[n]) for n in spec.dense.names])
        assert evaluate(spec, dev).feasible and r.objective >= opt - ABS_TOL


def test_a_tied_weight_is_held_once_per_device() -> None:
    """Issue 71.6: the embedding and the head read one 2 GB weight: one copy where they
    share a device, one on each where they do not (it was counted in each reader)."""
    spec = layer_chain([1.0, 1.0, 1.0], [0.0, 0.0, 0.0], [1.0, 1.0, 1.0], (2, 0), 9.0, tied=(0, 2))
    together = evaluate(spec, np.array([0, 0, 1, 1, 0, 0]))
    apart = evaluate(spec, np.array([0, 0, 0, 0, 1, 1]))
    assert together.parts["a[0]"]["memory"] == pytest.approx(4 * GB)  # 2 layers + one copy
    assert [apart.parts[f"a[{k}]"]["memory"] for k in range(2)] == pytest.approx([4 * GB, 3 * GB])


def test_the_plan_says_where_the_copies_and_the_stashes_are(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Issue 71.6/71.8: the output says how a tied weight is held and how many micro-batches
    each device stashes for."""
    from tests.support import run_part

    spec = tmp_path / "tied.part"
    spec.write_text("""graph g {
  node embed { work 1 ms; shares wte 4 GB; stash 1 GB; out 1 MB; group a }
  node l1 { work 3 ms; params 2 GB; stash 1 GB; out 1 MB; group b }
  node head { work 2 ms; shares wte 4 GB; out 1 MB; group c }
  node head_bw { work 2 ms; backward; group c }
  node l1_bw { work 3 ms; backward; group b }
  node embed_bw { work 1 ms; backward; group a }
  embed -> l1 -> head -> head_bw -> l1_bw -> embed_bw
}
platform { device gpu[2] { memory 9 GB; link 10 GB/s } }
minimize bottleneck
subject to { acyclic; memory hard; colocate by group }
""")
    r = run_part("solve", str(spec), "--method", "dp")
    assert r.returncode == 0, r.stderr
    assert "shared weight wte (3.725 GiB, read by embed, head): " in r.stdout
    assert "stashes held under 1F1B, micro-batches in flight: gpu[0] 2" in r.stdout


def test_shares_and_stashes_print_and_parse_back_and_a_size_clash_is_refused() -> None:
    from partdsl import parse
    from partdsl.dsl.printer import to_part

    text = """graph g {
  node a { work 1 ms; shares wte 4 GB, wpe 1 MB; stash 2 GB }
  node b { work 1 ms; shares wte 4 GB }
  a -> b
}
platform { device gpu[2] { memory 9 GB } }
minimize bottleneck
"""
    spec = parse(text)
    assert spec.graph.nodes[0].shares == (("wte", 4e9), ("wpe", 1e6)) and spec.graph.nodes[0].stash == 2e9
    assert parse(to_part(spec)).graph.nodes == spec.graph.nodes
    with pytest.raises(PartError, match="shared weight 'wte' is 1.863 GiB at node 'b' but 3.725 GiB at node 'a'"):
        parse(text.replace("node b { work 1 ms; shares wte 4 GB }", "node b { work 1 ms; shares wte 2 GB }"))

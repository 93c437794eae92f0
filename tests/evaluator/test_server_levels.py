"""Server levels (Tarnawski App. C.3, evaluator/levels.py): `server node[2] { device gpu[2] {...};
link 10 GB/s }; link 1 GB/s`. Hand-computed charges in every objective, the evaluator
against the naive reference (tests/support/reference.py) on random specs put on random levels,
flat bounds staying bounds, the DiviML MILP against brute force with levels, the language
and builder round trip, and the refusals."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from partdsl.core.assignment import to_array
from partdsl.core.errors import PartError
from partdsl.core.ir import Spec
from partdsl.core.validate import validate
from partdsl.dsl.builder import GraphBuilder, SpecBuilder
from partdsl.dsl.parser import parse
from partdsl.dsl.printer import to_part
from partdsl.evaluator import levels
from partdsl.evaluator.evaluate import evaluate
from partdsl.evaluator.schedule_eval import transfer_time
from partdsl.methods.solve import solve

from tests.support import reference
from tests.support.effort import examples
from tests.support.strategies import assignments, on_levels, specs


def chain(a: float, b: float, c: float, size: str) -> str:
    """The graph a -> b -> c with these works (ms), a and b sending `size`."""
    return f"""
graph g {{
  node a {{ work {a:g} ms; out {size} }}
  node b {{ work {b:g} ms; out {size} }}
  node c {{ work {c:g} ms }}
  a -> b -> c
}}"""


TEXT = chain(2, 3, 1, "10 MB") + """
platform {
  server node[2] {
    device gpu[2] { link 100 GB/s }
    link 10 GB/s
  }
  link 1 GB/s
}
minimize bottleneck
"""


def test_a_transfer_pays_the_slowest_level_it_crosses() -> None:
    spec = parse(TEXT)
    assert spec.platform.devices == ("gpu[0]", "gpu[1]", "gpu[2]", "gpu[3]")
    # a -> gpu[1] (same server, 10 GB/s: 1 ms each side); b -> gpu[2] (across servers, 1 GB/s: 10 ms)
    ev = evaluate(spec, np.array([0, 1, 2]))
    assert ev.loads == pytest.approx({"gpu[0]": 3.0, "gpu[1]": 14.0, "gpu[2]": 11.0, "gpu[3]": 0.0})
    assert ev.objective == pytest.approx(14.0)
    assert evaluate(spec, np.array([0, 0, 1])).objective == pytest.approx(6.0)  # 2 + 3 + 1 (out), 1 + 1
    # the latency and DiviML objectives pay the same paths
    lat = parse(TEXT.replace("minimize bottleneck", "minimize latency"))
    assert evaluate(lat, np.array([0, 1, 2])).objective == pytest.approx(2 + 1 + 1 + 3 + 10 + 10 + 1)
    thr = parse(TEXT.replace("minimize bottleneck", "maximize throughput batch 1"))
    assert transfer_time(thr, 0, 0, 1) == pytest.approx(2.0)
    assert transfer_time(thr, 0, 0, 3) == pytest.approx(20.0)
    assert transfer_time(thr, 0, 2, 3) == pytest.approx(2.0)


def test_a_sender_pays_once_at_its_slowest_receiver_and_ports_still_count() -> None:
    two = TEXT.replace("a -> b -> c", "a -> {b, c}").replace("link 100 GB/s", "link 5 GB/s")
    spec = parse(two)
    # b on gpu[1] (server fabric 10 GB/s, port 5 GB/s: 2 ms), c on gpu[2] (1 GB/s: 10 ms); a sends once, at 10 ms
    ev = evaluate(spec, np.array([0, 1, 2]))
    assert ev.loads["gpu[0]"] == pytest.approx(2 + 10)
    assert ev.loads["gpu[1]"] == pytest.approx(2 + 3)
    assert ev.loads["gpu[2]"] == pytest.approx(10 + 1)


def test_nested_levels_and_host_devices() -> None:
    spec = parse("""
graph g { node a { work 1 ms; out 1 GB }  node b { work 1 ms }  a -> b }
platform {
  server rack[2] {
    server node[2] { device gpu[1] { link 100 GB/s }; device cpu[1] { host }; link 50 GB/s }
    link 10 GB/s
  }
  link 1 GB/s
}
minimize bottleneck
""")
    names = spec.platform.devices
    assert names == ("gpu[0]", "gpu[1]", "gpu[2]", "gpu[3]", "cpu[0]", "cpu[1]", "cpu[2]", "cpu[3]")
    bw = spec.dense.path_bw
    g, c = names.index, names.index
    assert bw[g("gpu[0]"), c("cpu[0]")] == 50e9  # one server
    assert bw[g("gpu[0]"), g("gpu[1]")] == 10e9  # one rack, two servers
    assert bw[g("gpu[0]"), g("gpu[2]")] == 1e9  # two racks
    assert bw[g("gpu[0]"), g("gpu[0]")] == math.inf
    # a host device has no port to pay (it reads host memory free), only the fabrics it crosses
    ev = evaluate(spec, np.array([c("cpu[0]"), c("cpu[3]")]))
    assert ev.loads["cpu[3]"] == pytest.approx(1 + 1000.0)
    assert evaluate(spec, np.array([g("gpu[0]"), c("cpu[0]")])).loads["cpu[0]"] == pytest.approx(1 + 20.0)
    for a in range(len(names)):
        for b in range(len(names)):
            assert bw[a, b] == reference.path_bandwidth(spec, a, b)


DIRECT = chain(1, 1, 1, "100 MB") + """
platform {
  device gpu[3] { link 1 GB/s }
  link gpu[0] <-> gpu[1] 100 GB/s
}
minimize bottleneck
"""


def test_a_direct_link_replaces_the_route_in_the_bottleneck_and_latency() -> None:
    spec = parse(DIRECT)
    # a -> b over the direct link (1 ms each side); b -> c through host memory (100 ms each side)
    ev = evaluate(spec, np.array([0, 1, 2]))
    assert ev.loads == pytest.approx({"gpu[0]": 1 + 1, "gpu[1]": 1 + 1 + 100, "gpu[2]": 100 + 1})
    assert evaluate(spec, np.array([0, 1, 1])).objective == pytest.approx(1 + 1 + 1)
    lat = parse(DIRECT.replace("minimize bottleneck", "minimize latency"))
    assert evaluate(lat, np.array([0, 1, 2])).objective == pytest.approx(2 + 102 + 101)
    # the bounds charge a tensor its cheapest route, so the certificate holds though the
    # link is 100x faster than the ports (and a transfer between the classes is forced)
    forced = """
graph g { node a { work 1 ms; out 100 MB; only tpu }  node b { work 1 ms; only gpu }  a -> b }
platform { device tpu[1] { link 1 GB/s }  device gpu[1] { link 1 GB/s }  link tpu <-> gpu 100 GB/s }
minimize bottleneck
"""
    for text, objective in [(t, o) for t in (DIRECT, forced) for o in ("minimize bottleneck", "minimize latency")]:
        s = parse(text.replace("minimize bottleneck", objective))
        opt = solve(s, method="brute", gap=0.0)
        r = solve(s, time_limit=20)
        assert r.bound <= opt.objective + 1e-9 and r.objective == pytest.approx(opt.objective)


@st.composite
def levelled(draw, kinds: tuple[str, ...] = ("bottleneck", "latency")) -> tuple[Spec, Spec]:  # type: ignore[no-untyped-def]
    """(flat, levelled): a random spec on random routes (tests/strategies.on_levels: server
    levels and/or direct links), and the same spec without the levels (its links kept)."""
    spec = draw(specs(max_nodes=5, kinds=kinds))
    hier = draw(on_levels(spec))
    flat = replace(hier, platform=replace(hier.platform, servers=(), link=None,
                                          classes=tuple(replace(k, server=None) for k in hier.platform.classes)))
    try:
        validate(flat)
    except PartError:
        assume(False)
    return flat, hier


def sized(data: st.DataObject, spec: Spec) -> Spec:
    """The spec with its tensors redrawn at sizes whose transfers are of the order of the
    compute (the strategies' reach seconds, and then the optimum sends nothing)."""
    nodes = tuple(replace(nd, out=data.draw(st.sampled_from([0.0, 1e5, 1e6, 1e7]))) if nd.out else nd
                  for nd in spec.graph.nodes)
    spec = replace(spec, graph=replace(spec.graph, nodes=nodes))
    try:
        validate(spec)
    except PartError:
        assume(False)
    return spec


@settings(max_examples=examples(60), deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_the_evaluator_matches_the_reference_and_levels_never_cost_less(data: st.DataObject) -> None:
    flat, hier = data.draw(levelled())
    a = data.draw(assignments(hier))
    ev = evaluate(hier, np.array(a))
    ref = reference.bottleneck(hier, a) if hier.objective.kind == "bottleneck" else reference.latency(hier, a)
    if math.isinf(ref):
        assert math.isinf(ev.objective) or not ev.feasible
        return
    assert ev.objective == pytest.approx(ref, rel=1e-9, abs=1e-9)
    assert ev.objective >= evaluate(flat, np.array(a)).objective - 1e-9  # so a flat bound stays a bound


@settings(max_examples=examples(40), deadline=None, suppress_health_check=list(HealthCheck))
@given(levelled())
def test_heft_mean_transfer_is_the_mean_of_the_pairwise_transfers(pair: tuple[Spec, Spec]) -> None:
    """levels.mean_pair_ms (HEFT's rank, all nodes at once) is the mean of pair_ms over the
    ordered pairs of distinct devices, on levels, direct links and flat host transfers."""
    for spec in pair:
        d = spec.dense
        pairs = [(a, b) for a in range(d.D) for b in range(d.D) if a != b]
        want = [np.mean([levels.pair_ms(d, u, a, b) for a, b in pairs]) if pairs else 0.0 for u in range(d.n)]
        assert levels.mean_pair_ms(d) == pytest.approx(want, rel=1e-12, abs=1e-12)


@settings(max_examples=examples(10), deadline=None, suppress_health_check=list(HealthCheck))
@given(levelled(kinds=("bottleneck",)))
def test_solve_on_levels_is_certified_against_brute_force(pair: tuple[Spec, Spec]) -> None:
    from partdsl.kernels import brute_force

    _, hier = pair
    assume(brute_force.count(hier) <= 3000)
    opt = solve(hier, method="brute", gap=0.0)
    for method in ("auto", "load_search", "local_search"):
        if method != "auto" and hier.constraints.replicate > 1:
            continue  # they choose no replicas (only topo, which costs transfers flat, and brute do)
        r = solve(hier, method=method, time_limit=5)
        if not opt.status.has_solution():
            assert not r.status.has_solution() or not r.evaluation.feasible
            continue
        assert r.objective >= opt.objective - 1e-9
        assert r.bound <= opt.objective + 1e-9, (method, r.bound, opt.objective)
        factors = np.ones(len(hier.platform.devices))
        for name, k in (r.replicas or {}).items():
            factors[hier.platform.devices.index(name)] = k
        assert evaluate(hier, to_array(hier, r.assignment), replicas_of=factors).objective == pytest.approx(r.objective)


@settings(max_examples=examples(30), deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_the_max_load_ip_prices_routes_per_pair_and_equals_brute_force(data: st.DataObject) -> None:
    """Tarnawski's max-load IP on levels and direct links (models/maxload_routes.py: a
    column per node, sender and receiver; replicas placed as the evaluator places them)
    proves brute force's optimum, on HiGHS and SCIP, with symmetry rows only among devices
    whose routes are the same (twins). Tensors are
    drawn at sizes whose transfers are of the order of the compute (the strategies' reach
    seconds, and then the optimum sends nothing)."""
    from partdsl.kernels import brute_force

    _, hier = data.draw(levelled(kinds=("bottleneck",)))
    hier = sized(data, hier)
    c = hier.constraints
    assume(not c.acyclic and c.max_stages is None)
    assume(brute_force.count(hier) <= 3000)
    opt = solve(hier, method="brute", gap=0.0, time_limit=1e6)
    assert opt.status.value in ("optimal", "infeasible")
    for solver, options in (("highs", {}), ("scip", {}), ("highs", {"symmetry": 1})):
        r = solve(hier, method="exact", solver=solver, gap=0.0, time_limit=60, options=options)
        assert r.status == opt.status, (solver, options)
        if opt.status.has_solution():
            assert r.objective == pytest.approx(opt.objective, rel=1e-6, abs=1e-6)
            assert r.bound <= opt.objective + 1e-6 * max(1.0, opt.objective)


LINKED = """
graph g {
  node a { work 6 ms; out 10 MB }
  node b { work 6 ms }
  a -> b
}
platform {
  device gpu[4] { link 1 GB/s }
  link gpu[0] <-> gpu[2] 100 GB/s
}
minimize bottleneck
"""


@pytest.mark.parametrize("text, best", [(TEXT, 5.0), (LINKED, 6.1)])
@pytest.mark.parametrize("options", [{}, {"symmetry": 1}])
def test_the_max_load_ip_on_routes_by_hand(text: str, best: float, options: dict) -> None:
    """TEXT: a on gpu[0], b and c on gpu[1] in its server; the sender pays a's 10 MB at the
    server's 10 GB/s (1 ms) and gpu[1] receives it (1 ms): max(2 + 1, 3 + 1 + 1) = 5.
    LINKED: a on gpu[0], b on gpu[2] over their 100 GB/s link (0.1 ms each side): 6.1; the
    symmetry rows may not treat gpu[1] as gpu[2]'s twin (it has no such link)."""
    r = solve(parse(text), method="exact", gap=0.0, options=options)
    assert r.status.value == "optimal" and r.objective == pytest.approx(best) and r.bound == pytest.approx(best)


def test_the_max_load_ip_places_replicas_inside_a_server() -> None:
    """12 ms of work and 10 MB of weights on 2 servers of 2 GPUs: 2 replicas inside a server
    sync over its 10 GB/s (4 x 10 MB / (2 x 10 GB/s) = 2 ms), (12 + 2) / 2 = 7 ms; placed
    across the servers (gpu[1], gpu[2]) they would sync at 1 GB/s, 16 ms; 3 or 4 replicas
    must span both servers (12.9 and 10.5 ms)."""
    text = TEXT[TEXT.index("\nplatform"):].replace("minimize bottleneck", "minimize bottleneck\nsubject to { replicate <= 4 }")
    spec = parse("graph g { node a { work 12 ms; params 10 MB } }" + text)
    r = solve(spec, method="exact", gap=0.0)
    assert r.status.value == "optimal" and r.objective == pytest.approx(7.0) and r.bound == pytest.approx(7.0)
    assert list(r.replicas.values()) == [2] and list(r.replicas) in (["gpu[0]"], ["gpu[2]"])
    assert solve(spec, method="brute").objective == pytest.approx(7.0)


def test_dp_takes_levels_only_where_no_tensor_is_sent() -> None:
    """The DP over ideals prices tensors at the ports, not over routes: on levels or direct
    links it refuses a spec that sends tensors, naming the feature, and takes one that does
    not (the chain 2, 1, 2 ms on four GPUs: a node per GPU, 2 ms)."""
    for text in (TEXT, LINKED):
        with pytest.raises(PartError, match="does not model transfers on server levels or direct links") as e:
            solve(parse(text + "subject to { acyclic }"), method="dp")
        assert e.value.span is not None and "exact" in (e.value.hint or "")
    r = solve(parse(chain(2, 1, 2, "0 MB") + TEXT[TEXT.index("\nplatform"):] + "subject to { acyclic }"), method="dp")
    assert r.objective == pytest.approx(2.0) and r.evaluation.feasible


def test_dp_on_levels_leaves_a_device_unused_to_keep_a_stages_replicas_in_one_server() -> None:
    """v1's two replicas sync 10 MB in 2 ms inside a server and 200 ms across one; v0's
    200 MB sync costs more than its work saves. The best plan leaves a GPU of server 0
    unused: v0 on one GPU (10 ms), v1 on server 1's two ((30 + 2) / 2 = 16 ms); in device
    order without a gap the DP could only reach 25 ms (v0 replicated, (10 + 40) / 2)."""
    from partdsl.kernels.bottleneck.ideal_dp import chain_split
    from partdsl.runtime.deadline import NEVER

    spec = parse("""graph g {
  node v0 { work 10 ms; params 200 MB }
  node v1 { work 30 ms; params 10 MB }
  v0 -> v1
}
platform { server node[2] { device gpu[2] { link 1e10 B/s }; link 1e10 B/s }; link 1e8 B/s }
minimize bottleneck
subject to { acyclic; replicate <= 2 }""")
    value, dev, _, reps = chain_split(spec, np.inf, NEVER, None, None)  # the DP alone
    assert value == pytest.approx(16.0) and reps is not None
    assert evaluate(spec, dev, replicas_of=reps).objective == pytest.approx(16.0)
    assert dev[1] == 2 and reps[2] == 2  # v1 on server 1's GPUs 2 and 3
    assert solve(spec, method="brute", gap=0.0).objective == pytest.approx(16.0)
    # and proves it: the same DP with each stage at its cheapest placement (v1's replicas in
    # one server, v0's too) finds nothing below 16 ms
    r = solve(spec, method="dp")
    assert r.status.value == "optimal" and r.bound == pytest.approx(16.0)


def test_exact_prices_routes_under_acyclic_and_its_pyomo_twin_refuses_levels() -> None:
    """Under `acyclic` too, `exact` takes Tarnawski's IP (its stage rows) with routes priced
    per pair (it took Archer's MTPP MIP, which prices transfers flat, and refused)."""
    spec = parse(TEXT + "subject to { acyclic }")
    r, brute = solve(spec, method="exact", gap=0.0), solve(spec, method="brute", gap=0.0)
    assert r.status.value == "optimal" and r.objective == pytest.approx(brute.objective)
    for text in (TEXT, TEXT.replace("minimize bottleneck", "minimize latency")):
        with pytest.raises(PartError, match="matrix path only"):
            solve(parse(text), method="exact", options={"pyomo": 1})


@settings(max_examples=examples(30), deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_the_latency_ip_prices_routes_per_pair_of_places_and_equals_brute_force(data: st.DataObject) -> None:
    """Tarnawski's latency IP on levels and direct links (models/latency_routes.py: a
    column per producer, sending place and receiving slot; the sender's slowest route;
    each host device a choice of its own) proves brute force's optimum on HiGHS and SCIP,
    subgraph slots included. Tensors are drawn at sizes whose transfers are of the order
    of the compute."""
    from partdsl.kernels import brute_force

    _, hier = data.draw(levelled(kinds=("latency",)))
    hier = sized(data, replace(hier, constraints=replace(hier.constraints, acyclic=False, max_stages=None)))
    assume(brute_force.count(hier) <= 3000)
    opt = solve(hier, method="brute", gap=0.0, time_limit=1e6)
    assert opt.status.value in ("optimal", "infeasible")
    for solver in ("highs", "scip"):
        r = solve(hier, method="exact", solver=solver, gap=0.0, time_limit=60)
        assert r.status == opt.status, solver
        if opt.status.has_solution():
            assert r.objective == pytest.approx(opt.objective, rel=1e-6, abs=1e-6), solver
            assert r.bound <= opt.objective + 1e-6 * max(1.0, opt.objective)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_the_max_load_ip_takes_any_routed_split_as_a_start_at_the_evaluators_value(data: st.DataObject) -> None:
    """maxload.encode on levels and direct links: every split without replicas is a point
    of the IP whose objective is the evaluator's (the pair columns' start is right)."""
    from partdsl.models import maxload

    _, hier = data.draw(levelled(kinds=("bottleneck",)))
    hier = sized(data, replace(hier, constraints=replace(hier.constraints, acyclic=False, max_stages=None,
                                                          replicate=1)))
    a = np.array(data.draw(assignments(hier)))
    ev = evaluate(hier, a)
    assume(ev.feasible)
    mip, vm = maxload.build(hier)
    x = maxload.encode(hier, vm, a)
    assume(x is not None)
    viol = np.maximum(mip.A @ x - mip.row_hi, mip.row_lo - mip.A @ x)
    assert viol.max(initial=0.0) <= 1e-7 * max(1.0, ev.objective) and (x <= mip.col_hi + 1e-9).all()
    assert mip.c @ x == pytest.approx(ev.objective)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_the_latency_ip_takes_any_routed_split_as_a_start_at_the_evaluators_latency(data: st.DataObject) -> None:
    """latency_start.encode on levels and direct links: every split the evaluator scores finite
    (and that fits the slots) is a point of the IP, its T the evaluator's latency, so the
    IP's optimum is never above brute force's and a start is never rejected."""
    from partdsl.models import latency, latency_start

    _, hier = data.draw(levelled(kinds=("latency",)))
    hier = replace(hier, constraints=replace(hier.constraints, acyclic=False, max_stages=None))  # not latency's
    hier = sized(data, hier)
    a = np.array(data.draw(assignments(hier)))
    ev = evaluate(hier, a)
    assume(ev.feasible and math.isfinite(ev.objective))
    mip, vm = latency.build(hier, ev.objective)
    x = latency_start.encode(hier, vm, a, ev.subgraph)
    assume(x is not None)  # a pair not allowed, or more subgraphs than slots
    viol = np.maximum(mip.A @ x - mip.row_hi, mip.row_lo - mip.A @ x)
    assert viol.max(initial=0.0) <= 1e-7 and (x <= mip.col_hi + 1e-9).all()
    assert x[vm.T] == pytest.approx(ev.objective)


BRANCHES = """
graph g {
  node a { work 1 ms on cpu; out 10 MB; not gpu }
  node b { work 10 ms on gpu, 100 ms on cpu; out 10 MB }
  node c { work 10 ms on gpu, 100 ms on cpu; out 10 MB }
  node d { work 1 ms on cpu; not gpu }
  a -> {b, c} -> d
}
platform {
  server node[2] {
    device gpu[2] { link 100 GB/s }
    device cpu[1] { host }
    link 10 GB/s
  }
  link 1 GB/s
}
minimize latency
"""


@pytest.mark.parametrize("pin, gpus", [("", ("gpu[0]", "gpu[1]")), ("subject to { pin a to cpu[1] }",
                                                                     ("gpu[2]", "gpu[3]"))])
def test_the_latency_ip_on_routes_by_hand(pin: str, gpus: tuple[str, str]) -> None:
    """a and d on a server's CPU, b and c on its two GPUs in parallel: each GPU receives a's
    10 MB at the server's 10 GB/s (1 ms), runs 10 ms and sends 1 ms: 1 + 12 + 1 = 14 ms.
    Across servers a transfer pays 10 ms at 1 GB/s; with a pinned to the second server's
    CPU the branches must run there (a choice per host device, not per host class)."""
    r = solve(parse(BRANCHES + pin), method="exact", gap=0.0)
    assert r.status.value == "optimal" and r.objective == pytest.approx(14.0) and r.bound == pytest.approx(14.0)
    assert {r.assignment["b"], r.assignment["c"]} == set(gpus)
    assert solve(parse(BRANCHES + pin), method="brute").objective == pytest.approx(14.0)


def test_the_diviml_milp_models_levels_and_keeps_symmetry_within_a_server() -> None:
    from partdsl.models import diviml_symmetry

    from tests.support.oracle import brute_schedules

    spec = parse("""
graph g {
  node a { work 1 ms on gpu; work 4 ms on cpu; out 20 MB }
  node b { work 3 ms on gpu; work 9 ms on cpu; out 20 MB }
  node c { work 3 ms on gpu; work 9 ms on cpu }
  a -> {b, c}
}
platform {
  server node[2] { device gpu[2] { link 100 GB/s }; link 20 GB/s }
  device cpu[1] { host }
  link 1 GB/s
}
maximize throughput batch 2
""")
    assert diviml_symmetry.identical_devices(spec) == ((0, 1), (2, 3))  # not across servers
    opt = brute_schedules(spec)
    for options in ({}, {"symmetry": 1}):
        r = solve(spec, method="exact", time_limit=60, gap=0.0, options=options)
        assert r.status.value == "optimal" and r.objective == pytest.approx(opt, rel=1e-6)


def test_replicas_sync_over_the_levels_they_span() -> None:
    spec = parse(TEXT.replace("node a { work 2 ms; out 10 MB }", "node a { work 2 ms; out 10 MB; params 10 MB }")
                 .replace("minimize bottleneck", "minimize bottleneck\nsubject to { replicate <= 2 }"))
    # a on gpu[0] and gpu[1] (one server, 10 GB/s): sync 4 x 10 MB / (2 x 10 GB/s) = 2 ms; a's 10 MB
    # crosses to the other server at 1 GB/s (10 ms): (2 + 10 + 2) / 2 = 7 ms
    ev = evaluate(spec, np.array([0, 2, 2]), replicas_of=np.array([2, 1, 1, 1]))
    assert ev.feasible and ev.loads["gpu[0]"] == pytest.approx(7.0)
    # a on gpu[1] and gpu[2] (two servers, 1 GB/s): sync 20 ms: (2 + 10 + 20) / 2 = 16 ms
    ev = evaluate(spec, np.array([1, 3, 3]), replicas_of=np.array([1, 2, 1, 1]))
    assert ev.feasible and ev.loads["gpu[1]"] == pytest.approx(16.0)
    # a replica on a device that holds another stage, or past the class's last device
    clash = evaluate(spec, np.array([1, 2, 2]), replicas_of=np.array([1, 2, 1, 1]))
    assert not clash.feasible and "holds another stage" in clash.violations[0].message
    past = evaluate(spec, np.array([3, 0, 0]), replicas_of=np.array([1, 1, 1, 2]))
    assert not past.feasible and "past the last gpu device" in past.violations[0].message
    # brute force places them best: a | b, c in one server, a's replicas beside it
    opt = solve(spec, method="brute", gap=0.0)
    assert opt.status.value == "optimal" and opt.objective <= 7.0 + 1e-9


def test_replicas_across_servers_sync_hierarchically_when_that_is_cheaper() -> None:
    """A stage on devices of several servers syncs the cheaper way: one ring at the slowest
    link, 4 (n - 1) |w| / (n B), or inside each server and then across them (PipeDream's
    charge for a top-level stage on several servers: 4 (r_s - 1) |w| / (r_s B1) + 4 (r' - 1)
    |w| / (r' B2), optimizer_graph_hierarchical.py)."""
    text = (TEXT.replace("node a { work 2 ms; out 10 MB }", "node a { work 2 ms; out 10 MB; params 10 MB }")
            .replace("minimize bottleneck", "minimize bottleneck\nsubject to { replicate <= 4 }"))
    spec = parse(text)
    whole = np.array([0, 0, 0])
    # 2 + 2 per server at 10 GB/s (4 x 10 MB / 2 / 10 GB/s = 2 ms), then the 2 servers at
    # 1 GB/s (20 ms): 22 ms, less than a ring at 1 GB/s, 4 x 3 / 4 x 10 ms = 30; (6 + 22) / 4
    ev = evaluate(spec, whole, replicas_of=np.array([4, 1, 1, 1]))
    assert ev.feasible and ev.objective == pytest.approx(7.0)
    # 1 + 2 (gpu[1] .. gpu[3]): the slower group syncs in 2 ms, then 20 ms; the ring would
    # take 4 x 2 / 3 x 10 = 26.7 ms: (6 + 22) / 3
    ev = evaluate(spec, np.array([1, 1, 1]), replicas_of=np.array([1, 3, 1, 1]))
    assert ev.feasible and ev.objective == pytest.approx(28.0 / 3)
    # servers at 1.5 GB/s inside: 13.3 + 20 ms in two steps, so the ring's 30 ms: (6 + 30) / 4
    slow = parse(text.replace("link 10 GB/s", "link 1.5 GB/s"))
    assert slow.platform != spec.platform
    ev = evaluate(slow, whole, replicas_of=np.array([4, 1, 1, 1]))
    assert ev.feasible and ev.objective == pytest.approx(9.0)
    # every method that prices replicas prices them so: brute force's optimum, exact's
    opt = solve(spec, method="brute", gap=0.0)
    ex = solve(spec, method="exact", gap=0.0, time_limit=60)
    assert opt.status.value == ex.status.value == "optimal" and ex.objective == pytest.approx(opt.objective)


def test_text_builder_and_printer_agree() -> None:
    spec = parse(TEXT)
    assert parse(to_part(spec)) == spec
    g = GraphBuilder("g").node("a", 2, out="10 MB").node("b", 3, out="10 MB").node("c", 1).chain("a", "b", "c")
    built = (SpecBuilder(g).server("node", 2, link="10 GB/s").device("gpu", 2, link="100 GB/s", server="node")
             .fabric("1 GB/s").minimize().build())
    assert built.platform == spec.platform and built.graph == spec.graph
    with pytest.raises(PartError, match="within unknown server 'rack'"):
        SpecBuilder(g).server("node", 2, within="rack").device("gpu", 2, link="1 GB/s", server="node").build()


@pytest.mark.parametrize("text, message, caret", [
    (TEXT.replace("node a { work 2 ms; out 10 MB }", "node a { work 2 ms; comm 1 ms }"),
     "gives its transfer as a time", "a {"),
    (TEXT.replace("link 10 GB/s", "link 10 GB/s; link 2 GB/s"), "gives its fabric `link` twice", "server node"),
    (TEXT.replace("link 1 GB/s\n}", "server node { device tpu }\n}"), "server 'node' is declared twice", "server node"),
    (TEXT.replace("device gpu[2]", "device node[2]"), "has the name of a server", "device node"),
    (TEXT.replace("server node[2]", "server node[0]"), "server count", "0"),
])
def test_bad_levels_get_a_caret(text: str, message: str, caret: str) -> None:
    with pytest.raises(PartError) as e:
        parse(text)
    assert message in e.value.message
    assert e.value.span is not None
    line = text.splitlines()[e.value.span.line - 1]
    assert line[e.value.span.column - 1:].startswith(caret), (line, e.value.span)


def test_methods_that_cost_transfers_flat_refuse_by_name() -> None:
    spec = parse(TEXT)
    for method in ("topo", "dp", "slicegraph", "pipedream", "metis"):  # exact: the max-load IP prices routes
        with pytest.raises(PartError) as e:
            solve(spec, method=method, time_limit=5)
        assert "server levels" in e.value.message and "load_search" in (e.value.hint or "")
    from partdsl.methods.hierarchy import hierarchy

    with pytest.raises(PartError, match="model no server levels"):
        hierarchy(spec)


def test_the_mip_export_writes_routes_or_refuses_levels_it_would_cost_flat(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from partdsl.cli.main import main

    spec = tmp_path / "levels.part"
    spec.write_text(TEXT + "subject to { acyclic }")  # the max-load IP, not Archer's MTPP MIP (flat costs)
    assert main(["export", str(spec), "--lp", str(tmp_path / "m.lp")]) == 0
    assert "stage_order(" in (tmp_path / "m.lp").read_text() and "route(" in (tmp_path / "m.lp").read_text()
    spec.write_text(TEXT)  # the max-load IP prices each route
    assert main(["export", str(spec), "--lp", str(tmp_path / "m.lp")]) == 0
    assert "route(a,gpu(0),gpu(2))" in (tmp_path / "m.lp").read_text()
    spec.write_text(BRANCHES)  # and so does the latency IP, per place
    assert main(["export", str(spec), "--lp", str(tmp_path / "m.lp")]) == 0
    lp = (tmp_path / "m.lp").read_text()
    assert "route_in(a,cpu(1),gpu(2).s0)" in lp and "send(b,gpu(0).s0)" in lp
    spec.write_text(TEXT.replace("minimize bottleneck", "maximize throughput batch 2"))
    assert main(["export", str(spec), "--lp", str(tmp_path / "m.lp")]) == 0  # the DiviML MILP models them
    assert (tmp_path / "m.lp").read_text().strip()


def test_part_check_describes_the_levels(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from partdsl.cli.main import main

    spec = tmp_path / "levels.part"
    spec.write_text(TEXT)
    assert main(["check", str(spec)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("platform"))
    assert "4 x gpu" in line and "2 in each node" in line and "2 x server node, link 10 GB/s" in line
    assert "platform link 1 GB/s" in line


@pytest.mark.slow  # a long solve (conftest.py: the tiers)
def test_auto_names_the_methods_when_none_of_its_members_models_the_spec() -> None:
    from partdsl.methods import auto
    from partdsl.methods.registry import METHODS

    nodes = "\n".join(f"  node n{i} {{ work 1 ms; out 1 MB; params 1 MB }}" for i in range(12))
    chain12 = " -> ".join(f"n{i}" for i in range(12))
    text = f"graph g {{\n{nodes}\n  {chain12}\n}}" + TEXT[TEXT.index("\nplatform"):] \
        .replace("minimize bottleneck", "minimize bottleneck\nsubject to { replicate <= 2; acyclic; activations }")
    # the load search models levels, replicas, acyclic and activations together: auto answers with it
    r = solve(parse(text), time_limit=4)
    assert r.chosen == "load_search" and r.evaluation.feasible
    # with a table where it models no activation memory (as before), no member models them all, and
    # auto names who models each
    table = {**METHODS, "load_search": replace(METHODS["load_search"], ignores=(("activation memory", None),))}
    with pytest.raises(PartError) as e:
        next(auto.run(parse(text), methods=table))
    assert "no method that auto runs on this spec models all of its features" in e.value.message
    assert "replication: topo, dp, exact, load_search, brute" in e.value.message
    assert "activation memory: local_search, single, interleave, brute" in e.value.message  # (each scored by the evaluator)
    assert e.value.span is not None
    # without `acyclic` and activations, exact models it all: the max-load IP proves auto's answer optimal
    r = solve(parse(text.replace("; acyclic; activations", "")), time_limit=30)
    assert r.status.value == "optimal" and r.evaluation.feasible, r.log

def _in_device_order(spec: Spec, dev: np.ndarray, reps: np.ndarray) -> bool:
    """Whether a plan is one the DP over ideals places on levels (kernels/bottleneck/
    replicated.placed_rates): each class's stages on its devices in device order, a stage's
    replicas the devices after it, unused devices between them allowed (ideal_kernels.gaps),
    in an order the stages' edges allow."""
    d = spec.dense
    used = np.unique(dev)
    order = {int(j): k for k, j in enumerate(used)}
    after: dict[int, set[int]] = {k: set() for k in range(len(used))}
    for a, b in zip(d.src.tolist(), d.dst.tolist()):
        if dev[a] != dev[b]:
            after[order[int(dev[a])]].add(order[int(dev[b])])
    for c in range(len(d.class_names)):
        mine = np.flatnonzero(d.dev_class == c)
        leads = [int(j) for j in used if d.dev_class[j] == c]
        rank = {int(j): p for p, j in enumerate(mine)}
        for x, y in zip(leads, leads[1:]):
            if rank[y] < rank[x] + reps[x]:
                return False  # a stage on the devices of the one before it
            after[order[x]].add(order[y])
    seen, done = set(), set()

    def cyclic(k: int) -> bool:
        if k in done:
            return False
        if k in seen:
            return True
        seen.add(k)
        found = any(cyclic(m) for m in after[k])
        done.add(k)
        return found
    return not any(cyclic(k) for k in after)


@settings(max_examples=examples(12), deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_dp_on_levels_is_the_best_plan_in_device_order(data: st.DataObject) -> None:
    """On server levels with no tensor to send (PipeDream's profiles), the DP over ideals
    prices each stage's replicas where they sit, its stages in device order: its value is
    the least over every assignment and replication factor in that order (scored by the
    evaluator), never below brute force's optimum over every placement, and its bound (the
    relaxation) never above it."""
    import itertools

    from partdsl.core.events import Proven
    from partdsl.kernels.bottleneck import ideal_dp
    from partdsl.kernels.bottleneck.ideal_dp import chain_split
    from partdsl.kernels.brute_force import choices, replica_choices
    from partdsl.runtime.deadline import NEVER

    n = data.draw(st.integers(2, 4))
    edges = [(i, j) for i in range(n) for j in range(i + 1, n) if data.draw(st.booleans())]
    work = [data.draw(st.integers(1, 12)) for _ in range(n)]
    params = [data.draw(st.sampled_from([0, 1, 10, 200])) for _ in range(n)]  # 2 replicas sync 0.02-40 ms in a
    inner, outer = data.draw(st.sampled_from([1e10, 1e11])), data.draw(st.sampled_from([1e8, 1e9]))  # server, more
    # across servers: a stage's replicas in one server or two, or none, all matter (and gaps)
    nodes = "\n".join(f"  node v{i} {{ work {work[i]} ms; params {params[i]} MB }}" for i in range(n))
    text = f"""graph g {{
{nodes}
{chr(10).join(f"  v{a} -> v{b}" for a, b in edges)}
}}
platform {{ server node[2] {{ device gpu[2] {{ link {inner:g} B/s }}; link {inner:g} B/s }}; link {outer:g} B/s }}
minimize bottleneck
subject to {{ acyclic; replicate <= {data.draw(st.integers(2, 3))} }}"""
    spec = parse(text)
    value, dev, _, reps = chain_split(spec, np.inf, NEVER, None, None)  # the DP alone, without a start
    assert evaluate(spec, dev, replicas_of=reps).objective == pytest.approx(value, rel=1e-9)
    r = solve(spec, method="dp")
    assert r.evaluation.feasible and r.objective <= value * (1 + 1e-9)
    comp, opts = choices(spec)
    best, ordered = np.inf, np.inf
    for pick in itertools.product(*opts):
        dev = np.asarray(pick, dtype=np.int64)[comp]
        for reps in replica_choices(spec, dev):
            ev = evaluate(spec, dev, replicas_of=reps)
            if ev.feasible:
                best = min(best, ev.objective)
                if _in_device_order(spec, dev, reps):
                    ordered = min(ordered, ev.objective)
    assert value == pytest.approx(ordered, rel=1e-9), text
    assert r.objective >= best * (1 - 1e-9)
    # its bound, the DP with each stage at its cheapest placement, never above the optimum over every placement
    assert r.bound <= best * (1 + 1e-9), (r.bound, best, text)
    # the DP's own proof (solve may stop on a simpler bound first): the relaxation always has
    # a plan at most the DP's value, and none below the optimum over every placement
    proofs = [e.bound for e in ideal_dp.run(spec) if isinstance(e, Proven)]
    assert len(proofs) == 1 and proofs[0] <= min(best, value) * (1 + 1e-9), (proofs, best, value, text)
    assert r.status.value == "feasible" or r.objective == pytest.approx(best, rel=1e-9)  # a proof only from a bound

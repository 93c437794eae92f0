"""Kernels: the segment-cost structure equals the evaluator on every slice; the split DP
equals a brute-force segmentation of the same order; orders are topological."""
from __future__ import annotations

import itertools
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from partdsl import evaluate
from partdsl.core.assignment import to_array
from partdsl.core.ir import Spec
from partdsl.evaluator.evaluate import bottleneck_loads
from partdsl.kernels.bottleneck.coarse_order import coarsen, crossing
from partdsl.kernels.bottleneck.load_table import LoadTable
from partdsl.kernels.bottleneck.segment_dp import split_dp
from partdsl.kernels.bottleneck.segments import segment_costs
from partdsl.kernels.graph.contraction import contract
from partdsl.kernels.graph.orders import dfs_order, kahn
from partdsl.kernels.jit import HAVE_NUMBA
from partdsl.runtime.deadline import NEVER

from tests.support.strategies import assignments, dp_replicas, specs, tight_memory

SETTINGS = settings(max_examples=120, deadline=None,
                    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])


def positions(spec: Spec, priority: np.ndarray | None) -> tuple[np.ndarray, int]:
    u = contract(spec.dense)
    order = kahn(u.count, u.src, u.dst, None if priority is None else priority[: u.count])
    at = np.empty(u.count, dtype=np.int64)
    at[order] = np.arange(u.count)
    return at[u.unit], u.count


@SETTINGS
@given(st.data())
def test_segment_costs_equal_the_evaluator_on_every_slice(data) -> None:
    spec: Spec = data.draw(specs(kinds=("bottleneck",)))
    if spec.objective.training == "gpipe":
        spec = spec.__class__(spec.graph, spec.platform, spec.objective.__class__("bottleneck", None,
                              spec.objective.overlap), spec.constraints)
    pr = np.array(data.draw(st.lists(st.floats(0, 1), min_size=len(spec.graph.nodes),
                                     max_size=len(spec.graph.nodes))))
    pos, P = positions(spec, pr)
    if data.draw(st.booleans()):  # blocks of a long order (coarse_order.py): their table is exact too
        pos, P = coarsen(spec, pos, P, most=data.draw(st.integers(2, 4)))
    cost = segment_costs(spec, pos, P)
    assert np.array_equal(cost == math.inf, segment_costs(spec, pos, P, use_numba=False) == math.inf)
    assert np.allclose(cost, segment_costs(spec, pos, P, use_numba=False), rtol=1e-9, atol=1e-9)
    d = spec.dense
    for c in range(len(d.class_names)):
        dev = int(np.flatnonzero(d.dev_class == c)[0])
        other = int(np.flatnonzero(d.dev_class != c)[0])
        for l in range(P):
            for r in range(P):
                if r < l:
                    assert cost[c, l, r] == math.inf
                    continue
                inside = (pos >= l) & (pos <= r)
                assign = np.where(inside, dev, other)
                ev = evaluate(spec, assign)
                runs = d.allowed[inside][:, d.dev_class == c].any(axis=1).all()
                fits = (spec.constraints.memory != "hard" or
                        d.params[inside].sum() <= d.memory[c] * (1 + 1e-12))
                if runs and fits:
                    assert math.isclose(cost[c, l, r], ev.loads[d.devices[dev]], rel_tol=1e-9, abs_tol=1e-9)
                else:
                    assert cost[c, l, r] == math.inf


def brute_segmentation(cost: np.ndarray, counts: list[int]) -> float:
    """Every way to cut 0..P-1 into consecutive segments and give each a class."""
    C, P, _ = cost.shape
    best = math.inf
    for k in range(1, min(P, sum(counts)) + 1):
        for cuts in itertools.combinations(range(1, P), k - 1):
            bounds = [0, *cuts, P]
            segs = [(bounds[i], bounds[i + 1] - 1) for i in range(k)]
            for classes in itertools.product(range(C), repeat=k):
                if any(classes.count(c) > counts[c] for c in range(C)):
                    continue
                best = min(best, max(cost[c, l, r] for (l, r), c in zip(segs, classes)))
    return best


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 6), st.lists(st.integers(1, 3), min_size=1, max_size=3), st.data())
def test_split_dp_equals_brute_force_segmentation(P: int, counts: list[int], data) -> None:
    C = len(counts)
    vals = data.draw(st.lists(st.one_of(st.floats(0, 10), st.just(math.inf)), min_size=C * P * P, max_size=C * P * P))
    cost = np.array(vals).reshape(C, P, P)
    cost[:, np.tril_indices(P, -1)[0], np.tril_indices(P, -1)[1]] = math.inf
    expected = brute_segmentation(cost, counts)
    for use_numba in (True, False):  # the compiled loops and the NumPy fallback
        splits = split_dp(cost, counts, use_numba=use_numba)
        assert min((s.value for s in splits), default=math.inf) == expected
        check_splits(cost, splits)


def check_splits(cost: np.ndarray, splits: list) -> None:
    for s in splits:  # each reported split is what it claims
        assert sum(1 for _ in s.segments) == sum(s.counts)
        assert s.value == max(cost[c, l, r] for l, r, c in s.segments)
        assert [l for l, _, _ in s.segments] == [0] + [r + 1 for _, r, _ in s.segments[:-1]]


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(specs(max_nodes=7))
def test_contraction_members_are_each_units_nodes_in_index_order(spec: Spec) -> None:
    u = contract(spec.dense)
    members = u.members()
    assert len(members) == u.count
    for k, nodes in enumerate(members):
        assert nodes.tolist() == np.flatnonzero(u.unit == k).tolist()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(specs(max_nodes=7))
def test_orders_are_topological(spec: Spec) -> None:
    d = spec.dense
    for order in (kahn(d.n, d.src, d.dst), dfs_order(d.n, d.src, d.dst),
                  kahn(d.n, d.src, d.dst, np.random.default_rng(0).random(d.n))):
        at = np.empty(d.n, dtype=np.int64)
        at[order] = np.arange(d.n)
        assert sorted(order.tolist()) == list(range(d.n))
        assert (at[d.src] < at[d.dst]).all()


def test_numba_is_in_use() -> None:
    """The compiled path is what runs by default (the fallback is tested above)."""
    assert HAVE_NUMBA


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(specs(max_nodes=6, kinds=("bottleneck",), max_devices=3))
def test_slicegraph_is_the_best_segmentation_of_its_order(spec: Spec) -> None:
    """SliceGraph(G, order, k) == min over every segmentation of that order, scored by the
    evaluator (Archer Thm. 4.1), when nothing but the load matters."""
    from partdsl import solve
    from partdsl.core.ir import Constraints, Objective
    from partdsl.kernels.bottleneck.segment_dp import Split
    from partdsl.kernels.bottleneck.topo_split import assign

    spec = spec.__class__(spec.graph, spec.platform, Objective("bottleneck", None, spec.objective.overlap),
                          Constraints(memory="ignore"))
    pos, P = positions(spec, None)
    counts = [k.count for k in spec.platform.classes]
    best = math.inf
    for k in range(1, min(P, sum(counts)) + 1):
        for cuts in itertools.combinations(range(1, P), k - 1):
            bounds = [0, *cuts, P]
            for classes in itertools.product(range(len(counts)), repeat=k):
                if any(classes.count(c) > counts[c] for c in range(len(counts))):
                    continue
                segs = tuple((bounds[i], bounds[i + 1] - 1, classes[i]) for i in range(k))
                sp = Split(0.0, tuple(classes.count(c) for c in range(len(counts))), segs)
                ev = evaluate(spec, assign(spec, sp, pos))
                if ev.feasible:
                    best = min(best, ev.objective)
    r = solve(spec, method="slicegraph", gap=0.0)
    if math.isinf(best):
        assert not r.status.has_solution()
    else:
        assert math.isclose(r.objective, best, rel_tol=1e-9, abs_tol=1e-9)


def test_the_dp_says_why_its_answer_is_no_proof() -> None:
    """Where the DP is not exact it says why, beside its answer (a cyclic quotient under
    contiguity alone), and where it is, it proves and says nothing of the kind."""
    from partdsl import parse
    from partdsl.core.events import Progress, Proven
    from partdsl.kernels.bottleneck import ideal_dp

    text = """graph g { node a { work 2 ms; out 1 MB } node b { work 3 ms } a -> b }
platform { device gpu[2] { link 1 GB/s } }
minimize bottleneck
subject to { contiguous }"""
    events = list(ideal_dp.run(parse(text)))
    assert any(isinstance(e, Progress) and "cyclic quotient" in e.message for e in events)
    assert not any(isinstance(e, Proven) for e in events)
    events = list(ideal_dp.run(parse(text.replace("contiguous", "acyclic"))))
    assert any(isinstance(e, Proven) for e in events)
    assert not any(isinstance(e, Progress) and "not a proof" in e.message for e in events)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(specs(max_nodes=7, kinds=("bottleneck",), max_devices=3), st.sampled_from(["as is", "contiguous", "acyclic"]))
def test_ideal_dp_equals_brute_force_best_acyclic_split(spec: Spec, force: str) -> None:
    """Exact where it claims to be (acyclic quotient, i.e. a chain of ideals); otherwise
    feasible and never better than the optimum."""
    from partdsl import solve
    from partdsl.core.ir import Constraints
    from partdsl.kernels.bottleneck.ideal_dp import exact_for

    spec = dp_replicas(spec)
    c = spec.constraints
    if force != "as is":
        spec = spec.__class__(spec.graph, spec.platform, spec.objective,
                              Constraints(c.acyclic or force == "acyclic", c.contiguous or force == "contiguous",
                                          c.memory, c.colocate, c.colocate_sets, c.pins, c.forbids, c.max_stages,
                                          replicate=c.replicate))
    brute = solve(spec, method="brute", gap=0.0, time_limit=1e6)
    dp = solve(spec, method="dp", gap=0.0, time_limit=1e6)
    if dp.status.has_solution():
        assert brute.status.has_solution() and dp.objective >= brute.objective - 1e-9
        assert evaluate(spec, to_array(spec, dp.assignment)).feasible
    if exact_for(spec) and brute.status.has_solution():
        assert dp.bound <= brute.objective + 1e-9
        d = spec.dense
        if (d.backward[d.src] & ~d.backward[d.dst]).any() and not dp.status.has_solution():
            return  # the DP's best split may close a forward/backward cycle: a bound, no split (docs/limitations.md)
        assert dp.status.value == "optimal", (dp.log, brute.objective, dp.objective, dp.bound)
        assert math.isclose(dp.objective, brute.objective, rel_tol=1e-9, abs_tol=1e-9)


def test_ideals_of_a_diamond_and_absorbed_sinks() -> None:
    from partdsl import parse
    from partdsl.kernels.bottleneck.ideals import enumerate_ideals
    from partdsl.kernels.graph.contraction import absorbable_sinks, contract

    # a -> {b, c} -> d : ideals {}, a, ab, ac, abc, abcd
    ideals = enumerate_ideals(4, np.array([0, 0, 1, 2]), np.array([1, 2, 3, 3]))
    assert sorted(ideals) == sorted([0b0000, 0b0001, 0b0011, 0b0101, 0b0111, 0b1111])
    spec = parse("""graph g { node a { work 1 ms; out 1 MB } node s[1..3] { work 0 ms; params 1 MB } a -> s[1]
      a -> s[2]  a -> s[3] } platform { device d[2] { memory 1 GB; link 1 GB/s } }""")
    pairs = absorbable_sinks(spec.dense, memory_binds=False)
    assert sorted(v for _, v in pairs) == [1, 2, 3] and contract(spec.dense, pairs).count == 1
    assert absorbable_sinks(spec.dense, memory_binds=True) == []  # their memory could matter


@pytest.mark.parametrize("tiny", [5e-324, 1e-310, 0.0])
def test_the_ideal_order_holds_at_any_cost_scale(tiny: float) -> None:
    """The DP orders its ideals by keys in whole steps (ideal_chains._whole). A subnormal
    total once made the scale inf and the keys nan (0 x inf), so the order, and with it the
    DP's window of predecessors, was undefined: the keys stay finite and each ideal comes
    after its subsets, and the DP's value is the brute force's."""
    from partdsl import parse, solve
    from partdsl.kernels.bottleneck.ideal_chains import Chains
    from partdsl.kernels.bottleneck.ideal_dp import chain_split, units
    from partdsl.kernels.bottleneck.ideals import enumerate_ideals

    spec = parse(f"""graph g {{ node a {{ work {tiny!r} ms; out 1 MB }} node b {{ work 0 ms; out 1 MB }}
      node c {{ work {tiny!r} ms }} node d {{ work 0 ms }} a -> b  a -> c  b -> d  c -> d }}
      platform {{ device x[2] {{ memory 1 GB; link 1 GB/s }} }} minimize bottleneck subject to {{ acyclic }}""")
    u = units(spec)
    chains = Chains.build(spec, u, enumerate_ideals(u.count, u.src, u.dst), NEVER)
    assert chains is not None and np.isfinite(chains.key).all() and np.isfinite(chains.scale)
    for i in range(chains.NI):  # no subset of ideal i sorts after it
        later = chains.bits[i + 1:]
        assert not ((later & ~chains.bits[i]) == 0).all(axis=1).any()
    value, dev, _, _ = chain_split(spec, np.inf, NEVER, None, None)
    brute = solve(spec, method="brute", gap=0.0)
    assert evaluate(spec, dev).objective == pytest.approx(value, rel=1e-9, abs=1e-12)
    assert value == pytest.approx(brute.objective, rel=1e-9, abs=1e-12)


def test_contiguous_blocks_with_a_cyclic_quotient_are_not_a_chain_of_ideals() -> None:
    """Why the DP proves optimality only under `acyclic` (found by the property test)."""
    from partdsl import parse, solve

    text = """graph g {{ node a {{ work 0 ms on acc, 1 ms on cpu }} node b {{ work 0 ms on cpu; not acc }}
      node c {{ work 0 ms on cpu; not acc }} node d {{ work 0 ms on cpu; not acc }} node e {{ work 0 ms on acc, 1 ms on cpu }}
      a -> {{c, d, e}}  b -> {{c, d, e}}  c -> d }}
    platform {{ device acc[1] {{ link 1 GB/s }} device cpu[1] {{ host }} }}
    subject to {{ {} }}"""
    contiguous = parse(text.format("contiguous"))
    assert solve(contiguous, method="brute").objective == 0.0  # {a, e} | {b, c, d}: both contiguous
    dp = solve(contiguous, method="dp")
    assert dp.objective == 1.0 and dp.status.value == "feasible"  # no proof claimed
    acyclic = parse(text.format("acyclic"))
    assert solve(acyclic, method="brute").objective == 1.0
    exact = solve(acyclic, method="dp")
    assert exact.objective == 1.0 and exact.status.value == "optimal"


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.integers(20, 300))
def test_compiled_kahn_equals_the_reference(seed: int, n: int) -> None:
    from partdsl.generators.regal import regal_graph
    from partdsl.kernels.graph.kahn_keys import KahnCSR

    g = regal_graph(n, "ba", seed)
    src = np.array([a for a, _ in g.edges], dtype=np.int64)
    dst = np.array([b for _, b in g.edges], dtype=np.int64)
    keys = np.round(np.random.default_rng(seed).random(n), 1)  # many ties: broken by index
    assert (KahnCSR(n, src, dst).order(keys) == kahn(n, src, dst, keys)).all()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(specs(max_nodes=7, kinds=("bottleneck",), max_devices=3))
def test_ideal_dp_value_is_the_evaluator_score_of_its_split(spec: Spec) -> None:
    """The DP's segment costs are the evaluator's, training graphs and backward edges
    included, whenever every device holds at most one DP segment; under GPipe its value
    is the evaluator's max FW + max BW."""
    from partdsl.kernels.bottleneck.ideal_dp import chain_split

    spec = dp_replicas(spec)
    value, arr, _, reps = chain_split(spec, math.inf, NEVER, None, None)
    if arr is None:
        return
    ev = evaluate(spec, arr, replicas_of=reps)
    score = ev.objective if spec.objective.training == "gpipe" else max(ev.loads.values())
    assert math.isclose(value, score, rel_tol=1e-9, abs_tol=1e-9)


@SETTINGS
@given(st.data())
def test_compiled_load_table_equals_the_evaluator(data) -> None:
    spec: Spec = data.draw(specs(kinds=("bottleneck",)))
    if data.draw(st.booleans()):  # peak activations in the overflow: the table is the evaluator's own
        spec = tight_memory(spec, 0.3, "overflow")
    dev = np.array(data.draw(assignments(spec)), dtype=np.int64)
    # replication factors (evaluator/replicas.py): the sync in the transfers in (backward under GPipe), then / r
    r = np.array(data.draw(st.lists(st.sampled_from([1, 1, 2, 3]), min_size=spec.dense.D, max_size=spec.dense.D)))
    for factors in (None, r):
        value, table = LoadTable(spec)(dev, factors)
        ref_value, ref = bottleneck_loads(spec, spec.dense, dev, None if factors is None else factors.astype(float))
        assert np.allclose(table, ref, rtol=1e-12, atol=1e-12)
        assert math.isclose(value, ref_value, rel_tol=1e-12, abs_tol=1e-12)
        assert LoadTable(spec, use_numba=False)(dev, factors)[0] == ref_value


def test_loads_past_1e154_ms_score_without_an_overflow_warning() -> None:
    """Found by the robustness draw (extreme, seed 644374: mtpp_overflow.part with 1e290 MB
    tensors): the sum of squared loads overflowed, and a RuntimeWarning filter (pytest's, a
    user's -W error) made `part solve` an internal error. The square is inf, a tie the max
    load decides (load_table.square_sum), in the search's score and in the scan's Python path."""
    import warnings

    from partdsl import parse
    from partdsl.kernels.bottleneck.load_search import Search

    from tests.support import EXAMPLES

    text = (EXAMPLES / "mtpp_overflow.part").read_text().replace("out 8 MB", "out 1e290 MB")
    spec = parse(text)
    dev = np.arange(spec.dense.n) % spec.dense.D  # tensors cross devices: loads of about 1e290 ms
    s = Search(spec, dev)
    ks, js = np.arange(s.count), np.zeros(s.count, dtype=np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        value, spread = s.rate(dev)
        s.loads.compiled = False
        values, spreads = s.loads.scan(dev, ks, js, s.mptr, s.midx, None)
    assert 1e280 < value < math.inf and spread == math.inf
    assert np.isinf(spreads).any() and np.isfinite(values).all()


@SETTINGS
@given(st.data())
def test_batched_move_scores_equal_one_evaluation_per_move(data) -> None:
    from partdsl.kernels.bottleneck.load_search import Search

    spec: Spec = data.draw(specs(kinds=("bottleneck",)))
    dev = np.array(data.draw(assignments(spec)), dtype=np.int64)
    s = Search(spec, dev)
    ks = np.repeat(np.arange(s.count), spec.dense.D)
    js = np.tile(np.arange(spec.dense.D), s.count)
    r = np.array(data.draw(st.lists(st.sampled_from([1, 2]), min_size=spec.dense.D, max_size=spec.dense.D)))
    native = s.loads.compiled
    for compiled, factors in ((True, None), (False, None), (True, r), (False, r)):
        s.loads.compiled = compiled and native
        value, spread = s.loads.scan(dev, ks, js, s.mptr, s.midx, factors)
        for i, (k, j) in enumerate(zip(ks, js)):
            trial = dev.copy()
            trial[s.members[k]] = j
            ref_value, ref = bottleneck_loads(spec, spec.dense, trial, None if factors is None else factors.astype(float))
            assert math.isclose(value[i], ref_value, rel_tol=1e-12, abs_tol=1e-12)
            assert math.isclose(spread[i], float(np.square(ref).sum()), rel_tol=1e-9, abs_tol=1e-9)


@SETTINGS
@given(st.data())
def test_move_scan_by_parts_equals_whole_tables(data) -> None:
    """`LoadTable.scan` takes back and adds again only the parts a move changes; each
    move's objective and spread equal the whole table's (kernels/bottleneck/load_table.py)."""
    from partdsl.kernels.bottleneck.load_search import Search
    from partdsl.kernels.bottleneck.load_table import _scan, _scan_tables

    spec: Spec = data.draw(specs(kinds=("bottleneck",)))
    d = spec.dense
    finite = np.isfinite(d.work)
    dev = np.array([data.draw(st.sampled_from(np.flatnonzero(finite[v, d.dev_class]).tolist() or [0]))
                    for v in range(d.n)], dtype=np.int64)
    s = Search(spec, dev)
    if not (HAVE_NUMBA and s.loads.compiled and np.isfinite(d.work[np.arange(d.n), d.dev_class[dev]]).all()):
        return
    ks = np.repeat(np.arange(s.count), d.D)
    js = np.tile(np.arange(d.D), s.count)
    r = np.array(data.draw(st.lists(st.sampled_from([1, 2, 3]), min_size=d.D, max_size=d.D)))
    for factors in (None, r):
        rep = s.loads.replicas(factors)
        parts = _scan(dev, ks, js, s.mptr, s.midx, *s.loads.preds, s.loads.gpipe, *s.loads.args, *rep)
        whole = _scan_tables(dev, ks, js, s.mptr, s.midx, s.loads.gpipe, *s.loads.args, *rep)
        scale = max(1.0, float(np.abs(whole[0][np.isfinite(whole[0])]).max(initial=0.0)))
        assert np.allclose(parts[0], whole[0], rtol=1e-12, atol=1e-12 * scale)
        assert np.allclose(parts[1], whole[1], rtol=1e-9, atol=1e-9 * scale * scale)


@SETTINGS
@given(st.data())
def test_the_units_that_can_lower_the_score_hold_every_improving_move(data) -> None:
    """step=best of the local search scans only `MoveScores.touching`: the best move of all
    units, if it improves, is among theirs."""
    from partdsl.kernels.bottleneck.move_scores import MoveScores

    spec: Spec = data.draw(specs(kinds=("bottleneck",)))
    spec = replace(spec, constraints=replace(spec.constraints, contiguous=False, acyclic=False, max_stages=None))
    if data.draw(st.booleans()):
        spec = replace(spec, platform=replace(spec.platform, classes=tuple(
            replace(k, memory=float(spec.dense.params.sum()) / 3 + 1) for k in spec.platform.classes)),
            constraints=replace(spec.constraints, memory=data.draw(st.sampled_from(["hard", "overflow"]))))
    dev = np.array(data.draw(assignments(spec)), dtype=np.int64)
    u = contract(spec.dense)
    ms = MoveScores(spec, u)
    dev = dev[np.array([m[0] for m in u.members()])][u.unit]  # each unit on one device
    units = ms.touching(dev)
    if units is None:
        return
    D = spec.dense.D
    ks, js = np.repeat(np.arange(u.count), D), np.tile(np.arange(D), u.count)
    keep = js != dev[[u.members()[k][0] for k in ks]]
    ks, js = ks[keep], js[keep]
    viol, obj = ms.moves(dev, ks, js)
    cur = ms.scores(dev)
    tol = 1e-9 * max(1.0, abs(cur[1])) if np.isfinite(cur[1]) else 0.0
    better = (viol < cur[0]) | ((viol == cur[0]) & (obj < cur[1] - tol))
    assert set(ks[better].tolist()) <= set(units.tolist())


@SETTINGS
@given(specs(kinds=("bottleneck",)), st.integers(2, 5))
def test_coarse_blocks_keep_the_order_and_cut_at_the_cheapest_crossing(spec: Spec, most: int) -> None:
    pos, P = positions(spec, None)
    block, B = coarsen(spec, pos, P, most)
    assert B == P if P <= most else B <= most
    fine_to_block = np.zeros(P, np.int64)
    fine_to_block[pos] = block
    assert (np.diff(fine_to_block) >= 0).all() and fine_to_block[0] == 0 and fine_to_block[-1] == B - 1
    if B < P:  # each cut is the cheapest of its window
        cross = crossing(spec, pos, P)
        width = -(-(P - 1) // (most - 1))
        for t in np.flatnonzero(np.diff(fine_to_block)) + 1:
            w = (t - 1) // width
            assert cross[t] == cross[1 + w * width:min(1 + (w + 1) * width, P)].min()


def test_the_ideal_dp_stops_at_its_deadline_and_sums_units_by_word() -> None:
    from partdsl import parse
    from partdsl.kernels.bottleneck.ideal_dp import ideal_split
    from partdsl.kernels.bottleneck.ideal_kernels import member as row_member
    from partdsl.kernels.bottleneck.ideal_kernels import unit_sums, words
    from partdsl.runtime.deadline import NEVER, Deadline

    rng = np.random.default_rng(0)
    ideals = [int(rng.integers(0, 2**62)) << int(rng.integers(0, 80)) for _ in range(50)]
    bits = words(ideals, 150)
    member = np.array([row_member(row, 150) for row in bits])
    assert [sum(1 << int(b) for b in np.flatnonzero(m)) for m in member] == ideals
    per_unit = rng.random((150, 3))
    assert np.allclose(unit_sums(bits, per_unit, NEVER), member.astype(float) @ per_unit)
    assert unit_sums(bits, per_unit, Deadline.after(0)) is None
    spec = parse("graph g { node a[1..40] { work 1 ms } a[1] -> ... -> a[40] } platform { device d[2] { } }")
    assert ideal_split(spec, deadline=Deadline.after(0))[:2] == (math.inf, None)
    assert ideal_split(spec)[0] == 20.0


@pytest.mark.parametrize("seed", range(5))
def test_ideal_frontiers_match_their_definition(seed: int) -> None:
    """The producers crossing each ideal's border (out of it, and into it), as the DP reads
    them from `_frontiers_until` (only producers with a consumer in another unit, only the
    words holding their consumers), against a direct count over the edges."""
    from partdsl.kernels.bottleneck.ideal_kernels import frontiers_until, words
    from partdsl.runtime.deadline import NEVER

    rng = np.random.default_rng(seed)
    U = int(rng.integers(2, 200))
    edges = sorted({(int(a), int(b)) for a, b in rng.integers(0, U, (3 * U, 2)) if a < b})
    unit_of_prod = np.arange(U, dtype=np.int64)  # one producer per unit, unit u's
    cons = np.zeros((U, (U + 63) // 64), dtype=np.uint64)
    for a, b in edges:
        cons[a, b // 64] |= np.uint64(1) << np.uint64(b % 64)
    ideals = [0] + [int(rng.integers(0, 2**62)) % (1 << U) for _ in range(40)]  # any sets: the scan is per set
    bits = words(ideals, U)
    for inward in (False, True):
        ptr, idx = frontiers_until(bits, unit_of_prod, cons, inward, NEVER)
        for i, ideal in enumerate(ideals):
            inside = [bool(ideal >> v & 1) for v in range(U)]
            want = sorted({a for a, b in edges if (inside[a] != inward) and (inside[b] == inward)})
            assert sorted(idx[ptr[i]:ptr[i + 1]].tolist()) == want


def test_the_ideal_dp_refuses_by_its_bitsets_size_before_enumerating() -> None:
    """The DP keeps at least U + 1 bitsets of U units: the limit follows IDEAL_BYTES, and
    enumeration stops at it (a diamond has 6 ideals: 5 are refused)."""
    from partdsl.core.errors import PartError
    from partdsl.kernels.bottleneck.ideals import IDEAL_BYTES, enumerate_ideals, ideal_limit, too_big

    assert too_big(10_000) is None and ideal_limit(10_000) * (10_000 // 2 + 100) <= IDEAL_BYTES
    assert "at least 40,001 bitsets of 40,000 units" in (too_big(40_000) or "")
    edge = max(U for U in range(1, 50_000, 100) if too_big(U) is None)
    assert (edge + 1) * (edge // 2 + 100) <= IDEAL_BYTES < (edge + 102) * ((edge + 100) // 2 + 100)
    with pytest.raises(PartError, match="more than 5 ideals of 4 units"):
        enumerate_ideals(4, np.array([0, 0, 1, 2]), np.array([1, 2, 3, 3]), limit=5)


def test_the_greedy_fills_each_device_up_to_a_share_in_proportion_to_its_speed() -> None:
    """20 nodes of 1 ms on a GPU and 10 ms on the CPU, two GPUs and a CPU: equal shares
    gave the CPU 6 nodes (60 ms); speed-proportional shares (1 : 1 : 0.1) give each GPU
    ten and the CPU none. On identical devices the shares stay equal."""
    from partdsl import parse, solve

    text = """graph g {{ node n[1..20] {{ work {work}; out 1 KB }} n[1] -> ... -> n[20] }}
      platform {{ device gpu[2] {{ link 10 GB/s }} {cpu} }} minimize bottleneck subject to {{ memory ignore }}"""
    r = solve(parse(text.format(work="1 ms on gpu, 10 ms on cpu", cpu="device cpu[1] { link 10 GB/s; host }")),
              method="greedy")
    per = {dev: list(r.assignment.values()).count(dev) for dev in ("gpu[0]", "gpu[1]", "cpu[0]")}
    assert per == {"gpu[0]": 10, "gpu[1]": 10, "cpu[0]": 0}, per
    assert r.objective < 10.01
    r = solve(parse(text.format(work="1 ms", cpu="")), method="greedy")
    assert sorted(list(r.assignment.values()).count(dev) for dev in ("gpu[0]", "gpu[1]")) == [10, 10]


def test_the_class_lp_bound_on_a_slow_host() -> None:
    """Two nodes of 1 ms on the accelerator and 2 ms on the host: the equal spread says
    1 ms; the LP puts 4/3 of a node's work on the accelerator, so T >= 4/3 (the optimum,
    both on the accelerator or one each, is 2)."""
    from partdsl import parse, solve
    from partdsl.methods.bounds import bound, class_spread

    spec = parse("""graph g { node a { work 1 ms on acc, 2 ms on cpu } node b { work 1 ms on acc, 2 ms on cpu } }
      platform { device acc[1] { link 1 GB/s } device cpu[1] { host } } minimize bottleneck""")
    assert math.isclose(class_spread(spec), 4 / 3, rel_tol=1e-9) and math.isclose(bound(spec), 4 / 3, rel_tol=1e-9)
    assert math.isclose(solve(spec, method="brute").objective, 2.0)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(specs(max_nodes=7, kinds=("bottleneck",), max_devices=4))
def test_the_class_lp_bound_is_below_the_brute_force_optimum(spec: Spec) -> None:
    """The certificate sum_v min_c w_c t_vc holds for any class weights: below the optimum
    over the evaluator's whole space on random mixed platforms (pins, forbids, memory,
    stage limits, training objectives, overlap)."""
    from partdsl import solve
    from partdsl.kernels import brute_force
    from partdsl.methods.bounds import class_spread

    assume(brute_force.count(spec) <= 20_000)  # replicas multiply the candidates (the oracle's limit)
    brute = solve(spec, method="brute", gap=0.0, time_limit=1e6)
    if brute.status.has_solution():
        assert class_spread(spec) <= brute.objective * (1 + 1e-9) + 1e-12, (class_spread(spec), brute.objective)


def test_load_search_without_a_limit_stops_when_its_patience_runs_out(tmp_path: Path) -> None:
    """`load_search` by name without --time-limit and with a stall rule that never fires
    (stall = 10^9 fruitless kicks) still ends: nothing better for max(PATIENCE, the time
    the best took) stops it (here PATIENCE = 0.2 s, on a 1,000-operator decoder; a
    subprocess, so that a search that never ends fails the test instead of hanging it)."""
    import subprocess
    import sys

    from tests.support import run_part

    f = tmp_path / "decoder.part"
    assert run_part("generate", "transformer", "--layers", "71", "--gpus", "8", "-o", str(f)).returncode == 0
    code = ("import sys\nfrom partdsl import parse_file, solve\nfrom partdsl.kernels.bottleneck import load_search\n"
            "load_search.PATIENCE = 0.2\n"
            "r = solve(parse_file(sys.argv[1]), method='load_search', options={'stall': 10**9})\n"
            "print(r.status.value, r.evaluation.feasible)\n")
    p = subprocess.run([sys.executable, "-c", code, str(f)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["feasible", "True"], p.stdout

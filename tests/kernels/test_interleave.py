"""Interleaved pipelines (`interleave V`, issue 71 defect 7): the evaluator's chunk rule
(evaluator/interleave.py), method `interleave` against brute force over the evaluator's
whole space, its local search on a chain too long to enumerate, and the refusals."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from partdsl.core.errors import PartError
from partdsl.dsl.builder import GraphBuilder, SpecBuilder
from partdsl.evaluator import interleave
from partdsl.evaluator.evaluate import evaluate
from partdsl.methods.solve import ABS_TOL, solve

from tests.support.oracle import oracle


def chain(works: list[float], counts: tuple[int, int], V: int, memory: float | None = None):  # type: ignore[no-untyped-def]
    g = GraphBuilder("layers")
    for i, w in enumerate(works):
        g.node(f"u{i}", work={"a": w, "b": 2 * w}, params=1e9, out=1e6)
    g.chain(*[f"u{i}" for i in range(len(works))])
    sb = SpecBuilder(g.build()).device("a", counts[0], memory=memory, link="10 GB/s")
    sb.device("b", counts[1], memory=memory, link="10 GB/s")
    return sb.minimize("bottleneck").subject_to(interleave=V).build()


def test_chunks_come_round_robin() -> None:
    spec = chain([1.0] * 6, (2, 0), 2)
    order, chunk = interleave.chunks(spec.dense, np.array([0, 1, 1, 0, 1, 1]))
    assert order == [0, 1] and chunk.tolist() == [0, 1, 1, 2, 3, 3]
    assert evaluate(spec, np.array([0, 1, 1, 0, 1, 1])).feasible
    ev = evaluate(spec, np.array([0, 0, 0, 1, 1, 1]))  # one block each: 2 chunks, not 4
    assert [v.kind for v in ev.violations] == ["interleave"] and "number 2, where `interleave 2` asks for 4" in str(
        ev.violations[0])
    assert not evaluate(spec, np.array([0, 1, 0, 1, 0, 1])).feasible  # 6 chunks


@st.composite
def chains(draw):  # type: ignore[no-untyped-def]
    L = draw(st.integers(3, 6))
    works = [draw(st.sampled_from([0.5, 1.0, 2.0, 3.0])) for _ in range(L)]
    try:
        spec = chain(works, (draw(st.integers(1, 2)), draw(st.integers(0, 1))), 2,
                     draw(st.sampled_from([None, 2.5e9, 4e9])))
    except PartError:
        assume(False)
    return spec


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(chains())
def test_the_interleave_method_proves_the_brute_force_optimum(spec) -> None:  # type: ignore[no-untyped-def]
    opt, feasible = oracle(spec)
    r = solve(spec, method="interleave", time_limit=60)
    if not feasible:
        assert r.assignment is None and r.status.value != "optimal"
        return
    assert r.status.value == "optimal" and r.objective == pytest.approx(opt, rel=1e-9, abs=ABS_TOL)


def test_the_local_search_answers_interleaved_on_a_long_chain() -> None:
    """40 layers on 2 + 2 devices, 2 chunks each: too many cuts to score; the search
    answers an interleaved plan no worse than equal chunks, above the spec's bound."""
    rng = np.random.default_rng(3)
    spec = chain(list(rng.uniform(1.0, 3.0, 40)), (2, 2), 2)
    r = solve(spec, method="interleave", time_limit=60)
    dev = np.array([spec.platform.devices.index(r.assignment[n]) for n in spec.dense.names])
    assert evaluate(spec, dev).feasible
    equal = np.array([0, 1, 2, 3] * 2).repeat(5)  # 8 chunks of 5 layers, ranks a, a, b, b
    assert evaluate(spec, equal).feasible and r.objective <= evaluate(spec, equal).objective + ABS_TOL
    assert r.bound is not None and r.bound <= r.objective + ABS_TOL


def test_interleave_is_refused_beside_acyclic_and_by_the_other_methods() -> None:
    g = GraphBuilder("g").node("a", 1.0).node("b", 1.0).chain("a", "b").build()
    with pytest.raises(PartError, match="which `acyclic` forbids"):
        SpecBuilder(g).device("gpu", 2).minimize("bottleneck").subject_to(interleave=2, acyclic=True).build()
    spec = chain([1.0] * 4, (2, 0), 2)
    for method in ("dp", "load_search", "exact"):
        with pytest.raises(PartError, match="interleaving"):
            solve(spec, method=method, time_limit=5)


def test_the_pipeline_of_an_interleaved_plan_fills_in_chunks() -> None:
    """The report's step: m x the slowest stage + the others' times / V (Narayanan et al.
    2021, sec. 2.2); its chunks go back to the first device, which is no back edge."""
    from partdsl.evaluator.device_record import device_records, pipeline

    spec = chain([1.0] * 8, (2, 0), 2)
    dev = np.array([0, 0, 1, 1, 0, 0, 1, 1])
    ev = evaluate(spec, dev)
    pipe = pipeline(spec, device_records(spec, ev, dev), dev, micro_batches=8)
    assert pipe is not None and pipe.virtual == 2 and pipe.back_edges == 0
    top = max(pipe.times)
    assert pipe.step_ms == pytest.approx(8 * top + (sum(pipe.times) - top) / 2)

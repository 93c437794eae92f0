"""Device-level pins and forbids in the methods that place work per class
(methods/class_view.py; issue 75, defect 2): `pin block[..] to gpu[0]` made `dp`, `topo`,
`greedy` and `local_search` find no solution, since a chain split over classes gave two
segments the one device their nodes may use. On the view each run of like devices is a
class: the same devices, times and allowed pairs, and the DP's proof holds."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from partdsl import parse
from partdsl.core.ir import Target
from partdsl.methods.class_view import class_view
from partdsl.methods.solve import solve

from tests.support.effort import examples
from tests.support.oracle import check_case, tiny_specs
from tests.support.strategies import specs

PINNED = """graph g {
  node embed { work 1.2 ms on gpu, 9 ms on cpu; params 80 MB; out 2 MB }
  node block[1..5] { work 3 ms on gpu; params 28 MB; out 2 MB }
  node head { work 0.5 ms on gpu; out 4 KB; only gpu }
  embed -> block[1] -> ... -> block[5] -> head
}
platform { device gpu[3] { memory 16 GiB; link 12 GB/s } device cpu[1] { host } }
minimize bottleneck
subject to { acyclic; contiguous; memory hard; pin head to gpu; %s }
"""


@pytest.mark.parametrize("pin", ["pin block[1..5] to gpu[0]", "pin block[1..5] to gpu[2]",
                                 "forbid block[1..5] on gpu[0], gpu[1]"])
def test_the_segment_methods_answer_under_a_device_pin_and_the_dp_proves_it(pin: str) -> None:
    spec = parse(PINNED % pin)
    opt = solve(spec, method="brute")  # 4^7 assignments, the evaluator's whole space
    assert opt.status.value == "optimal" and opt.objective >= 15.0  # the 5 blocks on one GPU: 15 ms of work
    for method in ("dp", "topo", "greedy", "local_search", "auto"):
        r = solve(spec, method=method, time_limit=60)
        assert r.status.has_solution() and r.evaluation.feasible, method
        assert r.objective >= opt.objective - 1e-9
    dp = solve(spec, method="dp", time_limit=60)
    assert dp.status.value == "optimal" and dp.objective == pytest.approx(opt.objective)
    assert class_view(spec) is not spec  # the view was taken


def test_the_view_keeps_the_devices_in_order_and_the_rest_of_the_spec() -> None:
    spec = parse(PINNED % "pin block[1..5] to gpu[1]")
    view = class_view(spec)
    assert [k.name for k in view.platform.classes] == ["gpu~0", "gpu~1", "gpu~2", "cpu"]
    assert view.dense.D == spec.dense.D and np.array_equal(view.dense.allowed, spec.dense.allowed)
    plain = parse(PINNED % "pin block[1..5] to gpu")
    assert class_view(plain) is plain  # class-level pins: nothing to do


@settings(max_examples=examples(150), deadline=None, suppress_health_check=list(HealthCheck))
@given(specs(kinds=("bottleneck", "latency", "task_latency", "throughput")))
def test_the_view_is_the_spec_device_for_device(spec) -> None:  # type: ignore[no-untyped-def]
    """Wherever a view is taken, its dense form matches the spec's per device (it is not
    taken otherwise), and every candidate scores the same on both."""
    view = class_view(spec)
    if view is spec:
        return
    a, b = spec.dense, view.dense
    assert np.array_equal(a.allowed, b.allowed)
    assert np.array_equal(a.work[:, a.dev_class], b.work[:, b.dev_class])
    from partdsl.evaluator.evaluate import evaluate

    rng = np.random.default_rng(0)
    for _ in range(5):
        dev = np.array([rng.choice(np.flatnonzero(row)) if row.any() else 0 for row in a.allowed])
        x, y = evaluate(spec, dev), evaluate(view, dev)
        assert x.feasible == y.feasible and (x.objective == y.objective or not x.feasible)


@st.composite
def pinned_specs(draw):  # type: ignore[no-untyped-def]
    """Tiny specs of any objective on a flat platform of two or more accelerators, with a
    node pinned to, and maybe another forbidden on, a single one: the view is taken."""
    spec = draw(tiny_specs(kinds=("bottleneck", "latency", "task_latency", "throughput")))
    acc = spec.platform.classes[0]
    assume(not spec.platform.routed and spec.constraints.replicate == 1 and acc.count >= 2 and not acc.host)
    names = [nd.name for nd in spec.graph.nodes if nd.tensor_of is None]
    to = f"{acc.name}[{draw(st.integers(0, acc.count - 1))}]"
    pins = ((Target(draw(st.sampled_from(names))), (Target(to),)),)
    forbids = spec.constraints.forbids
    if draw(st.booleans()):
        forbids += ((Target(draw(st.sampled_from(names))), (Target(f"{acc.name}[{acc.count - 1}]"),)),)
    spec = replace(spec, constraints=replace(spec.constraints, pins=pins, forbids=forbids))
    assume(class_view(spec) is not spec)
    return spec


@settings(max_examples=examples(40), deadline=None, suppress_health_check=list(HealthCheck))
@given(pinned_specs())
def test_every_method_on_the_view_agrees_with_brute_force(spec) -> None:  # type: ignore[no-untyped-def]
    """The oracle (tests/support/oracle.py) on specs whose view is taken: no method claims
    an optimum brute force beats, no bound crosses it, no answer is better than it."""
    findings, runs = check_case(spec)
    assert findings == [] and runs > 0

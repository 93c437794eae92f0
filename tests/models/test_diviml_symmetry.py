"""Symmetry breaking across identical servers and devices (models/diviml_symmetry.py,
DiviML sec. V-E and VI): which relabellings are found, that a canonical start satisfies
the rows, and that the MILP with the rows still reaches the optimum over every schedule
the evaluator accepts (brute force, tests/models/test_diviml_milp.py) on server platforms,
including ones whose pins or links break the symmetry."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from partdsl.core.ir import Constraints, DeviceClass, Graph, Link, Node, Objective, Platform, Server, Spec, Target, Work
from partdsl.core.schedule import Schedule, from_json
from partdsl.core.validate import validate
from partdsl.evaluator.schedule_eval import evaluate_schedule
from partdsl.generators.randwire import RandWire, randwire_spec
from partdsl.kernels.schedule.list_schedulers import schedule
from partdsl.methods.solve import solve
from partdsl.models import diviml, diviml_symmetry

from tests.support.effort import examples
from tests.support.oracle import brute_schedules


def server_spec(n: int = 3, servers: int = 2, kind: str = "throughput", L: int = 2, K: int = 1,
                gpus: int = 1, pin: bool = False, link: bool = False, fabric: float = 1e8,
                works: tuple[float, ...] = (1.0, 2.0, 1.5), edges: tuple[tuple[int, int], ...] = ((0, 1), (0, 2)),
                out: float = 4e6) -> Spec:
    """`servers` identical servers of `gpus` GPUs and one host CPU each, a slow fabric."""
    nodes = tuple(Node(f"v{v}", (Work(works[v % len(works)], "gpu"), Work(3 * works[v % len(works)] + 1, "cpu")),
                       out=out) for v in range(n))
    classes = (DeviceClass("gpu", gpus * servers, link=1e9, server="node"),
               DeviceClass("cpu", servers, host=True, server="node"))
    links = (Link("gpu[0]", f"cpu[{servers - 1}]", 1e10),) if link else ()
    platform = Platform(classes, links, None, (), (Server("node", servers, 1e10),), fabric)
    spec = Spec(Graph("g", nodes, tuple(e for e in edges if max(e) < n)), platform, Objective(kind, batch=L, split=K),
                Constraints(memory="ignore", pins=((Target(f"v{n - 1}"), (Target("gpu[1]"),)),) if pin else ()))
    validate(spec)
    return spec


def test_identical_servers_are_found_device_for_device_and_broken_by_pins_and_links() -> None:
    spec = server_spec()  # gpu[0], gpu[1], cpu[0], cpu[1]: server 0 holds gpu[0] and cpu[0]
    assert diviml_symmetry.identical_devices(spec) == ()  # a GPU's path to the CPUs depends on its server
    (run,) = diviml_symmetry.identical_servers(spec)
    assert [b.tolist() for b in run] == [[0, 2], [1, 3]]
    three = diviml_symmetry.identical_servers(server_spec(servers=3))
    assert [b.tolist() for b in three[0]] == [[0, 3], [1, 4], [2, 5]]
    two = server_spec(gpus=2)  # gpu[0], gpu[1] in server 0: identical inside it, and the servers too
    assert diviml_symmetry.identical_devices(two) == ((0, 1), (2, 3))
    assert [b.tolist() for b in diviml_symmetry.identical_servers(two)[0]] == [[0, 1, 4], [2, 3, 5]]
    assert diviml_symmetry.identical_servers(server_spec(pin=True)) == ()
    assert diviml_symmetry.identical_servers(server_spec(link=True)) == ()
    # three servers, a link between the first and the last: the middle one is like neither
    assert diviml_symmetry.identical_servers(server_spec(servers=3, link=True)) == ()
    flat = server_spec(gpus=1)
    assert len(diviml_symmetry.generators(flat)) == 1


@pytest.mark.parametrize("criterion", [1, 2, 3])
def test_a_canonical_start_satisfies_the_server_rows(criterion: int) -> None:
    spec = server_spec(servers=3, gpus=2, n=3, L=4, K=2)
    heft = schedule(spec, "heft")
    s = diviml_symmetry.canonical(spec, criterion, heft)
    assert evaluate_schedule(spec, s).objective == pytest.approx(evaluate_schedule(spec, heft).objective)
    key = diviml_symmetry.symmetry_key(spec, criterion, s)
    (run,) = diviml_symmetry.identical_servers(spec)
    sums = [key[b].sum() for b in run]
    assert sums == sorted(sums, reverse=True)
    mip, vm = diviml.build(spec, 1e4, symmetry=criterion)
    names = mip.row_names() if mip.row_names is not None else []
    assert sum(name.startswith("symmetry_servers") for name in names) == 2  # server 0 >= 1 >= 2
    x0 = diviml.encode(spec, vm, evaluate_schedule(spec, s).schedule)
    assert x0 is not None
    lhs = mip.A @ x0
    assert (lhs >= mip.row_lo - 1e-9).all() and (lhs <= mip.row_hi + 1e-9).all(), "the relabelled start fits"


@st.composite
def on_servers(draw) -> Spec:  # type: ignore[no-untyped-def]
    n = draw(st.integers(2, 3))
    kind = draw(st.sampled_from(["task_latency", "throughput"]))
    return server_spec(n=n, kind=kind, L=1 if kind == "task_latency" else 2,
                       K=2 if kind == "throughput" and n == 2 and draw(st.booleans()) else 1,
                       pin=draw(st.booleans()) and not draw(st.booleans()), link=not draw(st.integers(0, 3)),
                       fabric=draw(st.sampled_from([1e8, 1e9, 1e10])),
                       works=tuple(draw(st.sampled_from([0.5, 1.0, 2.0, 4.0])) for _ in range(n)),
                       edges=tuple(sorted({(a, b) for a in range(n) for b in range(a + 1, n) if draw(st.booleans())})),
                       out=draw(st.sampled_from([0.0, 1e6, 4e6])))


@settings(max_examples=examples(6), deadline=None, suppress_health_check=list(HealthCheck))
@given(on_servers(), st.sampled_from([1, 2, 3]))
@example(server_spec(), 1)
@example(server_spec(kind="task_latency", L=1, out=1e6), 2)
def test_the_milp_with_server_rows_reaches_the_optimum(spec: Spec, criterion: int) -> None:
    """Every schedule relabels onto one the rows allow, so the optimum stays (HiGHS, gap 0)."""
    opt = brute_schedules(spec)
    r = solve(spec, method="exact", time_limit=60, gap=0.0, options={"symmetry": criterion})
    assert r.status.value == "optimal" and math.isfinite(opt)
    assert r.objective == pytest.approx(opt, rel=1e-6, abs=1e-6)


def test_orbits_map_each_pair_from_its_representative() -> None:
    spec = server_spec(servers=3)
    gens = diviml_symmetry.generators(spec)
    pairs = [(a, b) for a in range(6) for b in range(6)]
    orb = diviml_symmetry.orbits(pairs, gens, 6)
    reps = {r for r, _ in orb.values()}
    # three servers alike: a pair is (same server or not) x (gpu or cpu at each end): 2 x 4 orbits
    assert len(reps) == 8
    for (a, b), (r, perm) in orb.items():
        assert (int(perm[r[0]]), int(perm[r[1]])) == (a, b)
        assert sorted(perm.tolist()) == list(range(6))
    assert np.array_equal(diviml_symmetry.orbits([(0, None)], [], 6)[(0, None)][1], np.arange(6))


def on_two_servers(spec: Spec, fabric: float = 12.5e9) -> Spec:
    """DiviML's node (a CPU, a T4, an A100) twice, 100 GB/s inside a server."""
    p = spec.platform
    classes = tuple(replace(k, count=2, server="node") for k in p.classes)
    return replace(spec, platform=Platform(classes, p.links, None, (), (Server("node", 2, 100e9),), fabric))


@pytest.mark.slow  # a long solve (conftest.py: the tiers)
def test_milp_split_solves_one_device_pair_per_orbit_and_relabels_the_rest() -> None:
    from partdsl.kernels.graph.modules import restrict
    from partdsl.methods import milp_split
    from partdsl.methods.milp_split_modules import ModulePlan, solve_module

    spec = on_two_servers(randwire_spec(RandWire(model="er", size=4, modules=3, p=0.5, seed=2)))
    plan = ModulePlan(spec, 1, 4)
    _, _, jobs, keys, copies = milp_split._module_jobs(plan)
    assert len(copies) == len(jobs)  # swapping the servers moves every device: each orbit is two pairs
    solved = {key[:3]: solve_module(job, None, 30, None, None, gap=0.0) for job, key in zip(jobs, keys)}
    for (k, a, b), rep, perm in copies[::7]:  # a copy's makespan is its own module MILP's
        nodes = plan.modules[k]
        pins = {plan.cuts[k - 1][0][1]: spec.platform.devices[a]} if a is not None else {}
        if b is not None:
            pins[plan.cuts[k][0][0]] = spec.platform.devices[b]
        own = solve_module(restrict(plan.s, nodes, pins), None, 30, None, None, gap=0.0)
        assert own.makespan == pytest.approx(solved[rep].makespan, rel=1e-6, abs=1e-5)  # MILP tolerances
        # the representative's schedule, relabelled, is one of the copy's own: its pins hold, same makespan
        copy = milp_split.relabelled(solved[rep], perm)
        module = restrict(plan.s, nodes, pins)
        untimed = [tuple(replace(p, start=None) for _, p in x.pieces) for x in (copy, solved[rep])]
        ev = evaluate_schedule(module, Schedule(untimed[0], module.objective.batch))
        before = evaluate_schedule(restrict(plan.s, nodes, {}), Schedule(untimed[1], module.objective.batch))
        assert ev.feasible and ev.objective == pytest.approx(before.objective, rel=1e-9)
    found = [solve(spec, method="milp_split", options={"workers": 1, "symmetry": symmetry}) for symmetry in (0, 1, 2)]
    for r in found:  # proven: the Remark's bound meets the schedule (sdep modules run one after another)
        assert r.status.value == "optimal" and r.objective == pytest.approx(found[0].objective, rel=1e-6)
        ev = evaluate_schedule(spec, from_json(spec, r.schedule))
        assert ev.feasible and ev.objective == pytest.approx(r.objective)

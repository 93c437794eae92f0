"""Every method and bound against the brute-force oracle (tests/support/oracle.py) on random tiny
specs of each objective: a method that says optimal equals the optimum over the
evaluator's whole space, every proven bound is on the right side of it, every answer too,
and nothing crashes. benchmarks/oracle.py runs the same check on thousands of cases."""
from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from partdsl.core.ir import Spec
from partdsl.dsl.parser import parse

from tests.support.effort import examples
from tests.support.oracle import KINDS, check_case, tiny_specs

CASES = examples(30)  # per objective: 120 in all (the campaign, benchmarks/oracle.py, runs thousands)


@pytest.mark.slow  # a long solve (conftest.py: the tiers)
@pytest.mark.parametrize("kind", KINDS)
def test_every_method_and_bound_agrees_with_the_oracle(kind: str) -> None:
    @settings(max_examples=CASES, deadline=None, suppress_health_check=list(HealthCheck))
    @given(tiny_specs(kinds=(kind,)))
    def case(spec: Spec) -> None:
        findings, runs = check_case(spec)
        assert runs > 0
        assert not findings, "\n".join(f"{f.kind}: {f.method}: {f.detail}" for f in findings) + f"\n{spec!r}"

    case()


SUBNORMAL = """
graph g {
  node a { work 1 ms on acc, 5e-321 ms on cpu; out 1 MB }
  node b { work 1 ms on acc, 5e-321 ms on cpu; out 1 MB }
  node c { work 2 ms on acc, 5e-321 ms on cpu }
  a -> b -> c
}
platform { device acc[2] { link 1 GB/s } device cpu[1] { host } }
"""


# found by the robustness campaign: a host 1e299 times slower than the accelerators got a
# target share of 4.6e-299, 0 in METIS's float32, and METIS failed ("unknown exception");
# 1e299 ms a node, since times adding up past 1e300 ms are refused (core/validate._check_totals)
HUGE = SUBNORMAL.replace("5e-321 ms on cpu", "1e299 ms on cpu")


@pytest.mark.parametrize("peer,spec", [(p, s) for p in ("metis", "scotch", "kahypar") for s in ("SUBNORMAL", "HUGE")])
def test_peers_survive_subnormal_times(peer: str, spec: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Found by the oracle: subnormal times overflowed the peer graph's weight scales into
    NaN, and Scotch's C code aborted the process (malloc), METIS raised 'unknown
    exception'. Run in a subprocess: a crash there must fail the test, not end the run."""
    f = tmp_path / "g.part"
    f.write_text({"SUBNORMAL": SUBNORMAL, "HUGE": HUGE}[spec])
    p = subprocess.run([sys.executable, "-m", "partdsl.cli.main", "solve", str(f), "--method", peer, "--json"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, (p.returncode, p.stderr[-2000:])
    assert '"status": "optimal"' in p.stdout or '"status": "feasible"' in p.stdout


TINY_TIMES = """
graph g {
  node L[0] { work 3.2428544484734187e-60 ms, 0 ms on acc batch 2; not acc }
  node L[1] { work 3.2428544484734187e-60 ms, 0 ms on acc batch 2; not acc }
}
platform { device acc[1] { link 1 GB/s } device cpu[1] { host } }
maximize throughput batch 1 split 1
subject to { colocate L[0], L[1] }
"""


def test_tasks_of_1e_60_ms_cannot_overlap_on_one_device() -> None:
    """Found by the oracle: the schedule check's absolute tolerance (1e-9 ms) and HEFT's
    insertion test (1e-12 ms) let two 3e-60 ms tasks run at once on the CPU, and HEFT, the
    MILP, MILP-SPLIT and auto all said optimal at twice the optimum. Both are relative now."""
    findings, runs = check_case(parse(TINY_TIMES))
    assert runs > 0
    assert not findings, "\n".join(f"{f.kind}: {f.method}: {f.detail}" for f in findings)


# issue 69: Archer's MTPP MIP ran its DAG rows over backward edges too, so on a training
# graph with colocated forward/backward pairs only "everything on one device" survived:
# `exact -O heuristics=0` said optimal at 4 ms and `part bound` stopped on its own check
TRAINING_ACYCLIC = """
graph g {
  node f1 { work 1 ms; group g1 }
  node f2 { work 1 ms; group g2 }
  node b2 { work 1 ms; group g2; backward }
  node b1 { work 1 ms; group g1; backward }
  f1 -> f2 -> b2 -> b1
}
platform { device gpu[2] { link 10 GB/s } }
minimize bottleneck
subject to { acyclic; colocate by group }
"""


def test_acyclic_orders_the_phases_apart_in_the_mtpp_mip() -> None:
    spec = parse(TRAINING_ACYCLIC)
    findings, runs = check_case(spec)
    assert runs > 0
    assert not findings, "\n".join(f"{f.kind}: {f.method}: {f.detail}" for f in findings)
    from partdsl.methods.solve import solve

    for options in ({"heuristics": 0.0}, {"heuristics": 0.0, "pyomo": 1.0}):  # the matrix MIP and its Pyomo twin
        r = solve(spec, method="exact", options=options, time_limit=60)
        assert (r.status.value, r.objective, r.bound) == ("optimal", 2.0, 2.0), options
    explicit = parse(TRAINING_ACYCLIC.replace("minimize bottleneck", "minimize bottleneck training pipedream"))
    assert solve(explicit, method="exact", options={"heuristics": 0.0}, time_limit=60).objective == 2.0


# found by the 6,000-case campaign (issue 69): a makespan of 1.9e-72 ms; exact snapped the
# MILP's dual bound to its schedule with an absolute tolerance of 1e-6 ms, so the throughput
# bound (an upper bound) came out at half the optimum, on auto and exact alike
TINY_MAKESPAN = """
graph g {
  node L[0] { work 9.255926872282943e-73 ms; params 2204199683.328437 B; comm 24.870776015047998 ms }
}
platform {
  device acc[1] { memory 3568611320.9097652 B; link 25197643480.322468 B/s; speed 2; batch 1, 2 }
  device cpu[1] { host }
}
maximize throughput batch 4 split 2
subject to { memory overflow }
"""


@pytest.mark.slow  # a long solve (conftest.py: the tiers)
def test_a_makespan_of_1e_72_ms_keeps_a_valid_throughput_bound() -> None:
    findings, runs = check_case(parse(TINY_MAKESPAN))
    assert runs > 0
    assert not findings, "\n".join(f"{f.kind}: {f.method}: {f.detail}" for f in findings)

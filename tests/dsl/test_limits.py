"""Issue 69's inputs that crashed, hung or proved the wrong thing: deep nesting, special
files as imports, times that overflow, a backward node feeding a forward one under
`acyclic`, and training-latency specs on which latency_search found nothing."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from partdsl import PartError, parse
from partdsl.evaluator.evaluate import evaluate
from partdsl.methods.solve import solve

from tests.support import run_part
from tests.support.effort import examples
from tests.support.oracle import latency_training_specs

PLATFORM = "platform { device acc[2] { link 1 GB/s } device cpu[1] { host } }\n"


def nested(depth: int) -> str:
    return ("graph g { node a { work 1 ms } }\nplatform {\n" + "".join(f"server s{i}[1] {{\n" for i in range(depth))
            + "device gpu[1] { link 1 GB/s }\n" + "}\n" * depth + "}\n")


@pytest.mark.parametrize("command", ["check", "solve"])
def test_deep_nesting_is_a_located_error(command: str, tmp_path: Path) -> None:
    """About 495 nested servers ended in 'internal error: RecursionError' (exit 1)."""
    f = tmp_path / "deep.part"
    f.write_text(nested(495))
    p = run_part(command, str(f))
    assert p.returncode == 2, p.stderr
    assert "nested more than 100 deep" in p.stderr and "deep.part:102:" in p.stderr, p.stderr
    assert "internal error" not in p.stderr


def test_nesting_up_to_the_limit_still_parses() -> None:
    assert parse(nested(95)).platform.classes[0].count == 1
    with pytest.raises(PartError, match="nested more than 100 deep"):
        parse("graph g { node a { work 1 ms } }\nparam x = " + "(" * 150 + "1" + ")" * 150 + "\n" + PLATFORM)


@pytest.mark.parametrize("fmt", ["partdsl", "dnn-partitioning", "onnx"])
def test_a_device_is_no_import(fmt: str, tmp_path: Path) -> None:
    """`import "/dev/zero"` read without limit (2.1 GB in 15 s)."""
    f = tmp_path / "s.part"
    f.write_text(f'graph g = import "/dev/zero" as {fmt}\n{PLATFORM}')
    p = run_part("check", str(f))
    assert p.returncode == 2, p.stderr
    assert "'/dev/zero' is a character device, not a file" in p.stderr and "s.part:1:18" in p.stderr, p.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_fifo_is_no_import_and_does_not_block(tmp_path: Path) -> None:
    """`mkfifo fifo.json` beside the spec: check and solve blocked forever."""
    os.mkfifo(tmp_path / "fifo.json")
    f = tmp_path / "s.part"
    f.write_text(f'graph g = import "fifo.json"\n{PLATFORM}')
    for command in ("check", "solve"):
        p = run_part(command, str(f))  # a hang is subprocess's TimeoutExpired: a failure, not a wait
        assert p.returncode == 2 and "is a FIFO (named pipe), not a file" in p.stderr, p.stderr


def test_a_spec_read_from_a_pipe_has_a_size_cap(tmp_path: Path) -> None:
    """The spec itself may come from a pipe (`part solve <(gen)`); /dev/zero is too large."""
    p = run_part("check", "/dev/zero")
    assert p.returncode == 2 and "'/dev/zero' is too large" in p.stderr, p.stderr
    spec = tmp_path / "x.part"
    spec.write_text("graph g { node a { work 1 ms } }\n" + PLATFORM)
    cli = f'"{sys.executable}" -m partdsl.cli.main check <(cat "{spec}")'
    q = subprocess.run(["bash", "-c", cli], capture_output=True, text=True, timeout=300)
    assert q.returncode == 0 and ": ok" in q.stdout, q.stderr


OVERFLOW = """graph g {
  node a { work 1e308 ms }
  node b { work 1e308 ms }
  node c { work 1e308 ms }
  node d { work 1e308 ms }
  a -> b -> c -> d
}
platform { device gpu[1] { link 1 GB/s } }
"""


@pytest.mark.parametrize("command", ["solve", "check"])
def test_times_that_overflow_are_refused_by_name(command: str, tmp_path: Path) -> None:
    """Four nodes of 1e308 ms made `part solve` say the spec is infeasible (proven)."""
    f = tmp_path / "big.part"
    f.write_text(OVERFLOW)
    p = run_part(command, str(f))
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert "add up to more than 1e+300 ms" in p.stderr and "'a' (1e+308 ms)" in p.stderr, p.stderr
    assert "big.part:2:8" in p.stderr and "infeasible" not in p.stdout + p.stderr
    assert "RuntimeWarning" not in p.stderr  # no NumPy overflow warning


def test_sizes_that_overflow_are_refused_and_large_ones_are_not() -> None:
    with pytest.raises(PartError, match="parameter sizes add up"):
        parse(OVERFLOW.replace("work 1e308 ms", "work 1 ms; params 1e308 B"))
    r = solve(parse(OVERFLOW.replace("1e308", "1e299")), time_limit=30)
    assert r.status.value == "optimal" and r.objective == pytest.approx(4e299)


BACKWARD_FEEDS_FORWARD = """
graph g {
  node f1 { work 1 ms }
  node b1 { work 1 ms; backward }
  node f2 { work 1 ms }
  f1 -> b1 -> f2
}
platform { device gpu[2] { link 10 GB/s } device cpu[1] { host } }
minimize bottleneck
subject to { acyclic }
"""


def test_acyclic_leaves_edges_between_the_phases_out() -> None:
    """`acyclic` orders the forward and the backward part separately (docs/language.md); a
    backward node feeding a forward one made a cycle of one device (cpu -> cpu -> cpu), and
    everything on one device was infeasible."""
    spec = parse(BACKWARD_FEEDS_FORWARD)
    for dev in ([0, 0, 0], [2, 2, 2], [0, 1, 0]):
        ev = evaluate(spec, np.array(dev))
        assert ev.feasible, (dev, ev.violations)


# found by a latency_search campaign: colocated forward/backward pairs on stages without
# a host; no chain DP split holds a pair, and the host start needs a host
NO_HOST_PAIRS = """
graph g {
  node f0 { work 5.5 ms; params 3 GB; out 1 MB; group g0 }
  node f1 { work 5.5 ms; params 3 GB; group g1 }
  node f2 { work 6.2 ms; params 3 GB; group g2 }
  node b0 { work 0 ms; group g0; backward }
  node b1 { work 0 ms; params 1 GB; out 1 MB; group g1; backward }
  node b2 { work 9.6 ms; out 1 MB; group g2; backward }
  f0 -> f1
  f0 -> f2
  f0 -> b0
  f1 -> b1
  f2 -> b2
  b1 -> b0
  b2 -> b0
}
platform { device stage[3] { memory 6 GB; link 10 GB/s } }
minimize latency
subject to { contiguous; memory overflow; colocate by group; subgraphs <= 2 }
"""


def test_latency_search_answers_on_colocated_pairs_without_a_host() -> None:
    spec = parse(NO_HOST_PAIRS)
    brute = solve(spec, method="brute", gap=0.0)
    r = solve(spec, method="latency_search", time_limit=60, seed=0)
    assert brute.status.value == "optimal"
    assert r.status.has_solution(), r.log[-3:]
    assert r.objective >= brute.objective - 1e-9


@settings(max_examples=examples(40), deadline=None, suppress_health_check=list(HealthCheck))
@given(latency_training_specs())
def test_latency_search_answers_where_brute_force_finds_a_plan(spec) -> None:  # type: ignore[no-untyped-def]
    brute = solve(spec, method="brute", gap=0.0)
    if brute.status.value != "optimal":
        return
    r = solve(spec, method="latency_search", time_limit=60, seed=0)
    assert r.status.has_solution(), (r.log[-3:], spec)

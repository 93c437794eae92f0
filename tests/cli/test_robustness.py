"""A share of the robustness campaign (benchmarks/robustness.py runs 10,000+ cases) in
every test run: broken and extreme specs give a clear error with file:line:column, never
a traceback or a hang; and the limits that stop runaway ranges say so at once."""
from __future__ import annotations

import random
import signal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from partdsl import PartError, parse

from tests.support import run_part
from tests.support.mutants import KINDS, big_graph, mutate, run_case, write_case

EDITS = [k for k in KINDS if k != "big_graph"]


@pytest.fixture(scope="module")
def partition(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import json

    from partdsl import parse_file, solve

    from tests.support import EXAMPLES

    f = tmp_path_factory.mktemp("partition") / "partition.json"
    f.write_text(json.dumps({"assignment": solve(parse_file(EXAMPLES / "tiny.part")).assignment}))
    return f


def _alarm(_signum, _frame):  # type: ignore[no-untyped-def]
    raise TimeoutError("a case hung")


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                     HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), kind=st.sampled_from(EDITS))
def test_mutated_examples_give_located_errors(seed: int, kind: str, partition: Path,
                                              tmp_path_factory: pytest.TempPathFactory) -> None:
    case = mutate(random.Random(seed), kind)
    spec = write_case(case, tmp_path_factory.mktemp("case"))
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(60)
    try:
        problems = run_case(spec, partition)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    assert not problems, (kind, seed, problems)


@pytest.mark.slow  # a long solve (conftest.py: the tiers)
def test_a_generated_graph_of_10000_nodes_checks_and_solves(tmp_path: Path, partition: Path) -> None:
    spec = tmp_path / "spec.part"
    spec.write_bytes(big_graph(10_000, random.Random(1)))
    assert run_case(spec, partition, ("--time-limit", "5")) == []  # a solve past its limit hangs, never passes


@pytest.mark.parametrize("text,message", [
    ("graph g { node a { work 1 ms } node b[1..99999999999] { work 1 ms } a -> b[1] }",
     "the range b[1..99999999999] has too many members"),
    ("graph g { node input { work 1 ms } node conv[1..4] { work 1 ms } input -> conv[1..99999999999] -> conv[4] }",
     "the range conv[1..99999999999] has too many members"),
    ("graph g { node c[1..4] { work 1 ms } c[1] -> ... -> c[99999999999] }", "stands for too many members"),
    ("graph g { node input { work 1 ms } node conv[1..4] { work 1 ms } input -> conv[1..50] }",
     "unknown node 'conv[5]'"),
])
def test_runaway_ranges_are_errors_at_once(text: str, message: str) -> None:
    with pytest.raises(PartError, match=message.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")) as e:
        parse(text + "\nplatform { device gpu[2] { link 1 GB/s } }")  # before listing the members
    assert e.value.span is not None and e.value.span.line == 1


def test_device_counts_and_imports_have_limits(tmp_path: Path) -> None:
    with pytest.raises(PartError, match="device class 'gpu' has too many devices"):
        parse("graph g { node a { work 1 ms } }\nplatform { device gpu[99999999999] { link 1 GB/s } }")
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    spec = tmp_path / "s.part"
    spec.write_text('graph g = import "deep.json" as dnn-partitioning\nplatform { device acc[2] { } }\n')
    r = run_part("check", str(spec))
    assert r.returncode == 2 and "nests JSON too deeply" in r.stderr and "s.part:1:" in r.stderr, r.stderr
    spec.write_bytes(b"graph g { node a\xff { work 1 ms } }\nplatform { device gpu[1] { } }\n")
    r = run_part("check", str(spec))
    assert r.returncode == 2 and "not UTF-8 text: byte 0xff at line 1, column 17" in r.stderr
    assert "s.part:1:17" in r.stderr and "^" in r.stderr


@pytest.mark.parametrize("chunk", [1, 2, 3, 1 << 22])
def test_json_depth_is_counted_across_chunks(chunk: int) -> None:
    from partdsl.importers.graph_formats import _max_depth

    for text, depth in [("", 0), ("[]", 1), ('{"a": [1, [2, {"b": [3]}]]}', 5), ("[" * 70 + "]" * 70 + "[[]]", 70)]:
        assert _max_depth(text, chunk) == depth


def test_a_python_repr_in_what_the_user_reads_is_a_problem() -> None:
    """The campaign's repr check (issues 71, 76: `Violation(kind='acyclic', ...)` reached an
    export message) matches the reprs users met, not prose with parentheses."""
    from tests.support.mutants import REPR

    for seen in ("violates the spec: Violation(kind='acyclic', message='x')", "load np.float64(3.5) ms",
                 "parts array([0, 1])", "<partdsl.core.ir.Spec object at 0x7f00>"):
        assert REPR.search(seen), seen
    for prose in ("proven bound 9.5: HiGHS dual bound (Optimal)", "acyclic: a stage feeds an earlier one (gpu[1])",
                  "did you mean 'node' or 'module'?", "the DP over 15 ideals (exhaustive)"):
        assert not REPR.search(prose), prose

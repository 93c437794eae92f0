"""A mistyped name or a time limit with a unit on the command line (issue 76, item 6):
the close names are suggested by edit distance, not a 3,000-character list, and
`--time-limit` reads 500ms, 30s, 2min and 1.5h as well as bare seconds."""
from __future__ import annotations

import argparse
import json

import pytest
from partdsl.cli.common import duration

from tests.support import EXAMPLES, run_part

TINY = str(EXAMPLES / "tiny.part")


@pytest.mark.parametrize("args, said", [
    (("solve", TINY, "--method", "dpp"), "did you mean 'dp'"),
    (("solve", TINY, "--method", "heftt"), "did you mean 'heft'"),
    (("solve", TINY, "--solver", "hihgs"), "did you mean 'highs'"),
    (("export", TINY, "--format", "megatronn"), "did you mean 'megatron'"),
    (("slove", TINY), "did you mean 'solve'"),
    (("check", TINY, "--sort", "flop"), "did you mean 'flops'"),
])
def test_a_close_name_is_suggested(args: tuple[str, ...], said: str) -> None:
    p = run_part(*args)
    assert p.returncode == 2 and said in p.stderr, p.stderr
    assert len(p.stderr) < 1200 and "Traceback" not in p.stderr


def test_an_unknown_method_with_no_close_name_lists_the_names_only() -> None:
    p = run_part("solve", TINY, "--method", "zzzzzz")
    assert p.returncode == 2 and "did you mean" not in p.stderr
    assert "methods: auto, " in p.stderr and "(" not in p.stderr.split("methods:")[1]  # names, not descriptions


@pytest.mark.parametrize("text, seconds", [("30", 30.0), ("30s", 30.0), ("2min", 120.0), ("2m", 120.0),
                                           ("500ms", 0.5), ("1.5h", 5400.0), ("0", 0.0), ("1e1", 10.0)])
def test_time_limits_with_units(text: str, seconds: float) -> None:
    assert duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["30x", "-1", "s", "", "2 hours"])
def test_a_time_limit_that_is_not_a_duration(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="not a duration"):
        duration(text)


def test_solve_takes_a_time_limit_with_a_unit() -> None:
    p = run_part("solve", TINY, "--method", "dp", "--time-limit", "1min", "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["status"] == "optimal", p.stderr
    p = run_part("solve", TINY, "--time-limit", "30x")
    assert p.returncode == 2 and "write seconds (30), or 500ms, 30s, 2min, 1.5h" in p.stderr

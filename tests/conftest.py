"""Shared fixtures: the real workloads (vendored in data/dnn-partitioning; PARTDSL_DATA
names another folder holding dnn-partitioning/; the paths and helpers are in
tests/support/); and the tiers: `slow` marks the tests that run the CLI in a subprocess, the property tests
(Hypothesis) and the long solves (`@pytest.mark.slow`); `make test-fast` runs the rest."""
from __future__ import annotations

import os
from pathlib import Path

import pyomo.environ  # noqa: F401  (Pyomo binds its log handler to the sys.stdout of its first import:
import pytest  # import it here, before a test's capture replaces sys.stdout and closes it afterwards)
from hypothesis import settings

from tests.support import DATA

# CI (which runs .ci/run with CI=true) draws the same examples on every run, so that a landing
# does not depend on luck; a developer's run draws new ones (set CI=true to repeat CI's).
# A counterexample found either way becomes an @example or a named test.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

SLOW_CALLS = ("run_part(", "subprocess.run(", "subprocess.Popen(", "sys.executable", "multiprocessing", "@given(")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark `slow`: a test whose code starts a process (the CLI end to end, a worker) or is a
    Hypothesis property (many cases each). Marked by what the test does, not by how long it
    took on some machine, so the tiers are the same everywhere."""
    import inspect

    for item in items:
        fn = getattr(item, "function", None)
        if fn is None or item.get_closest_marker("slow"):
            continue
        try:
            src = inspect.getsource(fn)
        except (OSError, TypeError):
            continue
        if any(call in src for call in SLOW_CALLS) or getattr(fn, "is_hypothesis_test", False):  # nested @given too
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    assert DATA.is_dir(), (f"the real workloads are missing: expected {DATA} "
                           "(PARTDSL_DATA must name a folder holding dnn-partitioning/)")
    return DATA

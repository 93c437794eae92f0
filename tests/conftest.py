"""Shared fixtures: where the bundled examples and the real workloads live (vendored in
data/dnn-partitioning; PARTDSL_DATA names another folder holding dnn-partitioning/)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyomo.environ  # noqa: F401  (Pyomo binds its log handler to the sys.stdout of its first import:
import pytest  # import it here, before a test's capture replaces sys.stdout and closes it afterwards)
from hypothesis import settings

# CI (which runs .ci/run with CI=true) draws the same examples on every run, so that a landing
# does not depend on luck; a developer's run draws new ones (set CI=true to repeat CI's).
# A counterexample found either way becomes an @example or a named test.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
DATA = Path(os.environ.get("PARTDSL_DATA") or ROOT / "data") / "dnn-partitioning"


@pytest.fixture(scope="session")
def data_dir() -> Path:
    assert DATA.is_dir(), (f"the real workloads are missing: expected {DATA} "
                           "(PARTDSL_DATA must name a folder holding dnn-partitioning/)")
    return DATA


def run_part(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run the installed `part` console script (falls back to `python -m`)."""
    exe = shutil.which("part", path=str(Path(sys.executable).parent))
    cmd = [exe] if exe else [sys.executable, "-m", "partdsl.cli.main"]
    return subprocess.run(cmd + list(args), capture_output=True, text=True, cwd=cwd, timeout=600)


def logged_bounds(log: tuple[str, ...], about: str) -> list[float]:
    """The proven bounds a Result's log records (to 6 digits) whose reason mentions `about`."""
    return [float(ln.split()[2].rstrip(":")) for ln in log if ln.startswith("proven bound") and about in ln]

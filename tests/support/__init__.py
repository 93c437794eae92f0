"""What the tests share: where the bundled examples and the real workloads are, the CLI in
a subprocess, the bounds a log records. The helpers beside it: strategies.py (random specs),
oracle.py (brute force over the evaluator's space), reference.py (the papers' definitions,
naive), effort.py (cases per property test), mutants.py (broken specs), flaky_jobs.py
(jobs for spawned workers)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
DATA = Path(os.environ.get("PARTDSL_DATA") or ROOT / "data") / "dnn-partitioning"


def run_part(*args: str, cwd: Path | None = None, without: str | None = None) -> subprocess.CompletedProcess:
    """Run the installed `part` console script (falls back to `python -m`). `without`: a
    package made absent (its import fails), to check what a user without that extra sees."""
    exe = shutil.which("part", path=str(Path(sys.executable).parent))
    cmd = [exe] if exe else [sys.executable, "-m", "partdsl.cli.main"]
    if without is not None:
        cmd = [sys.executable, "-c", f"import sys; sys.modules[{without!r}] = None\n"
               f"from partdsl.cli.main import main\nsys.exit(main({list(args)!r}))"]
        args = ()
    return subprocess.run(cmd + list(args), capture_output=True, text=True, cwd=cwd, timeout=600)


def logged_bounds(log: tuple[str, ...], about: str) -> list[float]:
    """The proven bounds a Result's log records (to 6 digits) whose reason mentions `about`."""
    return [float(ln.split()[2].rstrip(":")) for ln in log if ln.startswith("proven bound") and about in ln]

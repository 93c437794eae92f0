"""A script that calls partdsl at its top level, without `if __name__ == "__main__":`
(as a user's first script does): the jobs run in this process after one line, instead of
every spawned worker re-running the script and printing a RuntimeError traceback (issue
76: docs/python.md's DiviML solve printed 144 lines of tracebacks before its answer)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUN_ALL = """import os
from partdsl.runtime.executor import run_all
pids = {pid for _, pid in run_all(os.getpid, [(), (), (), ()], workers=2)}
print("HERE" if pids == {os.getpid()} else "WORKERS")
"""


def _run(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "user_script.py"
    script.write_text(text)
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600,
                          cwd=tmp_path)


@pytest.mark.slow  # a process of its own (tests/conftest.py: the tiers)
def test_an_unguarded_script_runs_its_jobs_here_after_one_line(tmp_path: Path) -> None:
    p = _run(tmp_path, RUN_ALL)
    assert p.returncode == 0 and p.stdout.strip() == "HERE", p.stderr
    assert "Traceback" not in p.stderr and "RuntimeError" not in p.stderr
    assert p.stderr.count("\n") == 1 and "user_script.py:3 runs at the script's top level" in p.stderr
    assert '`if __name__ == "__main__":`' in p.stderr


@pytest.mark.slow  # a process of its own (tests/conftest.py: the tiers)
def test_a_guarded_script_gets_its_workers(tmp_path: Path) -> None:
    body = RUN_ALL.splitlines()
    text = "\n".join(body[:2]) + '\nif __name__ == "__main__":\n' + "\n".join("    " + x for x in body[2:]) + "\n"
    p = _run(tmp_path, text)
    assert p.returncode == 0 and p.stdout.strip() == "WORKERS", p.stderr
    assert p.stderr == ""


@pytest.mark.slow  # a process of its own (tests/conftest.py: the tiers)
def test_the_default_solve_of_a_diviml_spec_from_an_unguarded_script(tmp_path: Path) -> None:
    """docs/python.md's way, on the bundled DiviML example: the answer, one line, no traceback."""
    p = _run(tmp_path, f"""from partdsl import parse_file, solve
spec = parse_file({str(ROOT / "examples" / "rwnn_latency.part")!r})
r = solve(spec, time_limit=3)
print(r.status.has_solution())
""")
    assert p.returncode == 0 and p.stdout.strip() == "True", p.stderr
    assert "Traceback" not in p.stderr and p.stderr.count("runs at the script's top level") == 1

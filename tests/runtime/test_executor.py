"""runtime/executor.run_all on a real executor given by the caller (worker processes):
a job that fails for a reason outside it runs again, our own errors do not."""
from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import pytest
from partdsl.core.errors import PartError
from partdsl.runtime.executor import RETRIES, run_all

from tests.support import flaky_jobs  # the spawned workers get this process's sys.path, the root on it


@pytest.fixture(scope="module")
def pool():  # type: ignore[no-untyped-def]
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as p:
        yield p


def test_a_job_lost_once_runs_again(pool, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    got = dict(run_all(flaky_jobs.fails_once, [(str(tmp_path), i) for i in range(4)], executor=pool))
    assert got == {i: i * i for i in range(4)}
    assert capsys.readouterr().err.count("running it again (1 of 2)") == 4


def test_a_job_that_keeps_failing_raises_after_the_retries(pool, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConnectionResetError):
        list(run_all(flaky_jobs.always_fails, [(str(tmp_path), 0)], executor=pool))
    assert f"({RETRIES} of {RETRIES})" in capsys.readouterr().err


def test_our_own_errors_are_not_retried(pool, tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(PartError):
        list(run_all(flaky_jobs.user_error, [(str(tmp_path), 0)], executor=pool))
    assert (tmp_path / "user-0").read_text() == "x"  # it ran once


def test_a_warm_pool_has_its_processes_started_with_their_modules() -> None:
    """warm_pool starts one process per worker at once, each importing the modules asked
    for, so the jobs that come later find them loaded (MILP-SPLIT's worker start overlaps
    auto's list schedulers)."""
    import os

    from partdsl.runtime.executor import LocalPool, job_threads, warm_pool, width

    with warm_pool(2, ["partdsl.methods.milp_split_modules"]) as pool:
        assert isinstance(pool, LocalPool) and width(None, pool) == 2
        assert job_threads(None, None, pool, 1) == 1  # jobs side by side: one solver thread each
        got = dict(run_all(flaky_jobs.loaded, [("partdsl.methods.milp_split_modules",)] * 4, executor=pool))
    pids = {pid for pid, _ in got.values()}
    assert all(seen for _, seen in got.values()) and os.getpid() not in pids and len(pids) <= 2
    with warm_pool(1, ["json"]) as pool:  # one worker: the jobs run here
        assert pool is None and job_threads(None, 1, None, 4) is None


def test_a_broken_warm_pool_runs_the_jobs_left_here() -> None:
    import os

    from partdsl.runtime.executor import warm_pool

    with warm_pool(2, []) as pool:
        got = dict(run_all(flaky_jobs.dies, [(os.getpid(), i) for i in range(3)], executor=pool))
    assert got == {0: 0, 1: 1, 2: 4}


def test_a_script_without_a_main_guard_still_gets_its_answer(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Spawned workers re-run a script that has no `if __name__ == "__main__":` guard, and
    fail to start (Python refuses a new process while one bootstraps): MILP-SPLIT's warm
    pool breaks, and its jobs run in the script's own process."""
    import subprocess
    import sys

    from tests.support import EXAMPLES

    script = tmp_path / "noguard.py"
    script.write_text("from partdsl import parse_file, solve\n"
                      f"r = solve(parse_file({str(EXAMPLES / 'rwnn_throughput.part')!r}), time_limit=4)\n"
                      "print('RESULT', r.status.value, r.objective)\n")
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    status, value = p.stdout.split()[-2:]
    assert status == "feasible" and float(value) > 0, p.stdout

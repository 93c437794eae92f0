"""runtime/executor.run_all on a real executor given by the caller (worker processes):
a job that fails for a reason outside it runs again, our own errors do not."""
from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import flaky_jobs  # the spawned workers get this process's sys.path, tests/ on it
import pytest
from partdsl.core.errors import PartError
from partdsl.runtime.executor import RETRIES, run_all


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

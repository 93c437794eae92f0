"""Independent subproblems (bottleneck-guess MIPs, MILP-SPLIT's modules, sweep points) on
one executor abstraction: any concurrent.futures Executor the caller gives (threads,
processes, a cluster's), else `workers` local processes (spawned: forking after solver
threads have started is unsafe), or this process when one worker is asked for.
`warm_pool` starts the local processes ahead of their jobs, so that their start (about
1 s: Python, NumPy, SciPy, partdsl) overlaps the caller's work before them.

`open_executor(url)` turns the command line's `--executor` into one: `local` (or none)
is the local processes, `dask://HOST:PORT` or `tcp://HOST:PORT` a Dask distributed
cluster's scheduler, through `Client.get_executor()` (its workers need partdsl
installed, in the same version)."""
from __future__ import annotations

import multiprocessing
import os
import sys
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

from partdsl.runtime.main_guard import may_spawn

CONNECT_TIMEOUT = "5s"
RETRIES = 2  # a job whose run failed for a reason outside it (a worker lost, a connection dropped) runs again


@contextmanager
def open_executor(url: str | None) -> Iterator[Executor | None]:
    """None for local processes (`url` None or 'local'), else a Dask cluster's executor,
    closed on exit. Raises PartError for a URL it cannot use or a scheduler it cannot
    reach, SolverUnavailable (exit 5) when distributed is not installed."""
    from partdsl.core.errors import PartError

    if url in (None, "", "local"):
        yield None
        return
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in ("dask", "tcp") or ":" not in rest:
        raise PartError(f"--executor {url}: not an executor I know", None,
                        "use local, dask://HOST:PORT or tcp://HOST:PORT (a Dask scheduler's address)")
    from partdsl.core.solver_errors import optional

    Client = optional("distributed", "dask", "executor", name="dask").Client
    address = "tcp://" + rest
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False)
    except (OSError, TimeoutError) as e:
        raise PartError(f"cannot reach the Dask scheduler at {address}: {e}", None,
                        "start one (`dask scheduler`, then `dask worker " + address + "`), or drop --executor "
                        "to run on local processes") from None
    try:
        yield client.get_executor()
    finally:
        client.close()


class LocalPool(ProcessPoolExecutor):
    """Local spawned processes that `run_all` treats as its own (a broken pool: the jobs
    left run here; failures are not retried), though the caller opened and will close it."""

    def __init__(self, workers: int, modules: tuple[str, ...]) -> None:
        super().__init__(workers, mp_context=multiprocessing.get_context("spawn"), initializer=_imports,
                         initargs=(modules,))
        self.workers = workers


@contextmanager
def warm_pool(workers: int | None, modules: Sequence[str]) -> Iterator[LocalPool | None]:
    """`workers` local processes (default: one per core), started now, each importing
    `modules` as it starts; None on one core, where `run_all` runs the jobs here."""
    n = workers or os.cpu_count() or 1
    if n <= 1 or not may_spawn():
        yield None
        return
    pool = LocalPool(n, tuple(modules))
    for _ in range(n):  # a job per process: the pool starts a process per job while none is idle
        pool.submit(_imports, ())
    try:
        yield pool
    finally:  # jobs not started are dropped; a process still importing ends by itself
        pool.shutdown(wait=False, cancel_futures=True)


def width(workers: int | None, executor: Executor | None) -> int:
    """How many jobs `run_all` runs at once: `workers` local processes (default one per
    core), a LocalPool's processes; on another executor (a cluster's) `workers`, else 2."""
    if isinstance(executor, LocalPool):
        return executor.workers
    if executor is not None:
        return max(workers or 2, 1)
    return max(workers or os.cpu_count() or 1, 1)


def runs_here(workers: int | None, executor: Executor | None, jobs: int) -> bool:
    """Whether `run_all` runs `jobs` jobs in this process (no executor, one worker or one job)."""
    return executor is None and min(workers or os.cpu_count() or 1, jobs) <= 1


def job_threads(threads: int | None, workers: int | None, executor: Executor | None, jobs: int) -> int | None:
    """A solver's threads per job: `threads` if given; else one where jobs run side by side
    in worker processes, and the solver's own choice where they run in this process (HiGHS
    refuses another thread count than the one it started with in a process)."""
    if threads is not None:
        return threads
    return None if runs_here(workers, executor, jobs) else 1


def _imports(modules: tuple[str, ...]) -> None:
    import importlib

    for m in modules:
        importlib.import_module(m)


def run_all(fn: Callable[..., Any], jobs: Sequence[tuple], workers: int | None = None,
            executor: Executor | None = None) -> Iterator[tuple[int, Any]]:
    """(index, fn(*job)) for every job, in order of completion. Ctrl-C cancels the jobs
    not started and is re-raised. Called from a script's top level outside an
    `if __name__ == "__main__":` block (runtime/main_guard.py), or if local worker
    processes cannot start, the jobs (left) run in this process. On a given executor, a
    job that fails for a reason other than our own errors (a Dask worker killed or lost, a dropped connection) is
    submitted again, up to RETRIES times, with a line on stderr; then its error is raised."""
    workers = min(workers or os.cpu_count() or 1, max(len(jobs), 1))
    if runs_here(workers, executor, len(jobs)) or (executor is None and not may_spawn()):
        for i, job in enumerate(jobs):
            yield i, fn(*job)
        return
    own = executor is None
    local = own or isinstance(executor, LocalPool)
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) if own else executor
    futures: dict = {}  # type: ignore[type-arg]
    done: set[int] = set()
    tries = [0] * len(jobs)
    try:
        futures.update({pool.submit(fn, *job): i for i, job in enumerate(jobs)})  # a warm pool may be broken
        while futures:
            f = next(as_completed(futures))
            i = futures.pop(f)
            try:
                out = f.result()
            except BrokenProcessPool:
                raise
            except Exception as e:  # noqa: BLE001 - sorted out below: ours are raised at once
                if local or _ours(e) or tries[i] >= RETRIES:
                    raise
                tries[i] += 1
                print(f"  ... job {i + 1} failed ({type(e).__name__}: {e}); running it again "
                      f"({tries[i]} of {RETRIES})", file=sys.stderr, flush=True)
                futures[pool.submit(fn, *jobs[i])] = i
                continue
            done.add(i)
            yield i, out
    except BrokenProcessPool:
        if not local:
            raise
        for i, job in enumerate(jobs):
            if i not in done:
                yield i, fn(*job)
    except KeyboardInterrupt:
        for f in list(futures):
            f.cancel()
        raise
    finally:
        if own:
            pool.shutdown(wait=True, cancel_futures=True)


def _ours(e: BaseException) -> bool:
    """An error of partdsl's own (a user's mistake, a solver missing or failing): the same
    on any worker, so not worth a second run."""
    from partdsl.core.errors import PartError
    from partdsl.core.solver_errors import SolverFailed, SolverUnavailable

    return isinstance(e, (PartError, SolverFailed, SolverUnavailable))

"""Independent subproblems (bottleneck-guess MIPs, MILP-SPLIT's modules, sweep points) on
one executor abstraction: any concurrent.futures Executor the caller gives (threads,
processes, a cluster's), else `workers` local processes (spawned: forking after solver
threads have started is unsafe), or this process when one worker is asked for.

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


def run_all(fn: Callable[..., Any], jobs: Sequence[tuple], workers: int | None = None,
            executor: Executor | None = None) -> Iterator[tuple[int, Any]]:
    """(index, fn(*job)) for every job, in order of completion. Ctrl-C cancels the jobs
    not started and is re-raised. If local worker processes cannot start (a script run
    without an `if __name__ == "__main__":` guard re-runs itself in spawned children),
    the jobs left run in this process. On a given executor, a job that fails for a reason
    other than our own errors (a Dask worker killed or lost, a dropped connection) is
    submitted again, up to RETRIES times, with a line on stderr; then its error is raised."""
    workers = min(workers or os.cpu_count() or 1, max(len(jobs), 1))
    if executor is None and workers <= 1:
        for i, job in enumerate(jobs):
            yield i, fn(*job)
        return
    own = executor is None
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) if own else executor
    futures = {pool.submit(fn, *job): i for i, job in enumerate(jobs)}
    done: set[int] = set()
    tries = [0] * len(jobs)
    try:
        while futures:
            f = next(as_completed(futures))
            i = futures.pop(f)
            try:
                out = f.result()
            except BrokenProcessPool:
                raise
            except Exception as e:  # noqa: BLE001 - sorted out below: ours are raised at once
                if own or _ours(e) or tries[i] >= RETRIES:
                    raise
                tries[i] += 1
                print(f"  ... job {i + 1} failed ({type(e).__name__}: {e}); running it again "
                      f"({tries[i]} of {RETRIES})", file=sys.stderr, flush=True)
                futures[pool.submit(fn, *jobs[i])] = i
                continue
            done.add(i)
            yield i, out
    except BrokenProcessPool:
        if not own:
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

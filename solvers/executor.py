"""Independent subproblems (bottleneck-guess MIPs, MILP-SPLIT's modules) on one executor
abstraction: any concurrent.futures Executor the caller gives (threads, processes, a
cluster's), else `workers` local processes (spawned: forking after solver threads have
started is unsafe), or this process when one worker is asked for."""
from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Iterator, Sequence


def run_all(fn: Callable[..., Any], jobs: Sequence[tuple], workers: int | None = None,
            executor: Executor | None = None) -> Iterator[tuple[int, Any]]:
    """(index, fn(*job)) for every job, in order of completion. Ctrl-C cancels the jobs
    not started and is re-raised. If local worker processes cannot start (a script run
    without an `if __name__ == "__main__":` guard re-runs itself in spawned children),
    the jobs left run in this process."""
    workers = min(workers or os.cpu_count() or 1, max(len(jobs), 1))
    if executor is None and workers <= 1:
        for i, job in enumerate(jobs):
            yield i, fn(*job)
        return
    own = executor is None
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) if own else executor
    futures = {pool.submit(fn, *job): i for i, job in enumerate(jobs)}
    done: set[int] = set()
    try:
        for f in as_completed(futures):
            yield futures[f], f.result()
            done.add(futures[f])
    except BrokenProcessPool:
        if not own:
            raise
        for i, job in enumerate(jobs):
            if i not in done:
                yield i, fn(*job)
    except KeyboardInterrupt:
        for f in futures:
            f.cancel()
        raise
    finally:
        if own:
            pool.shutdown(wait=True, cancel_futures=True)

"""Ctrl-C during a solve stops it and keeps the best answer found so far, as the command
lines of HiGHS, SCIP and Gurobi do.

In Python and numba code, Ctrl-C raises KeyboardInterrupt, which `solve()` catches (numba's
dispatcher turns one that lands inside a compiled call into a SystemError caused by it,
which counts too: `is_ctrl_c`). Inside
a solver's C code Python cannot raise (highspy swallowed it: a HiGHS run went on to its
time limit), so while HiGHS runs, Ctrl-C only sets a flag that its interrupt callback
reads (`deferred`); SCIP catches Ctrl-C itself and stops with status "userinterrupt",
and the adapters set the same flag when a solver reports it was interrupted. `solve()`
reads the flag after every candidate and stops.
"""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator

_requested = threading.Event()


def requested() -> bool:
    """Has the user asked to stop (Ctrl-C) since the last `clear()`?"""
    return _requested.is_set()


def request() -> None:
    _requested.set()


def clear() -> None:
    _requested.clear()


@contextmanager
def deferred() -> Iterator[None]:
    """While a solver's C code runs: Ctrl-C sets the flag instead of raising (main thread
    only, where Python delivers signals)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, lambda _signum, _frame: request())
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def is_ctrl_c(error: BaseException) -> bool:
    """A KeyboardInterrupt, or an error it caused (numba: "CPUDispatcher(...) returned a
    result with an exception set")."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, KeyboardInterrupt):
            return True
        seen = seen.__cause__ or seen.__context__
    return False

"""numba where it pays, with the pure NumPy/Python path kept as the fallback.

`njit` compiles with numba (cached on disk, so later runs skip the ~seconds of
compilation) when numba is importable and PARTDSL_NO_NUMBA is not set; otherwise it
returns the function unchanged, which still runs (slower) as plain Python. Kernels that
have a separate vectorized NumPy implementation choose it when `HAVE_NUMBA` is False.
The first compilation of a partdsl kernel in a process (a cache miss: the first runs
after an install) prints one line on a terminal, through numba's compile events, so
that some 10 s of compiling is not taken for a hang.
"""
from __future__ import annotations

import os
from typing import Callable, TypeVar

F = TypeVar("F", bound=Callable)

HAVE_NUMBA = False
if not os.environ.get("PARTDSL_NO_NUMBA"):
    try:
        import numba

        HAVE_NUMBA = True
    except ImportError:  # pragma: no cover - numba is a dependency, but stay usable without it
        HAVE_NUMBA = False


NOTICE = ("partdsl: compiling the numba kernels for this machine (the first runs after an install: "
          "about 10 s; later runs read them from numba's cache)")


def _tell_on_first_compile() -> None:
    """Print NOTICE once when numba starts compiling a partdsl function, if stderr is a
    terminal (a log or a test's captured stderr stays as it was) in the main process."""
    import multiprocessing
    import sys

    from numba.core import event

    class Notice(event.Listener):
        told = False

        def on_start(self, ev: event.Event) -> None:
            fn = getattr(ev.data.get("dispatcher"), "py_func", None) if isinstance(ev.data, dict) else None
            if self.told or not getattr(fn, "__module__", "").startswith("partdsl."):
                return
            self.told = True
            if sys.stderr.isatty() and multiprocessing.parent_process() is None:
                print(NOTICE, file=sys.stderr, flush=True)

        def on_end(self, ev: event.Event) -> None:
            pass

    event.register("numba:compile", Notice())


if HAVE_NUMBA:
    _tell_on_first_compile()


def njit(fn: F) -> F:
    if HAVE_NUMBA:
        return numba.njit(cache=True, nogil=True)(fn)  # type: ignore[return-value]
    return fn


def njit_inline(fn: F) -> F:
    """`njit`, inlined into its compiled callers (a helper with many array arguments, called
    per node: a call passes every array's descriptor)."""
    if HAVE_NUMBA:
        return numba.njit(cache=True, nogil=True, inline="always")(fn)  # type: ignore[return-value]
    return fn

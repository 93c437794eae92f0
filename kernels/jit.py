"""numba where it pays, with the pure NumPy/Python path kept as the fallback.

`njit` compiles with numba (cached on disk, so later runs skip the ~seconds of
compilation) when numba is importable and PARTDSL_NO_NUMBA is not set; otherwise it
returns the function unchanged, which still runs (slower) as plain Python. Kernels that
have a separate vectorized NumPy implementation choose it when `HAVE_NUMBA` is False.
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

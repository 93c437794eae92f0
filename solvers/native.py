"""Around a solver's C code (HiGHS, SCIP, or a solver behind Pyomo): Ctrl-C asks the
solver to stop instead of raising (solvers/interrupt.py), and whatever the solver prints
on standard output goes to standard error, so that `--json` output stays one JSON
document (SCIP prints "pressed CTRL-C 1 times" on stdout even with its output hidden)."""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Iterator

from . import interrupt


@contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Point file descriptor 1 at standard error for the duration (C-level prints included)."""
    try:
        out, err = sys.__stdout__.fileno(), sys.__stderr__.fileno()
    except (AttributeError, ValueError, OSError):  # no real descriptors (an embedding host)
        yield
        return
    sys.stdout.flush()
    saved = os.dup(out)
    try:
        os.dup2(err, out)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, out)
        os.close(saved)


@contextmanager
def solver_call() -> Iterator[None]:
    with interrupt.deferred(), stdout_to_stderr():
        yield

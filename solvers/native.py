"""Around a solver's C code (HiGHS, SCIP, or a solver behind Pyomo).

- `captured_stdout`: for a whole solver session (construction, model hand-off, solve,
  reading the answer), file descriptor 1 points at a temporary file, so nothing the
  solver prints reaches standard output and `--json` stays one JSON document. What it
  printed is kept: the adapters put it at the head of the solver's log (`--solver-log`).
  HiGHS 1.16 prints its banner ("Running HiGHS 1.16.0 ...") on stdout when a `Highs()`
  is constructed, before any option can silence it; SCIP prints "pressed CTRL-C 1 times"
  on stdout even with its output hidden.
- `solver_call`: around the solve itself, Ctrl-C asks the solver to stop instead of
  raising (solvers/interrupt.py).
"""
from __future__ import annotations

import os
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from . import interrupt


@dataclass
class Captured:
    """What native code printed on standard output while captured (set on exit)."""

    text: str = ""


@contextmanager
def captured_stdout() -> Iterator[Captured]:
    """Point file descriptor 1 at a temporary file for the duration (C-level prints
    included); its text is in the yielded `Captured` afterwards. Nests: an inner capture
    restores the outer one."""
    got = Captured()
    try:
        out = sys.__stdout__.fileno() if sys.__stdout__ is not None else 1
    except (AttributeError, ValueError, OSError):  # no real descriptor (an embedding host)
        out = 1
    try:
        saved = os.dup(out)
    except OSError:  # descriptor 1 is closed: nothing can reach stdout anyway
        yield got
        return
    _flush()
    with tempfile.TemporaryFile(mode="w+b") as sink:
        os.dup2(sink.fileno(), out)
        try:
            yield got
        finally:
            _flush()
            os.dup2(saved, out)
            os.close(saved)
            sink.seek(0)
            got.text = sink.read().decode("utf-8", errors="replace")


def _flush() -> None:
    for stream in (sys.stdout, sys.__stdout__):
        try:
            if stream is not None:
                stream.flush()
        except (AttributeError, ValueError, OSError):
            pass


@contextmanager
def solver_call() -> Iterator[None]:
    """Around a solver's run: Ctrl-C sets the stop flag instead of raising."""
    with interrupt.deferred():
        yield

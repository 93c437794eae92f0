"""Around a solver's C code (HiGHS, SCIP, or a solver behind Pyomo).

- `captured_stdout`: for a whole solver session (construction, model hand-off, solve,
  reading the answer), file descriptor 1 points at a temporary file, so nothing the
  solver prints reaches standard output and `--json` stays one JSON document. What it
  printed is kept: the adapters put it at the head of the solver's log (`--solver-log`).
  HiGHS 1.16 prints its banner ("Running HiGHS 1.16.0 ...") on stdout when a `Highs()`
  is constructed, before any option can silence it; SCIP prints "pressed CTRL-C 1 times"
  on stdout even with its output hidden. Safe under threads and nesting (see below).
- `solver_call`: around the solve itself, Ctrl-C asks the solver to stop instead of
  raising (runtime/interrupt.py).
"""
from __future__ import annotations

import os
import sys
import tempfile
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

from partdsl.runtime import interrupt


@dataclass
class Captured:
    """What native code printed on standard output while captured (set on exit)."""

    text: str = ""
    start: int = 0
    nested: list[tuple[int, int]] = field(default_factory=list)  # byte ranges inner captures took


# One redirect per process, however many captures are open (solver runs on a thread pool
# each open one): a depth count under a lock, one sink file; each capture reads its own
# byte range of the sink, less the ranges its nested captures took (on the same thread),
# so an outer capture does not repeat what an inner one kept. Output of concurrent runs
# on other threads can land in either's text.
_lock = threading.Lock()
_shared: dict = {"depth": 0, "out": 1, "saved": -1, "sink": None}
_stacks = threading.local()


@contextmanager
def captured_stdout() -> Iterator[Captured]:
    """Point file descriptor 1 at a temporary file for the duration (C-level prints
    included); its text is in the yielded `Captured` afterwards."""
    got = Captured()
    with _lock:
        if _shared["depth"] == 0 and not _redirect():
            yield got  # descriptor 1 is closed or not ours: nothing to capture
            return
        _shared["depth"] += 1
        _flush()
        got.start = os.lseek(_shared["sink"].fileno(), 0, os.SEEK_END)
    stack = _stacks.__dict__.setdefault("open", [])
    stack.append(got)
    try:
        yield got
    finally:
        stack.pop()
        with _lock:
            _flush()
            sink = _shared["sink"].fileno()
            end = os.lseek(sink, 0, os.SEEK_END)
            data = os.pread(sink, end - got.start, got.start)
            for a, b in reversed(got.nested):  # cut what nested captures kept
                data = data[:a - got.start] + data[b - got.start:]
            got.text = data.decode("utf-8", errors="replace")
            if stack:
                stack[-1].nested.append((got.start, end))
            _shared["depth"] -= 1
            if _shared["depth"] == 0:
                os.dup2(_shared["saved"], _shared["out"])
                os.close(_shared["saved"])
                _shared["sink"].close()
                _shared["sink"] = None


def _redirect() -> bool:
    """Descriptor 1 -> a new sink (called under the lock, at depth 0)."""
    try:
        out = sys.__stdout__.fileno() if sys.__stdout__ is not None else 1
    except (AttributeError, ValueError, OSError):  # no real descriptor (an embedding host)
        out = 1
    try:
        saved = os.dup(out)
    except OSError:
        return False
    _flush()
    sink = tempfile.TemporaryFile(mode="w+b")
    os.dup2(sink.fileno(), out)
    _shared.update(out=out, saved=saved, sink=sink)
    return True


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

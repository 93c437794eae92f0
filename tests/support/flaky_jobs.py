"""Jobs for tests/runtime/test_executor.py, importable by spawned worker processes."""
from __future__ import annotations

from pathlib import Path

from partdsl.core.errors import PartError


def fails_once(folder: str, i: int) -> int:
    """Fails the first time it runs for `i` (as a lost worker would), then returns i * i."""
    mark = Path(folder) / f"ran-{i}"
    if not mark.exists():
        mark.write_text("1")
        raise ConnectionResetError(f"worker lost while running job {i}")
    return i * i


def always_fails(folder: str, i: int) -> int:
    raise ConnectionResetError(f"worker lost while running job {i}")


def user_error(folder: str, i: int) -> int:
    (Path(folder) / f"user-{i}").open("a").write("x")
    raise PartError("a mistake in the spec", None)


def loaded(module: str) -> tuple[int, bool]:
    """This process's id, and whether `module` was imported before this job ran."""
    import os
    import sys

    return os.getpid(), module in sys.modules


def dies(parent: int, i: int) -> int:
    """Ends the worker process it runs in (a broken pool); in process `parent`, i * i."""
    import os

    if os.getpid() != parent:
        os._exit(1)
    return i * i

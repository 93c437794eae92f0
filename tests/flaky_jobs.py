"""Jobs for tests/test_executor.py, importable by spawned worker processes."""
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

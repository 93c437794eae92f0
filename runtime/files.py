"""Reading the files a user names (a spec, an imported graph, a partition, an order) with
limits: regular files only where a size is needed up front (an import), a byte cap on
everything, so that `/dev/zero`, a FIFO with no writer or a runaway file gives a located
error instead of filling memory or blocking forever (issue 69)."""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import numpy as np
from partdsl.core.errors import PartError, Span
from partdsl.core.ir import Spec
from partdsl.core.limits import MAX_SMALL_FILE_BYTES

CHUNK = 1 << 20
KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
         (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))


def _kind(mode: int) -> str:
    return next((name for test, name in KINDS if test(mode)), "not a regular file")


def regular_file(path: Path, limit: int, what: str, span: Span | None = None) -> int:
    """The size of `path`, a regular file of at most `limit` bytes, or a PartError naming
    what it is instead. `what` names the file expected ("a JSON graph file"), for hints.
    Never opens the file: a FIFO is refused before a read could block."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise PartError(f"no such file '{path}'", span, "paths are relative to the spec file's folder") from None
    except OSError as e:
        raise PartError(f"cannot read '{path}': {e.strerror or e}", span, "check the path and its permissions") from None
    if not stat.S_ISREG(st.st_mode):
        raise PartError(f"'{path}' is {_kind(st.st_mode)}, not a file", span, f"name {what} on disk")
    if st.st_size > limit:
        raise PartError(f"'{path}' is too large: {st.st_size:,} bytes, more than partdsl reads ({limit:,})",
                        span, f"give {what} of a real model")
    return st.st_size


def read_limited(path: Path, limit: int, what: str, span: Span | None = None, regular: bool = True) -> bytes:
    """The bytes of `path`, at most `limit` of them, else a PartError. `regular=False`
    also reads pipes and devices (`part solve <(gen)`, /dev/stdin) up to the limit."""
    path = Path(path)
    if regular:
        regular_file(path, limit, what, span)
    parts, total = [], 0
    try:
        with open(path, "rb") as f:
            while chunk := f.read(min(CHUNK, limit + 1 - total)):
                parts.append(chunk)
                total += len(chunk)
                if total > limit:
                    raise PartError(f"'{path}' is too large: more than partdsl reads ({limit:,} bytes)", span,
                                    f"give {what} of a real model")
    except FileNotFoundError:
        raise PartError(f"no such file '{path}'", span, "check the path") from None
    except IsADirectoryError:
        raise PartError(f"'{path}' is a folder, not a file", span, f"name {what}") from None
    except OSError as e:
        raise PartError(f"cannot read '{path}': {e.strerror or e}", span, "check the path and its permissions") from None
    return b"".join(parts)


def read_json(path: str | Path, what: str = "a JSON partition") -> Any:
    """A small JSON document named on the command line (a partition, a plan)."""
    p = Path(path)
    data = read_limited(p, MAX_SMALL_FILE_BYTES, what, regular=False)
    try:
        return json.loads(data)
    except UnicodeDecodeError as e:
        raise PartError(f"{p} is not UTF-8 text ({e.reason} at byte {e.start})", None, f"give {what}") from None
    except json.JSONDecodeError as e:
        raise PartError(f"{p} is not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})", None) from None


def read_partition(spec: Spec, path: str | Path) -> tuple[np.ndarray, np.ndarray | None]:
    """A partition file -> (device per node, subgraph numbers or None): core/assignment.py."""
    from partdsl.core.assignment import parse_partition

    return parse_partition(spec, read_json(path), str(path))


def read_assignment(spec: Spec, path: str | Path) -> np.ndarray:
    return read_partition(spec, path)[0]

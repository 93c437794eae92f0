"""Reading an imported graph file's text, with the plain errors every text importer gives:
a regular file (never a FIFO or a device, which would block or never end) of at most
MAX_IMPORT_BYTES (runtime/files.py)."""
from __future__ import annotations

from pathlib import Path

from partdsl.core.errors import PartError, Span
from partdsl.core.limits import MAX_IMPORT_BYTES
from partdsl.runtime.files import read_limited, regular_file


def check_import_file(path: Path | str, span: Span | None, what: str = "a graph file") -> None:
    """`path` is a regular file of at most MAX_IMPORT_BYTES, or a PartError saying what it
    is: every importer calls this before its library (onnx, torch) opens the file."""
    try:
        regular_file(Path(path), MAX_IMPORT_BYTES, what, span)
    except PartError as e:
        raise PartError(f"import: {e.message}", span, e.hint) from None


def read_import_text(path: Path | str, span: Span | None, what: str = "a JSON graph file") -> str:
    """An imported file's text (UTF-8, at most MAX_IMPORT_BYTES), or a PartError that says
    what is wrong with it; `what` names the file expected, for the hints."""
    path = Path(path)
    try:
        data = read_limited(path, MAX_IMPORT_BYTES, what, span)
    except PartError as e:
        raise PartError(f"import: {e.message}", span, e.hint) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise PartError(f"import: '{path}' is not UTF-8 text ({e.reason} at byte {e.start})", span,
                        f"import {what}") from None

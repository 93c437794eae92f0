"""Reading an imported graph file's text, with the plain errors every text importer gives."""
from __future__ import annotations

from pathlib import Path

from partdsl.core.errors import PartError, Span
from partdsl.core.limits import MAX_IMPORT_BYTES, check_count


def read_import_text(path: Path | str, span: Span | None, what: str = "a JSON graph file") -> str:
    """An imported file's text (UTF-8, at most MAX_IMPORT_BYTES), or a PartError that says
    what is wrong with it; `what` names the file expected, for the hints."""
    path = Path(path)
    try:
        size = path.stat().st_size
        check_count(size, MAX_IMPORT_BYTES, f"import: '{path}' is too large (bytes)", span,
                    "import a graph file of a real model")
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise PartError(f"import: '{path}' is not UTF-8 text ({e.reason} at byte {e.start})", span,
                        f"import {what}") from None
    except IsADirectoryError:
        raise PartError(f"import: '{path}' is a folder, not a file", span, f"name {what}") from None
    except FileNotFoundError:
        raise PartError(f"import: no such file '{path}'", span,
                        "paths are relative to the spec file's folder") from None
    except OSError as e:
        raise PartError(f"import: cannot read '{path}': {e}", span) from None

"""Whether worker processes may be spawned from here. A spawned process re-imports the
script that started the parent (multiprocessing's "safe importing of main module"): a
script that calls `solve` at its top level, outside `if __name__ == "__main__":`, makes
every worker run it again, and each prints a RuntimeError traceback of some 70 lines.
`unguarded_call()` finds such a call from the stack and the script's syntax tree, so the
jobs run in this process instead, after one line that says how to get the workers."""
from __future__ import annotations

import ast
import sys
from functools import lru_cache
from types import FrameType

_told: set[tuple[str, int]] = set()


def unguarded_call() -> tuple[str, int] | None:
    """(script, line) of the `__main__` script's top-level statement that is running now,
    if that statement is not inside an `if __name__ == ...` block; else None (no script:
    a REPL, `python -c`, a notebook; or a guarded call)."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or not path or not str(path).endswith(".py"):
        return None
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals is main.__dict__:
            break
        frame = frame.f_back
    if frame is None:
        return None
    line = frame.f_lineno
    return None if line in _guarded_lines(str(path)) else (str(path), line)


@lru_cache(maxsize=4)
def _guarded_lines(path: str) -> frozenset[int]:
    """The lines of `path` inside a top-level `if` whose test reads `__name__`."""
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError, ValueError):
        return frozenset(range(1 << 20))  # unreadable: assume guarded, as before this check
    lines: set[int] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.If) and any(isinstance(n, ast.Name) and n.id == "__name__"
                                            for n in ast.walk(stmt.test)):
            lines.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    return frozenset(lines)


def may_spawn() -> bool:
    """False (after one line on stderr, once per call site) when spawned workers would
    re-run the caller's script; the caller then runs its jobs in this process."""
    where = unguarded_call()
    if where is None:
        return True
    if where not in _told:
        _told.add(where)
        print(f"partdsl: {where[0]}:{where[1]} runs at the script's top level, so worker processes would run "
              'the script again; running the jobs in this process (put the call under `if __name__ == '
              '"__main__":` to use the workers)', file=sys.stderr, flush=True)
    return False

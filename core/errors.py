"""User-facing errors: every mistake in a spec becomes a `PartError` with a location.

A `PartError` renders like a compiler diagnostic (file:line:column, the source line,
a caret under the offending span, and a hint saying what to write instead). The CLI
prints it and exits with code 2; no user ever sees a Python traceback.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    """A region of a source file (1-based line and column; end is exclusive)."""

    file: str
    line: int
    column: int
    end_line: int | None = None
    end_column: int | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


class PartError(Exception):
    """A mistake in a spec, an import file, an assignment or the command line."""

    def __init__(self, message: str, span: Span | None = None, hint: str | None = None,
                 source: str | None = None, kind: str = "error") -> None:
        super().__init__(message)
        self.message = message
        self.span = span
        self.hint = hint
        self.source = source
        self.kind = kind

    def with_source(self, source: str) -> "PartError":
        if self.source is None:
            self.source = source
        return self

    def excerpt(self) -> str:
        """The source line with a caret under the span, or '' if unknown."""
        if self.span is None or self.source is None:
            return ""
        lines = self.source.splitlines()
        if not 1 <= self.span.line <= len(lines):
            return ""
        text = lines[self.span.line - 1].expandtabs(4)
        width = 1
        if self.span.end_line == self.span.line and self.span.end_column:
            width = max(1, self.span.end_column - self.span.column)
        gutter = str(self.span.line)
        pad = " " * len(gutter)
        caret = " " * (self.span.column - 1) + "^" * min(width, max(1, len(text) - self.span.column + 1))
        return f"{pad} |\n{gutter} | {text}\n{pad} | {caret}"

    def render(self) -> str:
        out = [f"error: {self.message}"]
        if self.span is not None:
            out.append(f"  --> {self.span}")
        ex = self.excerpt()
        if ex:
            out.append(ex)
        if self.hint:
            out.append(f"hint: {self.hint}")
        return "\n".join(out)

    def to_json(self) -> dict:
        d: dict = {"error": self.message, "kind": self.kind}
        if self.span is not None:
            d.update(file=self.span.file, line=self.span.line, column=self.span.column)
        if self.hint:
            d["hint"] = self.hint
        return d

    def __str__(self) -> str:
        return self.render()


def close_names(name: str, options: list[str] | tuple[str, ...] | set[str]) -> str | None:
    """'did you mean 'a' or 'b'?' for the options close to `name` (by edit distance), or
    None when none is."""
    import difflib

    close = difflib.get_close_matches(name, sorted(options), n=3, cutoff=0.5)
    return "did you mean " + " or ".join(f"'{c}'" for c in close) + "?" if close else None


def did_you_mean(name: str, options: list[str] | tuple[str, ...] | set[str]) -> str:
    """A hint naming the closest known options, else the known names."""
    close = close_names(name, options)
    if close is not None:
        return close
    opts = sorted(options)
    shown = ", ".join(opts[:12]) + (", ..." if len(opts) > 12 else "")
    return f"known names: {shown}" if opts else "none are declared yet"

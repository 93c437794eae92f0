"""How imported models are read (`--unknown-ops`, `--input-shape`; `parse(..., imports=)`).

- `unknown_ops`: what an operator the cost model cannot cost does (an operator listed as
  not modelled, one in no table, or one whose shapes are unknown): `warn` (the default:
  costed 0 FLOPs, reported with its count as an `UncostedOperators` warning, which the
  command line prints on stderr), `zero` (costed 0, silently) or `error` (refused, exit 2).
- `input_shapes`: the shape of named model inputs, for the symbolic dimensions shape
  inference cannot resolve (`--input-shape pixel_values=1x3x224x224`). The first dimension
  of an input is the batch: numbers are per sample, so give it as 1.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from partdsl.core.errors import PartError, Span

UNKNOWN_OPS = ("warn", "zero", "error")


class UncostedOperators(UserWarning):
    """An imported model has operators the cost model gave no FLOPs (`--unknown-ops warn`)."""


@dataclass(frozen=True)
class ImportOptions:
    unknown_ops: str = "warn"
    input_shapes: tuple[tuple[str, tuple[int, ...]], ...] = ()

    def __post_init__(self) -> None:
        if self.unknown_ops not in UNKNOWN_OPS:
            raise PartError(f"unknown-ops '{self.unknown_ops}' is not one of {', '.join(UNKNOWN_OPS)}", None,
                            "--unknown-ops warn (the default), zero or error")

    @property
    def shapes(self) -> dict[str, tuple[int, ...]]:
        return dict(self.input_shapes)


def input_shape(text: str) -> tuple[str, tuple[int, ...]]:
    """`name=1x3x224x224` -> ("name", (1, 3, 224, 224)); a PartError saying what to write."""
    m = re.fullmatch(r"\s*([^=\s][^=]*?)\s*=\s*(\d+(?:\s*[x,]\s*\d+)*)\s*", text)
    if not m:
        raise PartError(f"--input-shape '{text}' is not NAME=DIMS", None,
                        "write e.g. --input-shape pixel_values=1x3x224x224 (the input's name in the model, "
                        "then its dimensions, the batch first)")
    dims = tuple(int(x) for x in re.split(r"\s*[x,]\s*", m.group(2)))
    if any(d < 1 for d in dims):
        raise PartError(f"--input-shape '{text}': every dimension must be >= 1", None,
                        "write e.g. --input-shape pixel_values=1x3x224x224")
    return m.group(1), dims


def report_uncosted(uncosted: dict[tuple[str, str], int], options: ImportOptions, path: Path,
                    span: Span | None) -> None:
    """Operators costed 0 FLOPs because the cost model cannot cost them, by --unknown-ops."""
    if not uncosted or options.unknown_ops == "zero":
        return
    total = sum(uncosted.values())
    listed = "; ".join(f"{op} x{n} ({why})" for (op, why), n in sorted(uncosted.items(), key=lambda kv: -kv[1]))
    what = f"{total} operator{'s' if total > 1 else ''} of '{path.name}' the cost model cannot cost: {listed}"
    if options.unknown_ops == "error":
        raise PartError(f"import: {what}", span, "--unknown-ops zero (or warn) costs them 0 FLOPs; "
                        "--input-shape resolves unknown shapes")
    import warnings

    warnings.warn(f"{what}; costed 0 FLOPs (--unknown-ops error refuses them, zero keeps quiet)",
                  UncostedOperators, stacklevel=2)

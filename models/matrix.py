"""A MIP in matrix form: the direct path to the solvers (scipy.sparse -> highspy), much
faster to build than a Pyomo model for large formulations (see the exact-MIP issue)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
from scipy.sparse import csr_matrix

Names = Callable[[], list[str]]  # made only when asked for (part export): solving never pays for them


@dataclass(frozen=True)
class MatrixMIP:
    """min c.x  s.t.  row_lo <= A x <= row_hi,  col_lo <= x <= col_hi,  x[integer] integral.
    `row_names` / `col_names`: readable names after the model's entities (`x(v,i)`,
    `load(i)`), made on demand; None: `r0`, `c0`, ..."""

    c: np.ndarray
    A: csr_matrix
    row_lo: np.ndarray
    row_hi: np.ndarray
    col_lo: np.ndarray
    col_hi: np.ndarray
    integer: np.ndarray  # bool per column
    row_names: Names | None = field(default=None, compare=False)
    col_names: Names | None = field(default=None, compare=False)


def keyed(family: str, keys: Sequence[object]) -> str:
    """`family(k1,k2)`: a row's or column's name from its entities (`family` without any)."""
    return f"{family}({','.join(str(k) for k in keys)})" if keys else family


class ColumnNames:
    """Column names by range, filled as a builder allocates its columns: a family over
    [start, start + count) names column start + j by `key(j)` (default: j)."""

    def __init__(self) -> None:
        self.parts: list[tuple[int, int, str, Callable[[int], object] | None]] = []

    def add(self, start: int, count: int, family: str, key: Callable[[int], object] | None = None) -> None:
        if count > 0:
            self.parts.append((int(start), int(count), family, key))

    def names(self, ncols: int) -> list[str]:
        out = [f"c{j}" for j in range(ncols)]
        for start, count, family, key in self.parts:
            for j in range(count):
                k = key(j) if key else j
                out[start + j] = keyed(family, k if isinstance(k, tuple) else (k,))
        return out


class Rows:
    """Accumulates sparse rows (triplets) and their bounds."""

    def __init__(self) -> None:
        self.r: list[np.ndarray] = []
        self.c: list[np.ndarray] = []
        self.v: list[np.ndarray] = []
        self.lo: list[np.ndarray] = []
        self.hi: list[np.ndarray] = []
        self.n = 0
        self.families: list[tuple[int, str, Callable[[int], object] | None]] = []  # (first row, name, key)
        self.named: dict[int, tuple[str, tuple]] = {}  # row -> (family, keys) given to add_one

    def family(self, name: str, key: Callable[[int], object] | None = None) -> None:
        """The rows added from here on are `name(key(j))` for the family's j-th row
        (`name(j)` without a key), until the next family."""
        self.families.append((self.n, name, key))

    def names(self) -> list[str]:
        """Every row's name: its family's, `r<row>` before the first family."""
        out = [f"r{r}" for r in range(self.n)]
        bounds = [f[0] for f in self.families] + [self.n]
        for (first, name, key), end in zip(self.families, bounds[1:]):
            for j in range(end - first):
                k = key(j) if key else j
                out[first + j] = keyed(name, k if isinstance(k, tuple) else (k,))
        for r, (name, keys) in self.named.items():
            out[r] = keyed(name, keys)
        return out

    def add(self, cols: list[np.ndarray], vals: list[float | np.ndarray], lo: float | np.ndarray,
            hi: float | np.ndarray) -> None:
        """Add len(cols[0]) rows: row k is sum_j vals[j][k] * x[cols[j][k]] in [lo, hi]."""
        k = len(cols[0])
        if k == 0:
            return
        rows = self.n + np.arange(k)
        for col, val in zip(cols, vals):
            self.r.append(rows)
            self.c.append(np.asarray(col, dtype=np.int64))
            self.v.append(np.broadcast_to(np.asarray(val, dtype=float), (k,)).copy())
        self.lo.append(np.broadcast_to(np.asarray(lo, dtype=float), (k,)).copy())
        self.hi.append(np.broadcast_to(np.asarray(hi, dtype=float), (k,)).copy())
        self.n += k

    def add_masked(self, cols: np.ndarray, vals: np.ndarray, lo: float | np.ndarray, hi: float | np.ndarray) -> None:
        """Add len(cols) rows: row k is sum_j vals[k, j] * x[cols[k, j]] over the j with
        cols[k, j] >= 0 (rows of different lengths, padded with -1), in [lo, hi]."""
        k = len(cols)
        if k == 0:
            return
        keep = cols >= 0
        self.r.append(np.broadcast_to((self.n + np.arange(k))[:, None], cols.shape)[keep])
        self.c.append(cols[keep].astype(np.int64))
        self.v.append(np.asarray(vals, dtype=float)[keep])
        self.lo.append(np.broadcast_to(np.asarray(lo, dtype=float), (k,)).copy())
        self.hi.append(np.broadcast_to(np.asarray(hi, dtype=float), (k,)).copy())
        self.n += k

    def add_one(self, cols: np.ndarray | list, vals: np.ndarray | list, lo: float, hi: float,
                name: tuple[str, tuple] | None = None) -> None:
        """Add one row: sum_j vals[j] * x[cols[j]] in [lo, hi]. (Called once per row by
        the max-load builder, so it stays cheap: the bounds are kept as plain floats.)
        `name`: (family, keys), over the current family's."""
        if name is not None:
            self.named[self.n] = name
        cols = np.asarray(cols, dtype=np.int64)
        self.r.append(np.full(len(cols), self.n))
        self.c.append(cols)
        self.v.append(np.asarray(vals, dtype=float) if np.ndim(vals) else np.full(len(cols), float(vals)))
        self.lo.append(float(lo))  # type: ignore[arg-type]
        self.hi.append(float(hi))  # type: ignore[arg-type]
        self.n += 1

    def matrix(self, ncols: int) -> tuple[csr_matrix, np.ndarray, np.ndarray]:
        if not self.n:
            return csr_matrix((0, ncols)), np.zeros(0), np.zeros(0)
        A = csr_matrix((np.concatenate(self.v), (np.concatenate(self.r), np.concatenate(self.c))),
                       shape=(self.n, ncols))
        return A, _flat(self.lo), _flat(self.hi)


def _flat(parts: list) -> np.ndarray:  # type: ignore[type-arg]
    """Row bounds: arrays from add(), floats from add_one(), in row order."""
    return np.concatenate([np.atleast_1d(np.asarray(p, dtype=float)) for p in parts])

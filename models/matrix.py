"""A MIP in matrix form: the direct path to the solvers (scipy.sparse -> highspy), much
faster to build than a Pyomo model for large formulations (see the exact-MIP issue)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix


@dataclass(frozen=True)
class MatrixMIP:
    """min c.x  s.t.  row_lo <= A x <= row_hi,  col_lo <= x <= col_hi,  x[integer] integral."""

    c: np.ndarray
    A: csr_matrix
    row_lo: np.ndarray
    row_hi: np.ndarray
    col_lo: np.ndarray
    col_hi: np.ndarray
    integer: np.ndarray  # bool per column


class Rows:
    """Accumulates sparse rows (triplets) and their bounds."""

    def __init__(self) -> None:
        self.r: list[np.ndarray] = []
        self.c: list[np.ndarray] = []
        self.v: list[np.ndarray] = []
        self.lo: list[np.ndarray] = []
        self.hi: list[np.ndarray] = []
        self.n = 0

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

    def add_one(self, cols: np.ndarray | list, vals: np.ndarray | list, lo: float, hi: float) -> None:
        """Add one row: sum_j vals[j] * x[cols[j]] in [lo, hi]. (Called once per row by
        the max-load builder, so it stays cheap: the bounds are kept as plain floats.)"""
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

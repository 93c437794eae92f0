"""HiGHS options chosen by a model's size (solvers/highs_matrix.size_options): feasibility
jump off on large models, where HiGHS 1.16 ran it past the time limit (12.9 s at 4 s)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from partdsl.models.matrix import MatrixMIP
from partdsl.solvers.highs_matrix import JUMP_MAX_NONZEROS, size_options, solve_highs


def _mip(nnz: int) -> MatrixMIP:
    """A covering MIP with `nnz` nonzeros: one row per 10 binaries, each row >= 1."""
    n = nnz
    rows = np.arange(n) // 10
    A = sp.csr_matrix((np.ones(n), (rows, np.arange(n))), shape=(int(rows[-1]) + 1, n))
    m = A.shape[0]
    return MatrixMIP(np.linspace(1.0, 2.0, n), A, np.ones(m), np.full(m, np.inf), np.zeros(n), np.ones(n),
                     np.ones(n, dtype=bool), [("cover", (i,)) for i in range(m)], lambda: [f"x{j}" for j in range(n)])


def test_feasibility_jump_is_off_only_above_the_size_limit_and_this_highs_knows_the_option() -> None:
    import highspy

    assert size_options(_mip(1000)) == {}
    big = size_options(_mip(JUMP_MAX_NONZEROS + 10))
    assert big == {"mip_heuristic_run_feasibility_jump": False}
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    for name, value in big.items():  # a renamed option in a new HiGHS would fail here, not silently
        assert h.setOptionValue(name, value) == highspy.HighsStatus.kOk
    out = solve_highs(_mip(JUMP_MAX_NONZEROS + 10), 60.0)  # and a model that large still solves
    cheapest = np.linspace(1.0, 2.0, JUMP_MAX_NONZEROS + 10)[::10].sum()  # each row's first binary
    assert out.status.value == "optimal" and out.objective == pytest.approx(cheapest, rel=1e-9)

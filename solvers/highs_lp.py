"""A small LP on HiGHS through highspy, for the bounds that need an LP's duals (the class
LP of methods/bounds.py). highspy alone loads in a fraction of scipy.optimize's time,
which `part check` pays on every run. Nothing reaches standard output (HiGHS's banner is
captured, so `--json` stays one document)."""
from __future__ import annotations

import numpy as np
from partdsl.models.matrix import MatrixMIP
from partdsl.runtime.capture import captured_stdout, solver_call
from partdsl.solvers.highs_matrix import fit_scheduler, pass_model
from scipy.sparse import csr_matrix


def lp_duals(c: np.ndarray, A: csr_matrix, row_lo: np.ndarray, row_hi: np.ndarray,
             col_lo: np.ndarray, col_hi: np.ndarray) -> np.ndarray | None:
    """The row duals of min c.x s.t. row_lo <= A x <= row_hi, col_lo <= x <= col_hi (HiGHS's
    sign: d objective / d row bound), or None if the LP has no optimum."""
    import highspy

    with captured_stdout():  # HiGHS 1.16 prints its banner when a Highs() is made
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        pass_model(h, MatrixMIP(c, A, row_lo, row_hi, col_lo, col_hi, np.zeros(len(c), dtype=bool)))
        fit_scheduler(None)
        with solver_call():
            h.run()
        if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
            return None
        return np.asarray(h.getSolution().row_dual, dtype=float)

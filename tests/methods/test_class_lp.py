"""The class LP bound (methods/bounds.py `spread_lp`) solves one row per distinct row of
times; its value must be the LP's over every row, solved here without merging."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from partdsl.methods.bounds import spread_lp
from scipy.optimize import linprog

TIMES = (0.5, 1.0, 2.0, 3.0, np.inf)  # few values: rows repeat, as an operator does in every layer


def full_lp(r: np.ndarray, k: np.ndarray) -> float:
    """min T: each row's unit spread over its finite columns, column g's load <= k_g T."""
    n, G = r.shape
    fin = np.isfinite(r)
    cost = np.r_[np.zeros(n * G), 1.0]
    ub = np.zeros((G, n * G + 1))
    for g in range(G):
        ub[g, [v * G + g for v in range(n)]] = np.where(fin[:, g], r[:, g], 0.0)
        ub[g, -1] = -k[g]
    eq = np.zeros((n, n * G + 1))
    for v in range(n):
        eq[v, v * G:(v + 1) * G] = 1.0
    bounds = [(0, None if fin[v, g] else 0) for v in range(n) for g in range(G)] + [(0, None)]
    res = linprog(cost, A_ub=ub, b_ub=np.zeros(G), A_eq=eq, b_eq=np.ones(n), bounds=bounds, method="highs")
    assert res.status == 0
    return float(res.fun)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_merging_equal_rows_keeps_the_lps_value(data: st.DataObject) -> None:
    G = data.draw(st.integers(2, 3))
    distinct = data.draw(st.lists(st.lists(st.sampled_from(TIMES), min_size=G, max_size=G)
                                  .filter(lambda row: any(np.isfinite(row))), min_size=1, max_size=4))
    reps = data.draw(st.lists(st.integers(1, 4), min_size=len(distinct), max_size=len(distinct)))
    order = data.draw(st.permutations(range(sum(reps))))
    r = np.repeat(np.array(distinct, dtype=float), reps, axis=0)[list(order)]
    k = np.array(data.draw(st.lists(st.integers(1, 3), min_size=G, max_size=G)), dtype=float)
    assert spread_lp(r, k) == pytest.approx(full_lp(r, k), rel=1e-6, abs=1e-9)


def test_the_class_lp_prints_nothing(capfd: pytest.CaptureFixture[str]) -> None:
    """HiGHS prints a banner when it is made; the bound runs on every `part check --json`."""
    from partdsl import parse_file
    from partdsl.methods.bounds import bound

    from tests.support import EXAMPLES

    capfd.readouterr()
    assert bound(parse_file(EXAMPLES / "tiny.part")) > 0
    assert capfd.readouterr().out == ""

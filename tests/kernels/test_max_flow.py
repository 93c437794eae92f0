"""kernels/graph/max_flow.py: the compiled Dinic gives scipy's maximum flow on random
networks (parallel and opposite arcs, zero capacities, capacities near the bounds' BIG),
and the same network answers several capacity vectors in turn."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from partdsl.kernels.graph.max_flow import FlowNetwork
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_flow

from tests.support.effort import examples


@st.composite
def networks(draw: st.DrawFn) -> tuple[int, np.ndarray, np.ndarray, list[np.ndarray]]:
    n = draw(st.integers(2, 9))
    arcs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(lambda a: a[0] != a[1]),
                         max_size=30))
    tails = np.array([a for a, _ in arcs], dtype=np.int64)
    heads = np.array([b for _, b in arcs], dtype=np.int64)
    top = draw(st.sampled_from([3, 1000, 1 << 28]))  # 1 << 28: summed parallel arcs stay in scipy's int32
    caps = [np.array(draw(st.lists(st.integers(0, top), min_size=len(arcs), max_size=len(arcs))), dtype=np.int64)
            for _ in range(3)]
    return n, tails, heads, caps


@settings(max_examples=examples(300), deadline=None)
@given(networks())
def test_dinic_gives_scipys_maximum_flow(net: tuple[int, np.ndarray, np.ndarray, list[np.ndarray]]) -> None:
    n, tails, heads, caps = net
    flow = FlowNetwork(n, tails, heads)
    for c in caps:  # the arcs laid out once, the capacities set per call
        g = csr_matrix((c.astype(np.int32), (tails, heads)), shape=(n, n))
        assert flow.value(c, 0, n - 1) == maximum_flow(g, 0, n - 1, method="dinic").flow_value


def test_a_flow_that_must_be_sent_back_is_undone() -> None:
    """s -> a -> c -> t is found first (a's arcs in this order), which blocks b; the maximum
    (2) sends a's unit on to d instead, over the reverse of a -> c."""
    s, a, b, c, d, t = range(6)
    arcs = [(s, a), (s, b), (a, c), (a, d), (b, c), (c, t), (d, t)]
    flow = FlowNetwork(6, np.array([u for u, _ in arcs]), np.array([v for _, v in arcs]))
    assert flow.value(np.ones(len(arcs), dtype=np.int64), s, t) == 2

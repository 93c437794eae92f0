"""REGAL's hardness filter (kernels/schedule/room.py) and `part generate regal --filter /
--work sampled`: the schedule simulator on hand-computed cases and invariants, the
filter's rule, and the generator writing the first graph the filter keeps."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from partdsl import parse
from partdsl.cli.main import main
from partdsl.core.ir import Graph, Node, Work
from partdsl.generators.regal import regal_graph, regal_spec
from partdsl.kernels.schedule.room import Arrays, Room, first_kept, room


def _graph(works: list[float], sizes: list[float], edges: list[tuple[int, int]]) -> Graph:
    nodes = tuple(Node(f"v{i}", (Work(w),), comm=s) for i, (w, s) in enumerate(zip(works, sizes)))
    return Graph("g", nodes, tuple(sorted(edges)))


def _run(g: Graph, dev: list[int], prio: list[float], d: int) -> tuple[float, list[float]]:
    t, peak = Arrays.of(g).run(np.array(dev, dtype=np.int64), np.array(prio, dtype=np.float64), d)
    return t, list(peak)


def test_the_simulator_on_a_hand_computed_pair() -> None:
    """a (work 2, tensor 3) -> b (work 1, tensor 1). Apart: a runs 0-2, its tensor arrives
    at 5, b runs 5-6; a's tensor is held on device 0 over [0, 5) (until sent) and on device 1
    over [2, 6), b's over [5, 6): peaks 3 and 4. Together: b runs 2-3, a's tensor [0, 3),
    b's [2, 3): peak 4."""
    g = _graph([2.0, 1.0], [3.0, 1.0], [(0, 1)])
    assert _run(g, [0, 1], [0.0, 1.0], 2) == (6.0, [3.0, 4.0])
    assert _run(g, [0, 0], [0.0, 1.0], 2) == (3.0, [4.0, 0.0])


def test_priorities_order_the_ready_nodes_and_memory_is_released_before_it_is_taken() -> None:
    """Two roots (work 1 and 2, tensors 5 and 7) feeding one sink, on one device: the root
    of least priority (v1) runs 0-2, v0 2-3, the sink 3-4; both roots' tensors are held
    until the sink ends, so at 3 the sink's own 1 makes the peak 13. On a chain, a tensor
    freed when its reader ends is free for the tensor made at that instant."""
    g = _graph([1.0, 2.0, 1.0], [5.0, 7.0, 1.0], [(0, 2), (1, 2)])
    assert _run(g, [0, 0, 0], [0.2, 0.1, 0.0], 1) == (4.0, [13.0])
    chain = _graph([1.0, 1.0, 1.0], [4.0, 4.0, 4.0], [(0, 1), (1, 2)])
    assert _run(chain, [0, 0, 0], [0.0, 0.0, 0.0], 1) == (3.0, [8.0])  # v0's tensor is freed as v2's is taken


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 12), st.data())
def test_on_one_device_the_schedule_never_idles(n: int, data: st.DataObject) -> None:
    edges = [(a, b) for a in range(n) for b in range(a + 1, n) if data.draw(st.booleans())]
    works = data.draw(st.lists(st.floats(0.5, 10), min_size=n, max_size=n))
    sizes = data.draw(st.lists(st.floats(0.5, 10), min_size=n, max_size=n))
    prio = data.draw(st.lists(st.floats(0, 1), min_size=n, max_size=n))
    t, (peak,) = _run(_graph(works, sizes, edges), [0] * n, prio, 1)
    assert t == pytest.approx(sum(works))
    assert max(sizes) - 1e-9 <= peak <= sum(sizes) + 1e-9


def test_the_filters_rule() -> None:
    """Kept: the many evaluations fit memory and the few do not, or both fit and the few
    run 20% longer. Not kept: a smaller gain, or a gain where neither fits."""
    assert Room(10.0, 1.3, 10.0, 0.9, 1.0).kept
    assert Room(12.0, 0.9, 10.0, 0.9, 1.0).kept
    assert not Room(11.9, 0.9, 10.0, 0.9, 1.0).kept
    assert not Room(30.0, 1.5, 10.0, 1.2, 1.0).kept


def test_first_kept_walks_the_seeds_to_the_first_graph_with_room() -> None:
    found = first_kept(lambda s: regal_graph(40, "ba", s), 0, tries=50)
    assert found is not None
    seed, g, r = found
    assert r.kept and room(g, 2, seed) == r and g == regal_graph(40, "ba", seed)
    assert all(not room(regal_graph(40, "ba", s), 2, s).kept for s in range(seed))
    single = _graph([3.0], [2.0], [])  # one node: every schedule is the same, there is no room
    assert first_kept(lambda s: single, 0, tries=3) is None


def test_generate_regal_filter_writes_the_kept_graph(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.part"
    assert main(["generate", "regal", "--size", "40", "--model", "ba", "--filter", "--work", "sampled",
                 "-o", str(out)]) == 0
    found = first_kept(lambda s: regal_graph(40, "ba", s, work="sampled"), 0)
    assert found is not None
    said = capsys.readouterr().err  # a line per seed tried
    assert said.count("--filter: seed ") == found[0] + 1 and f"--filter: seed {found[0]}: kept: " in said
    text = out.read_text()
    assert f"--work sampled --seed {found[0]}" in text and "kept by REGAL's filter" in text
    spec, made = parse(text, str(out)), regal_spec(40, 4, "ba", seed=found[0], work="sampled")
    assert [(nd.name, nd.work, nd.comm) for nd in spec.graph.nodes] == \
        [(nd.name, nd.work, nd.comm) for nd in made.graph.nodes]
    assert made.graph.nodes != regal_spec(40, 4, "ba", seed=found[0]).graph.nodes  # the work differs
    assert made.graph.edges == regal_spec(40, 4, "ba", seed=found[0]).graph.edges  # the graph does not
    bad = next(s for s in range(100) if not room(regal_graph(40, "ba", s), 2, s).kept)
    assert main(["generate", "regal", "--size", "40", "--model", "ba", "--filter", "--seed", str(bad),
                 "--tries", "1"]) == 2
    assert f"none of seeds {bad}..{bad} gives a graph with room for improvement" in capsys.readouterr().err

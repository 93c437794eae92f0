"""The RandWire generator (generators/randwire.py), its cost model (importers/cost_model.py) and the
module decomposition of MILP-SPLIT (kernels/graph/modules.py)."""
from __future__ import annotations

import itertools
import subprocess
import sys

import networkx as nx
import pytest
from partdsl.core.dense import work_time
from partdsl.core.errors import PartError
from partdsl.core.ir import DeviceClass, Graph, Node, Objective, Platform, Spec, Work
from partdsl.core.validate import validate
from partdsl.dsl.parser import parse, parse_file
from partdsl.dsl.printer import to_part
from partdsl.generators.randwire import RandWire, randwire_spec
from partdsl.importers.cost_model import names, profile
from partdsl.kernels.graph.modules import boundary_edges, chain, split_articulations


def _digraph(spec: Spec) -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_nodes_from(range(len(spec.graph.nodes)))
    g.add_edges_from(spec.graph.edges)
    return g


@pytest.mark.parametrize("model,variant,channels", list(itertools.product(("er", "ws", "ba"), ("sdep", "wdep"),
                                                                         (1, 2, 3))))
def test_networks_are_dnns_with_the_asked_channels(model: str, variant: str, channels: int) -> None:
    for seed in range(3):
        rw = RandWire(model=model, size=10, modules=4, channels=channels, variant=variant, seed=seed)
        spec = randwire_spec(rw)
        validate(spec)  # acyclic, names, memory
        g = _digraph(spec)
        names_ = [nd.name for nd in spec.graph.nodes]
        stem, head = names_.index("stem"), names_.index("head")
        assert nx.descendants(g, stem) | {stem} == set(g), "every node is reachable from the stem"
        assert nx.ancestors(g, head) | {head} == set(g), "every node reaches the head"
        module = {v: int(nm[1:].split("_")[0]) for v, nm in enumerate(names_) if nm.startswith("m")}
        for q in range(1, rw.modules):
            crossing = [(a, b) for a, b in spec.graph.edges if module.get(a) == q and module.get(b) == q + 1]
            assert len(crossing) == channels
            assert not [e for e in spec.graph.edges if module.get(e[0]) == q and module.get(e[1], 0) > q + 1]
        if variant == "sdep":  # every node of a module descends from a channel input
            for q in range(2, rw.modules + 1):
                inside = {v for v, m in module.items() if m == q}
                ins = {b for a, b in spec.graph.edges if module.get(a) == q - 1 and b in inside}
                reach = set(ins).union(*(nx.descendants(g.subgraph(inside), i) for i in ins))
                assert reach == inside


def test_the_paper_settings_and_the_spec_round_trip() -> None:
    for model in ("er", "ws", "ba"):  # ER(0.2), WS(4, 0.75), BA(5), N in {10, 32}
        for size in (10, 32):
            rw = RandWire(model=model, size=size, p=0.75 if model == "ws" else 0.2, seed=7)
            spec = randwire_spec(rw, "throughput", 16, 4)
            again = parse(to_part(spec))
            assert again.graph == spec.graph and again.platform == spec.platform
            assert again.objective.batch == 16 and again.objective.split == 4
            assert spec.platform.classes[0].batches == (1, 4, 8, 12, 16)


def test_the_cost_model_matches_table_ii_and_batches_pay() -> None:
    """Relative speeds on RWNNs at batch 1 (Table II: CPU 7.10x, T4 1.26x, A100 1x), within
    10%; per-sample time falls with the batch, total time grows."""
    total = {c: 0.0 for c in ("cpu", "t4", "a100")}
    for model, size, modules in itertools.product(("er", "ws", "ba"), (10, 32), (1, 10)):
        spec = randwire_spec(RandWire(model=model, size=size, modules=modules, seed=2))
        for c in total:
            total[c] += sum(work_time(nd, c, 1.0, 1) for nd in spec.graph.nodes)
    assert total["cpu"] / total["a100"] == pytest.approx(7.10, rel=0.1)
    assert total["t4"] / total["a100"] == pytest.approx(1.26, rel=0.1)
    for name in names():
        p = profile(name)
        times = [p.time_ms(2e8, 4e5, 2e6, b) for b in (1, 4, 16, 64)]
        assert all(a < b for a, b in zip(times, times[1:]))
        assert all(a / x > b / y for (a, x), (b, y) in zip(zip(times, (1, 4, 16, 64)), zip(times[1:], (4, 16, 64))))
    assert profile("a100", overhead=0.0).overhead == 0.0
    with pytest.raises(PartError, match="unknown device profile"):
        profile("h100x")
    with pytest.raises(PartError, match="unknown profile field"):
        profile("a100", clock=1.0)


def test_the_paper_regime_takes_table_is_time_per_image_at_table_iis_speeds() -> None:
    """Issue 73 item 6: Table I's network shape (ER(0.2), 10 modules of 10 nodes, one
    channel, seed 0) takes 211.7 ms per image on its best device, as published; every node
    time is the roofline's times one factor, so the relative speeds (the test above) and the
    transfers (bytes over the same links) are the roofline regime's."""
    from partdsl.generators.randwire import PAPER_SCALE
    from partdsl.methods.solve import solve

    rw = RandWire(modules=10, seed=0)
    paper, roofline = randwire_spec(rw), randwire_spec(RandWire(modules=10, seed=0, regime="roofline"))
    assert solve(paper, method="single").objective == pytest.approx(211.7, rel=1e-3)
    assert solve(roofline, method="single").objective == pytest.approx(211.7 / PAPER_SCALE, rel=1e-3)
    for a, b in zip(paper.graph.nodes, roofline.graph.nodes):
        assert [w.time for w in a.work] == pytest.approx([w.time * PAPER_SCALE for w in b.work], abs=1e-6 * PAPER_SCALE)
        assert (a.out, a.params) == (b.out, b.params)
    assert paper.platform == roofline.platform
    with pytest.raises(PartError, match="unknown cost regime 'eager'"):
        randwire_spec(RandWire(regime="eager"))


def test_bad_settings_get_clear_errors() -> None:
    with pytest.raises(PartError, match="unknown random graph model"):
        randwire_spec(RandWire(model="xx"))
    with pytest.raises(PartError, match="BA"):
        randwire_spec(RandWire(model="ba", size=4, m=5))
    with pytest.raises(PartError, match="must divide"):
        randwire_spec(RandWire(), "throughput", 16, 3)


def test_single_channel_modules_are_the_generated_ones() -> None:
    for variant, seed in itertools.product(("sdep", "wdep"), range(4)):
        spec = randwire_spec(RandWire(model="er", size=10, modules=5, variant=variant, seed=seed))
        split = split_articulations(spec)
        mods = chain(split.spec, 1, min_size=4)
        assert len(mods) == 5 and all(len(c) == 1 for c in boundary_edges(split.spec, mods))
        where = {v: k for k, m in enumerate(mods) for v in m}
        assert all(where[a] <= where[b] for a, b in split.spec.graph.edges), "edges go forward in the chain"


def test_multi_channel_cuts_carry_at_most_the_channels() -> None:
    for c, variant in itertools.product((2, 3), ("sdep", "wdep")):
        spec = randwire_spec(RandWire(model="er", size=10, modules=4, channels=c, variant=variant, seed=1))
        mods = chain(spec, c)
        assert sorted(v for m in mods for v in m) == list(range(len(spec.graph.nodes)))
        assert len(mods) >= 4 and all(len(cut) <= c for cut in boundary_edges(spec, mods))


@pytest.mark.parametrize("variant", ("sdep", "wdep"))
def test_without_a_channel_count_milp_split_finds_the_generated_one(variant: str) -> None:
    """Read with fewer channels than it has, a network is one module (or loses only its stem:
    4 channels read as 3); the plan takes one channel if it splits, else the fewest whose
    modules each hold at most half the nodes: on these networks, the generator's count."""
    from partdsl.methods.milp_split_modules import ModulePlan

    for c in (1, 2, 3, 4):
        spec = randwire_spec(RandWire(model="er", size=10, modules=10, channels=c, variant=variant, seed=0))
        plan = ModulePlan.fewest_channels(spec, 4)
        assert plan.channels == c and len(plan.modules) >= 10
        assert all(len(cut) <= c for cut in plan.cuts) and 2 * plan.largest <= len(plan.s.graph.nodes)
        if c > 1:
            assert 2 * ModulePlan(spec, c - 1, 4).largest > len(spec.graph.nodes)  # too few channels: no split


def test_a_graph_past_the_edge_limit_is_cut_in_topological_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """networkx's k-edge components take a max flow per node (seconds at 1,000 edges, a
    RecursionError at 25,000): past K_EDGE_EDGES the cuts are those of one topological
    order, still valid (at most C edges cross, every edge goes forward)."""
    import partdsl.kernels.graph.modules as modules

    spec = randwire_spec(RandWire(model="er", size=10, modules=6, channels=2, variant="wdep", seed=2))
    exact = chain(spec, 2, min_size=4)
    monkeypatch.setattr(modules, "K_EDGE_EDGES", 10)  # below this graph's edges
    fast = chain(spec, 2, min_size=4)
    where = {v: k for k, m in enumerate(fast) for v in m}
    assert sorted(where) == list(range(len(spec.graph.nodes)))
    assert all(where[a] <= where[b] for a, b in spec.graph.edges)
    assert all(len(cut) <= 2 for cut in boundary_edges(spec, fast)) and 1 < len(fast) <= len(exact)


def test_an_articulation_point_becomes_a_bridge() -> None:
    """Two diamonds sharing their middle node: no bridge, one articulation point; the split
    gives it a zero-cost copy that takes its out-edges, so the graph falls into two modules."""
    names_ = ["a", "b", "c", "m", "d", "e", "f"]
    edges = [(0, 1), (0, 2), (1, 3), (2, 3), (3, 4), (3, 5), (4, 6), (5, 6)]
    nodes = tuple(Node(n, (Work(1.0),), out=1e6) for n in names_)
    spec = Spec(Graph("twodiamonds", nodes, tuple(edges)), Platform((DeviceClass("gpu", 2, link=1e10),)),
                Objective("task_latency"))
    assert not list(nx.bridges(nx.Graph(edges)))
    split = split_articulations(spec)
    assert split.twin == {7: 3} and split.spec.graph.nodes[7].name == "m'"
    assert split.origin[7] == 3
    assert (3, 7) in split.spec.graph.edges and (7, 4) in split.spec.graph.edges and (3, 4) not in split.spec.graph.edges
    mods = chain(split.spec, 1)
    assert mods == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_part_generate_writes_a_spec(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "rw.part"
    r = subprocess.run([sys.executable, "-m", "partdsl.cli.main", "generate", "randwire", "--model", "ba", "--size",
                        "8", "-m", "3", "--modules", "2", "--channels", "2", "--variant", "wdep", "--objective",
                        "throughput", "--batch", "8", "--split", "2", "-o", str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    spec = parse_file(out)
    assert len(spec.graph.nodes) == 18 and spec.objective.kind == "throughput" and spec.objective.split == 2
    bad = subprocess.run([sys.executable, "-m", "partdsl.cli.main", "generate", "randwire", "--model", "ba",
                          "--size", "4"], capture_output=True, text=True)
    assert bad.returncode == 2 and "BA(M) needs" in bad.stderr and "Traceback" not in bad.stderr

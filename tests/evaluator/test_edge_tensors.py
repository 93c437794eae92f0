"""Per-edge tensor sizes (issue 30, item 3; Tarnawski App. B): `a -> {b, c} out 4 MB` is a
tensor of its own that a sends to b and c, paid once per receiving device, on those edges
instead of a's `out`. The language, the builder, the JSON formats and the ONNX importer
write them; every method sees them as carrier nodes colocated with their source.
tests/support/reference.py scores them from the tensors as written (test_evaluator), and the
brute-force oracle (tests/support/oracle.py, whose random graphs draw them) checks every method."""
from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper
from partdsl import GraphBuilder, PartError, SpecBuilder, parse, solve, to_part
from partdsl.convert.to_part import onnx_to_part
from partdsl.core.assignment import to_array
from partdsl.evaluator.evaluate import evaluate
from partdsl.importers.graph_formats import graph_from_json, graph_to_json, import_graph
from partdsl.importers.onnx_import import import_onnx

from tests.support import run_part
from tests.support.onnx_models import save as _save

GRAPH = """
graph g {
  node a { work 3 ms; out 1 MB }
  node b { work 3 ms }
  node c { work 3 ms }
  node d { work 3 ms }
  SIZED
  a -> d
  b -> d comm 0.5 ms
  c -> d
}
platform { device gpu[2] { link 1 GB/s } }
minimize bottleneck
"""
ONE = GRAPH.replace("SIZED", "a -> {b, c} out 4 MB")  # one 4 MB tensor read by b and c
TWO = GRAPH.replace("SIZED", "a -> b out 4 MB\n  a -> c out 4 MB")  # two tensors of 4 MB


def _loads(text: str, where: dict[str, str]) -> dict[str, float]:
    spec = parse(text)
    return evaluate(spec, to_array(spec, where)).loads


def test_a_sized_hop_is_one_tensor_paid_once_per_receiving_device() -> None:
    spec = parse(ONE)
    names = [nd.name for nd in spec.graph.nodes]
    assert names == ["a", "b", "c", "d", "a~1", "b~1"]  # the carriers, after the operators
    a1 = spec.graph.nodes[4]
    assert (a1.tensor_of, a1.out, a1.params) == ("a", 4e6, 0.0)
    assert spec.graph.nodes[5].comm == 0.5
    edges = {(names[x], names[y]) for x, y in spec.graph.edges}
    assert edges == {("a", "a~1"), ("a~1", "b"), ("a~1", "c"), ("a", "d"), ("b", "b~1"), ("b~1", "d"), ("c", "d")}
    # a alone: its 4 MB tensor once to gpu[1] (b and c both there), its own 1 MB output to d
    split = {"a": "gpu[0]", "b": "gpu[1]", "c": "gpu[1]", "d": "gpu[1]"}
    assert _loads(ONE, split) == pytest.approx({"gpu[0]": 3 + 4 + 1, "gpu[1]": 9 + 4 + 1})
    # written as two hops it is two tensors: gpu[1] receives 8 MB
    assert _loads(TWO, split) == pytest.approx({"gpu[0]": 3 + 8 + 1, "gpu[1]": 9 + 8 + 1})
    # b's tensor (0.5 ms) goes to d; c sends nothing (no out); a's 1 MB output goes to d
    split = {"a": "gpu[0]", "b": "gpu[0]", "c": "gpu[0]", "d": "gpu[1]"}
    assert _loads(ONE, split) == pytest.approx({"gpu[0]": 9 + 1 + 0.5, "gpu[1]": 3 + 1 + 0.5})


def test_a_tensor_sent_to_every_consumer_is_the_node_output() -> None:
    """The reduction changes nothing when one tensor goes to all consumers: the same loads
    as a node `out` for every assignment (Tarnawski App. B: 'it is easy to see')."""
    sized = ONE.replace("out 1 MB", "").replace("a -> {b, c} out 4 MB", "a -> {b, c, d} out 4 MB") \
        .replace("  a -> d\n", "")
    plain = ONE.replace("out 1 MB", "out 4 MB").replace("a -> {b, c} out 4 MB", "a -> {b, c}")
    for devs in itertools.product(["gpu[0]", "gpu[1]"], repeat=4):
        where = dict(zip("abcd", devs))
        assert _loads(sized, where) == pytest.approx(_loads(plain, where))


def test_text_builder_and_json_give_the_same_spec() -> None:
    spec = parse(ONE)
    assert parse(to_part(spec)) == spec
    assert "a -> {b, c} out 4000000 B" in to_part(spec)
    g = GraphBuilder("g")
    g.node("a", 3.0, out="1 MB").node("b", 3.0).node("c", 3.0).node("d", 3.0)
    g.tensor("a", ["b", "c"], out="4 MB").edge("a", "d").edge("b", "d", comm="0.5 ms").edge("c", "d")
    built = SpecBuilder(g).device("gpu", 2, link="1 GB/s").minimize("bottleneck").build()
    assert built == spec
    data = json.loads(json.dumps(graph_to_json(spec.graph)))
    assert data["tensors"] == [{"from": "a", "to": ["b", "c"], "out": 4e6}, {"from": "b", "to": ["d"], "comm": 0.5}]
    assert all("~" not in nd["name"] for nd in data["nodes"])
    assert graph_from_json(data, "g") == spec.graph


@pytest.mark.parametrize("text,what", [
    ("a -> b -> c out 4 MB", "belongs to one hop"),
    ("L[1..2] -> c out 4 MB", "belongs to one hop"),
    ("a -> b out 3 ms", "out"),
    ("a -> b comm 4 MB", "comm"),
])
def test_a_misplaced_tensor_size_is_an_error_with_a_caret(text: str, what: str) -> None:
    src = f"graph g {{ node a {{ work 1 ms }} node b {{ work 1 ms }} node c {{ work 1 ms }} " \
          f"node L[1..2] {{ work 1 ms }}\n{text}\n}}\nplatform {{ device gpu[2] }}\nminimize bottleneck\n"
    with pytest.raises(PartError) as e:
        parse(src)
    assert what in e.value.message and e.value.span is not None and e.value.span.line == 2


def test_the_builder_and_constraints_refuse_what_a_carrier_cannot_be() -> None:
    g = GraphBuilder("g").node("a", 1.0).node("b", 1.0)
    with pytest.raises(PartError, match="exactly one of out"):
        g.tensor("a", ["b"], out="1 MB", comm=1.0)
    g.tensor("a", ["b"], out="1 MB")
    with pytest.raises(PartError, match="tensor carrier 'a~1'") as e:
        SpecBuilder(g).device("gpu", 2).minimize("bottleneck").subject_to(pins={"a~1": ["gpu[0]"]}).build()
    assert "'a'" in (e.value.hint or "")


def test_solve_leaves_carriers_out_and_reads_its_own_answer_back(tmp_path: Path) -> None:
    spec = parse(ONE)
    r = solve(spec, method="exact")
    assert r.status.value == "optimal" and set(r.assignment) == {"a", "b", "c", "d"}
    brute = solve(spec, method="brute")
    assert r.objective == pytest.approx(brute.objective)
    path = tmp_path / "s.part"
    path.write_text(ONE)
    out = run_part("solve", str(path), "--json")
    (tmp_path / "r.json").write_text(out.stdout)
    again = run_part("eval", str(path), str(tmp_path / "r.json"), "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["objective"] == pytest.approx(r.objective)
    check = run_part("check", str(path))
    assert "4 nodes, 5 edges (2 sized edge tensors)" in check.stdout


def test_dnn_partitioning_out_edges_of_different_costs_are_each_a_tensor(tmp_path: Path) -> None:
    """Tarnawski App. B's own case: a node whose out-edges cost differently (an ONNX node
    sending parts of its output to different operators) has each edge subdivided."""
    node = {"cpuLatency": 5.0, "fpgaLatency": 1.0, "size": 0.0, "supportedOnFpga": True}
    data = {"maxFPGAs": 2, "maxCPUs": 1, "maxSizePerFPGA": 1e9,
            "nodes": [{"id": i, **node} for i in range(4)],
            "edges": [{"sourceId": 0, "destId": 1, "cost": 0.5}, {"sourceId": 0, "destId": 2, "cost": 2.0},
                      {"sourceId": 1, "destId": 3, "cost": 0.3}, {"sourceId": 2, "destId": 3, "cost": 0.3}]}
    path = tmp_path / "g.json"
    path.write_text(json.dumps(data))
    g = import_graph(path, None, "g")
    carriers = {g.nodes[i].name: (g.nodes[i].comm, [g.nodes[b].name for a, b in g.edges if a == i])
                for i, _ in g.carriers}
    assert carriers == {"n0~1": (0.5, ["n1"]), "n0~2": (2.0, ["n2"])}
    assert g.nodes[0].comm == 0.0 and g.nodes[1].comm == 0.3
    spec = parse(f'graph g = import "{path}"\nplatform {{ device acc[2] device cpu[1] {{ host }} }}\n'
                 "minimize bottleneck\n")
    where = {"n0": "acc[0]", "n1": "acc[1]", "n2": "acc[0]", "n3": "acc[0]"}
    ev = evaluate(spec, to_array(spec, where))
    assert ev.loads == pytest.approx({"acc[0]": 3 + 0.5 + 0.3, "acc[1]": 1 + 0.5 + 0.3, "cpu[0]": 0.0})


def test_onnx_outputs_read_by_different_operators_are_tensors_of_their_own(tmp_path: Path) -> None:
    """A Split's three chunks (2 x 4 floats, 32 B each) go one to each Relu: each chunk is
    its own tensor, so a device running one Relu receives 32 B, not the 96 B of all three."""
    F = TensorProto.FLOAT
    nodes = [helper.make_node("Relu", ["x"], ["h"], name="pre"),
             helper.make_node("Split", ["h"], ["s0", "s1", "s2"], name="chunker", axis=1, num_outputs=3)]
    nodes += [helper.make_node("Relu", [f"s{i}"], [f"r{i}"], name=f"relu{i}") for i in range(3)]
    nodes.append(helper.make_node("Concat", ["r0", "r1", "r2"], ["y"], name="cat", axis=1))
    path = _save(tmp_path / "s.onnx", nodes, [helper.make_tensor_value_info("x", F, [1, 6, 4])],
                 [helper.make_tensor_value_info("y", F, None)])
    g = import_onnx(path, "g")
    split = g.nodes[g.index["chunker"]]
    assert split.out is None
    sent = sorted((g.nodes[i].out, [g.nodes[b].name for a, b in g.edges if a == i]) for i, _ in g.carriers)
    assert sent == [(32.0, ["relu0"]), (32.0, ["relu1"]), (32.0, ["relu2"])]
    assert g.nodes[g.index["pre"]].out == 96.0  # one output: the node's own
    # `part convert` writes them as sized hops (it wrote the carriers as nodes, `chunker~1`, unreadable)
    converted = parse(onnx_to_part(path)).graph
    assert sorted((converted.nodes[i].out, [converted.nodes[b].name for a, b in converted.edges if a == i])
                  for i, _ in converted.carriers) == sent


def test_a_carrier_never_leaves_its_source_in_any_answer() -> None:
    """Every method's answer on a spec with tensors keeps each carrier on its source's device."""
    spec = parse(ONE.replace("minimize bottleneck", "minimize bottleneck\nsubject to { acyclic }"))
    for method in ("exact", "dp", "topo", "load_search", "slicegraph", "pipedream", "brute"):
        r = solve(spec, method=method)
        assert r.assignment is not None and r.evaluation.feasible, method
        dev = to_array(spec, r.assignment)
        assert all(dev[i] == dev[s] for i, s in spec.graph.carriers)
        assert np.isclose(evaluate(spec, dev).objective, r.objective), method

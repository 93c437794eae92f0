"""REGAL's CostGraphDef text graphs (importers/regal_import.py): work is compute_cost, the
tensor is the first output's size, edges come from input_info and control_input, _SOURCE
is left out; our REGAL-style generator written in that format reads back unchanged, and
the imported spec's optimum is the brute force's."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from partdsl import PartError, parse_file, solve
from partdsl.cli.main import main
from partdsl.generators.regal import MODELS, regal_graph
from partdsl.importers.regal_import import read_regal

from tests.support.files import as_pbtxt

SMALL = """node {
  name: "_SOURCE"
}
node {
  name: "first"   # a comment
  id: 1
  output_info { size: 40 alias_input_port: -1 }
  control_input: 0
  compute_cost: 90
}
node {
  name: "second"
  id: 2
  input_info { preceding_node: 1 }
  output_info { size: 30 alias_input_port: -1 }
  output_info { size: 99 alias_input_port: -1 }
  compute_cost: 70
}
node {
  name: "third"
  id: 3
  input_info { preceding_node: 1 }
  input_info { preceding_node: 2 }
  compute_cost: 50
}
"""


def test_a_small_graph_reads_as_archer_reads_it(tmp_path: Path) -> None:
    f = tmp_path / "g.pbtxt"
    f.write_text(SMALL)
    g = read_regal(f, "g")
    assert [n.name for n in g.nodes] == ["n1", "n2", "n3"]
    assert [n.comm for n in g.nodes] == [40.0, 30.0, 0.0]  # the first output only; none: 0
    assert [n.work[0].time for n in g.nodes] == [90.0, 70.0, 50.0]
    assert sorted(g.edges) == [(0, 1), (0, 2), (1, 2)]


def test_part_convert_writes_a_spec_whose_optimum_is_the_brute_forces(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "g.pbtxt").write_text(SMALL)
    spec_file = tmp_path / "s.part"
    assert main(["convert", str(tmp_path / "g.pbtxt"), "--devices", "stage=2", "-o", str(spec_file)]) == 0
    spec = parse_file(spec_file)
    assert len(spec.platform.devices) == 2 and spec.constraints.acyclic
    brute = solve(spec, method="brute")
    # by hand: {first} | {second, third}: 90 + 40 out | 70 + 50 + 40 in = 160
    assert brute.objective == pytest.approx(160.0)
    assert solve(spec, method="dp").objective == pytest.approx(brute.objective)
    assert main(["convert", str(tmp_path / "g.pbtxt"), "--devices", "gpu=2"]) == 2
    assert "stage=K" in capsys.readouterr().err


@settings(max_examples=25, deadline=None)
@given(st.integers(5, 40), st.sampled_from(MODELS), st.integers(0, 10_000))
def test_generated_graphs_read_back_unchanged(tmp_path_factory: pytest.TempPathFactory, n: int, model: str,
                                              seed: int) -> None:
    g = regal_graph(n, model, seed)
    f = tmp_path_factory.mktemp("regal") / "g.pbtxt"
    f.write_text(as_pbtxt(g))
    back = read_regal(f, g.name)
    assert [(x.work[0].time, x.comm) for x in back.nodes] == [(x.work[0].time, x.comm) for x in g.nodes]
    assert sorted(back.edges) == sorted(g.edges)


@pytest.mark.parametrize("text, says", [
    ('node {\n  name: "a"\n  id: 1\n', "not closed"),
    ('node {\n  name: "a"\n  id: 1\n  input_info { preceding_node: 7 }\n}\n', "names node 7"),
    ('node {\n  id: 1\n}\nnode {\n  id: 1\n}\n', "appears twice"),
    ('node {\n  id: 1 ]\n}\n', "line 2"),
    ("", "no nodes"),
])
def test_bad_files_get_a_plain_error(tmp_path: Path, text: str, says: str) -> None:
    f = tmp_path / "bad.pbtxt"
    f.write_text(text)
    with pytest.raises(PartError, match=says):
        read_regal(f, "g")

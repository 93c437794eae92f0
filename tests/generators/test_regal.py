"""`part generate regal` (Archer et al. App. C.2, generators/regal.py): the spec it writes is the
generator's, reads back as the same MTPP instance, and solves with a certificate."""
from __future__ import annotations

from pathlib import Path

import pytest
from partdsl import evaluate, parse, solve
from partdsl.cli.main import main
from partdsl.generators.regal import regal_spec
from partdsl.methods.solve import assignment_array


@pytest.mark.parametrize("model", ["er", "ba", "ws"])
def test_generate_regal_writes_the_generators_instance(model: str, tmp_path: Path) -> None:
    out = tmp_path / "r.part"
    assert main(["generate", "regal", "--model", model, "--size", "16", "--stages", "3", "--seed", "5",
                 "-o", str(out)]) == 0
    spec, made = parse(out.read_text(), str(out)), regal_spec(16, 3, model, seed=5)
    assert [(nd.name, nd.work, nd.comm) for nd in spec.graph.nodes] == \
        [(nd.name, nd.work, nd.comm) for nd in made.graph.nodes]
    assert spec.graph.edges == made.graph.edges and spec.dense.D == 3
    assert spec.constraints.acyclic and spec.objective.kind == "bottleneck"
    r = solve(spec, method="dp", time_limit=30)
    assert r.status.value == "optimal"  # the DP over ideals is exact under `acyclic`
    assert r.objective == pytest.approx(evaluate(made, assignment_array(made, r.assignment)).objective)


def test_generate_regal_mistakes_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["generate", "regal", "--stages", "0"]) == 2
    assert "--stages 0: must be at least 1" in capsys.readouterr().err
    assert main(["generate", "regal", "--objective", "latency"]) == 2
    assert "MTPP: --objective bottleneck" in capsys.readouterr().err

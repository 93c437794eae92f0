"""Issue 28: every spec feature a method does not model is refused by name before solving
(exit 2), with the methods that do model it; never parsed and then ignored."""
from __future__ import annotations

import pytest
from partdsl import PartError, parse, solve
from partdsl.methods.capabilities import FEATURES, features
from partdsl.methods.registry import METHODS
from partdsl.methods.solve import modelled_by

from tests.support import run_part

GRAPH = """graph g {
  node a { work 1 ms on gpu, 4 ms on cpu; params 1 GB; out 1 MB }
  node b { work 2 ms on gpu, 8 ms on cpu; params 1 GB; out 1 MB }
  node c { work 1 ms on gpu, 4 ms on cpu; params 1 GB; out 1 MB }
  a -> b -> c
}
"""
PLATFORM = "platform {{ device gpu[2] {{ memory {mem}; link 1 GB/s }} device cpu[1] {{ host }} }}\n"
# one spec per feature: the plain bottleneck spec plus that feature alone
WITH = {
    "overlap": ("minimize bottleneck overlap duplex", "", "64 GB"),
    "memory limits": ("minimize bottleneck", "memory hard", "1.5 GB"),
    "memory overflow": ("minimize bottleneck", "memory overflow", "1.5 GB"),
    "colocation": ("minimize bottleneck", "colocate a, c", "64 GB"),
    "contiguous": ("minimize bottleneck", "contiguous", "64 GB"),
    "acyclic": ("minimize bottleneck", "acyclic", "64 GB"),
    "stage limits": ("minimize bottleneck", "stages <= 2", "64 GB"),
    "subgraphs": ("minimize latency", "subgraphs <= 2", "64 GB"),
}


def spec_with(feature: str) -> str:
    objective, constraint, mem = WITH[feature]
    memory = "" if constraint.startswith("memory") else "; memory ignore" if constraint else "memory ignore"
    return GRAPH + PLATFORM.format(mem=mem) + objective + "\n" + f"subject to {{ {constraint}{memory} }}\n"


def test_every_declared_feature_is_a_known_feature() -> None:
    for m in METHODS.values():
        for feature, option in m.ignores:
            assert feature in FEATURES, (m.name, feature)
            assert option is None or option in m.options, (m.name, option)


@pytest.mark.parametrize("feature", WITH)
def test_each_feature_is_seen_alone(feature: str) -> None:
    used = features(parse(spec_with(feature)))
    assert used == [feature]


@pytest.mark.parametrize("method,feature", [(m.name, f) for m in METHODS.values() for f, _ in m.ignores if f in WITH])
def test_a_method_refuses_what_it_does_not_model_and_names_who_does(method: str, feature: str) -> None:
    spec = parse(spec_with(feature))
    if spec.objective.kind not in METHODS[method].objectives:
        pytest.skip(f"{method} takes no {spec.objective.kind} spec (refused up front, tests/cli/test_cli.py)")
    with pytest.raises(PartError, match=f"method {method} does not model {feature}") as e:
        solve(spec, method=method)
    others = modelled_by(spec, feature)
    assert method not in others
    assert f"methods that model it: {', '.join(others)}" in (e.value.hint or "")
    for other in others[:3]:  # the methods the hint names do take the spec
        if not METHODS[other].mip:
            solve(spec, method=other, time_limit=20)


def test_the_command_line_refusal_exits_2(tmp_path) -> None:  # type: ignore[no-untyped-def]
    f = tmp_path / "overlap.part"
    f.write_text(spec_with("overlap"))
    p = run_part("solve", str(f), "--method", "metis")
    assert p.returncode == 2, p.stderr
    assert "does not model overlap" in p.stderr and "methods that model it:" in p.stderr
    assert "Traceback" not in p.stderr
    p = run_part("solve", str(f), "--method", "dp")
    assert p.returncode == 0, p.stderr


def test_pipedream_keeps_parameters_within_memory() -> None:
    """PipeDream's DP sees `memory hard` (issue 28): with 1.5 GB per GPU and 1 GB of
    parameters per node, no stage holds two nodes, so the three nodes need three stages;
    two GPUs cannot, and no split is returned as feasible."""
    spec = parse(spec_with("memory limits"))
    r = solve(spec, method="pipedream")
    assert not r.status.has_solution() or r.evaluation.feasible
    roomy = parse(spec_with("memory limits").replace("1.5 GB", "2.5 GB"))
    r = solve(roomy, method="pipedream")
    assert r.evaluation is not None and r.evaluation.feasible


@pytest.mark.parametrize("feature", WITH)
def test_the_refusal_points_at_the_feature(feature: str, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """file:line:column and a caret under the feature in the spec (the peers refuse all)."""
    from partdsl.cli.main import main

    f = tmp_path / "s.part"
    f.write_text(spec_with(feature))
    code = main(["solve", str(f), "--method", "metis", "-O", "repair=1"])
    err = capsys.readouterr().err
    if feature in ("memory limits", "colocation"):  # the repair models them
        assert code == 0, err
        return
    assert code == 2, err
    assert f"{f}:" in err and "^" in err, err

"""One objective entity (core/objectives.py): every table keyed by objective has a row for
every kind, and every layer that names an objective reads the entity (sense, unit, title,
spelling), so that adding an objective starts in one place and this test lists the rest."""
from __future__ import annotations

import pytest
from partdsl import PartError, parse
from partdsl.cli.report import objective_name
from partdsl.core import objectives
from partdsl.dsl.printer import to_part
from partdsl.methods.registry import METHODS
from partdsl.models.formulations import FORMULATIONS, formulation_for

SPEC = """graph g {{ node a {{ work 1 ms }} node b {{ work 2 ms }} a -> b }}
platform {{ device gpu[2] {{ link 1 GB/s }} device cpu[1] {{ host }} }}
{objective}
"""
SPELLED = {"bottleneck": "minimize bottleneck", "latency": "minimize latency",
           "task_latency": "minimize latency by tasks", "throughput": "maximize throughput batch 4 split 2"}


def test_every_kind_is_spelled_by_this_test() -> None:
    assert set(SPELLED) == set(objectives.NAMES)


@pytest.mark.parametrize("kind", objectives.NAMES)
def test_every_layer_has_a_row_for_every_objective(kind: str) -> None:
    spec = parse(SPEC.format(objective=SPELLED[kind]))
    o = spec.objective
    assert o.kind == kind and o.entity is objectives.kind(kind)
    assert o.unit == objectives.kind(kind).unit and o.sense in ("min", "max")
    assert objective_name(spec).startswith(o.entity.title)  # the report and `part check`
    assert parse(to_part(spec)).objective == o  # the printer writes what the parser reads
    assert formulation_for(spec) in FORMULATIONS.values()  # `exact`'s row
    takers = [m for m in METHODS.values() if kind in m.objectives]
    assert any(m.exhaustive for m in takers), "a method that proves optimality (brute)"
    assert any(m.portfolio for m in takers), "auto runs on it"


@pytest.mark.parametrize("kind", objectives.NAMES)
def test_solve_reports_the_entity_s_unit(kind: str) -> None:
    from partdsl.methods.solve import solve

    r = solve(parse(SPEC.format(objective=SPELLED[kind])), method="brute")
    assert r.status.value == "optimal"
    assert (r.unit, r.sense) == (objectives.kind(kind).unit, objectives.kind(kind).sense)


OWN = {"subgraphs": "subject to { subgraphs <= 2 }", "replicate": "subject to { replicate <= 2 }"}


@pytest.mark.parametrize("kind", objectives.NAMES)
@pytest.mark.parametrize("constraint", sorted(OWN))
def test_a_constraint_of_one_objective_is_refused_by_the_others(kind: str, constraint: str) -> None:
    """`Kind.takes` decides where `subgraphs` and `replicate` apply: the owner parses, every
    other objective is refused with the owner's spelling as the hint."""
    assert {c for k in objectives.KINDS for c in k.takes} == set(OWN)
    text = SPEC.format(objective=SPELLED[kind]) + OWN[constraint]
    owner = objectives.taking(constraint)
    if kind == owner.name:
        assert parse(text).objective.kind == kind
    else:
        with pytest.raises(PartError, match=f"applies to `{owner.written}`") as e:
            parse(text)
        assert owner.written in (e.value.hint or "")


@pytest.mark.parametrize("kind", objectives.NAMES)
def test_a_batch_is_written_where_the_objective_is_batched(kind: str) -> None:
    spec = parse(SPEC.format(objective=SPELLED[kind]))
    assert (" batch " in to_part(spec)) == spec.objective.entity.batched
    assert ("batch 4" in objective_name(spec)) == spec.objective.entity.batched

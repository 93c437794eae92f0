"""The bottleneck's crossing bound (methods/cut_bound.py): a bound below the brute-force
optimum over the evaluator's whole space, and above the class LP where a host would take
nodes whose transfers cost more than they save."""
from __future__ import annotations

import dataclasses
import math

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from partdsl import parse, solve
from partdsl.core.ir import Spec
from partdsl.kernels import brute_force
from partdsl.methods.bounds import bound, class_spread
from partdsl.methods.cut_bound import crossing_bound
from partdsl.runtime.deadline import Deadline

from tests.support.effort import examples
from tests.support.strategies import specs

CHAIN = """graph g {{
  node a {{ work 1 ms on acc; out 1 MB }}
  node b {{ work 1 ms on acc, 1 ms on cpu; out 1 MB }}
  node c {{ work 1 ms on acc }}
  a -> b
  b -> c
}}
platform {{ device acc[1] {{ link 1 GB/s }} device cpu[1] {{ {cpu} }} }}
minimize bottleneck {overlap}
"""


def test_a_host_that_would_take_a_node_for_free_pays_its_transfers() -> None:
    """b runs as fast on the host, so the class LP gives the accelerator a and c only
    (T >= 2); on the host b costs the accelerator a's tensor out and b's back in, 1 ms
    each, so the optimum keeps all three on the accelerator (3 ms), and so does the bound."""
    spec = parse(CHAIN.format(cpu="host", overlap=""))
    assert math.isclose(class_spread(spec), 2.0, rel_tol=1e-9)
    assert math.isclose(crossing_bound(spec), 3.0, rel_tol=1e-5) and crossing_bound(spec) <= 3.0
    assert math.isclose(bound(spec), crossing_bound(spec))
    assert math.isclose(solve(spec, method="brute").objective, 3.0)
    assert solve(spec, method="dp").gap < 1e-5  # the certificate the bound gives every method


def test_where_the_bound_does_not_apply_it_gives_nothing() -> None:
    """Under overlap a load is a max of compute and transfers, so crossings are not charged;
    a passed deadline keeps the two first cuts, still a bound."""
    assert crossing_bound(parse(CHAIN.format(cpu="host", overlap="overlap"))) == 0.0
    spec = parse(CHAIN.format(cpu="host", overlap=""))
    assert 0.0 < crossing_bound(spec, Deadline(at=0.0)) <= 3.0


def test_a_finished_bound_is_kept_per_spec_and_one_cut_short_is_not() -> None:
    """methods/bounds.py keeps a bound that ran to its end with its spec (every solve on
    the spec takes it), but not one its deadline cut short: that one is weaker."""
    text = CHAIN.format(cpu="host", overlap="")
    short = parse(text)
    cut = bound(short, Deadline(at=0.0))
    assert cut <= 3.0 and bound(short) == crossing_bound(short)  # recomputed in full, not the cut one
    assert bound(short) > cut
    spec = parse(text)
    first = bound(spec)
    assert bound(spec, Deadline(at=0.0)) == first  # kept: a passed deadline still gets the full bound
    assert bound(parse(text)) == first  # an equal spec is the same spec


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(specs(max_nodes=7, kinds=("bottleneck",), max_devices=4), st.one_of(st.none(), st.floats(1e8, 1e10)))
def test_the_crossing_bound_is_below_the_brute_force_optimum(spec: Spec, link: float | None) -> None:
    """On random mixed platforms (pins, forbids, memory, stage limits, colocation, training
    objectives), the second class a host or, with `link`, an accelerator that pays its
    own transfers."""
    if link is not None:
        acc, cpu = spec.platform.classes
        cpu = dataclasses.replace(cpu, host=False, link=link)
        spec = dataclasses.replace(spec, platform=dataclasses.replace(spec.platform, classes=(acc, cpu)))
    assume(brute_force.count(spec) <= 20_000)  # replicas multiply the candidates past brute's limit
    brute = solve(spec, method="brute", gap=0.0, time_limit=1e6)
    if brute.status.has_solution():
        value = crossing_bound(spec)
        assert value <= brute.objective * (1 + 1e-9) + 1e-12, (value, brute.objective)


def test_check_prints_the_bound_with_what_it_rests_on(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from partdsl.cli.main import main

    for cpu, overlap, basis, value in (("host", "", "from compute and the transfers between the two device classes", 3),
                                       ("host", "overlap", "from compute alone", 2)):
        f = tmp_path / "chain.part"
        f.write_text(CHAIN.format(cpu=cpu, overlap=overlap))
        assert main(["check", str(f)]) == 0
        line = [x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("bound")][0]
        assert basis in line and f"bound      {value}" in line, line

"""IR -> .part text -> IR is the identity; the Python builder and the parser agree."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from partdsl import GraphBuilder, SpecBuilder, parse, to_part
from partdsl.core.ir import Spec

from tests.support.strategies import specs


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(specs())
def test_generated_specs_round_trip(spec: Spec) -> None:
    text = to_part(spec)
    again = parse(text)
    assert again == spec, text
    assert to_part(again) == text


def test_builder_equals_parsed_text() -> None:
    text = """
    param k = 2
    graph tiny {
      node embed { work 1.2 ms on gpu, 9 ms on cpu; params 80 MB; out 2 MB }
      node block[1..3] { work 3 ms on gpu; params 28 MB; out 2 MB }
      node head { work 0.5 ms on gpu; out 4 KB; only gpu }
      embed -> block[1] -> ... -> block[3] -> head
    }
    platform { device gpu[k] { memory 16 GiB; link 12 GB/s } device cpu[1] { host } }
    minimize bottleneck
    subject to { acyclic; contiguous; memory hard; pin head to gpu[0] }
    """
    parsed = parse(text)
    g = GraphBuilder("tiny")
    g.node("embed", work={"gpu": "1.2 ms", "cpu": 9.0}, params="80 MB", out="2 MB")
    g.family("block", 1, 3, work={"gpu": 3.0}, params="28 MB", out="2 MB")
    g.node("head", work={"gpu": 0.5}, out="4 KB", only=["gpu"])
    g.chain("embed", *g.members("block"), "head")
    built = (SpecBuilder(g).device("gpu", 2, memory="16 GiB", link="12 GB/s").device("cpu", 1, host=True)
             .minimize("bottleneck").subject_to(acyclic=True, contiguous=True, pins={"head": ["gpu[0]"]})
             .build())
    # the builder has no params; everything else must be identical
    assert built.graph == parsed.graph
    assert built.platform == parsed.platform
    assert built.objective == parsed.objective
    assert built.constraints == parsed.constraints


def test_where_times_were_measured_survives_text_json_and_the_builder() -> None:
    """`graph g measured "..." {` (issue 72): parsed, printed back, kept by the JSON dump, given by the builder."""
    from partdsl.importers.graph_formats import graph_from_json, graph_to_json

    text = 'graph g measured "by part profile on cpu (torch 2.13.0)" {\n  node a { work 1 ms }\n' \
        "  node measured { work 1 ms }\n  a -> measured\n}\nplatform { device gpu[1] }\nminimize bottleneck\n"
    spec = parse(text)  # in the header, the word still names a node in the body
    assert spec.graph.measured == "by part profile on cpu (torch 2.13.0)"
    assert [nd.name for nd in spec.graph.nodes] == ["a", "measured"] and len(spec.graph.edges) == 1
    assert parse(to_part(spec)) == spec
    assert 'graph g measured "by part profile on cpu (torch 2.13.0)" {' in to_part(spec)
    assert parse(to_part(spec), fast=False) == spec  # Lark alone reads it the same
    assert graph_from_json(graph_to_json(spec.graph), "g").measured == spec.graph.measured
    built = GraphBuilder("g", measured=spec.graph.measured).node("a", 1.0).node("measured", 1.0).edge("a", "measured")
    assert built.build() == spec.graph
    assert parse(text.replace(' measured "by part profile on cpu (torch 2.13.0)"', "")).graph.measured == ""

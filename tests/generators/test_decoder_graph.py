"""`part generate transformer` (generators/decoder_graph.py): the operator graph of a GPT-style
decoder, its FLOPs against the textbook count and its weights against GPT-2 small's
published 124M parameters; the generated spec parses, round-trips and solves."""
from __future__ import annotations

from pathlib import Path

import pytest
from partdsl import PartError, parse, parse_file, solve, to_part
from partdsl.generators.decoder_graph import OPS_PER_LAYER, Decoder, decoder_spec

from tests.support import run_part


def test_counts_flops_and_gpt2_small_weights() -> None:
    m = Decoder()  # GPT-2 small: 12 layers, hidden 768, 12 heads, 1024 tokens, vocab 50257
    spec = decoder_spec(m, gpus=4)
    g = spec.graph
    assert len(g.nodes) == m.operators == OPS_PER_LAYER * 12 + 3 and len(g.edges) == 18 * 12 + 2
    by = {nd.name: nd for nd in g.nodes}
    s, h = 1024, 768
    products = sum(by[f"l1_{op}"].flops for op in ("q", "k", "v", "scores", "attend", "proj", "up", "down"))
    assert products == 24 * s * h * h + 4 * s * s * h  # Narayanan et al.'s count per layer, f = 4h
    # GPT-2 small has 124,439,808 parameters: token and position embeddings, 12 layers, the
    # final norm, the head tied to the token embedding. Here: no position embedding, and
    # the head's weights are its own node.
    elements = (sum(nd.params for nd in g.nodes) - by["lm_head"].params) / 2  # fp16
    assert elements == 124_439_808 - 1024 * 768
    assert spec.dense.params.sum() > 0 and (spec.dense.work[:, 0] > 0).all()


def test_residuals_and_attention_are_wired() -> None:
    g = decoder_spec(Decoder(layers=2, seq=16), gpus=2).graph
    edges = {(g.nodes[a].name, g.nodes[b].name) for a, b in g.edges}
    assert {("embed", "l1_ln1"), ("embed", "l1_add1"), ("l1_q", "l1_scores"), ("l1_k", "l1_scores"),
            ("l1_v", "l1_attend"), ("l1_add1", "l1_add2"), ("l1_add2", "l2_ln1"), ("l2_add2", "ln_f"),
            ("ln_f", "lm_head")} <= edges


def test_the_command_writes_a_spec_that_solves(tmp_path: Path) -> None:
    out = tmp_path / "gpt.part"
    p = run_part("generate", "transformer", "--layers", "3", "--seq", "64", "--gpus", "2", "-o", str(out))
    assert p.returncode == 0 and "45 nodes" in p.stderr, p.stderr
    spec = parse_file(out)
    assert spec.dense.n == 45 and parse(to_part(spec)).dense.n == 45
    r = solve(spec, method="dp", time_limit=30)
    assert r.evaluation.feasible and r.bound <= r.objective
    p = run_part("generate", "transformer", "--hidden", "100", "--heads", "12")
    assert p.returncode == 2 and "not a multiple of heads" in p.stderr


def test_bad_shapes_are_refused() -> None:
    with pytest.raises(PartError, match="layers, hidden"):
        decoder_spec(Decoder(layers=0))
    with pytest.raises(PartError, match="unknown objective"):
        decoder_spec(Decoder(layers=1), objective="throughput")

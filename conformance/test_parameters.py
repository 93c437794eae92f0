"""The import holds each model's weights once (issue 71, defect 6): GPT-2 ties its LM head
to its token embedding, and each reader counted the weight (1.64x GPT-2's parameters).
Now both readers `share` it: the spec's memory with the whole model on one device equals
the model's own parameter bytes as torch counts them (each tensor once), plus at most its
buffers (the rotary `inv_freq`, which the export may fold away); with the embedding and the
head on two devices each holds a copy."""
from __future__ import annotations

import numpy as np
import pytest
from support import FAMILIES, hf_model, part


@pytest.mark.parametrize("family", FAMILIES)
def test_one_device_holds_the_models_weights_once(exported, tmp_path, family: str) -> None:  # type: ignore[no-untyped-def]
    from partdsl import parse_file
    from partdsl.evaluator.evaluate import evaluate

    model = hf_model(family)
    held = sum(t.numel() * t.element_size() for t in model.parameters())
    buffers = sum(t.numel() * t.element_size() for t in model.buffers())
    spec_path = tmp_path / "m.part"
    part("convert", str(exported[family]), "--objective", "bottleneck", "--devices", "a100=2", "-o", str(spec_path))
    spec = parse_file(spec_path)
    d = spec.dense
    one = evaluate(spec, np.zeros(d.n, dtype=np.int64)).parts["a100[0]"]["memory"]
    assert held <= one <= held + buffers
    tied = model.config.tie_word_embeddings
    assert (d.shared is not None) == tied
    if tied:  # the embedding on one device, everything else on the other: a copy each
        sh = d.shared
        dev = np.ones(d.n, dtype=np.int64)
        dev[sh.node[0]] = 0
        two = evaluate(spec, dev).parts
        assert two["a100[0]"]["memory"] + two["a100[1]"]["memory"] == pytest.approx(one + sh.size[0], rel=1e-9)

"""torchtitan and PiPPy read the `fqn` export. torchtitan's own `_split_module`
(torchtitan/distributed/pipeline_parallel.py) on torchtitan's own Llama 3 builds the
planned chunks from `module_fqns_per_model_part`; `torch.distributed.pipelining.pipeline`
traces the Hugging Face model and splits it at `split_spec`. Each asserts: every parameter
on exactly one stage, the layers of each stage the plan's, the embedding first and the
head last."""
from __future__ import annotations

import re
from collections import Counter

import pytest
from support import FAMILIES, LAYER, LAYERS, TOKENS

DEVICES = ["a100=2", "a100=3", "h100=1,a100=3"]


def _layers(names: list[str], pattern: re.Pattern) -> list[int]:
    return sorted({int(m.group(1)) for n in names if (m := pattern.match(n))})


@pytest.mark.parametrize("devices,interleave", [(d, 1) for d in DEVICES] + [("a100=2", 2)])
def test_torchtitan_splits_its_own_llama_as_planned(plans, devices: str, interleave: int) -> None:  # type: ignore[no-untyped-def]
    """Interleaved too (issue 71.7): 2 chunks per rank, torchtitan's looped schedules."""
    from torchtitan.distributed.pipeline_parallel import _split_module
    from torchtitan.models.llama3 import llama3_configs

    plan = plans("llama", devices, interleave)
    parts = plan.export("fqn")["module_fqns_per_model_part"]
    if interleave > 1:
        assert len(parts) == 2 * interleave  # a100=2: P x V chunks
    model = llama3_configs["debugmodel"](attn_backend="flex").build()
    assert len(model.layers) == LAYERS
    chunks = [[n for n, _ in _split_module(model, names).named_parameters()] for names in parts]
    held = Counter(n for chunk in chunks for n in chunk)
    assert set(held) == {n for n, _ in model.named_parameters()} and set(held.values()) == {1}
    assert [_layers(chunk, re.compile(r"layers\.(\d+)\.")) for chunk in chunks] == plan.layers_per_chunk()
    assert any(n.startswith("tok_embeddings.") for n in chunks[0])
    assert any(n.startswith("lm_head.") for n in chunks[-1]) and any(n.startswith("norm.") for n in chunks[-1])


@pytest.mark.parametrize("family", FAMILIES)
def test_pippy_splits_the_hugging_face_model_as_planned(plans, family: str) -> None:  # type: ignore[no-untyped-def]
    import torch
    from support import hf_model
    from torch.distributed.pipelining import SplitPoint, pipeline

    plan = plans(family, "a100=3")
    doc = plan.export("fqn")
    model = hf_model(family)
    ids = torch.randint(0, 512, (1, TOKENS))
    pipe = pipeline(model, mb_args=(ids,), mb_kwargs={"use_cache": False},
                    split_spec={k: SplitPoint.BEGINNING for k in doc["split_spec"]})
    assert pipe.num_stages == len(doc["module_paths_per_model_part"])
    stages = [[n for n, _ in pipe.get_stage_module(s).named_parameters()] for s in range(pipe.num_stages)]
    # every parameter on one stage; a tied head (GPT-2's lm_head is its wte) is on the first
    # stage, as the embedding, and on the last, which PiPPy keeps in step
    held = Counter(n for st in stages for n in st)
    tied = {"lm_head.weight"} if model.config.tie_word_embeddings else set()
    assert set(held) == {n for n, _ in model.named_parameters(remove_duplicate=False)}
    assert {n for n, k in held.items() if k > 1} == tied
    assert all(tied <= set(st) for st in (stages[0], stages[-1]))
    dotted = re.compile(LAYER.pattern + r"\.")
    assert [_layers([n.replace("_", ".") for n in s], dotted) for s in stages] == plan.layers_per_chunk()
    assert any(re.search("embed_tokens|wte", n) for n in stages[0]) and any("lm_head" in n for n in stages[-1])

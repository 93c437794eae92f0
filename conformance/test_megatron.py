"""Megatron-Core reads the `megatron` export: its TransformerConfig parses and validates
the layout (pipeline_parallel_layer_layout.py) and the first/last stage counts, and the
stages it builds hold the plan's layers, the embedding first and the loss last."""
from __future__ import annotations

import pytest
from support import FAMILIES, LAYERS


def config(**pipeline):  # type: ignore[no-untyped-def]
    import torch
    from megatron.core.transformer.transformer_config import TransformerConfig

    return TransformerConfig(num_layers=pipeline.pop("num_layers", LAYERS), hidden_size=32, num_attention_heads=4,
                             pipeline_dtype=torch.float32, **pipeline)


@pytest.mark.parametrize("devices,interleave", [("a100=2", 1), ("a100=4", 1), ("h100=1,a100=2", 1), ("a100=2", 2)])
@pytest.mark.parametrize("family", FAMILIES)
def test_megatron_builds_the_planned_stages(plans, family: str, devices: str, interleave: int) -> None:  # type: ignore[no-untyped-def]
    """Interleaved too (issue 71.7: `part convert --interleave 2`): V virtual stages per rank."""
    from megatron.core.transformer.enums import LayerType

    plan = plans(family, devices, interleave)
    doc = plan.export("megatron")
    expected = plan.layers_per_chunk()
    c = config(num_layers=doc["num_layers"], pipeline_model_parallel_size=doc["pipeline_model_parallel_size"],
               pipeline_model_parallel_layout=doc["pipeline_model_parallel_layout"])
    layout = c.pipeline_model_parallel_layout
    p, v = layout.pipeline_model_parallel_size, layout.virtual_pipeline_model_parallel_size
    assert v == interleave
    stages = [layout.layout[rank][chunk] for chunk in range(v) for rank in range(p)]
    assert [s.count(LayerType.decoder) for s in stages] == [len(x) for x in expected]
    if v == 1:  # the layer ids each rank builds (get_layer_id_list reads the parallel state's VPP size)
        assert [layout.get_layer_id_list(pp_rank=r) for r in range(p)] == expected
    assert stages[0][0] == LayerType.embedding and stages[-1][-1] == LayerType.loss
    if "uneven_args" in doc:
        uneven = config(num_layers=doc["num_layers"], pipeline_model_parallel_size=p,
                        num_layers_in_first_pipeline_stage=doc["decoder_first_pipeline_num_layers"],
                        num_layers_in_last_pipeline_stage=doc["decoder_last_pipeline_num_layers"])
        assert uneven.num_layers_in_first_pipeline_stage == len(expected[0])


@pytest.mark.parametrize("counts", [[4, 2], [2, 4], [0, 6], [6, 0], [1, 2, 2, 1], [2, 0, 0, 4], [1, 3, 1, 1],
                                    [3, 3], [1, 4, 1], [0, 3, 3, 0]])
def test_uneven_counts_are_offered_exactly_when_megatron_builds_them(counts: list[int]) -> None:
    """Issue 71.2: `--decoder-first/last-pipeline-num-layers 0` were offered; Megatron refuses
    them. Offered must mean: TransformerConfig takes them and its get_num_layers_to_build
    gives every rank the plan's count (a ragged middle it would spread evenly)."""
    from megatron.core.transformer.transformer_block import get_num_layers_to_build
    from partdsl.plans.formats import _megatron_takes_uneven

    try:
        c = config(num_layers=sum(counts), pipeline_model_parallel_size=len(counts),
                   num_layers_in_first_pipeline_stage=counts[0], num_layers_in_last_pipeline_stage=counts[-1])
        built = [get_num_layers_to_build(c, pp_rank=r) for r in range(len(counts))]
    except ValueError:
        built = None
    assert _megatron_takes_uneven(counts) == (built == counts), built

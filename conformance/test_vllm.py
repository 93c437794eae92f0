"""vLLM reads the `vllm` export: with `VLLM_PP_LAYER_PARTITION` set as exported, vLLM's
own get_pp_indices (vllm/distributed/utils.py, which make_layers calls to build each
rank's layers and leave the rest as PPMissingLayer) gives every rank exactly the plan's
decoder layers. vLLM is installed without its serving dependencies (its wheel carries
CUDA kernels this tier never loads; pyzmq is the one import get_pp_indices needs)."""
from __future__ import annotations

import pytest
from support import FAMILIES, LAYERS


@pytest.mark.parametrize("devices", ["a100=2", "a100=4", "h100=1,a100=2"])
@pytest.mark.parametrize("family", FAMILIES)
def test_vllm_builds_the_planned_layers_on_each_rank(plans, family: str, devices: str,  # type: ignore[no-untyped-def]
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from vllm.distributed.utils import get_pp_indices

    plan = plans(family, devices)
    try:
        doc = plan.export("vllm")
    except AssertionError as refused:  # a rank without a decoder layer is refused, with the reason
        assert "holds no decoder layer" in str(refused) and "KV cache" in str(refused)
        assert any(not chunk for chunk in plan.layers_per_chunk())
        return
    monkeypatch.setenv("VLLM_PP_LAYER_PARTITION", doc["VLLM_PP_LAYER_PARTITION"])
    size = doc["pipeline_parallel_size"]
    built = [list(range(*get_pp_indices(LAYERS, r, size))) for r in range(size)]
    assert built == plan.layers_per_chunk()


def test_vllm_would_take_a_zero_layer_rank_so_the_export_refuses_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 71.3: vLLM itself accepts `0,10,6` and builds a rank with no layer (no KV
    cache); partdsl's export is the guard (tests/plans: the refusal)."""
    from vllm.distributed.utils import get_pp_indices

    monkeypatch.setenv("VLLM_PP_LAYER_PARTITION", "0,10,6")
    assert get_pp_indices(16, 0, 3) == (0, 0)

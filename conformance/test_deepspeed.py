"""DeepSpeed reads the `deepspeed` export: a `PipelineModule` over a decoder's layer specs
(embedding, the decoder layers, final norm, head), with `_partition_layers` overridden as
docs/plans.md shows, is built by one process per stage (gloo, CPU); each stage builds the
plan's layers, the embedding on the first and the norm and head on the last (issue 71.4:
the head fell outside `parts`)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support import LAYERS, free_port


def _stage(rank: int, world: int, port: int, parts: list[int], out: str) -> None:
    import deepspeed
    import torch
    from deepspeed.pipe import LayerSpec, PipelineModule

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world),
                      LOCAL_RANK=str(rank))
    deepspeed.init_distributed(dist_backend="gloo")

    class Planned(PipelineModule):  # docs/plans.md's override
        def _partition_layers(self, method: str = "uniform") -> None:
            self.parts = parts
            stage_id = self._topo.get_coord(self.global_rank).pipe
            self._set_bounds(start=self.parts[stage_id], stop=self.parts[stage_id + 1])

    specs = [LayerSpec(torch.nn.Embedding, 512, 32)] + [LayerSpec(torch.nn.Linear, 32, 32) for _ in range(LAYERS)] \
        + [LayerSpec(torch.nn.LayerNorm, 32), LayerSpec(torch.nn.Linear, 32, 512)]
    module = Planned(layers=specs, num_stages=world, loss_fn=torch.nn.functional.cross_entropy)
    Path(out, f"rank{rank}.json").write_text(json.dumps({"start": module._local_start, "stop": module._local_stop,
                                                         "built": len(module.forward_funcs)}))


@pytest.mark.parametrize("devices", ["a100=2", "a100=3", "h100=1,a100=3"])
def test_deepspeed_builds_the_planned_stages(plans, devices: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import torch.multiprocessing as mp

    plan = plans("llama", devices)
    doc = plan.export("deepspeed")
    assert len(doc["layers"]) == LAYERS + 3 and doc["layers"][-2:] == ["model.norm", "lm_head"]
    p = doc["num_stages"]
    mp.spawn(_stage, args=(p, free_port(), doc["parts"], str(tmp_path)), nprocs=p, join=True)
    built = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(p)]
    specs = [list(range(b["start"], b["stop"])) for b in built]
    assert [b["built"] for b in built] == [len(s) for s in specs]
    assert sorted(i for s in specs for i in s) == list(range(LAYERS + 3))  # every spec on one stage
    assert [[i - 1 for i in s if 1 <= i <= LAYERS] for s in specs] == plan.layers_per_chunk()
    assert specs[0][0] == 0 and specs[-1][-2:] == [LAYERS + 1, LAYERS + 2]


@pytest.mark.parametrize("seed", range(200))
def test_the_parameters_baseline_is_deepspeeds_partition_balanced(seed: int) -> None:
    """Issue 71.9: plans/baselines.py's `parameters` split is DeepSpeed's current one, the
    same boundaries as deepspeed.runtime.utils.partition_balanced on the same weights."""
    import numpy as np
    from deepspeed.runtime.utils import partition_balanced
    from partdsl.plans.baselines import deepspeed_balanced

    rng = np.random.default_rng(seed)
    n, p = int(rng.integers(1, 40)), int(rng.integers(1, 9))
    weights = (rng.integers(0, 6, n) if seed % 2 else rng.integers(1, 10**9, n)).tolist()
    assert deepspeed_balanced(np.array(weights, dtype=float), p) == [int(b) for b in partition_balanced(weights, p)]


def test_the_parameters_baseline_of_a_planned_llama_is_deepspeeds(plans) -> None:  # type: ignore[no-untyped-def]
    """Over the layer specs of an imported Llama, weighed by the parameters transformers
    gives each module, DeepSpeed's partition and the baseline's stages agree."""
    from deepspeed.runtime.utils import partition_balanced
    from partdsl.dsl.parser import parse_file
    from partdsl.plans.baselines import baseline
    from partdsl.plans.units import units
    from support import hf_model

    plan = plans("llama", "a100=3")
    model = hf_model("llama")
    specs = [model.model.embed_tokens, *model.model.layers, model.model.norm, model.lm_head]
    bounds = partition_balanced([sum(p.numel() for p in m.parameters()) for m in specs], 3)
    spec = parse_file(plan.spec)
    dev = baseline(spec, units(spec), "parameters", list(spec.platform.devices))
    index = {n: i for i, n in enumerate(spec.platform.devices)}
    by_layer = {}
    for nd, d in zip(spec.graph.nodes, dev):
        if nd.module and nd.module.startswith("model.layers."):
            by_layer.setdefault(int(nd.module.split(".")[2]), set()).add(int(d))
    stage_of_layer = [bounds.index(max(b for b in bounds[:-1] if b <= i + 1)) for i in range(len(specs) - 3)]
    assert [by_layer[i] for i in range(len(specs) - 3)] == [{index[f"a100[{s}]"]} for s in stage_of_layer]

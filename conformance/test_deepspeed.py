"""DeepSpeed reads the `deepspeed` export: a `PipelineModule` over a decoder's layer specs
(embedding, the decoder layers, final norm, head), with `_partition_layers` overridden as
docs/plans.md shows, is built by one process per stage (gloo, CPU); each stage builds the
plan's layers, the embedding on the first and the norm and head on the last (issue 71.4:
the head fell outside `parts`)."""
from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
from support import LAYERS


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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("devices", ["a100=2", "a100=3", "h100=1,a100=3"])
def test_deepspeed_builds_the_planned_stages(plans, devices: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import torch.multiprocessing as mp

    plan = plans("llama", devices)
    doc = plan.export("deepspeed")
    assert len(doc["layers"]) == LAYERS + 3 and doc["layers"][-2:] == ["model.norm", "lm_head"]
    p = doc["num_stages"]
    mp.spawn(_stage, args=(p, _free_port(), doc["parts"], str(tmp_path)), nprocs=p, join=True)
    built = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(p)]
    specs = [list(range(b["start"], b["stop"])) for b in built]
    assert [b["built"] for b in built] == [len(s) for s in specs]
    assert sorted(i for s in specs for i in s) == list(range(LAYERS + 3))  # every spec on one stage
    assert [[i - 1 for i in s if 1 <= i <= LAYERS] for s in specs] == plan.layers_per_chunk()
    assert specs[0][0] == 0 and specs[-1][-2:] == [LAYERS + 1, LAYERS + 2]

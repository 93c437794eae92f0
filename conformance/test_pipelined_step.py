"""A plan of partdsl's, executed (issue 71): a Llama planned on two devices, split where
the exported `split_spec` says by `torch.distributed.pipelining`, and trained one step
by two processes (gloo, on the CPU) under a GPipe schedule of two micro-batches. The
loss of each micro-batch, and the gradient of every parameter on its stage, equal the
unsplit model's to 1e-5."""
from __future__ import annotations

from pathlib import Path

import pytest
from support import TOKENS, free_port, hf_model, logits_only

MICRO, BATCH = 2, 4


def _data():  # type: ignore[no-untyped-def]
    import torch

    g = torch.Generator().manual_seed(1)
    return torch.randint(0, 512, (BATCH, TOKENS), generator=g), torch.randint(0, 512, (BATCH, TOKENS), generator=g)


def _loss(logits, labels):  # type: ignore[no-untyped-def]
    import torch

    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))


def _rank(rank: int, world: int, port: int, split: list[str], out: str) -> None:
    import os

    import torch
    import torch.distributed as dist
    from torch.distributed.pipelining import ScheduleGPipe, SplitPoint, pipeline

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    ids, labels = _data()
    pipe = pipeline(logits_only(hf_model("llama")), mb_args=(ids[:BATCH // MICRO],),
                    split_spec={"lm." + k: SplitPoint.BEGINNING for k in split})
    stage = pipe.build_stage(rank, torch.device("cpu"))
    schedule = ScheduleGPipe(stage, n_microbatches=MICRO, loss_fn=_loss)
    losses: list = []
    if rank == 0:
        schedule.step(ids)
    else:
        schedule.step(target=labels, losses=losses)
    grads = {n: p.grad for n, p in stage.submod.named_parameters()}
    torch.save({"losses": [x.item() for x in losses], "grads": grads}, f"{out}/rank{rank}.pt")
    dist.destroy_process_group()


def test_a_two_stage_training_step_from_the_exported_plan_equals_the_unsplit_model(plans, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import torch
    import torch.multiprocessing as mp

    plan = plans("llama", "a100=2")
    doc = plan.export("fqn")
    assert len(doc["module_paths_per_model_part"]) == 2, doc
    split = list(doc["split_spec"])
    assert split == [doc["module_paths_per_model_part"][1][0]]
    mp.spawn(_rank, args=(2, free_port(), split, str(tmp_path)), nprocs=2, join=True)
    got = [torch.load(tmp_path / f"rank{r}.pt") for r in range(2)]

    ids, labels = _data()
    model = logits_only(hf_model("llama"))
    m = BATCH // MICRO
    ref = [_loss(model(ids[i:i + m]), labels[i:i + m]) for i in range(0, BATCH, m)]
    (sum(ref) / MICRO).backward()  # the schedule scales each stage's gradients by 1 / micro-batches
    assert got[1]["losses"] == pytest.approx([x.item() for x in ref], abs=1e-5)
    want = {n.replace(".", "_"): p.grad for n, p in model.named_parameters()}
    seen = []
    for rank in got:
        for name, grad in rank["grads"].items():
            key = name.replace(".", "_")
            assert grad is not None and torch.allclose(grad, want[key], atol=1e-5), name
            seen.append(key)
    assert sorted(seen) == sorted(want)  # every parameter on exactly one stage
    assert any("embed_tokens" in n for n in got[0]["grads"]) and any("lm_head" in n for n in got[1]["grads"])

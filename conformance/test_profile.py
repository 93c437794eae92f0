"""`part profile` on the CPU (issue 72): a small Llama measured layer by layer, planned on
two stages from the profile, split there by torch.distributed.pipelining, and run. Each
stage the framework builds takes within 25% of the time the plan predicts for it (the
sum of its layers' measured forward and backward times), and a two-process GPipe step of
the plan runs. Every time is printed beside its prediction.

This machine's speed swings by 10-40% from one second to the next and by 1.5-4x from one
day to the next (a shared VM), so for the comparison the profiler (its Python API, the code
`part profile` runs) and the stages' timer alternate for ROUNDS rounds in one process; each
round's measured-to-predicted ratio compares two timings a few seconds apart, and the
median of those ratios is checked. (Medians over all rounds of each side, compared with
each other, mix a slow minute on one side with a quick one on the other: CI once saw 1.28x
where the rounds' own ratios had a median of 1.16x.)"""
from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

import pytest
from support import free_port, logits_only, part

SHAPE = dict(vocab_size=2048, hidden_size=256, intermediate_size=688, num_hidden_layers=4, num_attention_heads=8,
             num_key_value_heads=8, max_position_embeddings=512)
TOKENS, MICRO, RUNS, ROUNDS = 256, 2, 3, 13


def _model(folder: str):  # type: ignore[no-untyped-def]
    """The profiled Llama (random weights, seed 0) with its logits alone as output."""
    import torch
    import transformers as tf

    torch.manual_seed(0)
    return logits_only(tf.AutoModelForCausalLM.from_config(tf.AutoConfig.from_pretrained(folder)).train())


def _ids(samples: int):  # type: ignore[no-untyped-def]
    import torch

    return torch.randint(0, SHAPE["vocab_size"], (samples, TOKENS), generator=torch.Generator().manual_seed(1))


def _stage_ms(module, args: tuple) -> float:  # type: ignore[no-untyped-def]
    """One stage's forward and backward on one sample, ms: the median of RUNS after one."""
    import torch

    times = []
    for k in range(RUNS + 1):
        x = tuple(a.detach().requires_grad_(a.requires_grad) for a in args)
        t0 = time.perf_counter()
        out = module(*x)
        outs = [o for o in (out if isinstance(out, tuple) else (out,)) if o.requires_grad]
        torch.autograd.backward(outs, [torch.ones_like(o) for o in outs])
        if k >= 1:
            times.append((time.perf_counter() - t0) * 1e3)
        module.zero_grad(set_to_none=True)
    return statistics.median(times)


def _stages_as_built(folder: str, split: list[str]):  # type: ignore[no-untyped-def]
    """A timer of each stage of the split model, as torch.distributed.pipelining builds it,
    run alone on the inputs the stage before it hands on (a gradient asked for where the
    model asks for one: the hidden state, not the rotary cosines or the mask)."""
    from torch.distributed.pipelining import SplitPoint, pipeline

    pipe = pipeline(_model(folder), mb_args=(_ids(1),), split_spec={"lm." + k: SplitPoint.BEGINNING for k in split})
    names = [n for n, _ in pipe.split_gm.named_children()]
    seen: dict = {}
    hooks = [getattr(pipe.split_gm, n).register_forward_pre_hook(lambda m, a, n=n: seen.setdefault(n, a))
             for n in names]
    pipe(_ids(1))
    for h in hooks:
        h.remove()
    return lambda: [_stage_ms(getattr(pipe.split_gm, n), seen[n]) for n in names]


def _rank(rank: int, world: int, port: int, folder: str, split: list[str], out: str) -> None:
    import os

    import torch
    import torch.distributed as dist
    from torch.distributed.pipelining import ScheduleGPipe, SplitPoint, pipeline

    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    ids = _ids(MICRO)
    pipe = pipeline(_model(folder), mb_args=(ids[:1],), split_spec={"lm." + k: SplitPoint.BEGINNING for k in split})
    schedule = ScheduleGPipe(pipe.build_stage(rank, torch.device("cpu")), n_microbatches=MICRO,
                             loss_fn=lambda logits, labels: logits.float().mean() + 0 * labels.sum())
    steps = []
    for _ in range(4):
        dist.barrier()
        t0 = time.perf_counter()
        schedule.step(ids) if rank == 0 else schedule.step(target=ids)
        steps.append((time.perf_counter() - t0) * 1e3)
    if rank == world - 1:
        Path(out).write_text(json.dumps(steps[1:]))
    dist.destroy_process_group()


def test_a_profiled_llama_planned_on_two_stages_runs_at_the_predicted_stage_times(tmp_path: Path) -> None:
    import torch
    import torch.multiprocessing as mp
    import transformers as tf
    from partdsl.measure.profile import Options
    from partdsl.measure.profile import profile as measure

    folder = tmp_path / "llama"
    tf.LlamaConfig(**SHAPE, use_cache=False).save_pretrained(folder)
    profile, spec, answer = tmp_path / "profile.json", tmp_path / "llama.part", tmp_path / "answer.json"
    part("profile", str(folder), "--threads", "1", "--tokens", str(TOKENS), "--count", "2", "--repeat", str(RUNS),
         "-o", str(profile))
    doc = json.loads(profile.read_text())
    layers = {layer["module"]: layer for layer in doc["layers"]}
    assert list(layers) == ["model.embed_tokens"] + [f"model.layers.{i}" for i in range(4)] + ["model.norm", "lm_head"]
    model = _model(str(folder))
    assert sum(x["params_bytes"] for x in layers.values()) == sum(p.numel() * 4 for p in model.parameters())
    assert doc["measured"]["skipped"] == ["model.rotary_emb"] and doc["measured"]["threads"] == 1

    part("convert", str(profile), "--from", "layers", "-o", str(spec))
    assert "operators' times measured by part profile on " in part("check", str(spec))  # where the costs come from
    answer.write_text(part("solve", str(spec), "--json", "--time-limit", "60"))
    fqn = json.loads(part("export", str(spec), "--plan", str(answer), "--format", "fqn", "--json"))
    stages, split = fqn["module_paths_per_model_part"], list(fqn["split_spec"])
    assert len(stages) == 2 and split == [stages[1][0]]

    torch.set_num_threads(1)
    timer, rounds = _stages_as_built(str(folder), split), []
    for r in range(ROUNDS):
        again = {x["module"]: x for x in measure(str(folder), Options(tokens=TOKENS, threads=1, warmup=1,
                                                                       repeat=RUNS, link=1e9))["layers"]}
        rounds.append(([sum(again[m]["forward_ms"]["cpu"]["1"] + again[m]["backward_ms"]["cpu"]["1"] for m in stage)
                        for stage in stages], timer()))
        print(f"round {r}: predicted " + ", ".join(f"{x:.1f}" for x in rounds[-1][0]) + " ms; measured "
              + ", ".join(f"{x:.1f}" for x in rounds[-1][1]) + " ms")
    ratios = [statistics.median(m[s] / p[s] for p, m in rounds) for s in range(len(stages))]
    for s, ratio in enumerate(ratios):
        print(f"stage {s} ({', '.join(stages[s])}): measured / predicted, median of {ROUNDS} rounds: {ratio:.2f}x")
    assert all(ratio == pytest.approx(1, rel=0.25) for ratio in ratios), ratios

    mp.spawn(_rank, args=(2, free_port(), str(folder), split, str(tmp_path / "steps.json")), nprocs=2, join=True)
    steps = json.loads((tmp_path / "steps.json").read_text())
    fw = [sum(layers[m]["forward_ms"]["cpu"]["1"] for m in stage) for stage in stages]
    bw = [sum(layers[m]["backward_ms"]["cpu"]["1"] for m in stage) for stage in stages]
    gpipe = (MICRO + len(stages) - 1) * (max(fw) + max(bw))  # a GPipe step's forward and backward waves
    print(f"a GPipe step of {MICRO} micro-batches on 2 processes: predicted {gpipe:.1f} ms (transfers aside), "
          f"measured {statistics.median(steps):.1f} ms (runs: {', '.join(f'{t:.1f}' for t in steps)})")
    assert len(steps) == 3 and all(t > 0 for t in steps)


TOWER = '''
import torch


class Tower(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Linear(8, 64)
        self.blocks = torch.nn.ModuleList(torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU())
                                          for _ in range(3))
        self.head = torch.nn.Linear(64, 2)

    def forward(self, x):
        x = self.stem(x)
        for b in self.blocks:
            x = b(x)
        return self.head(x)


def make():
    return Tower(), torch.randn(1, 8)


def flat():
    return torch.nn.Linear(2, 2), torch.randn(1, 2)
'''


def test_a_callable_a_tied_gpt2_and_forward_only_profiles(tmp_path: Path) -> None:
    """A model from a Python file (module:function), GPT-2 whose head shares the embedding's
    weight (counted once), serving (`--no-backward`) and two micro-batch sizes."""
    import subprocess

    import transformers as tf
    from support import PART

    (tmp_path / "tower.py").write_text(TOWER)
    out = tmp_path / "tower.json"
    part("profile", f"{tmp_path / 'tower.py'}:make", "--micro-batch", "1,2", "--no-backward", "--count", "2",
         "--repeat", "2", "-o", str(out))
    doc = json.loads(out.read_text())
    assert [x["module"] for x in doc["layers"]] == ["stem", "blocks.0", "blocks.1", "blocks.2", "head"]
    assert all(set(x["forward_ms"]["cpu"]) == {"1", "2"} and "backward_ms" not in x for x in doc["layers"])
    assert [x["params_bytes"] for x in doc["layers"]] == [(8 * 64 + 64) * 4] + [(64 * 64 + 64) * 4] * 3 + [130 * 4]
    assert doc["layers"][-1]["output_bytes"] == 2 * 4  # one sample's two logits, fp32
    part("convert", str(out), "--from", "layers", "-o", str(tmp_path / "tower.part"))

    folder = tmp_path / "gpt2"
    tf.GPT2Config(vocab_size=1000, n_embd=64, n_layer=2, n_head=4, n_positions=128, bos_token_id=0,
                  eos_token_id=0).save_pretrained(folder)
    part("profile", str(folder), "--tokens", "32", "--repeat", "2", "-o", str(out))
    doc = json.loads(out.read_text())
    head = doc["layers"][-1]
    assert head["module"] == "lm_head" and head["params_bytes"] == 0  # tied to transformer.wte
    model = tf.AutoModelForCausalLM.from_config(tf.AutoConfig.from_pretrained(folder))
    assert sum(x["params_bytes"] for x in doc["layers"]) == sum(p.numel() * 4 for p in model.parameters())
    assert doc["measured"]["skipped"] == ["transformer.drop"]

    for source, says in ((f"{tmp_path / 'tower.py'}:flat", "has no nn.ModuleList of layers"),
                         (f"{tmp_path / 'nowhere.py'}:make", "cannot load"),
                         ("model.bin", "cannot read a model from 'model.bin'")):
        r = subprocess.run([*PART, "profile", source], capture_output=True, text=True)
        assert r.returncode == 2 and says in r.stderr and "Traceback" not in r.stderr, r.stderr

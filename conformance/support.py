"""What the conformance tests share: the models, the `part` command line, a plan."""
from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from pathlib import Path

PART = [sys.executable, "-m", "partdsl.cli.main"]
LAYERS = 6  # torchtitan's Llama 3 debug model has 6 layers too
TOKENS = 16


def hf_model(family: str):  # type: ignore[no-untyped-def]
    """A small causal LM of one family, random weights, seed 0, no KV cache."""
    import torch
    import transformers as tf

    shape = dict(vocab_size=512, hidden_size=32, intermediate_size=86, num_hidden_layers=LAYERS,
                 num_attention_heads=4, max_position_embeddings=64, use_cache=False)
    config = {"llama": lambda: tf.LlamaConfig(num_key_value_heads=4, **shape),
              "mistral": lambda: tf.MistralConfig(num_key_value_heads=2, sliding_window=None, **shape),
              "qwen2": lambda: tf.Qwen2Config(num_key_value_heads=2, **shape),
              "gpt2": lambda: tf.GPT2Config(vocab_size=512, n_embd=32, n_layer=LAYERS, n_head=4, n_positions=64,
                                            use_cache=False, bos_token_id=0, eos_token_id=0)}[family]()
    torch.manual_seed(0)
    model = {"llama": tf.LlamaForCausalLM, "mistral": tf.MistralForCausalLM, "qwen2": tf.Qwen2ForCausalLM,
             "gpt2": tf.GPT2LMHeadModel}[family](config)
    return model.eval()


def logits_only(model):  # type: ignore[no-untyped-def]
    """A causal LM with its logits alone as output, called on token ids: what
    torch.distributed.pipelining traces, so the last stage hands the loss a tensor."""
    import torch

    class Logits(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lm = model

        def forward(self, ids):  # type: ignore[no-untyped-def]
            return self.lm(input_ids=ids, use_cache=False).logits
    return Logits()


FAMILIES = ("llama", "mistral", "qwen2", "gpt2")  # GPT-2: a fused QKV whose split sends three tensors
LAYER = re.compile(r"(?:model\.layers|transformer\.h)\.(\d+)")  # a decoder layer's module path, and its number


def free_port() -> int:
    """A free TCP port on the loopback, for a process group's rendezvous."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def part(*args: str) -> str:
    r = subprocess.run([*PART, *args], capture_output=True, text=True)
    assert r.returncode == 0, f"part {' '.join(args)}: exit {r.returncode}\n{r.stderr}"
    return r.stdout


class Plans:
    """`part convert` / `solve` / `export` on one exported model and one platform."""

    def __init__(self, folder: Path, pt2: Path, devices: str, interleave: int = 1) -> None:
        self.spec = folder / "model.part"
        part("convert", str(pt2), "--objective", "bottleneck", "--devices", devices, "--group-by", "layer",
             "--interleave", str(interleave), "-o", str(self.spec))
        self.answer = folder / "answer.json"
        self.answer.write_text(part("solve", str(self.spec), "--json", "--time-limit", "60"))

    def export(self, fmt: str) -> dict:
        return json.loads(part("export", str(self.spec), "--plan", str(self.answer), "--format", fmt, "--json"))

    def layers_per_chunk(self) -> list[list[int]]:
        """The decoder layers (from 0) of each chunk, read from the plan's module paths."""
        paths = self.export("fqn")["module_paths_per_model_part"]
        return [[int(m.group(1)) for p in chunk if (m := LAYER.fullmatch(p))] for chunk in paths]

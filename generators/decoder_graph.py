"""LLM-like operator graphs: a decoder-only transformer (GPT-style, pre-norm) written out
operator by operator, for the scale work (issue 29) and the LLM studies. Nobody's trace:
the same analytic costs as the ONNX import (importers/onnx_ops.py, a multiply-add counts 2),
per sample of `seq` tokens, and the work of each node on each device class from the
classes' device profiles (importers/cost_model.py).

Per layer, 14 operators (s = seq, h = hidden, f = ffn, a = heads):
    ln1 (8 s h) -> q, k, v (2 s h^2 each, weights h^2) -> scores = q k^T (2 s^2 h)
    -> softmax (5 a s^2) -> attend = p v (2 s^2 h) -> proj (2 s h^2) -> add1 (s h, the
    residual from the layer's input) -> ln2 -> up (2 s h f) -> act (GELU, 8 s f)
    -> down (2 s f h) -> add2 (s h, the residual from add1)
so its matrix products are 24 s h^2 + 4 s^2 h FLOPs when f = 4 h (Narayanan et al.'s
count), and its weights 4 h^2 + 2 h f. Around the layers: the embedding (a gather of
V x h weights, no FLOPs), a final layer norm and the LM head (2 s h V, V x h weights).
Each operator states its GEMM's rows per sample (`rows`: s tokens; a s in attention, whose
heads are batched), so the cost model takes its efficiency from the shape (issue 72).
"""
from __future__ import annotations

from dataclasses import dataclass

from partdsl.core.errors import PartError
from partdsl.core.ir import Spec
from partdsl.dsl.builder import GraphBuilder, SpecBuilder

BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}
OPS_PER_LAYER = 14
HEADS = ("scores", "softmax", "attend")  # batched over heads: a * s rows


@dataclass(frozen=True)
class Decoder:
    """The shape of the model (GPT-2 small's by default)."""

    layers: int = 12
    hidden: int = 768
    heads: int = 12
    seq: int = 1024
    ffn: int | None = None  # 4 x hidden
    vocab: int = 50257
    dtype: str = "fp16"
    shaped: bool = True  # operators state their GEMM's rows (False: the batch model's costs, as before issue 72)

    def check(self) -> None:
        if self.layers < 1 or self.hidden < 1 or self.heads < 1 or self.seq < 1 or self.vocab < 1:
            raise PartError("a decoder needs layers, hidden, heads, seq and vocab >= 1", None,
                            "e.g. part generate transformer --layers 24 --hidden 1024 --heads 16")
        if self.hidden % self.heads:
            raise PartError(f"hidden {self.hidden} is not a multiple of heads {self.heads}", None,
                            "each head has hidden / heads dimensions")
        if self.dtype not in BYTES:
            raise PartError(f"unknown dtype '{self.dtype}'", None, "use " + ", ".join(BYTES))

    @property
    def f(self) -> int:
        return self.ffn or 4 * self.hidden

    @property
    def operators(self) -> int:
        return OPS_PER_LAYER * self.layers + 3


def decoder_graph(m: Decoder, name: str = "decoder") -> GraphBuilder:
    """The operator graph (module docstring), costs per sample."""
    m.check()
    s, h, f, a, b = m.seq, m.hidden, m.f, m.heads, BYTES[m.dtype]
    act, dt = float(s * h * b), m.dtype

    def rows(n: int) -> float | None:
        return float(n) if m.shaped else None

    g = GraphBuilder(name)
    g.node("embed", params=float(m.vocab * h * b), out=act, flops=0.0, dtype=dt)
    prev = "embed"
    for i in range(1, m.layers + 1):
        ops = {  # name: (flops, weights in elements, output elements)
            "ln1": (8.0 * s * h, 2 * h, s * h), "q": (2.0 * s * h * h, h * h + h, s * h),
            "k": (2.0 * s * h * h, h * h + h, s * h), "v": (2.0 * s * h * h, h * h + h, s * h),
            "scores": (2.0 * s * s * h, 0, a * s * s), "softmax": (5.0 * a * s * s, 0, a * s * s),
            "attend": (2.0 * s * s * h, 0, s * h), "proj": (2.0 * s * h * h, h * h + h, s * h),
            "add1": (1.0 * s * h, 0, s * h), "ln2": (8.0 * s * h, 2 * h, s * h),
            "up": (2.0 * s * h * f, h * f + f, s * f), "gelu": (8.0 * s * f, 0, s * f),
            "down": (2.0 * s * f * h, f * h + h, s * h), "add2": (1.0 * s * h, 0, s * h),
        }
        for op, (flops, weights, out) in ops.items():  # rows: the GEMM's, the heads batched in attention
            g.node(f"l{i}_{op}", params=float(weights * b), out=float(out * b), flops=flops, dtype=dt,
                   rows=rows(a * s if op in HEADS else s))
        n = f"l{i}_"
        for u, v in ((prev, "ln1"), ("ln1", "q"), ("ln1", "k"), ("ln1", "v"), ("q", "scores"), ("k", "scores"),
                     ("scores", "softmax"), ("softmax", "attend"), ("v", "attend"), ("attend", "proj"),
                     ("proj", "add1"), (prev, "add1"), ("add1", "ln2"), ("ln2", "up"), ("up", "gelu"),
                     ("gelu", "down"), ("down", "add2"), ("add1", "add2")):
            g.edge(u if u == prev else n + u, n + v)
        prev = n + "add2"
    g.node("ln_f", params=float(2 * h * b), out=act, flops=8.0 * s * h, dtype=dt, rows=rows(s))
    g.node("lm_head", params=float(m.vocab * h * b), out=float(s * m.vocab * b), flops=2.0 * s * h * m.vocab,
           dtype=dt, rows=rows(s))
    g.edge(prev, "ln_f")
    g.edge("ln_f", "lm_head")
    return g


def decoder_spec(m: Decoder, gpus: int = 8, profile: str = "a100", objective: str = "bottleneck") -> Spec:
    """The graph on `gpus` devices of a profile and one host CPU (a Xeon), under an objective:
    bottleneck (pipelined, memory hard) or latency."""
    if gpus < 1:
        raise PartError("a decoder spec needs at least one GPU", None, "e.g. --gpus 8")
    if objective not in ("bottleneck", "latency"):
        raise PartError(f"unknown objective '{objective}' for a decoder", None, "use bottleneck or latency")
    b = (SpecBuilder(decoder_graph(m)).device("gpu", gpus, profile=profile).device("cpu", 1, profile="xeon")
         .minimize(objective))
    return b.build()

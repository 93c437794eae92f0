"""Timing a model's layers where they run: whole forward and backward passes of the model,
with a time stamp where each layer starts. A layer's forward time runs from its start to
the next layer's start (or the pass's end), so the code between two layers (a rotary
embedding's cosines, a mask) counts to the layer before it, as it runs in that layer's
stage when a pipeline splits at the next layer's beginning. Backward stamps are taken
when the gradient of a layer's output is ready, which is where its backward starts.

Each time is the median over `repeat` passes after `warmup` passes; on CUDA every stamp
is synchronized. Forward passes record autograd (training); without backward, they run
under no_grad (serving). A layer's stash is the bytes its forward saves for backward,
parameters left out, each tensor once."""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable


@dataclass
class Timings:
    forward_ms: list[float]
    backward_ms: list[float]   # zeros without backward
    saved_bytes: list[int]


def tensors(x: Any) -> list:
    """The tensors in a module's output (a tensor, a tuple or list, a dict or ModelOutput)."""
    import torch

    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, dict):
        return [t for v in x.values() for t in tensors(v)]
    if isinstance(x, (tuple, list)):
        return [t for v in x for t in tensors(v)]
    return []


def _spans(stamps: list[tuple[int, float]], start: float, end: float, n: int) -> list[float]:
    """ms per layer: each stamp's span runs to the next stamp; the span before the first
    stamp goes to the first stamped layer, and the last span runs to `end`."""
    out = [0.0] * n
    if not stamps:
        return out
    bounds = [start] + [t for _, t in stamps[1:]] + [end]
    for k, (i, _) in enumerate(stamps):
        out[i] += (bounds[k + 1] - bounds[k]) * 1e3
    return out


class _Stamps:
    """Hooks that stamp each layer's forward start and its output gradient's arrival."""

    def __init__(self, modules: list, sync: Callable[[], None], params: set[int]) -> None:
        self.sync, self.params = sync, params
        self.fw: list[tuple[int, float]] = []
        self.bw: list[tuple[int, float]] = []
        self.saved: dict[tuple, tuple[int, int]] = {}
        self.current = 0
        self.handles = [h for i, m in enumerate(modules) for h in (
            m.register_forward_pre_hook(lambda _m, _a, i=i: self._start(i)),
            m.register_forward_hook(lambda _m, _a, out, i=i: self._watch(i, out)))]

    def _start(self, i: int) -> None:
        self.sync()
        self.fw.append((i, time.perf_counter()))
        self.current = i

    def _arrived(self, i: int) -> None:
        self.sync()
        self.bw.append((i, time.perf_counter()))

    def _watch(self, i: int, out: Any) -> None:
        for t in tensors(out):
            if t.requires_grad:
                t.register_hook(lambda g, i=i: self._arrived(i))
                return

    def _pack(self, t: Any) -> Any:
        key = (t.data_ptr(), tuple(t.shape), t.dtype)
        if t.data_ptr() not in self.params and key not in self.saved:
            self.saved[key] = (self.current, t.numel() * t.element_size())
        return t

    def close(self) -> None:
        for h in self.handles:
            h.remove()


def time_layers(model: Any, inputs: tuple, modules: list, warmup: int, repeat: int, backward: bool) -> Timings:
    """Each of `modules`' forward and backward times, ms, and stash bytes (module docstring)."""
    import torch

    cuda = any(t.is_cuda for t in tensors(inputs)) or any(p.is_cuda for p in model.parameters())
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    st = _Stamps(modules, sync, {p.data_ptr() for p in model.parameters()})
    n, fws, bws = len(modules), [], []
    try:
        for k in range(warmup + repeat):
            st.fw, st.bw, st.saved = [], [], {}
            sync()
            t0 = time.perf_counter()
            with torch.enable_grad() if backward else torch.no_grad(), \
                    torch.autograd.graph.saved_tensors_hooks(st._pack, lambda t: t):
                outs = [t for t in tensors(model(*inputs)) if t.requires_grad]
            sync()
            t1 = time.perf_counter()
            fw, saved = _spans(st.fw, t0, t1, n), [0] * n
            for i, b in st.saved.values():
                saved[i] += b
            bw = [0.0] * n
            if backward and outs:
                torch.autograd.backward(outs, [torch.ones_like(t) for t in outs])
                sync()
                bw = _spans(st.bw, t1, time.perf_counter(), n)
                model.zero_grad(set_to_none=True)
            if k >= warmup:
                fws.append(fw)
                bws.append(bw)
    finally:
        st.close()
    return Timings([statistics.median(c) for c in zip(*fws)], [statistics.median(c) for c in zip(*bws)], saved)

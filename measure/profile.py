"""`part profile`: a model measured layer by layer with torch on the local device, as a
partdsl-layers document (convert/layer_profile.py reads it; docs/importers.md).

Per layer: `forward_ms` and `backward_ms` per micro-batch size (the median of the runs),
`params_bytes` (each tied weight once, in the first layer that holds it),
`activation_bytes` (what its forward saves for backward, at the first micro-batch size)
and `output_bytes` (its output, at that size). `measured` records how: torch's version,
the device, threads, tokens, runs, and the parameter-free modules left out."""
from __future__ import annotations

import platform as host
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Callable

from partdsl.core.errors import PartError
from partdsl.measure.model_source import load, need_torch
from partdsl.measure.timing import tensors, time_layers
from partdsl.measure.units import capture


@dataclass
class Options:
    tokens: int = 128
    micro_batches: tuple[int, ...] = (1,)
    dtype: str = "fp32"
    device: str = "auto"         # auto: CUDA where present, else the CPU
    warmup: int = 2
    repeat: int = 5
    threads: int | None = None   # torch's intra-op threads (None: torch's default)
    count: int | None = None     # devices of this type in the plan (None: the CUDA devices, or 1)
    name: str | None = None      # the device type's name (None: cpu or gpu)
    backward: bool = True
    link: float | None = None    # bytes/s between two devices of the type (None: measured, link_rate)


def _device(torch: Any, want: str) -> tuple[str, str]:
    """(torch device, the device's name for the profile)."""
    if want == "auto":
        want = "cuda" if torch.cuda.is_available() else "cpu"
    if want.startswith("cuda"):
        if not torch.cuda.is_available():
            raise PartError("part profile --device cuda: torch finds no CUDA device here", None, "use --device cpu")
        return want, torch.cuda.get_device_name(torch.device(want))
    if want != "cpu":
        raise PartError(f"part profile: unknown device '{want}'", None, "use auto, cpu, cuda or cuda:N")
    return "cpu", _cpu_name()


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return host.processor() or host.machine() or "cpu"


def link_rate(torch: Any, dev: str, size: int = 64 << 20, repeat: int = 5) -> float:
    """Bytes/s of one copy between two devices of the type: cuda:0 -> cuda:1 where there are
    two GPUs, GPU -> host with one; on the CPU a copy in memory (stages that are processes of
    one host pass tensors through its memory). The best of `repeat` copies of `size` bytes."""
    import time

    src = torch.empty(size, dtype=torch.uint8, device=dev)
    if dev == "cpu":
        dst = torch.empty_like(src)
    else:
        dst = torch.empty(size, dtype=torch.uint8, device="cuda:1" if torch.cuda.device_count() > 1 else "cpu")
    best = float("inf")
    for _ in range(repeat):
        if dev != "cpu":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        dst.copy_(src)
        if dev != "cpu":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return size / best


def profile(source: str, opts: Options, progress: Callable[[str], None] | None = None) -> dict:
    """The partdsl-layers document of `source` measured under `opts` (module docstring)."""
    torch = need_torch()
    if opts.threads:
        torch.set_num_threads(opts.threads)
    dev, dev_name = _device(torch, opts.device)
    torch.manual_seed(0)
    model = load(source, opts.tokens, opts.dtype, dev)
    layers: list[dict] = []
    owned: set[int] = set()
    units, skipped = capture(model.module, model.inputs(opts.micro_batches[0]))  # outputs at the first size
    for b in opts.micro_batches:
        if progress:
            progress(f"micro-batch {b}: {opts.warmup} + {opts.repeat} passes of {model.name}")
        t = time_layers(model.module, model.inputs(b), [u.module for u in units], opts.warmup, opts.repeat,
                        opts.backward)
        for i, u in enumerate(units):
            if len(layers) <= i:
                layers.append(_layer(u, t.saved_bytes[i], owned))
            layers[i]["forward_ms"][str(b)] = round(t.forward_ms[i], 6)
            layers[i]["backward_ms"][str(b)] = round(t.backward_ms[i], 6)
    kind = opts.name or ("cpu" if dev == "cpu" else "gpu")
    for layer in layers:
        layer["forward_ms"] = {kind: layer["forward_ms"]}
        if opts.backward:
            layer["backward_ms"] = {kind: layer["backward_ms"]}
        else:
            del layer["backward_ms"], layer["activation_bytes"]
    count = opts.count or (torch.cuda.device_count() if dev != "cpu" else 1)
    facts: dict[str, Any] = {"count": count, "link_bytes_per_s": opts.link or round(link_rate(torch, dev))}
    if dev != "cpu":
        facts["memory_bytes"] = torch.cuda.get_device_properties(torch.device(dev)).total_memory
    return {"format": "partdsl-layers", "version": 1, "model": model.name, "dtype": opts.dtype,
            "measured": {"by": "part profile", "torch": torch.__version__, "device": dev_name, "torch_device": dev,
                         "threads": torch.get_num_threads(), "tokens": opts.tokens,
                         "micro_batches": list(opts.micro_batches), "warmup": opts.warmup, "repeat": opts.repeat,
                         "skipped": skipped, "link": "given" if opts.link else "measured (link_rate)",
                         "date": datetime.now(timezone.utc).isoformat(timespec="seconds")},
            "devices": {kind: facts}, "layers": layers}


def _layer(u: Any, saved: int, owned: set[int]) -> dict:
    """A layer's entry from its first measurement: bytes, and room for the times."""
    params = 0
    for p in u.module.parameters():
        if p.data_ptr() not in owned:
            owned.add(p.data_ptr())
            params += p.numel() * p.element_size()
    return {"name": u.name, "module": u.name, "forward_ms": {}, "backward_ms": {}, "params_bytes": params,
            "activation_bytes": saved, "output_bytes": sum(x.numel() * x.element_size() for x in tensors(u.output))}

"""`part profile MODEL -o profile.json`: time each layer's forward and backward with torch
on the local device (CUDA where present, else the CPU) and write the partdsl-layers
profile `part convert --from layers` reads (measure/profile.py; docs/importers.md)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from partdsl.cli.common import EXIT_OK
from partdsl.core.errors import PartError


def _sizes(text: str) -> tuple[int, ...]:
    try:
        out = tuple(int(x) for x in text.split(","))
    except ValueError:
        out = ()
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(f"'{text}' is not a list of positive integers (write e.g. 1,2,4)")
    return out


def add(sub) -> None:  # type: ignore[no-untyped-def]
    p = sub.add_parser("profile", help="measure a model's layers with torch on this machine (a transformers config "
                       "or a Python callable) and write a partdsl-layers profile to plan from")
    p.add_argument("model", help="a transformers config.json (or its folder; random weights), or module:function / "
                   "file.py:function returning an nn.Module or (module, example_input for one sample)")
    p.add_argument("--tokens", type=int, default=128,
                   help="tokens per sample when the input is token ids (default 128)")
    p.add_argument("--micro-batch", type=_sizes, default=(1,), metavar="B[,B...]",
                   help="micro-batch sizes to time (default 1); each layer gets a time per size")
    p.add_argument("--dtype", default="fp32", choices=["fp32", "bf16", "fp16"], help="the weights' and activations' "
                   "dtype (default fp32)")
    p.add_argument("--device", default="auto", help="auto (CUDA where present, else cpu), cpu, cuda or cuda:N")
    p.add_argument("--threads", type=int, help="torch's CPU threads (default: torch's own choice)")
    p.add_argument("--warmup", type=int, default=2, help="untimed runs before the timed ones (default 2)")
    p.add_argument("--repeat", type=int, default=5, help="timed runs; each time is their median (default 5)")
    p.add_argument("--no-backward", dest="backward", action="store_false",
                   help="forward only (serving): no backward times, no stashed activations")
    p.add_argument("--type", dest="name", metavar="NAME", help="the device type's name in the profile (default: cpu or "
                   "gpu); name a device profile (h100, a100, ...) to plan with its memory and link")
    p.add_argument("--count", type=int, metavar="N", help="devices of this type to plan for (default: the CUDA devices "
                   "found, or 1)")
    p.add_argument("--link", metavar="RATE", help="bandwidth between two devices of the type, e.g. 25GB/s (default: "
                   "measured: a copy GPU to GPU, GPU to host with one GPU, or in memory on the CPU)")
    p.add_argument("--progress", action="store_true", help="progress on stderr even when not a terminal")
    p.add_argument("--output", "-o", metavar="FILE", help="where to write the profile (default: stdout)")
    p.set_defaults(func=run, json=False)


def run(args: argparse.Namespace) -> int:
    from partdsl.cli.common import progress_printer
    from partdsl.convert.formats import rate_of
    from partdsl.measure.profile import Options, profile

    for flag in ("warmup", "repeat", "tokens", "count", "threads"):
        v = getattr(args, flag)
        if v is not None and v < (0 if flag == "warmup" else 1):
            raise PartError(f"part profile --{flag} {v}: must be {'>= 0' if flag == 'warmup' else 'positive'}", None,
                            f"give --{flag} a {'non-negative' if flag == 'warmup' else 'positive'} integer")
    opts = Options(tokens=args.tokens, micro_batches=args.micro_batch, dtype=args.dtype, device=args.device,
                   warmup=args.warmup, repeat=args.repeat, threads=args.threads, count=args.count, name=args.name,
                   backward=args.backward, link=rate_of("link", args.link) if args.link else None)
    doc = profile(args.model, opts, progress_printer(args))
    text = json.dumps(doc, indent=1) + "\n"
    if args.output:
        Path(args.output).write_text(text)
        b = str(args.micro_batch[0])
        fw = sum(t[b] for layer in doc["layers"] for t in layer["forward_ms"].values())
        print(f"wrote {args.output}: {len(doc['layers'])} layers of {doc['model']} on {doc['measured']['device']}, "
              f"forward {fw:.3f} ms at micro-batch {b} (plan from it: part convert {args.output} --from layers)", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return EXIT_OK

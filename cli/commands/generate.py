"""`part generate randwire`: a RandWire network (DiviML's RWNNs, dsl/randwire.py) as a .part spec."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from partdsl.cli.common import EXIT_OK


def add(sub) -> None:  # type: ignore[no-untyped-def]
    p = sub.add_parser("generate", help="write a generated workload as a .part spec (randwire: DiviML's RWNNs)")
    p.add_argument("kind", choices=["randwire"])
    p.add_argument("--model", default="er", choices=["er", "ws", "ba"], help="random graph of each module (default er)")
    p.add_argument("--size", type=int, default=10, metavar="N", help="nodes per module (default 10)")
    p.add_argument("--modules", type=int, default=1, metavar="Q", help="modules in a chain (default 1)")
    p.add_argument("--channels", type=int, default=1, metavar="C", help="edges between modules (default 1)")
    p.add_argument("--variant", default="sdep", choices=["sdep", "wdep"], help="channel dependence (Fig. 2)")
    p.add_argument("-p", type=float, default=0.2, help="ER and WS probability (default 0.2)")
    p.add_argument("-k", type=int, default=4, help="WS neighbours (default 4)")
    p.add_argument("-m", type=int, default=5, help="BA edges per new node (default 5)")
    p.add_argument("--objective", default="latency", choices=["latency", "throughput"])
    p.add_argument("--batch", type=int, default=1, metavar="B", help="throughput batch (default 1)")
    p.add_argument("--split", type=int, default=1, metavar="K", help="chunks of the batch (default 1)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output", "-o", metavar="FILE")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from partdsl.core.validate import validate
    from partdsl.dsl.printer import to_part
    from partdsl.dsl.randwire import RandWire, randwire_spec

    rw = RandWire(model=args.model, size=args.size, modules=args.modules, channels=args.channels,
                  variant=args.variant, p=args.p, k=args.k, m=args.m, seed=args.seed)
    spec = randwire_spec(rw, args.objective, args.batch, args.split)
    validate(spec)
    what = (f"RandWire {args.model.upper()} {args.variant}, {args.modules} module(s) of {args.size} nodes, "
            f"{args.channels} channel(s), made by\n#   part generate randwire --model {args.model} --size {args.size} "
            f"--modules {args.modules} --channels {args.channels} --variant {args.variant} -p {args.p:g} "
            f"-k {args.k} -m {args.m} --objective {args.objective} --batch {args.batch} --split {args.split} "
            f"--seed {args.seed}")
    text = to_part(spec, header=what)
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return EXIT_OK

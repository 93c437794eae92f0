"""`part generate randwire|transformer|regal`: a RandWire network (DiviML's RWNNs,
generators/randwire.py), an LLM-like decoder's operator graph (generators/decoder_graph.py) or a
REGAL-style MTPP instance (Archer App. C.2, generators/regal.py) as a .part spec."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from partdsl.cli.common import EXIT_OK


def add(sub) -> None:  # type: ignore[no-untyped-def]
    p = sub.add_parser("generate", help="write a generated workload as a .part spec (randwire: DiviML's RWNNs; "
                       "transformer: a GPT-style decoder, operator by operator; regal: Archer et al.'s "
                       "REGAL-style MTPP graphs)")
    p.add_argument("kind", choices=["randwire", "transformer", "regal"])
    p.add_argument("--model", default="er", choices=["er", "ws", "ba"], help="random graph of each module (default er)")
    p.add_argument("--size", type=int, metavar="N", help="randwire: nodes per module (default 10); regal: nodes "
                   "(default 100; the paper's graphs have 50-200)")
    p.add_argument("--modules", type=int, default=1, metavar="Q", help="modules in a chain (default 1)")
    p.add_argument("--channels", type=int, default=1, metavar="C", help="edges between modules (default 1)")
    p.add_argument("--variant", default="sdep", choices=["sdep", "wdep"], help="channel dependence (Fig. 2)")
    p.add_argument("-p", type=float, default=0.2, help="ER and WS probability (default 0.2)")
    p.add_argument("-k", type=int, default=4, help="WS neighbours (default 4)")
    p.add_argument("-m", type=int, default=5, help="BA edges per new node (default 5)")
    p.add_argument("--regime", default="paper", choices=["paper", "roofline"], help="randwire node times: paper "
                   "(default: scaled so DiviML Table I's network takes its 211.7 ms per image on the best device) "
                   "or roofline (the analytic cost model's, about 30x less)")
    t = p.add_argument_group("transformer (GPT-2 small's shape by default)")
    t.add_argument("--layers", type=int, default=12)
    t.add_argument("--hidden", type=int, default=768)
    t.add_argument("--heads", type=int, default=12)
    t.add_argument("--seq", type=int, default=1024, help="tokens per sample")
    t.add_argument("--ffn", type=int, help="MLP width (default 4 x hidden)")
    t.add_argument("--vocab", type=int, default=50257)
    t.add_argument("--dtype", default="fp16", choices=["fp16", "bf16", "fp32"])
    t.add_argument("--gpus", type=int, default=8, help="GPUs of --profile, beside one host CPU (default 8)")
    t.add_argument("--profile", default="a100", help="the GPUs' device profile (default a100)")
    r = p.add_argument_group("regal (Archer et al. App. C.2; --model er|ba|ws, --size, --seed)")
    r.add_argument("--stages", type=int, default=4, metavar="K", help="identical pipeline stages (default 4)")
    r.add_argument("--degree", type=float, default=3.0, help="mean degree of the random graph (default 3)")
    r.add_argument("--work", default="appendix", choices=["appendix", "sampled"], help="node work: App. C.2's "
                   "formula (default), or N(50, 10) like the tensors, the scale of REGAL's README example")
    r.add_argument("--filter", action="store_true", help="REGAL's hardness filter: try --seed, --seed + 1, ... "
                   "and write the first graph with room for improvement on REGAL's placement-and-scheduling task "
                   "(kernels/schedule/room.py)")
    r.add_argument("--tries", type=int, default=100, metavar="N", help="--filter: seeds to try (default 100)")
    p.add_argument("--objective", choices=["latency", "throughput", "bottleneck"],
                   help="randwire: latency (default) or throughput; transformer: bottleneck (default) or latency")
    p.add_argument("--batch", type=int, default=1, metavar="B", help="throughput batch (default 1)")
    p.add_argument("--split", type=int, default=1, metavar="K", help="chunks of the batch (default 1)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output", "-o", metavar="FILE")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from partdsl.core.validate import validate
    from partdsl.dsl.printer import to_part

    if args.kind == "transformer":
        spec, what = _transformer(args)
    elif args.kind == "regal":
        spec, what = _regal(args)
    else:
        spec, what = _randwire(args)
    validate(spec)
    text = to_part(spec, header=what)
    if args.output:
        Path(args.output).write_text(text)
        print(f"wrote {args.output}: {spec.dense.n:,} nodes, {len(spec.graph.edges):,} edges", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def _transformer(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from partdsl.generators.decoder_graph import Decoder, decoder_spec

    m = Decoder(args.layers, args.hidden, args.heads, args.seq, args.ffn, args.vocab, args.dtype)
    spec = decoder_spec(m, args.gpus, args.profile, args.objective or "bottleneck")
    what = (f"A GPT-style decoder, {m.layers} layers of 14 operators, hidden {m.hidden}, {m.heads} heads, "
            f"{m.seq} tokens, made by\n#   part generate transformer --layers {m.layers} --hidden {m.hidden} "
            f"--heads {m.heads} --seq {m.seq} --ffn {m.f} --vocab {m.vocab} --dtype {m.dtype} --gpus {args.gpus} "
            f"--profile {args.profile} --objective {spec.objective.kind}")
    return spec, what


def _randwire(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from partdsl.generators.randwire import RandWire, randwire_spec

    args.objective = args.objective or "latency"
    if args.objective == "bottleneck":
        from partdsl.core.errors import PartError

        raise PartError("randwire specs are DiviML's: --objective latency or throughput", None)
    args.size = 10 if args.size is None else args.size
    rw = RandWire(model=args.model, size=args.size, modules=args.modules, channels=args.channels,
                  variant=args.variant, p=args.p, k=args.k, m=args.m, seed=args.seed, regime=args.regime)
    spec = randwire_spec(rw, args.objective, args.batch, args.split)
    what = (f"RandWire {args.model.upper()} {args.variant}, {args.modules} module(s) of {args.size} nodes, "
            f"{args.channels} channel(s), made by\n#   part generate randwire --model {args.model} --size {args.size} "
            f"--modules {args.modules} --channels {args.channels} --variant {args.variant} -p {args.p:g} "
            f"-k {args.k} -m {args.m} --objective {args.objective} --batch {args.batch} --split {args.split} "
            f"--seed {args.seed} --regime {args.regime}")
    return spec, what


def _regal(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from partdsl.core.errors import PartError
    from partdsl.generators.regal import regal_spec

    n = 100 if args.size is None else args.size
    for flag, value, least in (("--size", n, 2), ("--stages", args.stages, 1), ("--tries", args.tries, 1)):
        if value < least:
            raise PartError(f"{flag} {value}: must be at least {least}", None, f"e.g. {flag} {max(least, 4)}")
    if args.objective not in (None, "bottleneck"):
        raise PartError("regal specs are Archer et al.'s MTPP: --objective bottleneck (or leave it out)", None)
    seed, kept = args.seed, ""
    if args.filter:
        from partdsl.generators.regal import regal_graph
        from partdsl.kernels.schedule.room import first_kept

        found = first_kept(lambda s: regal_graph(n, args.model, s, args.degree, args.work), args.seed, args.tries,
                           say=lambda line: print(f"--filter: {line}", file=sys.stderr, flush=True))
        if found is None:
            raise PartError(f"--filter: none of seeds {args.seed}..{args.seed + args.tries - 1} gives a graph with "
                            "room for improvement", None, "try more seeds (--tries) or another --model or --size")
        seed, _, room = found
        kept = f"\n# kept by REGAL's filter (seed {seed}): {room.describe()}"
    spec = regal_spec(n, args.stages, args.model, seed, args.degree, args.work)
    what = (f"A REGAL-style MTPP instance (Archer et al. App. C.2): {args.model.upper()}, {n} nodes, "
            f"{args.stages} stages, made by\n#   part generate regal --model {args.model} --size {n} "
            f"--stages {args.stages} --degree {args.degree:g} --work {args.work} --seed {seed}{kept}")
    return spec, what

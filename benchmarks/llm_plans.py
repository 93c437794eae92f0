"""partdsl's pipeline plan beside the splits people make today (issue 31, item 6): a
Llama-style decoder (hidden 4096, 32 layers, vocabulary 128,256; analytic costs, a GELU MLP
of width 14,336) on 2 x 4 GPUs of two generations, planned layer by layer
(`--group-by layer`) for pipelined throughput (bottleneck) or serving latency, against Megatron's uniform
split, vLLM's even split and DeepSpeed's `parameters` split, each over the order of the GPUs
that suits it best (every order of the two generations over the ranks is tried), each scored
by the evaluator. Prints a markdown table: the layers per stage,
the objective, its ratio to partdsl's, and partdsl's certificate; then the Megatron layout
and torchtitan module lists of partdsl's plan.

    .venv/bin/python benchmarks/llm_plans.py --time-limit 30
    .venv/bin/python benchmarks/llm_plans.py --objective latency --seq 512 --time-limit 30
    .venv/bin/python benchmarks/llm_plans.py --layers 16 --fast h100 --slow a100 --time-limit 10

or any spec `part convert --group-by layer` wrote, e.g. Llama 3 8B's program (docs/plans.md):

    part convert examples/llama8b.pt2 --objective bottleneck --devices h100=4,a100=4 \
        --optimizer adam --group-by layer -o llama8b.part
    .venv/bin/python benchmarks/llm_plans.py --spec llama8b.part --time-limit 30
"""
from __future__ import annotations

import argparse
import json
import time

import needs_partdsl  # noqa: F401  (a plain message when partdsl is not installed)
import numpy as np


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--ffn", type=int, default=14336)
    ap.add_argument("--vocab", type=int, default=128256)
    ap.add_argument("--seq", type=int, default=4096)
    ap.add_argument("--fast", default="h100", help="device profile of the first server (4 GPUs)")
    ap.add_argument("--slow", default="a100", help="device profile of the second server (4 GPUs)")
    ap.add_argument("--objective", choices=("bottleneck", "latency"), default="bottleneck",
                    help="bottleneck: training throughput (pipelined); latency: one request served end to end")
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--spec", metavar="FILE", help="a spec grouped by layer instead of the analytic decoder "
                    "(its objective and platform are used)")
    args = ap.parse_args()

    from partdsl.dsl.builder import SpecBuilder
    from partdsl.evaluator.evaluate import evaluate
    from partdsl.generators.decoder_graph import Decoder, decoder_graph
    from partdsl.methods.solve import solve
    from partdsl.plans.baselines import BASELINES, best_ranks
    from partdsl.plans.formats import fqn, megatron
    from partdsl.plans.grouping import group_by
    from partdsl.plans.stages import pipeline
    from partdsl.plans.units import units

    if args.spec:
        from partdsl.dsl.parser import parse_file

        spec = grouped = parse_file(args.spec)
        args.objective = spec.objective.kind
        what = f"{args.spec}: {spec.dense.n:,} operators on " + " + ".join(
            f"{k.count} x {k.name}" for k in spec.platform.classes)
    else:
        model = Decoder(layers=args.layers, hidden=args.hidden, heads=32, seq=args.seq, ffn=args.ffn,
                        vocab=args.vocab, dtype="bf16")
        spec = (SpecBuilder(decoder_graph(model, "llama")).device(args.fast, 4, profile=args.fast)
                .device(args.slow, 4, profile=args.slow).minimize(args.objective).build())
        grouped = group_by(spec, "layer")
        what = (f"{args.layers}-layer decoder, hidden {args.hidden}, vocabulary {args.vocab:,}, seq {args.seq}: "
                f"{spec.dense.n:,} operators on 4 x {args.fast} + 4 x {args.slow}")
    u = units(grouped)
    t = time.perf_counter()
    r = solve(grouped, time_limit=args.time_limit)
    took = time.perf_counter() - t
    devs = np.array([spec.platform.devices.index(r.assignment[nd.name]) for nd in spec.graph.nodes])
    ours = evaluate(spec, devs).objective
    print(what + "\n")
    def order(line) -> str:  # type: ignore[no-untyped-def]
        return ", ".join(c.device.split("[")[0] for c in line.chunks)

    print("| split | layers per stage | GPU order | " + f"{args.objective} (ms) | / partdsl |")
    print("|---|---|---|---|---|")
    for kind in BASELINES:
        _, dev = best_ranks(grouped, u, kind)
        ev = evaluate(spec, dev)
        line = pipeline(grouped, dev, u)
        per = ", ".join(str(len(c.layers(u))) for c in line.chunks)
        ok = "" if ev.feasible else " (infeasible: " + str(ev.violations[0]) + ")"
        print(f"| {kind} | {per} | {order(line)} | {ev.objective:.3f}{ok} | {ev.objective / ours:.3f} |")
    line = pipeline(grouped, devs, u)
    per = ", ".join(str(len(c.layers(u))) for c in line.chunks)
    print(f"| partdsl ({r.chosen or r.method}, {took:.1f} s) | {per} | {order(line)} | {ours:.3f} | 1.000 |")
    print(f"\npartdsl's certificate: bound {r.bound:.3f} ms, gap {100 * r.gap:.2f}% ({r.stopped.value})")
    print("ranks:", ", ".join(c.device for c in line.chunks))
    print("megatron:", megatron(line)["pipeline_model_parallel_layout"])
    print("torchtitan:", json.dumps(fqn(line)["module_fqns_per_model_part"]))


if __name__ == "__main__":
    main()

"""Archer et al. Table 3 on synthetic REGAL-style graphs (App. C.2: random graph models,
50-200 nodes, tensor sizes ~ N(50, 10), node cost from tensor costs plus a random
fraction): for each k, the geometric mean over graphs of every lower bound of the
hierarchy as a fraction of the best solution found (`part bound` on each instance).

    python benchmarks/regal_bounds.py                         # 4 graphs, k in 2,4,8,16, 30 s per MIP
    python benchmarks/regal_bounds.py --graphs 8 --time-limit 120 --k 2,4,8,16,32,64
"""
from __future__ import annotations

import argparse
import math
import time

import needs_partdsl  # noqa: F401  (a plain message if partdsl is missing)

NAMES = ("simple", "lp", "bottleneck", "bottleneck_guess", "exact")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphs", type=int, default=4)
    ap.add_argument("--k", default="2,4,8,16")
    ap.add_argument("--time-limit", type=float, default=30.0, help="seconds per MIP (bottleneck-guess: all k)")
    ap.add_argument("--models", default="er,ba,ws")
    ap.add_argument("--workers", type=int, default=None, help="processes for the guess MIPs (default: cores)")
    args = ap.parse_args()
    from partdsl.generators.regal import regal_spec
    from partdsl.methods.hierarchy import hierarchy

    models = args.models.split(",")
    sizes = [50 + (150 * i) // max(args.graphs - 1, 1) for i in range(args.graphs)]  # 50 .. 200 nodes
    ks = [int(k) for k in args.k.split(",")]
    frac: dict[tuple[str, int], list[float]] = {}
    secs: dict[tuple[str, int], list[float]] = {}
    print(f"{args.graphs} graphs ({', '.join(f'{models[i % len(models)]}-{n}' for i, n in enumerate(sizes))}); "
          f"{args.time_limit:g} s per MIP", flush=True)
    for k in ks:
        for i, n in enumerate(sizes):
            spec = regal_spec(n, k, models[i % len(models)], seed=i)
            t = time.perf_counter()
            h = hierarchy(spec, time_limit=args.time_limit, workers=args.workers)
            for name in NAMES:
                f = h.fraction(name)
                if f is not None:
                    frac.setdefault((name, k), []).append(f)
                    secs.setdefault((name, k), []).append(h.bounds[name].seconds)
            print(f"  k={k:<3} {spec.graph.name:18} best {h.best:10.2f} ({h.best_method:5}) "
                  + " ".join(f"{nm}={h.fraction(nm) or 0:.3f}" for nm in NAMES)
                  + f"  [{time.perf_counter() - t:.0f} s]", flush=True)
    print()
    print(f"{'geometric mean / best':24}" + "".join(f"{'k=' + str(k):>10}" for k in ks))
    for name in NAMES:
        cells = []
        for k in ks:
            xs = frac.get((name, k), [])
            cells.append(f"{math.exp(sum(math.log(max(x, 1e-12)) for x in xs) / len(xs)):10.4f}" if xs else f"{'-':>10}")
        print(f"{name:24}" + "".join(cells))
    print(f"{'mean seconds':24}")
    for name in NAMES:
        print(f"  {name:22}" + "".join(f"{sum(secs.get((name, k), [0])) / max(len(secs.get((name, k), [])), 1):10.1f}"
                                       for k in ks))


if __name__ == "__main__":
    main()

"""Kernel benchmarks: each method's value and time on the 8 published throughput
workloads next to the published optimum and the exact MIP's value and proven bound
(HiGHS, --mip-seconds each), and the speed targets on synthetic graphs.

    python benchmarks/kernels.py                 # everything (the DP on InceptionV3 takes minutes)
    python benchmarks/kernels.py --quick         # skip the slow rows
    python benchmarks/kernels.py --numpy         # the pure NumPy fallback (PARTDSL_NO_NUMBA=1)
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
import needs_partdsl  # noqa: E402,F401  (a plain message if partdsl is missing)

PUBLISHED = {"bert24_inference": 17.79, "resnet50_inference": 33.77, "inceptionv3_inference": 51.55,
             "gnmt_inference": 32.91, "bert24_training": 41.75, "resnet50_training": 78.63,
             "inceptionv3_training": 122.76, "gnmt_training": 107.00}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(ROOT / "data"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--numpy", action="store_true")
    ap.add_argument("--mip-seconds", type=float, default=60.0, help="time limit of the exact MIP per file")
    args = ap.parse_args()
    if args.numpy:
        os.environ["PARTDSL_NO_NUMBA"] = "1"
    from partdsl import parse_file, solve
    from partdsl.convert.to_part import dnn_partitioning_to_part

    methods = [("exact", {}), ("topo", {}), ("dp", {}), ("dpl", {}), ("slicegraph", {}), ("random", {"samples": 100}),
               ("brkga", {"population": 20, "generations": 20}), ("mla_weighted", {}), ("pipedream", {}),
               ("greedy", {}), ("local_search", {"restarts": 2, "passes": 5}), ("load_search", {})]
    tmp = Path(tempfile.mkdtemp())
    print(f"{'workload':22} {'published':>9} " + " ".join(f"{m:>17}" for m, _ in methods))
    for name, pub in PUBLISHED.items():
        f = Path(args.data) / "dnn-partitioning" / "throughput" / f"{name}.json"
        path = tmp / f"{name}.part"
        path.write_text(dnn_partitioning_to_part(f, relative_to=tmp))
        spec = parse_file(path)
        cells = []
        for m, opts in methods:
            if args.quick and m in ("dp", "local_search") and ("inception" in name):
                cells.append(f"{'skipped':>17}")
                continue
            t = time.perf_counter()
            r = solve(spec, method=m, options=opts, time_limit=args.mip_seconds if m == "exact" else 1200)
            if m == "exact":  # the MIP's value and proven bound, so every method's gap is visible
                cells.append(f"{r.objective:7.2f}>={r.bound:6.2f} {time.perf_counter() - t:5.0f}s")
            else:
                cells.append(f"{r.objective:9.2f} {time.perf_counter() - t:6.1f}s ")
        print(f"{name:22} {pub:9.2f} " + " ".join(cells), flush=True)

    from partdsl.generators.regal import regal_spec
    from partdsl.kernels.bottleneck.order_search import brkga, random_orders, slicegraph

    print("\nspeed targets on REGAL-style graphs (value, seconds)")
    for n, k, label, fn, kw in [(2000, 64, "SliceGraph n=2000 k=64", slicegraph, {}),
                                (500, 8, "random-1000 n=500 k=8", random_orders, {"samples": 1000}),
                                (500, 8, "BRKGA 100x100 n=500 k=8", brkga, {})]:
        if args.quick and "SliceGraph" not in label:
            continue
        spec = regal_spec(n, k, seed=1)
        t = time.perf_counter()
        last = None
        for _lab, arr in fn(spec, **kw):
            last = arr
        from partdsl import evaluate

        print(f"  {label:28} {evaluate(spec, last).objective:12.1f} {time.perf_counter() - t:8.2f}s", flush=True)


if __name__ == "__main__":
    main()

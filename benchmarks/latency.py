"""Latency benchmarks on the 4 published `latency/` workloads (Tarnawski et al. Table 4):
the published IP (Gurobi, 60 minutes) and its gap, the greedy (`fill`), the max-load DP
split (`maxload_dp`), `latency_search`, and `exact` on HiGHS and SCIP at a cap; each with
its value, proven bound, certified gap and time, and the ratio value / published IP.

    python benchmarks/latency.py                         # 10-minute cap per exact run
    python benchmarks/latency.py --cap 60 --solvers highs  # a quick look
    python benchmarks/latency.py --files bert24_inference --search-time 30

Every bound printed is proven (the path segmentation bound or a MIP's dual bound); a run
stopped at its cap prints its incumbent and bound, never passed off as optimal.
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
import needs_partdsl  # noqa: E402,F401  (a plain message if partdsl is missing)

# workload: (IP value, IP gap at stop, greedy, max-load DP split), data folder README / Table 4
PUBLISHED = {"bert24_inference": (100.22, "<1%", 100.22, 108.03),
             "resnet50_inference": (1191.02, "93.1%", 4197.06, 1443.79),
             "inceptionv3_inference": (1318.08, "93.5%", 2485.24, 1621.74),
             "gnmt_inference": (225.6, "<1%", 268.50, 244.33)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(ROOT / "data"))
    ap.add_argument("--cap", type=float, default=600.0, help="seconds per exact run (default 10 minutes)")
    ap.add_argument("--search-time", type=float, default=120.0, help="seconds for latency_search")
    ap.add_argument("--solvers", default="highs,scip")
    ap.add_argument("--files", default=",".join(PUBLISHED))
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    from partdsl import parse_file, solve
    from partdsl.convert.to_part import dnn_partitioning_to_part

    tmp = Path(tempfile.mkdtemp())
    head = (f"{'workload':22} {'method':16} {'value':>9} {'bound':>9} {'gap':>7} {'time':>8} {'/ IP':>7}  "
            "published")
    print(head)
    print("-" * len(head))
    for name in args.files.split(","):
        ip, ip_gap, greedy, dp = PUBLISHED[name]
        out = tmp / f"{name}.part"
        out.write_text(dnn_partitioning_to_part(Path(args.data) / "dnn-partitioning" / "latency" / f"{name}.json",
                                                "latency", relative_to=tmp))
        spec = parse_file(out)
        print(f"{name:22} {'published IP':16} {ip:9.2f} {'':>9} {ip_gap:>7} {'>1h' if ip_gap != '<1%' else '':>8} "
              f"{1.0:7.3f}")
        runs = [("fill", {}, f"greedy {greedy:.2f}"), ("maxload_dp", {}, f"max-load DP {dp:.2f}"),
                ("latency_search", {"time_limit": args.search_time}, "")]
        runs += [("exact", {"time_limit": args.cap, "solver": s}, s) for s in args.solvers.split(",") if s]
        for method, kw, note in runs:
            r = solve(spec, method=method, seed=args.seed, **kw)
            label = method if method != "exact" else f"exact ({kw['solver']})"
            gap = f"{100 * r.gap:.1f}%" if r.gap != float("inf") else "inf"
            print(f"{'':22} {label:16} {r.objective:9.2f} {r.bound:9.2f} {gap:>7} {r.wall_time_s:7.1f}s "
                  f"{r.objective / ip:7.3f}  {note}", flush=True)


if __name__ == "__main__":
    main()

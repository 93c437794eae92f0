"""MIP benchmarks on the 8 published throughput workloads (Tarnawski et al. Table 1):
Tarnawski's max-load IP, contiguous and non-contiguous (`--split any`), on HiGHS and on
SCIP, each run to a 1% gap or the time cap, next to the published optimal contiguous and
best non-contiguous values. Model build time is printed apart from solve time.

    python benchmarks/mip.py                          # 20-minute cap per run (hours in total)
    python benchmarks/mip.py --cap 60 --solvers highs # a quick look
    python benchmarks/mip.py --files bert24_inference,gnmt_inference --progress
    python benchmarks/mip.py --record runs.jsonl ...; python benchmarks/mip.py --report runs.jsonl

Targets (issue 3): the contiguous value matches the published optimum on every file; the
non-contiguous value is at least as good as the published one. A run that stops at the cap
prints its incumbent and proven bound: nothing is passed off as optimal.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
import needs_partdsl  # noqa: E402,F401  (a plain message if partdsl is missing)

# workload: (optimal contiguous, best non-contiguous), from the data folder's README
PUBLISHED = {"bert24_inference": (17.79, 17.71), "resnet50_inference": (33.77, 33.31),
             "inceptionv3_inference": (51.55, 51.52), "gnmt_inference": (32.91, 31.68),
             "bert24_training": (41.75, 39.79), "resnet50_training": (78.63, 76.65),
             "inceptionv3_training": (122.76, 117.72), "gnmt_training": (107.00, 88.47)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(ROOT / "data"))
    ap.add_argument("--cap", type=float, default=1200.0, help="seconds per run (default 20 minutes)")
    ap.add_argument("--gap", type=float, default=0.01)
    ap.add_argument("--solvers", default="highs,scip")
    ap.add_argument("--splits", default="contiguous,any")
    ap.add_argument("--files", default=",".join(PUBLISHED))
    ap.add_argument("--threads", type=int, default=None, help="solver threads (default: the solver's own)")
    ap.add_argument("--progress", action="store_true", help="each run's progress on stderr (incumbents, bounds)")
    ap.add_argument("--record", metavar="FILE.jsonl",
                    help="append one JSON line per finished run (so a long table survives an interruption)")
    ap.add_argument("--report", metavar="FILE.jsonl[,FILE.jsonl]",
                    help="print the recorded runs as one markdown table (no solving)")
    args = ap.parse_args()
    if args.report:
        report([json.loads(line) for f in args.report.split(",") for line in Path(f).read_text().splitlines()])
        return
    from partdsl import parse_file, solve
    from partdsl.convert.to_part import dnn_partitioning_to_part
    from partdsl.models import maxload

    tmp = Path(tempfile.mkdtemp())
    head = (f"{'workload':22} {'split':10} {'solver':6} {'published':>9} {'value':>9} {'bound':>9} {'gap':>7} "
            f"{'build':>7} {'total':>8}  verdict")
    print(head)
    print("-" * len(head))
    for name in args.files.split(","):
        f = Path(args.data) / "dnn-partitioning" / "throughput" / f"{name}.json"
        for split in args.splits.split(","):
            path = tmp / f"{name}_{split}.part"
            path.write_text(dnn_partitioning_to_part(f, split=split, relative_to=tmp))
            spec = parse_file(path)
            t = time.perf_counter()
            mip, _ = maxload.build(spec)
            build = time.perf_counter() - t
            pub = PUBLISHED[name][0 if split == "contiguous" else 1]
            for solver in args.solvers.split(","):
                t = time.perf_counter()
                r = solve(spec, method="exact", solver=solver, time_limit=args.cap, gap=args.gap, threads=args.threads,
                          progress=_stamped(f"{name} {split} {solver}") if args.progress else None)
                total = time.perf_counter() - t
                if split == "contiguous":
                    verdict = ("matches" if abs(r.objective - pub) <= 0.005 else
                               "within the gap" if abs(r.objective - pub) <= args.gap * pub else
                               "worse" if r.objective > pub else "BETTER than the published optimum?")
                else:
                    verdict = ("at least as good" if r.objective <= pub + 0.005 else
                               "published value below our proven bound" if r.bound > pub + 0.005 else "worse")
                if r.status.value != "optimal":
                    verdict += f" (stopped: {r.stopped}, {mip.A.shape[0]:,} rows)"
                print(f"{name:22} {split:10} {solver:6} {pub:9.2f} {r.objective:9.2f} {r.bound:9.2f} "
                      f"{100 * r.gap:6.2f}% {build:6.1f}s {total:7.1f}s  {verdict}", flush=True)
                if args.record:
                    with open(args.record, "a") as out:
                        out.write(json.dumps({"workload": name, "split": split, "solver": solver, "cap": args.cap,
                                              "gap_target": args.gap, "published": pub, "value": r.objective,
                                              "bound": r.bound, "gap": r.gap, "status": r.status.value,
                                              "stopped": r.stopped, "rows": mip.A.shape[0], "build_s": build,
                                              "total_s": total, "verdict": verdict}) + "\n")


def report(runs: list[dict]) -> None:
    """Markdown: one row per workload, value >= bound (time or "cap") per split and solver."""
    cols = [(split, solver) for split in ("contiguous", "any") for solver in ("highs", "scip")
            if any(r["split"] == split and r["solver"] == solver for r in runs)]
    names = {"contiguous": "contiguous", "any": "non-contig.", "highs": "HiGHS", "scip": "SCIP"}
    print("| workload | " + " | ".join(f"{names[sp]}, {names[so]}" for sp, so in cols)
          + " | published contiguous | published non-contig. |")
    print("|---" * (len(cols) + 3) + "|")
    for name, (pub_c, pub_a) in PUBLISHED.items():
        cells = []
        for split, solver in cols:
            r = next((r for r in runs if (r["workload"], r["split"], r["solver"]) == (name, split, solver)), None)
            if r is None:
                cells.append("-")
                continue
            when = "cap" if r["stopped"] == "time limit" else f"{r['total_s']:.0f} s"
            better = split == "any" and r["value"] < pub_a - 0.005
            value = f"**{r['value']:.2f}**" if better else f"{r['value']:.2f}"
            cells.append(f"{value} >= {r['bound']:.2f} ({when})")
        if any(c != "-" for c in cells):
            print(f"| {name} | " + " | ".join(cells) + f" | {pub_c:.2f} | {pub_a:.2f} |")


def _stamped(run: str):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    return lambda msg: print(f"  [{run} {time.perf_counter() - t0:7.1f}s] {msg}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()

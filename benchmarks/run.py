"""Benchmarks: time each stage on the real workloads and print the ratio against a saved
baseline run, side by side (speed is measured here, never asserted in tests).

    python benchmarks/run.py                   # compare against benchmarks/baseline.json
    python benchmarks/run.py --save-baseline   # record this machine's numbers as the baseline
    python benchmarks/run.py --data DIR        # folder holding dnn-partitioning/ (default data/, the vendored copy)
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
import needs_partdsl  # noqa: E402,F401  (a plain message if partdsl is missing)
from partdsl import evaluate, parse_file, solve  # noqa: E402
from partdsl.convert.to_part import dnn_partitioning_to_part  # noqa: E402
from partdsl.core.dense import Dense  # noqa: E402
from ratios import print_ratios  # noqa: E402

BASELINE = Path(__file__).with_name("baseline.json")


def best_of(fn: Callable[[], object], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def measure(data: Path) -> dict[str, dict[str, float]]:
    rows: dict[str, dict[str, float]] = {}
    tmp = Path(tempfile.mkdtemp())
    for f in sorted((data / "throughput").glob("*.json")):
        path = tmp / f"{f.stem}.part"
        path.write_text(dnn_partitioning_to_part(f, relative_to=tmp))
        spec = parse_file(path)
        rng = np.random.default_rng(0)
        assign = rng.integers(0, len(spec.platform.devices), len(spec.graph.nodes))
        r = solve(spec)
        rows[f.stem] = {
            "nodes": len(spec.graph.nodes),
            "parse_s": best_of(lambda: parse_file(path)),
            "dense_s": best_of(lambda: Dense.build(spec)),
            "evaluate_ms": 1e3 * best_of(lambda: evaluate(spec, assign), 20),
            "solve_topo_s": best_of(lambda: solve(spec), 3),
            "topo_value": r.objective,
        }
        print(f"  measured {f.stem}", file=sys.stderr)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(ROOT / "data"))
    ap.add_argument("--save-baseline", action="store_true")
    args = ap.parse_args()
    rows = measure(Path(args.data) / "dnn-partitioning")
    print_ratios(rows, BASELINE, ["parse_s", "dense_s", "evaluate_ms", "solve_topo_s"], save=args.save_baseline,
                 lead=lambda name, r: f"{name:24} {int(r['nodes']):5d}", lead_head=f"{'workload':24} {'n':>5}",
                 trail=lambda r: f" {r['topo_value']:11.4f}", trail_head=f" {'topo value':>11}")

if __name__ == "__main__":
    main()

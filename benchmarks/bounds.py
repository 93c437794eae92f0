"""The certificate's cost: the cheap bound every answer carries (methods/bounds.py; the
latency path bound, kernels/latency/path_bound.py; the contiguous path bound,
kernels/bottleneck/path_bound.py, where the tree has it), its value, time and peak memory on
each bundled workload (layer and operator graphs, contiguous as the paper's), and with
--against an older tree's, side by side with the ratio.

    python benchmarks/bounds.py                                # this tree
    git archive 40f8659 | tar -x -C /tmp/old/partdsl           # an older tree as package partdsl
    python benchmarks/bounds.py --against /tmp/old             # both, the old one in a subprocess

A faster bound must give the same value; a bound the change meant to strengthen shows
"higher", and any "LOWER" is a bug. Times are one run each, so two runs on a busy machine
can differ by 2x.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
import needs_partdsl  # noqa: E402,F401  (a plain message if partdsl is missing)


def measure(data: Path) -> dict[str, dict[str, float]]:
    """Each workload's bound (the path bound under latency), seconds, and the peak RSS after it."""
    from partdsl import parse_file
    from partdsl.convert.to_part import dnn_partitioning_to_part
    from partdsl.kernels.latency.path_bound import path_bound
    from partdsl.methods.bounds import bound
    try:
        from partdsl.kernels.bottleneck.path_bound import contiguous_path_bound
    except ImportError:  # an older tree
        def contiguous_path_bound(spec):  # type: ignore[no-untyped-def]
            return 0.0

    out: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for sub, objective in (("throughput", "bottleneck"), ("throughput-operators", "bottleneck"),
                               ("latency", "latency"), ("latency-operators", "latency")):
            for src in sorted((data / sub).glob("*.json")):
                path = Path(tmp) / f"{sub}-{src.stem}.part"
                path.write_text(dnn_partitioning_to_part(src, objective, relative_to=Path(tmp)))
                spec = parse_file(path)
                t0 = time.perf_counter()
                value = path_bound(spec)[0] if objective == "latency" else max(bound(spec), contiguous_path_bound(spec))
                out[f"{sub}/{src.stem}"] = {"bound": value, "seconds": time.perf_counter() - t0,
                                            "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(ROOT / "data" / "dnn-partitioning"))
    ap.add_argument("--against", metavar="DIR", help="a folder holding an older tree as package partdsl")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # the --against subprocess's output
    a = ap.parse_args()
    if a.json:
        print(json.dumps(measure(Path(a.data))))
        return 0
    ours = measure(Path(a.data))
    old: dict[str, dict[str, float]] = {}
    if a.against:
        env = {**os.environ, "PYTHONPATH": a.against}
        run = subprocess.run([sys.executable, __file__, "--json", "--data", a.data], env=env, capture_output=True,
                             text=True, cwd=a.against)
        if run.returncode:
            sys.exit(f"the tree in {a.against} failed:\n{run.stderr}")
        old = json.loads(run.stdout)
    print(f"{'workload':38s} {'bound':>12s} {'seconds':>8s} {'peak MiB':>9s}"
          + (f" {'old bound':>12s} {'old s':>8s} {'old/new':>8s}" if old else ""))
    for name, r in ours.items():
        line = f"{name:38s} {r['bound']:12.6g} {r['seconds']:8.2f} {r['peak_mib']:9.0f}"
        if name in old:
            o = old[name]
            same = "" if o["bound"] == r["bound"] else "  higher" if r["bound"] > o["bound"] else "  LOWER"
            line += f" {o['bound']:12.6g} {o['seconds']:8.2f} {o['seconds'] / max(r['seconds'], 1e-9):8.1f}{same}"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

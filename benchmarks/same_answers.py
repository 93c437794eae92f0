"""Answers before and after a refactor: `part check --json` and `part solve --json` (the
default method, seed 0) on every file in examples/ and on every bundled workload
(data/dnn-partitioning, converted by `part convert`). Objective, bound and status must
be identical.

    python benchmarks/same_answers.py --save before.json      # on the old tree
    python benchmarks/same_answers.py --compare before.json   # on the new one: exit 1 on a difference

same_answers_before.json is the tree before issue 70's reshape (2c3d422), saved with
`--time-limit 60 --methods dp,greedy,single,fill,maxload_dp,heft,eft,met,mla`.

`auto` under a time limit is an anytime answer: two runs of one tree differ where the limit
stops it (a bound a few 0.1% apart). `--methods dp,greedy,heft,...` solves every case with
each listed method as well, methods whose answer does not depend on the clock, so a
difference there is a change in the code, not in the machine's speed.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PART = [sys.executable, "-m", "partdsl.cli.main"]
KEEP = ("status", "objective", "bound", "method")  # what a solve must reproduce
CHECK_KEEP = ("ok", "nodes", "edges", "devices", "objective", "bound")


def cases(tmp: Path) -> list[tuple[str, Path]]:
    out = [(f"examples/{p.name}", p) for p in sorted((ROOT / "examples").glob("*.part"))]
    data = ROOT / "data" / "dnn-partitioning"
    for sub, objective in (("throughput", "bottleneck"), ("latency", "latency")):
        for src in sorted((data / sub).glob("*.json")):
            dst = tmp / f"{sub}_{src.stem}.part"
            subprocess.run([*PART, "convert", str(src), "--objective", objective, "-o", str(dst)], check=True)
            out.append((f"{sub}/{src.name}", dst))
    return out


def solve(path: Path, limit: float, method: str | None) -> dict:
    """One `part solve --json`: what it must reproduce, and its exit code."""
    how = ["--method", method] if method else []
    run = subprocess.run([*PART, "solve", str(path), "--json", "--seed", "0", "--time-limit", str(limit), *how],
                         capture_output=True, text=True)
    out = json.loads(run.stdout or "{}")
    return {"solve": {k: out.get(k) for k in KEEP}, "exit": run.returncode}


def answers(limit: float, methods: list[str]) -> dict[str, dict]:
    got: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as d:
        for name, path in cases(Path(d)):
            t0 = time.monotonic()
            check = json.loads(subprocess.run([*PART, "check", str(path), "--json"], capture_output=True,
                                              text=True).stdout or "{}")
            got[name] = {"check": {k: check.get(k) for k in CHECK_KEEP}, **solve(path, limit, None)}
            print(f"{name:45s} {time.monotonic() - t0:6.1f} s  {got[name]['solve']}", file=sys.stderr, flush=True)
            for method in methods:
                t0 = time.monotonic()
                got[f"{name} --method {method}"] = row = solve(path, limit, method)
                print(f"  {method:43s} {time.monotonic() - t0:6.1f} s  exit {row['exit']} {row['solve']}",
                      file=sys.stderr, flush=True)
    return got


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--save", metavar="FILE")
    ap.add_argument("--compare", metavar="FILE")
    ap.add_argument("--time-limit", type=float, default=600.0, help="a backstop per solve (default %(default)s s)")
    ap.add_argument("--methods", default="", metavar="M,M,...",
                    help="also solve every case with each of these methods (ones the clock does not steer)")
    a = ap.parse_args()
    got = answers(a.time_limit, [m for m in a.methods.split(",") if m])
    if a.save:
        Path(a.save).write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    if a.compare:
        want = json.loads(Path(a.compare).read_text())
        diff = [k for k in sorted(set(want) | set(got)) if want.get(k) != got.get(k)]
        for k in diff:
            print(f"DIFFERENT {k}:\n  before {want.get(k)}\n  after  {got.get(k)}")
        print(f"{len(got) - len(diff)} of {len(got)} cases identical")
        return 1 if diff else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())

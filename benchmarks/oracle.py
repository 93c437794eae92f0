"""The brute-force oracle campaign (issue 28): random tiny specs of every objective
(tests/support/oracle.py draws them: every constraint, memory mode, training form, overlap,
subgraphs, batch split and link the language has), every method that takes the objective
(the MIP methods on HiGHS and SCIP) and `part bound`'s hierarchy, each answer checked
against the optimum over the evaluator's whole space. Prints, per objective: cases, runs,
false "optimal", invalid bounds, answers better than the optimum, crashes; all must be 0.

    .venv/bin/python benchmarks/oracle.py --cases 5000 --workers 2
    .venv/bin/python benchmarks/oracle.py --cases 200 --kinds throughput --seed 7

Findings (with the spec, as Python) go to --out (JSON lines). Exit 1 if there are any.
"""
from __future__ import annotations

import argparse
import collections
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import needs_partdsl  # noqa: F401  (a plain message when partdsl is not installed)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
KINDS = ("bottleneck", "latency", "task_latency", "throughput", "training")
COLUMNS = ("cases", "runs", "false optimal", "invalid bound", "wrong side", "error")


def campaign(kind: str, cases: int, seed: int) -> tuple[str, dict[str, int], list[dict], float]:
    """`cases` specs of one objective drawn by Hypothesis (seeded: the same cases every run)."""
    import warnings

    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    from tests.support.oracle import check_case, tiny_specs

    warnings.simplefilter("ignore")  # the specs are extreme on purpose (subnormal times and sizes)
    counts: collections.Counter = collections.Counter()
    found: list[dict] = []
    t0 = time.monotonic()

    @hseed(seed)
    @settings(max_examples=cases, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(tiny_specs(kinds=(kind,)))
    def one(spec):  # type: ignore[no-untyped-def]
        findings, runs = check_case(spec)
        counts["cases"] += 1
        counts["runs"] += runs
        for f in findings:
            counts[f.kind] += 1
            found.append({"kind": f.kind, "method": f.method, "detail": f.detail, "spec": repr(spec)})

    one()
    return kind, dict(counts), found, time.monotonic() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=5000, help="cases in all, spread evenly over the objectives")
    ap.add_argument("--kinds", default=",".join(KINDS), help="objectives, comma-separated")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="oracle-findings.jsonl")
    args = ap.parse_args()
    kinds = [k for k in args.kinds.split(",") if k]
    shards = 2 * len(kinds)  # two seeds per objective, so two workers share each one
    per = max(1, args.cases // shards)
    jobs = [(k, per, args.seed * 1000 + s) for k in kinds for s in range(2)]
    totals: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    seconds: collections.Counter = collections.Counter()
    t0 = time.monotonic()
    with ProcessPoolExecutor(args.workers) as pool, open(args.out, "w") as out:
        for kind, counts, found, secs in pool.map(campaign, *zip(*jobs)):
            totals[kind].update(counts)
            seconds[kind] += secs
            for f in found:
                out.write(json.dumps(f) + "\n")
            print(f"  {kind}: {counts.get('cases', 0)} cases in {secs:.0f} s; "  # each shard's counts as it ends
                  + ", ".join(f"{c} {counts.get(c, 0):,}" for c in COLUMNS[1:]), file=sys.stderr, flush=True)
    print(f"{'objective':<14}" + "".join(f"{c:>15}" for c in COLUMNS) + f"{'s/case':>9}")
    for kind in kinds:
        c = totals[kind]
        print(f"{kind:<14}" + "".join(f"{c.get(col, 0):>15,}" for col in COLUMNS)
              + f"{seconds[kind] / max(c['cases'], 1):>9.2f}")
    allc = sum(totals.values(), collections.Counter())
    print(f"{'all':<14}" + "".join(f"{allc.get(col, 0):>15,}" for col in COLUMNS)
          + f"   wall {time.monotonic() - t0:.0f} s")
    bad = sum(allc.get(col, 0) for col in COLUMNS[2:])
    print(f"findings: {bad} (written to {args.out})" if bad else "findings: 0")
    if not bad:  # no empty findings file left behind (by default in the current folder)
        Path(args.out).unlink(missing_ok=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

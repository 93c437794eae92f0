"""Is `--method auto` as good as the best single method at the same time limit? (issue 32,
item 1: within 1%, and an answer whenever some method has one.) On every bundled example
and real workload (vendored data/, throughput and latency) and on a generated decoder, runs
every method that takes the objective (the peers and brute aside) and `auto` with the same
`--time-limit`, each solve in a worker process, parsing excluded; prints per workload the
best single method, auto's value and the member it kept, the ratio, auto's gap, and the
methods that beat auto.

    .venv/bin/python benchmarks/auto.py --time-limit 5 --workers 2
    .venv/bin/python benchmarks/auto.py --only tiny,latency --time-limit 2
"""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import needs_partdsl  # noqa: F401  (a plain message when partdsl is not installed)

ROOT = Path(__file__).resolve().parents[1]
SKIP = {"brute", "metis", "scotch", "kahypar"}  # exhaustive on tiny graphs only; peers model no stages


def workloads(tmp: Path, layers: int) -> dict[str, Path]:
    """name -> spec path: the examples, the vendored workloads as specs, a generated decoder."""
    from partdsl.convert.to_part import dnn_partitioning_to_part
    from partdsl.dsl.printer import to_part
    from partdsl.generators.decoder_graph import Decoder, decoder_spec

    out = {p.stem: p for p in sorted((ROOT / "examples").glob("*.part"))}
    data = ROOT / "data" / "dnn-partitioning"
    for kind, objective in (("throughput", "bottleneck"), ("latency", "latency")):
        for f in sorted((data / kind).glob("*.json")):
            path = tmp / f"{kind}_{f.stem}.part"
            path.write_text(dnn_partitioning_to_part(f, objective, relative_to=tmp))
            out[path.stem] = path
    if layers:
        for objective in ("bottleneck", "latency"):
            path = tmp / f"decoder{layers}_{objective}.part"
            path.write_text(to_part(decoder_spec(Decoder(layers), 8, "a100", objective)))
            out[path.stem] = path
    return out


def one(path: Path, method: str, T: float) -> dict:
    """One solve (in a worker process): what it found, or why it refused."""
    from partdsl import parse_file, solve
    from partdsl.core.errors import PartError

    spec = parse_file(path)
    try:
        r = solve(spec, method=method, time_limit=T)
    except PartError as e:
        return {"refused": e.message}
    return {"status": r.status.value, "objective": r.objective if r.status.has_solution() else None,
            "sense": r.sense, "gap": r.gap, "chosen": r.chosen, "wall": r.wall_time_s}


def main() -> int:
    from partdsl import parse_file
    from partdsl.methods.registry import METHODS

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--time-limit", type=float, default=5.0)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--layers", type=int, default=60, help="decoder layers (14 operators each; 0: none)")
    ap.add_argument("--only", default="", help="comma-separated workload names (default: all)")
    args = ap.parse_args()
    T = args.time_limit
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        specs = workloads(Path(tmp), args.layers)
        if args.only:
            specs = {k: v for k, v in specs.items() if k in args.only.split(",")}
        jobs = {}
        with ProcessPoolExecutor(args.workers) as pool:
            for name, path in specs.items():
                kind = parse_file(path).objective.kind
                for m in METHODS.values():
                    if m.name not in SKIP and kind in m.objectives:
                        jobs[name, m.name] = pool.submit(one, path, m.name, T)
            rows = {key: f.result() for key, f in jobs.items()}
    print(f"--time-limit {T:g} s, {len(rows)} solves in {time.monotonic() - t0:.0f} s on {args.workers} workers")
    print(f"{'workload':<34}{'best single':>24}{'auto':>12}{'kept':>16}{'auto/best':>10}{'auto gap':>9}  beat auto by > 1%")
    bad = 0
    for name in specs:
        got = {m: r for (w, m), r in rows.items() if w == name and r.get("objective") is not None}
        auto = got.pop("auto", None)
        sense = (auto or next(iter(got.values()), {"sense": "min"}))["sense"]
        better = (lambda a, b: a > b) if sense == "max" else (lambda a, b: a < b)
        best = None
        for m, r in got.items():
            if best is None or better(r["objective"], got[best]["objective"]):
                best = m
        if auto is None:
            ratio, beat = math.nan, sorted(got)
        else:
            a = auto["objective"]
            ratio = a / got[best]["objective"] if best else 1.0
            if sense == "max":
                ratio = 1 / ratio if ratio else math.inf
            beat = [m for m, r in got.items() if better(r["objective"], a) and abs(r["objective"] - a) > 0.01 * abs(a)]
        bad += bool(beat) or (auto is None and bool(got))
        bs = f"{got[best]['objective']:.5g} {best}" if best else "none"
        av = f"{auto['objective']:.5g}" if auto else "none"
        gap = f"{100 * auto['gap']:.1f}%" if auto and math.isfinite(auto["gap"]) else "-"
        print(f"{name:<34}{bs:>24}{av:>12}{(auto or {}).get('chosen') or '-':>16}{ratio:>10.4f}{gap:>9}  "
              f"{', '.join(beat) or '-'}", flush=True)
    print(f"\nworkloads where auto is more than 1% worse than a single method, or has no answer: {bad}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

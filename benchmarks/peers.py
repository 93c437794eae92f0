"""Real peers side by side: METIS, Scotch and Mt-KaHyPar (raw and `repair 1`) against
every partdsl method, on the same workloads, machine and run (kernels/peers/runners.py).

Workloads: the 8 `throughput/` files (max load, non-contiguous splits allowed), the 4
`latency/` files (single-stream latency, non-contiguous, up to 8 subgraphs per
accelerator so that a peer's split can be scored at all), REGAL-style graphs (max load on
identical stages, any split) and RandWire networks (DiviML task latency and batched
throughput). Every value is re-scored by the evaluator. The table prints, per workload,
each peer's value, whether it is feasible, and its ratio to the best partdsl value
(peer / best for times, best / peer for samples/s: above 1 the peer is worse), with the
published Scotch value of the data folder's README where there is one; the geometric
mean of the ratios of feasible peer runs per objective last.

    python benchmarks/peers.py                    # everything, 30 s per partdsl method
    python benchmarks/peers.py --quick            # a few workloads, fast methods only
    python benchmarks/peers.py --workloads gnmt_inference,bert24_training --cap 60
"""
from __future__ import annotations

import argparse
import math
import tempfile
import time
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
import needs_partdsl  # noqa: E402,F401  (a plain message if partdsl is missing)

THROUGHPUT = ("bert24_inference", "resnet50_inference", "inceptionv3_inference", "gnmt_inference",
              "bert24_training", "resnet50_training", "inceptionv3_training", "gnmt_training")
LATENCY = ("bert24_inference", "resnet50_inference", "inceptionv3_inference", "gnmt_inference")
# the data folder's README (Tarnawski et al. Tables 1 and 4): Scotch, and the best published value
SCOTCH = {("bottleneck", "bert24_inference"): 18.03, ("bottleneck", "resnet50_inference"): 34.50,
          ("bottleneck", "inceptionv3_inference"): 54.01, ("bottleneck", "gnmt_inference"): 34.92,
          ("bottleneck", "bert24_training"): 42.01, ("bottleneck", "resnet50_training"): 80.10,
          ("bottleneck", "inceptionv3_training"): 128.32, ("bottleneck", "gnmt_training"): 107.00,
          ("latency", "bert24_inference"): 108.03, ("latency", "resnet50_inference"): 3610.87,
          ("latency", "inceptionv3_inference"): 3068.00, ("latency", "gnmt_inference"): 636.91}
SCOTCH_NOTE = {("latency", "resnet50_inference"): "mem", ("latency", "inceptionv3_inference"): "mem",
               ("latency", "gnmt_inference"): "mem"}
PEER_NAMES = ("metis", "scotch", "kahypar")
QUICK_METHODS = ("topo", "dp", "load_search", "latency_search", "greedy", "fill", "heft", "eft", "met", "single")
SUBGRAPHS = 8


def workloads(data: Path, tmp: Path, quick: bool, regime: str = "paper") -> list[tuple[str, object]]:
    from partdsl import parse
    from partdsl.convert.to_part import dnn_partitioning_to_part
    from partdsl.core.ir import Constraints, Spec
    from partdsl.generators.randwire import RandWire, randwire_spec
    from partdsl.generators.regal import regal_spec

    out: list[tuple[str, object]] = []
    for name in (THROUGHPUT[:1] + THROUGHPUT[3:5] if quick else THROUGHPUT):
        text = dnn_partitioning_to_part(data / "throughput" / f"{name}.json", "bottleneck", split="any", relative_to=tmp)
        out.append((name, lambda t=text: parse(t, str(tmp / "x.part"))))
    for name in (LATENCY[3:] if quick else LATENCY):
        text = dnn_partitioning_to_part(data / "latency" / f"{name}.json", "latency", split="any", relative_to=tmp)
        text = text.replace("subject to {", f"subject to {{ subgraphs <= {SUBGRAPHS};", 1)
        out.append((name, lambda t=text: parse(t, str(tmp / "x.part"))))
    for i, (model, n) in enumerate((("er", 100),) if quick else (("er", 100), ("ba", 150), ("ws", 200))):
        def regal(model: str = model, n: int = n, i: int = i) -> Spec:
            s = regal_spec(n, 4, model, seed=i)
            return Spec(s.graph, s.platform, s.objective, Constraints(memory="ignore"))
        out.append((f"regal-{model}{n}", regal))
    rw = partial(RandWire, regime=regime)
    nets = ((rw("er", 10, 3, seed=0), 1), (rw("er", 10, 3, seed=0), 16)) if quick else (
        (rw("er", 10, 5, seed=0), 1), (rw("ws", 10, 5, seed=1), 1),
        (rw("er", 10, 5, seed=0), 16), (rw("ba", 10, 5, channels=2, variant="wdep", seed=2), 16))
    for rw, batch in nets:
        label = f"rwnn-{rw.model}{rw.size}x{rw.modules}c{rw.channels}" + (f"-B{batch}" if batch > 1 else "")
        out.append((label, lambda rw=rw, b=batch: randwire_spec(rw, "latency" if b == 1 else "throughput", batch=b,
                                                               split=4 if b > 1 else 1)))
    return out


def worse(sense: str, peer: float, best: float) -> float:
    """How many times worse the peer is than the best partdsl value (1 = as good)."""
    if sense == "max":
        return best / peer if peer > 0 else math.inf
    return peer / best if best > 0 else (1.0 if peer == best else math.inf)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(ROOT / "data"))
    ap.add_argument("--cap", type=float, default=30.0, help="seconds per partdsl method (default 30)")
    ap.add_argument("--quick", action="store_true", help="a few workloads, the fast partdsl methods, 10 s caps")
    ap.add_argument("--workloads", help="a comma-separated subset (names as printed)")
    ap.add_argument("--methods", help="a comma-separated subset of the partdsl methods")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--regime", default="paper", choices=["paper", "roofline"], help="RandWire times (docs/diviml.md)")
    args = ap.parse_args()
    from partdsl import solve
    from partdsl.core.errors import PartError
    from partdsl.methods.solve import METHODS

    cap = 10.0 if args.quick else args.cap
    tmp = Path(tempfile.mkdtemp())
    data = Path(args.data) / "dnn-partitioning"
    chosen = set(args.workloads.split(",")) if args.workloads else None
    summary: dict[str, list[float]] = {}
    table: list[str] = []
    for label, make in workloads(data, tmp, args.quick, args.regime):
        if chosen and label not in chosen:
            continue
        spec = make()
        kind, sense = spec.objective.kind, spec.objective.sense
        unit = "samples/s" if kind == "throughput" else "ms"
        ours = [m.name for m in METHODS.values() if kind in m.objectives and m.name not in PEER_NAMES
                and m.name != "brute" and (not args.quick or m.name in QUICK_METHODS)
                and (not args.methods or m.name in args.methods.split(","))]
        print(f"== {label} ({kind}, {spec.dense.n} nodes, {spec.dense.D} devices)", flush=True)
        best, best_name = None, ""
        for name in ours:
            t = time.perf_counter()
            try:
                r = solve(spec, method=name, seed=args.seed, time_limit=cap)
            except PartError as e:  # a method that refuses this instance (too many ideals for dp, ...)
                print(f"   {name:16} refused: {str(e).splitlines()[0]}", flush=True)
                continue
            sec = time.perf_counter() - t
            ev = r.evaluation
            ok = ev is not None and ev.feasible
            print(f"   {name:16} {r.objective:12.4f} {unit:9} {'feasible' if ok else 'infeasible':10} {sec:7.2f} s",
                  flush=True)
            if ok and (best is None or (r.objective > best if sense == "max" else r.objective < best)):
                best, best_name = r.objective, name
        cells, ours_scotch = [], math.nan
        for peer in PEER_NAMES:
            for rep in (0, 1):
                t = time.perf_counter()
                r = solve(spec, method=peer, seed=args.seed, options={"repair": rep})
                sec = time.perf_counter() - t
                ev = r.evaluation
                ok = ev is not None and ev.feasible
                value = ev.objective if ev is not None else math.nan
                kinds = sorted({v.kind for v in ev.violations}) if ev is not None else []
                ratio = worse(sense, value, best) if best is not None and math.isfinite(value) else math.nan
                if ok and math.isfinite(ratio):
                    summary.setdefault(kind, []).append(ratio)
                tag = peer + (" +r" if rep else "")
                print(f"   {tag:16} {value:12.4f} {unit:9} {'feasible' if ok else ','.join(kinds):10} {sec:7.2f} s"
                      f"   x{ratio:.3f} of best", flush=True)
                cells.append(f"{ratio:6.3f}{'' if ok else '*'}")
                if peer == "scotch" and not rep:
                    ours_scotch = value
        pub = SCOTCH.get((kind, label))
        pub_cell = (f"{pub:9.2f}{'*' if SCOTCH_NOTE.get((kind, label)) else ''}" if pub else "-")
        table.append(f"{label:24} {kind:10} {best if best is not None else math.nan:11.4f} {best_name:14} "
                     + " ".join(f"{c:>8}" for c in cells) + f" {ours_scotch:10.2f} {pub_cell:>10}")
    print()
    head = (f"{'workload':24} {'objective':10} {'best ours':>11} {'by':14} "
            + " ".join(f"{p + s:>8}" for p in PEER_NAMES for s in ("", " +r")) + f" {'Scotch':>10} {'Scotch pub':>10}")
    print("\n".join([head, "-" * len(head), *table]))
    print("(peer value / best partdsl value, or best / peer for samples/s: > 1 = the peer is worse; "
          "* = infeasible (memory, colocation, placement, deadlock); +r = repair 1; "
          "Scotch = our raw Scotch value; Scotch pub = the published one, * = it violated memory)")
    for kind, xs in summary.items():
        print(f"geometric mean over feasible peer runs, {kind}: {math.exp(sum(map(math.log, xs)) / len(xs)):.3f} "
              f"({len(xs)} runs, worst {max(xs):.3f}, best {min(xs):.3f})")


if __name__ == "__main__":
    main()

"""Model build and hand-off times of the exact MIPs, matrix path against Pyomo path, with
ratios against a saved baseline run (speed is measured here, never asserted in tests).

For each published workload: Tarnawski's max-load IP as converted (contiguous), and
Archer's MTPP MIP on the same graph with 16 identical stages (`acyclic`, no CPU: the
shape of the issue's bert_L-12 measurement, 152k rows). Columns: scipy.sparse build,
hand-off to HiGHS (highspy passModel), PySCIPOpt model (variables and rows from Python),
Pyomo build, and Pyomo's own hand-off to HiGHS (appsi set_instance).

    python benchmarks/build.py                    # compare against benchmarks/baseline_build.json
    python benchmarks/build.py --save-baseline
    python benchmarks/build.py --files gnmt_training --no-pyomo
    python benchmarks/build.py --files '' --routed 28   # only the IPs on server levels

`--routed L` adds both IPs on server levels (their pair columns, models/maxload_routes.py
and latency_routes.py): a generated L-layer decoder (hidden 1024, seq 512) on 2 servers of
7 GPUs and a CPU, 25 GB/s inside a server, 12.5 GB/s between (28 layers: 395 nodes and 16
devices, the largest spec `auto` gives `exact`). `--save-baseline` merges its rows into the
baseline file.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

from ratios import print_ratios

ROOT = Path(__file__).resolve().parents[1]
import needs_partdsl  # noqa: E402,F401  (a plain message if partdsl is missing)

BASELINE = Path(__file__).with_name("baseline_build.json")
FILES = ("bert24_inference", "resnet50_inference", "inceptionv3_inference", "gnmt_inference",
         "bert24_training", "resnet50_training", "inceptionv3_training", "gnmt_training")
COLS = ("matrix_s", "highs_pass_s", "scip_model_s", "pyomo_s", "pyomo_to_highs_s")


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def mtpp_spec(spec, k: int):  # type: ignore[no-untyped-def]
    """The same graph on k identical stages under `acyclic` (Archer's MTPP)."""
    from partdsl.core.ir import Constraints, DeviceClass, Objective, Platform

    acc = next(c for c in spec.platform.classes if not c.host)
    graph = spec.graph if not spec.graph.is_training else replace(
        spec.graph, nodes=tuple(replace(n, backward=False) for n in spec.graph.nodes))
    return replace(spec, graph=graph, platform=Platform((DeviceClass(acc.name, k, memory=acc.memory, link=None),)),
                   objective=Objective("bottleneck"), constraints=Constraints(acyclic=True, memory="ignore"))


def measure(name: str, spec, model, pyomo_model, pyomo: bool) -> dict[str, float]:  # type: ignore[no-untyped-def]
    import highspy
    from partdsl.solvers.highs_matrix import pass_model
    from partdsl.solvers.scip_matrix import scip_model

    row: dict[str, float] = {}
    row["matrix_s"], (mip, _) = timed(lambda: model.build(spec))
    row["rows"], row["cols"] = mip.A.shape
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    row["highs_pass_s"], _ = timed(lambda: pass_model(h, mip))
    row["scip_model_s"], _ = timed(lambda: scip_model(mip))
    if pyomo:
        from pyomo.contrib.appsi.solvers import Highs

        row["pyomo_s"], m = timed(lambda: pyomo_model.build(spec))
        row["pyomo_to_highs_s"], _ = timed(lambda: Highs().set_instance(m))
    print(f"  measured {name}", file=sys.stderr, flush=True)
    return row


def routed_spec(layers: int, objective: str):  # type: ignore[no-untyped-def]
    from partdsl.dsl.builder import SpecBuilder
    from partdsl.generators.decoder_graph import Decoder, decoder_graph

    m = Decoder(layers=layers, hidden=1024, heads=16, seq=512, vocab=32000, dtype="fp16")
    return (SpecBuilder(decoder_graph(m, "decoder")).server("node", 2, link="25 GB/s")
            .device("gpu", 7, link="300 GB/s", server="node", profile="a100")
            .device("cpu", 1, host=True, server="node", profile="xeon").fabric("12.5 GB/s")
            .minimize(objective).build())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(ROOT / "data"))
    ap.add_argument("--files", default=",".join(FILES))
    ap.add_argument("--stages", type=int, default=16, help="k of the MTPP rows")
    ap.add_argument("--no-pyomo", action="store_true", help="skip the (slow) Pyomo columns")
    ap.add_argument("--routed", type=int, default=0, metavar="LAYERS",
                    help="also both IPs on server levels, on a generated LAYERS-layer decoder")
    ap.add_argument("--save-baseline", action="store_true")
    args = ap.parse_args()
    from partdsl import parse_file
    from partdsl.convert.to_part import dnn_partitioning_to_part
    from partdsl.models import latency, maxload, mtpp, pyomo_maxload, pyomo_mtpp

    tmp = Path(tempfile.mkdtemp())
    rows: dict[str, dict[str, float]] = {}
    for name in filter(None, args.files.split(",")):
        path = tmp / f"{name}.part"
        path.write_text(dnn_partitioning_to_part(Path(args.data) / "dnn-partitioning" / "throughput" / f"{name}.json",
                                                 relative_to=tmp))
        spec = parse_file(path)
        rows[f"{name} maxload"] = measure(f"{name} maxload", spec, maxload, pyomo_maxload, not args.no_pyomo)
        rows[f"{name} mtpp k={args.stages}"] = measure(f"{name} mtpp", mtpp_spec(spec, args.stages), mtpp, pyomo_mtpp,
                                                       not args.no_pyomo)
    if args.routed:
        for objective, model in (("bottleneck", maxload), ("latency", latency)):
            name = f"decoder{args.routed} 2 servers {'maxload' if model is maxload else 'latency'}"
            rows[name] = measure(name, routed_spec(args.routed, objective), model, None, False)
    if args.save_baseline:  # merged: a run of some rows keeps the others' baseline
        old = json.loads(BASELINE.read_text()) if BASELINE.exists() else {}
        BASELINE.write_text(json.dumps({**old, **rows}, indent=1) + "\n")
        print(f"baseline saved to {BASELINE}")
    print_ratios(rows, BASELINE, list(COLS), save=False, width=16,
                 lead=lambda name, r: f"{name:36} {int(r['rows']):8,}", lead_head=f"{'model':36} {'rows':>8}")

if __name__ == "__main__":
    main()

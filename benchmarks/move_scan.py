"""The load table's move scan (kernels/bottleneck/load_table.py), by parts against whole
tables: how many single moves of one assignment each scores per second, side by side.

By parts, a move takes back and adds again only the parts of the nodes it changes, O(their
degrees); a whole table per move is O(n + m), what the scan did before. The load search,
the local search and `exact`'s MIP-start polish score their moves with it.

    .venv/bin/python benchmarks/move_scan.py                     # 1k, 10k, 100k decoders + BERT-L-12
    .venv/bin/python benchmarks/move_scan.py --sizes 1000 --moves 2000
"""
from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from pathlib import Path

import needs_partdsl  # noqa: F401  (a plain message when partdsl is not installed)
import numpy as np
from time_limits import part

ROOT = Path(__file__).resolve().parents[1]


def rate(scan, args: tuple, moves: int, budget: float = 5.0) -> float:  # type: ignore[no-untyped-def]
    """Moves per second of `scan(*args)` (`moves` moves a call), over calls for `budget` s."""
    scan(*args)  # compiled (or loaded from numba's cache) before the clock starts
    t0, calls = time.perf_counter(), 0
    while time.perf_counter() - t0 < budget or calls == 0:
        scan(*args)
        calls += 1
    return moves * calls / (time.perf_counter() - t0)


def measure(name: str, spec, n_moves: int, seed: int = 0) -> None:  # type: ignore[no-untyped-def]
    from partdsl.kernels.bottleneck.load_table import _scan, _scan_tables
    from partdsl.kernels.bottleneck.move_scores import MoveScores
    from partdsl.kernels.graph.contraction import contract

    d = spec.dense
    u = contract(d)
    ms = MoveScores(spec, u)
    rng = np.random.default_rng(seed)
    dev = rng.integers(d.D, size=u.count)[u.unit]
    ks = rng.integers(u.count, size=n_moves).astype(np.int64)
    js = rng.integers(d.D, size=n_moves).astype(np.int64)
    L = ms.loads
    parts = rate(_scan, (dev, ks, js, ms.mptr, ms.midx, *L.preds, L.gpipe, *L.args, *L.replicas(None)), n_moves)
    whole = rate(_scan_tables, (dev, ks, js, ms.mptr, ms.midx, L.gpipe, *L.args, *L.replicas(None)),
                 n_moves, budget=2.0)
    print(f"{name:28s} {d.n:>8,} {len(d.src):>8,} {parts:>14,.0f} {whole:>14,.0f} {parts / whole:>8.1f}x", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,100000", help="decoder operators (about), comma-separated")
    ap.add_argument("--moves", type=int, default=5000, help="moves per scan call")
    args = ap.parse_args()
    from partdsl import parse_file
    from partdsl.convert.to_part import dnn_partitioning_to_part

    print(f"{'graph':28s} {'nodes':>8} {'edges':>8} {'by parts /s':>14} {'whole /s':>14} {'ratio':>9}")
    tmp = Path(tempfile.mkdtemp())
    bert = tmp / "bert.part"
    bert.write_text(dnn_partitioning_to_part(ROOT / "data" / "dnn-partitioning" / "throughput-operators" /
                                             "bert_L-12_training.json", "bottleneck", split="any", relative_to=tmp))
    measure("BERT-L-12 training (ops)", parse_file(bert), args.moves)
    for ops in (int(s) for s in args.sizes.split(",") if s):
        out = tmp / f"decoder-{ops}.part"
        subprocess.run(part() + ["generate", "transformer", "--layers", str(max(1, round(ops / 14))),
                                 "--objective", "bottleneck", "-o", str(out)], check=True, capture_output=True)
        measure(f"decoder, {ops:,} operators", parse_file(out), args.moves)


if __name__ == "__main__":
    main()

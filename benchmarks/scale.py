"""partdsl at LLM operator-graph sizes, side by side with METIS and Mt-KaHyPar (issue 29).

For each size, a GPT-style decoder from `part generate transformer` (14 operators per
layer; 71, 700 and 7,100 layers: about 1k, 10k and 100k operators) is checked (`part
check`: parse + validate) and solved by each method in its own process (`part solve
--json --time-limit T`; the peers with `-O repair=1`, which makes their answers respect
memory). Printed per run: the process's wall time and peak RSS, the solve's own time
(parsing excluded), status, objective, bound, gap, and the objective over the best
peer's. Latency runs (`--objectives bottleneck,latency`) have no peer.

    .venv/bin/python benchmarks/scale.py                       # 1k, 10k, 100k; T = 10, 30, 60 s
    .venv/bin/python benchmarks/scale.py --sizes 1000,10000 --methods auto,topo,metis,kahypar
    .venv/bin/python benchmarks/scale.py --sizes 10000,100000 --gap 0.005   # stop at a 0.5% certificate
    .venv/bin/python benchmarks/scale.py --sizes 10000,100000 --no-limit --json-check  # default settings
    .venv/bin/python benchmarks/scale.py --sizes 100000 --methods auto --onnx-check     # the ONNX import too
    .venv/bin/python benchmarks/scale.py --sizes 1000,10000 --methods auto --servers 2 --replicate 4
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

import needs_partdsl  # noqa: F401  (a plain message when partdsl is not installed)
from time_limits import PEERS, part, run

LIMITS = {1_000: 10.0, 10_000: 30.0, 100_000: 60.0}  # the targets: --time-limit per size
NO_LIMIT_HANG = 300.0  # --no-limit: a run is called a hang after 3x this + 120 s


def layers(ops: int) -> int:
    return max(1, round(ops / 14))


def solve_row(spec: Path, method: str, T: float | None, gap: float | None = None) -> dict:
    """One `part solve` in its own process; T None: no --time-limit (the default settings)."""
    extra = ["-O", "repair=1"] if method in PEERS else []
    extra += ["--gap", str(gap)] if gap is not None and method not in PEERS else []
    extra += ["--time-limit", str(T)] if T is not None else []
    code, out, err, wall, rss = run(part() + ["solve", str(spec), "--method", method, "--json"] + extra,
                                    3 * (T or NO_LIMIT_HANG) + 120)
    try:
        res = json.loads(out)
    except json.JSONDecodeError:
        res = {}
    why = "hang" if code is None else res.get("status") or (err.strip().splitlines() or [f"exit {code}"])[0][:40]
    return {"method": method, "code": code, "wall": wall, "rss": rss, "solve": res.get("wall_time_s"),
            "status": why, "objective": res.get("objective"), "bound": res.get("bound"), "gap": res.get("gap"),
            "winner": res.get("method", method)}


def json_check(spec: Path) -> str:
    """`part check` of the same graph as partdsl JSON: the spec's platform and the rest, with
    `graph NAME = import "FILE.json" as partdsl` instead of its graph block."""
    graph = spec.with_suffix(".json")
    code, _, err, _, _ = run(part() + ["convert", str(spec), "--to", "json", "-o", str(graph)], 900)
    if code != 0:
        return f"part convert --to json: exit {code}: {err.strip()[:200]}"
    text = spec.read_text()
    head = re.search(r"^graph (\w+) \{\n", text, re.M)
    if head is None:
        return "part check of the JSON graph: no graph block found"
    end = text.index("\n}\n", head.start()) + 3  # the generator closes its graph block alone on a line
    twin = spec.with_name(spec.stem + "-json.part")
    twin.write_text(text[:head.start()] + f'graph {head.group(1)} = import "{graph.name}" as partdsl\n' + text[end:])
    code, _, err, wall, rss = run(part() + ["check", str(twin)], 900)
    return f"part check of the JSON graph: {wall:.1f} s, {rss:.0f} MiB" + ("" if code == 0 else f", exit {code}: {err[:200]}")


def onnx_check(spec: Path, ops: int) -> str:
    """`part check` of a decoder of about `ops` operators written as ONNX
    (benchmarks/onnx_decoder.py, 15 operators per layer) on eight A100s and a Xeon."""
    import onnx_decoder

    model = spec.with_name(spec.stem + ".onnx")
    ops = onnx_decoder.write(max(1, round(ops / onnx_decoder.PER_LAYER)), model)
    twin = spec.with_name(spec.stem + "-onnx.part")
    twin.write_text(f'graph decoder = import "{model.name}" as onnx\n'
                    "platform {\n  device gpu[8] { profile a100 }\n  device cpu[1] { profile xeon }\n}\n"
                    "minimize bottleneck\n")
    code, _, err, wall, rss = run(part() + ["check", str(twin)], 900)
    return f"part check of the model as ONNX ({ops:,} operators): {wall:.1f} s, {rss:.0f} MiB" \
        + ("" if code == 0 else f", exit {code}: {err[:200]}")


def on_servers(spec: Path, servers: int, replicate: int) -> None:
    """Rewrite the generated spec: its GPUs in `servers` servers (300 GB/s inside, 25 GB/s
    between: NVLink-class and 200 Gb/s-class links) and `replicate <= R` stages."""
    text = spec.read_text()
    gpu = re.search(r"^  device gpu\[(\d+)\] \{ (.*?) \}\n", text, re.M)
    if gpu is None:
        raise SystemExit("--servers: the generated spec has no `device gpu[N]` line")
    if servers > 1:
        per, props = int(gpu.group(1)) // servers, re.sub(r"link [^;]+", "link 300 GB/s", gpu.group(2))
        block = f"  server node[{servers}] {{\n    device gpu[{per}] {{ {props} }}\n    link 300 GB/s\n  }}\n" \
                "  link 25 GB/s\n"
        text = text[:gpu.start()] + block + text[gpu.end():]
    if replicate > 1:
        text = text.replace("subject to {\n", f"subject to {{\n  replicate <= {replicate}\n", 1)
    spec.write_text(text)


def num(x: object, d: int = 2) -> str:
    return f"{x:.{d}f}" if isinstance(x, (int, float)) else "-"


def table(rows: list[dict], sense: str) -> None:
    peers = [r["objective"] for r in rows if r["method"] in PEERS and isinstance(r["objective"], (int, float))]
    peer = (min(peers) if sense == "min" else max(peers)) if peers else None
    print(f"{'method':<13}{'process s':>10}{'solve s':>9}{'peak MiB':>9}{'status':>26}{'objective':>12}"
          f"{'bound':>12}{'gap':>8}{'/ peer':>8}")
    for r in rows:
        gap = r["gap"] if isinstance(r["gap"], (int, float)) else None
        ratio = r["objective"] / peer if peer and isinstance(r["objective"], (int, float)) else None
        print(f"{r['method']:<13}{r['wall']:>10.1f}{num(r['solve'], 1):>9}{r['rss']:>9.0f}{r['status'][:25]:>26}"
              f"{num(r['objective'], 3):>12}{num(r['bound'], 3):>12}"
              f"{'-' if gap is None else f'{100 * gap:.1f}%':>8}{num(ratio, 4):>8}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,10000,100000", help="operators (about), comma-separated")
    ap.add_argument("--methods", default="auto,metis,kahypar", help="bottleneck methods, comma-separated")
    ap.add_argument("--objectives", default="bottleneck", help="bottleneck and/or latency (auto only)")
    ap.add_argument("--time-limit", type=float, default=None, help="one T for every size (default: 10/30/60 s)")
    ap.add_argument("--no-limit", action="store_true", help="no --time-limit: each method's default settings")
    ap.add_argument("--json-check", action="store_true",
                    help="also check the graph as partdsl JSON (`part convert --to json`, imported by a spec)")
    ap.add_argument("--onnx-check", action="store_true",
                    help="also check a decoder of as many operators written as ONNX (needs onnx; onnx_decoder.py)")
    ap.add_argument("--servers", type=int, default=1, help="the 8 GPUs in this many servers (server levels)")
    ap.add_argument("--replicate", type=int, default=1, help="`replicate <= R`: data-parallel stages")
    ap.add_argument("--gap", type=float, default=None,
                    help="partdsl's methods stop once their certificate is within this relative gap (default: exact)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for ops in [int(x) for x in args.sizes.split(",") if x]:
            T = None if args.no_limit else args.time_limit or LIMITS.get(ops, 30.0)
            for objective in [o for o in args.objectives.split(",") if o]:
                spec = Path(tmp) / f"decoder-{ops}-{objective}.part"
                code, _, made, gen_s, _ = run(part() + ["generate", "transformer", "--layers", str(layers(ops)),
                                                       "--gpus", "8", "--objective", objective, "-o", str(spec)], 900)
                if code != 0:
                    print(made, file=sys.stderr)
                    return 2
                if args.servers > 1 or args.replicate > 1:
                    on_servers(spec, args.servers, args.replicate)
                code, _, err, check_s, check_rss = run(part() + ["check", str(spec)], 900)
                print(f"\n{objective}: {made.strip()} ({gen_s:.1f} s); part check {check_s:.1f} s, "
                      f"{check_rss:.0f} MiB{'' if code == 0 else f', exit {code}'}; "
                      + ("no --time-limit" if T is None else f"--time-limit {T:g} s"))
                if args.json_check:
                    print(json_check(spec))
                if args.onnx_check:
                    print(onnx_check(spec, ops))
                names = args.methods.split(",") if objective == "bottleneck" else ["auto"]
                table([solve_row(spec, m, T, args.gap) for m in names if m], "min")
    return 0


if __name__ == "__main__":
    sys.exit(main())

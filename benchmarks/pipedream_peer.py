"""PipeDream's optimizer as a peer (issue 30, item 7): on PipeDream's own profiles, its
hybrid-parallel plan (stages and replication factors) beside partdsl's, side by side.

PipeDream's optimizer (msr-fiddle/pipedream, `optimizer/optimizer_graph_hierarchical.py`,
MIT) runs as it is, in a subprocess, from a checkout you give (`--pipedream DIR`; it needs
Python and numpy, and graphviz only to draw: a stand-in module is put on its path, so no
graphviz install is needed). For each profile and machine count it prints:
- PipeDream's time per stage (its own printout, in ms);
- partdsl's evaluator on PipeDream's plan (read from the gpus=N.txt it writes, with the
  replication factors it prints) and the relative difference: 0 when the cost models agree;
- partdsl's `topo` and `dp` (both choose replication factors, `replicate <= N`) on the
  same spec (`part convert graph.txt --from pipedream --machines N`, under `acyclic`), the
  DP's certificate (`optimal`: proven over every acyclic split and factor, a superset of
  PipeDream's chain of antichains; else the gap to its bound) and dp / PipeDream's: at
  most 1 when it is proven;
- the wall times and partdsl's peak memory;
- with `--any-split`, also `exact` (Tarnawski's max-load IP with a binary per device and
  factor, models/maxload_replicas.py) on the same spec without `acyclic`: any split, the
  stages free to send tensors back and forth (which PipeDream's runtime does not run), its
  value, status and proven bound within `--cap`.

Two levels (App. C.3): `--machines 4x2` runs PipeDream with `-n 4 2 -b B1 B2`
(`--bandwidths B1,B2`: inside a server, between servers) on 2 servers of 4 GPUs, and
partdsl on the same levels (`--machines 4,2`), where `topo` does not run and `dp` places
stages in device order, proven optimal where its bound (each stage at its cheapest
placement) meets its value. `--machines 2x2x2 --bandwidths B1,B2,B3` runs
three levels. A stage of PipeDream's plan runs on its own factor times the factors of the
stages that hold it at the levels above (`stage_factors`); its first top-level stage on
several servers syncs as partdsl's hierarchical AllReduce does (evaluator/replicas.py), and
"rel diff" shows any plan whose cost differs (docs/importers.md).

    python benchmarks/pipedream_peer.py --pipedream /path/to/pipedream
    python benchmarks/pipedream_peer.py --pipedream DIR --profiles alexnet,vgg16 --machines 4,8 --bandwidth 1e10
    python benchmarks/pipedream_peer.py --pipedream DIR --machines 4x2,8x2 --bandwidths 10e9,1e9
"""
from __future__ import annotations

import argparse
import math
import re
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
import needs_partdsl  # noqa: E402,F401  (a plain message if partdsl is missing)

STAND_IN = "class Digraph:\n    def __init__(self, *a, **k): pass\n    def node(self, *a, **k): pass\n" \
           "    def edge(self, *a, **k): pass\n    def render(self, *a, **k): pass\n"
DEFAULT = ("alexnet", "vgg16", "resnet18", "resnet50", "squeezenet1_0", "inception_v3", "gnmt")


def profiles(pipedream: Path) -> dict[str, Path]:
    return {p.parent.name: p for p in sorted(pipedream.glob("profiler/*/profiles/*/graph.txt"))}


def run_pipedream(pipedream: Path, graph: Path, machines: list[int], bandwidth: list[float], work: Path,
                  timeout: float) -> dict:
    """PipeDream's optimizer on one profile: its time per stage (ms), the factors of its
    (innermost) stages in order, plan file, seconds."""
    (work / "stub").mkdir(exist_ok=True)
    (work / "stub" / "graphviz.py").write_text(STAND_IN)
    out = work / f"{graph.parent.name}-{'x'.join(map(str, machines))}"
    out.mkdir(exist_ok=True)
    t = time.monotonic()
    r = subprocess.run([sys.executable, "optimizer_graph_hierarchical.py", "-f", str(graph),
                        "-n", *map(str, machines), "-b", *map(str, bandwidth), "-o", str(out)],
                       cwd=pipedream / "optimizer", capture_output=True,
                       text=True, env={"PYTHONPATH": str(work / "stub"), "PATH": "/usr/bin:/bin"}, timeout=timeout)
    seconds = time.monotonic() - t
    if r.returncode != 0:
        why = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit code {r.returncode}"
        if r.returncode == -9:  # no traceback: the kernel's out-of-memory killer, most often
            why = f"killed (SIGKILL) after {seconds:.0f} s, most likely out of memory"
        raise RuntimeError(f"PipeDream's optimizer failed: {why}")
    per_stage = float(re.search(r"Time per stage in pipeline: ([0-9.eE+-]+)", r.stdout).group(1)) * 1e3
    return {"ms": per_stage, "factors": stage_factors(r.stdout), "plan": out / f"gpus={math.prod(machines)}.txt",
            "seconds": seconds}


def stage_factors(printout: str) -> list[int]:
    """The devices each innermost stage runs on, in order: its own factor times the factors
    of the stages that hold it at every level above (a top-level stage on 2 servers, split
    into a stage on 2 GPUs of each: 4), from the "(start, end) time factor" lines that
    PipeDream prints for each level, outermost first."""
    levels = printout.split("Level ")[1:]
    ranges = [[(int(a), int(b), int(f)) for a, b, f in re.findall(r"^\((\d+), (\d+)\) \S+ (\d+)$", text, re.M)]
              for text in levels]
    if not ranges:
        return []
    return [f * math.prod(next(g for a2, b2, g in outer if a2 <= a < b2) for outer in ranges[:-1])
            for a, b, f in ranges[-1]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pipedream", type=Path, required=True, help="a checkout of msr-fiddle/pipedream")
    ap.add_argument("--profiles", default=",".join(DEFAULT))
    ap.add_argument("--machines", default="4,8", help="machine counts: N (one level) or MxS (S servers of M GPUs)")
    ap.add_argument("--bandwidth", type=float, default=1e9, help="bytes/s (PipeDream's -b; default 1e9, its own)")
    ap.add_argument("--bandwidths", default="10e9,1e9", help="bytes/s inside a server, between servers (MxS runs)")
    ap.add_argument("--cap", type=float, default=60.0, help="partdsl's time limit per run, s")
    ap.add_argument("--pd-timeout", type=float, default=1800.0, help="PipeDream's, s")
    ap.add_argument("--any-split", action="store_true", help="also `exact` without `acyclic` (any split)")
    args = ap.parse_args()
    found = profiles(args.pipedream)
    head = (f"{'profile':<14} {'N':>5} {'PipeDream ms':>13} {'ours on its plan':>17} {'rel diff':>9} "
            f"{'topo ms':>10} {'dp ms':>10} {'dp cert':>10} {'dp/PD':>7} {'PD s':>6} {'topo s':>7} {'dp s':>6} "
            f"{'factors (PD | dp)':>22}")
    print(head)
    print("-" * len(head))
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.profiles.split(","):
            if name not in found:
                print(f"{name:<14} not in {args.pipedream} (profiles: {', '.join(found)})")
                continue
            for item in args.machines.split(","):
                machines = [int(x) for x in item.split("x")]
                bw = [args.bandwidth] if len(machines) == 1 else [float(x) for x in args.bandwidths.split(",")]
                if len(bw) != len(machines):
                    sys.exit(f"--machines {item} has {len(machines)} levels and --bandwidths {args.bandwidths} "
                             f"gives {len(bw)} bandwidths: give one per level, innermost first")
                compare(args, name, found[name], machines, bw, Path(tmp))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npartdsl peak memory: {peak:.0f} MiB; PipeDream at -b {args.bandwidth:g} B/s (MxS: {args.bandwidths}), "
          "no activation compression (its DP then charges no activation transfers, nor does the converted spec)")


def compare(args: argparse.Namespace, name: str, graph: Path, machines: list[int], bw: list[float], tmp: Path) -> None:
    """One row: PipeDream's run, our evaluator on its plan, `topo` (one level) and `dp`."""
    from partdsl import solve
    from partdsl.convert.pipedream_profile import pipedream_spec, plan
    from partdsl.evaluator.evaluate import evaluate

    label = "x".join(map(str, machines))
    try:
        pd = run_pipedream(args.pipedream, graph, machines, bw, tmp, args.pd_timeout)
    except subprocess.TimeoutExpired:
        print(f"{name:<14} {label:>5}  PipeDream gave no plan: its optimizer ran past "
              f"--pd-timeout {args.pd_timeout:g} s")
        return
    except RuntimeError as e:
        print(f"{name:<14} {label:>5}  PipeDream gave no plan: {str(e)[:90]}")
        return
    spec = pipedream_spec(graph, machines[0] if len(machines) == 1 else machines, bw[0] if len(bw) == 1 else bw)
    dev, reps = plan(spec, pd["plan"], pd["factors"])
    mine = evaluate(spec, dev, replicas_of=reps)
    runs = {}
    for method in ("topo", "dp") if len(machines) == 1 else ("dp",):  # topo does not model levels
        t = time.monotonic()
        runs[method] = (solve(spec, method=method, time_limit=args.cap), time.monotonic() - t)
    dp, dp_s = runs["dp"]
    topo = f"{runs['topo'][0].objective:>10.4f}" if "topo" in runs else f"{'-':>10}"
    topo_s = f"{runs['topo'][1]:>7.1f}" if "topo" in runs else f"{'-':>7}"
    ours = "+".join(str(v) for v in sorted((dp.replicas or {}).values(), reverse=True)) or "1s"
    print(f"{name:<14} {label:>5} {pd['ms']:>13.6f} {mine.objective:>17.6f} "
          f"{abs(mine.objective - pd['ms']) / pd['ms']:>9.1e} {topo} "
          f"{dp.objective:>10.4f} {certificate(dp):>10} {dp.objective / pd['ms']:>7.4f} "
          f"{pd['seconds']:>6.1f} {topo_s} {dp_s:>6.1f} "
          f"{'+'.join(map(str, pd['factors'])) + ' | ' + ours:>22}"
          + ("" if mine.feasible else "  (PD plan infeasible here: " + mine.violations[0].message + ")"))
    if args.any_split:
        free = replace(spec, constraints=replace(spec.constraints, acyclic=False))
        t = time.monotonic()
        ex = solve(free, method="exact", time_limit=args.cap)
        print(f"{'':<14} {'':>5} any split, exact: {ex.objective:.4f} ms, {ex.status.value}, bound "
              f"{ex.bound:.4f}, exact / PipeDream {ex.objective / pd['ms']:.4f}, "
              f"{time.monotonic() - t:.1f} s, replicas {dict(ex.replicas or {})}")


def certificate(r) -> str:  # type: ignore[no-untyped-def]
    """`optimal`, or the gap to the proven bound (on levels, the DP's relaxation), or the status."""
    if r.status.value == "optimal":
        return "optimal"
    return f"gap {100 * r.gap:.2f}%" if math.isfinite(r.gap) else r.status.value


if __name__ == "__main__":
    main()

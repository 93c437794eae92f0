"""Run the authors' own code of Tarnawski et al. (msr-fiddle/dnn-partitioning, MIT) on its
bundled inputs and write what it prints to data/dnn-partitioning/reference/outputs.json,
the values tests/methods/test_reference_baselines.py holds our baselines to.

    python benchmarks/reference_outputs.py CHECKOUT [--gpart PATH] [--timeout S] [--out FILE]

CHECKOUT is a clone of https://github.com/msr-fiddle/dnn-partitioning (commit b207b6a).
`throughput-dp/dp.cpp` is compiled with g++ -O3 and run with `-linearize` (DPL), `-pipeDream`,
`-expert` (the human-expert splits; a training workload without one takes its inference
split, as the code does) and, given Scotch's `gpart` (Debian: scotch_gpart), `-scotch` on
every throughput input; on every latency input, `latency-greedy/greedy.cpp` (the greedy),
its `-computeLatency` of dp.cpp's split (the max-load DP baseline) and of the Scotch split.
The graphs -scotch writes are kept in reference/scotch/. A run past --timeout seconds or 8 GB of memory is recorded as null (the DP on InceptionV3's
latency graph used 16 GB in 20 minutes and did not finish).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import tempfile
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "data" / "dnn-partitioning" / "reference" / "outputs.json"
FOLDERS = {"LayerGraphs": "throughput", "OperatorGraphs": "throughput-operators"}
LATENCY = {"LayerGraphs": "latency", "OperatorGraphs": "latency-operators"}
MEMORY = 8 << 30
GRAPHS = OUT.parent / "scotch"  # the graphs -scotch writes, one per throughput and latency input


class Runner:
    """The compiled programs, each run with a time and memory cap in a scratch folder (-scotch
    writes scotch.grf and scotch.map there) whose PATH finds `gpart`."""

    def __init__(self, repo: Path, gpart: Path | None, timeout: float) -> None:
        self.dir = Path(tempfile.mkdtemp())
        self.timeout = timeout
        for name, src in (("dp", "throughput-dp/dp.cpp"), ("greedy", "latency-greedy/greedy.cpp")):
            subprocess.run(["g++", "-O3", "-std=c++17", str(repo / src), "-o", str(self.dir / name)], check=True)
        self.env = dict(os.environ)
        if gpart is not None:
            (self.dir / "bin").mkdir()
            (self.dir / "bin" / "gpart").symlink_to(gpart.resolve())
            self.env["PATH"] = f"{self.dir / 'bin'}{os.pathsep}{self.env['PATH']}"

    def run(self, prog: str, args: list[str], stdin: Path) -> str | None:
        """stdout + stderr, or None past the caps."""
        def cap() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
        try:
            p = subprocess.run([str(self.dir / prog), *args], stdin=stdin.open(), capture_output=True, text=True,
                               timeout=self.timeout, cwd=self.dir, env=self.env, preexec_fn=cap)
        except subprocess.TimeoutExpired:
            return None
        return p.stdout + "\n" + p.stderr if p.returncode == 0 else None

    def keep_graph(self, name: str) -> None:
        """Keep the scotch.grf the last -scotch run wrote (tests compare ours with it byte for byte)."""
        GRAPHS.mkdir(parents=True, exist_ok=True)
        (GRAPHS / f"{name}.grf").write_bytes((self.dir / "scotch.grf").read_bytes())

    def split_json(self, out: str | None) -> Path | None:
        """The result JSON a run printed (after any text lines), saved to a file."""
        if out is None:
            return None
        start = out.find("{")
        if start < 0:
            return None
        obj, _ = json.JSONDecoder().raw_decode(out[start:])
        path = Path(tempfile.mkdtemp()) / "split.json"
        path.write_text(json.dumps(obj))
        return path


def last_number(pattern: str, out: str | None) -> float | None:
    found = re.findall(pattern, out or "")
    return float(found[-1]) if found else None


def throughput(r: Runner, repo: Path, f: Path, layers: bool, scotch: bool) -> dict:
    row: dict = {}
    for mode, key in (("-linearize", "dpl"), ("-pipeDream", "pipedream")):
        out = r.run("dp", [mode], f)
        row[key] = json.loads(out[out.index("{"):out.rindex("}") + 1])["maxLoad"] if out else None
    model, kind = f.stem.rsplit("_", 1)
    split = next((p for p in (repo / "human-experts" / f"{model}_{kind}_expert.json",
                              repo / "human-experts" / f"{model}_inference_expert.json") if p.exists()), None)
    if layers and split is not None:
        row["expert"] = last_number(r"max-load of the split: (\S+)", r.run("dp", ["-expert", str(split)], f))
        row["expert_split"] = split.name
    if scotch:
        row["scotch"] = last_number(r"computed maxLoad for Scotch result: (\S+)", r.run("dp", ["-scotch"], f))
        r.keep_graph(f"{FOLDERS[f.parent.name]}--{f.stem}")
    return row


def latency(r: Runner, f: Path, scotch: bool) -> dict:
    out = r.run("greedy", [], f)
    row: dict = {"greedy": json.loads(out[out.index("{"):out.rindex("}") + 1])["totalLatency"] if out else None}
    modes = [("maxload_dp", [])] + ([("scotch", ["-scotch"])] if scotch else [])
    for key, args in modes:
        split = r.split_json(r.run("dp", args, f))
        if args:
            r.keep_graph(f"{LATENCY[f.parent.name]}--{f.stem}")
        scored = r.run("greedy", ["-computeLatency", str(split)], f) if split else None
        row[key] = last_number(r"the latency of given split is: (\S+)", scored)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkout", type=Path)
    ap.add_argument("--gpart", type=Path, help="Scotch's gpart (e.g. /usr/bin/scotch_gpart): adds the -scotch runs")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per program run (default 600)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    repo = args.checkout
    commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    r = Runner(repo, args.gpart, args.timeout)
    scotch = args.gpart is not None
    values: dict[str, dict] = {}
    for folder, ours in FOLDERS.items():
        for f in sorted((repo / "throughput-inputs" / folder).glob("*.json")):
            values[f"{ours}/{f.stem}"] = throughput(r, repo, f, folder == "LayerGraphs", scotch)
            print(ours, f.stem, values[f"{ours}/{f.stem}"], flush=True)
    for folder, ours in LATENCY.items():
        for f in sorted((repo / "latency-inputs" / folder).glob("*.json")):
            values[f"{ours}/{f.stem}"] = latency(r, f, scotch)
            print(ours, f.stem, values[f"{ours}/{f.stem}"], flush=True)
    gxx = subprocess.run(["g++", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    doc = {"source": "https://github.com/msr-fiddle/dnn-partitioning", "commit": commit, "compiler": gxx,
           "scotch": (subprocess.run([str(args.gpart), "-V"], capture_output=True, text=True).stderr.strip().splitlines()
                      or ["?"])[0] if scotch else None,
           "limits": f"{args.timeout:g} s and {MEMORY >> 30} GB per run; null: not finished within them",
           "modes": {"dpl": "dp.cpp -linearize", "pipedream": "dp.cpp -pipeDream",
                     "expert": "dp.cpp -expert SPLIT (max-load of the split)", "scotch": "dp.cpp -scotch (gpart)",
                     "greedy": "greedy.cpp (totalLatency)",
                     "maxload_dp": "greedy.cpp -computeLatency of dp.cpp's split (latency files); "
                                   "with scotch: of dp.cpp -scotch's split"},
           "values": values}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}: {len(values)} workloads")


if __name__ == "__main__":
    main()

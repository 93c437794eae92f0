"""Run the authors' own code of Tarnawski et al. (msr-fiddle/dnn-partitioning, MIT) on its
bundled inputs and write what it prints to data/dnn-partitioning/reference/outputs.json,
the values tests/methods/test_reference_baselines.py holds our baselines to.

    python benchmarks/reference_outputs.py CHECKOUT [--out FILE]

CHECKOUT is a clone of https://github.com/msr-fiddle/dnn-partitioning (commit b207b6a);
`throughput-dp/dp.cpp` is compiled with g++ -O3 and run with `-linearize` (DPL),
`-pipeDream` and `-expert` (the human-expert splits; a training workload without one
takes its inference split, as the code does) on every throughput input; on every latency
input, `latency-greedy/greedy.cpp` (the greedy) and its `-computeLatency` of dp.cpp's split
(the max-load DP baseline).
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import tempfile
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "data" / "dnn-partitioning" / "reference" / "outputs.json"
FOLDERS = {"LayerGraphs": "throughput", "OperatorGraphs": "throughput-operators"}
LATENCY = {"LayerGraphs": "latency", "OperatorGraphs": "latency-operators"}


def _latency(exe: Path, greedy: Path, f: Path) -> dict[str, float]:
    """The greedy's latency, and the latency of the max-load DP's split."""
    out = json.loads(subprocess.run([str(greedy)], stdin=f.open(), capture_output=True, text=True, check=True).stdout)
    split = Path(tempfile.mkdtemp()) / "split.json"
    split.write_text(subprocess.run([str(exe)], stdin=f.open(), capture_output=True, text=True, check=True).stdout)
    run = subprocess.run([str(greedy), "-computeLatency", str(split)], stdin=f.open(), capture_output=True, text=True,
                         check=True)
    err = run.stdout + run.stderr
    return {"greedy": out["totalLatency"],
            "maxload_dp": float(re.findall(r"the latency of given split is: (\S+)", err)[-1])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkout", type=Path)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    repo = args.checkout
    commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    exe = Path(tempfile.mkdtemp()) / "dp"
    subprocess.run(["g++", "-O3", "-std=c++17", str(repo / "throughput-dp" / "dp.cpp"), "-o", str(exe)], check=True)
    greedy = exe.parent / "greedy"
    subprocess.run(["g++", "-O3", "-std=c++17", str(repo / "latency-greedy" / "greedy.cpp"), "-o", str(greedy)], check=True)
    gxx = subprocess.run(["g++", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    values: dict[str, dict[str, float]] = {}
    for folder, ours in FOLDERS.items():
        for f in sorted((repo / "throughput-inputs" / folder).glob("*.json")):
            row = values.setdefault(f"{ours}/{f.stem}", {})
            for mode, key in (("-linearize", "dpl"), ("-pipeDream", "pipedream")):
                out = subprocess.run([str(exe), mode], stdin=f.open(), capture_output=True, text=True, check=True).stdout
                row[key] = json.loads(out)["maxLoad"]
            model, kind = f.stem.rsplit("_", 1)
            split = next((p for p in (repo / "human-experts" / f"{model}_{kind}_expert.json",
                                      repo / "human-experts" / f"{model}_inference_expert.json") if p.exists()), None)
            if folder == "LayerGraphs" and split is not None:
                err = subprocess.run([str(exe), "-expert", str(split)], stdin=f.open(), capture_output=True,
                                     text=True, check=True).stderr
                row["expert"] = float(re.findall(r"max-load of the split: (\S+)", err)[-1])
                row["expert_split"] = split.name
    for folder, ours in LATENCY.items():
        for f in sorted((repo / "latency-inputs" / folder).glob("*.json")):
            values[f"{ours}/{f.stem}"] = _latency(exe, greedy, f)
    doc = {"source": "https://github.com/msr-fiddle/dnn-partitioning", "commit": commit, "compiler": gxx,
           "program": "throughput-dp/dp.cpp, g++ -O3", "modes": {"dpl": "-linearize", "pipedream": "-pipeDream",
                                                                 "expert": "-expert SPLIT (stderr: max-load of the split)",
                                                                 "greedy": "latency-greedy/greedy.cpp (totalLatency)",
                                                                 "maxload_dp": "greedy -computeLatency of dp.cpp's split"},
           "values": values}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}: {len(values)} workloads")


if __name__ == "__main__":
    main()

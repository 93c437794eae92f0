"""Sweeps and `part bound` on one executor option: local, or a real Dask distributed
cluster (a LocalCluster of worker processes on the loopback address), with the same
answers; `part sweep`'s tidy rows, resume, and its errors."""
from __future__ import annotations

import csv
import json

import pytest

from tests.support import EXAMPLES, run_part

MTPP = str(EXAMPLES / "mtpp_overflow.part")
KEEP = ("spec", "params", "method", "solver", "seed", "status", "objective", "bound", "stopped", "error")


@pytest.fixture(scope="module")
def cluster():  # type: ignore[no-untyped-def]
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as c:
        yield c.scheduler_address  # tcp://127.0.0.1:PORT


def _rows(path) -> list[dict]:  # type: ignore[no-untyped-def]
    with open(path, newline="") as f:
        return sorted(({k: r[k] for k in KEEP} for r in csv.DictReader(f)),
                      key=lambda r: (r["spec"], r["params"], r["method"], r["solver"]))


def test_sweep_on_dask_equals_the_local_sweep(cluster, tmp_path) -> None:  # type: ignore[no-untyped-def]
    args = ["sweep", MTPP, str(EXAMPLES / "latency.part"), "--method", "topo,exact,single", "--solver", "highs,scip",
            "-D", "k=2,3", "--seed", "1"]
    p = run_part(*args, "-o", str(tmp_path / "local.csv"))
    assert p.returncode == 0, p.stderr
    p = run_part(*args, "-o", str(tmp_path / "dask.csv"), "--executor", cluster.replace("tcp://", "dask://"))
    assert p.returncode == 0, p.stderr
    local, remote = _rows(tmp_path / "local.csv"), _rows(tmp_path / "dask.csv")
    assert len(local) == 2 * 2 * (1 + 2 + 1)  # specs x k x (topo, exact on 2 solvers, single)
    assert local == remote
    exact = [r for r in local if r["method"] == "exact"]
    assert all(r["status"] == "optimal" for r in exact)
    by_point: dict = {}
    for r in exact:  # HiGHS and SCIP agree on every point
        by_point.setdefault((r["spec"], r["params"]), set()).add(round(float(r["objective"]), 6))
    assert all(len(v) == 1 for v in by_point.values())


def test_solve_sweep_and_bound_on_dask(cluster) -> None:  # type: ignore[no-untyped-def]
    args = ["solve", MTPP, "-D", "k=2,3,4", "--method", "exact", "--json"]
    local = json.loads(run_part(*args).stdout)["sweep"]
    p = run_part(*args, "--executor", cluster)
    assert p.returncode == 0, p.stderr
    remote = json.loads(p.stdout)["sweep"]
    assert [(x["params"], x["status"], round(x["objective"], 9)) for x in local] == [
        (x["params"], x["status"], round(x["objective"], 9)) for x in remote]
    args = ["bound", MTPP, "-D", "k=3", "--time-limit", "60", "--json"]
    local = json.loads(run_part(*args).stdout)
    p = run_part(*args, "--executor", cluster)
    assert p.returncode == 0, p.stderr
    remote = json.loads(p.stdout)
    assert remote["best"] == pytest.approx(local["best"])
    for name, b in local["bounds"].items():
        assert remote["bounds"][name]["value"] == pytest.approx(b["value"]), name
    assert remote["bounds"]["bottleneck_guess"]["value"] is not None  # its k MIPs ran on the cluster


def test_sweep_resumes_without_redoing_rows(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "runs.jsonl"
    args = ["sweep", MTPP, "--method", "topo,single,greedy", "-D", "k=2,3", "-o", str(out), "--json"]
    first = json.loads(run_part(*args).stdout)
    assert first["ran"] == 6 and first["resumed"] == 0
    lines = out.read_text().splitlines()
    out.write_text("\n".join(lines[:2]) + "\n")  # as if interrupted after two rows
    again = json.loads(run_part(*args).stdout)
    assert again["ran"] == 4 and again["resumed"] == 2
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) == 6 and len({(r["params"], r["method"]) for r in rows}) == 6
    assert sorted(r["objective"] for r in rows) == sorted(r["objective"] for r in first["rows"])


def test_sweep_rows_say_what_failed(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "runs.csv"
    p = run_part("sweep", str(EXAMPLES / "tiny.part"), "--method", "topo,heft,dp_typo", "-o", str(out))
    assert p.returncode == 2 and "2 run(s) failed" in p.stderr
    rows = {r["method"]: r for r in csv.DictReader(out.open())}
    assert rows["topo"]["status"] in ("feasible", "optimal") and rows["topo"]["error"] == ""
    assert rows["heft"]["status"] == "error" and "optimizes task_latency or throughput" in rows["heft"]["error"]
    assert rows["dp_typo"]["status"] == "error" and "unknown method" in rows["dp_typo"]["error"]


def test_a_resumed_sweep_runs_its_failed_rows_again(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Issue 28, defect 8: a failed row is not a done row."""
    out = tmp_path / "runs.csv"
    args = ["sweep", str(EXAMPLES / "tiny.part"), "--method", "topo,dp_typo", "-o", str(out), "--json"]
    first = json.loads(run_part(*args).stdout)
    assert first["ran"] == 2 and first["resumed"] == 0
    again = json.loads(run_part(*args).stdout)
    assert again["ran"] == 1 and again["resumed"] == 1  # topo is done; dp_typo failed and is run again
    assert [r["method"] for r in again["rows"]] == ["topo", "dp_typo"]


def test_executor_errors() -> None:
    p = run_part("solve", MTPP, "-D", "k=2,3", "--executor", "spark://x:1")
    assert p.returncode == 2 and "not an executor I know" in p.stderr
    p = run_part("bound", MTPP, "--executor", "tcp://127.0.0.1:9")  # nothing listens on the discard port
    assert p.returncode == 2 and "cannot reach the Dask scheduler" in p.stderr
    p = run_part("sweep", MTPP, "--executor", "dask://127.0.0.1:8786", without="distributed")
    assert p.returncode == 5 and "pip install 'partdsl[dask]'" in p.stderr


def test_milp_split_modules_on_dask(cluster) -> None:  # type: ignore[no-untyped-def]
    """MILP-SPLIT's module MILPs run on the cluster (`part solve --executor`): the same
    proven optimum as locally on a single-channel chain."""
    import tempfile
    from pathlib import Path

    from partdsl.dsl.printer import to_part
    from partdsl.generators.randwire import RandWire, randwire_spec

    spec = randwire_spec(RandWire("er", 6, 3, seed=4), "latency")
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "rw.part"
        f.write_text(to_part(spec))
        args = ["solve", str(f), "--method", "milp_split", "--json", "-O", "module_limit=30"]
        local = json.loads(run_part(*args).stdout)
        p = run_part(*args, "--executor", cluster)
        assert p.returncode == 0, p.stderr
        remote = json.loads(p.stdout)
    assert local["status"] == remote["status"] == "optimal"
    assert remote["objective"] == pytest.approx(local["objective"])


def test_specs_travel_as_content_to_the_workers(cluster, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Issue 32, item 4: a spec given by a relative path that imports a JSON graph by a
    relative path, swept from its own folder; the Dask workers run in another folder (the
    test's), where neither path exists: the sweep still runs there, as the parsed spec
    travels with each task. Both sweeps (part sweep, part solve -D) agree with the local run."""
    assert run_part("convert", MTPP, "--to", "json", "-o", str(tmp_path / "g.json")).returncode == 0
    body = (EXAMPLES / "mtpp_overflow.part").read_text()
    start, end = body.index("graph encoder {"), body.index("platform {")
    (tmp_path / "s.part").write_text(body[:start] + 'graph encoder = import "g.json"\n' + body[end:])
    dask = cluster.replace("tcp://", "dask://")
    args = ["sweep", "s.part", "--method", "topo,exact", "-D", "k=2,3"]
    local = run_part(*args, "-o", "local.csv", cwd=tmp_path)
    remote = run_part(*args, "-o", "dask.csv", "--executor", dask, cwd=tmp_path)
    assert local.returncode == 0 and remote.returncode == 0, remote.stderr
    rows = _rows(tmp_path / "dask.csv")
    assert rows == _rows(tmp_path / "local.csv") and len(rows) == 4
    assert all(r["status"] in ("optimal", "feasible") and r["error"] == "" for r in rows)
    p = run_part("solve", "s.part", "-D", "k=2,3", "--method", "topo", "--executor", dask, "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert [x["params"] for x in json.loads(p.stdout)["sweep"]] == [{"k": "2"}, {"k": "3"}]

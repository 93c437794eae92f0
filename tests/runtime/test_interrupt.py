"""Ctrl-C stops a long run and prints the best answer so far (exit 130), whether it lands
in a kernel, in HiGHS or SCIP (C code, where Python cannot raise), or between the bounds
of `part bound`; stdout stays one JSON document; the answer is re-scored by the evaluator."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from partdsl import to_part
from partdsl.convert.to_part import dnn_partitioning_to_part
from partdsl.generators.regal import regal_spec

from tests.support import run_part


def interrupted(args: list[str], marker: str, delay: float = 1.0) -> tuple[int, str, str, float]:
    """Run `part args`, send SIGINT (to its process group, as a terminal does) `delay` s
    after `marker` shows in its progress; (exit code, stdout, stderr, seconds it took to stop).
    The child starts with SIGINT at its default, as a foreground command does: when the
    tests run as a background job of a non-interactive shell, SIGINT is inherited as
    ignored, and Python then installs no KeyboardInterrupt handler at all."""
    exe = shutil.which("part", path=str(Path(sys.executable).parent))
    cmd = ([exe] if exe else [sys.executable, "-m", "partdsl.cli.main"]) + args + ["--progress"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    seen = []
    assert p.stderr is not None
    for line in p.stderr:
        seen.append(line)
        if marker in line:
            break
    else:
        p.wait()
        pytest.fail(f"'{marker}' never showed: {''.join(seen)}")
    time.sleep(delay)
    t = time.monotonic()
    os.killpg(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=120)
    return p.returncode, out, "".join(seen) + err, time.monotonic() - t


@pytest.fixture(scope="module")
def gnmt_any(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("gnmt")
    f = tmp / "gnmt_any.part"
    f.write_text(dnn_partitioning_to_part(data_dir / "throughput" / "gnmt_inference.json", split="any",
                                          relative_to=tmp))
    return f


def check_answer(spec: Path, out: str, tmp_path: Path) -> dict:
    r = json.loads(out)  # nothing else on stdout (SCIP prints its Ctrl-C notice there: it goes to stderr)
    assert r["stopped"] == "interrupted" and r["status"] in ("feasible", "optimal")
    assert r["bound"] <= r["objective"] and r["assignment"]
    saved = tmp_path / "a.json"
    saved.write_text(json.dumps(r["assignment"]))
    ev = json.loads(run_part("eval", str(spec), str(saved), "--json").stdout)
    assert ev["objective"] == pytest.approx(r["objective"], rel=1e-12) and ev["feasible"]
    return r


@pytest.mark.slow  # a long solve (conftest.py: the tiers)
@pytest.mark.parametrize("solver", ["highs", "scip"])
def test_ctrl_c_in_the_mip_returns_the_incumbent_and_its_bound(solver: str, gnmt_any: Path, tmp_path: Path) -> None:
    code, out, err, took = interrupted(
        ["solve", str(gnmt_any), "--method", "exact", "--solver", solver, "--time-limit", "300", "--gap", "0",
         "-O", "heuristics=0.01", "--threads", "1", "--json"], "rows x", delay=4.0)
    assert code == 130, err
    assert took < 20, f"{solver} went on for {took:.1f} s after Ctrl-C"
    assert "interrupted: the best answer found so far is printed" in err
    r = check_answer(gnmt_any, out, tmp_path)
    assert r["bound"] > 26.1  # the MIP's dual bound, above the cheap bound (26.08)


@pytest.mark.slow  # a long solve (conftest.py: the tiers)
def test_ctrl_c_in_a_kernel_returns_its_best_split(gnmt_any: Path, tmp_path: Path) -> None:
    code, out, err, took = interrupted(["solve", str(gnmt_any), "--method", "load_search", "-O", "stall=1000000",
                                        "--json"], "load search:", delay=0.5)
    assert code == 130 and took < 10, err
    check_answer(gnmt_any, out, tmp_path)


@pytest.mark.slow  # a long solve (conftest.py: the tiers)
def test_ctrl_c_in_part_bound_keeps_the_bounds_computed(tmp_path: Path) -> None:
    spec = tmp_path / "regal.part"
    spec.write_text(to_part(regal_spec(120, 8, "ba", seed=3)))
    code, out, err, took = interrupted(["bound", str(spec), "--time-limit", "300", "--workers", "1", "--json"],
                                       "lp:")
    assert code == 130 and took < 30, err
    h = json.loads(out)
    assert h["interrupted"] and h["best"] is not None
    values = {k: b["value"] for k, b in h["bounds"].items()}
    assert values["simple"] is not None and values["lp"] is not None
    assert all(v is None or v <= h["best"] * (1 + 1e-9) for v in values.values())
    assert h["bounds"]["exact"]["value"] is None and h["bounds"]["exact"]["note"] == "not computed: interrupted"


@pytest.mark.slow  # a long solve (conftest.py: the tiers)
def test_ctrl_c_in_bottleneck_guess_probe_starts_no_processes(tmp_path: Path) -> None:
    """Ctrl-C while the first guess runs here (the probe, default --workers): the others run
    here too, where the flag stops each at once, not on new processes that never saw it."""
    spec = tmp_path / "regal.part"
    spec.write_text(to_part(regal_spec(120, 8, "ba", seed=3)))
    code, out, err, took = interrupted(["bound", str(spec), "--time-limit", "300", "--only", "bottleneck_guess",
                                        "--json"], "best heuristic:", delay=0.3)
    assert code == 130 and took < 30, err
    h = json.loads(out)
    assert h["interrupted"] and h["bounds"]["bottleneck_guess"]["solved"] is False

"""Every bundled example and every file of data/dnn-partitioning imports,
converts, checks and evaluates; the human-expert splits score what Table 1 of Tarnawski
et al. reports; the simple method reaches the published optimum where it should."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from partdsl import evaluate, parse, parse_file, solve, to_part
from partdsl.convert.to_part import dnn_partitioning_to_part
from partdsl.runtime.files import read_assignment

from tests.support import EXAMPLES, logged_bounds, run_part

WORKLOADS = ["bert24_inference", "resnet50_inference", "inceptionv3_inference", "gnmt_inference",
             "bert24_training", "resnet50_training", "inceptionv3_training", "gnmt_training"]
# Table 1 / README of the data folder: expert split, optimal contiguous split (DP/IP)
EXPERT = {"bert24_inference": 20.08, "bert24_training": 49.40, "gnmt_inference": 46.21,
          "gnmt_training": 137.15, "inceptionv3_inference": 102.48, "resnet50_inference": 43.92}
OPTIMAL_CONTIGUOUS = {"bert24_inference": 17.79, "resnet50_inference": 33.77, "inceptionv3_inference": 51.55,
                      "gnmt_inference": 32.91, "bert24_training": 41.75, "resnet50_training": 78.63,
                      "inceptionv3_training": 122.76, "gnmt_training": 107.00}


# Table 1: best non-contiguous split (Gurobi IP, 1% gap or 20 minutes) and Tarnawski's local search
NON_CONTIGUOUS_IP = {"bert24_inference": 17.71, "resnet50_inference": 33.31, "inceptionv3_inference": 51.52,
                     "gnmt_inference": 31.68, "bert24_training": 39.79, "resnet50_training": 76.65,
                     "inceptionv3_training": 117.72, "gnmt_training": 88.47}
LOCAL_SEARCH = {"bert24_inference": 17.80, "resnet50_inference": 35.63, "inceptionv3_inference": 54.03,
                "gnmt_inference": 31.75, "bert24_training": 39.93, "resnet50_training": 81.32,
                "inceptionv3_training": 122.80, "gnmt_training": 91.52}


def converted(path: Path, tmp: Path, objective: str = "bottleneck", split: str = "contiguous") -> Path:
    out = tmp / f"{path.stem}.part"
    out.write_text(dnn_partitioning_to_part(path, objective, split=split, relative_to=tmp))
    return out


@pytest.mark.parametrize("folder,objective", [("throughput", "bottleneck"), ("latency", "latency")])
def test_every_data_file_converts_checks_and_evaluates(data_dir: Path, tmp_path: Path, folder: str,
                                                       objective: str) -> None:
    files = sorted((data_dir / folder).glob("*.json"))
    assert len(files) == (8 if folder == "throughput" else 4)
    for f in files:
        raw = json.loads(f.read_text())
        spec = parse_file(converted(f, tmp_path, objective))
        assert len(spec.graph.nodes) == len(raw["nodes"])
        assert spec.graph.is_training == any(n.get("isBackwardNode") for n in raw["nodes"])
        assert spec.platform.classes[0].count == raw["maxFPGAs"]
        assert spec.platform.classes[1].count == raw["maxCPUs"]
        # everything on the CPU: a finite, easily recomputed score
        cpu = spec.platform.devices.index("cpu[0]")
        ev = evaluate(spec, np.full(len(spec.graph.nodes), cpu))
        total_cpu = sum(n["cpuLatency"] for n in raw["nodes"])
        if objective == "bottleneck":
            assert ev.objective == pytest.approx(total_cpu)
        else:
            assert 0 < ev.objective <= total_cpu + 1e-9
        # and the text round-trips through the printer
        assert parse(to_part(spec)) == spec


@pytest.mark.parametrize("name", sorted(EXPERT))
def test_expert_splits_score_as_published(data_dir: Path, tmp_path: Path, name: str) -> None:
    spec = parse_file(converted(data_dir / "throughput" / f"{name}.json", tmp_path))
    arr = read_assignment(spec, data_dir / "human-experts" / f"{name}_expert.json")
    ev = evaluate(spec, arr)
    assert ev.feasible, ev.violations
    assert round(ev.objective, 2) == pytest.approx(EXPERT[name], abs=0.006)


def test_cli_eval_on_expert_file(data_dir: Path, tmp_path: Path) -> None:
    spec = converted(data_dir / "throughput" / "gnmt_training.json", tmp_path)
    r = run_part("eval", str(spec), str(data_dir / "human-experts" / "gnmt_training_expert.json"), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert round(out["objective"], 2) == 137.15
    assert set(out["loads"]) == {f"acc[{i}]" for i in range(6)} | {"cpu[0]"}
    assert out["violations"] == []


@pytest.mark.parametrize("name", WORKLOADS)
def test_topo_method_on_published_workloads(data_dir: Path, tmp_path: Path, name: str) -> None:
    spec = parse_file(converted(data_dir / "throughput" / f"{name}.json", tmp_path))
    r = solve(spec, method="topo")
    assert r.status.has_solution() and r.evaluation.feasible
    assert r.objective == evaluate(spec, read_assignment_from(spec, r.assignment)).objective
    # never better than the proven optimum of contiguous splits; at it for 7 of the 8
    assert r.objective >= OPTIMAL_CONTIGUOUS[name] - 0.006
    assert r.objective <= OPTIMAL_CONTIGUOUS[name] * 1.01
    assert r.bound <= OPTIMAL_CONTIGUOUS[name] + 0.006  # published to two decimals


@pytest.mark.parametrize("name", ["bert24_inference", "resnet50_inference", "gnmt_inference", "bert24_training"])
def test_load_search_beats_published_local_search(data_dir: Path, tmp_path: Path, name: str) -> None:
    """Non-contiguous splits: at least as good as Tarnawski's local search, within 1% of the
    published IP value, never below the proven bound."""
    spec = parse_file(converted(data_dir / "throughput" / f"{name}.json", tmp_path, split="any"))
    topo = solve(spec, method="topo")
    r = solve(spec, method="load_search", time_limit=60, options={"stall": 30})
    assert r.evaluation.feasible and not spec.constraints.contiguous
    assert r.objective == evaluate(spec, read_assignment_from(spec, r.assignment)).objective
    assert r.objective < topo.objective  # the contiguous start is not a local optimum here
    assert r.objective <= LOCAL_SEARCH[name] + 0.005
    assert r.objective <= NON_CONTIGUOUS_IP[name] * 1.01
    assert r.bound <= r.objective


@pytest.mark.slow  # a long solve (conftest.py: the tiers)
def test_mip_start_restarts_reach_the_published_ip_value(data_dir: Path, tmp_path: Path) -> None:
    """resnet50_inference, any split: continuing the load search from its best stalls at
    33.365; rounds that start afresh from the first split with new seeds reach 33.30,
    below Gurobi's published 33.31 (which the MIP then only has to certify to 1%)."""

    from partdsl.methods.mip_start import best_start
    from partdsl.runtime.deadline import Deadline

    spec = parse_file(converted(data_dir / "throughput" / "resnet50_inference.json", tmp_path, split="any"))
    dev, value = best_start(spec, 0, Deadline.after(120), None, None)
    assert value <= NON_CONTIGUOUS_IP["resnet50_inference"]
    assert value == evaluate(spec, dev).objective


@pytest.mark.slow  # a long solve (conftest.py: the tiers)
def test_exact_reaches_the_published_non_contiguous_ip_value(data_dir: Path, tmp_path: Path) -> None:
    """bert24_training, any split: the load search's MIP start and HiGHS reach Gurobi's
    39.79 and certify it within 1%."""
    spec = parse_file(converted(data_dir / "throughput" / "bert24_training.json", tmp_path, split="any"))
    r = solve(spec, method="exact", time_limit=120, gap=0.01)
    assert r.status.value == "optimal" and r.gap <= 0.01
    assert r.objective <= NON_CONTIGUOUS_IP["bert24_training"] + 0.005
    assert r.bound <= r.objective
    started = [ln for ln in r.log if "MIP start:" in ln]
    assert started and "load search" in started[0]


@pytest.mark.slow  # a long solve (conftest.py: the tiers)
def test_gurobi_proves_gnmt_inference_non_contiguous_above_the_published_value(data_dir: Path,
                                                                              tmp_path: Path) -> None:
    """gnmt_inference, any split: the published IP value (31.68, Gurobi) is below what any
    split costs under the data's cost model. Gurobi itself (its pip edition: this model,
    1,573 rows x 1,621 columns, is within its size limit) proves 31.6873 optimal, as HiGHS
    does at gap 0 (benchmarks); the optimum's transfers are 3 x 0.0061 ms on the device
    holding n11 and n96, whose compute alone is 31.669."""
    spec = parse_file(converted(data_dir / "throughput" / "gnmt_inference.json", tmp_path, split="any"))
    r = solve(spec, method="exact", solver="gurobi", time_limit=120, gap=0.0)
    assert r.status.value == "optimal" and r.bound == pytest.approx(r.objective, abs=1e-9)
    assert r.objective == pytest.approx(31.687310546875, abs=1e-9)  # the evaluator's score of the optimum
    assert r.objective > NON_CONTIGUOUS_IP["gnmt_inference"] + 0.005  # not a rounding of 31.68


def test_contiguous_exact_is_certified_by_the_class_lp_bound(data_dir: Path, tmp_path: Path) -> None:
    """inceptionv3_inference, contiguous: the contiguous IP's own dual bound stays at the
    equal-spread bound (44.42, a 14% gap) for minutes, and the non-contiguous relaxation
    lifted it to within 1-2% of the published optimum 51.55 in minutes. The class LP
    (methods/bounds.py: each node's compute spread over the classes it may run on) proves
    about 50.98 at once. Asked for a 5% gap, the MIP start is certified by it and neither
    MIP runs (the relaxation's own tests: test_exact, test_formulations, test_cli)."""
    from partdsl.methods.bounds import _cheapest, _spread

    spec = parse_file(converted(data_dir / "throughput" / "inceptionv3_inference.json", tmp_path))
    r = solve(spec, method="exact", time_limit=150, gap=0.05)
    assert r.objective == pytest.approx(OPTIMAL_CONTIGUOUS["inceptionv3_inference"], abs=0.006)
    assert _spread(spec, _cheapest(spec, spec.dense.work)) < 44.43 < 50.9 < r.bound <= NON_CONTIGUOUS_IP["inceptionv3_inference"]
    assert r.gap <= 0.05 and r.status.value == "optimal"
    assert not any(ln.startswith("proven bound") for ln in r.log), r.log  # no MIP ran


@pytest.mark.slow  # a long solve (conftest.py: the tiers)
def test_a_mip_stopped_by_the_time_limit_keeps_its_dual_bound(data_dir: Path, tmp_path: Path) -> None:
    """Regression: the MIP's last incumbent and dual bound arrive just after the deadline,
    and solve() used to drop both, reporting the cheap bound (26.08 here then, 29.93
    with the class LP) instead of HiGHS's bound (29.94 after 3 s on this machine). GNMT, not BERT-24: HiGHS 1.16 proves
    BERT-24's optimum in about 3 s on an idle machine, so that test depended on the load;
    GNMT takes it a minute or two. The limit is 12 s, not 5: on a loaded machine 5 s
    could run out while the model was still being built, before HiGHS had a bound."""
    from partdsl.methods.bounds import bound

    spec = parse_file(converted(data_dir / "throughput" / "gnmt_inference.json", tmp_path, split="any"))
    r = solve(spec, method="exact", time_limit=12, gap=0.0, options={"heuristics": 0})
    assert r.stopped == "time limit" and r.status.value == "feasible"
    assert any("HiGHS dual bound (Time limit reached)" in ln for ln in r.log)
    highs = logged_bounds(r.log, "HiGHS dual bound")  # kept, not dropped for the cheap bound
    assert highs and r.bound >= max(max(highs) * (1 - 1e-5), bound(spec))
    assert r.bound <= NON_CONTIGUOUS_IP["gnmt_inference"] + 0.005


@pytest.mark.slow  # a long solve (conftest.py: the tiers)
def test_scip_keeps_the_time_limit_and_reports_no_placeholder_bound(data_dir: Path, tmp_path: Path) -> None:
    """Regression: on inceptionv3_training SCIP's symmetry detection (nauty, which SCIP's
    time limit does not interrupt) ran 116 s under a 30 s limit, and SCIP's "no bound"
    (-1e20) was then reported as a proven bound. The limit here is 10 s; the assertion
    allows 30 s, far below the overrun."""
    import time

    from partdsl.models import maxload
    from partdsl.solvers.scip_matrix import solve_scip

    spec = parse_file(converted(data_dir / "throughput" / "inceptionv3_training.json", tmp_path, split="any"))
    t = time.monotonic()
    r = solve(spec, method="exact", solver="scip", time_limit=10, gap=0.0, options={"heuristics": 0.2})
    assert time.monotonic() - t < 30
    assert r.stopped == "time limit" and r.evaluation.feasible
    assert all(b >= 0 for b in logged_bounds(r.log, "SCIP dual bound"))  # max load >= 0
    assert 0 < r.bound <= r.objective
    mip, _ = maxload.build(spec)
    early = solve_scip(mip, time_limit=0.01)  # stops before any bound exists
    assert early.bound == -math.inf or early.bound >= 0


def read_assignment_from(spec, mapping):  # type: ignore[no-untyped-def]
    from partdsl.core.assignment import to_array

    return to_array(spec, mapping)


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.part")))
def test_every_example_checks_and_solves(example: str) -> None:
    path = EXAMPLES / example
    r = run_part("solve", str(path), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    spec = parse_file(path)
    assert out["status"] in ("optimal", "feasible")
    if spec.objective.scheduled:  # a DiviML schedule (a node may be split over devices)
        from partdsl.core.schedule import from_json
        from partdsl.evaluator.schedule_eval import evaluate_schedule

        ev = evaluate_schedule(spec, from_json(spec, out["schedule"]))
    else:
        assert set(out["assignment"]) == {n.name for n in spec.graph.nodes}
        ev = evaluate(spec, read_assignment_from(spec, out["assignment"]))
    assert ev.feasible and math.isclose(ev.objective, out["objective"], rel_tol=1e-12)
    assert run_part("check", str(path)).returncode == 0


ALL_DP = WORKLOADS  # about half a minute for all eight on 2 cores


def _dp_on(data_dir: Path, tmp_path: Path, name: str, acyclic: bool):  # type: ignore[no-untyped-def]
    path = converted(data_dir / "throughput" / f"{name}.json", tmp_path)
    if acyclic:
        path.write_text(path.read_text().replace("subject to { contiguous;", "subject to { acyclic; contiguous;"))
    spec = parse_file(path)
    return spec, solve(spec, method="dp")


@pytest.mark.slow  # a long solve (conftest.py: the tiers)
@pytest.mark.parametrize("name", ALL_DP)
def test_ideal_dp_reaches_the_published_optimum(data_dir: Path, tmp_path: Path, name: str) -> None:
    """The published contiguous optimum: proven under `acyclic` for the inference graphs (the
    DP is exhaustive there); for training graphs, under contiguity alone, as published."""
    spec, r = _dp_on(data_dir, tmp_path, name, acyclic=not name.endswith("_training"))
    assert spec.graph.is_training == name.endswith("_training")
    assert r.evaluation.feasible
    assert round(r.objective, 2) == pytest.approx(OPTIMAL_CONTIGUOUS[name], abs=0.006)
    if spec.constraints.acyclic:
        assert r.status.value == "optimal" and r.bound == pytest.approx(r.objective)
    else:  # under contiguity alone the DP proves nothing (cyclic quotients exist)
        assert r.status.value == "feasible" and r.bound < r.objective, (r.status, r.bound)


@pytest.mark.slow  # a long solve (conftest.py: the tiers)
def test_ideal_dp_under_contiguity_alone_reaches_the_optimum_and_claims_no_proof(data_dir: Path,
                                                                                tmp_path: Path) -> None:
    """The same DP without `acyclic` on an inference graph: the same split, and no proof of
    its own (a contiguous split may have a cyclic quotient). On ResNet-50 the contiguous path
    bound stays 1.7% below it, so the answer says why it is no proof; on GNMT that bound
    meets it, and the log says the proof is the path bound's."""
    _, alone = _dp_on(data_dir, tmp_path, "resnet50_inference", acyclic=False)
    assert round(alone.objective, 2) == pytest.approx(OPTIMAL_CONTIGUOUS["resnet50_inference"], abs=0.006)
    assert alone.status.value == "feasible" and alone.bound < alone.objective
    assert any("not a proof of optimality" in line for line in alone.log)
    _, proven = _dp_on(data_dir, tmp_path, "gnmt_inference", acyclic=False)
    assert round(proven.objective, 2) == pytest.approx(OPTIMAL_CONTIGUOUS["gnmt_inference"], abs=0.006)
    assert proven.status.value == "optimal" and any("contiguous path bound" in line for line in proven.log)

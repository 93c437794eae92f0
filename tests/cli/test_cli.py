"""The `part` command line contract: check / eval / solve / convert, tables and --json."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from partdsl import parse_file

from tests.support import EXAMPLES, run_part

TINY = str(EXAMPLES / "tiny.part")


def test_check_prints_summary_and_json() -> None:
    r = run_part("check", TINY)
    assert r.returncode == 0 and "tiny: 14 nodes, 13 edges" in r.stdout and "4 x gpu" in r.stdout
    out = json.loads(run_part("check", TINY, "--json", "-D", "k=3").stdout)
    assert out["ok"] and out["nodes"] == 14 and out["devices"] == ["gpu[0]", "gpu[1]", "gpu[2]", "cpu[0]"]


def test_solve_table_and_output_file(tmp_path: Path) -> None:
    out = tmp_path / "p.json"
    r = run_part("solve", TINY, "-o", str(out))
    assert r.returncode == 0
    for word in ("status", "objective", "bound", "gap", "device", "load", "all constraints satisfied"):
        assert word in r.stdout
    # the written partition evaluates to the same objective
    ev = json.loads(run_part("eval", TINY, str(out), "--json").stdout)
    solved = json.loads(run_part("solve", TINY, "--json").stdout)
    assert ev["objective"] == solved["objective"] and ev["violations"] == []
    # a full `solve --json` output is accepted by eval too
    full = tmp_path / "full.json"
    full.write_text(json.dumps(solved))
    assert json.loads(run_part("eval", TINY, str(full), "--json").stdout)["objective"] == solved["objective"]


def test_eval_lists_violations_and_strict_exit(tmp_path: Path) -> None:
    part = tmp_path / "bad.json"
    names = [n.name for n in parse_file(TINY).graph.nodes]
    part.write_text(json.dumps({n: "cpu[0]" for n in names}))  # head is `only gpu` and pinned to gpu
    r = run_part("eval", TINY, str(part), "--json")
    assert r.returncode == 0
    kinds = {v["kind"] for v in json.loads(r.stdout)["violations"]}
    assert "unsupported" in kinds
    r = run_part("eval", TINY, str(part), "--strict")
    assert r.returncode == 3 and "violation" in r.stdout


def test_convert_dnn_partitioning_variants(data_dir: Path, tmp_path: Path) -> None:
    src = data_dir / "throughput" / "bert24_training.json"
    spec = tmp_path / "b.part"
    r = run_part("convert", str(src), "--from", "dnn-partitioning", "-o", str(spec))
    assert r.returncode == 0, r.stderr
    text = spec.read_text()
    assert "minimize bottleneck training pipedream" in text and "contiguous" in text
    assert "colocate by group" in text and "memory hard" in text and "param k = 6" in text
    s = parse_file(spec)
    assert s.constraints.contiguous and s.constraints.colocate and s.graph.is_training
    anysplit = run_part("convert", str(src), "--split", "any").stdout
    assert "contiguous" not in anysplit.split("subject to")[1]
    lat = run_part("convert", str(data_dir / "latency" / "gnmt_inference.json"), "--objective", "latency").stdout
    assert "minimize latency" in lat and "param l = 8" in lat


def test_converted_specs_run_wherever_they_are_saved(data_dir: Path, tmp_path: Path) -> None:
    """stdout: the import path is absolute; -o: relative to the output file. Either way the
    spec runs from any working directory."""
    src = data_dir / "throughput" / "bert24_inference.json"
    work, elsewhere, other = (tmp_path / d for d in ("work", "elsewhere/deeper", "other"))
    for d in (work, elsewhere, other):
        d.mkdir(parents=True)
    text = run_part("convert", str(src), cwd=work).stdout  # as in `part convert X.json > elsewhere/x.part`
    assert f'import "{src.resolve()}"' in text
    (elsewhere / "x.part").write_text(text)
    assert run_part("convert", str(src), "-o", str(elsewhere / "y.part"), cwd=work).returncode == 0
    y = (elsewhere / "y.part").read_text()
    rel = y.split('import "')[1].split('"')[0]
    assert not Path(rel).is_absolute() and (elsewhere / rel).resolve() == src.resolve()
    for spec in ("x.part", "y.part"):
        for cwd, path in ((other, str(elsewhere / spec)), (elsewhere, spec)):
            r = run_part("solve", path, "--json", "--method", "topo", cwd=cwd)
            assert r.returncode == 0, r.stderr
            assert abs(json.loads(r.stdout)["objective"] - 17.79) < 0.006


@pytest.mark.parametrize("fpgas,cpus", [(3, 0), (0, 2), (0, 0)])
def test_convert_platforms_without_cpus_or_accelerators(data_dir: Path, tmp_path: Path, fpgas: int,
                                                        cpus: int) -> None:
    data = json.loads((data_dir / "throughput" / "bert24_inference.json").read_text())
    data.update(maxFPGAs=fpgas, maxCPUs=cpus)
    if fpgas == 0:  # every node must run somewhere: on CPUs only here
        for nd in data["nodes"]:
            nd["supportedOnFpga"] = 0
    src = tmp_path / "platform.json"
    src.write_text(json.dumps(data))
    out = tmp_path / "platform.part"
    r = run_part("convert", str(src), "-o", str(out))
    if fpgas + cpus == 0:
        assert r.returncode == 2 and "at least one device" in r.stderr and "Traceback" not in r.stderr
        return
    assert r.returncode == 0, r.stderr
    r = run_part("solve", str(out), "--json")
    assert r.returncode == 0, r.stderr
    used = set(json.loads(r.stdout)["assignment"].values())
    assert used and all(d.startswith("acc[" if cpus == 0 else "cpu[") for d in used)
    spec = parse_file(out)
    assert len(spec.platform.devices) == fpgas + cpus and [k.name for k in spec.platform.empty] == (
        ["cpu"] if cpus == 0 else ["acc"])


def test_a_device_class_with_no_devices(tmp_path: Path) -> None:
    """`device cpu[l]` with l = 0: the class is known (work on it is accepted and unused),
    a sweep over l includes 0, and placing a node there is a clear error."""
    f = tmp_path / "s.part"
    body = """param l = 0
graph g { node a { work 1 ms on gpu, 5 ms on cpu } node b { work 2 ms on gpu, 3 ms on cpu %s } a -> b }
platform { device gpu[2] { link 10 GB/s } device cpu[l] { host } }
%s"""
    f.write_text(body % ("", ""))
    r = run_part("solve", str(f), "--json", "-D", "l=0,1")
    assert r.returncode == 0, r.stderr
    sweep = json.loads(r.stdout)["sweep"]
    assert [p["objective"] for p in sweep] == [2.0, 2.0]
    assert all(d.startswith("gpu") for d in sweep[0]["assignment"].values())
    for extra, message in ((("; only cpu", ""), "`only cpu`: cpu, which has no devices"),
                           (("", "subject to { pin b to cpu }"), "pin names device class 'cpu', which has no devices")):
        f.write_text(body % extra)
        r = run_part("check", str(f))
        assert r.returncode == 2 and message in r.stderr and "^" in r.stderr, r.stderr
    f.write_text(body % ("", "subject to { forbid a on cpu }"))
    assert run_part("check", str(f)).returncode == 0
    assert parse_file(f).platform.empty[0].name == "cpu"  # and it prints back: to_part keeps it
    from partdsl import parse, to_part
    assert parse(to_part(parse_file(f))).platform.empty == parse_file(f).platform.empty


def test_convert_part_to_json_graph_and_back(tmp_path: Path) -> None:
    g = tmp_path / "tiny.json"
    assert run_part("convert", TINY, "--to", "json", "-o", str(g)).returncode == 0
    assert json.loads(g.read_text())["format"] == "partdsl-graph"
    spec = parse_file(TINY)
    wrapper = tmp_path / "w.part"
    original = TINY
    body = Path(original).read_text()
    start, end = body.index("graph tiny {"), body.index("platform {")
    wrapper.write_text(body[:start] + 'graph tiny = import "tiny.json"\n' + body[end:])
    assert parse_file(wrapper).graph == spec.graph
    norm = run_part("convert", TINY).stdout  # .part -> normalized .part
    (tmp_path / "n.part").write_text(norm)
    assert parse_file(tmp_path / "n.part") == spec


def test_help_lists_commands_and_exit_codes() -> None:
    r = run_part("--help")
    assert r.returncode == 0
    for word in ("check", "eval", "solve", "convert", "3 infeasible", "5 solver not installed",
                 "6 the solver failed"):
        assert word in r.stdout


def test_solve_help_lists_every_method_and_check_does_not_import_them() -> None:
    """The method list is made when help is shown; `part check` of a 100,000-operator spec
    does not need it."""
    import subprocess
    import sys

    from partdsl.methods.registry import DEFAULT_METHOD, METHODS

    text = " ".join(run_part("solve", "--help").stdout.split())
    assert f"{DEFAULT_METHOD} (default)" in text and all(m in text for m in METHODS), text
    assert f"comma-separated methods (default {DEFAULT_METHOD})" in " ".join(run_part("sweep", "--help").stdout.split())
    code = ("import sys\nfrom partdsl.cli.main import main\ntry:\n    main(['check', sys.argv[1]])\n"
            "except SystemExit as e:\n    assert e.code in (0, None), e.code\n"
            "print('registry' if 'partdsl.methods.registry' in sys.modules else 'none')")
    p = subprocess.run([sys.executable, "-c", code, str(EXAMPLES / "tiny.part")], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.splitlines()[-1] == "none", p.stdout + p.stderr


def test_the_method_table_imports_a_method_when_it_runs() -> None:
    """Listing the methods (`part solve --help`) imports none of their code, which pulls in
    numba, networkx and scipy.optimize (about a second); each entry names code that exists."""
    import subprocess
    import sys

    code = ("import sys\nfrom partdsl.methods.registry import METHODS\n"
            "modules = {'partdsl.' + m.entry.partition(':')[0] for m in METHODS.values()}\n"
            "print(sorted(modules & set(sys.modules)), sorted({'numba', 'networkx', 'scipy.optimize'} & set(sys.modules)))\n"
            "assert all(callable(m.run) for m in METHODS.values())\n"
            "print(sorted(modules - set(sys.modules)))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    before, after = p.stdout.splitlines()
    assert before == "[] []" and after == "[]", p.stdout


def test_solver_log_file_keeps_each_mip_solvers_own_log(tmp_path: Path) -> None:
    spec = str(EXAMPLES / "bert24_training.part")
    # each solve's closing report, once per MIP (HiGHS 1.16 prints its banner once per process, on stdout)
    for solver, word in (("highs", "Solving report"), ("scip", "SCIP Status")):
        log = tmp_path / f"{solver}.log"
        r = run_part("solve", spec, "--method", "exact", "--solver", solver, "--time-limit", "5", "--solver-log",
                     str(log))
        assert r.returncode == 0, r.stderr
        text = log.read_text()
        name = {"highs": "HiGHS", "scip": "SCIP"}[solver]  # the relaxation first, then the contiguous IP
        assert text.index(f"==== {name}, non-contiguous relaxation ====") < text.index(f"==== {name} ====")
        assert text.count(word) == 2
        assert r.stdout.startswith("status ")  # nothing native on stdout: the report comes first
    # HiGHS's banner (once per process) now comes with the class LP of the cheap bound, before
    # any MIP, and stays off stdout; native output reaching a MIP's log: tests/solvers/test_capture.py
    log = tmp_path / "dp.log"
    assert run_part("solve", TINY, "--solver-log", str(log)).returncode == 0
    assert log.read_text() == "(method dp ran no MIP solver)\n"  # tiny.part says `solve dp`


def test_check_table_costs_nodes_and_layers(tmp_path: Path) -> None:
    """Issue 32, item 6: `part check --table` shows where the FLOPs, bytes and work are,
    node by node (sorted, the first N) and summed per layer."""
    spec = tmp_path / "dec.part"
    assert run_part("generate", "transformer", "--layers", "2", "-o", str(spec)).returncode == 0
    s = parse_file(spec)
    out = json.loads(run_part("check", str(spec), "--table", "--sort", "flops", "--top", "3", "--json").stdout)
    flops = sorted((nd.flops or 0.0 for nd in s.graph.nodes), reverse=True)
    assert [n["flops"] for n in out["nodes"]] == pytest.approx(flops[:3])
    layers = {x["name"]: x for x in out["layers"]}
    assert len(layers) == 3 and {"l1", "l2"} <= set(layers)  # the first 3 of lm_head, l1, l2, ln_f, embed
    for name in ("l1", "l2"):
        mine = [nd for nd in s.graph.nodes if nd.name.startswith(name + "_")]
        assert layers[name]["nodes"] == len(mine) == 14
        assert layers[name]["flops"] == pytest.approx(sum(nd.flops for nd in mine))
        assert layers[name]["params"] == pytest.approx(sum(nd.params for nd in mine))
    text = run_part("check", str(spec), "--table", "--top", "2").stdout
    assert "(29 more nodes: --top 0 shows all)" in text and "5 layers" in text
    bad = run_part("check", str(spec), "--table", "--layers", "(")
    assert bad.returncode == 2 and "not a regular expression" in bad.stderr and "Traceback" not in bad.stderr
    grouped = json.loads(run_part("check", TINY, "--table", "--layers", r"^(\w+)", "--top", "0", "--json").stdout)
    assert [(x["name"], x["nodes"]) for x in grouped["layers"]] == [("embed", 1), ("block", 12), ("head", 1)]


def test_convert_says_what_it_wrote(data_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "g.part"
    r = run_part("convert", str(data_dir / "latency" / "gnmt_inference.json"), "--objective", "latency", "-o", str(out))
    s = parse_file(out)
    assert r.returncode == 0 and f"wrote {out}: {s.dense.n:,} nodes, {s.dense.m:,} edges" in r.stderr
    assert "latency" in r.stderr and "contiguous" in r.stderr


@pytest.mark.parametrize("values, said", [("k=2,abc", "-D k=abc: not a number"),
                                          ("k=2,0", "sweep point k=0: pin names device class 'gpu'"),
                                          ("q=1,2", "no param named 'q'")])
def test_sweep_values_are_checked_before_any_point_runs(values: str, said: str, tmp_path: Path) -> None:
    """Issue 32, item 6: a bad -D value anywhere in a sweep stops it before the first solve."""
    r = run_part("solve", TINY, "-D", values, "--method", "topo")
    assert r.returncode == 2 and said in r.stderr and "done" not in r.stderr
    r = run_part("sweep", TINY, "-D", values, "--method", "topo", "-o", str(tmp_path / "runs.csv"))
    assert r.returncode == 2 and said in r.stderr and not (tmp_path / "runs.csv").exists()

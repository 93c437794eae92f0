"""Tarnawski et al. (NeurIPS 2020) Tables 1, 2 and 4 on the published workloads
(data/dnn-partitioning): each method as the paper ran it, beside the published value."""
from __future__ import annotations

import json
import math
import tempfile
import time
from pathlib import Path
from typing import Any

from published import T1_COLUMNS, TARNAWSKI_T1, TARNAWSKI_T4, TARNAWSKI_T4_OPERATORS
from repro_common import DATA, ROW_HEAD, Figure, Run, Table, num, row, solved

QUICK_T1 = (("throughput", "bert24_inference"), ("throughput", "gnmt_inference"),
            ("throughput-operators", "bert_l-3_inference"))
QUICK_T4 = ("bert24_inference", "gnmt_inference")
LABELS = {"dp": "DP (contiguous)", "ip_contiguous": "IP, contiguous (exact)", "ip_any": "IP, non-contiguous (exact)",
          "dpl": "DPL (the authors' -linearize)", "expert": "expert split", "local_search": "local search (accelerators, 10 random starts)",
          "local_search_all": "local search, every device (ours)",
          "pipedream": "PipeDream (the authors' -pipeDream)", "scotch": "Scotch (the authors' run)"}
FIG9 = ("throughput-operators", "bert_l-3_inference")  # the graph of Figure 9
PUBLISHED_AS = {"local_search_all": "local_search"}  # our column -> the paper's column it is compared with, where the names differ
# the authors' code (msr-fiddle/dnn-partitioning dp.cpp) as built and run by benchmarks/reference_outputs.py
REFERENCE = json.loads((DATA / "reference" / "outputs.json").read_text())["values"]
# the input nodes (and their gradients) the authors' -pipeDream leaves out of its biconnected search
PIPEDREAM_IGNORE = {"bert24": "n4,n37", "gnmt": "n2,n100,n40,n137,n46,n142"}


REF_HEAD = (*ROW_HEAD[:3], "the authors' code", *ROW_HEAD[3:])


def ref_row(stem: str, label: str, published: float | None, run: Run | None, folder: str, col: str | None,
            note: str = "") -> tuple[str, ...]:
    """A row with the authors' code's value (REFERENCE) beside the published one: - where the
    code has no such method, "did not finish" where its run hit the cap."""
    cells = row(stem, label, published, run, note)
    got = REFERENCE.get(f"{folder}/{stem}", {})
    ref = "-" if col is None or col not in got else "did not finish" if got[col] is None else num(got[col])
    return (*cells[:3], ref, *cells[3:])


def pipedream_ignore(spec: Any, stem: str) -> str:
    names = set(spec.dense.names)
    listed = PIPEDREAM_IGNORE.get(stem.split("_")[0], "").split(",")
    return ",".join(x for x in listed if x in names)


def truncated(value: float, published: float | None) -> bool:
    """`value` rounds above the published two decimals but truncates to them."""
    return published is not None and math.isfinite(value) and num(value) != num(published) \
        and math.floor(value * 100 + 1e-9) / 100 == round(published, 2)


def spec_for(folder: str, stem: str, objective: str, split: str, tmp: Path) -> Any:
    from partdsl import parse_file
    from partdsl.convert.to_part import dnn_partitioning_to_part

    out = tmp / f"{folder}-{stem}-{objective}-{split}.part"
    out.write_text(dnn_partitioning_to_part(DATA / folder / f"{stem}.json", objective, split=split, relative_to=tmp))
    return parse_file(out)


def expert(spec: Any, stem: str) -> Run | str | None:
    """The human-expert split of the data folder, scored by the evaluator (no search); the
    reason if it does not fit the spec's platform."""
    from partdsl import evaluate
    from partdsl.core.errors import PartError
    from partdsl.runtime.files import read_assignment

    path = DATA / "human-experts" / f"{stem}_expert.json"
    if not path.exists():  # a training graph without its own split takes the inference one, as the authors' code does
        path = DATA / "human-experts" / f"{stem.rsplit('_', 1)[0]}_inference_expert.json"
    if not path.exists():
        return None
    t = time.monotonic()
    try:
        arr = read_assignment(spec, path)
    except PartError as e:
        return f"not scored: {e.message.split(': ', 1)[-1]}"
    ev = evaluate(spec, arr)
    return Run(ev.objective, float("nan"), "scored", time.monotonic() - t, ev.feasible)


def authors_scotch(spec: Any) -> Run:
    """Scotch as the authors ran it (`scotch -O graph=tarnawski`): their graph, gpart's strategy,
    on the accelerators, blind to memory as theirs is; the split scored by the evaluator on
    `spec` itself, so an overflow shows as infeasible. Under latency a device may run several
    subgraphs, as their greedy.cpp -computeLatency scores any split."""
    from dataclasses import replace

    from partdsl import evaluate
    from partdsl.core.solver_errors import SolverUnavailable
    from partdsl.kernels.peers.runners import tarnawski_scotch

    t = time.monotonic()
    try:
        dev = tarnawski_scotch(spec)
    except SolverUnavailable as e:  # pyscotch is an optional extra
        return Run(float("nan"), float("nan"), f"not run: {e} ({e.hint})", time.monotonic() - t, False)
    if spec.objective.kind == "latency":
        spec = replace(spec, constraints=replace(spec.constraints, subgraphs=spec.dense.n))
    ev = evaluate(spec, dev)
    return Run(ev.objective, float("nan"), "scored", time.monotonic() - t, ev.feasible)


LOCAL_SEARCH_CAP = 60.0  # the paper runs local search to its local optima; ten take 16 s on BERT-L-12 here


T1_NOTES = (  # Table 1's notes: how each baseline is run, and where the paper differs from the authors' code
    "DP: the DP over ideals is exact for acyclic splits; under contiguity alone (the paper's model) it "
    "returns the best acyclic contiguous split, and its certificate is the contiguous path bound "
    "(kernels/bottleneck/path_bound.py: along any path a contiguous split visits each device once), which "
    "proves it where the row says optimal. The contiguous IP's rows carry the same bound.",
    "DPL and PipeDream are the authors' `dp.cpp -linearize` and `-pipeDream` reimplemented from that code "
    "(kernels/bottleneck/reference_chain.py); the column 'the authors' code' gives what the code itself prints "
    "(data/dnn-partitioning/reference/outputs.json, from benchmarks/reference_outputs.py: g++ -O3, commit b207b6a). "
    "They agree on every cell (DPL follows the code's hash-map order of GNMT's several sources too), with the "
    "PipeDream rows run as the paper intended. The paper's table differs from the code as shipped in three cells: "
    "GNMT inference DPL (32.91 published, 33.03 printed by the code and by ours), and BERT-24 and GNMT training "
    "PipeDream (the code compares its list of "
    "input node ids with the contracted graph's vertex ids, which on training graphs are other vertices, and prints "
    "187.91 and 294.90; ours leaves out the nodes the list names, `-O ignore=n4,n37`, and gives the published 41.75 "
    "and 107.35). tests/methods/test_reference_baselines.py checks all 16 inputs both ways.",
    "Expert: a training graph without its own split (ResNet50, InceptionV3) takes its inference split, each "
    "backward node with its forward node, as the authors' code does: 112.11 and 213.65, as published.",
    "Local search: the authors' (dp.cpp -localSearch 10) starts each restart from a random split over the "
    "accelerators (C rand()), makes the best single-class move between accelerators until none gains 1e-5, and "
    "ignores memory; ours does the same with numpy's generator (seed 0) and keeps memory. Its value depends "
    "on the random starts: the authors' code itself, run here, gives 17.78, 35.89, 31.78 and 27.57 on BERT-24, "
    "ResNet50 and GNMT inference and BERT-3 operators, where the paper prints 17.80, 35.63, 31.75 and 24.32. "
    "The row marked (ours) may also use the CPU, which is what made ours 0.72-0.84x the published values on "
    "the operator graphs.",
    "Scotch: the authors' run (`-O graph=tarnawski`): the graph their dp.cpp -scotch writes, byte for byte "
    "(one vertex per colour class, in their hash map's order; tests/methods/test_reference_baselines.py checks "
    "all 24 inputs), partitioned by Scotch's default mapping strategy as their `gpart k` call does. The column "
    "'the authors' code' gives what their code prints with Debian's Scotch 7.0.3; ours runs the Scotch that "
    "pyscotch bundles, and "
    "the two releases split some graphs differently. With Debian's 7.0.3 loaded in place of the bundled one, "
    "ours equalled their printed value on 13 to 15 of the 16 throughput inputs, run to run (that build's threads "
    "vary it). Neither release gives every published cell; the paper does not state its Scotch release.",
)


def table1(quick: bool, cap: float) -> tuple[Table, dict[tuple[str, str], dict[str, float]]]:
    """Table 1: every column the paper has, per workload; `cap` seconds for each IP and, but
    for the quick run, at least LOCAL_SEARCH_CAP for local search. Also returns our values,
    for Table 2."""
    t0 = time.monotonic()
    ls_cap = cap if quick else max(cap, LOCAL_SEARCH_CAP)
    tab = Table("tarnawski-1", "Tarnawski et al., Table 1: pipelined throughput (time per sample, lower is better)",
                f"Layer graphs (`throughput/`) and operator graphs (`throughput-operators/`). Each IP (`exact`, "
                f"HiGHS) stops at {cap:g} s (the paper: Gurobi, 4 cores, 1% or 20 minutes), local search at "
                f"{ls_cap:g} s; "
                "a stopped IP shows its incumbent and proven bound. Local search is the paper's: from a random split, "
                "the best single-node move until none improves, 10 restarts, seed 0 (`-O start=random -O step=best "
                "-O restarts=10 -O devices=accelerators`: the authors' code moves nodes between accelerators only); ours "
                "beside it may also use the CPU.", REF_HEAD)
    ours: dict[tuple[str, str], dict[str, float]] = {}
    tmp = Path(tempfile.mkdtemp())
    for key in (QUICK_T1 if quick else tuple(TARNAWSKI_T1)):
        folder, stem = key
        pub = dict(zip(T1_COLUMNS, TARNAWSKI_T1[key]))
        contiguous = spec_for(folder, stem, "bottleneck", "contiguous", tmp)
        anysplit = spec_for(folder, stem, "bottleneck", "any", tmp)
        runs: dict[str, Run | str | None] = {
            "dp": solved(contiguous, "dp"),
            "ip_contiguous": solved(contiguous, "exact", cap),
            "ip_any": solved(anysplit, "exact", cap),
            "dpl": solved(contiguous, "dpl"),
            "expert": expert(contiguous, stem) if folder == "throughput" else None,  # fits: Table 1's platform
            "local_search": solved(anysplit, "local_search", ls_cap, start="random", restarts=10, step="best",
                                   devices="accelerators"),
            "local_search_all": solved(anysplit, "local_search", ls_cap, start="random", restarts=10, step="best"),
            "pipedream": (solved(contiguous, "pipedream", ignore=pipedream_ignore(contiguous, stem))
                          if folder == "throughput" else None),
            "scotch": authors_scotch(anysplit),
        }
        if key == FIG9:
            tab.figures.append(figure9(anysplit, runs))
        ours[key] = {}
        for col, run in runs.items():
            pub[col] = pub[PUBLISHED_AS.get(col, col)]
            if run is None and pub[col] is None:
                continue
            if isinstance(run, str):
                tab.rows.append(ref_row(stem, LABELS[col], pub[col], None, folder, col, run))
                continue
            tab.rows.append(ref_row(stem, LABELS[col], pub[col], run, folder, col))
            if run is not None:
                ours[key][col] = run.value
    tab.notes += list(T1_NOTES)
    tab.seconds = time.monotonic() - t0
    return tab, ours


def figure9(spec: Any, runs: dict[str, Run | str | None]) -> Figure:
    """Figure 9: the contiguous and the non-contiguous IP's splits of BERT-3's operator graph."""
    panels = []
    for col, what in (("ip_contiguous", "contiguous"), ("ip_any", "non-contiguous")):
        run = runs[col]
        if isinstance(run, Run) and run.assignment:
            panels.append((f"{what} (IP): {num(run.value)} ms per sample, {run.certificate}", list(run.assignment)))
    return Figure("tarnawski-9", "Figure 9: BERT-3 operator graph (inference) on 3 accelerators and 1 CPU",
                  "splits", {"spec": spec.file, "splits": panels})


FIG8_PANELS = {("throughput-operators", "inference"): "(a) operator graphs, inference",
               ("throughput-operators", "training"): "(b) operator graphs, training",
               ("throughput", "inference"): "(c) layer graphs, inference",
               ("throughput", "training"): "(d) layer graphs, training"}


def table2(ours: dict[tuple[str, str], dict[str, float]]) -> Table:
    """Table 2 is Table 1 as throughput relative to the DP: DP's time per sample / the method's.
    Figure 8 draws it as bars."""
    tab = Table("tarnawski-2", "Tarnawski et al., Table 2: throughput relative to the DP (higher is better)",
                "Derived from Table 1 above: DP / value, published beside ours. Figure 8 below draws it: a bar per "
                "method (ours), the published value as a black tick.",
                ("workload", "method", "published", "ours"))
    panels: dict[str, dict[str, dict[str, tuple[float, float | None]]]] = {t: {} for t in FIG8_PANELS.values()}
    for (folder, stem), got in ours.items():
        pub = dict(zip(T1_COLUMNS, TARNAWSKI_T1[(folder, stem)]))
        pub.update({ours_col: pub[theirs] for ours_col, theirs in PUBLISHED_AS.items()})
        bars = panels[FIG8_PANELS[folder, "training" if "training" in stem else "inference"]].setdefault(stem, {})
        for col, value in got.items():
            if col == "dp" or value <= 0:
                continue
            p = pub["dp"] / pub[col] if pub[col] else None
            tab.rows.append((stem, LABELS[col], f"{p:.2f}x" if p else "-", f"{got['dp'] / value:.2f}x"))
            bars[LABELS[col]] = (got["dp"] / value, p)
    tab.figures.append(Figure("tarnawski-8", "Figure 8: throughput relative to the DP (contiguous) = 1x", "bars",
                              {"panels": {t: b for t, b in panels.items() if b}, "ylabel": "throughput / DP's",
                               "methods": [m for c, m in LABELS.items() if c != "dp"]}))
    return tab


def table4(quick: bool, cap: float) -> Table:
    """Table 4: single-stream latency on the `latency/` (layer) and `latency-operators/` files."""
    t0 = time.monotonic()
    tab = Table("tarnawski-4", "Tarnawski et al., Table 4: single-stream latency (lower is better)",
                f"`latency/` (layer graphs) and `latency-operators/` (operator graphs, from the authors' repository). "
                f"The IP is `exact` (HiGHS, {cap:g} s; the paper: Gurobi, 60 minutes) and `latency_search` ({cap:g} s) "
                "is ours beside it. Greedy is `fill`, the max-load DP is `maxload_dp`; the column 'the authors' code' "
                "gives what their greedy.cpp, dp.cpp and Scotch run print (benchmarks/reference_outputs.py; their DP "
                "did not finish within 300 s and 8 GB where it says so).", REF_HEAD)
    tmp = Path(tempfile.mkdtemp())
    cut: set[str] = set()  # values the paper's truncation explains
    work = [("latency", s, TARNAWSKI_T4[s]) for s in (QUICK_T4 if quick else tuple(TARNAWSKI_T4))]
    work += [("latency-operators", s, TARNAWSKI_T4_OPERATORS[s]) for s in (() if quick else tuple(TARNAWSKI_T4_OPERATORS))]
    for folder, stem, (ip, ip_gap, greedy, dp, (scotch, violated), expert_value) in work:
        spec = spec_for(folder, stem, "latency", "contiguous", tmp)
        runs = {"IP (exact)": solved(spec, "exact", cap), "latency_search (ours)": solved(spec, "latency_search", cap)}
        for label, run in runs.items():
            note = f"published gap {ip_gap}" if "IP" in label else ""
            tab.rows.append(ref_row(stem, label, ip, run, folder, None, note))
            if truncated(run.value, ip):
                cut.add(f"{stem} {run.value:.4f}")
        tab.rows.append(ref_row(stem, "greedy (fill)", greedy, solved(spec, "fill"), folder, "greedy"))
        tab.rows.append(ref_row(stem, "max-load DP", dp, solved(spec, "maxload_dp"), folder, "maxload_dp"))
        s = authors_scotch(spec_for(folder, stem, "latency", "any", tmp))  # non-contiguous, as the paper's
        tab.rows.append(ref_row(stem, "Scotch (the authors' run)", scotch, s, folder, "scotch",
                                "published: memory violated" if violated else ""))
        e = expert(spec, stem) if folder == "latency" else None
        if e is not None or expert_value is not None:
            note = "" if expert_value else "published: OOM"
            if isinstance(e, str):
                e, note = None, "; ".join(x for x in (note, e) if x)
            tab.rows.append(ref_row(stem, "expert split", expert_value, e, folder, None, note))
    if cut:
        tab.notes.append("Where ours shows 0.01 above the published value, the paper truncates "
                         f"({', '.join(sorted(cut))}, "
                         "printed by it to two decimals downwards, by us rounded), as in Table 1's Scotch cell "
                         "197.848 printed 197.84: the same value to the paper's digits.")
    tab.notes.append("A value marked (infeasible) breaks a memory limit, as the paper's daggers and OOM do; "
                     f"published OOM cells are shown as {num(None)}.")
    tab.notes.append("Operator rows: the greedy equals the authors' greedy.cpp (416.20, 494.14, 867.84, 839.54, as "
                     "published). The max-load DP's split is the one the authors' dp.cpp returns, scored as their "
                     "greedy.cpp -computeLatency scores it: 414.44 and 444.02 on BERT-3 and BERT-6, where the paper "
                     "prints 415.90 and 445.48 (the code as shipped gives ours).")
    tab.seconds = time.monotonic() - t0
    return tab

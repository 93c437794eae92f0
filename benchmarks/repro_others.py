"""Archer et al. (ICML 2024) Tables 2 and 3 on REGAL-style graphs, and DiviML Tables I
and IV on generated randomly wired networks, each beside the published numbers."""
from __future__ import annotations

import functools
import math
import statistics
import time
from pathlib import Path
from typing import Any, Callable, Iterator, NamedTuple

from published import ARCHER_KS, ARCHER_T2, ARCHER_T3, DIVIML, DIVIML_COLUMNS, DIVIML_NETS, DIVIML_T3
from repro_common import Figure, Run, Table, mean_cell, sig, solved

# Archer Table 2's orders as our methods: (label, method, options)
ORDERS = (("mla", "mla", {"population": 100, "generations": 100}),
          ("mla-weighted", "mla_weighted", {"population": 100, "generations": 100}),
          ("random-1", "random", {"samples": 1}), ("random-100", "random", {"samples": 100}),
          ("random-10000", "random", {"samples": 10_000}),
          ("brkga-100", "brkga", {"population": 10, "generations": 10}),
          ("brkga-10000", "brkga", {"population": 100, "generations": 100}))
LONG = ("random-10000", "brkga-10000")  # 10,000 SliceGraph runs each: on App. C.2's set in the full run only


FIG7_AT = (0.01, 0.1, 0.5)  # fractions of the limit at which Figure 7's table reads each curve


def kept_seed(n: int, model: str, seed: int, work: str, tries: int = 100) -> int | None:
    """The first of `tries` seeds from `seed` whose graph REGAL's filter keeps
    (kernels/schedule/room.py), or None."""
    from partdsl.generators.regal import regal_graph
    from partdsl.kernels.schedule.room import first_kept

    found = first_kept(lambda s: regal_graph(n, model, s, work=work), seed, tries)
    return None if found is None else found[0]


class Drawn(NamedTuple):
    """One generated graph of Archer's set: its size, random graph model and seed, and the
    model its slot asked for (another one when the filter kept none of `tries` of that)."""
    nodes: int
    model: str
    seed: int
    wanted: str
    tries: int


@functools.lru_cache(maxsize=None)
def regal_seeds(graphs: int, work: str = "appendix", tries: int = 100) -> tuple[Drawn, ...]:
    """`graphs` REGAL-style graphs of 50-200 nodes, the random graph models in turn, each the
    first from seed 100 i that REGAL's filter keeps (`drawn`)."""
    return tuple(drawn(i, graphs, work, tries) for i in range(graphs))


def drawn(i: int, graphs: int, work: str, tries: int = 100) -> Drawn:
    """Slot i of `regal_seeds`: the first graph from seed 100 i that the filter keeps, of the
    slot's model, or where it keeps none of `tries` of those (WS graphs of 183 nodes with
    work ~ N(50, 10): their best schedules do not fit the memory), of the next model it keeps."""
    from partdsl.generators.regal import MODELS

    j = i % len(MODELS)
    n, wanted = 50 + (150 * i) // max(graphs - 1, 1), MODELS[j]
    for model in MODELS[j:] + MODELS[:j]:  # the slot's model first, then the others in turn
        seed = kept_seed(n, model, 100 * i, work, tries)
        if seed is not None:
            return Drawn(n, model, seed, wanted, tries)
    raise SystemExit(f"REGAL's filter kept none of {tries} graphs of {n} nodes from seed {100 * i} "
                     f"of any model ({', '.join(MODELS)}, work: {work})")


def drawn_text(drawn: tuple[Drawn, ...]) -> str:
    """The seeds of a generated set, and each slot whose model the filter could not fill."""
    text = f"seeds {', '.join(str(d.seed) for d in drawn)}"
    swaps = [f"{d.model.upper()} instead of {d.wanted.upper()} at {d.nodes} nodes" for d in drawn
             if d.model != d.wanted]
    if swaps:
        text += (f"; {', '.join(swaps)}: the filter kept none of {drawn[0].tries} graphs of the slot's model "
                 f"from seed 100 i")
    return text


def regal_set(graphs: int, k: int, folder: str | None = None, work: str = "appendix") -> list:  # type: ignore[type-arg]
    """The specs on k stages of `regal_seeds`' graphs, or of the first `graphs` REGAL files
    (`.pbtxt`) of `folder`, by name."""
    from partdsl.generators.regal import mtpp_spec, regal_spec

    if folder is not None:
        from partdsl.importers.regal_import import read_regal

        files = sorted(Path(folder).rglob("*.pbtxt"))[:graphs]
        if not files:
            raise SystemExit(f"--regal {folder}: no .pbtxt files there")
        return [mtpp_spec(read_regal(f, f"g{i}"), k) for i, f in enumerate(files)]
    return [regal_spec(d.nodes, k, d.model, seed=d.seed, work=work) for d in regal_seeds(graphs, work)]


SAMPLED = "work ~ N(50, 10)"  # the rows on graphs whose node work is drawn like the tensors
Means = dict[tuple[str, int], list[float]]  # (bound or order, k) -> one value per graph


def per_graph(ks: tuple[int, ...], graphs: int, regal: str | None, work: str,
              cells: Callable[[Any], Iterator[tuple[str, float | None]]]) -> tuple[Means, int]:
    """`cells(spec)`'s (name, value) pairs on `regal_set`'s graphs at each k, as lists by
    (name, k) (a None value is left out); and how many graphs there are."""
    got: Means = {}
    runs = 0
    for k in ks:
        specs = regal_set(graphs, k, regal, work)
        runs = len(specs)
        for spec in specs:
            for name, v in cells(spec):
                if v is not None:
                    got.setdefault((name, k), []).append(v)
    return got, runs


Times = dict[tuple[str, int], list[tuple[int, float]]]  # (SliceGraph or MIP, k) -> (nodes, seconds) per graph
FIG5 = {"SliceGraph": "slicegraph", "bottleneck": "bottleneck", "bottleneck-guess": "bottleneck_guess",
        "exact": "exact"}  # Figure 5's series: its label -> our method or hierarchy bound


def bounds_over_best(ks: tuple[int, ...], graphs: int, cap: float, regal: str | None = None,
                     work: str = "appendix", only: tuple[str, ...] | None = None,
                     times: Times | None = None) -> tuple[Means, int]:
    """Table 3's cells: each bound of `only` (default: all) over the best solution found;
    into `times` if given, Figure 5's points: the seconds of one SliceGraph run (Kahn's
    order) and of each of its MIP bounds on each graph (bottleneck-guess: its k MIPs summed)."""
    from partdsl.methods.hierarchy import NAMES, hierarchy

    def cells(spec: Any) -> Iterator[tuple[str, float | None]]:
        h = hierarchy(spec, time_limit=cap, only=only or NAMES)
        if times is not None:
            n, k = len(spec.graph.nodes), spec.platform.classes[0].count
            took = {"slicegraph": solved(spec, "slicegraph").seconds} | {
                b: e.seconds if e.mip_seconds is None else e.mip_seconds for b, e in h.bounds.items()}
            for label, name in FIG5.items():
                if name in took:
                    times.setdefault((label, k), []).append((n, took[name]))
        return ((name, h.fraction(name)) for name in only or NAMES)

    return per_graph(ks, graphs, regal, work, cells)


def orders_over_simple(ks: tuple[int, ...], graphs: int, orders: tuple[str, ...], regal: str | None = None,
                       work: str = "appendix") -> tuple[Means, int]:
    """Table 2's cells: SliceGraph's value on each of `orders` (labels of ORDERS) over the
    simple bound (Lemma 3.3). Each order runs its whole budget (T runs), with no time limit,
    as App. C.1's do."""
    from partdsl.models.mtpp import simple_bound

    def cells(spec: Any) -> Iterator[tuple[str, float | None]]:
        simple = simple_bound(spec)
        for label, method, opts in (o for o in ORDERS if o[0] in orders):
            r = solved(spec, method, None, **opts)
            yield label, r.value / simple if simple > 0 and math.isfinite(r.value) else None

    return per_graph(ks, graphs, regal, work, cells)


def archer_sets(quick: bool, regal: str | None, graphs: int | None) -> tuple[tuple[int, ...], int]:
    """The ks and the number of graphs of Archer's tables; each generated graph is drawn
    through the filter first, so that a set the filter cannot fill fails now, in seconds."""
    graphs = graphs or (2 if quick else 10)
    for work in ("appendix", "sampled") if not regal else ():
        regal_seeds(graphs, work)
    return ((2, 4) if quick else (2, 4, 8, 16, 32, 64)), graphs


def archer_rows(ks: tuple[int, ...], published: dict[str, tuple[float, ...]], names: tuple[str, ...],
                got: Means, runs: int, digits: int, suffix: str = "") -> list[tuple[str, ...]]:
    """A row per name: the published value at each k of `ks`, then the mean of ours."""
    return [(name + suffix, *(f"{p:.{digits}f}" for k, p in zip(ARCHER_KS, published[name]) if k in ks),
             *(mean_cell(got.get((name, k), []), runs, digits) for k in ks)) for name in names]


def archer(quick: bool, cap: float, regal: str | None = None, graphs: int | None = None) -> list[Table]:
    """Table 3 (bound hierarchy / best found) on generated graphs (App. C.2's node work, and
    work drawn like the tensors) or on REGAL's own files (`regal`: a folder of them)."""
    t0 = time.monotonic()
    ks, graphs = archer_sets(quick, regal, graphs)
    where = (f"the first {graphs} REGAL files of `{regal}` by name (`part convert --from regal`)" if regal else
             f"{graphs} generated graphs (`part generate regal --filter`: ER, BA, WS models, 50-200 nodes, each "
             f"the first from seed 100 i that REGAL's filter keeps: {drawn_text(regal_seeds(graphs))})")
    t3 = Table("archer-3", "Archer et al., Table 3: lower bounds / best solution on REGAL-style graphs",
               f"Geometric mean over {where} of each bound of `part bound` divided by the best solution found; "
               f"each MIP stops at {cap:g} s (the paper: 3,600 s). 1.0 would be a bound at the optimum.",
               ("bound", *(f"k={k} published" for k in ks), *(f"k={k} ours" for k in ks)))
    times: Times = {}
    frac, runs = bounds_over_best(ks, graphs, cap, regal, times=times)
    t3.rows += archer_rows(ks, ARCHER_T3, tuple(ARCHER_T3), frac, runs, 4)
    t3.rows.append(("lp (not in the paper's table)", *("-" for _ in ks),
                    *(mean_cell(frac.get(('lp', k), []), runs, 4) for k in ks)))
    if not regal:
        frac, runs = bounds_over_best(ks, graphs, cap, work="sampled", only=("simple", "exact"))
        t3.rows += archer_rows(ks, ARCHER_T3, ("simple", "exact"), frac, runs, 4, f", {SAMPLED}")
        t3.notes += [
            "REGAL's filter is applied as its dataset README defines it (a graph is kept where BRKGA with few fitness "
            "evaluations does not fit the memory and with many does, or where the many run it 20% faster), on a "
            "placement-and-scheduling model of ours (kernels/schedule/room.py: 2 devices, 100 vs 4,000 "
            "evaluations): REGAL's performance model and limits are not published.",
            f"The rows marked '{SAMPLED}' are run on graphs made the same way (filter included: "
            f"{drawn_text(regal_seeds(graphs, 'sampled'))}) but with each node's work drawn like its tensor "
            "(`--work sampled`), the scale "
            "of the compute costs in the example graph of REGAL's README (58, 47, 58 beside tensors of 70, 52, 55), "
            "which App. C.2's formula (tensors in and out plus |N(0, 0.1)| of all tensors) does not give. With "
            "App. C.2's formula a node's work dwarfs the tensors a block sends, so at k >= 16 the best solution is "
            "near the simple bound; with REGAL's scale the tensors dominate small blocks and the ratios fall below "
            "the paper's. Neither reproduces the published column; with REGAL's files: --regal DIR."]
    t3.notes += ["An exact MIP stopped by its limit contributes its dual bound or, where that is lower, the "
                 "bottleneck-guess (or bottleneck) bound of the same graph, which it relaxes (sec. 3): every cell is "
                 "a proven bound and the rows stay in the hierarchy's order. At our short limit that makes the "
                 "exact row at large k mostly the bottleneck-guess bound; the paper's 3,600 s MIPs get further.",
                 "The paper normalizes by BRKGA's best; ours by the best of topo, dp and the exact MIP's incumbent.",
                 "A cell marked (m of n) is the mean over the m of the n graphs where that bound was solved within the "
                 "limit; the others gave no value."]
    t3.seconds = time.monotonic() - t0
    return [t3, figure_5(ks, times, cap, "REGAL's files" if regal else "the generated graphs of App. C.2")]


def seconds(x: float) -> str:
    """A running time: two decimals from 1 s, else two significant digits."""
    return f"{x:.2f}" if x >= 0.995 else f"{x:.2g}"


def figure_5(ks: tuple[int, ...], times: Times, cap: float, where: str) -> Table:
    """Figure 5 (running times of SliceGraph and of each MIP bound, one panel per k) from
    Table 3's runs, with the median and largest time of each as a table."""
    def cell(points: list[tuple[int, float]]) -> str:
        secs = [s for _, s in points]
        return f"{seconds(statistics.median(secs))} ({seconds(max(secs))})" if secs else "-"

    fig = Table("archer-5", "Archer et al., Figure 5: running times of SliceGraph and the MIP bounds (seconds)",
                f"Table 3's runs on {where}: each cell is the median time over the graphs, the largest in brackets. "
                "SliceGraph is one run on Kahn's order (`part solve -m slicegraph`, the evaluator's check included); "
                f"each MIP stops at {cap:g} s (the paper: 3,600 s for exact and bottleneck-guess, 900 s for "
                "bottleneck).", ("method", *(f"k={k}" for k in ks)))
    fig.rows += [(label, *(cell(times.get((label, k), [])) for k in ks)) for label in FIG5]
    fig.notes.append("bottleneck-guess is the sum of its k MIPs' times, as in the paper; they run in as many "
                     f"processes as there are cores and share one {cap:g} s limit of wall time, so the sum can pass "
                     "the limit.")
    fig.seconds = None
    fig.figures.append(Figure("archer-5", f"Figure 5: running times on {where}", "scatter",
                              {"panels": {f"k = {k}": {label: times.get((label, k), []) for label in FIG5}
                                          for k in ks},
                               "xlabel": "nodes", "ylabel": "seconds", "limit": cap}))
    return fig


def archer_orders(quick: bool, regal: str | None = None, graphs: int | None = None) -> list[Table]:
    """Table 2 (SliceGraph per order / simple bound) on Table 3's graphs."""
    t0 = time.monotonic()
    ks, graphs = archer_sets(quick, regal, graphs)
    t2 = Table("archer-2", "Archer et al., Table 2: SliceGraph per order / simple bound (lower is better)",
               "The paper's rows are its production models (proprietary); ours are the same REGAL-style graphs as "
               f"Table 3 (the rows marked '{SAMPLED}' its graphs of that name), so only the ordering of the rows "
               "is comparable, not the values. Each order runs its whole budget, with no time limit.",
               ("order", *(f"k={k} published" for k in ks), *(f"k={k} ours" for k in ks)))
    short = tuple(o for o in ARCHER_T2 if o not in LONG)
    orders = short if quick else tuple(ARCHER_T2)
    over, runs = orders_over_simple(ks, graphs, orders, regal)
    t2.rows += archer_rows(ks, ARCHER_T2, orders, over, runs, 3)
    if not regal:
        over, runs = orders_over_simple(ks, graphs, short, work="sampled")
        t2.rows += archer_rows(ks, ARCHER_T2, short, over, runs, 3, f", {SAMPLED}")
    long = "random-10000 and brkga-10000 (10,000 SliceGraph runs per graph and k)"
    t2.notes.append("brkga-T runs BRKGA with a population of 10 for 10 generations (T = 100) or of 100 for 100 "
                    "(T = 10,000), as App. C.1 does, scoring T candidates in all (the elite is carried over "
                    "unscored, so generations go on until T are scored); mla and mla-weighted run BRKGA at 100 x 100 on their own "
                    "fitness the same way; random-T takes the best of T random priority vectors."
                    + (f" {long} are left out of --quick." if quick else "" if regal else
                       f" {long} are run on App. C.2's set only, not on the '{SAMPLED}' set."))
    t2.seconds = time.monotonic() - t0
    return [t2]


def diviml_runs(spec: Any, cap: float) -> dict[str, Run]:
    """Each of DiviML's methods on `spec` as the paper's tables run them: the MILPs, SA and EA
    stop at `cap` seconds (SA and EA by time, not by their iteration count)."""
    return {col: solved(spec, col, cap if col in ("exact", "milp_split", "ea", "sa") else None,
                        **({"iterations": 10**6} if col in ("ea", "sa") else {}))
            for col in DIVIML_COLUMNS if col != "bound"}


def diviml(quick: bool, cap: float) -> list[Table]:
    """Tables I and IV: latency (B = 1) and throughput (B = 128) on the paper's seven
    networks (one channel; 2, 3 and 4 channels, strongly and weakly dependent; the quick run:
    one channel). The networks are new draws, so each value is shown relative to the best
    single device, as the paper's speedups are."""
    from partdsl.generators.randwire import RandWire, randwire_spec

    t0 = time.monotonic()
    modules = 3 if quick else 10
    nets = {"1-chan": DIVIML_NETS["1-chan"]} if quick else DIVIML_NETS
    tab = Table("diviml", TABLES_I_IV,
                f"Generated randomly wired networks (`part generate randwire`: ER(0.2), {modules} modules of 10 "
                "nodes, seed 0; the paper's rows: one channel between modules, or 2 to 4 strongly (sdep) or "
                "weakly (wdep) dependent ones) on the paper's Xeon + T4 + A100 platform; B = 1 is latency (ms, "
                "lower is better), B = 128 throughput (images/s, higher is better, batch split in 4). The MILP, "
                f"MILP-SPLIT, SA and EA stop at {cap:g} s (the paper: 600 s). The paper's networks are its own "
                "draws (not published), so values are compared as ratios to the best single device.",
                ("network", "method", "published", "published / best device", "ours", "ours / best device",
                 "seconds", "certificate"))
    fig = Table("diviml-7", "DiviML, Figure 7: throughput over time (B = 128, higher is better)",
                f"The best throughput each method has found after a given time, from the 1-channel runs of the "
                f"table above (er10x{modules}, B = 128, split in 4, limit {cap:g} s). The paper's figure plots the "
                "same for the MILP, MILP-SPLIT and the heuristics on its 10-module networks (600 s); its text "
                "reports MILP-SPLIT up to 60% above the best heuristic, and the whole MILP not finishing in 2 "
                "hours.", ("method", *(f"at {f * cap:g} s" for f in FIG7_AT), "final", "seconds"))
    series: dict[str, list[tuple[float, float]]] = {}
    fig.figures.append(Figure("diviml-7", "Best throughput found over time, B = 128", "steps",
                              {"xlabel": "seconds", "ylabel": "images / s", "series": series}))
    for label, (channels, variant) in nets.items():
        rw = RandWire(model="er", size=10, modules=modules, channels=channels, variant=variant, p=0.2, k=4, m=5,
                      seed=0)
        for batch in (1, 128):
            spec = randwire_spec(rw, "latency" if batch == 1 else "throughput", batch, 1 if batch == 1 else 4)
            runs = diviml_runs(spec, cap)
            tab.rows += _diviml_rows(f"{label} B={batch}", runs, DIVIML[(label, batch)])
            if batch == 128 and channels == 1:
                _figure_7(fig, series, runs, cap)
    tab.notes += ["The generator's paper regime (`--regime paper`, the default; docs/diviml.md) scales node times so "
                  "this network shape takes the paper's 211.7 ms per image on its best device; relative speeds are "
                  "Table II's. With them no schedule goes below 1 / (1 + 1/1.26 + 1/7.10) = 0.518 of the best "
                  "device (the work bound), so the paper's splitting rows (0.378-0.493) need per-node speeds it does "
                  "not publish; where MILP-SPLIT's bound equals its value, its row is this network's optimum.",
                  "MILP-SPLIT is run with its defaults: it finds the channels itself (one if that splits the "
                  "network, else the fewest, 2 to 4, that cut it into modules of at most half its nodes), and its "
                  "bound is the Remark's recursion.",
                  "With several channels MILP-SPLIT puts the modules in turn with release times (sec. IV-B2): at "
                  "B = 128 that beats every heuristic; "
                  "at B = 1 it returns HEFT's schedule, since a module uses a device only after the modules before it "
                  "are done there (wdep 2-channel: 125.9 ms one proven module at a time, HEFT 120.7; docs/diviml.md).",
                  "Greedy is `eft`; MET, Greedy and HEFT under a batch are the paper's bMET, bGreedy and bHEFT.",
                  "SA and EA run until the limit (the paper: 600 s) and start from HEFT's schedule; "
                  "HEFT's mapping is list-scheduled in HEFT's order (`-O decode=bfs`: the paper's breadth-first order)."]
    tab.seconds, fig.seconds = time.monotonic() - t0, None
    return [tab, fig]


TABLES_I_IV = "DiviML, Tables I and IV: 10-module ER(0.2) networks, 1 to 4 channels"


def _diviml_rows(name: str, runs: dict[str, Run], pub: tuple[float, ...]) -> list[tuple[str, ...]]:
    """One network's rows of Tables I and IV: each column's method, then MILP-SPLIT's bound."""
    base = runs["single"].value
    rows = []
    for col, p in zip(DIVIML_COLUMNS, pub):
        r = runs.get(col)
        value = runs["milp_split"].bound if r is None else r.value
        rows.append((name, "MILP-SPLIT's bound" if r is None else col, f"{p:g}", f"{p / pub[0]:.3f}",
                     sig(value), "-" if math.isnan(value) else f"{value / base:.3f}",
                     "-" if r is None else f"{r.seconds:.1f}",
                     ("proven" if not math.isnan(value) else "-") if r is None else r.certificate))
    return rows


def _figure_7(fig: Table, series: dict[str, list[tuple[float, float]]], runs: dict[str, Run], cap: float) -> None:
    """Figure 7's rows and curves: each method's best throughput found over time."""
    for col in ("heft", "sa", "ea", "exact", "milp_split"):
        r = runs[col]
        if math.isnan(r.value):  # refused
            continue
        steps = list(r.timeline) or [(r.seconds, r.value)]
        series[col] = steps + [(r.seconds, steps[-1][1])]  # drawn to the end of the run
        at = [max((v for t, v in steps if t <= f * cap), default=None) for f in FIG7_AT]
        fig.rows.append((col, *("-" if v is None else sig(v) for v in at), sig(r.value), f"{r.seconds:.1f}"))


def diviml_speedup(quick: bool, cap: float) -> Table:
    """Table III: seconds for the whole MILP and for MILP-SPLIT on latency, at 5, 10 and 20
    modules, strongly and weakly dependent; the factor is the MILP's time over MILP-SPLIT's
    (">=" where the MILP stopped at the limit)."""
    from partdsl.generators.randwire import RandWire, randwire_spec

    t0 = time.monotonic()
    keys = [("sdep", 5)] if quick else sorted(DIVIML_T3, key=lambda k: (k[1], k[0]))
    tab = Table("diviml-3", "DiviML, Table III: MILP-SPLIT's speedup over the whole MILP (latency)",
                f"Generated ER(0.2) RWNNs of 10-node modules, one channel, seed 0, B = 1. Both stop at {cap:g} s "
                "(the paper: 2 hours for the MILP). Our seconds are to the end of each run; the MILP's `best at` "
                "is when its final incumbent appeared. The factor is the MILP's seconds over MILP-SPLIT's.",
                ("modules", "variant", "published MILP s", "published SPLIT s", "published factor", "MILP s",
                 "MILP best at", "MILP value", "SPLIT s", "SPLIT value", "factor"))
    for variant, modules in keys:
        rw = RandWire(model="er", size=10, modules=modules, channels=1, variant=variant, p=0.2, k=4, m=5, seed=0)
        spec = randwire_spec(rw, "latency", 1, 1)
        full, split = solved(spec, "exact", cap), solved(spec, "milp_split", cap)
        at = full.timeline[-1][0] if full.timeline else full.seconds
        capped = full.status != "optimal"
        pub = DIVIML_T3[(variant, modules)]
        tab.rows.append((str(modules), variant, f"{pub[0]:g}", f"{pub[1]:g}", f"{pub[2]}x", f"{full.seconds:.1f}",
                         f"{at:.1f}", f"{sig(full.value)} ({full.certificate})", f"{split.seconds:.1f}" + (" (limit)" if split.seconds >= 0.98 * cap else ""),
                         sig(split.value) if not math.isnan(split.value) else split.status,
                         f"{'>=' if capped else ''}{full.seconds / split.seconds:.1f}x"))
    tab.notes.append("A MILP stopped at the limit has not reached its best: its factor is a lower bound on the "
                     "paper's, and its value may be worse than MILP-SPLIT's.")
    tab.seconds = time.monotonic() - t0
    return tab

"""Reproduce the three papers' tables in one command and write docs/tables.md: for every
table that public data allows, the published value beside ours, the ratio, the time and
the certificate (status, proven bound, gap); then what cannot be reproduced, and why.

    python benchmarks/reproduce.py --jobs 2        # every table (over an hour on 2 cores)
    python benchmarks/reproduce.py --quick         # a subset at 10 s limits, to build/tables-quick.md
    python benchmarks/reproduce.py --only tarnawski-1,diviml --out /tmp/t.md
    python benchmarks/reproduce.py --only tarnawski-1 --update   # those tables' sections of docs/tables.md

Tables: tarnawski-1 (and -2, derived from it), tarnawski-4, archer (Table 3, Figure 5), archer-2 (Table 2), diviml
(Tables I and IV, Figure 7), diviml-3 (Table III), diviml-5 (Table V), diviml-cnn (Figures 3 and 5
and Table II on the model zoo's CNNs).
Every value is re-scored by partdsl's evaluator; every bound is proven.
"""
from __future__ import annotations

import argparse
import os
import platform
import re
import sys
import time
from pathlib import Path

import needs_partdsl  # noqa: F401  (a plain message if partdsl is missing)
from repro_common import ROOT, Table
from repro_figures import draw

KEYS = ("tarnawski-1", "tarnawski-4", "archer", "archer-2", "diviml", "diviml-3", "diviml-5", "diviml-cnn")
NOT_REPRODUCIBLE = """## What is not reproduced, and why

- **Tarnawski Table 3** (DP on operator graphs vs the same graphs contracted to layers): the
  grouping behind the published 159.43 and 465.41 is not the files' `layerId`. Contracting by it
  with the colour classes leaves 28 and 60 units and a DP value of 642.78 and 43,178; the
  authors' own code does the same (`dp.cpp -contractLayers`, run 2026-12-04: 642.78 and 43,178.24).
- (Tarnawski's Figures 8 and 9 are drawn above, beside Tables 2 and 1.)
- **Archer Table 1** (the MIP hierarchy's bounds over BRKGA's best, k = 2 to 64, on the production
  dataset): the production models are proprietary; Table 3 above is the same measure on REGAL-style graphs.
- **Archer Table 2 and Figures 2-4** (production models): proprietary; Table 2's rows above are
  run on the REGAL-style graphs instead.
- **Archer Table 3 on REGAL's own graphs**: the 1,000 test graphs are public
  (deepmind-research/regal, a tarball on storage.googleapis.com), but the machine that wrote
  this file could not reach it, so the rows above are generated with App. C.2's parameters
  and fixed seeds, passed through REGAL's filter as its README defines it (BRKGA with few and
  many evaluations, kept where the many fit memory and the few did not, or ran 20% faster) on
  a placement-and-scheduling model of ours: REGAL's performance model, its memory limits and
  its random graph models' parameters are not published. With the files at hand:
  `python benchmarks/reproduce.py --only archer,archer-2 --regal DIR`.
- **Archer Tables 2-3 and Figure 5 at the paper's size and limits**: the paper runs 1,000
  graphs with MIPs of up to 3,600 s (900 s for bottleneck). Ours are 10 graphs per set with
  10 s MIPs{archer_time}.
  `--graphs N` and `--cap SECONDS` run any size and limit.
- **DiviML Tables II and Figures 3, 5** on the paper's torchvision graphs: their node times were
  measured on the paper's own Xeon, T4 and A100 and are not published. The tables above run the
  nearest public substitute, the ONNX model zoo's CNNs with node times from partdsl's device
  profiles; the figures publish bars, so only the paper's text (which models gain, by how much)
  compares. **Table V** is run above on a substitute (a GPT-3-shaped layer stack with
  costs from device profiles, servers we chose): the paper's graph, costs and Figure 8's
  servers are not published, so only its ratios compare.
"""


CAPS = {"tarnawski-1": 20.0, "tarnawski-4": 20.0, "archer": 10.0, "diviml": 20.0, "diviml-3": 20.0,
        "diviml-5": 120.0, "diviml-cnn": 10.0}  # full run, seconds
UNCAPPED = {"archer-2": "each order runs its whole budget"}  # tables with no time limit, and why
QUICK_CAP = 10.0


def build_one(key: str, quick: bool, cap: float, regal: str | None = None, graphs: int | None = None) -> list[Table]:
    import repro_others
    import repro_tarnawski

    print(f"== {key} ({UNCAPPED.get(key, f'limit {cap:g} s')})", file=sys.stderr, flush=True)
    if key == "tarnawski-1":
        t1, ours = repro_tarnawski.table1(quick, cap)
        return [t1, repro_tarnawski.table2(ours)]
    if key == "tarnawski-4":
        return [repro_tarnawski.table4(quick, cap)]
    if key == "archer":
        return repro_others.archer(quick, cap, regal, graphs)
    if key == "archer-2":
        return repro_others.archer_orders(quick, regal, graphs)
    if key == "diviml-3":
        return [repro_others.diviml_speedup(quick, cap)]
    if key == "diviml-cnn":
        import repro_cnn

        return repro_cnn.figures_3_5(quick, cap)
    if key == "diviml-5":
        import repro_gpt

        return [repro_gpt.table5(quick, cap)]
    return repro_others.diviml(quick, cap)


def build(keys: tuple[str, ...], quick: bool, cap: float | None, jobs: int = 1, regal: str | None = None,
          graphs: int | None = None) -> list[Table]:
    """The tables of `keys`, in that order; `jobs` processes run different keys at once."""
    caps = [cap if cap is not None else QUICK_CAP if quick else CAPS.get(k, QUICK_CAP) for k in keys]
    if jobs <= 1:
        return [t for k, c in zip(keys, caps) for t in build_one(k, quick, c, regal, graphs)]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # spawned, not forked: a forked child of a process whose solver threads hold a lock can hang
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        parts = [pool.submit(build_one, k, quick, c, regal, graphs) for k, c in zip(keys, caps)]
        return [t for k, f in zip(keys, parts) for t in outcome(k, f)]


def outcome(key: str, future) -> list[Table]:  # type: ignore[no-untyped-def]
    """A table's result, or, if computing it failed, a table that says why (the others stand)."""
    try:
        return future.result()
    except Exception as e:  # noqa: BLE001  (any failure of one table: report it, keep the rest)
        return [Table(key, f"{key}: not computed", f"It failed: {type(e).__name__}: {e}", ("-",))]


def document(tables: list[Table], quick: bool, seconds: float, out: Path, note: str = "", graphs: int = 10) -> str:
    from partdsl.solvers.registry import version

    head = ["# The papers' tables, reproduced", "",
            "Generated by `python benchmarks/reproduce.py" + (" --quick" if quick else "") + "`; do not edit by hand. "
            "Each table states its time limits. Machine: "
            f"{platform.machine()}, {os.cpu_count()} cores, Python "
            f"{platform.python_version()}, HiGHS {version('highs')}; {seconds / 60:.0f} minutes in all.", "",
            "Each row: the paper's value, ours (scored by partdsl's evaluator), ours / published, our time "
            "and our certificate (a proven bound and the gap to it; `optimal` when proven). Lower is better "
            "except where a table says otherwise.", ""] + ([f"**Note on this run:** {note}", ""] if note else [])
    parts = [t.markdown() + "".join(draw(f, out.parent / "img" / f"tables-{f.key}.png") + "\n" for f in t.figures)
             for t in tables]
    return "\n".join(head) + "\n" + "\n".join(parts) + "\n" + NOT_REPRODUCIBLE.format(
        archer_time="" if quick else archer_time(tables, graphs))


def archer_time(tables: list[Table], graphs: int) -> str:
    """What Archer's Tables 3 and 2 took in this run on `graphs` graphs per set, and what
    1,000 would (the paper's size) at our limits: a clause for the note on them; empty if
    they did not run."""
    took = {t.key: t.seconds for t in tables if t.key in ("archer-3", "archer-2") and t.seconds}
    if len(took) < 2:
        return ""
    days = sum(took.values()) * 1000 / graphs / 86400
    return (f": in this run Table 3 and Figure 5 took {took['archer-3'] / 60:.0f} minutes, Table 2 "
            f"{took['archer-2'] / 60:.0f}, so 1,000 graphs would take about {days:.0f} days at our limits (both "
            "tables), and up to 360 times as long at the paper's")


def sections(text: str) -> tuple[str, list[tuple[str, str]]]:
    """(what precedes the first `## ` heading, [(heading line, its section up to the next)])."""
    parts = ("\n" + text).split("\n## ")
    return parts[0].lstrip("\n"), [(p.split("\n", 1)[0], "## " + p) for p in parts[1:]]


def update(old: str, new: str, command: str, minutes: float) -> str:
    """`old` with each section of `new` in place of the section of the same heading (a new
    one before "What is not reproduced", which is always `new`'s), and a line under the
    header saying which run replaced them (after any earlier update's)."""
    head, olds = sections(old)
    _, news = sections(new)
    fresh = dict(news)
    last = "What is not reproduced, and why"
    body = [fresh.pop(h, sec) for h, sec in olds if h != last]
    body += [sec for h, sec in news if h in fresh and h != last] + [fresh.get(last) or dict(olds).get(last, "")]
    ran = [h for h, _ in news if h != last]
    # earlier updates' lines stay, unless this run regenerated every table one names
    lines = [ln for ln in head.rstrip("\n").split("\n") if not ((named := _updated(ln)) and set(named) <= set(ran))]
    lines += ["", f"**Updated:** `{command}` regenerated {'; '.join(ran)}, in {minutes:.0f} minutes; the other "
              "tables are from the run the header describes."]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)) + "\n\n" + "\n".join(body)  # a dropped line's blank too


def _updated(line: str) -> list[str]:
    """The tables an "Updated" line of the header names (none for any other line)."""
    if not line.startswith("**Updated:** ") or " regenerated " not in line:
        return []
    return line.split(" regenerated ", 1)[1].rsplit(", in ", 1)[0].split("; ")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a subset of each table at 10 s limits")
    ap.add_argument("--only", default=",".join(KEYS), help=f"tables to run (of {', '.join(KEYS)})")
    ap.add_argument("--cap", type=float, default=None,
                    help="seconds per MIP and search in every table (default: 20, Archer's 10; quick 10)")
    ap.add_argument("--jobs", type=int, default=1, help="tables computed at once, one process each")
    ap.add_argument("--regal", metavar="DIR", help="archer, archer-2: REGAL's own .pbtxt files "
                    "(deepmind-research/regal) instead of generated graphs")
    ap.add_argument("--graphs", type=int, help="archer, archer-2: how many graphs (default 10; quick 2)")
    ap.add_argument("--note", default="", help="a sentence on this run, printed under the header")
    ap.add_argument("--out", default=None, help="the file to write (default docs/tables.md; with --quick "
                    "build/tables-quick.md, so a quick run never replaces the committed tables)")
    ap.add_argument("--update", action="store_true",
                    help="replace only these tables' sections of --out, keep the others (not with --quick)")
    args = ap.parse_args(argv)
    keys = tuple(k for k in args.only.split(",") if k)
    bad = [k for k in keys if k not in KEYS]
    if bad:
        ap.error(f"unknown table {', '.join(bad)} (tables: {', '.join(KEYS)})")
    out = Path(args.out or (ROOT / "build" / "tables-quick.md" if args.quick else ROOT / "docs" / "tables.md"))
    out.parent.mkdir(parents=True, exist_ok=True)
    if args.update and (args.quick or not out.exists()):
        ap.error(f"--update replaces sections of a full run's {out}: " + ("not with --quick" if args.quick
                                                                            else "it does not exist"))
    t0 = time.monotonic()
    tables = build(keys, args.quick, args.cap, args.jobs, args.regal, args.graphs)
    text = document(tables, args.quick, time.monotonic() - t0, out, args.note, args.graphs or 10)
    if args.update:
        cap = f" --cap {args.cap:g}" if args.cap is not None else ""
        text = update(out.read_text(), text, f"python benchmarks/reproduce.py --only {','.join(keys)} --update{cap}",
                      (time.monotonic() - t0) / 60)
    out.write_text(text)
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

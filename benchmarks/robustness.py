"""The robustness campaign: broken and extreme specs (tests/support/mutants.py) through `part
check`, `part solve` and `part eval`, in-process, on worker processes; every tenth case
also through `part plot`, and another tenth through a peer partitioner (metis, scotch,
kahypar in turn). Counts tracebacks (exit 1 or an exception escaping main), errors
without file:line:column, and hangs (a case over --timeout seconds); failing cases are
kept in --keep for replay. `--absent-extras` runs it as if the optional extras (onnx,
matplotlib, dask, the peers) were not installed: each must then be exit 5 with its
install hint, never a traceback.

    .venv/bin/python benchmarks/robustness.py --cases 10000 --workers 2
    .venv/bin/python benchmarks/robustness.py --cases 10000 --workers 2 --absent-extras
    .venv/bin/python benchmarks/robustness.py --replay KEEP/case-123    # one kept case again
"""
from __future__ import annotations

import argparse
import collections
import json
import random
import shutil
import signal
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import needs_partdsl  # noqa: F401  (a plain message when partdsl is not installed)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.support.mutants import KINDS, mutate, run_case, write_case  # noqa: E402

EDITS = tuple(k for k in KINDS if k != "big_graph")  # big graphs take seconds: one case in 80
EXTRAS = ("onnx", "matplotlib", "distributed", "dask", "pymetis", "pyscotch", "mtkahypar")  # the optional packages
PEERS = ("metis", "scotch", "kahypar")
MEMORY_MB = 1024  # a case that takes a worker past this is a finding (issue 69: /dev/zero read 2.1 GB)


def _without_extras() -> None:
    """A worker in which importing an optional extra fails, as where it is not installed."""
    for name in EXTRAS:
        sys.modules[name] = None  # type: ignore[assignment]


def more_commands(i: int, folder: Path) -> tuple[list[str], ...]:
    """The commands beyond check, solve and eval for case i: plot or a peer, one case in ten each."""
    if i % 10 == 3:
        return (["plot", "SPEC", "-o", str(folder / "plot.png"), "--time-limit", "1"],)
    if i % 10 == 7:
        return (["solve", "SPEC", "--method", PEERS[(i // 10) % len(PEERS)], "-O", "repair=1"],)
    return ()


class CaseTimeout(Exception):
    pass


def _alarm(_signum, _frame):  # type: ignore[no-untyped-def]
    raise CaseTimeout()


def partition_file(folder: Path) -> Path:
    """A {node: device} partition of examples/tiny.part (eval on a mutant of another spec
    exercises the errors for unknown nodes and devices)."""
    from partdsl import parse_file, solve

    r = solve(parse_file(ROOT / "examples" / "tiny.part"))
    f = folder / "partition.json"
    f.write_text(json.dumps({"assignment": r.assignment}))
    return f


def peak_rss_mb() -> float:
    """This worker's peak resident memory so far (MB): the campaign's memory check."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_chunk(args: tuple[int, list[int], float, str]) -> list[tuple[int, str, list[str], float]]:
    seed, ids, timeout, keep = args
    try:
        import matplotlib

        matplotlib.use("Agg")  # no display
    except ImportError:  # --absent-extras
        pass
    signal.signal(signal.SIGALRM, _alarm)
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        part = partition_file(Path(tmp))
        for i in ids:
            rng = random.Random(seed * 1_000_003 + i)
            case = mutate(rng, "big_graph" if i % 80 == 0 else EDITS[i % len(EDITS)])
            folder = Path(tmp) / f"case-{i}"
            spec = write_case(case, folder)
            t = time.monotonic()
            signal.alarm(int(timeout))
            try:
                problems = run_case(spec, part, more=more_commands(i, folder))
            except CaseTimeout:
                problems = [f"hang: over {timeout:g} s"]
            finally:
                signal.alarm(0)
            dt = time.monotonic() - t
            if peak_rss_mb() > MEMORY_MB:
                problems = problems + [f"memory: the worker's peak RSS passed {MEMORY_MB} MB ({peak_rss_mb():.0f} MB)"]
            if problems and keep:
                dest = Path(keep) / f"case-{i}"
                shutil.rmtree(dest, ignore_errors=True)
                shutil.copytree(folder, dest)
                shutil.copy(part, dest / "partition.json")
            out.append((i, case.kind, problems, dt))
            shutil.rmtree(folder, ignore_errors=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=10_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds before a case counts as a hang")
    ap.add_argument("--keep", default="robustness-failures", help="folder for failing cases")
    ap.add_argument("--max-seconds", type=float, default=0, help="stop after this long and report (0: no limit)")
    ap.add_argument("--replay", metavar="FOLDER", help="run one kept case and print what it does")
    ap.add_argument("--absent-extras", action="store_true", help="as if onnx, matplotlib, dask and the peers were "
                    "not installed")
    a = ap.parse_args()
    if a.replay:
        if a.absent_extras:
            _without_extras()
        problems = run_case(Path(a.replay) / "spec.part", Path(a.replay) / "partition.json")
        print("\n".join(problems) or "no problem")
        return 1 if problems else 0
    chunks = [list(range(i, min(i + 10, a.cases))) for i in range(0, a.cases, 10)]
    t0 = time.monotonic()
    by_kind: dict[str, int] = collections.Counter()
    bad: list[tuple[int, str, list[str]]] = []
    slowest = (0.0, -1)
    done = 0
    ex = ProcessPoolExecutor(a.workers, initializer=_without_extras if a.absent_extras else None)
    futures = [ex.submit(run_chunk, (a.seed, c, a.timeout, a.keep)) for c in chunks]
    try:
        for fut in as_completed(futures):
            res = fut.result()
            for i, kind, problems, dt in res:
                by_kind[kind] += 1
                slowest = max(slowest, (dt, i))
                if problems:
                    bad.append((i, kind, problems))
            done += len(res)
            if done % 100 == 0 or done == a.cases:
                print(f"  ... {done:,}/{a.cases:,} cases, {len(bad)} with problems, "
                      f"{time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)
            if a.max_seconds and time.monotonic() - t0 > a.max_seconds:
                print(f"stopped at the --max-seconds budget after {done:,} cases", file=sys.stderr)
                break
    finally:
        for fut in futures:
            fut.cancel()
        ex.shutdown(wait=False, cancel_futures=True)
    print(f"{done:,} cases ({', '.join(f'{k} {v:,}' for k, v in sorted(by_kind.items()))}) "
          f"in {time.monotonic() - t0:.0f} s; slowest case {slowest[1]} took {slowest[0]:.1f} s")
    tracebacks = sum(any("exit 1" in p or "escaped" in p for p in ps) for _, _, ps in bad)
    hangs = sum(any(p.startswith("hang") for p in ps) for _, _, ps in bad)
    memory = sum(any(p.startswith("memory") for p in ps) for _, _, ps in bad)
    unlocated = sum(any("without file:line:column" in p for p in ps) for _, _, ps in bad)
    print(f"tracebacks {tracebacks}, hangs {hangs}, errors without file:line:column {unlocated}, "
          f"cases past {MEMORY_MB} MB of a worker's memory {memory}")
    for i, kind, problems in bad[:30]:
        print(f"case {i} ({kind}): " + " | ".join(problems))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""Broken and extreme specs made from the bundled examples, for the robustness campaign
(benchmarks/robustness.py, 10,000+ cases) and the property test that keeps a share of it
in the default run (tests/cli/test_robustness.py).

A case is a folder with `spec.part` (bytes: it may not be UTF-8) and whatever it imports;
`run_case` runs `part check`, `part solve` and `part eval` on it in-process and returns
what went wrong, if anything: an internal error (a traceback), an error without
file:line:column, a Python repr in what the user reads (issues 71, 76), or a hang (the
caller's alarm)."""
from __future__ import annotations

import contextlib
import io
import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SOURCES = sorted(EXAMPLES.glob("*.part"))
NUMBER = re.compile(rb"(?<![\w.\[])\d+(?:\.\d+)?(?:e[+-]?\d+)?")
ODD_NUMBERS = (b"0", b"-3", b"1e400", b"99999999999", b"NaN", b"0.0000001", b"-0", b"1e-400", b"inf")
TOKENS = (b"{", b"}", b"[", b"]", b"->", b"...", b";", b",", b"..", b"node", b"graph", b"platform", b"device",
          b"param", b"import", b"minimize", b"maximize", b"subject to", b"solve", b"work", b"ms", b"GB",
          b"GB/s", b"host", b"only", b"pin", b"colocate", b"batch", b"x", b'"', b"#", b"=", b"1..3", b"k",
          b"\x00", b"\xff\xfe", b"\xc3\x28", b"latency", b"throughput", b"bottleneck", b"memory")
KINDS = ("delete", "insert", "swap", "duplicate", "number", "bytes", "big_graph", "import", "extreme")
FIFO, SPARSE = b"<fifo>", b"<sparse 600 MiB>"  # written by write_case as a named pipe, a sparse file


@dataclass(frozen=True)
class Case:
    kind: str
    spec: bytes
    extra: tuple[tuple[str, bytes], ...] = ()  # (relative path, content) next to the spec


def mutate(rng: random.Random, kind: str | None = None) -> Case:
    """One mutant of a random bundled example (1-3 edits of one kind), or a generated case."""
    kind = kind or rng.choice(KINDS)
    src = rng.choice(SOURCES)
    text = src.read_bytes()
    if kind == "big_graph":
        return Case(kind, big_graph(10_000 if rng.random() < 0.1 else rng.choice((500, 2_000)), rng))
    if kind == "import":
        return import_case(rng)
    if kind == "extreme":
        return extreme_case(rng, text)
    for _ in range(rng.randint(1, 3)):
        text = _edit(rng, kind, text)
    if "bert24_training" in src.name:  # its import is relative to examples/: point at the vendored file
        data = (EXAMPLES.parent / "data" / "dnn-partitioning" / "throughput" / "bert24_training.json").resolve()
        text = text.replace(b'"../data/dnn-partitioning/throughput/bert24_training.json"', b'"' + str(data).encode() + b'"')
    return Case(kind, text)


def _edit(rng: random.Random, kind: str, text: bytes) -> bytes:
    lines = text.split(b"\n")
    if kind == "delete":
        a = rng.randrange(len(text) + 1)
        return text[:a] + text[a + rng.randint(1, 40):]
    if kind == "insert":
        a = rng.randrange(len(text) + 1)
        return text[:a] + b" " + rng.choice(TOKENS) + b" " + text[a:]
    if kind == "swap":
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
        return b"\n".join(lines)
    if kind == "duplicate":
        i = rng.randrange(len(lines))
        lines.insert(rng.randrange(len(lines) + 1), lines[i])
        return b"\n".join(lines)
    if kind == "number":
        spots = list(NUMBER.finditer(text))
        if not spots:
            return text
        m = rng.choice(spots)
        return text[:m.start()] + rng.choice(ODD_NUMBERS) + text[m.end():]
    if kind == "bytes":
        a = rng.randrange(len(text) + 1)
        return text[:a] + bytes(rng.randrange(128, 256) for _ in range(rng.randint(1, 4))) + text[a:]
    raise ValueError(kind)


def big_graph(n: int, rng: random.Random) -> bytes:
    """A random layered DAG of n nodes, spelled out node by node."""
    lines = ["param k = 8", "graph big {"]
    lines += [f"  node v{i} {{ work {rng.uniform(0.1, 5):.3f} ms; params {rng.randint(1, 500)} MB; out 2 MB }}"
              for i in range(n)]
    lines += [f"  v{i} -> v{j}" for j in range(1, n) for i in {rng.randrange(max(0, j - 20), j), j - 1}]
    lines += ["}", "platform { device gpu[k] { memory 16 GiB; link 12 GB/s } device cpu[1] { host } }",
              "minimize bottleneck", "subject to { acyclic; memory hard }", "solve topo { time 20 s }"]
    return "\n".join(lines).encode()


def extreme_case(rng: random.Random, text: bytes) -> Case:
    """Issue 69's shapes: blocks, servers or parentheses nested 50 to 3,000 deep, and times
    or sizes scaled toward the float limit (1e290 to 1e308), in a bundled example."""
    if rng.random() < 0.5:
        depth = rng.choice((50, 101, 495, 3_000))
        which = rng.choice(("server", "paren", "brace"))
        if which == "server":
            inner = b"".join(b"server s%d[1] {\n" % i for i in range(depth)) + b"device gpu[1] { link 1 GB/s }\n"
            return Case("extreme", b"graph g { node a { work 1 ms } }\nplatform {\n" + inner + b"}\n" * depth + b"}\n")
        if which == "paren":
            return Case("extreme", text + b"\nparam deep = " + b"(" * depth + b"1" + b")" * depth + b"\n")
        return Case("extreme", text.replace(b"graph ", b"{" * depth + b"graph ", 1))
    scale = rng.choice((b"1e290", b"1e300", b"1e307", b"1.7e308"))
    for _ in range(rng.randint(1, 6)):
        nums = list(NUMBER.finditer(text))
        if not nums:
            break
        m = rng.choice(nums)
        text = text[:m.start()] + scale + text[m.end():]
    return Case("extreme", text)


def import_case(rng: random.Random) -> Case:
    """Imports gone wrong: missing, unreadable, a folder, the spec itself (a cycle: it is
    not JSON), a .part file, deeply nested JSON, non-UTF-8, broken dnn-partitioning data,
    and files that are no regular files or too large to read (/dev/zero, a FIFO with no
    writer, a sparse file over the cap: issue 69)."""
    head = b'graph g = import "%s" as dnn-partitioning\nplatform { device acc[2] { memory 16 GiB } device cpu[1] { host } }\n'
    which = rng.choice(("missing", "self", "part", "nested", "bytes", "folder", "broken", "unreadable",
                        "device", "fifo", "huge"))
    if which == "device":
        return Case("import", (head % b"/dev/zero").replace(b"dnn-partitioning", rng.choice((b"partdsl", b"onnx"))))
    if which == "fifo":
        return Case("import", head % b"pipe.json", (("pipe.json", FIFO),))
    if which == "huge":
        return Case("import", head % b"huge.json", (("huge.json", SPARSE),))
    if which == "missing":
        return Case("import", head % b"nowhere.json")
    if which == "self":
        return Case("import", head % b"spec.part")
    if which == "part":
        return Case("import", head % b"other.part", (("other.part", (EXAMPLES / "tiny.part").read_bytes()),))
    if which == "nested":
        depth = rng.choice((100, 10_000, 200_000))
        return Case("import", head % b"deep.json", (("deep.json", b"[" * depth + b"]" * depth),))
    if which == "bytes":
        return Case("import", head % b"bin.json", (("bin.json", b'{"nodes": ["\xff\xfe"], "edges": []}'),))
    if which == "folder":
        return Case("import", head % b"dir.json", (("dir.json/x", b"{}"),))
    if which == "unreadable":
        return Case("import", head % b"locked.json", (("locked.json", b"{}"),))  # chmod 000 by write_case
    data = json.loads((EXAMPLES.parent / "data" / "dnn-partitioning" / "throughput" / "bert24_inference.json")
                      .read_text())
    victim = rng.choice(("nodes", "edges", "maxFPGAs", "id", "cost", "cpuLatency"))
    if victim in ("nodes", "edges"):
        data[victim] = rng.choice(([], None, [{}], "x", [data[victim][0]] * 2))
    elif victim == "maxFPGAs":
        data["maxFPGAs"] = rng.choice((-1, "two", None, 1e400))
    else:
        target = data["nodes"] if victim in ("id", "cpuLatency") else data["edges"]
        target[rng.randrange(len(target))][victim] = rng.choice((-1, "x", None, 1e300, float("nan")))
    return Case("import", head % b"broken.json", (("broken.json", json.dumps(data).encode()),))


def write_case(case: Case, folder: Path) -> Path:
    import os

    folder.mkdir(parents=True, exist_ok=True)
    spec = folder / "spec.part"
    spec.write_bytes(case.spec)
    for rel, content in case.extra:
        f = folder / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        if content == FIFO:
            os.mkfifo(f)
            continue
        if content == SPARSE:
            with open(f, "wb") as out:
                out.truncate(600 * 2**20)
            continue
        f.write_bytes(content)
        if rel == "locked.json":
            os.chmod(f, 0)
    return spec


LOCATION = re.compile(r"--> .+:\d+:\d+")
# a Python object's repr where a person reads words: a dataclass's `Violation(kind=...`, numpy's
# `np.float64(3.0)` or `array([...`, an `<... object at 0x...>`
REPR = re.compile(r"\b[A-Z]\w*\((?:[a-z_]+=)|\bnp\.(?:float|int)\d*\(|\barray\(\[|<[\w.]+ object at 0x")


def run_case(spec: Path, partition: Path, solve_args: tuple[str, ...] = ("--time-limit", "1"),
             more: tuple[list[str], ...] = ()) -> list[str]:
    """Run check, solve and eval in-process, then the `more` command lines (the spec's path
    as SPEC); the problems found (empty: all well)."""
    from partdsl.cli.main import main

    problems = []
    extra = [[str(spec) if a == "SPEC" else a for a in argv] for argv in more]
    for argv in (["check", str(spec)], ["solve", str(spec), *solve_args], ["eval", str(spec), str(partition)],
                 *extra):
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(argv)
        except SystemExit as e:  # argparse
            code = e.code if isinstance(e.code, int) else 2
        except BaseException as e:  # noqa: BLE001 - escaping main is the bug we look for
            if type(e).__name__ == "CaseTimeout":
                raise
            problems.append(f"{argv[0]}: {type(e).__name__} escaped main: {e}")
            continue
        text = err.getvalue()
        if REPR.search(text + out.getvalue()):
            problems.append(f"{argv[0]}: a Python repr in its output: {REPR.search(text + out.getvalue())[0]!r}")
        if code == 1 or "internal error" in text or "Traceback" in text:
            problems.append(f"{argv[0]}: exit {code}: {text.strip()[:400]}")
        elif code == 2 and argv[0] != "eval" and not LOCATION.search(text):  # eval's own errors are the partition file's
            problems.append(f"{argv[0]}: error without file:line:column: {text.strip()[:400]}")
    return problems

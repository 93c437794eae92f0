"""External graph formats -> Graph.

- `dnn-partitioning`: the JSON of Tarnawski et al.'s code release (see
  data/dnn-partitioning/README.md). Node `id` N becomes node `nN`;
  fpgaLatency is work on class `acc`, cpuLatency work on class `cpu`; `size` is the
  node's memory (`params`); an edge `cost` is the source node's transfer time (`comm`);
  `colorClass` becomes the colocation `group` cN; `isBackwardNode` marks backward nodes.
  Times are taken as milliseconds. Times are as profiled; a node not supported on
  accelerators gets `not acc`.
- `partdsl`: the project's own JSON (see `graph_to_json`), a lossless dump of a Graph.
- `regal`: REGAL's CostGraphDef text files (`.pbtxt`, importers/regal_import.py).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from partdsl.core.assemble import EdgeTensor, assemble_graph
from partdsl.core.errors import PartError, Span
from partdsl.core.ir import Graph, Node, Work
from partdsl.core.limits import MAX_JSON_DEPTH, check_count
from partdsl.importers.import_options import ImportOptions
from partdsl.importers.import_text import check_import_file, read_import_text

ACC, CPU = "acc", "cpu"


def load_json(path: Path, span: Span | None) -> Any:
    text = read_import_text(path, span)
    check_count(_max_depth(text), MAX_JSON_DEPTH, f"import: '{path}' nests JSON too deeply", span,
                "a graph file is an object with nodes and edges")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise PartError(f"import: '{path}' is not valid JSON ({e.msg} at line {e.lineno}, "
                        f"column {e.colno})", span) from None


_NOT_BRACKETS = bytes(c for c in range(256) if c not in b"[]{}")


def _max_depth(text: str, chunk: int = 1 << 22) -> int:
    """How deeply `[` and `{` nest (strings included: an upper bound, cheap to compute). The
    brackets are picked out in C (bytes.translate), then summed up in chunks of `chunk`
    brackets, so that a 100 MB file costs no more than its brackets and a few chunks."""
    import numpy as np

    b = np.frombuffer(text.encode("utf-8", "replace").translate(None, _NOT_BRACKETS), dtype=np.uint8)
    depth = deepest = 0
    for a in range(0, len(b), chunk):
        part = b[a:a + chunk]
        run = np.cumsum(np.where((part == ord("[")) | (part == ord("{")), 1, -1), dtype=np.int64) + depth
        deepest, depth = max(deepest, int(run.max())), int(run[-1])
    return deepest


def detect_format(data: Any) -> str:
    if isinstance(data, dict) and data.get("format") == "partdsl-graph":
        return "partdsl"
    return "dnn-partitioning"


def import_graph(path: Path, fmt: str | None, name: str, span: Span | None = None,
                 options: ImportOptions = ImportOptions()) -> Graph:
    """`import "path" as fmt`: the reader of importers/formats.py's row, or (no format
    named, no telling suffix: `.json` is two formats) the JSON formats told apart by content."""
    from partdsl.importers.formats import IMPORTABLE, by_name, guess

    check_import_file(path, span)  # a regular file within the size cap, before any reader opens it
    f = by_name(fmt, span, IMPORTABLE, "import format") if fmt else guess(path, IMPORTABLE)
    if f is not None:
        return f.reader()(path, name, span, options)
    data = load_json(path, span)
    return _from_json(detect_format(data), data, path, name, span)


def read_dnn_partitioning(path: Path, name: str, span: Span | None = None,
                          options: ImportOptions = ImportOptions()) -> Graph:
    return _from_json("dnn-partitioning", load_json(path, span), path, name, span)


def read_graph_json(path: Path, name: str, span: Span | None = None,
                    options: ImportOptions = ImportOptions()) -> Graph:
    return _from_json("partdsl", load_json(path, span), path, name, span)


def _from_json(fmt: str, data: Any, path: Path, name: str, span: Span | None) -> Graph:
    try:
        if fmt == "partdsl":
            return graph_from_json(data, name, span)
        return graph_from_dnn_partitioning(data, name, span)
    except PartError:
        raise
    except (KeyError, TypeError, ValueError) as e:
        raise PartError(f"import: '{path}' is not a valid {fmt} file ({type(e).__name__}: {e})",
                        span, "see the format description in the README") from None


def _bad(msg: str, span: Span | None) -> PartError:
    return PartError(f"import: {msg}", span, "see the format description in the README")


def graph_from_dnn_partitioning(data: dict, name: str, span: Span | None = None) -> Graph:
    if not isinstance(data, dict) or "nodes" not in data or "edges" not in data:
        raise _bad("a dnn-partitioning file is an object with `nodes` and `edges`", span)
    costs: dict[int, list[float]] = {}
    for e in data["edges"]:
        costs.setdefault(int(e["sourceId"]), []).append(float(e["cost"]))
    # a node whose out-edges cost the same sends one tensor; otherwise each edge carries its
    # own (Tarnawski App. B, non-uniform outgoing communication costs)
    uniform = {s: max(c) - min(c) <= 1e-12 * max(1.0, abs(max(c))) for s, c in costs.items()}
    out_cost = {s: c[0] for s, c in costs.items() if uniform[s]}
    nodes = []
    ids = set()
    for nd in data["nodes"]:
        i = int(nd["id"])
        if i in ids:
            raise _bad(f"node id {i} appears twice", span)
        ids.add(i)
        supported = bool(nd.get("supportedOnFpga", True))
        work = (Work(float(nd["cpuLatency"]), CPU),)
        if supported:
            work = (Work(float(nd["fpgaLatency"]), ACC),) + work
        color = nd.get("colorClass")
        nodes.append(Node(name=f"n{i}", work=work, params=float(nd.get("size", 0.0)),
                          comm=out_cost.get(i, 0.0), backward=bool(nd.get("isBackwardNode", False)),
                          group=None if color is None else f"c{int(color)}", span=span))
    edges = []
    tensors = []
    for e in data["edges"]:
        a, b = int(e["sourceId"]), int(e["destId"])
        for x in (a, b):
            if x not in ids:
                raise _bad(f"edge {a} -> {b} names node {x}, which is not in `nodes`", span)
        edges.append((f"n{a}", span, f"n{b}", span))
        if not uniform[a]:
            tensors.append(EdgeTensor(f"n{a}", (f"n{b}",), comm=float(e["cost"]), span=span))
    return assemble_graph(name, nodes, edges, span, tensors)


def platform_fields(data: dict) -> tuple[int, int, float]:
    """(accelerators, CPUs, memory per accelerator) of a dnn-partitioning file."""
    return int(data["maxFPGAs"]), int(data["maxCPUs"]), float(data["maxSizePerFPGA"])


# ---------------------------------------------------------------------- own JSON

def graph_to_json(g: Graph) -> dict:
    """The lossless dump: nodes, edges, and the sized edge tensors as `tensors`
    ({"from": a, "to": [b, c], "out": bytes} or "comm": ms), as the language writes them."""
    nodes = []
    plain, carried = g.written_edges()
    tensors = [{"from": nd.tensor_of, "to": ts, **({"out": nd.out} if nd.comm is None else {"comm": nd.comm})}
               for nd, ts in carried]
    for nd in g.nodes:
        if nd.tensor_of is not None:
            continue
        d: dict[str, Any] = {"name": nd.name,
                             "work": [{"time": w.time, "on": w.on, "batch": w.batch} for w in nd.work]}
        if nd.params:
            d["params"] = nd.params
        if nd.stash:
            d["stash"] = nd.stash
        if nd.shares:
            d["shares"] = dict(nd.shares)
        for key in ("out", "comm", "group", "flops", "rows", "dtype", "module"):
            if getattr(nd, key) is not None:
                d[key] = getattr(nd, key)
        if nd.backward:
            d["backward"] = True
        if nd.only:
            d["only"] = list(nd.only)
        if nd.forbid:
            d["not"] = list(nd.forbid)
        nodes.append(d)
    out = {"format": "partdsl-graph", "version": 1, "name": g.name, "nodes": nodes,
           "edges": [[g.nodes[a].name, g.nodes[b].name] for a, b in plain]}
    return out | ({"tensors": tensors} if tensors else {}) | ({"measured": g.measured} if g.measured else {})


def graph_from_json(data: dict, name: str, span: Span | None = None) -> Graph:
    if data.get("version", 1) != 1:
        raise _bad(f"unsupported partdsl-graph version {data.get('version')}", span)
    works: dict[tuple, Work] = {}  # type: ignore[type-arg]  # equal entries shared: a model repeats its layers

    def work(w: dict) -> Work:  # type: ignore[type-arg]
        k = (float(w["time"]), str(w.get("on", "")), int(w.get("batch", 1)))
        return works.get(k) or works.setdefault(k, Work(*k))

    def number(x: object) -> float | None:
        return None if x is None else float(x)  # type: ignore[arg-type]

    nodes = [Node(str(d["name"]), tuple([work(w) for w in d.get("work", ())]), float(d.get("params", 0.0)),
                  number(d.get("out")), number(d.get("comm")), bool(d.get("backward", False)), d.get("group"),
                  tuple(d.get("only", ())), tuple(d.get("not", ())), number(d.get("flops")), d.get("dtype"),
                  d.get("module"), stash=float(d.get("stash", 0.0)), rows=number(d.get("rows")),
                  shares=tuple((str(w), float(b)) for w, b in d.get("shares", {}).items()), span=span)
             for d in data["nodes"]]
    edges = [(str(a), span, str(b), span) for a, b in data["edges"]]
    tensors = [EdgeTensor(str(t["from"]), tuple(str(b) for b in t["to"]),
                          None if t.get("out") is None else float(t["out"]),
                          None if t.get("comm") is None else float(t["comm"]), span)
               for t in data.get("tensors", [])]
    for t in tensors:
        if (t.out is None) == (t.comm is None):
            raise _bad(f"tensor from {t.source} needs exactly one of `out` (bytes) and `comm` (ms)", span)
        edges += [(t.source, span, b, span) for b in t.targets]
    return assemble_graph(name, nodes, edges, span, tensors, str(data.get("measured", "")))

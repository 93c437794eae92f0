"""Sizes far beyond any real DNN graph or platform, checked before anything is expanded,
so that a spec file can never hang or exhaust the machine before it gets an error
(`node b[1..99999999999]` once ran for minutes). The largest real workloads here have
under 2,000 nodes; ONNX graphs of large models have tens of thousands of operators."""
from __future__ import annotations

from partdsl.core.errors import PartError, Span

MAX_NODES = 200_000  # nodes in one graph (a family range counts its members)
MAX_EDGES = 2_000_000  # edges in one graph
MAX_DEVICES = 4_096  # devices on one platform
MAX_SUBGRAPHS = 64  # contiguous subgraphs per accelerator (latency, Tarnawski sec. 4.1)
MAX_BATCH = 65_536  # samples in a batch (batched throughput splits it by a DP over 0..batch)
MAX_IMPORT_BYTES = 512 * 2**20  # an imported graph file (a regular file: runtime/files.py)
MAX_SPEC_BYTES = 256 * 2**20  # a .part spec (a 100,000-operator decoder is about 15 MB)
MAX_SMALL_FILE_BYTES = 64 * 2**20  # a partition or an order given on the command line
MAX_NESTING = 100  # nested blocks of a spec (servers in servers): the parse tree's depth
MAX_JSON_DEPTH = 64  # nesting of an imported JSON document (json.loads recurses)
MAX_TOTAL = 1e300  # all of a spec's times added up (ms), or its sizes (bytes): sums stay far from float overflow


def check_count(count: int, limit: int, what: str, span: Span | None, hint: str) -> None:
    if count > limit:
        raise PartError(f"{what}: {count:,} is more than partdsl handles ({limit:,})", span, hint)

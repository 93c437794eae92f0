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
MAX_IMPORT_BYTES = 512 * 2**20  # an imported graph file
MAX_JSON_DEPTH = 64  # nesting of an imported JSON document (json.loads recurses)


def check_count(count: int, limit: int, what: str, span: Span | None, hint: str) -> None:
    if count > limit:
        raise PartError(f"{what}: {count:,} is more than partdsl handles ({limit:,})", span, hint)

"""How many generated cases the property tests draw: each test's own count times
PARTDSL_TEST_EFFORT (default 1). The default keeps `make test` within its time budget; the
oracle campaign (benchmarks/oracle.py) is the deep check, and PARTDSL_TEST_EFFORT=5 runs
the heaviest brute-force properties five times as long."""
from __future__ import annotations

import os

EFFORT = float(os.environ.get("PARTDSL_TEST_EFFORT") or 1.0)


def examples(n: int) -> int:
    return max(1, round(n * EFFORT))

"""Issue 76.1: under latency, a host CPU's nodes run as units of their own, and the
evaluation's per-device parts (the plan table's compute, finish and load) count them. The
table said `cpu[0]  compute 0  finish -  load 0` while the Gantt showed it busy 2.5 ms."""
from __future__ import annotations

import numpy as np
import pytest
from partdsl.dsl.parser import parse_file
from partdsl.evaluator.evaluate import evaluate

from tests.support import EXAMPLES


def test_host_nodes_count_in_their_devices_row() -> None:
    spec = parse_file(EXAMPLES / "latency.part")
    where = {"in": "cpu[0]", "join": "cpu[0]", "post": "cpu[0]"}
    where |= {f"a[{i}]": "acc[0]" for i in range(1, 4)} | {f"b[{i}]": "acc[1]" for i in range(1, 4)}
    dev = np.array([spec.platform.devices.index(where[nd.name]) for nd in spec.graph.nodes])
    ev = evaluate(spec, dev)
    cpu = ev.parts["cpu[0]"]
    assert cpu["compute"] == pytest.approx(0.5 + 1 + 1)  # in, join, post on the CPU
    assert ev.loads["cpu[0]"] == pytest.approx(2.5)
    assert cpu["finish"] == pytest.approx(ev.objective)  # post runs last, on the CPU
    assert cpu["start"] == pytest.approx(0.0)
    assert "finish" not in ev.parts["cpu[1]"] and ev.parts["cpu[1]"]["compute"] == 0

"""Fallback starts of `latency_search` (kernels/latency/search.py) for specs where no chain
DP split is feasible, e.g. colocated forward and backward nodes, which one run of an
order cannot hold together, on a platform without a host (issue 69: the search ended
with nothing on 23 of 103 small feasible training specs). Each start is a whole plan
the evaluator scores; the local search then improves the best feasible one.

- every node on a host device that may run it;
- every node on one accelerator (each class in turn): one subgraph, or with q >= 2 the
  forward nodes in subgraph 0 and the backward ones in subgraph 1;
- each unit (colocation group) on its own accelerator, round robin; and the units in
  topological order, each on the first accelerator its parameters fit on (first fit):
  forward nodes in subgraph 0 and backward ones in subgraph 1 (q >= 2).
"""
from __future__ import annotations

from typing import Iterator

import numpy as np
from partdsl.core.ir import Spec
from partdsl.kernels.graph.contraction import Contraction

Start = tuple[str, np.ndarray, np.ndarray]


def starts(spec: Spec, u: Contraction) -> Iterator[Start]:
    d = spec.dense
    q = spec.constraints.subgraphs
    zero = np.zeros(d.n, dtype=np.int64)
    phase = d.backward.astype(np.int64) if q >= 2 else zero
    hosts = np.flatnonzero(d.host[d.dev_class])
    ok = d.allowed[:, hosts] if len(hosts) else np.zeros((d.n, 0), bool)
    if len(hosts) and ok.any(axis=1).all():
        yield "all on the hosts", hosts[ok.argmax(axis=1)].astype(np.int64), zero
    accs = np.flatnonzero(~d.host[d.dev_class])
    by_memory = sorted(set(d.dev_class[accs].tolist()), key=lambda c: -d.memory[c])
    for c in by_memory:
        j = int(np.flatnonzero(d.dev_class == c)[0])
        dev = np.full(d.n, j, dtype=np.int64)
        yield f"all on {d.devices[j]}", dev, zero
        if q >= 2 and d.backward.any():
            yield f"all on {d.devices[j]}, backward nodes in a second subgraph", dev, phase
    if len(accs) > 1 and u.count > 1:
        yield "a unit per accelerator", accs[u.unit % len(accs)].astype(np.int64), phase
        packed = first_fit(spec, u, accs)
        if packed is not None:
            yield "units first fit by memory", packed, phase


def first_fit(spec: Spec, u: Contraction, accs: np.ndarray) -> np.ndarray | None:
    """Units in topological order, each on the first accelerator where its parameters fit
    and it may run; None if one fits nowhere."""
    from partdsl.kernels.graph.orders import kahn

    d = spec.dense
    cap = d.memory[d.dev_class] if spec.constraints.memory == "hard" else np.full(d.D, np.inf)
    used = np.zeros(d.D)
    dev = np.full(d.n, -1, dtype=np.int64)
    members = u.members()
    for x in kahn(u.count, u.src, u.dst).tolist():
        m = members[x]
        need = float(d.params[m].sum())
        fits = accs[(used[accs] + need <= cap[accs] * (1 + 1e-12)) & d.allowed[m][:, accs].all(axis=0)]
        if not len(fits):
            return None
        dev[m] = fits[0]
        used[fits[0]] += need
    return dev

"""A complete MIP start for Tarnawski's latency IP (models/latency.py): every column of a
split the evaluator scores, the slots' starts and finishes from its schedule, z by Lemma
4.1's reachability."""
from __future__ import annotations

import numpy as np
from partdsl.core.ir import Spec
from partdsl.models import latency_routes
from partdsl.models.latency import VarMap


def encode(spec: Spec, vm: VarMap, dev: np.ndarray, sub: np.ndarray | None) -> np.ndarray | None:
    """A complete MIP start from a split (None if it does not fit the slots: a pair not
    allowed, more than q subgraphs on a device, or a deadlock)."""
    from partdsl.evaluator import subgraphs
    from partdsl.evaluator.evaluate import evaluate

    d = spec.dense
    ev = evaluate(spec, dev, sub)
    if not ev.feasible:
        return None
    s = subgraphs.timed(d, dev, subgraphs.units(d, dev, ev.subgraph))
    u = s.units
    slot_of_unit = np.full(u.A, -1, dtype=np.int64)
    for a in range(u.A):
        hit = np.flatnonzero((vm.slot_dev == u.device[a]) & (vm.slot_rank == u.rank[a]))
        if not len(hit):
            return None
        slot_of_unit[a] = hit[0]
    x = np.zeros(vm.ncols)
    host = d.host[d.dev_class[dev]]
    slot = np.full(d.n, -1, dtype=np.int64)
    acc_nodes = np.flatnonzero(~host)
    slot[acc_nodes] = slot_of_unit[u.of_node[acc_nodes]]
    place = np.full(d.n, -1, dtype=np.int64)
    per_device = (vm.host_dev >= 0).any()  # host choices are devices (routed), else classes
    for v in range(d.n):
        if host[v]:
            h = int(np.flatnonzero(vm.host_dev == dev[v] if per_device else vm.host_cls == d.dev_class[dev[v]])[0])
            col = vm.xhost[v, h]
            place[v] = vm.S + h
        else:
            col = vm.xacc[v, slot[v]]
            place[v] = slot[v]
        if col < 0:
            return None
        x[col] = 1.0
    X = np.zeros((d.n, vm.S))
    X[acc_nodes, slot[acc_nodes]] = 1.0
    Xu, Xv = X[d.src], X[d.dst]
    cin = np.maximum(Xv - Xu, 0.0)
    cout = np.maximum(Xu - Xv, 0.0)
    # shared columns per producer: the max over its edges
    np.maximum.at(x, vm.cin.ravel(), cin.ravel())
    np.maximum.at(x, vm.cout.ravel(), cout.ravel())
    if vm.routes is not None:
        latency_routes.encode(spec, vm.routes, place, x)
    lat_v = np.where(host, s.finish[u.of_node], s.finish[u.of_node])
    x[vm.lat: vm.lat + d.n] = lat_v
    st = np.zeros(vm.S)
    fi = np.zeros(vm.S)
    prev_fin = {}
    for j in range(vm.S):  # empty slots pass the previous finish on (constraint 14)
        hit = np.flatnonzero(slot_of_unit == j)
        base = prev_fin.get(int(vm.slot_dev[j]), 0.0) if vm.slot_rank[j] > 0 else 0.0
        if len(hit):
            a = hit[0]
            st[j], fi[j] = s.start[a], s.finish[a]
        else:
            st[j] = fi[j] = base
        prev_fin[int(vm.slot_dev[j])] = fi[j]
    x[vm.start: vm.start + vm.S] = st
    x[vm.finish: vm.finish + vm.S] = fi
    # z: v reaches a node of the slot
    zc = np.zeros((d.n, vm.S))
    for v in d.topo[::-1].tolist():
        succ = d.succ_idx[d.succ_ptr[v]:d.succ_ptr[v + 1]]
        zc[v] = np.maximum(X[v], zc[succ].max(axis=0) if len(succ) else 0.0)
    x[vm.z: vm.z + d.n * vm.S] = zc.ravel()
    x[vm.T] = ev.objective
    if ev.objective > vm.H:
        return None
    return x

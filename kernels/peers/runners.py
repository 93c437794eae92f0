"""Real graph partitioners as methods: `metis` (pymetis), `scotch` (pyscotch), `kahypar`
(mtkahypar). Each gets the peer graph of kernels/peers/graph.py (node weights = compute
on the accelerator class, edge weights = transfer times, one block per device with a
share proportional to its speed), runs under its own balance constraint (METIS
ufactor 30 = 3%, Scotch 1%, Mt-KaHyPar epsilon 3%, unless `imbalance` is given), and
its blocks are mapped to devices by a bottleneck assignment (the largest block load
smallest, then the smallest total). The answer is re-scored by the evaluator like any
other; a raw peer ignores memory, colocation and pins, so it may be infeasible.
`repair 1` contracts colocation groups before partitioning and then fixes memory and
placement violations by moves (kernels/peers/repair.py).

Options: `repair` (0 or 1), `imbalance` (a fraction, e.g. 0.05).
"""
from __future__ import annotations

import contextlib
import io
import os
from typing import Callable, Iterator

import numpy as np
from partdsl.core.errors import PartError
from partdsl.core.events import Candidate, SolverLog
from partdsl.core.ir import Spec
from partdsl.kernels.peers import PEERS
from partdsl.kernels.peers.graph import PeerGraph, peer_graph
from partdsl.kernels.peers.repair import repair as repair_moves
from scipy.optimize import linear_sum_assignment
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching


def load(name: str):  # type: ignore[no-untyped-def]
    """Import the peer's package, or raise SolverUnavailable (exit 5) with the install hint."""
    from partdsl.core.solver_errors import optional

    package, extra, _ = PEERS[name]
    with contextlib.redirect_stderr(io.StringIO()):  # pyscotch announces its library when it loads it
        module = optional(package, extra, f"peer partitioner (Python package {package})", name=name)
        if name == "scotch":
            module.get_scotch_dtype()  # loads the library (lazily loaded otherwise)
        return module


def _metis(pg: PeerGraph, k: int, share: np.ndarray, imbalance: float, seed: int, threads: int) -> np.ndarray:
    pymetis = load("metis")
    opts = pymetis.Options(seed=seed, ufactor=max(1, int(round(imbalance * 1000))))
    csr = pymetis.CSRAdjacency(adj_starts=pg.xadj.tolist(), adjacent=pg.adjncy.tolist())
    _, parts = pymetis.part_graph(k, csr, vweights=pg.vwgt.tolist(), eweights=pg.adjwgt.tolist(), tpwgts=(share / share.sum()).tolist(), options=opts)
    return np.asarray(parts, dtype=np.int64)


def _scotch_map(xadj: np.ndarray, adjncy: np.ndarray, vwgt: np.ndarray, adjwgt: np.ndarray, k: int,
                imbalance: float, share: np.ndarray | None = None, seed: int | None = None) -> np.ndarray:
    """Scotch's default mapping strategy onto a complete target of k parts (weighted by
    `share` if given), its random state reset (seeded first if `seed` is given): a part per
    vertex."""
    scotch = load("scotch")
    dt = scotch.get_scotch_dtype()
    g = scotch.Graph()
    g.build(xadj.astype(dt), adjncy.astype(dt), vwgt.astype(dt), adjwgt.astype(dt))
    arch = scotch.Architecture()
    if share is None:
        arch.complete(k)
    else:
        arch.complete_weighted(k, np.maximum(np.rint(share / share.max() * 1000), 1).astype(dt))
    strat = scotch.Strategy()
    strat.request_mapping(scotch.StrategyFlags.DEFAULT, balance=imbalance)
    if seed is not None:
        scotch.random_seed(seed)
    scotch.random_reset()
    return np.asarray(g.map(arch, strat), dtype=np.int64)


def _scotch(pg: PeerGraph, k: int, share: np.ndarray, imbalance: float, seed: int, threads: int) -> np.ndarray:
    return _scotch_map(pg.xadj, pg.adjncy, pg.vwgt, pg.adjwgt, k, imbalance, share, seed)


_KAHYPAR: dict = {}


def _kahypar(pg: PeerGraph, k: int, share: np.ndarray, imbalance: float, seed: int, threads: int) -> np.ndarray:
    mt = load("kahypar")
    if "init" not in _KAHYPAR:  # once per process: Mt-KaHyPar's thread pool is global
        _KAHYPAR["init"] = mt.initialize(max(1, threads), False)
    init = _KAHYPAR["init"]
    ctx = init.context_from_preset(mt.PresetType.DETERMINISTIC)  # seeded runs repeat exactly
    ctx.set_partitioning_parameters(k, imbalance, mt.Objective.KM1)
    ctx.logging = False
    total = int(pg.vwgt.sum())
    caps = np.ceil((1 + imbalance) * share / share.sum() * total).astype(np.int64)
    caps[np.argmax(caps)] += max(0, total - int(caps.sum()))  # the blocks can hold everything
    ctx.set_individual_target_block_weights(caps.tolist())
    mt.set_seed(seed)
    hg = init.create_hypergraph(ctx, pg.count, len(pg.hyperedges), pg.hyperedges, pg.vwgt.tolist(),
                                pg.hwgt.tolist())
    return np.asarray(hg.partition(ctx).get_partition(), dtype=np.int64)


ADAPTERS: dict[str, Callable[..., np.ndarray]] = {"metis": _metis, "scotch": _scotch, "kahypar": _kahypar}


def block_loads(spec: Spec, block: np.ndarray, k: int) -> np.ndarray:
    """[k, D]: the load of block b if placed alone on device j (compute on j's class plus,
    on a non-host device, each tensor entering or leaving the block once); inf where a
    node of the block cannot run on j."""
    d = spec.dense
    out = np.zeros((k, d.D))
    sb, db = block[d.src], block[d.dst]
    cross = sb != db
    for b in range(k):
        members = block == b
        leaving = np.unique(d.src[cross & (sb == b)])  # each tensor once, however many readers
        entering = np.unique(d.src[cross & (db == b)])
        tensors = np.concatenate([leaving, entering])
        for j in range(d.D):
            c = d.dev_class[j]
            if not d.allowed[members, j].all():
                out[b, j] = np.inf
                continue
            comm = 0.0 if d.host[c] else float(d.comm[tensors, c].sum())
            out[b, j] = float(d.work[members, c].sum()) + comm
    return out


def bottleneck_assignment(cost: np.ndarray) -> np.ndarray:
    """Rows to distinct columns with the largest chosen cost smallest, then the total
    smallest (rows <= columns). Entries inf are forbidden unless nothing else works."""
    finite = np.where(np.isfinite(cost), cost, np.nanmax(np.where(np.isfinite(cost), cost, 0)) * 10 + 1e9)
    levels = np.unique(finite)
    lo, hi = 0, len(levels) - 1
    while lo < hi:  # the smallest threshold under which every row has its own column
        mid = (lo + hi) // 2
        match = maximum_bipartite_matching(csr_matrix(finite <= levels[mid]), perm_type="column")
        lo, hi = (mid + 1, hi) if (match < 0).any() else (lo, mid)
    capped = np.where(finite <= levels[lo], finite, levels[-1] * cost.shape[0] * 10 + 1e12)
    rows, cols = linear_sum_assignment(capped)
    return cols[np.argsort(rows)]


def partition(spec: Spec, name: str, seed: int = 0, repair: bool = False, imbalance: float | None = None,
              threads: int | None = None) -> tuple[np.ndarray, str]:
    """The peer's partition mapped to devices (a device per node), and what the peer's C
    code printed (METIS writes its complaints to standard output: kept off it)."""
    from partdsl.runtime.capture import captured_stdout

    d = spec.dense
    pg = peer_graph(spec, contract=repair)
    eps = PEERS[name][2] if imbalance is None else float(imbalance)
    k = min(d.D, pg.count)
    keep = np.argsort(-pg.share, kind="stable")[:k]  # with fewer vertices than devices: the fastest devices
    # a device thousands of times slower than the fastest gets a token share: METIS reads
    # target weights as float32, where 1e-299 is 0 and its C code fails ("unknown exception")
    share = np.maximum(pg.share[keep] / pg.share[keep].max(), 1e-6)
    for what, w in (("vertex", pg.vwgt), ("edge", pg.adjwgt), ("hyperedge", pg.hwgt), ("share", share)):
        if len(w) and not (np.isfinite(w).all() and (w > 0).all() and (w < 2**31).all()):
            # the peers' C code does not check its input: a bad weight would crash the process
            raise ValueError(f"peer graph: {what} weights outside (0, 2^31): a bug in kernels/peers/graph.py")
    with captured_stdout() as printed:
        blocks = ADAPTERS[name](pg, k, share, eps, seed, threads or min(2, os.cpu_count() or 1))
    node_block = blocks[pg.vertex]
    cost = block_loads(spec, node_block, k)
    if repair:  # a block too big for a device's memory goes elsewhere if it can
        mem = np.array([[d.params[node_block == b].sum() for b in range(k)]]).T
        cost = np.where(mem <= d.memory[d.dev_class][None, :], cost, np.inf)
    to_dev = bottleneck_assignment(cost)
    dev = to_dev[node_block]
    return (repair_moves(spec, dev) if repair else dev), printed.text


def tarnawski_scotch(spec: Spec) -> np.ndarray:
    """A device per node: Scotch's `gpart k` (a complete target, its default mapping strategy,
    1% imbalance, its random state reset) on the graph the authors' dp.cpp -scotch writes
    (kernels/peers/scotch_reference.py), part i on accelerator i."""
    from partdsl.kernels.peers.scotch_reference import reference_graph

    g = reference_graph(spec)
    d = spec.dense
    acc = np.flatnonzero(~d.host[d.dev_class])
    return acc[_scotch_map(g.xadj, g.adjncy, g.vwgt, g.adjwgt, len(acc), 0.01)][g.vertex]


GRAPHS = ("peer", "tarnawski")  # -O graph=: the peer graph of kernels/peers/graph.py, or the authors' (scotch only)


def run(name: str) -> Callable[..., Iterator[tuple[str, np.ndarray] | SolverLog]]:
    def method(spec: Spec, seed: int = 0, threads: int | None = None, repair: float = 0,
               imbalance: float | None = None, graph: object = "peer",
               **_: object) -> Iterator[tuple[str, np.ndarray] | SolverLog]:
        load(name)
        if graph not in GRAPHS or (graph == "tarnawski" and name != "scotch"):
            raise PartError(f"{name}: unknown graph '{graph}'", None, "write -O graph=peer (the default)"
                            + (" or -O graph=tarnawski (the authors' Scotch run)" if name == "scotch" else ""))
        if graph == "tarnawski":
            if repair or imbalance is not None:
                raise PartError("-O graph=tarnawski runs Scotch as the authors did: without repair or imbalance", None,
                                "leave out -O repair and -O imbalance")
            yield Candidate("scotch (the authors' graph and gpart's strategy)", tarnawski_scotch(spec))
            return
        if imbalance is not None and not 0 <= imbalance < 10:
            raise PartError(f"imbalance {imbalance:g} is out of range", None,
                            "a fraction of the even share, e.g. imbalance 0.05 for 5%")
        dev, printed = partition(spec, name, seed=seed, repair=bool(repair), imbalance=imbalance, threads=threads)
        if printed.strip():
            yield SolverLog(name, printed)
        yield Candidate((f"{name} + repair" if repair else name), dev)

    method.__name__ = name
    return method

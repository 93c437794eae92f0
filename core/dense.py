"""The dense NumPy view of a Spec, built once and shared by the evaluator and kernels.

Arrays are indexed by node (n), device (D) and device class (C):
work[n, C] (ms at batch 1, inf where unsupported), comm[n, C] (ms to move the node's
output tensor between a device of that class and host memory; 0 on host classes),
allowed[n, D] (support, only/not, pins, forbids), colo[n] (colocation component id),
CSR successor lists, and a topological order.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from partdsl.core.ir import GENERIC, Node, Spec
from partdsl.core.server_paths import direct_bandwidth, path_bandwidth

INF = float("inf")


def work_time(node: Node, cls_name: str, speed: float, batch: int = 1) -> float:
    """Time of `node` on a device of class `cls_name` for a batch of `batch` samples.

    An entry for (class, batch) wins; then a generic entry for that batch, scaled by
    the class speed; batches with no entry scale linearly from batch 1; inf if the
    node has no work for that class (unsupported)."""
    exact = generic = None
    for w in node.work:
        if w.batch == batch:
            if w.on == cls_name:
                exact = w.time
            elif w.on == GENERIC:
                generic = w.time / speed
    if exact is not None:
        return exact
    if generic is not None:
        return generic
    if batch != 1:
        one = work_time(node, cls_name, speed, 1)
        return one * batch
    return INF


def union_find_labels(n: int, pairs: list[tuple[int, int]]) -> np.ndarray:
    parent = list(range(n))

    def find(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for a, b in pairs:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return np.array([find(i) for i in range(n)], dtype=np.int64)


def group_runs(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The indices sorted by label (stable: index order within a label) and where each
    label's run starts in them: one sort, linear in the size (a scan per label is
    quadratic: minutes at 100,000 nodes)."""
    order = np.argsort(labels, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(labels[order]) != 0]) if len(order) else np.zeros(0, np.int64)
    return order, starts


def groups(labels: np.ndarray) -> list[np.ndarray]:
    """The indices of each distinct label (labels ascending), each in index order (an array
    per label: `group_runs` where only a few groups are looked at)."""
    order, starts = group_runs(labels)
    return np.split(order, starts[1:]) if len(order) else []


def adjacency(n: int, src: np.ndarray, dst: np.ndarray) -> list[list[int]]:
    """Successor lists (pass (dst, src) for predecessor lists)."""
    out: list[list[int]] = [[] for _ in range(n)]
    for a, b in zip(np.asarray(src).tolist(), np.asarray(dst).tolist()):
        out[a].append(b)
    return out


def topological_order(n: int, src: np.ndarray, dst: np.ndarray,
                      priority: np.ndarray | None = None) -> list[int] | None:
    """Kahn's algorithm (Archer App. B.1, Alg. 3): among ready nodes the smallest priority
    goes first, ties by index (index order without priorities); None if there is a cycle."""
    import heapq

    if priority is None and bool((np.asarray(src) < np.asarray(dst)).all()):
        return list(range(n))  # every edge goes forward: index order is Kahn's (as written, as imported)
    pr = np.arange(n, dtype=float) if priority is None else np.asarray(priority, dtype=float)
    indeg = np.bincount(np.asarray(dst, dtype=np.int64), minlength=n).tolist()
    succ = adjacency(n, src, dst)
    heap = [(pr[i], i) for i in range(n) if indeg[i] == 0]
    heapq.heapify(heap)
    order = []
    while heap:
        _, u = heapq.heappop(heap)
        order.append(u)
        for v in succ[u]:
            indeg[v] -= 1
            if indeg[v] == 0:
                heapq.heappush(heap, (pr[v], v))
    return order if len(order) == n else None


def one_f_one_b(spec: Spec) -> bool:
    """Whether several micro-batches are in flight, as PipeDream's 1F1B keeps them: the
    bottleneck objective on a training graph, or on a forward one declared `training pipedream`
    (how many per device: evaluator/activations.in_flight)."""
    o = spec.objective
    return o.kind == "bottleneck" and (spec.graph.is_training or o.training == "pipedream") and o.training != "gpipe"


@dataclass(frozen=True, eq=False)
class SharedWeights:
    """The weights several nodes read (`shares`): each weight's name and bytes, and the
    (reader node, weight) pairs."""

    names: tuple[str, ...]
    size: np.ndarray  # [W] bytes
    node: np.ndarray  # [k] each pair's reader
    weight: np.ndarray  # [k] each pair's weight


def _shared(spec: Spec) -> SharedWeights | None:
    """The spec's shared weights, or None where no node shares one."""
    ids: dict[str, int] = {}
    size: list[float] = []
    node: list[int] = []
    weight: list[int] = []
    for i, nd in enumerate(spec.graph.nodes):
        for w, b in nd.shares:
            if w not in ids:
                ids[w] = len(size)
                size.append(b)
            node.append(i)
            weight.append(ids[w])
    if not node:
        return None
    return SharedWeights(tuple(ids), np.array(size, dtype=float), np.array(node, dtype=np.int64),
                         np.array(weight, dtype=np.int64))


def _stashes(spec: Spec, params: np.ndarray, pipelined: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """(params, stashed): the nodes' stashes apart, or, with one micro-batch in flight (or
    none stashed), in the parameters."""
    stashed = np.array([nd.stash for nd in spec.graph.nodes], dtype=float)
    if not pipelined or not stashed.any():
        return params + stashed, None
    return params, stashed


@dataclass(frozen=True, eq=False)
class Dense:
    n: int
    names: tuple[str, ...]
    devices: tuple[str, ...]
    dev_class: np.ndarray  # [D] class index
    class_names: tuple[str, ...]
    host: np.ndarray  # [C] bool
    work: np.ndarray  # [n, C]
    params: np.ndarray  # [n]
    comm: np.ndarray  # [n, C]
    out_bytes: np.ndarray  # [n]
    memory: np.ndarray  # [C], inf = unlimited
    link: np.ndarray  # [C] B/s, inf = unspecified
    src: np.ndarray  # [m]
    dst: np.ndarray  # [m]
    succ_ptr: np.ndarray  # CSR over src-sorted edges
    succ_idx: np.ndarray
    backward: np.ndarray  # [n] bool
    colo: np.ndarray  # [n] component label (smallest member index)
    allowed: np.ndarray  # [n, D] bool
    topo: np.ndarray  # [n]
    path_bw: np.ndarray | None = None  # [D, D] slowest fabric between devices (core/server_paths.py), None: flat
    direct_bw: np.ndarray | None = None  # [D, D] declared direct links' B/s, 0 where none; None: no links
    tensor_source: np.ndarray | None = None  # [n] a sized edge tensor's source node (Node.tensor_of), -1 for operators
    activations: bool = False  # memory counts peak live activations (evaluator/activations.py)
    stash: bool = False  # and, training under PipeDream's schedule, the activations of micro-batches in flight
    # [n] the nodes' `stash` bytes, held once per micro-batch in flight under PipeDream's 1F1B
    # (evaluator/activations.in_flight); None where no node has one or one micro-batch is in
    # flight (no 1F1B schedule: the bytes are then in `params`)
    stashed: np.ndarray | None = None
    # weights several nodes read (`shares`), held once per device that runs a reader; None
    # where no node shares one
    shared: SharedWeights | None = None

    @property
    def placed_memory(self) -> bool:
        """Whether a device's memory depends on more than the parameters on it: peak
        activations, stashes times the micro-batches in flight, or shared weights."""
        return self.activations or self.stashed is not None or self.shared is not None

    @cached_property
    def node_shares(self) -> np.ndarray:
        """[n] the bytes of the shared weights each node reads (each counted for every reader)."""
        if self.shared is None:
            return np.zeros(self.n)
        sh = self.shared
        return np.bincount(sh.node, weights=sh.size[sh.weight], minlength=self.n)

    @cached_property
    def weights(self) -> np.ndarray:
        """[n] the bytes of weights each node reads: its parameters and its shared weights
        (Node.weights), a shared weight counted for every reader."""
        return self.params + self.node_shares

    def shares_on(self, dev: np.ndarray) -> np.ndarray:
        """[D] bytes of the shared weights on each device: each once where any of its readers
        runs (a tied embedding and LM head on one device hold one copy; on two, two)."""
        if self.shared is None:
            return np.zeros(self.D)
        sh = self.shared
        on = dev[sh.node]
        keep = on >= 0  # (a split node's pieces, -1, hold no weights here)
        key = np.unique(sh.weight[keep] * self.D + on[keep])
        return np.bincount(key % self.D, weights=sh.size[key // self.D], minlength=self.D)[:self.D]

    def shares_once(self, nodes: np.ndarray) -> float:
        """The bytes of the shared weights the nodes (a mask) read, each weight once."""
        if self.shared is None:
            return 0.0
        sh = self.shared
        return float(sh.size[np.unique(sh.weight[nodes[sh.node]])].sum())

    @cached_property
    def preds(self) -> list[list[int]]:
        """Predecessor lists, built once and shared by every evaluation."""
        return adjacency(self.n, self.dst, self.src)

    @cached_property
    def sync_memo(self) -> dict[tuple[int, int], float]:
        """evaluator/replicas.span_rate per (device, replicas), each computed once."""
        return {}

    @cached_property
    def colocated_pairs(self) -> list[tuple[int, int]]:
        """(representative, member) for every node colocated with a smaller-index node."""
        members = np.flatnonzero(self.colo != np.arange(self.n))
        return [(int(self.colo[v]), int(v)) for v in members]

    @cached_property
    def class_allowed(self) -> np.ndarray:
        """[n, C] bool (read-only): the node may run on some device of the class."""
        out = np.zeros((self.n, len(self.class_names)), dtype=bool)
        for c in range(len(self.class_names)):
            out[:, c] = self.allowed[:, self.dev_class == c].any(axis=1)
        out.setflags(write=False)
        return out

    @cached_property
    def pair_bw(self) -> tuple[np.ndarray, np.ndarray] | None:
        """On a hierarchical platform, [D, D] twice: the bandwidth the sender and the receiver
        of a transfer a -> b pay at, min(own port, path) (evaluator/levels.py); None when flat."""
        if self.path_bw is None:
            return None
        own = np.where(self.host, INF, self.link)[self.dev_class]
        return np.minimum(own[:, None], self.path_bw), np.minimum(own[None, :], self.path_bw)

    @cached_property
    def cheapest_comm(self) -> np.ndarray:
        """[n, C] a lower bound on what a device of each class pays for each tensor on any
        route (evaluator/levels.py): `comm`, or less over a direct link faster than the port.
        What the bounds that charge transfers may charge."""
        if self.direct_bw is None:
            return self.comm
        fastest = np.zeros(len(self.class_names))
        np.maximum.at(fastest, self.dev_class, self.direct_bw.max(axis=1))
        np.maximum.at(fastest, self.dev_class, self.direct_bw.max(axis=0))
        over_link = np.where(fastest > 0, self.out_bytes[:, None] / np.where(fastest > 0, fastest, 1.0) * 1e3, INF)
        out = np.minimum(self.comm, over_link)
        out.setflags(write=False)
        return out

    @cached_property
    def sized(self) -> bool:
        """Whether the spec gives tensor sizes (dnn-partitioning graphs give transfer times only)."""
        return bool((self.out_bytes > 0).any())

    @cached_property
    def topo_position(self) -> np.ndarray:
        """[n] int64 (read-only): each node's position in `topo`."""
        out = np.empty(self.n, dtype=np.int64)
        out[self.topo] = np.arange(self.n)
        out.setflags(write=False)
        return out

    @property
    def D(self) -> int:
        return len(self.devices)

    @property
    def m(self) -> int:
        return len(self.src)

    @staticmethod
    def build(spec: Spec) -> "Dense":
        g, p, c = spec.graph, spec.platform, spec.constraints
        n, C = len(g.nodes), len(p.classes)
        devices = p.devices
        dev_class = np.array(p.device_class, dtype=np.int64)
        host = np.array([k.host for k in p.classes], dtype=bool)
        memory = np.array([INF if k.memory is None else k.memory for k in p.classes])
        link = np.array([INF if k.link is None else k.link for k in p.classes])
        work = np.array([[work_time(nd, k.name, k.speed) for k in p.classes] for nd in g.nodes],
                        dtype=float).reshape(n, C)
        params = np.array([nd.params for nd in g.nodes], dtype=float)
        pipelined = one_f_one_b(spec)
        params, stashed = _stashes(spec, params, pipelined)
        out_bytes = np.array([nd.out or 0.0 for nd in g.nodes], dtype=float)
        comm = np.zeros((n, C))
        for i, nd in enumerate(g.nodes):
            for ci, k in enumerate(p.classes):
                if k.host:
                    continue
                if nd.comm is not None:
                    comm[i, ci] = nd.comm
                elif nd.out:
                    comm[i, ci] = nd.out / link[ci] * 1e3 if np.isfinite(link[ci]) else 0.0
        e = np.array(g.edges, dtype=np.int64).reshape(-1, 2)
        src, dst = e[:, 0].copy(), e[:, 1].copy()
        order = np.argsort(src, kind="stable")
        succ_idx = dst[order]
        succ_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(src, minlength=n), out=succ_ptr[1:])
        backward = np.array([nd.backward for nd in g.nodes], dtype=bool)
        # Colocation components (union-find over groups and explicit sets).
        pairs: list[tuple[int, int]] = []
        if c.colocate:
            first: dict[str, int] = {}
            for i, nd in enumerate(g.nodes):
                if nd.group is not None:
                    pairs.append((first.setdefault(nd.group, i), i))
        for s in c.colocate_sets:
            idx = [g.index[x.name] for x in s]
            pairs += [(idx[0], j) for j in idx[1:]]
        pairs += [(g.index[nd.tensor_of], i) for i, nd in enumerate(g.nodes) if nd.tensor_of is not None]
        colo = union_find_labels(n, pairs)
        # Allowed devices: support, only/not, pins, forbids.
        cls_ok = np.isfinite(work)
        for i, nd in enumerate(g.nodes):
            if nd.only:  # a class without devices (Platform.empty) offers none
                cls_ok[i] &= np.isin(np.arange(C), [p.class_index[x] for x in nd.only if x in p.class_index])
            for x in nd.forbid:
                if x in p.class_index:
                    cls_ok[i, p.class_index[x]] = False
        allowed = cls_ok[:, dev_class] if n else np.zeros((0, len(devices)), bool)
        dev_index = {d: j for j, d in enumerate(devices)}

        def target_mask(targets) -> np.ndarray:
            mask = np.zeros(len(devices), dtype=bool)
            for t in targets:
                if t.name in dev_index:
                    mask[dev_index[t.name]] = True
                elif t.name in p.class_index:  # else a class without devices: no device to add
                    mask |= dev_class == p.class_index[t.name]
            return mask

        for name, targets in c.pins:
            allowed[g.index[name.name]] &= target_mask(targets)
        for name, targets in c.forbids:
            allowed[g.index[name.name]] &= ~target_mask(targets)
        topo = topological_order(n, src, dst)
        return Dense(n=n, names=tuple(nd.name for nd in g.nodes), devices=devices,
                     dev_class=dev_class, class_names=tuple(k.name for k in p.classes),
                     host=host, work=work, params=params, comm=comm, out_bytes=out_bytes,
                     memory=memory, link=link, src=src, dst=dst, succ_ptr=succ_ptr,
                     succ_idx=succ_idx, backward=backward, colo=colo, allowed=allowed,
                     topo=np.array(topo if topo is not None else [], dtype=np.int64),
                     path_bw=path_bandwidth(p), direct_bw=direct_bandwidth(p),
                     tensor_source=np.array([g.index[nd.tensor_of] if nd.tensor_of in g.index else -1
                                             for nd in g.nodes], dtype=np.int64).reshape(n),
                     activations=c.activations,
                     stash=c.activations and pipelined, stashed=stashed, shared=_shared(spec))

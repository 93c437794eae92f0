"""Independent, deliberately naive re-implementations of the cost semantics, written from
the papers' definitions with Python sets and a transitive closure; the tests compare the
vectorized evaluator against them."""
from __future__ import annotations

import math
from itertools import product

from partdsl.core.ir import Spec


def node_time(spec: Spec, v: int, cls: int) -> float:
    k = spec.platform.classes[cls]
    nd = spec.graph.nodes[v]
    exact = [w.time for w in nd.work if w.on == k.name and w.batch == 1]
    generic = [w.time / k.speed for w in nd.work if w.on == "" and w.batch == 1]
    return exact[0] if exact else (generic[0] if generic else math.inf)


def tensor_time(spec: Spec, u: int, cls: int, path: float = math.inf) -> float:
    """Node u's tensor through a device of class `cls`, over a path whose slowest fabric is
    `path` (inf: a flat platform, or both ends in one place)."""
    k = spec.platform.classes[cls]
    nd = spec.graph.nodes[u]
    if k.host and path == math.inf:
        return 0.0
    if nd.comm is not None:
        return nd.comm
    if not nd.out:
        return 0.0
    bw = min(math.inf if k.host or k.link is None else k.link, path)
    return 0.0 if bw == math.inf else nd.out / bw * 1000.0


def addresses(spec: Spec) -> list[tuple[tuple[str, tuple[int, ...]], ...]]:
    """Per device, the server instances holding it, outermost first, each named by its level
    and its address (the instance numbers from the outermost level down): the devices of a
    class are numbered server by server, in the order the instances are written out."""
    p = spec.platform
    levels = {s.name: s for s in p.servers}
    out = []
    for k in p.classes:
        chain, at = [], k.server
        while at is not None:
            chain.insert(0, levels[at])
            at = levels[at].parent
        per = k.count // math.prod(x.count for x in chain)
        for addr in product(*(range(x.count) for x in chain)):
            out += [tuple((chain[i].name, addr[:i + 1]) for i in range(len(chain)))] * per
    return out


def path_bandwidth(spec: Spec, a: int, b: int) -> float:
    """The slowest fabric between devices a and b: every server instance holding one but not
    the other, and the innermost one holding both (else the platform's own fabric)."""
    if a == b:
        return math.inf
    p = spec.platform
    fabric = {s.name: math.inf if s.link is None else s.link for s in p.servers}
    A, B = addresses(spec)[a], addresses(spec)[b]
    common = [x for x in A if x in B]
    crossed = [fabric[name] for name, _ in A + B if (name, _) not in common]
    crossed.append(fabric[common[-1][0]] if common else (math.inf if p.link is None else p.link))
    return min(crossed)


def direct(spec: Spec, a: int, b: int) -> float:
    """The declared direct link's bandwidth from device a to b (0: none; a later one wins)."""
    names = spec.platform.devices

    def names_it(x: str, j: int) -> bool:
        return names[j] == x or names[j].split("[")[0] == x

    bw = 0.0
    for ln in spec.platform.links:
        if a != b and (names_it(ln.a, a) and names_it(ln.b, b) or not ln.directed and names_it(ln.b, a)
                       and names_it(ln.a, b)):
            bw = ln.bandwidth
    return bw


def route_time(spec: Spec, u: int, a: int, b: int, end: int) -> float:
    """Node u's tensor from device a to device b, as paid by the device `end` (a or b): over
    their direct link, else through its port and the fabrics between them."""
    beta = direct(spec, a, b)
    if beta:
        return (spec.graph.nodes[u].out or 0.0) / beta * 1000.0
    return tensor_time(spec, u, spec.platform.device_class[end], path_bandwidth(spec, a, b))


def closure(spec: Spec) -> list[set[int]]:
    n = len(spec.graph.nodes)
    reach = [set() for _ in range(n)]
    for a, b in spec.graph.edges:
        reach[a].add(b)
    changed = True
    while changed:
        changed = False
        for a in range(n):
            new = set().union(*(reach[b] for b in reach[a])) if reach[a] else set()
            if not new <= reach[a]:
                reach[a] |= new
                changed = True
    return reach


def device_sets(spec: Spec, assign: list[int], phase: int | None = None) -> list[set[int]]:
    D = len(spec.platform.devices)
    nodes = spec.graph.nodes
    return [{v for v in range(len(nodes)) if assign[v] == d
             and (phase is None or int(nodes[v].backward) == phase)} for d in range(D)]


def tensors(spec: Spec) -> list[tuple[int, int, set[int]]]:
    """(sender, the node whose size it has, its consumers) for every tensor, as the user
    wrote them: each operator's output to its plain successors, and each sized edge
    tensor `a -> {b, c} out 4 MB` to its targets (read off its carrier, whose size it has)."""
    g = spec.graph
    op = [nd.tensor_of is None for nd in g.nodes]
    out = [(u, u, {v for (x, v) in g.edges if x == u and op[v]}) for u in range(len(g.nodes)) if op[u]]
    return out + [(g.index[g.nodes[c].tensor_of], c, {v for (x, v) in g.edges if x == c})
                  for c in range(len(g.nodes)) if not op[c]]


def loads(spec: Spec, assign: list[int], phase: int | None = None) -> list[float]:
    """Per device, from the operators' devices alone (a carrier's own entry is not read):
    compute, each tensor in once per receiving device, out once per sending device."""
    g = spec.graph
    cls = spec.platform.device_class
    op = [nd.tensor_of is None for nd in g.nodes]
    out = []
    sets = [{v for v in S if op[v]} for S in device_sets(spec, assign, phase)]
    on_dev = device_sets(spec, assign)
    for d, S in enumerate(sets):
        c = cls[d]
        comp = sum(node_time(spec, v, c) for v in S)
        # tensors entering the device, charged to the phase of a consumer in S
        ins = {(k, assign[u]) for (u, k, vs) in tensors(spec) if vs & S and u not in on_dev[d]}
        # tensors leaving the device, sent by a node in S, at the slowest route to a receiver
        outs = {k: max(route_time(spec, k, d, assign[v], d) for v in vs - on_dev[d])
                for (u, k, vs) in tensors(spec) if u in S and vs - on_dev[d]}
        tin = sum(route_time(spec, u, a, d, d) for u, a in ins)
        tout = sum(outs.values())
        ov = 0.0
        k = spec.platform.classes[c]
        if spec.constraints.memory == "overflow" and k.memory is not None:
            used = sum(g.nodes[v].params for v in on_dev[d] if op[v])
            ov = max(used - k.memory, 0.0) / k.link * 1000.0
        o = spec.objective.overlap
        if o is None:
            out.append(comp + tin + tout + ov)
        elif o == "duplex":
            out.append(max(tin + ov, comp, tout))
        else:
            out.append(max(comp, tin + tout + ov))
    return out


def bottleneck(spec: Spec, assign: list[int]) -> float:
    if spec.objective.training == "gpipe":
        return max(loads(spec, assign, 0)) + max(loads(spec, assign, 1))
    return max(loads(spec, assign))


def contiguous(spec: Spec, S: set[int], reach: list[set[int]]) -> bool:
    """Tarnawski Def. 3.1, checked over every triple."""
    n = len(spec.graph.nodes)
    return not any(u in S and v not in S and w in S and v in reach[u] and w in reach[v]
                   for u, v, w in product(range(n), repeat=3))


def quotient_acyclic(spec: Spec, labels: list[int], parts: bool = False) -> bool:
    """No cycle among the labelled sets. `parts`: as `acyclic` reads a training graph
    (docs/language.md), an edge between a forward and a backward node orders nothing."""
    k = max(labels) + 1
    reach = [set() for _ in range(k)]
    nodes = spec.graph.nodes
    for a, b in spec.graph.edges:
        if parts and nodes[a].backward != nodes[b].backward:
            continue
        if labels[a] != labels[b]:
            reach[labels[a]].add(labels[b])
    for _ in range(k):
        for a in range(k):
            for b in list(reach[a]):
                reach[a] |= reach[b]
    return all(a not in reach[a] for a in range(k))


def latency(spec: Spec, assign: list[int]) -> float:
    """Fixed-point iteration of the constraints of Tarnawski Fig. 3 (sec. 4)."""
    g = spec.graph
    n, D = len(g.nodes), len(spec.platform.devices)
    cls = spec.platform.device_class
    host = [spec.platform.classes[cls[assign[v]]].host for v in range(n)]
    unit = [n + assign[v] if not host[v] else v for v in range(n)]
    if not quotient_acyclic(spec, unit):
        return math.inf
    preds = [[a for a, b in g.edges if b == v] for v in range(n)]
    lat = [0.0] * n
    for _ in range(n + D + 2):
        new = lat[:]
        for v in range(n):
            if host[v]:
                new[v] = max([lat[p] for p in preds[v]], default=0.0) + node_time(spec, v, cls[assign[v]])
        for d in range(D):
            S = {v for v in range(n) if assign[v] == d and not host[v]}
            if not S:
                continue
            start = max([lat[u] for (u, v) in g.edges if v in S and u not in S], default=0.0)
            c = cls[d]
            ins = {u for (u, v) in g.edges if v in S and u not in S}
            outs = {u: max(route_time(spec, u, d, assign[v], d) for (x, v) in g.edges if x == u and v not in S)
                    for (u, v) in g.edges if u in S and v not in S}
            fin = (start + sum(route_time(spec, u, assign[u], d, d) for u in ins)
                   + sum(node_time(spec, v, c) for v in S) + sum(outs.values()))
            for v in S:
                new[v] = fin
        if new == lat:
            break
        lat = new
    return max(lat)


def interleaved(pieces: list[tuple[int, int]], start: list[float], finish: list[float], eps: float) -> set[tuple[int, int]]:
    """(device, node) whose share on the device, in two or more pieces (device, node),
    has another node's piece starting strictly inside (DiviML eq. 5: one go per share); a
    piece at the share's first instant runs before it (a longer one there overlaps)."""
    out = set()
    for d, v in set(pieces):
        mine = [k for k, p in enumerate(pieces) if p == (d, v)]
        if len(mine) < 2:
            continue
        lo, hi = min(start[k] for k in mine), max(finish[k] for k in mine)
        if any(p[0] == d and p[1] != v and lo + eps < start[k] < hi - eps for k, p in enumerate(pieces)):
            out.add((d, v))
    return out


def peak_activations(spec: Spec, assign: list[int]) -> list[float]:
    """Per device, the most activation bytes live at one step of its nodes run in the
    spec's topological order (Archer eq. 2's peak; the rules in evaluator/activations.py),
    step by step with plain loops."""
    g = spec.graph
    n, D = len(g.nodes), len(spec.platform.devices)
    topo = [int(v) for v in spec.dense.topo]
    size = [nd.out or 0.0 for nd in g.nodes]
    source = [g.index[nd.tensor_of] if nd.tensor_of else u for u, nd in enumerate(g.nodes)]
    readers = [[v for (x, v) in g.edges if x == u and g.nodes[v].tensor_of is None] for u in range(n)]
    out = []
    for d in range(D):
        steps = [v for v in topo if assign[v] == d]
        at = {v: k for k, v in enumerate(steps)}
        live = [0.0] * len(steps)
        for u in range(n):
            here = [at[v] for v in readers[u] if assign[v] == d]
            if assign[u] == d:
                first = at[source[u]]
                last = len(steps) - 1 if any(assign[v] != d for v in readers[u]) else max(here + [at[u]])
            elif here:
                first, last = 0, max(here)
            else:
                continue
            for k in range(first, last + 1):
                live[k] += size[u]
        out.append(max(live, default=0.0))
    return out


def stashed(spec: Spec, assign: list[int]) -> list[float]:
    """Per device, its forward nodes' outputs times the other devices its forward nodes
    reach through forward edges (the stages downstream of it, PipeDream's in-flight
    micro-batches), by a plain search."""
    g = spec.graph
    D = len(spec.platform.devices)
    fw = [not nd.backward for nd in g.nodes]
    hop = {(assign[a], assign[b]) for a, b in g.edges if fw[a] and fw[b] and assign[a] != assign[b]}
    out = []
    for d in range(D):
        seen, todo = set(), [d]
        while todo:
            x = todo.pop()
            for y in {b for a, b in hop if a == x} - seen:
                seen.add(y)
                todo.append(y)
        seen.discard(d)
        out.append(len(seen) * sum(nd.out or 0.0 for v, nd in enumerate(g.nodes) if fw[v] and assign[v] == d))
    return out


def least_pieces(spec: Spec, v: int, classes: list[int], L: int) -> float:
    """The least total time of pieces of node v covering L samples, each piece a batch size
    one of `classes` runs, timed by core/dense.work_time: every multiset of (class, size)
    pieces summing to L, enumerated (no DP)."""
    from partdsl.core.dense import work_time

    nd = spec.graph.nodes[v]
    options = []
    for c in classes:
        k = spec.platform.classes[c]
        sizes = k.batches or tuple(range(1, L + 1))
        options += [(b, work_time(nd, k.name, k.speed, b)) for b in sizes if b <= L]
    best = math.inf

    def walk(i: int, left: int, total: float) -> None:
        nonlocal best
        if left == 0:
            best = min(best, total)
            return
        if i == len(options):
            return
        b, t = options[i]
        for m in range(left // b + 1):
            walk(i + 1, left - m * b, total + m * t if m else total)  # 0 pieces of an inf one cost 0, not NaN

    walk(0, L, 0.0)
    return best

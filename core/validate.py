"""Semantic checks on an assembled Spec, for text and Python-built specs alike.

Each problem raises a PartError pointing at the declaration involved: unknown names,
a cycle in the graph (named), a node no device supports, memory that cannot fit even
using every device, missing link bandwidths, and inconsistent objective settings.
"""
from __future__ import annotations

import math
import re

import numpy as np
from partdsl.core import objectives
from partdsl.core.dense import group_runs, topological_order
from partdsl.core.errors import PartError, did_you_mean
from partdsl.core.graphs import find_cycle
from partdsl.core.ir import GENERIC, Spec, Target
from partdsl.core.limits import MAX_SUBGRAPHS, MAX_TOTAL
from partdsl.core.pipeline_checks import check_pipeline_terms
from partdsl.core.quantities import human_size


def validate(spec: Spec) -> None:
    """Every semantic check, in the order a user meets them: names, the platform, node and
    target references (and the graph's cycles), the constraints and objective settings,
    bandwidths and totals, where each node may run, memory, colocation."""
    _check_names(spec)
    check_pipeline_terms(spec)
    _check_platform(spec)
    _check_references(spec)
    _check_settings(spec)
    _check_links(spec)
    _check_placeable(spec)
    if spec.constraints.memory == "hard":
        _check_memory(spec)
    _check_colocated(spec)


def _check_platform(spec: Spec) -> None:
    """A platform with devices, a graph with nodes, device classes that make sense."""
    g, p = spec.graph, spec.platform
    if not p.classes:
        if p.empty:
            raise PartError("the platform has no devices: every device class has count 0 ("
                            + ", ".join(f"{k.name}[0]" for k in p.empty) + ")", p.empty[0].span,
                            "give at least one class a device, e.g. `-D k=1`")
        raise PartError("the platform declares no devices", p.span,
                        "add e.g. `platform { device gpu[4] { memory 16 GiB; link 12 GB/s } }`")
    if not g.nodes:
        raise PartError(f"graph '{g.name}' has no nodes", g.span, "declare nodes with `node name { work 1 ms }`")
    for k in p.classes:
        if k.count < 1:
            raise PartError(f"device class '{k.name}' has {k.count} devices", k.span,
                            "a device class needs at least one device, e.g. `device gpu[2]`")
        if k.speed <= 0:
            raise PartError(f"device class '{k.name}' has speed {k.speed}", k.span, "speed must be positive")
        if k.link is not None and not k.link > 0:
            raise PartError(f"device class '{k.name}' has link bandwidth {k.link:g} B/s", k.span,
                            "a link bandwidth must be positive, e.g. `link 12 GB/s` (or no link: host memory only "
                            "for a `host` class)")


def _check_references(spec: Spec) -> None:
    """Class names in nodes, the graph's cycles, and the nodes, devices and classes that
    pins, forbids, colocation sets and links name."""
    g, p, c = spec.graph, spec.platform, spec.constraints
    classes = p.class_index
    # node-level class references
    for nd in g.nodes:
        for ref in [w.on for w in nd.work if w.on != GENERIC] + list(nd.only) + list(nd.forbid):
            if ref not in classes and ref not in p.empty_names:
                raise PartError(f"node '{nd.name}' names unknown device class '{ref}'", nd.span,
                                did_you_mean(ref, list(classes) + list(p.empty_names)))
    _check_cycle(spec)
    devices = set(p.devices)
    node_names = g.index

    def check_target(t: Target, what: str) -> None:
        if t.name.split("[")[0] in p.empty_names:
            if what == "forbid":  # forbidding a class without devices forbids nothing
                return
            raise PartError(f"{what} names device class '{t.name.split('[')[0]}', which has no devices", t.span,
                            f"give it at least one device, or {what} to another class")
        if t.name not in devices and t.name not in classes:
            raise PartError(f"{what} names unknown device or class '{t.name}'", t.span,
                            did_you_mean(t.name, list(classes) + list(p.devices)))

    def check_node(t: Target, what: str) -> None:
        if t.name not in node_names:
            raise PartError(f"{what} names unknown node '{t.name}'", t.span,
                            did_you_mean(t.name, list(node_names)))
        src = g.nodes[g.index[t.name]].tensor_of
        if src is not None:
            raise PartError(f"{what} names the tensor carrier '{t.name}', which always runs with its source", t.span,
                            f"name its source '{src}' instead")

    for node, targets in c.pins:
        check_node(node, "pin")
        for t in targets:
            check_target(t, "pin")
    for node, targets in c.forbids:
        check_node(node, "forbid")
        for t in targets:
            check_target(t, "forbid")
    for s in c.colocate_sets:
        for t in s:
            check_node(t, "colocate")
    for ln in p.links:
        for end in (ln.a, ln.b):
            if end not in devices and end not in classes and end.split("[")[0] not in p.empty_names:
                raise PartError(f"link names unknown device or class '{end}'", ln.span,
                                did_you_mean(end, list(classes) + list(p.devices)))
        if ln.bandwidth <= 0:
            raise PartError("link bandwidth must be positive", ln.span)


def _check_settings(spec: Spec) -> None:
    """Constraint and objective settings that do not go together."""
    g, c, o = spec.graph, spec.constraints, spec.objective
    if c.max_stages is not None and c.max_stages < 1:
        raise PartError("stages must be at least 1", None, "write e.g. `stages <= 4`")
    if not 1 <= c.subgraphs <= MAX_SUBGRAPHS:
        raise PartError(f"subgraphs must be between 1 and {MAX_SUBGRAPHS}, got {c.subgraphs}", None,
                        "write e.g. `subgraphs <= 2`")
    if c.subgraphs != 1 and "subgraphs" not in o.entity.takes:
        own = objectives.taking("subgraphs").written
        raise PartError(f"`subgraphs <= {c.subgraphs}` applies to `{own}` (Tarnawski sec. 4.1): "
                        f"this spec has the {o.kind} objective", None,
                        f"drop it, or use `{own}`; for pipelined splits drop `contiguous` instead")
    if c.replicate < 1:
        raise PartError("replicate must be at least 1", c.span_of("replicate"), "write e.g. `replicate <= 4`")
    if c.replicate != 1 and "replicate" not in o.entity.takes:
        own = objectives.taking("replicate").written
        raise PartError(f"`replicate <= {c.replicate}` applies to `{own}` (data-parallel stages of a "
                        f"pipeline, Tarnawski App. C.2): this spec has the {o.kind} objective", c.span_of("replicate"),
                        f"drop it, or use `{own}`")
    if c.activations and o.scheduled:
        raise PartError("`activations` applies to `minimize bottleneck` and `minimize latency`: the DiviML "
                        "objectives' memory (eq. 6) already counts each sample's tensors", c.span_of("activations"),
                        "drop `activations`")
    if c.activations and c.memory == "ignore":
        raise PartError("`activations` adds peak activations to the memory that `memory hard` limits or `memory "
                        "overflow` streams, and this spec has `memory ignore`", c.span_of("activations"),
                        "drop `activations`, or use `memory hard` or `memory overflow`")
    if o.entity.batched and o.batch < 1:
        raise PartError("the throughput batch must be at least 1", o.span, "write e.g. `batch 128`")
    if o.entity.batched and o.batch >= 1:
        _check_batches(spec)
    if o.training == "gpipe" and not g.is_training:
        raise PartError("`training gpipe` needs backward nodes, and this graph has none", o.span,
                        "mark backward nodes with `backward`, or drop the training option")


def _check_links(spec: Spec) -> None:
    """Transfers need a bandwidth on non-host classes; routes; sums within the float range."""
    g, p, c = spec.graph, spec.platform, spec.constraints
    dense = spec.dense
    # transfers need a bandwidth on non-host classes
    needs_link = np.array([nd.comm is None and bool(nd.out) for nd in g.nodes])
    has_succ = np.bincount(dense.src, minlength=dense.n) > 0
    check_routes(spec)
    _check_totals(spec)
    for ci, k in enumerate(p.classes):
        if k.host or k.link is not None:
            continue
        # on a hierarchical platform its transfers cross at least the fabric of the level it is declared in
        fabric = p.hierarchical and (p.link if k.server is None else p.server_index[k.server].link) is not None
        runs = np.isfinite(dense.work[:, ci])
        if not fabric and (needs_link & has_succ & runs).any():
            who = g.nodes[int(np.flatnonzero(needs_link & has_succ & runs)[0])].name
            raise PartError(f"device class '{k.name}' has no link bandwidth, but node '{who}' "
                            "sends an output tensor given in bytes", k.span,
                            f"add `link 12 GB/s` to device {k.name}, mark it `host`, or give "
                            "nodes a transfer time with `comm 0.5 ms`")
        if c.memory == "overflow" and k.memory is not None:
            raise PartError(f"`memory overflow` streams parameters over the link, but device class "
                            f"'{k.name}' has no link bandwidth", k.span, f"add `link 12 GB/s` to {k.name}")


def _check_placeable(spec: Spec) -> None:
    """Every node must have somewhere to go."""
    g, p, dense = spec.graph, spec.platform, spec.dense
    for i in np.flatnonzero(~dense.allowed.any(axis=1)):
        nd = g.nodes[i]
        sup = [p.classes[ci].name for ci in range(len(p.classes)) if np.isfinite(dense.work[i, ci])]
        idle = [w.on for w in nd.work if w.on in p.empty_names]
        why = (f"its work is only on {', '.join(idle)}, which has no devices" if not sup and idle else
               "it has no work on any declared class" if not sup else
               f"it runs only on {', '.join(sup)}, and only/not/pin/forbid exclude those devices")
        if sup and any(x in p.empty_names for x in nd.only):
            why += f" (`only {', '.join(nd.only)}`: {', '.join(x for x in nd.only if x in p.empty_names)}, " \
                   "which has no devices)"
        raise PartError(f"no device can run node '{nd.name}': {why}", nd.span,
                        "give its work on a declared class, e.g. `work 3 ms on "
                        f"{p.classes[0].name}`, or loosen its placement constraints")


def _check_colocated(spec: Spec) -> None:
    """Colocated nodes need a common device."""
    g, dense = spec.graph, spec.dense
    order, starts = group_runs(dense.colo)
    common = np.logical_and.reduceat(dense.allowed[order], starts, axis=0).any(axis=1)
    ends = np.r_[starts[1:], len(order)]
    for s in np.flatnonzero(~common):  # (a lone node has a device: checked above)
        members = order[starts[s]:ends[s]]
        if len(members) > 1:
            nd = g.nodes[int(members[0])]
            raise PartError(f"colocated nodes {', '.join(g.nodes[int(i)].name for i in members[:6])} "
                            "have no device they can all run on", nd.span,
                            "check their work classes, only/not, pins and forbids")


NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NODE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[0-9]+\])?")
CARRIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[0-9]+\])?~[0-9]+")


def _check_names(spec: Spec) -> None:
    """Names must be writable in .part text; numbers finite and non-negative."""
    for nd in spec.graph.nodes:
        if nd.tensor_of is not None:  # a carrier (core/assemble.py): named source~k, of an operator
            src = spec.graph.index.get(nd.tensor_of)
            if src is None or spec.graph.nodes[src].tensor_of is not None or not CARRIER.fullmatch(nd.name) \
                    or nd.name.rsplit("~", 1)[0] != nd.tensor_of:
                raise PartError(f"tensor carrier '{nd.name}' is not `SOURCE~k` of an operator node", nd.span,
                                "write edge tensors as `a -> b out 4 MB` (or GraphBuilder.edge(..., out=...))")
        elif not NODE_NAME.fullmatch(nd.name):
            raise PartError(f"'{nd.name}' is not a valid node name", nd.span,
                            "use letters, digits and _ (not first), optionally with an index: layer[3]")
        if nd.group is not None and not NAME.fullmatch(nd.group):
            raise PartError(f"'{nd.group}' is not a valid group name", nd.span)
        vals = [w.time for w in nd.work] + [nd.params, nd.out or 0.0, nd.comm or 0.0]
        if not all(math.isfinite(v) and v >= 0 for v in vals):
            raise PartError(f"node '{nd.name}' has a negative or non-finite number", nd.span,
                            "work, params, out and comm must be finite and >= 0")
    for k in spec.platform.classes + spec.platform.empty:
        if not NAME.fullmatch(k.name):
            raise PartError(f"'{k.name}' is not a valid device class name", k.span)
    g = spec.solve.gap
    if g is not None and not 0 <= g < 1:
        raise PartError(f"gap {g} is not a fraction in [0, 1)", None, "write e.g. `gap 1%`")


def _check_cycle(spec: Spec) -> None:
    g = spec.graph
    n = len(g.nodes)
    src = np.array([a for a, _ in g.edges], dtype=np.int64)
    dst = np.array([b for _, b in g.edges], dtype=np.int64)
    if topological_order(n, src, dst) is not None:
        return
    cyc = find_cycle(n, src.tolist(), dst.tolist())
    names = " -> ".join(g.nodes[i].name for i in cyc)
    closing = (cyc[-2], cyc[-1])
    span = (g.edge_spans[g.edges.index(closing)] if len(g.edge_spans) == len(g.edges) else None)
    raise PartError(f"graph '{g.name}' has a cycle: {names}", span or g.nodes[cyc[0]].span,
                    "a computation graph must be acyclic; remove one of these edges")


def _check_batches(spec: Spec) -> None:
    """Under `throughput batch L split K` a device runs whole chunks of L / K samples, in
    batches its class supports: a class whose sizes sum to no multiple of the chunk can
    never run anything (issue 28, defect 5: it was accepted silently)."""
    o = spec.objective
    if o.split < 1 or o.batch % o.split:
        return  # reported where the split is checked
    chunk = o.batch // o.split
    for k in spec.platform.classes:
        if not k.batches or not k.count:
            continue
        reach = {0}
        for x in range(1, o.batch + 1):
            if any(x - b in reach for b in k.batches if b <= x):
                reach.add(x)
        if not any(m * chunk in reach for m in range(1, o.split + 1)):
            shares = " or ".join(str(m * chunk) for m in range(1, o.split + 1))
            raise PartError(f"device class '{k.name}' runs batches of {', '.join(map(str, k.batches))}, but "
                            f"under `batch {o.batch} split {o.split}` it would hold {shares} samples of a node, "
                            "and no sum of its batch sizes makes any of those: it could never run anything",
                            k.span, f"add a batch size that divides {chunk} (e.g. `batch 1, {chunk}`), "
                            f"or change the split")


def _check_totals(spec: Spec) -> None:
    """Times and sizes whose sums would leave the float range are refused, naming the
    largest nodes: four nodes of 1e308 ms once added up to inf, and the evaluator then
    "proved" the spec infeasible (issue 69). Every time of a node (its work on any class,
    at any batch size, and its transfers at the slowest bandwidth) and every size, added
    up over the graph, must stay below MAX_TOTAL, so that any load, latency, schedule or
    memory total the evaluator forms stays finite."""
    d, g = spec.dense, spec.graph
    p = spec.platform
    speed = min(k.speed for k in p.classes)
    bws = [x for x in [k.link for k in p.classes] + [s.link for s in p.servers] + [p.link]
           + [ln.bandwidth for ln in p.links] if x]
    slowest = min(bws) if bws else math.inf
    with np.errstate(over="ignore", invalid="ignore"):
        raw = np.array([max((w.time for w in nd.work), default=0.0) / speed for nd in g.nodes])
        fin = np.where(np.isfinite(d.work), d.work, 0.0).max(axis=1, initial=0.0)
        comm = np.where(np.isfinite(d.comm), d.comm, 0.0).max(axis=1, initial=0.0)
        sent = d.out_bytes / slowest * 1e3 if math.isfinite(slowest) else 0.0
        per_node = np.maximum(raw, fin) + 2.0 * np.maximum(comm, sent)
        for what, vals, unit in (("times", per_node, "ms"), ("parameter sizes", d.params, "bytes"),
                                 ("tensor sizes", d.out_bytes, "bytes")):
            if float(np.sum(vals)) < MAX_TOTAL:
                continue
            top = np.argsort(-vals, kind="stable")[:3]
            names = ", ".join(f"'{d.names[i]}' ({vals[i]:.3g} {unit})" for i in top)
            raise PartError(f"the graph's {what} add up to more than {MAX_TOTAL:.0e} {unit}, too near the largest "
                            f"float (1.8e308) for the totals to stay finite: the largest are {names}",
                            g.nodes[int(top[0])].span or g.span,
                            "give times in ms and sizes in bytes of a real model (a transfer counts at the slowest "
                            "bandwidth, in and out)")


def _check_memory(spec: Spec) -> None:
    dense = spec.dense
    g = spec.graph
    cap = dense.memory[dense.dev_class]
    held = dense.weights if dense.stashed is None else dense.weights + dense.stashed  # one micro-batch at least
    fits = dense.allowed & (held[:, None] <= cap[None, :])
    for i in np.flatnonzero(~fits.any(axis=1)):
        nd = g.nodes[int(i)]
        biggest = cap[dense.allowed[i]].max()
        raise PartError(f"node '{nd.name}' needs {human_size(held[i])} of memory, more than any device "
                        f"it can run on ({human_size(biggest)})", nd.span,
                        "raise the device memory, or use `memory overflow` to stream parameters")
    limited = np.isfinite(cap)
    must = ~(dense.allowed & ~limited[None, :]).any(axis=1)  # nodes that can only go to limited devices
    need = (held - dense.node_shares)[must].sum() + dense.shares_once(must)  # each shared weight once
    total = cap[limited].sum() if limited.any() else 0.0
    if need > total * (1 + 1e-12):
        raise PartError(f"the graph needs {human_size(need)} on memory-limited devices, but all of "
                        f"them together hold {human_size(total)}", spec.platform.span,
                        "add devices (e.g. `-D k=...`), raise `memory`, or use `memory overflow`")


def check_routes(spec: Spec) -> None:
    """Server levels and direct links (evaluator/levels.py): positive fabrics, and a size for
    every tensor whose time depends on the route."""
    p, g = spec.platform, spec.graph
    for s in p.servers:
        if s.link is not None and not s.link > 0:
            raise PartError(f"server '{s.name}' has link bandwidth {s.link:g} B/s", s.span,
                            "a fabric bandwidth must be positive, e.g. `link 10 GB/s`")
    if p.link is not None and not p.link > 0:
        raise PartError(f"the platform's fabric has link bandwidth {p.link:g} B/s", p.span,
                        "a fabric bandwidth must be positive, e.g. `link 1 GB/s`")
    if not p.hierarchical and not p.links:
        return
    sends = np.bincount(spec.dense.src, minlength=len(g.nodes)) > 0
    for i, nd in enumerate(g.nodes):
        if nd.comm is not None and sends[i] and (p.hierarchical or not nd.out):
            what = f"the tensor {nd.tensor_of} -> ..." if nd.tensor_of else f"node '{nd.name}'"
            where = "a platform with server levels" if p.hierarchical else "a direct `link` between devices"
            raise PartError(f"{what} gives its transfer as a time (`comm {nd.comm:g} ms`), but over {where} a "
                            "transfer's time depends on its route", nd.span,
                            "give the tensor's size instead (or as well, without levels), e.g. `out 4 MB`")

"""IR -> .part text. Everything is written in canonical units (ms, B, B/s, seconds for
time limits), so parse(to_part(spec)) == spec exactly (tests/dsl/test_roundtrip.py)."""
from __future__ import annotations

import json

from partdsl.core.ir import (
    GENERIC,
    Constraints,
    DeviceClass,
    Graph,
    Node,
    Objective,
    Platform,
    SolveOptions,
    Spec,
    Target,
)
from partdsl.core.quantities import Quantity
from partdsl.core.quantities import format_number as num


def _quantity(q: Quantity | str) -> str:
    if isinstance(q, str):
        return json.dumps(q)
    return str(q)


def _node(nd: Node) -> str:
    props = []
    if nd.work:
        items = []
        for w in nd.work:
            it = f"{num(w.time)} ms"
            if w.on != GENERIC:
                it += f" on {w.on}"
            if w.batch != 1:
                it += f" batch {w.batch}"
            items.append(it)
        props.append("work " + ", ".join(items))
    if nd.params:
        props.append(f"params {num(nd.params)} B")
    if nd.stash:
        props.append(f"stash {num(nd.stash)} B")
    if nd.shares:
        props.append("shares " + ", ".join(f"{w} {num(b)} B" for w, b in nd.shares))
    if nd.out is not None:
        props.append(f"out {num(nd.out)} B")
    if nd.comm is not None:
        props.append(f"comm {num(nd.comm)} ms")
    if nd.flops is not None:
        props.append(f"flops {num(nd.flops)} FLOP")
    if nd.rows is not None:
        props.append(f"rows {num(nd.rows)}")
    if nd.dtype is not None:
        props.append(f"dtype {nd.dtype}")
    if nd.only:
        props.append("only " + ", ".join(nd.only))
    if nd.forbid:
        props.append("not " + ", ".join(nd.forbid))
    if nd.group is not None:
        props.append(f"group {nd.group}")
    if nd.module is not None:
        props.append(f"module {json.dumps(nd.module)}")
    if nd.backward:
        props.append("backward")
    return f"  node {nd.name} {{ " + "; ".join(props) + (" }" if props else "}")


def _device(k: DeviceClass, count: int | None = None, indent: str = "  ") -> str:
    props = []
    if k.memory is not None:
        props.append(f"memory {num(k.memory)} B")
    if k.link is not None:
        props.append(f"link {num(k.link)} B/s")
    if k.host:
        props.append("host")
    if k.speed != 1.0:
        props.append(f"speed {num(k.speed)}")
    if k.batches:
        props.append("batch " + ", ".join(str(b) for b in k.batches))
    if k.profile:
        from partdsl.importers.cost_model import FIELDS

        units = {"overhead": (1e3, " ms")}  # the profile keeps seconds; the language writes ms
        fields = []
        for key, v in k.profile_fields:
            name = "peak" if key == "peak_flops" else key
            scale, unit = units.get(name, (1.0, " " + _canonical(FIELDS[name][0])))
            fields.append(f"{name} {num(v * scale)}{unit.rstrip()}")
        props.append(f"profile {k.profile}" + (" { " + "; ".join(fields) + " }" if fields else ""))
    body = " { " + "; ".join(props) + " }" if props else ""
    return f"{indent}device {k.name}[{k.count if count is None else count}]{body}"


def _platform_items(p: Platform, server: str | None = None, indent: str = "  ") -> list[str]:
    """The classes and server levels declared in `server` (None: the platform), nested."""
    lines = [_device(k, p.per_server(k), indent) for k in p.classes + p.empty if k.server == server]
    for sv in p.servers:
        if sv.parent == server:
            lines.append(f"{indent}server {sv.name}[{sv.count}] {{")
            lines += _platform_items(p, sv.name, indent + "  ")
            if sv.link is not None:
                lines.append(f"{indent}  link {num(sv.link)} B/s")
            lines.append(f"{indent}}}")
    return lines


def _objective(o: Objective) -> str:
    s = o.entity.written  # core/objectives.py
    if o.entity.batched:
        return f"{s} batch {o.batch}" + (f" split {o.split}" if o.split != 1 else "")
    if o.training:
        s += f" training {o.training}"
    if o.overlap:
        s += " overlap" + (" duplex" if o.overlap == "duplex" else "")
    return s


def _targets(ts: tuple[Target, ...]) -> str:
    return ", ".join(t.name for t in ts)


def constraint_lines(c: Constraints) -> list[str]:
    """The items of `subject to { ... }` as the language writes them."""
    out = []
    if c.acyclic:
        out.append("acyclic")
    if c.contiguous:
        out.append("contiguous")
    out.append(f"memory {c.memory}")
    if c.colocate:
        out.append("colocate by group")
    out += [f"colocate {_targets(s)}" for s in c.colocate_sets]
    out += [f"pin {n.name} to {_targets(ts)}" for n, ts in c.pins]
    out += [f"forbid {n.name} on {_targets(ts)}" for n, ts in c.forbids]
    if c.max_stages is not None:
        out.append(f"stages <= {c.max_stages}")
    if c.subgraphs != 1:
        out.append(f"subgraphs <= {c.subgraphs}")
    if c.replicate != 1:
        out.append(f"replicate <= {c.replicate}")
    if c.interleave != 1:
        out.append(f"interleave {c.interleave}")
    if c.activations:
        out.append("activations")
    return out


def _solve(s: SolveOptions) -> str | None:
    if s == SolveOptions():
        return None
    head = "solve" + (f" {s.method}" if s.method else "") + (f" with {s.solver}" if s.solver else "")
    opts = []
    if s.time_limit is not None:
        opts.append(f"time {num(s.time_limit)} s")
    if s.gap is not None:
        opts.append(f"gap {num(s.gap)}")
    if s.seed is not None:
        opts.append(f"seed {s.seed}")
    if s.threads is not None:
        opts.append(f"threads {s.threads}")
    opts += [f"{k} {num(v)}" for k, v in s.options]
    return head + (" { " + "; ".join(opts) + " }" if opts else "")


def graph_head(g: Graph) -> str:
    """`graph NAME {`, with where its times were measured (`graph g measured "..." {`)."""
    return f"graph {g.name}" + (f" measured {json.dumps(g.measured)}" if g.measured else "") + " {"


def graph_lines(g: Graph) -> list[str]:
    """A graph block's body: its nodes, its plain edges, and each tensor carrier back as the
    sized hop it was written as (`a -> {b, c} out 4 MB`), in carrier order."""
    plain, carried = g.written_edges()
    lines = [_node(nd) for nd in g.nodes if nd.tensor_of is None]
    lines += [f"  {g.nodes[a].name} -> {g.nodes[b].name}" for a, b in plain]
    for nd, ts in carried:
        to = ts[0] if len(ts) == 1 else "{" + ", ".join(ts) + "}"
        size = f"out {num(nd.out)} B" if nd.comm is None else f"comm {num(nd.comm)} ms"
        lines.append(f"  {nd.tensor_of} -> {to} {size}")
    return lines


def to_part(spec: Spec, header: str | None = None) -> str:
    g, p = spec.graph, spec.platform
    lines = [f"# {header}"] if header else []
    lines += [f"param {name} = {_quantity(v)}" for name, v in spec.params]
    lines.append(graph_head(g))
    lines += graph_lines(g)
    lines.append("}")
    lines.append("platform {")
    lines += _platform_items(p)
    if p.link is not None:
        lines.append(f"  link {num(p.link)} B/s")
    lines += [f"  link {ln.a} {'->' if ln.directed else '<->'} {ln.b} {num(ln.bandwidth)} B/s"
              for ln in p.links]
    lines.append("}")
    lines.append(_objective(spec.objective))
    lines.append("subject to {\n  " + ";\n  ".join(constraint_lines(spec.constraints)) + "\n}")
    solve = _solve(spec.solve)
    if solve:
        lines.append(solve)
    return "\n".join(lines) + "\n"


def _canonical(dim: str) -> str:
    from partdsl.core.quantities import CANONICAL

    return CANONICAL[dim]

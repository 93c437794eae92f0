"""Human-readable tables for the CLI (the --json output is built from to_json methods)."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from partdsl.core.assignment import to_array
from partdsl.core.evaluation import Evaluation
from partdsl.core.ir import Spec
from partdsl.core.quantities import human_rate, human_size
from partdsl.core.result import Result
from partdsl.evaluator.device_record import device_records, memory_notes

if TYPE_CHECKING:
    from partdsl.methods.hierarchy import Hierarchy


def table(rows: list[list[str]], header: list[str], left: tuple[int, ...] = (0,)) -> str:
    """A plain-text table: columns in `left` (names, notes) left-aligned, numbers right."""
    cols = [header] + rows
    w = [max(len(r[i]) for r in cols) for i in range(len(header))]

    def line(r: list[str]) -> str:
        return "  ".join(c.ljust(w[i]) if i in left else c.rjust(w[i]) for i, c in enumerate(r)).rstrip()

    return "\n".join([line(header), "  ".join("-" * x for x in w)] + [line(r) for r in rows])


def fmt(x: float, digits: int = 6) -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and math.isinf(x):
        return "inf"
    return f"{x:.{digits}g}"


FLOAT_GAP = 1e-9  # a relative gap below this is float summation order, not a gap (methods/solve.py)


def gap_text(gap: float) -> str:
    """A gap in percent as the user reads it: 0 below float noise (a proven optimum showed
    `gap 1.104e-13%`), inf when there is no bound."""
    if not math.isfinite(gap):
        return "inf"
    return "0%" if gap < FLOAT_GAP else f"{fmt(100 * gap, 4)}%"


def objective_name(spec: Spec) -> str:
    o = spec.objective
    extra = [f"training {o.training}"] if o.training else []
    extra += [f"overlap {o.overlap}"] if o.overlap else []
    if o.entity.batched:
        extra = [f"batch {o.batch}"] + ([f"split in {o.split}"] if o.split > 1 else [])
    return o.entity.title + (f", {', '.join(extra)}" if extra else "")


def describe(spec: Spec, bound: float) -> str:
    g, p, c = spec.graph, spec.platform, spec.constraints
    d = spec.dense
    kinds = []
    for k in p.classes:
        bits = [f"{k.count} x {k.name}"]
        if k.host:
            bits.append("host")
        if k.memory is not None:
            bits.append(f"memory {human_size(k.memory)}")
        if k.link is not None:
            bits.append(f"link {human_rate(k.link)}")
        if k.server is not None:
            bits.append(f"{p.per_server(k)} in each {k.server}")
        kinds.append(", ".join(bits))
    kinds += [f"{s.count} x server {s.name}" + (f" in each {s.parent}" if s.parent else "")
              + (f", link {human_rate(s.link)}" if s.link is not None else "") for s in p.servers]
    kinds += [f"platform link {human_rate(p.link)}"] if p.link is not None else []
    kinds += [f"{len(p.links)} direct link{'s' if len(p.links) > 1 else ''}"] if p.links else []
    cons = [x for x, on in (("acyclic", c.acyclic), ("contiguous", c.contiguous),
                            ("colocate by group", c.colocate)) if on]
    cons.append(f"memory {c.memory}")
    cons += [f"{len(c.pins)} pins"] if c.pins else []
    cons += [f"{len(c.forbids)} forbids"] if c.forbids else []
    cons += [f"{len(c.colocate_sets)} colocated sets"] if c.colocate_sets else []
    cons += [f"stages <= {c.max_stages}"] if c.max_stages else []
    cons += [f"interleave {c.interleave}"] if c.interleave > 1 else []
    cons += [f"subgraphs <= {c.subgraphs}"] if c.subgraphs != 1 else []
    cons += [f"replicate <= {c.replicate}"] if c.replicate != 1 else []
    cons += ["activations"] if c.activations else []
    groups = len(np.unique(d.colo))
    unit = spec.objective.unit
    which = "upper" if spec.objective.sense == "max" else "lower"
    from partdsl.methods.cut_bound import applies as crossings_apply

    basis = ("from compute and the transfers between the two device classes" if crossings_apply(spec)
             else "from compute alone")
    tensors = len(g.carriers)
    return "\n".join([
        f"{spec.file}: ok",
        f"  graph      {g.name}: {d.n - tensors} nodes, {d.m - tensors} edges"
        + (f" ({tensors} sized edge tensor{'s' if tensors > 1 else ''})" if tensors else "")
        + (f", training ({int(d.backward.sum())} backward nodes)" if g.is_training else "")
        + (f", {groups} colocation units" if groups < d.n - tensors else ""),
        "  platform   " + "; ".join(kinds),
        f"  objective  {objective_name(spec)}",
        f"  subject to {', '.join(cons)}",
        f"  bound      {fmt(bound)} {unit} ({which} bound on the optimum, {basis})",
    ] + ([f"  costs      {costs}"] if (costs := cost_provenance(spec)) else []))


def _costed(spec: Spec) -> list[tuple[str, str, list[tuple[int, str, str]]]]:
    """Per profiled class: (class, profile, [(operators, "shape" or "batch", how far that
    model was checked)]) for the nodes the cost model gave work (issue 72, item 4)."""
    from partdsl.importers.cost_model import profile

    nodes = [nd for nd in spec.graph.nodes if nd.flops is not None]
    shaped = sum(nd.rows is not None for nd in nodes)
    out = []
    for k in (k for k in spec.platform.classes if k.profile):
        p = profile(k.profile)
        parts = [(n, what, p.trust(what == "shape")) for n, what in ((shaped, "shape"), (len(nodes) - shaped, "batch"))
                 if n]
        if parts:
            out.append((k.name, k.profile, parts))
    return out


def _operators(n: int, what: str) -> str:
    return f"{n:,} operator{'s' if n != 1 else ''} by {what}"


def time_sources(spec: Spec) -> list[str]:
    """Where each node's times come from: "model" (the cost model, from its flops), "measured"
    (times as written, in a graph whose header says where they were measured: `graph g measured "..." {`),
    "given" (as written, not said where from), "-" (no work)."""
    profiled = any(k.profile for k in spec.platform.classes)
    written = "measured" if spec.graph.measured else "given"
    return ["model" if nd.flops is not None and profiled else written if nd.work else "-" for nd in spec.graph.nodes]


def cost_provenance(spec: Spec, sources: list[str] | None = None) -> str:
    """Where the costs come from (issue 72, item 4): the operators whose times are written in
    the graph, measured where the graph says (or not said), and where the cost model gave
    work, per profiled class, the nodes costed by their rows (the shape model) and by the
    batch, and how far each model was checked against measurements. `sources`: time_sources(spec),
    when the caller has them."""
    out = [f"{k} ({prof}): " + ", ".join(f"{_operators(n, what)} ({trust})" for n, what, trust in parts)
           for k, prof, parts in _costed(spec)]
    written = sum(s in ("measured", "given") for s in (time_sources(spec) if sources is None else sources))
    said = f"measured {spec.graph.measured}" if spec.graph.measured else \
        'as written (where measured not said: `graph g measured "..." {` says it)'
    whose = f"{written:,} operators'" if written != 1 else "1 operator's"
    return "; ".join(([f"{whose} times {said}"] if written else [])
                     + (["cost model: " + "; ".join(out)] if out else []))


def uncalibrated(spec: Spec) -> list[str]:
    """One warning per device class whose profile costs operators by a model never checked
    against measurements on that device (what `part convert` says once)."""
    out = []
    for k, prof, parts in _costed(spec):
        unchecked = [_operators(n, what) for n, what, trust in parts if trust == "not calibrated"]
        if unchecked:
            out.append(f"device class '{k}' (profile {prof}): {' and '.join(unchecked)} costed by a model not checked "
                       "against measurements on this device (docs/cost_model.md); measure the layers with `part "
                       "profile`, or give their work")
    return out


def evaluation_report(spec: Spec, ev: Evaluation, assignment: np.ndarray) -> str:
    d = spec.dense
    records = device_records(spec, ev, assignment)
    rows = []
    scheduled = spec.objective.scheduled
    finish = any("finish" in p for p in ev.parts.values())  # latency: when each device is done
    for j, dev in enumerate(d.devices):
        p = ev.parts.get(dev, {})
        if scheduled:
            cells = [fmt(p.get("busy", 0.0)), fmt(p.get("finish", 0.0))]
        else:
            cells = [fmt(p.get("compute", 0.0)), fmt(p.get("in", 0.0)), fmt(p.get("out", 0.0))]
            if spec.constraints.memory == "overflow":
                cells.append(fmt(p.get("overflow", 0.0)))
            if spec.constraints.replicate > 1:
                cells += [str(int(p.get("replicas", 1))) if records[j].used else "-", fmt(p.get("sync", 0.0))]
            if spec.objective.training == "gpipe":
                cells += [fmt(p.get("fw", 0.0)), fmt(p.get("bw", 0.0))]
            if finish:
                cells.append(fmt(p["finish"]) if "finish" in p else "-")
            cells.append(fmt(ev.loads.get(dev, 0.0)))
        rows.append([dev, str(records[j].nodes)] + cells + [human_size(records[j].memory)])
    if scheduled:
        head = ["device", "nodes", "busy ms", "finish ms"]
    else:
        head = ["device", "nodes", "compute", "in", "out"]
        head += ["overflow"] if spec.constraints.memory == "overflow" else []
        head += ["replicas", "sync"] if spec.constraints.replicate > 1 else []
        head += ["fw", "bw"] if spec.objective.training == "gpipe" else []
        head += ["finish"] if finish else []
        head += ["load"]
    head.append("memory")
    out = [f"objective  {objective_name(spec)} = {fmt(ev.objective)} {ev.unit}", "", table(rows, head)]
    notes = memory_notes(spec, assignment)
    out += [""] + notes if notes else []
    if ev.violations:
        out += ["", f"{len(ev.violations)} violation(s):"] + [f"  [{v.kind}] {v.message}" for v in ev.violations]
    else:
        out += ["", "all constraints satisfied"]
    return "\n".join(out)


def result_report(spec: Spec, r: Result) -> str:
    which = "upper" if r.sense == "max" else "lower"
    lines = [f"status     {r.status.value} ({r.stopped})",
             f"method     {r.method}{f' (answer from {r.chosen})' if r.chosen else ''} (solver: {r.solver})",
             f"objective  {fmt(r.objective)} {r.unit}",
             f"bound      {fmt(r.bound)} {r.unit} ({which} bound on the optimum)",
             f"gap        {gap_text(r.gap)}",
             f"time       {r.wall_time_s:.3f} s"]
    said = ("proven bound", "not a proof", "not used by", "skipped", "no time limit", "against the order")
    notes = [ln.strip() for ln in r.log if any(w in ln for w in said)]
    lines += [f"note       {n.split('  ', 1)[-1].strip()}" for n in notes]
    if r.evaluation is not None and (r.assignment is not None or r.evaluation.schedule is not None):
        arr = to_array(spec, r.assignment) if r.assignment is not None else np.full(spec.dense.n, -1)
        lines += ["", evaluation_report(spec, r.evaluation, arr)]
    elif r.evaluation is not None and r.evaluation.violations:  # no feasible answer: say why the best one failed
        ev = r.evaluation
        lines += ["", f"best candidate found ({fmt(ev.objective)} {r.unit}) violates:"]
        lines += [f"  {v.kind}: {v.message}" for v in ev.violations[:10]]
        if len(ev.violations) > 10:
            lines.append(f"  ... and {len(ev.violations) - 10} more")
    return "\n".join(lines)


def hierarchy_report(spec: Spec, h: Hierarchy) -> str:
    """Archer Table 1 for one instance: each bound, and as a fraction of the best solution."""
    rows = []
    for name, e in h.bounds.items():
        frac = h.fraction(name)
        rows.append([name.replace("_", "-"), fmt(e.value) if e.value is not None else "-",
                     f"{frac:.4f}" if frac is not None else "-", f"{e.seconds:.2f} s",
                     ("" if e.solved or e.value is None else "at limit; ") + e.note])
    unit = "ms"
    proof = ", proven optimal" if h.proven else ""
    head = [f"best solution  {fmt(h.best)} {unit} ({h.best_method}{proof})", ""]
    return "\n".join(head) + table(rows, ["bound", f"value ({unit})", "/ best", "time", "note"], left=(0, 4))


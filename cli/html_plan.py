"""The report's plan, device by device, from the evaluator's per-device record
(evaluator/device_record.py), and what pipeline users look at (PipeDream, Alpa,
nnScaler): stage order with each stage's layers, compute / in / out, the forward /
backward split under training, memory against capacity, bytes moved, the rate, and the
bubble of a step of m micro-batches under the schedule the spec declares."""
from __future__ import annotations

import math

import numpy as np
from partdsl.cli.html_text import esc, num, pairs
from partdsl.core.ir import Spec
from partdsl.core.quantities import human_size
from partdsl.core.result import Result
from partdsl.evaluator.device_record import DeviceRecord, Pipeline, device_records, memory_notes, pipeline

SHOWN_LAYERS = 12  # ranges of layers listed per device; the rest are counted
KEYS = ("compute", "in", "out", "overflow", "replicas", "sync", "fw", "bw", "busy", "finish")
HEADS = {"compute": "compute ms", "in": "in ms", "out": "out ms", "overflow": "overflow ms", "replicas": "replicas",
         "sync": "sync ms", "fw": "fw ms", "bw": "bw ms", "busy": "busy ms", "finish": "finish ms"}


def _memory(r: DeviceRecord) -> str:
    share = r.memory_share
    pct = "<0.1" if 0 < share < 1e-3 else f"{100 * share:.1f}"
    of = f" ({pct}% of {human_size(r.capacity)})" if math.isfinite(share) else " (no limit)"
    return esc(human_size(r.memory) + of)


def _layers(r: DeviceRecord) -> str:
    more = f", ... ({len(r.layers) - SHOWN_LAYERS} more)" if len(r.layers) > SHOWN_LAYERS else ""
    return esc(", ".join(r.layers[:SHOWN_LAYERS]) + more)


def plan_table(spec: Spec, records: list[DeviceRecord], pipe: Pipeline | None) -> str:
    hidden = ({"overflow"} if spec.constraints.memory != "overflow" else set()) | (
        {"replicas", "sync"} if spec.constraints.replicate <= 1 else set())
    keys = [k for k in KEYS if k not in hidden and any(k in r.parts for r in records)]
    training = any(r.forward is not None for r in records) and "fw" not in keys
    bytes_known = any(r.bytes_in is not None for r in records)
    stage = {name: i + 1 for i, name in enumerate(pipe.stages)} if pipe is not None else None
    head = (["stage"] if stage else []) + ["device", "nodes", "layers"] + [HEADS[k] for k in keys]
    head += ["forward ms", "backward ms"] if training else []
    head += ["load ms"] if not spec.objective.scheduled else []
    head += ["memory"] + (["bytes in", "bytes out"] if bytes_known else [])
    order = sorted(records, key=lambda r: (not r.used, r.first)) if stage else records
    rows = []
    for r in order:
        text = [esc(r.device), _layers(r)]  # left-aligned; the rest are numbers
        nums = ([str(stage.get(r.device, "-"))] if stage else []) + [f"{r.nodes:,}"]
        nums += [num(r.parts.get(k), 3 if k == "replicas" else 6) for k in keys]
        nums += [num(r.forward), num(r.backward)] if training else []
        nums += [num(r.load)] if not spec.objective.scheduled else []
        nums += [_memory(r)]
        if bytes_known:
            nums += ["-" if x is None else esc(human_size(x)) for x in (r.bytes_in, r.bytes_out)]
        first = 1 if stage else 0
        cells = [f"<td class=num>{c}</td>" for c in nums[:first]] + [f"<td>{text[0]}</td>"]
        cells += [f"<td class=num>{nums[first]}</td>", f"<td>{text[1]}</td>"]
        cells += [f"<td class=num>{c}</td>" for c in nums[first + 1:]]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return "<table><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>" + "".join(rows) + "</table>"


def _rate(spec: Spec, r: Result, pipe: Pipeline | None) -> str:
    """What the plan delivers per second; '-' where its value is not a finite positive time or rate."""
    value = r.evaluation.objective if r.evaluation is not None else r.objective
    if pipe is not None:
        slowest = max(pipe.times, default=0.0)
        if not (math.isfinite(slowest) and slowest > 0):
            return "-"
        return (f"{pipe.per_second:.4g} micro-batches/s in the steady state (one every {slowest:.4g} ms, "
                "the slowest stage)")
    if not (math.isfinite(value) and value > 0):
        return "-"
    if spec.objective.kind == "throughput":
        batch = spec.objective.batch
        return f"{value:.4g} samples/s (a batch of {batch} in {1e3 * batch / value:.4g} ms)"
    return f"{1e3 / value:.4g} inputs/s, one at a time ({value:.4g} ms each)"


def _moved(records: list[DeviceRecord]) -> str:
    if all(r.bytes_in is None for r in records):
        return "not known: the spec gives transfer times, not tensor sizes, or nodes are split over devices"
    sent = sum(r.bytes_out or 0.0 for r in records)
    received = sum(r.bytes_in or 0.0 for r in records)
    return f"{human_size(sent)} sent, {human_size(received)} received between devices per input"


def _pipeline_rows(spec: Spec, pipe: Pipeline) -> list[tuple[str, str]]:
    training = spec.objective.training
    schedule = {"gpipe": "GPipe: each step's micro-batches go forward, then backward, then the pipeline flushes",
                "pipedream": "PipeDream 1F1B: forward and backward passes interleave, no flush between steps"
                }.get(training or "", "inference: micro-batches stream through the stages")
    step = (f"{pipe.step_ms:.4g} ms for {pipe.micro_batches} micro-batches from an empty pipeline: "
            f"{pipe.micro_batches} x the slowest stage + the others' times"
            + (f" / {pipe.virtual} (interleaved: the fill and drain pass chunks of 1 / {pipe.virtual} of a stage)"
               if pipe.virtual > 1 else ""))
    idle = f"{100 * pipe.steady_idle:.1f}% of the stages' time idle once the pipeline is full (stage imbalance)"
    bubble = f"{100 * pipe.bubble:.1f}% of the stages' time idle in such a step (fill, drain and imbalance)"
    if not pipe.flush:
        bubble += "; PipeDream does not flush, so only the steady-state share lasts"
    order = esc(" -> ".join(pipe.stages))
    if pipe.back_edges:
        order += (f" (not a linear pipeline: {pipe.back_edges} edge(s) go back to an earlier stage, so the step "
                  "and bubble below are estimates; `subject to { acyclic }` makes it one)")
    if pipe.virtual > 1:
        order += f", {pipe.virtual} chunks each, round robin (`interleave {spec.constraints.interleave}`)"
    return [("stages", f"{len(pipe.stages)}: " + order), ("schedule", esc(schedule)),
            ("micro-batches", f"{pipe.micro_batches} per step (--micro-batches; default 4 per stage)"),
            ("step", esc(step)), ("bubble", esc(bubble)), ("steady state", esc(idle))]


def plan_section(spec: Spec, r: Result, dev: np.ndarray, micro_batches: int | None = None) -> str:
    """The plan table and, above it, the rate and (bottleneck) the pipeline's shape."""
    assert r.evaluation is not None
    records = device_records(spec, r.evaluation, dev)
    pipe = pipeline(spec, records, dev, micro_batches)
    rows = [("rate", esc(_rate(spec, r, pipe))), ("bytes moved", esc(_moved(records)))]
    rows += _pipeline_rows(spec, pipe) if pipe is not None else []
    rows += [("memory", esc(note)) for note in memory_notes(spec, dev)]  # shared weights, stashes in flight
    return pairs(rows) + "<h3>Devices</h3>" + plan_table(spec, records, pipe)

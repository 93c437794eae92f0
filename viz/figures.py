"""Pictures of an answer (`part plot`, `part bound --plot`), drawn with matplotlib (Agg,
no display needed). Each function draws on a given Axes from the evaluator's own
numbers, so a picture never disagrees with the printed result:

- `graph`: the computation graph in layers (longest-path depth), nodes colored by
  device, cut edges (producer and consumer on different devices) dashed red;
- `loads`: per-device stacked bars of compute / in / out / overflow (max-load
  objectives), the bottleneck device outlined and named;
- `gantt`: devices as rows. Latency (Tarnawski sec. 4): each accelerator subgraph as
  in / compute / out segments, host nodes as bars; DiviML schedules: every piece (node,
  samples) as a bar, transfers as arrows between rows;
- `bounds`: the lower-bound hierarchy of `part bound`, each bound as a fraction of the
  best solution.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from partdsl.core.evaluation import Evaluation
from partdsl.core.ir import Spec

PARTS = (("compute", "#4c72b0"), ("in", "#dd8452"), ("out", "#55a868"), ("overflow", "#c44e52"))
FORMATS = (".png", ".svg", ".pdf")


def _pyplot():  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg")  # files only: no display
    matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text in SVG (searchable, smaller)
    import matplotlib.pyplot as plt

    return plt


def device_colors(spec: Spec) -> list:  # type: ignore[type-arg]
    plt = _pyplot()
    cmap = plt.get_cmap("tab20" if spec.dense.D > 10 else "tab10")
    return [cmap(j % cmap.N) for j in range(spec.dense.D)]


def layers(spec: Spec) -> np.ndarray:
    """Each node's longest-path depth from a source (its layer)."""
    d = spec.dense
    depth = np.zeros(d.n, dtype=np.int64)
    for v in d.topo.tolist():
        for u in d.preds[v]:
            depth[v] = max(depth[v], depth[u] + 1)
    return depth


def graph(ax, spec: Spec, dev: np.ndarray) -> None:  # type: ignore[no-untyped-def]
    """Nodes in layers, colored by device (gray: no single device), cut edges dashed red."""
    d = spec.dense
    depth = layers(spec)
    y = np.zeros(d.n)
    for k in np.unique(depth):
        members = np.flatnonzero(depth == k)
        y[members] = np.arange(len(members)) - (len(members) - 1) / 2
    colors = device_colors(spec)
    for a, b in zip(d.src.tolist(), d.dst.tolist()):
        cut = dev[a] != dev[b]
        ax.plot([depth[a], depth[b]], [y[a], y[b]], color="#c44e52" if cut else "#999999",
                ls="--" if cut else "-", lw=1.2 if cut else 0.6, zorder=1)
    size = max(8.0, 300.0 / math.sqrt(max(d.n, 1)))
    for j, name in enumerate(d.devices):
        on = np.flatnonzero(dev == j)
        if len(on):
            ax.scatter(depth[on], y[on], s=size, color=colors[j], label=name, zorder=2, edgecolors="black",
                       linewidths=0.3)
    split = np.flatnonzero(dev < 0)
    if len(split):
        ax.scatter(depth[split], y[split], s=size, color="#bbbbbb", label="several devices", zorder=2)
    if d.n <= 40:
        for v in range(d.n):
            ax.annotate(d.names[v], (depth[v], y[v]), fontsize=6, ha="center", va="bottom",
                        xytext=(0, 4), textcoords="offset points")
    ax.plot([], [], color="#c44e52", ls="--", label="cut edge")
    ax.set_title(f"{spec.graph.name}: {d.n} nodes, {int((dev[d.src] != dev[d.dst]).sum())} cut edges")
    ax.set_xlabel("layer (longest path from a source)")
    ax.set_yticks([])
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))


def loads(ax, spec: Spec, ev: Evaluation) -> None:  # type: ignore[no-untyped-def]
    """Stacked compute / in / out / overflow per device; the bottleneck outlined."""
    devices = list(spec.dense.devices)
    x = np.arange(len(devices))
    bottom = np.zeros(len(devices))
    for part, color in PARTS:
        h = np.array([float(ev.parts.get(dv, {}).get(part, 0.0)) for dv in devices])
        if part == "overflow" and not h.any():
            continue
        ax.bar(x, h, bottom=bottom, color=color, label=part, width=0.7)
        bottom += h
    total = np.array([ev.loads.get(dv, 0.0) for dv in devices])
    worst = int(np.argmax(total))
    ax.bar(x[worst], total[worst], fill=False, edgecolor="black", linewidth=2, width=0.7)
    ax.annotate(f"bottleneck {total[worst]:.4g} {ev.unit}", (x[worst], total[worst]), ha="center",
                va="bottom", fontsize=8, xytext=(0, 3), textcoords="offset points")
    ax.set_xticks(x, devices, rotation=45 if len(devices) > 6 else 0, ha="right" if len(devices) > 6 else "center")
    ax.set_ylim(0, float(np.nanmax(np.where(np.isfinite(total), total, 0))) * 1.15 or 1.0)
    ax.set_ylabel(f"load ({ev.unit})")
    ax.set_title(f"per-device load: {spec.objective.kind} {ev.objective:.6g} {ev.unit}")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))


def gantt(ax, spec: Spec, ev: Evaluation, dev: np.ndarray, sub: np.ndarray | None = None) -> None:  # type: ignore[no-untyped-def]
    """Devices as rows: a DiviML schedule's pieces and transfers, or Tarnawski's latency
    subgraphs (in / compute / out) and host nodes."""
    d = spec.dense
    colors = device_colors(spec)
    if ev.schedule is not None:
        from partdsl.core.schedule_eval import timeline

        start, finish, moves = timeline(spec, ev.schedule)
        for k, p in enumerate(ev.schedule.pieces):
            ax.barh(p.device, finish[k] - start[k], left=start[k], color=colors[p.device], edgecolor="black",
                    linewidth=0.3, height=0.6)
            if len(ev.schedule.pieces) <= 60:
                ax.text((start[k] + finish[k]) / 2, p.device, d.names[p.node], ha="center", va="center", fontsize=5)
        for a, b, t0, t1 in moves:
            ax.annotate("", xy=(t1, b), xytext=(t0, a), arrowprops={"arrowstyle": "->", "color": "#c44e52", "lw": 0.8})
        ax.plot([], [], color="#c44e52", label="transfer")
        end = float(finish.max()) if len(finish) else 0.0
    else:
        from partdsl.core import subgraphs

        u = subgraphs.units(d, dev, sub if sub is not None else subgraphs.resolve(d, dev, None,
                                                                              spec.constraints.subgraphs))
        s = subgraphs.timed(d, dev, u)
        for a in range(u.A):
            row, t = int(u.device[a]), float(s.start[a])
            for w, color, label in ((s.inn[a], "#dd8452", "in"), (s.compute[a], colors[row], None),
                                    (s.out[a], "#55a868", "out")):
                ax.barh(row, w, left=t, color=color, edgecolor="black", linewidth=0.3, height=0.6)
                t += float(w)
        for v in range(d.n):
            if d.host[d.dev_class[dev[v]]]:
                k = u.A + v
                ax.barh(int(dev[v]), float(s.finish[k] - s.start[k]), left=float(s.start[k]), color=colors[dev[v]],
                        edgecolor="black", linewidth=0.3, height=0.6)
        from matplotlib.patches import Patch

        ax.legend(handles=[Patch(color="#dd8452", label="in (host -> device)"),
                           Patch(color="#55a868", label="out (device -> host)")],
                  fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        end = float(s.value)
    ax.axvline(end, color="black", ls=":", lw=1)
    ax.set_yticks(np.arange(d.D), d.devices)
    ax.invert_yaxis()
    ax.set_xlabel("time (ms)")
    ax.set_title(f"{spec.objective.kind}: {ev.objective:.6g} {ev.unit} (makespan {end:.4g} ms)")
    if ev.schedule is not None:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))


def bounds(ax, h) -> None:  # type: ignore[no-untyped-def]  # h: solvers.hierarchy.Hierarchy
    """Each bound of the hierarchy as a fraction of the best solution (Archer Table 1)."""
    names = [n for n, e in h.bounds.items()]
    frac = [h.fraction(n) or 0.0 for n in names]
    x = np.arange(len(names))
    bars = ax.bar(x, frac, color=["#4c72b0" if h.bounds[n].solved else "#8c8c8c" for n in names])
    for b, n, f in zip(bars, names, frac):
        e = h.bounds[n]
        label = "-" if e.value is None else f"{e.value:.4g}"
        ax.text(b.get_x() + b.get_width() / 2, f, label, ha="center", va="bottom", fontsize=7)
    ax.axhline(1.0, color="black", ls=":", lw=1)
    ax.set_xticks(x, [n.replace("_", "-") for n in names])
    ax.set_ylim(0, 1.1)
    ax.set_ylabel("bound / best solution")
    ax.set_title(f"lower bounds; best solution {h.best:.6g} ms ({h.best_method}{', proven optimal' if h.proven else ''})")


def save(fig, path: str | Path) -> None:  # type: ignore[no-untyped-def]
    from partdsl.core.errors import PartError

    path = Path(path)
    if path.suffix.lower() not in FORMATS:
        raise PartError(f"cannot tell the picture format of '{path}'", None, "name the file *.png, *.svg or *.pdf")
    fig.savefig(path, bbox_inches="tight", dpi=130)
    _pyplot().close(fig)


def answer_figure(spec: Spec, ev: Evaluation, dev: np.ndarray, sub: np.ndarray | None = None):  # type: ignore[no-untyped-def]
    """The graph on top; below it the load bars (max load) or the Gantt chart (latency,
    schedules)."""
    plt = _pyplot()
    d = spec.dense
    height = 3.2 + min(6.0, 0.25 * d.D)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(11, 4 + height))
    graph(top, spec, dev)
    if spec.objective.kind == "bottleneck":
        loads(bottom, spec, ev)
    else:
        gantt(bottom, spec, ev, dev, sub)
    fig.tight_layout()
    return fig


def bounds_figure(h):  # type: ignore[no-untyped-def]
    fig, ax = _pyplot().subplots(figsize=(7, 4))
    bounds(ax, h)
    fig.tight_layout()
    return fig

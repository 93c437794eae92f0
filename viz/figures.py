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
from typing import Sequence

import numpy as np
from partdsl.core.evaluation import Evaluation
from partdsl.core.ir import Spec
from partdsl.core.ranges import shown

PARTS = (("compute", "#4c72b0"), ("in", "#dd8452"), ("out", "#55a868"), ("overflow", "#c44e52"))
TRANSFER, HATCH_IN, HATCH_OUT = "#eeeeee", "////", "...."  # gray and hatched: no device's colour
LABEL_PT, LEGEND_PT = 7, 7  # the smallest text drawn: readable at the default size (issue 76)
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


COLLAPSE_NODES = 300  # above this many nodes the graph is drawn by layer (core/layers.py)
MAX_GROUPS = 200  # ... unless that gives more groups than this: then by depth band and device
MANY_DEVICES = 40  # above this many devices, every k-th device name is shown


def layers(spec: Spec) -> np.ndarray:
    """Each node's longest-path depth from a source (its layer); a source with successors sits
    one layer before its first consumer, so the weights and inputs of an imported graph are
    drawn beside the operators that read them, not stacked in the first column."""
    d = spec.dense
    depth = np.zeros(d.n, dtype=np.int64)
    for v in d.topo.tolist():
        for u in d.preds[v]:
            depth[v] = max(depth[v], depth[u] + 1)
    first = np.full(d.n, d.n)  # the layer of each node's first consumer (n: none)
    np.minimum.at(first, d.src, depth[d.dst])
    source = (np.bincount(d.dst, minlength=d.n) == 0) & (np.diff(d.succ_ptr) > 0)
    depth[source] = first[source] - 1
    return depth


def declutter(ax, texts: list) -> int:  # type: ignore[no-untyped-def,type-arg]
    """Hide every text that overlaps one kept before it (in the order given), or that is
    wider than its bar (a Gantt label with `bar_span` = the bar's (start, finish)):
    labels never overlap and stay inside their bars. Returns how many were hidden."""
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    kept: list = []  # type: ignore[type-arg]
    hidden = 0
    for t in texts:
        t.set_visible(True)
        box = t.get_window_extent(renderer).expanded(1.05, 1.1)
        span = getattr(t, "bar_span", None)
        if span is not None:
            (x0, _), (x1, _) = ax.transData.transform([(span[0], 0.0), (span[1], 0.0)])
            too_wide = box.width > abs(x1 - x0)
        else:
            too_wide = False
        if too_wide or any(box.overlaps(k) for k in kept):
            t.set_visible(False)
            hidden += 1
        else:
            kept.append(box)
    return hidden


def _groups(spec: Spec, dev: np.ndarray, depth: np.ndarray) -> tuple[np.ndarray, list[str], np.ndarray, str]:
    """(group per node, group names, device per group: -1 where its nodes are on several,
    what a group is). Layers by name (core/layers.py); where names carry no layers (more
    than MAX_GROUPS of them: `n17`, `Conv_212`), bands of depth per device instead."""
    from partdsl.core.layers import layer_of

    names: dict[str, int] = {}
    of = np.array([names.setdefault(layer_of(nd.name, nd.group), len(names)) for nd in spec.graph.nodes])
    labels, what = list(names), "layers"
    if len(labels) > MAX_GROUPS:
        D = spec.dense.D
        width = max(1, math.ceil((int(depth.max(initial=0)) + 1) * (D + 1) / MAX_GROUPS))
        band = depth.astype(np.int64) // width
        key = band * (D + 1) + np.where(dev < 0, D, dev)
        uniq, of = np.unique(key, return_inverse=True)
        labels = [f"{int(k // (D + 1)) * width}-{int(k // (D + 1)) * width + width - 1}" for k in uniq]
        what = f"bands of {width} depth levels per device"
    G = len(labels)
    lo = np.full(G, np.iinfo(np.int64).max)
    hi = np.full(G, -1)
    np.minimum.at(lo, of, dev)
    np.maximum.at(hi, of, dev)
    return of, labels, np.where(lo == hi, hi, -1), what


def cut_weights(spec: Spec) -> np.ndarray:
    """[m] what each edge would carry if cut: its source's output bytes, or, where the spec
    gives no sizes (dnn-partitioning graphs), its slowest transfer time."""
    d = spec.dense
    per_node = d.out_bytes if d.sized else d.comm.max(axis=1, initial=0.0)
    return np.asarray(per_node, dtype=float)[d.src]


def _edges(ax, xy: np.ndarray, e_src: np.ndarray, e_dst: np.ndarray, cut: np.ndarray,  # type: ignore[no-untyped-def]
           weight: np.ndarray) -> None:
    """Edges gray; cut edges red and dashed, their width and ink by what crosses (bytes,
    or transfer time where sizes are not given), so that many small cuts stay faint."""
    from matplotlib.collections import LineCollection

    top = float(weight[cut].max(initial=0.0))
    share = np.sqrt(weight / top) if top > 0 else np.ones(len(weight))
    plain = ~cut
    ax.add_collection(LineCollection(np.stack([xy[e_src[plain]], xy[e_dst[plain]]], axis=1), colors="#999999",
                                     linestyles="-", linewidths=0.6, zorder=1))
    ink = np.tile([0.769, 0.306, 0.322, 1.0], (int(cut.sum()), 1))
    ink[:, 3] = 0.25 + 0.75 * share[cut]
    ax.add_collection(LineCollection(np.stack([xy[e_src[cut]], xy[e_dst[cut]]], axis=1), colors=ink, linestyles="--",
                                     linewidths=0.4 + 2.6 * share[cut], zorder=1, label="_cut"))


def graph(ax, spec: Spec, dev: np.ndarray, used: Sequence[bool] = ()) -> list:  # type: ignore[no-untyped-def,type-arg]
    """Nodes in layers, colored by device (gray: no single device), cut edges dashed red.
    Above COLLAPSE_NODES nodes, each layer (core/layers.py: `l3_q` -> `l3`, ONNX and torch
    name prefixes, `group`) is one marker sized by its node count, colored by its device,
    gray where it spans several (a stage boundary inside the layer); names without layers
    give bands of depth per device (_groups). `used` (the evaluator's device records):
    devices that ran something, listed in the legend even when they hold only pieces of
    split nodes (drawn gray). Returns the labels, for `declutter` once the figure's layout
    is final."""
    d = spec.dense
    depth = layers(spec).astype(float)
    weight = cut_weights(spec)
    collapsed = d.n > COLLAPSE_NODES
    if collapsed:
        of, labels, gdev, what = _groups(spec, dev, depth)
        G = len(labels)
        count = np.bincount(of, minlength=G)
        x = np.bincount(of, weights=depth, minlength=G) / np.maximum(count, 1)
        src, dst = of[d.src], of[d.dst]
        cut_pairs: dict[tuple[int, int], float] = {}
        for a, b, c, w in zip(src.tolist(), dst.tolist(), (dev[d.src] != dev[d.dst]).tolist(), weight.tolist()):
            if c:
                cut_pairs[(a, b)] = cut_pairs.get((a, b), 0.0) + w
        pairs = {(a, b) for a, b in zip(src.tolist(), dst.tolist()) if a != b}
        edges = sorted(pairs | set(cut_pairs))
        cut = np.array([e in cut_pairs for e in edges], dtype=bool)
        weight = np.array([cut_pairs.get(e, 0.0) for e in edges])
        e_src = np.array([a for a, _ in edges], dtype=np.int64)
        e_dst = np.array([b for _, b in edges], dtype=np.int64)
        where, size = gdev, 20.0 + 180.0 * np.sqrt(count / max(count.max(), 1))
    else:
        G, labels, x = d.n, list(d.names), depth
        e_src, e_dst, cut = d.src, d.dst, dev[d.src] != dev[d.dst]
        where, size = dev, np.full(d.n, max(8.0, 300.0 / math.sqrt(max(d.n, 1))))
    column = np.rint(x).astype(np.int64)
    y = np.zeros(G)
    for k in np.unique(column):
        members = np.flatnonzero(column == k)
        y[members] = np.arange(len(members)) - (len(members) - 1) / 2
    _edges(ax, np.c_[x, y], e_src, e_dst, cut, weight)
    colors = device_colors(spec)
    for j, name in enumerate(d.devices):
        on = np.flatnonzero(where == j)
        if len(on):
            ax.scatter(x[on], y[on], s=size[on], color=colors[j], label=name, zorder=2, edgecolors="black",
                       linewidths=0.3)
        elif j < len(used) and used[j]:
            ax.scatter([], [], color=colors[j], label=f"{name} (pieces of split nodes)", edgecolors="black",
                       linewidths=0.3)
    split = np.flatnonzero(where < 0)
    if len(split):
        ax.scatter(x[split], y[split], s=size[split], color="#bbbbbb", label="several devices", zorder=2,
                   edgecolors="black", linewidths=0.3)
    ax.autoscale_view()
    texts = []
    if G <= 400:  # labels where they fit, in the order of the graph
        texts = [ax.annotate(labels[v], (x[v], y[v]), fontsize=LABEL_PT, ha="center", va="bottom", xytext=(0, 4),
                             textcoords="offset points") for v in range(G)]
    ax.plot([], [], color="#c44e52", ls="--", label="cut edge (width: bytes)" if d.sized
            else "cut edge (width: transfer time)")
    drawn = f", drawn as {G} {what}" if collapsed else ""
    ax.set_title(f"{spec.graph.name}: {d.n} nodes{drawn}, {int((dev[d.src] != dev[d.dst]).sum())} cut edges")
    ax.set_xlabel("layer (longest path from a source; sources just before their first consumer)" if not collapsed
                  else "mean depth of the group's nodes")
    ax.set_yticks([])
    ax.legend(fontsize=LEGEND_PT, loc="upper left", bbox_to_anchor=(1.0, 1.0), ncol=2 if d.D > 20 else 1)
    return texts


def _device_ticks(ax, axis: str, devices: list[str]) -> None:  # type: ignore[no-untyped-def]
    """Device names on an axis: every k-th one when there are more than MANY_DEVICES."""
    step = max(1, math.ceil(len(devices) / MANY_DEVICES))
    at = np.arange(0, len(devices), step)
    if axis == "x":
        turn = 90 if len(at) > 16 else 45 if len(at) > 6 else 0  # upright names need the least room
        ax.set_xticks(at, [devices[i] for i in at], rotation=turn, ha="right" if turn == 45 else "center")
    else:
        ax.set_yticks(at, [devices[i] for i in at])


def loads(ax, spec: Spec, ev: Evaluation, bound: float | None = None) -> None:  # type: ignore[no-untyped-def]
    """Stacked compute / in / out / overflow per device; the bottleneck outlined; the
    proven lower bound on the optimum (`bound`) as a dashed line."""
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
                va="bottom", fontsize=LABEL_PT + 1, xytext=(0, 3), textcoords="offset points")
    if bound is not None and math.isfinite(bound) and bound > 0:
        ax.axhline(bound, color="black", ls="--", lw=1, label=f"lower bound {bound:.4g} {ev.unit}")
    _device_ticks(ax, "x", devices)
    ax.set_ylim(0, float(np.nanmax(np.where(np.isfinite(total), total, 0))) * 1.15 or 1.0)
    ax.set_ylabel(f"load ({ev.unit})")
    ax.set_title(f"per-device load: {spec.objective.entity.label} {ev.objective:.6g} {ev.unit}")
    ax.legend(fontsize=LEGEND_PT, loc="upper left", bbox_to_anchor=(1.0, 1.0))


def _bar_label(ax, start: float, finish: float, row: int, text: str):  # type: ignore[no-untyped-def]
    """A label centred on a Gantt bar; `declutter` hides it if it is wider than the bar."""
    t = ax.text((start + finish) / 2, row, text, ha="center", va="center", fontsize=LABEL_PT, clip_on=True)
    t.bar_span = (float(start), float(finish))
    return t


def gantt(ax, spec: Spec, ev: Evaluation, dev: np.ndarray, sub: np.ndarray | None = None,  # type: ignore[no-untyped-def]
          bound: float | None = None) -> list:  # type: ignore[type-arg]
    """Devices as rows: a DiviML schedule's pieces and transfers, or Tarnawski's latency
    subgraphs (in / compute / out, the transfers gray and hatched) and host nodes, each
    labelled. `bound` (the proven lower bound on the makespan, ms) as a dashed line beside
    the makespan. Returns the piece labels, for
    `declutter` once the figure's layout is final."""
    d = spec.dense
    colors = device_colors(spec)
    texts: list = []  # type: ignore[type-arg]
    if ev.schedule is not None:
        from partdsl.evaluator.schedule_eval import timeline

        start, finish, moves = timeline(spec, ev.schedule)
        for k, p in enumerate(ev.schedule.pieces):
            ax.barh(p.device, finish[k] - start[k], left=start[k], color=colors[p.device], edgecolor="black",
                    linewidth=0.3, height=0.6)
            if len(ev.schedule.pieces) <= 400:
                texts.append(_bar_label(ax, start[k], finish[k], p.device, d.names[p.node]))
        for a, b, t0, t1 in moves:
            ax.annotate("", xy=(t1, b), xytext=(t0, a), arrowprops={"arrowstyle": "->", "color": "#c44e52", "lw": 0.8})
        ax.plot([], [], color="#c44e52", label="transfer")
        end = float(finish.max()) if len(finish) else 0.0
    else:
        from partdsl.evaluator import subgraphs

        u = subgraphs.units(d, dev, sub if sub is not None else subgraphs.resolve(d, dev, None,
                                                                              spec.constraints.subgraphs))
        s = subgraphs.timed(d, dev, u)
        members: list[list[str]] = [[] for _ in range(u.A)]
        for v in d.topo.tolist():
            if u.of_node[v] < u.A:
                members[int(u.of_node[v])].append(d.names[v])
        for a in range(u.A):
            row, t = int(u.device[a]), float(s.start[a])
            for w, color, hatch in ((s.inn[a], TRANSFER, HATCH_IN), (s.compute[a], colors[row], None),
                                    (s.out[a], TRANSFER, HATCH_OUT)):
                ax.barh(row, w, left=t, color=color, edgecolor="black", linewidth=0.3, height=0.6, hatch=hatch)
                t += float(w)
            if u.A <= 400:
                t0 = float(s.start[a]) + float(s.inn[a])
                texts.append(_bar_label(ax, t0, t0 + float(s.compute[a]), row, shown(members[a], 2)))
        for v in range(d.n):
            if d.host[d.dev_class[dev[v]]]:
                k = u.A + v
                ax.barh(int(dev[v]), float(s.finish[k] - s.start[k]), left=float(s.start[k]), color=colors[dev[v]],
                        edgecolor="black", linewidth=0.3, height=0.6)
                if d.n <= 400:
                    texts.append(_bar_label(ax, float(s.start[k]), float(s.finish[k]), int(dev[v]), d.names[v]))
        from matplotlib.patches import Patch

        ax.legend(handles=[Patch(facecolor=TRANSFER, hatch=HATCH_IN, edgecolor="black", label="in (host -> device)"),
                           Patch(facecolor=TRANSFER, hatch=HATCH_OUT, edgecolor="black", label="out (device -> host)")],
                  fontsize=LEGEND_PT, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        end = float(s.value)
    ax.axvline(end, color="black", ls=":", lw=1)
    if bound is not None and math.isfinite(bound) and bound > 0:
        ax.axvline(bound, color="black", ls="--", lw=1, label=f"makespan lower bound {bound:.4g} ms")
        ax.annotate(f"lower bound {bound:.4g} ms", (bound, 0), xycoords=("data", "axes fraction"),
                    fontsize=LEGEND_PT, ha="right", va="bottom", xytext=(-3, 3), textcoords="offset points")
    _device_ticks(ax, "y", list(d.devices))
    ax.set_ylim(d.D - 0.5, -0.5)
    ax.set_xlabel("time (ms)")
    ax.set_title(f"{spec.objective.entity.label}: {ev.objective:.6g} {ev.unit} (makespan {end:.4g} ms)")
    if ev.schedule is not None:
        ax.legend(fontsize=LEGEND_PT, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return texts


def bounds(ax, h) -> None:  # type: ignore[no-untyped-def]  # h: solvers.hierarchy.Hierarchy
    """Each bound of the hierarchy as a fraction of the best solution (Archer Table 1)."""
    names = [n for n, e in h.bounds.items()]
    frac = [h.fraction(n) or 0.0 for n in names]
    x = np.arange(len(names))
    bars = ax.bar(x, frac, color=["#4c72b0" if h.bounds[n].solved else "#8c8c8c" for n in names])
    for b, n, f in zip(bars, names, frac):
        e = h.bounds[n]
        label = "-" if e.value is None else f"{e.value:.4g}"
        ax.text(b.get_x() + b.get_width() / 2, f, label, ha="center", va="bottom", fontsize=LABEL_PT)
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


def answer_figure(spec: Spec, ev: Evaluation, dev: np.ndarray, sub: np.ndarray | None = None,  # type: ignore[no-untyped-def]
                  bound: float | None = None):
    """The graph on top; below it the load bars (max load) or the Gantt chart (latency,
    schedules), with the proven bound when one is given."""
    plt = _pyplot()
    d = spec.dense
    height = 3.2 + min(6.0, 0.25 * min(d.D, MANY_DEVICES))
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(11, 4 + height))
    from partdsl.evaluator.device_record import device_records

    labels = graph(top, spec, dev, [r.used for r in device_records(spec, ev, dev)])
    if spec.objective.kind == "bottleneck":
        loads(bottom, spec, ev, bound)
        pieces: list = []  # type: ignore[type-arg]
    else:
        pieces = gantt(bottom, spec, ev, dev, sub, bound)
    fig.tight_layout()
    declutter(top, labels)  # at the final layout: offsets are in points, positions in data
    declutter(bottom, pieces)
    return fig


def bounds_figure(h):  # type: ignore[no-untyped-def]
    fig, ax = _pyplot().subplots(figsize=(7, 4))
    bounds(ax, h)
    fig.tight_layout()
    return fig

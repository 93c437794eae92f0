"""The reproduction's figures, drawn beside docs/tables.md as PNG: step lines of the best value
over time (DiviML Fig. 7), bars of throughput relative to the DP (Tarnawski Fig. 8), and a
graph coloured by device for each of several splits (Tarnawski Fig. 9), and points of running
time against graph size, a panel per k (Archer Fig. 5)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from repro_common import Figure


def draw(figure: Figure, path: Path) -> str:
    """`figure` as a PNG at `path`; the markdown that shows it (or says why there is none)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "_(matplotlib is not installed: no figure; `pip install matplotlib`)_\n"
    fig = {"steps": steps, "bars": bars, "splits": splits, "scatter": scatter}[figure.kind](plt, figure)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return f"![{figure.caption}](img/{path.name})\n"


def steps(plt: Any, figure: Figure) -> Any:
    """A step line per series of (time, value) points, time on a log axis."""
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for name, points in figure.data["series"].items():
        xs, ys = zip(*points)
        ax.step(xs, ys, where="post", label=name, marker="o", markersize=3)
    ax.set_xscale("log")
    ax.set_xlabel(figure.data["xlabel"])
    ax.set_ylabel(figure.data["ylabel"])
    ax.set_title(figure.caption)
    ax.legend()
    fig.tight_layout()
    return fig


def bars(plt: Any, figure: Figure) -> Any:
    """One panel per group of workloads: a bar per method and workload (ours), the published
    value as a black tick on it, and a line at the reference (1x)."""
    import numpy as np

    panels: dict[str, dict[str, dict[str, tuple[float, float | None]]]] = figure.data["panels"]
    colors = {m: plt.get_cmap("tab10")(i % 10) for i, m in enumerate(figure.data["methods"])}
    fig, axes = plt.subplots(len(panels), 1, figsize=(10, 3.0 * len(panels)), squeeze=False)
    for ax, (title, by_workload) in zip(axes[:, 0], panels.items()):
        workloads = list(by_workload)
        methods = [m for m in colors if any(m in b for b in by_workload.values())]
        width = 0.8 / len(methods)
        for i, m in enumerate(methods):
            x = np.arange(len(workloads)) + (i - (len(methods) - 1) / 2) * width
            ours = [by_workload[w].get(m, (np.nan, None))[0] for w in workloads]
            pub = [by_workload[w].get(m, (np.nan, None))[1] for w in workloads]
            ax.bar(x, ours, width, color=colors[m], label=m)
            ax.scatter(x, [np.nan if p is None else p for p in pub], marker="_", s=120, color="black", zorder=3)
        ax.axhline(1.0, color="#555555", lw=0.8)
        ax.set_xticks(np.arange(len(workloads)), workloads, fontsize=8)
        ax.set_ylabel(figure.data["ylabel"])
        ax.set_title(title, fontsize=10)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in colors.values()]
    labels = list(colors)
    if any(pub is not None for by_workload in panels.values() for b in by_workload.values() for _, pub in b.values()):
        handles.append(plt.Line2D([], [], color="black", marker="_", ls="", markersize=12))
        labels.append("published")  # a substitute (the CNNs of Figures 3 and 5) has none
    axes[0, 0].legend(handles, labels, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.suptitle(figure.caption)
    fig.tight_layout()
    return fig


def splits(plt: Any, figure: Figure) -> Any:
    """The graph (viz.figures.graph) once per split, stacked, each node coloured by its device."""
    import numpy as np
    from partdsl import parse_file
    from partdsl.viz.figures import declutter, graph

    spec = parse_file(figure.data["spec"])
    index = {name: j for j, name in enumerate(spec.dense.devices)}
    panels: list[tuple[str, list[str]]] = figure.data["splits"]
    fig, axes = plt.subplots(len(panels), 1, figsize=(13, 4.8 * len(panels)), squeeze=False)
    labels = []
    for ax, (title, devices) in zip(axes[:, 0], panels):
        labels.append((ax, graph(ax, spec, np.array([index[d] for d in devices]))))
        ax.set_title(f"{title}\n{ax.get_title()}", fontsize=10)
    fig.suptitle(figure.caption)
    fig.tight_layout()
    for ax, texts in labels:
        declutter(ax, texts)
    return fig


def scatter(plt: Any, figure: Figure) -> Any:
    """One panel per key of `panels`, all on one log y axis: a point (x, y) per run of each
    series, in the same colour and marker in every panel, and a dashed line at the time `limit`."""
    panels: dict[str, dict[str, list[tuple[float, float]]]] = figure.data["panels"]
    cols = min(len(panels), 3)
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.4 * rows), sharey=True, squeeze=False)
    for ax, (title, series) in zip(axes.flat, panels.items()):
        for i, (name, points) in enumerate(series.items()):
            if points:
                xs, ys = zip(*points)
                ax.scatter(xs, ys, s=16, color=plt.get_cmap("tab10")(i), marker="osD^v"[i % 5], label=name,
                           alpha=0.7)
        ax.axhline(figure.data["limit"], color="#555555", lw=0.8, ls="--", label="time limit")
        ax.set_yscale("log")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel(figure.data["xlabel"])
    for ax in axes[:, 0]:
        ax.set_ylabel(figure.data["ylabel"])
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    axes[0, 0].legend(fontsize=7, loc="best")
    fig.suptitle(figure.caption)
    fig.tight_layout()
    return fig

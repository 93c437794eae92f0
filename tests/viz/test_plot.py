"""`part plot` and `part bound --plot`: every kind of picture rendered to real files
(PNG, SVG, PDF), checked for format and size, with one element per device, drawn from
the evaluator's numbers."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from partdsl import parse_file, solve
from partdsl.viz import figures
from PIL import Image

from tests.support import EXAMPLES, run_part


def _texts(svg_path) -> list[str]:  # type: ignore[no-untyped-def]
    root = ET.parse(svg_path).getroot()
    assert root.tag.endswith("svg")
    return ["".join(t.itertext()) for t in root.iter() if t.tag.endswith("text")]


@pytest.mark.parametrize("example,kind", [("tiny.part", "loads"), ("latency.part", "gantt"),
                                          ("rwnn_throughput.part", "gantt")])
def test_plot_every_objective_to_png_and_svg(example: str, kind: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    spec = parse_file(EXAMPLES / example)
    png, svg = tmp_path / "a.png", tmp_path / "a.svg"
    p = run_part("plot", str(EXAMPLES / example), "-o", str(png), "--time-limit", "3")
    assert p.returncode == 0 and "wrote" in p.stdout, p.stderr
    with Image.open(png) as im:
        assert im.format == "PNG" and im.width > 800 and im.height > 600
    p = run_part("plot", str(EXAMPLES / example), "-o", str(svg), "--time-limit", "3", "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["file"] == str(svg), p.stderr
    texts = _texts(svg)
    for name in spec.dense.devices:  # every device is named: a bar, a Gantt row or a tick
        assert name in texts, name
    assert any(("per-device load" if kind == "loads" else "makespan") in t for t in texts)


@pytest.mark.slow  # a long solve (conftest.py: the tiers)
def test_figures_have_one_element_per_device() -> None:
    for example in ("tiny.part", "latency.part", "diviml_batched.part"):
        spec = parse_file(EXAMPLES / example)
        r = solve(spec, time_limit=3)
        ev = r.evaluation
        dev = (np.array([spec.dense.devices.index(r.assignment[v]) for v in spec.dense.names])
               if r.assignment is not None else ev.schedule.node_devices(spec.dense.n))
        fig = figures.answer_figure(spec, ev, dev, ev.subgraph)
        top, bottom = fig.axes
        assert [t.get_text() for t in bottom.get_xticklabels() if spec.objective.kind == "bottleneck"] + [
            t.get_text() for t in bottom.get_yticklabels() if spec.objective.kind != "bottleneck"] == list(
            spec.dense.devices)
        legend = [t.get_text() for t in top.get_legend().get_texts()]
        used = {spec.dense.devices[j] for j in dev if j >= 0}
        assert used <= set(legend) and any(t.startswith("cut edge") for t in legend)
        cut = int((dev[spec.dense.src] != dev[spec.dense.dst]).sum())
        assert f"{cut} cut edges" in top.get_title()
        if spec.objective.kind == "bottleneck":  # the stacked bars add up to the evaluator's loads
            heights = np.zeros(spec.dense.D)
            for patch in bottom.patches:
                if patch.get_fill():
                    heights[int(round(patch.get_x() + patch.get_width() / 2))] += patch.get_height()
            assert np.allclose(heights, [ev.loads[d] for d in spec.dense.devices])
        figures._pyplot().close(fig)


def test_plot_a_given_schedule_and_the_bounds(tmp_path) -> None:  # type: ignore[no-untyped-def]
    sched = tmp_path / "s.json"
    assert run_part("solve", str(EXAMPLES / "diviml_batched.part"), "--method", "heft", "-o", str(sched)).returncode == 0
    p = run_part("plot", str(EXAMPLES / "diviml_batched.part"), str(sched), "-o", str(tmp_path / "g.pdf"))
    assert p.returncode == 0 and f"scored {sched}" in p.stdout, p.stderr
    assert (tmp_path / "g.pdf").read_bytes()[:5] == b"%PDF-"
    out = tmp_path / "b.svg"
    p = run_part("bound", str(EXAMPLES / "mtpp_overflow.part"), "--plot", str(out), "--time-limit", "30")
    assert p.returncode == 0, p.stderr
    texts = _texts(out)
    for name in ("simple", "lp", "bottleneck", "bottleneck-guess", "exact"):
        assert name in texts


def test_plot_errors(tmp_path) -> None:  # type: ignore[no-untyped-def]
    p = run_part("plot", str(EXAMPLES / "tiny.part"), "-o", str(tmp_path / "x.gif"))
    assert p.returncode == 2 and "*.png, *.svg or *.pdf" in p.stderr
    p = run_part("plot", str(EXAMPLES / "tiny.part"), "-o", str(tmp_path / "x.png"), without="matplotlib")
    assert p.returncode == 5 and "pip install 'partdsl[plot]'" in p.stderr


def _gpu_chunks(spec) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Contiguous chunks of the topological order, one per GPU (the host gets nothing)."""
    d = spec.dense
    gpus = [j for j, c in enumerate(d.dev_class) if not d.host[c]]
    return np.array(gpus)[np.argsort(np.argsort(d.topo)) * len(gpus) // d.n]


def _markers(ax) -> int:  # type: ignore[no-untyped-def]
    """Node (or group) markers drawn on the graph panel."""
    return sum(len(c.get_offsets()) for c in ax.collections if hasattr(c, "get_sizes") and len(c.get_sizes()))


def _overlaps(ax) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    renderer = ax.figure.canvas.get_renderer()
    shown = [t for t in ax.texts if t.get_visible() and t.get_text()]
    boxes = [t.get_window_extent(renderer) for t in shown]
    return [(shown[i].get_text(), shown[j].get_text()) for i in range(len(shown)) for j in range(i)
            if boxes[i].overlaps(boxes[j])]


@pytest.mark.parametrize("objective", ["bottleneck", "latency"])
def test_a_2000_node_graph_is_drawn_by_layer_with_labels_that_do_not_overlap(objective: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Issue 32, item 2: a generated decoder of 2,103 operators is drawn as its ~150 layers
    (`l17_q` ... `l17_add2` -> `l17`), colored by device, gray where a layer spans two;
    no two labels overlap; the proven bound is drawn on the load bars / the Gantt chart."""
    from partdsl.evaluator.evaluate import evaluate
    from partdsl.generators.decoder_graph import Decoder, decoder_spec

    spec = decoder_spec(Decoder(150), 8, "a100", objective)
    d = spec.dense
    assert d.n > 2000
    dev = _gpu_chunks(spec)
    ev = evaluate(spec, dev)
    fig = figures.answer_figure(spec, ev, dev, ev.subgraph, bound=0.5 * ev.objective)
    top, bottom = fig.axes
    from partdsl.core.layers import layer_of

    groups = {layer_of(nd.name, nd.group) for nd in spec.graph.nodes}
    assert {"embed", "l1", "l150"} <= groups and len(groups) < 160
    assert f"drawn as {len(groups)} layers" in top.get_title()
    drawn = _markers(top)
    assert drawn == len(groups)
    assert not _overlaps(top) and not _overlaps(bottom)
    shown = {t.get_text() for t in top.texts if t.get_visible()}
    assert "embed" in shown and len(shown) >= 10  # labels where they fit, not none
    if objective == "bottleneck":
        assert any("lower bound" in t.get_text() for t in bottom.get_legend().get_texts())
    else:
        assert any("lower bound" in t.get_text() for t in bottom.texts)
    fig.savefig(tmp_path / "big.png")
    figures.save(fig, tmp_path / "big.svg")
    assert shown <= set(_texts(tmp_path / "big.svg"))
    with Image.open(tmp_path / "big.png") as im:
        assert im.format == "PNG"


@pytest.mark.parametrize("objective", ["bottleneck", "latency"])
def test_device_names_do_not_overlap_on_a_64_gpu_platform(objective: str) -> None:
    """Past 40 devices every k-th device name is shown: the load bars' and the Gantt
    chart's device labels stay apart."""
    from partdsl.evaluator.evaluate import evaluate
    from partdsl.generators.decoder_graph import Decoder, decoder_spec

    spec = decoder_spec(Decoder(12), 64, "a100", objective)
    dev = _gpu_chunks(spec)
    ev = evaluate(spec, dev)
    fig = figures.answer_figure(spec, ev, dev, ev.subgraph)
    _, bottom = fig.axes
    renderer = fig.canvas.get_renderer()
    ticks = [t for t in (bottom.get_xticklabels() if objective == "bottleneck" else bottom.get_yticklabels())
             if t.get_visible() and t.get_text()]
    assert 10 <= len(ticks) <= figures.MANY_DEVICES
    boxes = [t.get_window_extent(renderer) for t in ticks]
    assert not [(i, j) for i in range(len(boxes)) for j in range(i) if boxes[i].overlaps(boxes[j])]
    assert not _overlaps(fig.axes[0])
    figures._pyplot().close(fig)


def test_names_without_layers_are_drawn_in_bands_of_depth_per_device() -> None:
    """Found on the ONNX-light DenseNet-121 (1,746 nodes named `n17`, `ConstantOfShape_90`):
    every node was its own 'layer' and the picture was a smear. Nodes whose names carry no
    layers are grouped by depth band and device, at most MAX_GROUPS markers."""
    from dataclasses import replace

    from partdsl.evaluator.evaluate import evaluate
    from partdsl.generators.decoder_graph import Decoder, decoder_spec

    spec = decoder_spec(Decoder(40), 4, "a100", "bottleneck")
    nodes = tuple(replace(nd, name=f"n{i}") for i, nd in enumerate(spec.graph.nodes))
    spec = replace(spec, graph=replace(spec.graph, nodes=nodes))
    d = spec.dense
    assert d.n > figures.COLLAPSE_NODES and d.names[5] == "n5"
    dev = _gpu_chunks(spec)
    fig = figures.answer_figure(spec, evaluate(spec, dev), dev)
    top = fig.axes[0]
    assert "depth levels per device" in top.get_title()
    drawn = _markers(top)
    assert 10 <= drawn <= figures.MAX_GROUPS
    assert not _overlaps(top)
    figures._pyplot().close(fig)


def test_a_gantt_title_names_the_objective_as_the_user_reads_it() -> None:
    """Issue 76: `task_latency` (an internal name) leaked into plot titles."""
    from partdsl import parse

    spec = parse("graph g { node a { work 1 ms } node b { work 2 ms } a -> b }\n"
                 "platform { device gpu[2] { link 1 GB/s } }\nminimize latency by tasks")
    r = solve(spec, method="brute")
    ev = r.evaluation
    fig = figures.answer_figure(spec, ev, ev.schedule.node_devices(spec.dense.n), ev.subgraph)
    titles = [ax.get_title() for ax in fig.axes]
    assert any(t.startswith("latency: ") for t in titles) and not any("task_latency" in t for t in titles)
    figures._pyplot().close(fig)

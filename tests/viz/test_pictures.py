"""The pictures explain the answer (issue 76, item 5), on every bundled example: no text
smaller than LABEL_PT points (labels that do not fit are left out: the legend names the
devices), transfers hatched gray so that no device's colour is mistaken for them, the
proven bound on every Gantt, cut edges drawn wider as they carry more, and every device
that ran something in the legend, pieces of split nodes included."""
from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import LineCollection  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Rectangle  # noqa: E402
from matplotlib.text import Text  # noqa: E402
from partdsl import parse_file, solve  # noqa: E402
from partdsl.cli.common import answer_of  # noqa: E402
from partdsl.evaluator.device_record import device_records  # noqa: E402
from partdsl.viz import figures  # noqa: E402

from tests.support import EXAMPLES  # noqa: E402

FAST = {"bottleneck": None, "latency": "latency_search", "task_latency": "heft", "throughput": "heft"}
EXAMPLE_SPECS = sorted(p.name for p in EXAMPLES.glob("*.part"))


def _figure(example: str):  # type: ignore[no-untyped-def]
    spec = parse_file(EXAMPLES / example)
    r = solve(spec, method=FAST.get(spec.objective.kind), time_limit=3)
    assert r.evaluation is not None, r.stopped
    dev, bound = answer_of(spec, r)
    fig = figures.answer_figure(spec, r.evaluation, dev, r.evaluation.subgraph, bound)
    fig.canvas.draw()
    return spec, r, dev, bound, fig


@pytest.mark.parametrize("example", EXAMPLE_SPECS)
def test_each_picture_is_readable_and_complete(example: str) -> None:
    spec, r, dev, bound, fig = _figure(example)
    top, bottom = fig.axes[:2]
    small = [(t.get_text(), t.get_fontsize()) for t in fig.findobj(Text)
             if t.get_visible() and t.get_text().strip() and t.get_fontsize() < figures.LABEL_PT]
    assert small == []
    legend = [t.get_text() for t in top.get_legend().get_texts()]
    for rec in device_records(spec, r.evaluation, dev):
        if rec.used:  # every device that ran something is in the legend
            assert any(x == rec.device or x.startswith(rec.device + " (") for x in legend), (rec.device, legend)
    if spec.objective.kind != "bottleneck":  # a Gantt: the bound line where a bound is proven
        colors = {tuple(np.round(c, 3)) for c in figures.device_colors(spec)}
        for p in bottom.patches:
            if isinstance(p, Rectangle) and p.get_hatch():
                assert tuple(np.round(p.get_facecolor(), 3)) not in colors
        if bound is not None and math.isfinite(bound) and bound > 0:
            dashed = [ln for ln in bottom.get_lines() if isinstance(ln, Line2D) and ln.get_linestyle() == "--"]
            assert any(np.allclose(ln.get_xdata(), bound) for ln in dashed), (bound, [ln.get_xdata() for ln in dashed])
    matplotlib.pyplot.close(fig)


def test_cut_edges_are_drawn_wider_as_they_carry_more() -> None:
    """rwnn_latency.part's cut edges carry tensors of several sizes: the widths follow
    the bytes (bert24's 50 fans of 4 KB tensors dominated its picture when every cut edge
    was drawn alike)."""
    spec, r, dev, bound, fig = _figure("rwnn_latency.part")
    d = spec.dense
    cuts = [c for c in fig.axes[0].collections if isinstance(c, LineCollection) and c.get_label() == "_cut"]
    assert len(cuts) == 1
    widths = np.asarray(cuts[0].get_linewidths())
    cut = dev[d.src] != dev[d.dst]
    weight = figures.cut_weights(spec)[cut]
    assert len(widths) == int(cut.sum()) > 0 and weight.max() > weight.min()
    assert widths.max() > widths.min()
    assert np.all(np.diff(widths[np.argsort(weight, kind="stable")]) >= -1e-12)  # wider as it carries more
    matplotlib.pyplot.close(fig)

"""Device-level pins as device classes: a reduction for the methods that place work per
class (the segment DP, `topo`, the greedy and local searches).

A pin or forbid that names one device (`pin block[1..12] to gpu[0]`) makes the devices of
a class unlike each other, which a chain split over classes cannot see: it gave each
segment a class and then found no device for two segments that both needed gpu[0]. Here
each class is cut into runs of consecutive devices that allow the same nodes, each run a
class of its own with the same costs, and every device-level target becomes the class of
its run. The devices keep their order and indices, so an answer on the view is an answer
on the spec, scored by the same evaluator; the view is used only when its dense form has
the spec's allowed pairs, times, tensors, memories and links device for device.
Not applied on routed platforms (levels, direct links: their routes name devices) nor
with `replicate` (replicas take devices of one class).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
from partdsl.core.ir import GENERIC, DeviceClass, Node, Spec, Target


def class_view(spec: Spec) -> Spec:
    """`spec` with device-level pins and forbids turned into classes, or `spec` itself."""
    if spec.platform.routed or spec.constraints.replicate != 1 or not spec.pins_devices:
        return spec
    runs = _runs(spec)
    if all(len(r) == 1 for r in runs):
        return spec
    view = _rewrite(spec, runs)
    return view if _equivalent(spec, view) else spec


def _runs(spec: Spec) -> list[list[list[int]]]:
    """Per class, its devices cut where the allowed column changes."""
    d = spec.dense
    out = []
    for ci in range(len(spec.platform.classes)):
        runs: list[list[int]] = []
        for j in np.flatnonzero(d.dev_class == ci).tolist():
            if runs and np.array_equal(d.allowed[:, runs[-1][-1]], d.allowed[:, j]):
                runs[-1].append(j)
            else:
                runs.append([j])
        out.append(runs)
    return out


def _rewrite(spec: Spec, runs: list[list[list[int]]]) -> Spec:
    p, g, c = spec.platform, spec.graph, spec.constraints
    classes: list[DeviceClass] = []
    names: dict[str, list[str]] = {}  # a class's name -> its runs' names
    run_of: dict[str, str] = {}  # a device's name -> its run's class name
    for k, kruns in zip(p.classes, runs):
        for r, devs in enumerate(kruns):
            name = k.name if len(kruns) == 1 else f"{k.name}~{r}"
            classes.append(replace(k, name=name, count=len(devs)))
            names.setdefault(k.name, []).append(name)
            run_of.update({p.devices[j]: name for j in devs})

    def spread(xs: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(y for x in xs for y in names.get(x, [x]))

    def node(nd: Node) -> Node:
        work = tuple(replace(w, on=y) for w in nd.work for y in (names.get(w.on, [w.on]) if w.on != GENERIC else [GENERIC]))
        return replace(nd, work=work, only=spread(nd.only), forbid=spread(nd.forbid))

    def targets(ts: tuple[Target, ...]) -> tuple[Target, ...]:
        return tuple(Target(y) for t in ts for y in ([run_of[t.name]] if t.name in run_of else names.get(t.name, [t.name])))

    platform = replace(p, classes=tuple(classes))
    graph = replace(g, nodes=tuple(node(nd) for nd in g.nodes))
    constraints = replace(c, pins=tuple((n, targets(ts)) for n, ts in c.pins),
                          forbids=tuple((n, targets(ts)) for n, ts in c.forbids))
    return replace(spec, platform=platform, graph=graph, constraints=constraints)


def _equivalent(spec: Spec, view: Spec) -> bool:
    """The view's devices are the spec's: same names in order of index aside, the same
    allowed pairs, times, tensor charges, memories, links and host flags."""
    a, b = spec.dense, view.dense
    if a.D != b.D or a.n != b.n or not np.array_equal(a.allowed, b.allowed):
        return False
    per_device = [(a.work, b.work), (a.comm, b.comm)]
    if not all(np.array_equal(x[:, a.dev_class], y[:, b.dev_class]) for x, y in per_device):
        return False
    return all(np.array_equal(x[a.dev_class], y[b.dev_class])
               for x, y in ((a.memory, b.memory), (a.link, b.link), (a.host, b.host)))

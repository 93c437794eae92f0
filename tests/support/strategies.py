"""Hypothesis strategies: small random specs (DAG + platform + objective + constraints)
that pass validation, and random complete assignments for them."""
from __future__ import annotations

from dataclasses import replace

from hypothesis import assume
from hypothesis import strategies as st
from partdsl.core.assemble import EdgeTensor, assemble_graph
from partdsl.core.errors import PartError
from partdsl.core.ir import (
    Constraints,
    DeviceClass,
    Graph,
    Link,
    Node,
    Objective,
    Platform,
    Server,
    SolveOptions,
    Spec,
    Target,
    Work,
)
from partdsl.core.quantities import Quantity
from partdsl.core.validate import validate

times = st.floats(min_value=0.0, max_value=50.0, allow_nan=False, allow_infinity=False)
sizes = st.one_of(st.just(0.0), st.floats(min_value=1.0, max_value=4e9, allow_nan=False))


def valid(spec: Spec) -> Spec:
    """The spec when it validates; else Hypothesis draws another case."""
    try:
        validate(spec)
    except PartError:
        assume(False)
    return spec


@st.composite
def graphs(draw, max_nodes: int = 7, training: bool | None = None) -> Graph:
    n = draw(st.integers(1, max_nodes))
    names = [f"v{i}" if draw(st.booleans()) else f"L[{i}]" for i in range(n)]
    perm = draw(st.permutations(range(n)))  # node order in the file is not the DAG order
    nodes = []
    train = draw(st.booleans()) if training is None else training
    for i in range(n):
        work = []
        if draw(st.booleans()):
            work.append(Work(draw(times), "acc"))
        work.append(Work(draw(times), "cpu") if draw(st.booleans()) else Work(draw(times)))
        if draw(st.integers(0, 4)) == 0:
            work.append(Work(draw(times), "acc", draw(st.sampled_from([2, 4]))))
        use_comm = draw(st.booleans())
        nodes.append(Node(
            name=names[i], work=tuple(work), params=draw(sizes),
            out=None if use_comm else draw(st.one_of(st.none(), sizes)),
            comm=draw(times) if use_comm else None,
            backward=train and draw(st.booleans()),
            group=draw(st.one_of(st.none(), st.sampled_from(["ga", "gb"]))),
            module=draw(st.one_of(st.none(), st.sampled_from(["model.layers.0.mlp", 'odd "quoted" \\ path']))),
            forbid=("acc",) if draw(st.integers(0, 6)) == 0 else ()))
    edges = set()
    for a in range(n):
        for b in range(a + 1, n):
            if draw(st.integers(0, 2)) == 0:
                edges.add((perm[a], perm[b]))
    senders = sorted({a for a, _ in edges})
    if not senders or draw(st.integers(0, 2)) != 0:
        return Graph("g", tuple(nodes), tuple(sorted(edges)))
    # one sized edge tensor (`a -> {b, c} out 4 MB`): a carrier node, Tarnawski App. B
    a = draw(st.sampled_from(senders))
    to = draw(st.lists(st.sampled_from(sorted(b for x, b in edges if x == a)), min_size=1, unique=True))
    size = draw(times) if draw(st.booleans()) else None
    tensor = EdgeTensor(names[a], tuple(names[b] for b in to), None if size is not None else draw(sizes), size)
    return assemble_graph("g", nodes, [(names[x], None, names[y], None) for x, y in sorted(edges)], None, [tensor])


@st.composite
def specs(draw, max_nodes: int = 7, kinds: tuple[str, ...] = ("bottleneck", "latency", "task_latency", "throughput"),
          max_devices: int = 4) -> Spec:
    g = draw(graphs(max_nodes))
    if draw(st.integers(0, 3)) == 0:  # where its times were measured (`measured "..."`)
        g = replace(g, measured=draw(st.sampled_from(["by part profile on cpu", 'a "quoted" \\ note'])))
    n_acc = draw(st.integers(1, max(1, max_devices - 1)))
    n_cpu = draw(st.integers(0, max(0, max_devices - n_acc)))
    acc = DeviceClass("acc", n_acc, memory=draw(st.one_of(st.none(), st.floats(1e9, 1e10))),
                      link=draw(st.floats(1e9, 50e9)), speed=draw(st.sampled_from([1.0, 2.0, 0.5])),
                      batches=draw(st.sampled_from([(), (1, 2), (1, 4)])))
    classes = [acc]
    if n_cpu or not any(nd.work for nd in g.nodes):
        classes.append(DeviceClass("cpu", max(n_cpu, 1), host=True))
    else:
        classes.append(DeviceClass("cpu", 1, host=True))
    kind = draw(st.sampled_from(kinds))
    # declared links (every objective models them; tests/strategies.on_levels draws them for the others)
    links = (Link("acc[0]", "acc", draw(st.floats(1e9, 1e11))),) if kind in ("task_latency", "throughput") and \
        draw(st.booleans()) else ()
    if kind == "bottleneck":
        training = draw(st.sampled_from([None, "pipedream", "gpipe"])) if g.is_training else None
        obj = Objective("bottleneck", training, draw(st.sampled_from([None, "simplex", "duplex"])))
    elif kind in ("latency", "task_latency"):
        obj = Objective(kind)
    else:
        batch = draw(st.integers(1, 5))
        obj = Objective("throughput", batch=batch, split=draw(st.sampled_from([k for k in (1, 2, 4) if batch % k == 0])))
    names = [nd.name for nd in g.nodes if nd.tensor_of is None]  # carriers ride with their sources
    pins = ()
    if draw(st.integers(0, 3)) == 0:
        to = draw(st.sampled_from(["cpu", f"acc[{n_acc - 1}]"]))  # a class, or one device (methods/class_view.py)
        pins = ((Target(draw(st.sampled_from(names))), (Target(to),)),)
    forbids = ()
    if draw(st.integers(0, 3)) == 0:
        forbids = ((Target(draw(st.sampled_from(names))), (Target("acc[0]"),)),)
    sets = ()
    if len(names) >= 2 and draw(st.integers(0, 3)) == 0:
        sets = ((Target(names[0]), Target(names[-1])),)
    cons = Constraints(acyclic=draw(st.booleans()), contiguous=draw(st.booleans()),
                       memory=draw(st.sampled_from(["hard", "overflow", "ignore"])),
                       colocate=draw(st.booleans()), colocate_sets=sets, pins=pins, forbids=forbids,
                       max_stages=draw(st.one_of(st.none(), st.integers(1, 4))),
                       replicate=draw(st.sampled_from([1, 1, 1, 2, 3])) if kind == "bottleneck" else 1)
    method, options = draw(st.sampled_from([(None, ()), ("topo", ()),
                                            ("brkga", (("population", 12.0), ("generations", 3.0)))]))
    solve = SolveOptions(method=method,
                         time_limit=draw(st.one_of(st.none(), st.floats(0.01, 1e4))),
                         gap=draw(st.one_of(st.none(), st.floats(0, 0.5))),
                         seed=draw(st.one_of(st.none(), st.integers(0, 99))),
                         options=options)
    params = (("k", Quantity(float(n_acc), "number")), ("note", "hello \"quoted\""),
              ("mem", Quantity(draw(st.floats(1.0, 1e12)), "size")))
    return valid(Spec(g, Platform(tuple(classes), links), obj, cons, solve, params))


@st.composite
def assignments(draw, spec: Spec) -> list[int]:
    """A device per node; a tensor carrier on its source's (assignments leave carriers out)."""
    D = len(spec.platform.devices)
    out = [draw(st.integers(0, D - 1)) for _ in spec.graph.nodes]
    for i, src in spec.graph.carriers:
        out[i] = out[src]
    return out


@st.composite
def mtpp_specs(draw, max_nodes: int = 6, max_k: int = 3) -> Spec:
    """MTPP instances (Archer sec. 2): identical stages, `acyclic`, memory hard/ignore/overflow."""
    n = draw(st.integers(1, max_nodes))
    nodes = tuple(Node(f"v{i}", (Work(draw(st.floats(0, 20))),), params=draw(st.sampled_from([0.0, 1e9, 3e9])),
                       out=draw(st.sampled_from([None, 1e6, 5e7])),
                       comm=draw(st.one_of(st.none(), st.floats(0, 5))),
                       group=draw(st.one_of(st.none(), st.just("g"))))
                  for i in range(n))
    edges = tuple(sorted({(a, b) for a in range(n) for b in range(a + 1, n) if draw(st.integers(0, 2)) == 0}))
    k = draw(st.integers(1, max_k))
    memory = draw(st.sampled_from([None, 4e9, 6e9]))
    spec = Spec(Graph("g", nodes, edges), Platform((DeviceClass("stage", k, memory=memory, link=1e10),)),
                Objective("bottleneck"), Constraints(acyclic=True, contiguous=draw(st.booleans()),
                                                     memory=draw(st.sampled_from(["hard", "ignore", "overflow"])),
                                                     colocate=draw(st.booleans())))
    return valid(spec)


@st.composite
def on_levels(draw, spec: Spec) -> Spec:  # type: ignore[no-untyped-def]
    """`spec` on random routes (evaluator/levels.py): server levels (servers of one or two
    instances, maybe in a rack, each class in a server or not, random fabrics) and/or a
    direct link from acc[0] to the other accelerators; tensors given as times (`comm`)
    become sizes (a time is not allowed where the route decides it)."""
    nodes = tuple(replace(nd, comm=None, out=nd.out or (nd.comm or 0.0) * 1e6) for nd in spec.graph.nodes)
    m = draw(st.sampled_from([1, 2]))
    rack = draw(st.booleans())
    fabric = st.one_of(st.none(), st.floats(1e8, 1e11))
    servers = ((Server("rack", 1, draw(fabric)),) if rack else ()) + \
        (Server("node", m, draw(fabric), "rack" if rack else None),)
    classes = tuple(replace(k, server="node" if k.count % m == 0 and draw(st.booleans()) else None)
                    for k in spec.platform.classes)
    top = draw(fabric)
    if not draw(st.integers(0, 3)):  # no levels: direct links alone
        classes, servers, top = tuple(replace(k, server=None) for k in classes), (), None
    links = spec.platform.links or ((Link("acc[0]", "acc", draw(st.floats(1e8, 1e11)), draw(st.booleans())),)
                                    if draw(st.booleans()) else ())
    assume(any(k.server for k in classes) or top is not None or links)
    out = replace(spec, graph=replace(spec.graph, nodes=nodes),
                  platform=Platform(classes, links, None, spec.platform.empty, servers, top),
                  solve=replace(spec.solve, method=None))
    return valid(out)


def dp_replicas(spec: Spec) -> Spec:
    """The spec, without replicas where the DP over ideals does not take them (PipeDream's
    load only, no stage limit: registry.PLAIN_REPLICAS in the rows of topo and dp, ideal_dp.chain_split)."""
    c, o = spec.constraints, spec.objective
    if c.replicate > 1 and (o.overlap is not None or o.training == "gpipe" or c.max_stages is not None):
        return replace(spec, constraints=replace(c, replicate=1))
    return spec


def tight_memory(spec: Spec, fraction: float, mode: str) -> Spec:
    """`spec` with peak activations in memory, every class's memory at `fraction` of all
    its parameters and tensors (+ 1 byte), under memory `mode` (hard or overflow)."""
    d = spec.dense
    cap = float(d.params.sum() + d.out_bytes.sum()) * fraction + 1.0
    classes = tuple(replace(k, memory=cap) for k in spec.platform.classes)
    return replace(spec, platform=replace(spec.platform, classes=classes),
                   constraints=replace(spec.constraints, activations=True, memory=mode))

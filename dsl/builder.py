"""Build the same IR from Python, without text.

Numbers are canonical units (ms, bytes, B/s); strings carry their unit and are
dimension-checked ("1.2 ms", "16 GiB", "12 GB/s"). `build()` validates exactly like the
parser does, so a builder spec and its `.part` text give equal IRs.

    g = GraphBuilder("tiny")
    g.node("embed", work={"gpu": 1.2, "cpu": 9.0}, params="80 MB", out="2 MB")
    g.family("block", 1, 12, work={"gpu": 3.0}, params="28 MB", out="2 MB")
    g.node("head", work={"gpu": 0.5}, out="4 KB", only=["gpu"])
    g.chain("embed", *g.members("block"), "head")
    spec = (SpecBuilder(g.build())
            .device("gpu", 4, memory="16 GiB", link="12 GB/s").device("cpu", 1, host=True)
            .minimize("bottleneck").subject_to(contiguous=True).build())
"""
from __future__ import annotations

from typing import Iterable, Mapping

from partdsl.core.assemble import EdgeTensor, assemble_graph
from partdsl.core.errors import PartError
from partdsl.core.ir import (
    Constraints,
    DeviceClass,
    Graph,
    Link,
    Node,
    Objective,
    Server,
    SolveOptions,
    Spec,
    Target,
    Work,
)
from partdsl.core.quantities import BANDWIDTH, SIZE, TIME
from partdsl.core.validate import validate

Amount = float | int | str


def _value(x: Amount | None, dim: str, what: str) -> float | None:
    if x is None:
        return None
    if isinstance(x, (int, float)):
        return float(x)
    from partdsl.dsl.parser import parse_override

    q = parse_override(what, x)
    if isinstance(q, str) or q.dim != dim:
        raise PartError(f"{what}: expected a {dim}, got '{x}'", None, "e.g. '3 ms', '16 GiB', '12 GB/s'")
    return q.value


class GraphBuilder:
    def __init__(self, name: str, measured: str = "") -> None:
        """`measured`: where the nodes' given times were measured (device, tool, date)."""
        self.name, self.measured = name, measured
        self._nodes: list[Node] = []
        self._edges: list[tuple[str, None, str, None]] = []
        self._tensors: list[EdgeTensor] = []
        self._families: dict[str, list[str]] = {}

    def node(self, name: str, work: Mapping[str, Amount] | Amount | None = None, *,
             params: Amount = 0.0, out: Amount | None = None, comm: Amount | None = None,
             backward: bool = False, group: str | None = None, only: Iterable[str] = (),
             forbid: Iterable[str] = (), batch_work: Mapping[tuple[str, int], Amount] | None = None,
             flops: float | None = None, dtype: str | None = None, module: str | None = None,
             stash: Amount = 0.0, shares: Mapping[str, Amount] | None = None,
             rows: float | None = None) -> "GraphBuilder":
        """`work` maps a device class to its time (or is one generic time for every class,
        scaled by speed); `batch_work` maps (class, batch size) to a time (DiviML); `flops`
        per sample (and `dtype`) give the work on classes with a device profile; `module` is
        its module path in the model (`model.layers.3.mlp`); `stash` the bytes it keeps from
        its forward pass until its backward pass, per micro-batch in flight; `shares` the
        weights it reads that other nodes read too (name: size), held once per device; `rows`
        the rows of its matrix product per sample (its tokens), for the cost model's efficiency."""
        if isinstance(work, Mapping):
            items = [Work(_value(t, TIME, "work"), on) for on, t in work.items()]
        elif work is not None:
            items = [Work(_value(work, TIME, "work"))]
        else:
            items = []
        for (on, b), t in (batch_work or {}).items():
            items.append(Work(_value(t, TIME, "work"), on, int(b)))
        self._nodes.append(Node(name, tuple(items), _value(params, SIZE, "params") or 0.0,
                                _value(out, SIZE, "out"), _value(comm, TIME, "comm"), backward,
                                group, tuple(only), tuple(forbid),
                                None if flops is None else float(flops), dtype, module,
                                stash=_value(stash, SIZE, "stash") or 0.0,
                                shares=tuple((w, _value(b, SIZE, "shares") or 0.0) for w, b in (shares or {}).items()),
                                rows=None if rows is None else float(rows)))
        return self

    def family(self, name: str, first: int, last: int, **props: object) -> "GraphBuilder":
        """Nodes name[first] .. name[last] with the same properties."""
        members = [f"{name}[{i}]" for i in range(first, last + 1)]
        self._families[name] = members
        for m in members:
            self.node(m, **props)  # type: ignore[arg-type]
        return self

    def members(self, family: str) -> list[str]:
        return list(self._families[family])

    def edge(self, a: str, b: str, *, out: Amount | None = None, comm: Amount | None = None) -> "GraphBuilder":
        """a -> b; with `out` (or `comm`), the edge carries a tensor of its own (`a -> b out 4 MB`)."""
        if out is not None or comm is not None:
            return self.tensor(a, [b], out=out, comm=comm)
        self._edges.append((a, None, b, None))
        return self

    def tensor(self, source: str, targets: Iterable[str], *, out: Amount | None = None,
               comm: Amount | None = None) -> "GraphBuilder":
        """One tensor of its own that `source` sends to every target (`a -> {b, c} out 4 MB`):
        paid once per receiving device, instead of `source`'s `out` on those edges."""
        if (out is None) == (comm is None):
            raise PartError(f"tensor of {source}: give exactly one of out (a size) and comm (a time)", None,
                            "e.g. g.tensor('a', ['b', 'c'], out='4 MB')")
        targets = tuple(targets)
        self._edges += [(source, None, b, None) for b in targets]
        self._tensors.append(EdgeTensor(source, targets, _value(out, SIZE, "out"), _value(comm, TIME, "comm")))
        return self

    def chain(self, *names: str) -> "GraphBuilder":
        for a, b in zip(names, names[1:]):
            self.edge(a, b)
        return self

    def build(self) -> Graph:
        return assemble_graph(self.name, list(self._nodes), list(self._edges), None, list(self._tensors),
                              self.measured)


class SpecBuilder:
    def __init__(self, graph: Graph | GraphBuilder) -> None:
        self.graph = graph.build() if isinstance(graph, GraphBuilder) else graph
        self._classes: list[DeviceClass] = []
        self._links: list[Link] = []
        self._servers: list[Server] = []
        self._fabric: float | None = None
        self._objective = Objective()
        self._constraints = Constraints()
        self._solve = SolveOptions()
        self._params: tuple = ()

    def device(self, name: str, count: int = 1, *, memory: Amount | None = None,
               link: Amount | None = None, host: bool = False, speed: float = 1.0,
               batches: Iterable[int] = (), profile: str | None = None,
               profile_fields: Mapping[str, float] | None = None, server: str | None = None) -> "SpecBuilder":
        """`profile` names a device profile of the cost model (`profile_fields` override its
        fields, in FLOP/s, B/s, seconds). `server`: the server level it is in (see `server`);
        `count` is then per server, as written in `server node[2] { device gpu[4] }`."""
        from partdsl.importers.cost_model import FIELDS, names

        if profile is not None and profile not in names():
            raise PartError(f"unknown device profile '{profile}'", None, "profiles: " + ", ".join(names()))
        bad = sorted(set(profile_fields or {}) - set(FIELDS))
        if bad:
            raise PartError(f"unknown profile field '{bad[0]}'", None, "fields: " + ", ".join(FIELDS))
        fields = tuple(("peak_flops" if k == "peak" else k, float(v)) for k, v in (profile_fields or {}).items())
        self._classes.append(DeviceClass(name, int(count), _value(memory, SIZE, "memory"),
                                         _value(link, BANDWIDTH, "link"), host, float(speed),
                                         tuple(sorted(set(int(b) for b in batches))), profile, fields,
                                         server=server))
        return self

    def server(self, name: str, count: int = 1, *, link: Amount | None = None,
               within: str | None = None) -> "SpecBuilder":
        """A level of servers (`server name[count] { ...; link 10 GB/s }`), inside the level
        `within` if given; `link` is its fabric (evaluator/levels.py)."""
        self._servers.append(Server(name, int(count), _value(link, BANDWIDTH, "link"), within))
        return self

    def fabric(self, bandwidth: Amount) -> "SpecBuilder":
        """The platform's own fabric, between its top-level servers (`link 1 GB/s` in `platform`)."""
        self._fabric = _value(bandwidth, BANDWIDTH, "link")
        return self

    def link(self, a: str, b: str, bandwidth: Amount, directed: bool = False) -> "SpecBuilder":
        self._links.append(Link(a, b, _value(bandwidth, BANDWIDTH, "link") or 0.0, directed))
        return self

    def minimize(self, kind: str = "bottleneck", *, training: str | None = None,
                 overlap: str | None = None) -> "SpecBuilder":
        if kind not in ("bottleneck", "latency"):
            raise PartError(f"cannot minimize '{kind}'", None, "minimize bottleneck or latency; "
                            "use maximize('throughput', batch=...) for batched throughput")
        self._objective = Objective(kind, training, overlap)
        return self

    def maximize(self, kind: str = "throughput", *, batch: int = 1) -> "SpecBuilder":
        if kind != "throughput":
            raise PartError(f"cannot maximize '{kind}'", None, "maximize('throughput', batch=128)")
        self._objective = Objective("throughput", batch=int(batch))
        return self

    def subject_to(self, *, acyclic: bool = False, contiguous: bool = False, memory: str = "hard",
                   colocate: bool = False, colocate_sets: Iterable[Iterable[str]] = (),
                   pins: Mapping[str, Iterable[str]] | None = None,
                   forbids: Mapping[str, Iterable[str]] | None = None,
                   max_stages: int | None = None, subgraphs: int = 1, replicate: int = 1,
                   activations: bool = False, interleave: int = 1) -> "SpecBuilder":
        def tg(xs: Iterable[str]) -> tuple[Target, ...]:
            return tuple(Target(x) for x in xs)

        self._constraints = Constraints(
            acyclic, contiguous, memory, colocate, tuple(tg(s) for s in colocate_sets),
            tuple((Target(k), tg(v)) for k, v in (pins or {}).items()),
            tuple((Target(k), tg(v)) for k, v in (forbids or {}).items()), max_stages, subgraphs, replicate,
            activations, interleave)
        return self

    def solve_with(self, method: str | None = None, solver: str | None = None, *,
                   time_limit: float | None = None, gap: float | None = None,
                   seed: int | None = None, threads: int | None = None) -> "SpecBuilder":
        self._solve = SolveOptions(method, solver, time_limit, gap, seed, threads)
        return self

    def build(self) -> Spec:
        from partdsl.dsl.platform_tree import platform as levels
        from partdsl.importers.cost_model import apply

        flat = levels(self._classes, tuple(self._links), None, self._servers, self._fabric)
        graph, platform = apply(self.graph, flat, self._objective)
        spec = Spec(graph, platform, self._objective, self._constraints, self._solve, self._params)
        validate(spec)
        return spec

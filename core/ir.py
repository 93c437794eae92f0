"""The typed, immutable IR: the only contract between the front end and everything else.

It knows nothing of Lark or Pyomo. Times are in ms, sizes in bytes, bandwidths in B/s
(core/quantities.py). Source spans ride along for error messages but never take part in
equality, so a spec parsed from text equals the same spec built in Python.
The NumPy view used by the evaluator and kernels is `core.dense.Dense` (built once,
cached on the Spec).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING

from partdsl.core import objectives
from partdsl.core.errors import Span
from partdsl.core.quantities import Quantity

if TYPE_CHECKING:  # pragma: no cover
    from partdsl.core.dense import Dense

GENERIC = ""  # work entry that applies to every device class (scaled by the class speed)


@dataclass(frozen=True)
class Work:
    """Processing time of a node: on one device class (or all, GENERIC) at one batch size."""

    time: float
    on: str = GENERIC
    batch: int = 1


@dataclass(frozen=True)
class Node:
    """One operator/layer. `out` is the output tensor size (bytes); `comm` is its transfer
    time to/from host memory (ms), which overrides out/link when given (Tarnawski sec. 3).

    A node with `tensor_of` set is a tensor carrier, not an operator: a tensor of its own
    size that node `tensor_of` sends to some consumers (`a -> {b, c} out 4 MB`), instead of
    `tensor_of`'s `out`. It has no work, no parameters, and is colocated with `tensor_of`,
    so it is paid once per receiving device exactly like a node's output (Tarnawski
    App. B, non-uniform outgoing communication costs: the edges are subdivided)."""

    name: str
    work: tuple[Work, ...] = ()
    params: float = 0.0
    out: float | None = None
    comm: float | None = None
    backward: bool = False
    group: str | None = None
    only: tuple[str, ...] = ()
    forbid: tuple[str, ...] = ()
    flops: float | None = None  # per sample: with a device profile, the cost model gives its work (importers/cost_model.py)
    dtype: str | None = None  # of its arithmetic, for the profile's peak (fp32 when None)
    module: str | None = None  # its module path in the model (`model.layers.3.mlp`): imports keep it for plans
    tensor_of: str | None = None  # a tensor carrier: the node that sends it (see above)
    stash: float = 0.0  # bytes kept from its forward pass until its backward pass, per micro-batch in flight
    shares: tuple[tuple[str, float], ...] = ()  # (name, bytes) of weights other nodes read too: once per device
    rows: float | None = None  # per sample: the rows of its GEMM (tokens), for the cost model's shape (issue 72)
    span: Span | None = field(default=None, compare=False, repr=False)

    @property
    def weights(self) -> float:
        """The bytes of weights it reads: its own parameters and the weights it shares."""
        return self.params + sum(b for _, b in self.shares)


@dataclass(frozen=True)
class Graph:
    name: str
    nodes: tuple[Node, ...]
    edges: tuple[tuple[int, int], ...]  # sorted, unique, indices into nodes
    span: Span | None = field(default=None, compare=False, repr=False)
    edge_spans: tuple[Span | None, ...] = field(default=(), compare=False, repr=False)
    written: tuple[int, ...] = field(default=(), compare=False, repr=False)  # edges in the order written (indices)
    measured: str = ""  # where its given times were measured (`graph g measured "..." {`); "": not said

    @property
    def written_order(self) -> tuple[int, ...]:
        """Edge indices in the order the source wrote them (sorted when not known): the
        order the paper's latency greedy visits successors in."""
        return self.written if len(self.written) == len(self.edges) else tuple(range(len(self.edges)))

    @cached_property
    def index(self) -> dict[str, int]:
        return {nd.name: i for i, nd in enumerate(self.nodes)}

    @property
    def is_training(self) -> bool:
        return any(nd.backward for nd in self.nodes)

    def written_edges(self) -> tuple[list[tuple[int, int]], list[tuple[Node, list[str]]]]:
        """The graph as the language writes it: the edges between operators, and each tensor
        carrier with the names of its targets (`a -> {b, c} out 4 MB`), in carrier order."""
        plain, targets = [], {}
        for a, b in self.edges:
            if self.nodes[a].tensor_of is not None:
                targets.setdefault(a, []).append(self.nodes[b].name)
            elif self.nodes[b].tensor_of is None:
                plain.append((a, b))
        return plain, [(self.nodes[i], targets.get(i, [])) for i, _ in self.carriers]

    @cached_property
    def carriers(self) -> tuple[tuple[int, int], ...]:
        """(carrier, its source) index pairs of the tensor carriers (Node.tensor_of)."""
        return tuple((i, self.index[nd.tensor_of]) for i, nd in enumerate(self.nodes)
                     if nd.tensor_of is not None and nd.tensor_of in self.index)


@dataclass(frozen=True)
class DeviceClass:
    """`count` identical devices named name[0] .. name[count-1]. A host device reads and
    writes host memory for free (Tarnawski's CPUs); `link` is its bandwidth to host memory."""

    name: str
    count: int = 1
    memory: float | None = None
    link: float | None = None
    host: bool = False
    speed: float = 1.0
    batches: tuple[int, ...] = ()
    profile: str | None = None  # a device profile of the cost model (importers/device_profiles.json)
    profile_fields: tuple[tuple[str, float], ...] = ()  # its fields overridden, in canonical units
    span: Span | None = field(default=None, compare=False, repr=False)
    server: str | None = None  # the innermost server level it is declared in; `count` is then the total


@dataclass(frozen=True)
class Server:
    """A level of a hierarchical platform (Tarnawski App. C.3, PipeDream's levels): `count`
    identical servers, each holding the device classes and servers declared inside it.
    `link` is the bandwidth of the fabric between its children (B/s); a transfer pays the
    slowest fabric it crosses (evaluator/levels.py). `parent`: the enclosing level, or None."""

    name: str
    count: int = 1
    link: float | None = None
    parent: str | None = None
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Link:
    """A direct link between two devices or device classes (DiviML's beta(h, k)), B/s."""

    a: str
    b: str
    bandwidth: float
    directed: bool = False
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Platform:
    """The device classes with at least one device (`classes`: all that kernels, models and
    the evaluator see) and those declared with none (`empty`, e.g. `device cpu[l]` with
    l = 0: a platform without CPUs, or a sweep point). An empty class's name stays known,
    so work given for it is accepted and unused."""

    classes: tuple[DeviceClass, ...]
    links: tuple[Link, ...] = ()
    span: Span | None = field(default=None, compare=False, repr=False)
    empty: tuple[DeviceClass, ...] = ()
    servers: tuple[Server, ...] = ()  # the levels of a hierarchical platform, outermost first
    link: float | None = None  # the fabric between the top-level servers and devices (B/s)

    @staticmethod
    def of(declared: tuple[DeviceClass, ...] | list[DeviceClass], links: tuple[Link, ...] = (),
           span: Span | None = None, servers: tuple[Server, ...] = (), link: float | None = None) -> "Platform":
        """A platform from declared classes, those with count 0 set apart as `empty`."""
        return Platform(tuple(k for k in declared if k.count != 0), tuple(links), span,
                        tuple(k for k in declared if k.count == 0), tuple(servers), link)

    @property
    def hierarchical(self) -> bool:
        """Servers or a platform fabric are declared: transfers pay the levels they cross."""
        return bool(self.servers) or self.link is not None

    @property
    def routed(self) -> bool:
        """A transfer's cost depends on its pair of devices: levels, or direct links (evaluator/levels.py)."""
        return self.hierarchical or bool(self.links)

    @property
    def routes_span(self) -> Span | None:
        """Where the routes are declared: the first server, else the first direct link, else the platform."""
        return self.servers[0].span if self.servers else self.links[0].span if self.links else self.span

    @cached_property
    def server_index(self) -> dict[str, Server]:
        return {s.name: s for s in self.servers}

    def chain(self, server: str | None) -> list[Server]:
        """The levels enclosing `server`, innermost first (itself included)."""
        out: list[Server] = []
        while server is not None:
            s = self.server_index[server]
            out.append(s)
            server = s.parent
        return out

    def per_server(self, k: DeviceClass) -> int:
        """The devices of class k in each instance of its innermost server (its count as written)."""
        return k.count // max(1, math.prod(s.count for s in self.chain(k.server)))

    @cached_property
    def empty_names(self) -> frozenset[str]:
        return frozenset(k.name for k in self.empty)

    @cached_property
    def devices(self) -> tuple[str, ...]:
        return tuple(f"{c.name}[{i}]" for c in self.classes for i in range(c.count))

    @cached_property
    def device_class(self) -> tuple[int, ...]:
        return tuple(ci for ci, c in enumerate(self.classes) for _ in range(c.count))

    @cached_property
    def class_index(self) -> dict[str, int]:
        return {c.name: i for i, c in enumerate(self.classes)}


OBJECTIVES, SCHEDULED = objectives.NAMES, objectives.SCHEDULED  # core/objectives.py


@dataclass(frozen=True)
class Objective:
    """bottleneck: pipelined max load (Archer MTPP / Tarnawski max-load), with optional
    training form (pipedream: max FW+BW; gpipe: max FW + max BW) and overlap of transfers
    with compute (Tarnawski App. C.1: simplex = max(compute, comm), duplex = max(in,
    compute, out)). latency (`minimize latency`, or `by subgraphs`): single stream, each
    accelerator runs its subgraphs as invocations (Tarnawski sec. 4). task_latency
    (`minimize latency by tasks`): single stream, each device runs its tasks one at a
    time in the schedule's order (DiviML sec. III-IV, L = 1). throughput: a batch of
    `batch` inputs, each node's samples split over devices in pieces of whole multiples
    of batch / `split` (DiviML sec. III; the paper splits in quarters), maximized."""

    kind: str = "bottleneck"
    training: str | None = None
    overlap: str | None = None
    batch: int = 1
    split: int = 1
    span: Span | None = field(default=None, compare=False, repr=False)

    @property
    def entity(self) -> objectives.Kind:
        """The kind's sense, unit, title, ... (core/objectives.py)."""
        return objectives.kind(self.kind)

    @property
    def scheduled(self) -> bool:
        """Scored on a schedule of pieces with start times (core/schedule.py)."""
        return self.entity.scheduled

    @property
    def sense(self) -> str:
        return self.entity.sense

    @property
    def unit(self) -> str:
        return self.entity.unit


@dataclass(frozen=True)
class Target:
    """Where a pin/forbid points: one device ('gpu[0]') or a whole class ('gpu')."""

    name: str
    span: Span | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Constraints:
    acyclic: bool = False
    contiguous: bool = False
    memory: str = "hard"  # hard | overflow (Archer eq. 2) | ignore
    colocate: bool = False  # nodes of the same `group` share a device
    colocate_sets: tuple[tuple[Target, ...], ...] = ()  # each a set of node names
    pins: tuple[tuple[Target, tuple[Target, ...]], ...] = ()  # node -> allowed devices/classes
    forbids: tuple[tuple[Target, tuple[Target, ...]], ...] = ()  # node -> excluded devices/classes
    max_stages: int | None = None
    subgraphs: int = 1  # q: contiguous subgraphs per accelerator under latency (Tarnawski sec. 4.1, Fig. 4)
    replicate: int = 1  # r: a stage may run data parallel on up to r devices of its class (Tarnawski App. C.2)
    activations: bool = False  # memory = parameters + the block's peak live activations (Archer eq. 2)
    interleave: int = 1  # V: the pipeline's chunks come round robin, V per device (Narayanan et al. 2021, sec. 2.2)
    # where each constraint was written (field name -> span of its first occurrence), for errors
    spans: tuple[tuple[str, Span], ...] = field(default=(), compare=False, repr=False)

    def span_of(self, name: str) -> Span | None:
        return next((s for k, s in self.spans if k == name), None)


@dataclass(frozen=True)
class SolveOptions:
    method: str | None = None
    solver: str | None = None
    time_limit: float | None = None  # seconds
    gap: float | None = None  # fraction
    seed: int | None = None
    threads: int | None = None
    options: tuple[tuple[str, float], ...] = ()  # the method's own options (population, ...)

    def merged(self, **overrides: object) -> "SolveOptions":
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})


@dataclass(frozen=True)
class Spec:
    graph: Graph
    platform: Platform
    objective: Objective = Objective()
    constraints: Constraints = Constraints()
    solve: SolveOptions = SolveOptions()
    params: tuple[tuple[str, Quantity | str], ...] = ()
    file: str = field(default="<spec>", compare=False, repr=False)

    @cached_property
    def dense(self) -> "Dense":
        from partdsl.core.dense import Dense

        return Dense.build(self)

    @property
    def pins_devices(self) -> bool:
        """A pin or forbid names a single device, not a whole class."""
        c, devices = self.constraints, set(self.platform.devices)
        return any(t.name in devices for _, ts in c.pins + c.forbids for t in ts)

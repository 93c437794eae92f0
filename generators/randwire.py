"""Randomly wired networks (RWNNs) as DiviML evaluates them (Ghannane & Abdelfattah sec. V,
after Xie et al.'s RandWire): modules drawn from a classic random graph (Erdos-Renyi ER(P),
Watts-Strogatz WS(K, P), Barabasi-Albert BA(M), networkx's generators), each edge
oriented from the lower to the higher node index (RandWire's rule), chained into a
multi-module network between a stem and a head.

Consecutive modules talk through `channels` edges, output O_t of one module to input I_t
of the next (Fig. 2):
- `sdep` (strongly dependent): the inputs are sources of the module and the outputs
  sinks (the first node always an input, the last always an output), and every other
  source hangs off an input, every other sink feeds an output, so every path in a
  module stems from an input and ends at an output;
- `wdep` (weakly dependent): inputs and outputs are random nodes (again with the first
  and the last node), other sources and sinks attached the same way.
Added edges go from a lower-numbered to a higher-numbered node (an input before a source,
a sink before an output), so modules stay acyclic.
Either way every node is reachable from the stem and reaches the head, as in a real DNN.

Every node is a RandWire node (weighted sum of its inputs, ReLU, 3x3 separable
convolution, batch norm) at the module's width and resolution; per-device, per-batch-size
times come from the analytic cost model (importers/cost_model.py), whose profiles run
RandWire nodes at the paper's relative device speeds (Table II). Two regimes:
- `paper` (the default): every time times PAPER_SCALE, so that Table I's network shape
  (ER(0.2), 10 modules of 10 nodes, seed 0) takes the paper's 211.7 ms per image on its
  best device. The paper's times are PyTorch eager runs per torch.fx node (sec. V), about
  2 ms a node on the A100; the roofline alone gives 70 us, 30x less, so transfers (the
  same tensor bytes over the same PCIe links either way) weighed 30x more against compute.
- `roofline`: the cost model's times as they are (the regime before 2026-12-05)."""
from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np
from partdsl.core.errors import PartError
from partdsl.core.ir import Constraints, DeviceClass, Graph, Link, Node, Objective, Platform, Spec, Work
from partdsl.importers.cost_model import DeviceProfile, profile

MODELS = ("er", "ws", "ba")
VARIANTS = ("sdep", "wdep")
REGIMES = ("paper", "roofline")
FP32 = 4.0
# 211.7 ms (DiviML Table I, best device, 1 channel) over the roofline's 7.121 ms for the same shape
PAPER_SCALE = 211.7 / 7.121


@dataclass(frozen=True)
class RandWire:
    """A network's shape: `modules` random modules of `size` nodes from `model`
    (er: P = `p`; ws: K = `k`, P = `p`; ba: M = `m`), `channels` edges between modules."""

    model: str = "er"
    size: int = 10
    modules: int = 1
    channels: int = 1
    variant: str = "sdep"
    p: float = 0.2
    k: int = 4
    m: int = 5
    width: int = 78  # channels of the first module (RandWire's small regime)
    resolution: int = 56  # its feature map side
    seed: int = 0
    regime: str = "paper"  # node times: `paper` (scaled to Table I's 211.7 ms) or `roofline` (the module docstring)

    def check(self) -> None:
        if self.model not in MODELS:
            raise PartError(f"unknown random graph model '{self.model}'", None, f"use one of {', '.join(MODELS)}")
        if self.regime not in REGIMES:
            raise PartError(f"unknown cost regime '{self.regime}'", None, "use paper (the default) or roofline")
        if self.variant not in VARIANTS:
            raise PartError(f"unknown module variant '{self.variant}'", None, "use sdep or wdep")
        if self.size < 2 or self.modules < 1 or not 1 <= self.channels <= self.size:
            raise PartError("a RandWire network needs size >= 2, modules >= 1 and 1 <= channels <= size", None)
        if self.model == "ba" and not 1 <= self.m < self.size:
            raise PartError(f"BA(M) needs 1 <= M < size (M = {self.m}, size = {self.size})", None)
        if self.model == "ws" and not 2 <= self.k < self.size:
            raise PartError(f"WS(K, P) needs 2 <= K < size (K = {self.k}, size = {self.size})", None)


def _module(rw: RandWire, rng: np.random.Generator) -> tuple[list[tuple[int, int]], list[int], list[int]]:
    """One module's edges (lower -> higher index), its inputs and its outputs."""
    n, seed = rw.size, int(rng.integers(2**31))
    if rw.model == "er":
        und = nx.erdos_renyi_graph(n, rw.p, seed=seed)
    elif rw.model == "ws":
        und = nx.watts_strogatz_graph(n, rw.k, rw.p, seed=seed)
    else:
        und = nx.barabasi_albert_graph(n, rw.m, seed=seed)
    edges = {(min(a, b), max(a, b)) for a, b in und.edges()}
    has_in = {b for _, b in edges}
    has_out = {a for a, _ in edges}
    sources = [v for v in range(n) if v not in has_in]
    sinks = [v for v in range(n) if v not in has_out]
    c = rw.channels

    def pick(first: int, pool: list[int], rest: list[int]) -> list[int]:
        """`first`, then c - 1 more from `pool` (then from `rest` if the pool runs out)."""
        pool = [v for v in pool if v != first]
        more = rng.permutation(pool)[:c - 1].tolist()
        spare = [v for v in rest if v != first and v not in more]
        more += rng.permutation(spare)[:c - 1 - len(more)].tolist()
        return sorted({first, *map(int, more)})

    everything = list(range(n))
    if rw.variant == "sdep":
        ins, outs = pick(0, sources, everything), pick(n - 1, sinks, everything)
    else:
        ins, outs = pick(0, everything, []), pick(n - 1, everything, [])
    # added edges go from a lower to a higher index, so the module stays acyclic
    for s in sources:
        if s not in ins:
            edges.add((int(rng.choice([i for i in ins if i < s])), s))
    for t in sinks:
        if t not in outs:
            edges.add((t, int(rng.choice([o for o in outs if o > t]))))
    return sorted(edges), ins, outs


def _node_cost(width: int, res: int, fan_in: int) -> tuple[float, float, float]:
    """(FLOPs, parameter bytes, activation bytes) per sample of a RandWire node: the
    weighted sum of its inputs, ReLU, a depthwise 3x3 and a pointwise convolution, BN."""
    hw = res * res
    flops = hw * width * (2 * 9 + 2 * width + 4 + 2 * max(fan_in - 1, 0))
    params = (9 * width + width * width + 2 * width + fan_in) * FP32
    act = (max(fan_in, 1) + 1) * hw * width * FP32
    return float(flops), float(params), float(act)


def randwire_graph(rw: RandWire, devices: dict[str, DeviceProfile], batches: dict[str, tuple[int, ...]]) -> Graph:
    """The network, with each node's time on each device class at each batch size it
    supports (and batch 1)."""
    rw.check()
    rng = np.random.default_rng(rw.seed)
    names = ["stem"]
    shape: list[tuple[int, int]] = [(rw.width, rw.resolution)]
    edges: list[tuple[int, int]] = []
    prev_outs = [0] * rw.channels
    for q in range(rw.modules):
        stage = min(q * 3 // max(rw.modules, 1), 2) if rw.modules >= 3 else 0  # three stages, as RandWire
        width, res = rw.width * 2**stage, max(rw.resolution // 2**stage, 1)
        base = len(names)
        m_edges, ins, outs = _module(rw, rng)
        names += [f"m{q + 1}_{v}" for v in range(rw.size)]
        shape += [(width, res)] * rw.size
        edges += [(base + a, base + b) for a, b in m_edges]
        edges += [(src, base + i) for src, i in zip(prev_outs, ins)]
        prev_outs = [base + o for o in outs]
    head = len(names)
    names.append("head")
    shape.append((shape[-1][0], 1))
    edges += [(o, head) for o in sorted(set(prev_outs))]
    edges = sorted(set(edges))
    fan_in = np.zeros(len(names), dtype=int)
    for _, b in edges:
        fan_in[b] += 1
    nodes = []
    scale = PAPER_SCALE if rw.regime == "paper" else 1.0
    for v, name in enumerate(names):
        width, res = shape[v]
        flops, params, act = _node_cost(width, res, int(fan_in[v]))
        if name == "head":  # global pooling + a 1000-way classifier
            flops, params, act = 2.0 * width * 1000, width * 1000 * FP32, (width + 1000) * FP32
        out = float(width * res * res * FP32) if name != "head" else 1000 * FP32
        work = []
        for cls, prof in devices.items():
            for b in sorted({1, *batches.get(cls, ())}):
                work.append(Work(round(prof.time_ms(flops, params, act, b) * scale, 6), cls, b))
        nodes.append(Node(name, tuple(work), params=params, out=out))
    return Graph(f"rwnn_{rw.model}_{rw.variant}_{rw.modules}x{rw.size}_c{rw.channels}_s{rw.seed}",
                 tuple(nodes), tuple(edges))


def paper_platform(batches: tuple[int, ...] = (), pcie: float = 25e9) -> tuple[dict[str, DeviceProfile], Platform]:
    """DiviML's system (sec. V): a Xeon CPU (the host), a T4 and an A100, pairwise PCIe 4.0
    x16 links (`pcie` B/s per direction, about 25 GB/s sustained of the 31.5 theoretical)."""
    devices = {"cpu": profile("xeon"), "t4": profile("t4"), "a100": profile("a100")}
    classes = tuple(DeviceClass(c, 1, memory=p.memory, link=min(p.link, pcie), host=p.host, batches=batches)
                    for c, p in devices.items())
    links = (Link("t4", "a100", pcie),)
    return devices, Platform(classes, links)


def randwire_spec(rw: RandWire, objective: str = "latency", batch: int = 1, split: int = 1) -> Spec:
    """An RWNN on the paper's platform under `minimize latency by tasks` (objective
    'latency') or `maximize throughput batch B split K` ('throughput'); supported batch
    sizes are the chunk multiples B/K, 2B/K, ..., B."""
    if objective not in ("latency", "throughput"):
        raise PartError(f"unknown DiviML objective '{objective}'", None, "use latency or throughput")
    if batch < 1 or split < 1 or batch % split:
        raise PartError(f"the split ({split}) must divide the batch ({batch})", None)
    sizes = tuple(sorted({batch // split * m for m in range(1, split + 1)} | {1}))
    devices, platform = paper_platform(sizes)
    graph = randwire_graph(rw, devices, {c: sizes for c in devices})
    obj = (Objective("task_latency") if objective == "latency"
           else Objective("throughput", batch=batch, split=split))
    return Spec(graph, platform, obj, Constraints(memory="hard"))

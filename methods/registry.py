"""The method table: every method `solve` runs, by name, with what it optimizes, whether
an exhausted run is a proof, whether it runs a MIP solver, and the options it takes. A
method is a generator of events (core/events.py): candidates, proofs, progress, logs.

The table names each method's code as "module:function" and imports it when the method
first runs: the kernels pull in numba, networkx and scipy.optimize (about a second), which
`part solve --method dp` or `part solve --help` does not need all of."""
from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from typing import Callable, Iterator

from partdsl.core.events import Event
from partdsl.core.ir import OBJECTIVES, SCHEDULED
from partdsl.kernels.peers import PEERS

MAX_LOAD = ("bottleneck", "latency")  # methods that optimize the max load (scored under latency); schedule
# objectives (DiviML) refuse them: an assignment cannot express a batch split, and max load is not makespan


@dataclass(frozen=True)
class Method:
    name: str
    entry: str  # its code, "module:function" under partdsl (imported when it first runs)
    exhaustive: bool  # an exhausted run proves optimality / infeasibility
    about: str
    options: tuple[str, ...] = ()  # the method's own options (`population 100` in a solve block)
    mip: bool = False  # runs a MIP solver
    portfolio: bool = False  # runs other methods (auto): given the incumbent, reports which member won
    objectives: tuple[str, ...] = OBJECTIVES  # the objectives it optimizes (others are refused up front)
    # spec features it does not model (methods/capabilities.py), each with the option that makes it model it
    ignores: tuple[tuple[str, str | None], ...] = ()
    variant: str | None = None  # the function is a factory, called with this (the peer's or rule's name)

    @property
    def run(self) -> Callable[..., Iterator[Event]]:
        """The method's generator of events, imported on first use."""
        return _load(self.entry, self.variant)

    @property
    def takes_solver(self) -> bool:
        """`--solver` means something to it: a MIP method, or a portfolio with MIP members."""
        return self.mip or self.portfolio


@functools.cache
def _load(entry: str, variant: str | None) -> Callable[..., Iterator[Event]]:
    module, _, function = entry.partition(":")
    code = getattr(importlib.import_module(f"partdsl.{module}"), function)
    return code if variant is None else code(variant)


# the peers partition a graph by cut and balance: the stage structure, batch splits, subgraph
# numbers, overlap, overflow and links are not theirs; colocation and memory only with -O repair=1
PEER_IGNORES = (("contiguous", None), ("acyclic", None), ("stage limits", None), ("subgraphs", None),
                ("batch split", None), ("overlap", None), ("memory overflow", None), ("links", None),
                ("colocation", "repair"), ("memory limits", "repair"))

LIST_SCHEDULE = "kernels.schedule.list_schedulers:run"  # DiviML's list schedulers, one factory by rule

# The features a row may not model (methods/capabilities.py), named once with why:
# data-parallel stages (`replicate <= r`, evaluator/replicas.py): only auto, topo, dp, brute, exact and
# load_search choose replication factors
REPLICATION = ("replication", None)
# server levels and direct links (evaluator/levels.py): only the methods that score every move with the
# evaluator (or look at no transfer) see routes; the others' kernels and models cost transfers flat
LEVELS = ("server levels or direct links", None)
# peak activations in memory (evaluator/activations.py): only the methods that vet every move with the evaluator
ACTIVATIONS = ("activation memory", None)
# stashes per micro-batch in flight (1F1B, evaluator/activations.in_flight): the evaluator-driven methods, and
# the DP over ideals where its states count the stages of a chain (`stashes off a chain` otherwise)
STASHES = ("stashes in flight", None)
# weights several nodes read (`shares`), once per device: the evaluator-driven methods and the DP over ideals
SHARES = ("shared weights", None)
# chunks round robin (`interleave V`): method interleave cuts the chain of units; brute enumerates them too
INTERLEAVE = ("interleaving", None)
# a method on flat per-class costs, one device per stage
FLAT = (REPLICATION, LEVELS, ACTIVATIONS, STASHES, SHARES, INTERLEAVE)
# topo and dp price a kind of stage per (class, replicas), PipeDream's load only (kernels/bottleneck/replicated.py)
PLAIN_REPLICAS = ("replicas with overlap or GPipe", None)


METHODS: dict[str, Method] = {m.name: m for m in (
    Method("auto", "methods.auto:run", False, "a portfolio chosen by objective, features and size: fast heuristics, then "
           "improvement, then an exact method where the size allows, within the time limit (default)",
           portfolio=True),
    Method("topo", "kernels.bottleneck.topo_split:run", False,
           "best of several topological-order splits, each split optimally by a DP", objectives=MAX_LOAD,
           ignores=(PLAIN_REPLICAS, LEVELS, ACTIVATIONS, STASHES, SHARES, INTERLEAVE)),
    Method("slicegraph", "kernels.bottleneck.order_search:slicegraph", False,
           "SliceGraph on Kahn's order, or on the order given (-O order=FILE: node names, one a line) "
           "(Archer sec. 4)", ("order",), objectives=MAX_LOAD, ignores=FLAT),
    Method("random", "kernels.bottleneck.order_search:random_orders", False, "random-T: best SliceGraph of T random orders",
           ("samples",), objectives=MAX_LOAD, ignores=FLAT),
    Method("brkga", "kernels.bottleneck.order_search:brkga", False, "BRKGA over orders, decoded by SliceGraph",
           ("population", "generations"), objectives=MAX_LOAD, ignores=FLAT),
    Method("mla", "kernels.bottleneck.order_search:mla", False, "SliceGraph on a minimum linear arrangement order",
           ("population", "generations"), objectives=MAX_LOAD, ignores=FLAT),
    Method("mla_weighted", "kernels.bottleneck.order_search:mla_weighted", False,
           "SliceGraph on a tensor-weighted minimum linear arrangement order", ("population", "generations"),
           objectives=MAX_LOAD, ignores=FLAT),
    Method("dp", "kernels.bottleneck.ideal_dp:run", False, "DP over ideals: optimal contiguous splits (Tarnawski sec. 5.1.1)",
           objectives=("bottleneck",), ignores=(PLAIN_REPLICAS,
           # its state counts the devices a chain uses, replicas too, not its stages (ideal_chains.best); it
           # prices replicas by where they sit on levels (replicated.placed_rates), tensors at the ports only
           ("replicas with a stage limit", None), ("transfers on server levels or direct links", None), ACTIVATIONS,
           ("stashes off a chain", None), ("shared weights with replicas", None), INTERLEAVE)),
    Method("exact", "methods.exact:run", False, "Archer's MTPP MIP (Fig. 3), Tarnawski's max-load IP (Fig. 6) or latency IP "
           "(Figs. 3-4), or the DiviML MILP (eqs. 1-7) for schedule objectives, with a MIP start",
           ("pyomo", "symmetry", "heuristics", "relax"), mip=True, ignores=(
           # Tarnawski's max-load IP models replicas (models/maxload_replicas.py), prices transfers per pair of
           # devices (maxload_routes, latency_routes) and orders stages (maxload_stages), where MTPP does not;
           # neither IP has a stage's position, which 1F1B's stashes in flight need
           ACTIVATIONS, STASHES, SHARES, INTERLEAVE)),
    Method("dpl", "kernels.bottleneck.baselines:dpl", False, "the DP on the line the authors' code builds (Tarnawski's "
           "DPL, sec. 5.1.2; msr-fiddle/dnn-partitioning -linearize) (baseline)", objectives=MAX_LOAD, ignores=FLAT),
    Method("pipedream", "kernels.bottleneck.baselines:pipedream", False, "PipeDream as Tarnawski ran it (sec. 6; the authors' "
           "-pipeDream): each biconnected component's branching fused, then the DP on the authors' line; -O ignore=NAMES "
           "leaves those nodes' outgoing edges out of the biconnected search (baseline)", ("ignore",),
           objectives=MAX_LOAD, ignores=FLAT),
    Method("greedy", "kernels.bottleneck.baselines:greedy", False, "fill devices in topological order, each up to a share by its speed "
           "(baseline); under a schedule objective, DiviML's Greedy (eft)",
           objectives=MAX_LOAD, ignores=(REPLICATION, ACTIVATIONS, STASHES, SHARES, INTERLEAVE)),
    Method("local_search", "kernels.bottleneck.local_search:local_search", False, "single-node moves to a local optimum with restarts, "
           "each from SliceGraph on a random order, or from a random split (-O start=random); -O step=best makes the "
           "best move of all each time; -O devices=accelerators keeps units off host devices (Tarnawski sec. 6: "
           "start=random, step=best, restarts=10, devices=accelerators) (baseline)",
           ("restarts", "passes", "start", "step", "devices"), objectives=MAX_LOAD, ignores=(REPLICATION, INTERLEAVE)),
    Method("load_search", "kernels.bottleneck.load_search:run", False, "iterated local search on max load from the best topo split: "
           "unit moves scored by (max load, sum of squared loads), any split", ("stall",), objectives=MAX_LOAD,
           ignores=(INTERLEAVE,)),
    Method("single", "kernels.single_device:run", False, "everything on one device (baseline)",
           ignores=(REPLICATION, INTERLEAVE)),
    Method("fill", "kernels.latency.fill:run", False, "latency greedy: fill each accelerator in topological order up to "
           "its memory, the rest on CPUs (Tarnawski sec. 7, baseline)", objectives=MAX_LOAD,
           ignores=(REPLICATION, ACTIVATIONS, STASHES, SHARES, INTERLEAVE)),
    Method("latency_search", "kernels.latency.search:run", False,
           "latency optimizer: chain DP over many topological orders, then iterated local search scored "
           "by the evaluator", ("restarts", "iterations", "stall"), objectives=("latency",), ignores=(REPLICATION,)),
    Method("maxload_dp", "kernels.latency.fill:maxload_dp", False,
           "the max-load DP's split (Tarnawski sec. 5.1.1), scored for the spec's objective (baseline)",
           objectives=MAX_LOAD, ignores=FLAT),
    Method("interleave", "kernels.bottleneck.interleaved:run", False, "interleaved pipelines (`interleave V`): a "
           "chain of units cut into V chunks per device, round robin (Megatron's interleaved 1F1B); every cut "
           "scored where there are few, else single-cut moves from speed-sized chunks", objectives=("bottleneck",),
           ignores=(REPLICATION, LEVELS)),
    Method("brute", "kernels.brute_force:run", True, "exhaustive enumeration, exact, tiny graphs only"),
    Method("milp_split", "methods.milp_split:run", False, "MILP-SPLIT (DiviML sec. IV-B): the DiviML MILP per module "
           "(bridges, or k-edge-connected components for channels > 1), combined by a DP over the devices at "
           "each bridge, with the Remark's lower bound; -O prune=0 solves every pair of every module (default: "
           "each module with free ends first, then the other pairs capped where they could still help); "
           "-O compose=dp|rolling: the DP, or modules in turn with release times (the default under a split "
           "batch and for channels > 1)",
           ("channels", "module_limit", "workers", "min_module", "bound_limit", "lookahead", "symmetry", "prune",
            "compose"),
           mip=True,
           objectives=SCHEDULED, ignores=FLAT),
    *(Method(name, "kernels.peers.runners:run", False, f"{package} as a peer: k-way partition (edge weights = transfers, "
             "vertex weights = compute, one block per device), mapped to devices; -O repair=1 contracts colocation "
             "and fixes memory and placement by moves" + ("; -O graph=tarnawski runs it as Tarnawski et al. did (the "
             "authors' dp.cpp -scotch graph, gpart's strategy, accelerators only)" if name == "scotch" else "")
             + " (baseline)", ("repair", "imbalance", "graph"), ignores=PEER_IGNORES + FLAT,
             variant=name)
      for name, (package, _, _) in PEERS.items()),
    Method("met", LIST_SCHEDULE, False, "DiviML's MET (bMET under a batch, also a name here): "
           "each node where it runs fastest, list-scheduled (baseline)", objectives=SCHEDULED, ignores=FLAT,
           variant="met"),
    Method("eft", LIST_SCHEDULE, False, "DiviML's Greedy (bGreedy; also names greedy and bgreedy): "
           "each node where it finishes earliest, in topological order (baseline)", objectives=SCHEDULED,
           ignores=FLAT, variant="eft"),
    Method("heft", LIST_SCHEDULE, False, "HEFT (bHEFT, also its name here): upward rank, earliest finish "
           "with insertion (DiviML sec. V-A baseline)", objectives=SCHEDULED, ignores=FLAT, variant="heft"),
    Method("sa", "kernels.schedule.search:sa", False, "simulated annealing on DiviML's integer strings (a device per node, "
           "per chunk under a batch), list-scheduled in the order of its start (the biased string breadth first, "
           "HEFT's mapping in HEFT's order; -O decode=bfs: breadth first, the paper's); until the "
           "time limit unless -O iterations=N; under latency at batch 1 a move re-times only the nodes after it "
           "(-O incremental=0: decode and evaluate every string) (baseline)", ("iterations", "incremental", "decode"),
           objectives=SCHEDULED, ignores=FLAT),
    Method("ea", "kernels.schedule.search:ea", False, "DiviML's biased (1+1) EA on the same strings, from HEFT's or the "
           "biased string (each chunk where it runs fastest); until the time limit unless -O iterations=N "
           "(-O incremental and decode as sa's) (baseline)", ("iterations", "incremental", "decode"),
           objectives=SCHEDULED, ignores=FLAT),
)}
# other names: DiviML's (sec. V-A: bMET, bGreedy and bHEFT are the batched MET, Greedy, HEFT)
ALIASES = {"mla-weighted": "mla_weighted", "bmet": "met", "bgreedy": "eft", "bheft": "heft"}
# a name that means another method under some objectives: DiviML's Greedy is `eft`
BY_OBJECTIVE = {("greedy", kind): "eft" for kind in SCHEDULED}
DEFAULT_METHOD = "auto"
KERNEL_SOLVER = "numpy"  # the solver reported by methods that run no MIP (NumPy kernels)


def lookup(name: str | None, kind: str | None = None) -> Method:
    """The method called `name` (an alias, or None for the default) for objective `kind`,
    or a PartError listing them."""
    from partdsl.core.errors import PartError, close_names

    name = name or DEFAULT_METHOD
    name = ALIASES.get(name, name)
    name = BY_OBJECTIVE.get((name, kind), name)
    if name not in METHODS:
        close = close_names(name, [*METHODS, *ALIASES])
        raise PartError(f"unknown method '{name}'", None,
                        (close + " " if close else "") + "methods: " + ", ".join(METHODS))
    return METHODS[name]

"""What each method models (issue 28): the spec features a method does not model are
declared in the method table (methods/registry.py, `Method.ignores`), and `solve` refuses a
spec that has one, naming the feature and the methods that do model it (exit 2). A
feature no method of the objective models cannot reach here: validation refuses it
(core/validate.check_routes: tensors given as times where the route decides their time).

Each feature is a test on the spec; `ignores` pairs a feature with the method option that
makes the method model it (the peers' `repair`), or None.
"""
from __future__ import annotations

from typing import Callable, Iterable, Mapping

import numpy as np
from partdsl.core.errors import PartError, Span
from partdsl.core.ir import Node, Spec


def _colocated(spec: Spec) -> bool:
    colo = spec.dense.colo
    return len(np.unique(colo)) < len(colo)


def _capacities(spec: Spec) -> bool:
    """Some device of the platform has a `memory`."""
    return any(k.memory is not None and k.count for k in spec.platform.classes)


def _memory_limits(spec: Spec) -> bool:
    return spec.constraints.memory == "hard" and _capacities(spec)


def _limited(spec: Spec) -> bool:
    """Memory limited (`memory hard`) or streamed (`memory overflow`) on some device."""
    return spec.constraints.memory != "ignore" and _capacities(spec)


def _stashes(spec: Spec) -> bool:
    """Stashes held per micro-batch in flight (1F1B) where memory is limited or streamed."""
    return spec.dense.stashed is not None and _limited(spec)


def _first_node_span(has: Callable[[Node], object]) -> Callable[[Spec], Span | None]:
    """Where the first node with the property is declared (a feature's caret)."""
    return lambda s: next((nd.span for nd in s.graph.nodes if has(nd)), None)


def _stashes_off_chain(spec: Spec) -> bool:
    """Stashes where the DP over ideals cannot count stages: streamed (`memory overflow`),
    with replicas, or on a unit DAG whose every split is not a chain of stages."""
    if not _stashes(spec):
        return False
    if spec.constraints.memory == "overflow" or spec.constraints.replicate > 1:
        return True
    from partdsl.kernels.bottleneck.ideal_dp import chained  # here: the kernels import this module's callers

    return not chained(spec)


FEATURES: dict[str, tuple[str, Callable[[Spec], bool]]] = {  # name: (what it is in the language, test)
    "links": ("declared device-to-device links (`link a <-> b ...`)", lambda s: bool(s.platform.links)),
    "overlap": ("transfers overlapped with compute (`overlap simplex|duplex`)", lambda s: s.objective.overlap is not None),
    "memory limits": ("hard memory limits (`memory hard` with a device `memory`)", _memory_limits),
    "memory overflow": ("parameter overflow (`memory overflow`)", lambda s: s.constraints.memory == "overflow"),
    "colocation": ("colocated nodes (`colocate`, `group`, colocation sets, or a sized edge `a -> b out 4 MB`, "
                   "whose tensor rides with its source)", _colocated),
    "contiguous": ("contiguous blocks (`contiguous`)", lambda s: s.constraints.contiguous),
    "acyclic": ("acyclic stages (`acyclic`)", lambda s: s.constraints.acyclic),
    "stage limits": ("a stage limit (`stages <= k`)", lambda s: s.constraints.max_stages is not None),
    "subgraphs": ("several subgraphs per accelerator (`subgraphs <= q`)", lambda s: s.constraints.subgraphs > 1),
    "batch split": ("a split batch (`batch L split K`, K > 1)", lambda s: s.objective.split > 1),
    "server levels or direct links": (
        "a hierarchical platform (`server` levels or a platform `link`) or direct links (`link a <-> b ...`), under "
        "the bottleneck or latency objective",
        lambda s: s.platform.routed and not s.objective.scheduled),
    "transfers on server levels or direct links": (
        "tensors sent between devices on a hierarchical platform or over direct links (their route prices them)",
        lambda s: s.platform.routed and not s.objective.scheduled and s.dense.sized),
    "activation memory": ("peak activations in memory (`activations`, Archer eq. 2)",
                          lambda s: s.constraints.activations),
    "stashes in flight": ("stashes held once per micro-batch in flight (`stash` on nodes, training under 1F1B) "
                          "in memory", _stashes),
    "stashes off a chain": ("stashes in flight streamed (`memory overflow`), with replicas, or on units that "
                            "do not form a chain (node `stash`)", _stashes_off_chain),
    "shared weights": ("weights several nodes read, held once per device (`shares`) in memory",
                       lambda s: s.dense.shared is not None and _limited(s)),
    "shared weights with replicas": ("shared weights (`shares`) of data-parallel stages (their sync)",
                                     lambda s: s.dense.shared is not None and s.constraints.replicate > 1),
    "interleaving": ("interleaved pipelines (`interleave V`)", lambda s: s.constraints.interleave > 1),
    "replication": ("data-parallel stages (`replicate <= r`)", lambda s: s.constraints.replicate > 1),
    "replicas with overlap or GPipe": ("data-parallel stages under `overlap` or `training gpipe`", lambda s: (
        s.constraints.replicate > 1 and (s.objective.overlap is not None or s.objective.training == "gpipe"))),
    "replicas with a stage limit": ("data-parallel stages with `stages <= k`", lambda s: (
        s.constraints.replicate > 1 and s.constraints.max_stages is not None)),
    "replicas on server levels": ("data-parallel stages on server levels (their placement sets the sync's "
                                  "bandwidth)", lambda s: s.constraints.replicate > 1 and s.platform.hierarchical),
}


def _memory_span(spec: Spec) -> Span | None:
    return spec.constraints.span_of("memory") or next(
        (k.span for k in spec.platform.classes if k.memory is not None and k.count), None)


WHERE: dict[str, Callable[[Spec], Span | None]] = {  # name: where the spec says it (for the caret)
    "links": lambda s: s.platform.links[0].span,
    "overlap": lambda s: s.objective.span,
    "memory limits": _memory_span,
    "memory overflow": _memory_span,
    "colocation": lambda s: s.constraints.span_of("colocate") or s.constraints.span_of("colocate_sets") or next(
        (s.graph.nodes[i].span for i, _ in s.graph.carriers), None),
    "contiguous": lambda s: s.constraints.span_of("contiguous"),
    "acyclic": lambda s: s.constraints.span_of("acyclic"),
    "stage limits": lambda s: s.constraints.span_of("max_stages"),
    "subgraphs": lambda s: s.constraints.span_of("subgraphs"),
    "batch split": lambda s: s.objective.span,
    "server levels or direct links": lambda s: s.platform.routes_span,
    "transfers on server levels or direct links": lambda s: s.platform.routes_span,
    "activation memory": lambda s: s.constraints.span_of("activations"),
    "stashes in flight": _first_node_span(lambda nd: nd.stash),
    "stashes off a chain": _first_node_span(lambda nd: nd.stash),
    "shared weights": _first_node_span(lambda nd: nd.shares),
    "shared weights with replicas": lambda s: s.constraints.span_of("replicate"),
    "interleaving": lambda s: s.constraints.span_of("interleave"),
    "replication": lambda s: s.constraints.span_of("replicate"),
    "replicas with overlap or GPipe": lambda s: s.constraints.span_of("replicate"),
    "replicas with a stage limit": lambda s: s.constraints.span_of("max_stages"),
    "replicas on server levels": lambda s: s.constraints.span_of("replicate"),
}


# a feature that is a case of another: a method models it only if it models both
LEVELS = "server levels or direct links"
WITHIN = {"replicas with overlap or GPipe": ("replication",), "replicas with a stage limit": ("replication",),
          "transfers on server levels or direct links": (LEVELS,),
          "replicas on server levels": ("replication", LEVELS), "stashes off a chain": ("stashes in flight",),
          "shared weights with replicas": ("replication",)}


def models(ignores: tuple[tuple[str, str | None], ...], feature: str, used: Iterable[str] = ()) -> bool:
    """Whether a method with these `ignores` models `feature` (and what it is a case of),
    and each of the spec's features `used` that is a case of it."""
    ignored = {f for f, _ in ignores}
    cases = [g for g in used if feature in WITHIN.get(g, ())]
    return feature not in ignored and not ignored & set(WITHIN.get(feature, ())) and not ignored & set(cases)


def features(spec: Spec) -> list[str]:
    """The features the spec uses, by name."""
    return [name for name, (_, test) in FEATURES.items() if test(spec)]


def unmodelled(spec: Spec, ignores: tuple[tuple[str, str | None], ...],
               options: Mapping[str, float]) -> list[tuple[str, str | None]]:
    """The spec's features in `ignores` that `options` do not make the method model."""
    used = set(features(spec))
    return [(f, opt) for f, opt in ignores if f in used and not (opt and options.get(opt))]


def describe(missing: list[tuple[str, str | None]]) -> tuple[str, str]:
    """(the features' names, what each is in the language) for a refusal."""
    return ", ".join(f for f, _ in missing), "; ".join(FEATURES[f][0] for f, _ in missing)


def check(spec: Spec, method: str, ignores: tuple[tuple[str, str | None], ...], options: Mapping[str, float],
          modelled_by: Callable[[str], list[str]]) -> None:
    """Refuse (PartError, exit 2) a spec with a feature the method does not model."""
    missing = unmodelled(spec, ignores, options)
    if not missing:
        return
    names, what = describe(missing)
    lifts = sorted({opt for _, opt in missing if opt})
    liftable = lifts and all(opt for _, opt in missing)
    others = [m for m in modelled_by(missing[0][0]) if all(m in modelled_by(f) for f, _ in missing[1:])]
    hint = (f"with -O {'=1 -O '.join(lifts)}=1 method {method} models {'them' if len(missing) > 1 else 'it'}; "
            if liftable else "") + \
        (f"methods that model {'them' if len(missing) > 1 else 'it'}: {', '.join(others)}" if others
         else "drop the feature from the spec")
    raise PartError(f"method {method} does not model {names} ({what}), which this spec has",
                    WHERE[missing[0][0]](spec), hint)

"""A transformer layer's predicted time and utilisation on a device profile: the cost
model's calibration against published training runs (issue 72; docs/cost_model.md).

The layer is `decoder_graph`'s (14 operators, each stating its GEMM's rows), costed by the
spec path itself: a one-layer decoder spec on one GPU of the profile goes through
importers/cost_model.py `apply`, and the layer's work on the GPU is read from the spec's
dense form, so the numbers are the ones a plan is made with. Utilisation is the layer's
FLOPs over its time, as a fraction of the profile's peak for the dtype: what the published
runs report as model FLOP utilisation (MFU).
"""
from __future__ import annotations

from dataclasses import dataclass

from partdsl.dsl.builder import SpecBuilder
from partdsl.generators.decoder_graph import Decoder, decoder_graph
from partdsl.importers.cost_model import profile


@dataclass(frozen=True)
class LayerCost:
    ms: float  # the layer's forward time on one device of the profile, operators in sequence
    flops: float  # the layer's FLOPs (one micro-batch)
    utilisation: float  # flops / time, as a fraction of the profile's peak for the dtype


def layer_cost(profile_name: str, hidden: int, heads: int, seq: int, dtype: str = "bf16",
               micro_batch: int = 1, shaped: bool = True) -> LayerCost:
    """One decoder layer of this shape, forward, on one GPU of `profile_name`, for a
    micro-batch of `micro_batch` sequences (the cost model's batch size); `shaped` False:
    its operators state no rows, so the batch model costs them (as before issue 72)."""
    graph = decoder_graph(Decoder(layers=1, hidden=hidden, heads=heads, seq=seq, dtype=dtype, shaped=shaped))
    spec = (SpecBuilder(graph).device("gpu", 1, profile=profile_name, batches=(micro_batch,))
            .minimize("latency").build())
    layer = [nd for nd in spec.graph.nodes if nd.name.startswith("l1_")]
    ms = sum(w.time for nd in layer for w in nd.work if w.on == "gpu" and w.batch == micro_batch)
    flops = sum(nd.flops or 0.0 for nd in layer) * micro_batch
    return LayerCost(ms, flops, flops / (ms * 1e-3) / profile(profile_name).peak(dtype))

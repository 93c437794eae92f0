"""A partition as a pipeline: the units (plans/units.py) in order, each whole on one device,
cut into chunks of consecutive units on one device. A device with one chunk is one stage;
with several, the chunks must come round by round in one device order, rank r holding
chunks r, r + P, r + 2P, ... (Megatron's and torchtitan's interleaved "virtual" stages,
Narayanan et al. 2021, sec. 2.2). What a format cannot express is refused with the reason."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from partdsl.core.errors import PartError
from partdsl.core.ir import Spec
from partdsl.plans.units import HEAD, Units


@dataclass(frozen=True)
class Chunk:
    device: str
    first: int  # units first..last (0 = E, layers + 1 = L)
    last: int

    def layers(self, units: Units) -> range:
        """The decoder layers (1-based) in this chunk."""
        return range(max(self.first, 1), min(self.last, units.layers) + 1)


@dataclass(frozen=True)
class Pipeline:
    units: Units
    chunks: tuple[Chunk, ...]
    ranks: tuple[str, ...]  # device of each pipeline rank

    @property
    def size(self) -> int:
        return len(self.ranks)

    @property
    def virtual(self) -> int:
        """Chunks per rank (1: no interleaving)."""
        return len(self.chunks) // len(self.ranks)

    def need_one_chunk_per_rank(self, fmt: str) -> None:
        if self.virtual > 1:
            raise PartError(f"format {fmt} has one stage per rank, and this plan interleaves {self.virtual} chunks on "
                            f"each of its {self.size} devices ({self.held(self.ranks[0])})", None,
                            "export it as megatron or fqn (both take interleaved stages), or solve with "
                            "`subject to { contiguous }` for one block per device")

    def held(self, dev: str) -> str:
        return f"{dev} holds " + ", ".join(self._span(c) for c in self.chunks if c.device == dev)

    def _span(self, c: Chunk) -> str:
        a, b = self.units.label(c.first), self.units.label(c.last)
        return a if a == b else f"{a} to {b}"


def _device_of_units(spec: Spec, dev: np.ndarray, units: Units) -> np.ndarray:
    """The one device of each unit (-1 for an empty unit); refuses a unit on several."""
    names = spec.graph.nodes
    fw = units.unit >= 0
    out = np.full(units.tail + 1, -1, dtype=np.int64)
    u, d = units.unit[fw], dev[fw]
    lo = np.full(units.tail + 1, np.iinfo(np.int64).max)
    hi = np.full(units.tail + 1, -1)
    np.minimum.at(lo, u, d)
    np.maximum.at(hi, u, d)
    split = np.flatnonzero((hi >= 0) & (lo != hi))
    if len(split):
        k = int(split[0])
        ix = np.flatnonzero(fw & (units.unit == k))
        a = next(i for i in ix if dev[i] == lo[k])
        b = next(i for i in ix if dev[i] == hi[k])
        devs = spec.platform.devices
        raise PartError(f"{units.label(k)} is split across devices: {names[a].name} on {devs[lo[k]]}, "
                        f"{names[b].name} on {devs[hi[k]]} ({len(split)} unit(s) split in all)", None,
                        "the frameworks place whole layers: solve with each layer's nodes in one `group` and "
                        "`subject to { colocate by group }` (part convert --group-by does both), or plan the layers")
    out[hi >= 0] = hi[hi >= 0]
    return out


def pipeline(spec: Spec, dev: np.ndarray, units: Units) -> Pipeline:
    where = _device_of_units(spec, np.asarray(dev, dtype=np.int64), units)
    devs = spec.platform.devices
    chunks: list[Chunk] = []
    for u in range(units.tail + 1):
        k = int(where[u])
        if k < 0:  # an empty E or L rides with its neighbour
            if chunks:
                chunks[-1] = Chunk(chunks[-1].device, chunks[-1].first, u)
            continue
        if chunks and chunks[-1].device == devs[k]:
            chunks[-1] = Chunk(devs[k], chunks[-1].first, u)
        else:
            chunks.append(Chunk(devs[k], HEAD if not chunks else u, u))
    ranks = list(dict.fromkeys(c.device for c in chunks))
    p = len(ranks)
    if len(chunks) % p or any(c.device != ranks[i % p] for i, c in enumerate(chunks)):
        bad = next((d for d in ranks if sum(c.device == d for c in chunks) > 1))
        line = Pipeline(units, tuple(chunks), tuple(ranks))
        raise PartError(f"the plan's stages do not form a pipeline: {line.held(bad)}, and its {len(chunks)} blocks "
                        f"do not come round by round in one order of its {p} devices", None,
                        "pipelines give each device one block of consecutive layers, or (interleaved) block r, r + P, "
                        "... of one device order: solve with `subject to { contiguous }`")
    return Pipeline(units, tuple(chunks), tuple(ranks))

"""An analytic device cost model: a node's time on a device class for a batch of b samples
is a roofline plus a launch overhead,

    t(b) = overhead + max(flops * (b + batch_half) / (peak * efficiency),
                          (params + b * (in + out)) / memory_bandwidth),

i.e. compute efficiency b / (b + batch_half) of the sustained rate grows with the batch
(the batch-efficiency curve), and memory time counts the weights once per batch and each
sample's activations. Profiles (dsl/device_profiles.json) carry vendor data-sheet values
and the calibrated model parameters; any field can be overridden."""
from __future__ import annotations

import json
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from pathlib import Path

from ..core.errors import PartError

PROFILES_FILE = Path(__file__).with_name("device_profiles.json")


@dataclass(frozen=True)
class DeviceProfile:
    name: str
    peak_flops: float  # FLOP/s
    memory_bandwidth: float  # B/s
    memory: float  # bytes
    link: float  # B/s, to host memory (one direction)
    overhead: float  # s per operator
    batch_half: float  # batch size at half the sustained rate
    efficiency: float  # sustained fraction of peak
    host: bool = False
    source: str = ""

    def time_ms(self, flops: float, params: float, act: float, batch: int) -> float:
        """Milliseconds for `batch` samples of an operator with `flops` per sample, `params`
        bytes of weights and `act` bytes of activations (inputs + output) per sample."""
        compute = flops * (batch + self.batch_half) / (self.peak_flops * self.efficiency)
        memory = (params + batch * act) / self.memory_bandwidth
        return (self.overhead + max(compute, memory)) * 1e3


@lru_cache(maxsize=1)
def _library() -> dict[str, dict]:
    raw = json.loads(PROFILES_FILE.read_text())
    return {k: v for k, v in raw.items() if not k.startswith("_")}


def names() -> list[str]:
    return sorted(_library())


def profile(name: str, **override: float) -> DeviceProfile:
    """A profile from the library, with any field overridden."""
    lib = _library()
    if name not in lib:
        raise PartError(f"unknown device profile '{name}'", None, "profiles: " + ", ".join(names()))
    known = {f.name for f in fields(DeviceProfile)}
    bad = sorted(set(override) - known)
    if bad:
        raise PartError(f"unknown profile field(s) {', '.join(bad)}", None, "fields: " + ", ".join(sorted(known)))
    return replace(DeviceProfile(name=name, **lib[name]), **override)

"""Units and dimensions. Canonical units: time in ms, size in bytes, bandwidth in B/s.

Every quantity in a spec carries a dimension; a property that needs a time rejects a
size with a clear error. Canonical units are what the IR stores and what the printer
writes, so `.part` text -> IR -> text -> IR is exact.
"""
from __future__ import annotations

from dataclasses import dataclass

TIME, SIZE, BANDWIDTH, FRACTION, NUMBER = "time", "size", "bandwidth", "fraction", "number"
FLOPS, FLOP_RATE = "FLOP count", "FLOP rate"  # a node's work per sample; a device's peak

_DEC = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_BIN = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40}

UNITS: dict[str, tuple[str, float]] = {
    "ns": (TIME, 1e-6), "us": (TIME, 1e-3), "µs": (TIME, 1e-3), "ms": (TIME, 1.0),
    "s": (TIME, 1e3), "min": (TIME, 60e3), "h": (TIME, 3600e3),
    "%": (FRACTION, 0.01),
}
for _p, _f in {**_DEC, **_BIN}.items():
    UNITS[f"{_p}B"] = (SIZE, _f)
    UNITS[f"{_p}B/s"] = (BANDWIDTH, _f)
for _p, _f in {**_DEC, "P": 1e15}.items():
    UNITS[f"{_p}FLOP"] = (FLOPS, _f)
    UNITS[f"{_p}FLOP/s"] = (FLOP_RATE, _f)

CANONICAL = {TIME: "ms", SIZE: "B", BANDWIDTH: "B/s", FRACTION: "", NUMBER: "", FLOPS: "FLOP", FLOP_RATE: "FLOP/s"}

EXAMPLES = {TIME: "3 ms", SIZE: "16 GiB", BANDWIDTH: "12 GB/s", FRACTION: "1%", NUMBER: "6", FLOPS: "2.5 GFLOP",
            FLOP_RATE: "19.5 TFLOP/s"}


@dataclass(frozen=True)
class Quantity:
    """A number in canonical units with its dimension."""

    value: float
    dim: str

    def __str__(self) -> str:
        unit = CANONICAL[self.dim]
        return f"{format_number(self.value)} {unit}".strip()


def make_quantity(number: float, unit: str | None) -> Quantity:
    if unit is None:
        return Quantity(float(number), NUMBER)
    dim, factor = UNITS[unit]
    return Quantity(float(number) * factor if factor != 1.0 else float(number), dim)


def format_number(x: float) -> str:
    """Shortest text that parses back to exactly `x` (ints without '.0')."""
    if float(x).is_integer() and abs(x) < 1e15:
        return str(int(x))
    return repr(float(x))


def human_time(ms: float) -> str:
    if ms != ms or ms == float("inf"):
        return "inf"
    if abs(ms) >= 1000:
        return f"{ms / 1000:.4g} s"
    if abs(ms) >= 1 or ms == 0:
        return f"{ms:.4g} ms"
    return f"{ms * 1000:.4g} us"


def human_size(b: float) -> str:
    for unit, f in (("GiB", 2.0**30), ("MiB", 2.0**20), ("KiB", 2.0**10)):
        if abs(b) >= f:
            return f"{b / f:.4g} {unit}"
    return f"{b:.4g} B"


def human_rate(bps: float) -> str:
    for unit, f in (("GB/s", 1e9), ("MB/s", 1e6), ("KB/s", 1e3)):
        if abs(bps) >= f:
            return f"{bps / f:.4g} {unit}"
    return f"{bps:.4g} B/s"

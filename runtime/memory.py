"""Memory a kernel may take, checked before it allocates a table that grows faster than
the graph (issue 29: segment tables are P x P per device class, the latency path bound m x m).
A table that would not fit is refused with its size, before the operating system or a
MemoryError ends the run. The budget is what the machine has free (MemAvailable), or the
process's address-space limit (RLIMIT_AS) if that is lower; PARTDSL_MEMORY_BYTES sets it
(for tests, or to leave room for other work)."""
from __future__ import annotations

import os

from partdsl.core.errors import PartError

SCALABLE = "metis, scotch, kahypar (peers, -O repair=1 for memory and colocation)"


class TooLarge(PartError):
    """A table a method needs would not fit in memory (exit 2, like any other refusal)."""


def budget() -> float:
    """Bytes a kernel may allocate now (inf where the platform cannot tell)."""
    if os.environ.get("PARTDSL_MEMORY_BYTES"):
        return float(os.environ["PARTDSL_MEMORY_BYTES"])
    free = float("inf")
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    free = float(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            with open("/proc/self/statm") as f:
                used = float(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
            free = min(free, max(soft - used, 0.0))
    except (ImportError, OSError, ValueError):
        pass
    return free


def gib(n: float) -> str:
    return f"{n / 2**30:.3g} GiB" if n >= 2**30 else f"{n / 2**20:.3g} MiB"


def need(nbytes: float, what: str, hint: str = "") -> None:
    """Refuse (TooLarge) a table of `nbytes` that would not fit in the budget (tables under
    64 MiB are not checked: the check reads /proc, and searches build many small tables)."""
    if nbytes < 2**26 and not os.environ.get("PARTDSL_MEMORY_BYTES"):
        return
    free = budget()
    if nbytes > free:
        raise TooLarge(f"{what} needs about {gib(nbytes)}, more than the {gib(free)} free", None,
                       hint or f"methods that scale to this size: {SCALABLE}")

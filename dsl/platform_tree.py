"""Server levels (Tarnawski App. C.3) as written, into the flat platform of the IR: each
device class keeps its name and gets its total count (as written, times every enclosing
server's count) and its innermost server; servers keep their parent. Shared by the
language and the Python builder."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from partdsl.core.errors import PartError, Span
from partdsl.core.ir import DeviceClass, Link, Platform, Server
from partdsl.core.limits import MAX_DEVICES, check_count


@dataclass
class ServerBlock:
    """`server name[count] { ... }` as parsed: its items are device classes, server blocks
    and at most one fabric `link`."""

    name: str
    count: int
    items: list[Any] = field(default_factory=list)
    span: Span | None = None


def fabric(items: list[Any], where: str, span: Span | None) -> float | None:
    """The one `link` bandwidth among a block's items (("fabric", B/s) pairs), or None."""
    links = [x[1] for x in items if isinstance(x, tuple) and x[0] == "fabric"]
    if len(links) > 1:
        raise PartError(f"{where} gives its fabric `link` twice", span, "keep one `link` per block")
    return links[0] if links else None


def walk(items: list[Any], parent: str | None = None) -> tuple[list[DeviceClass], list[Server]]:
    """Device classes (count as written, `server` set) and servers (with parents), outermost first."""
    classes: list[DeviceClass] = []
    servers: list[Server] = []
    for x in items:
        if isinstance(x, DeviceClass):
            classes.append(replace(x, server=parent))
        elif isinstance(x, ServerBlock):
            servers.append(Server(x.name, x.count, fabric(x.items, f"server {x.name}", x.span), parent, x.span))
            inner_classes, inner_servers = walk(x.items, x.name)
            classes += inner_classes
            servers += inner_servers
    return classes, servers


def platform(classes: list[DeviceClass], links: tuple[Link, ...], span: Span | None,
             servers: list[Server], link: float | None) -> Platform:
    """The IR platform: each class's count multiplied by its enclosing servers' counts."""
    seen: dict[str, Span | None] = {}
    for s in servers:
        if s.name in seen:
            raise PartError(f"server '{s.name}' is declared twice", s.span, "give each server level its own name")
        seen[s.name] = s.span
    for s in servers:  # the language nests blocks; the builder names the enclosing level
        if s.parent is not None and s.parent not in seen:
            raise PartError(f"server '{s.name}' is within unknown server '{s.parent}'", s.span,
                            "declare the enclosing server, e.g. builder.server('rack', 2)")
    for k in classes:
        if k.name in seen:
            raise PartError(f"device class '{k.name}' has the name of a server", k.span,
                            "give device classes and servers different names")
    by_name = {s.name: s for s in servers}
    total = []
    for k in classes:
        mult, at = 1, k.server
        while at is not None:
            if at not in by_name:
                raise PartError(f"device class '{k.name}' is in unknown server '{at}'", k.span,
                                "declare the server, e.g. builder.server('node', 2)")
            mult, at = mult * by_name[at].count, by_name[at].parent
        check_count(k.count * mult, MAX_DEVICES, f"device class '{k.name}' has too many devices "
                    f"({k.count} in each of {mult} servers)", k.span, "check the counts (a param, or -D)")
        total.append(replace(k, count=k.count * mult))
    return Platform.of(total, links, span, tuple(servers), link)

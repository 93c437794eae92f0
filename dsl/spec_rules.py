"""The Transformer rules of the `platform`, objective, `subject to` and `solve` blocks
(dsl/transformer.py composes them)."""
from __future__ import annotations

from typing import Any

from lark import v_args
from partdsl.core.errors import PartError, Span, did_you_mean
from partdsl.core.ir import Constraints, DeviceClass, Link, Objective, Platform, SolveOptions, Target
from partdsl.core.limits import MAX_BATCH, MAX_DEVICES, MAX_SUBGRAPHS, check_count
from partdsl.core.quantities import BANDWIDTH, NUMBER, SIZE, TIME
from partdsl.dsl import platform_tree
from partdsl.dsl.platform_tree import ServerBlock
from partdsl.dsl.tokens import Q, Ref, tok_span


class SpecRules:
    """Mixin of ToIR: one method per platform, objective, constraint and solve rule."""

    # ------------------------------------------------------------------ platform
    def memory(self, ch: list) -> tuple[str, Any]:
        return ("memory", self.need(ch[0], SIZE, "memory"))

    def host_link(self, ch: list) -> tuple[str, Any]:
        return ("link", self.need(ch[0], BANDWIDTH, "link"))

    def host(self, ch: list) -> tuple[str, Any]:
        return ("host", True)

    def speed(self, ch: list) -> tuple[str, Any]:
        return ("speed", self.need(ch[0], NUMBER, "speed"))

    def batches(self, ch: list) -> tuple[str, Any]:
        return ("batches", tuple(sorted({self.need_batch(x) for x in ch})))

    def profile_field(self, ch: list) -> tuple[str, float, Any]:
        return (str(ch[0]), ch[1], tok_span(self.file, ch[0]))

    def profile(self, ch: list) -> tuple[str, Any]:
        from partdsl.importers.cost_model import check_field, names

        name = str(ch[0])
        if name not in names():
            raise PartError(f"unknown device profile '{name}'", tok_span(self.file, ch[0]),
                            did_you_mean(name, names()) or "profiles: " + ", ".join(names()))
        fields = tuple(check_field(key, q.q, sp) for key, q, sp in ch[1:] if isinstance(q, Q))
        return ("profile", (name, fields))

    @v_args(meta=True)
    def device_decl(self, meta: Any, ch: list) -> DeviceClass:
        name = str(ch[0])
        count = 1
        props: dict[str, Any] = {}
        for x in ch[1:]:
            if isinstance(x, Q):
                count = self.need_int(x, "a device count", 0)  # 0: declared, with no devices
                check_count(count, MAX_DEVICES, f"device class '{name}' has too many devices", x.span,
                            "check the count (a param, or -D)")
            elif isinstance(x, tuple):
                if x[0] in props:
                    raise PartError(f"'{x[0]}' is given twice for device {name}", self.span(meta))
                props[x[0]] = x[1]
        if "profile" in props:
            props["profile"], props["profile_fields"] = props["profile"]
        return DeviceClass(name=name, count=count, span=self.span(meta), **props)

    @v_args(meta=True)
    def dev_class(self, meta: Any, ch: list) -> Target:
        return Target(str(ch[0]), self.span(meta))

    @v_args(meta=True)
    def dev_index(self, meta: Any, ch: list) -> Target:
        return Target(f"{ch[0]}[{self.need_int(ch[1], 'a device index')}]", self.span(meta))

    @v_args(meta=True)
    def link_decl(self, meta: Any, ch: list) -> Link:
        a, op, b, bw = ch
        return Link(a.name, b.name, self.need(bw, BANDWIDTH, "link"), str(op) == "->", self.span(meta))

    def fabric_link(self, ch: list) -> tuple[str, Any]:
        return ("fabric", self.need(ch[0], BANDWIDTH, "link"))

    @v_args(meta=True)
    def server_decl(self, meta: Any, ch: list) -> ServerBlock:
        count = 1
        if len(ch) > 1 and isinstance(ch[1], Q):
            count = self.need_int(ch[1], "a server count", 1)
            check_count(count, MAX_DEVICES, f"server '{ch[0]}' has too many instances", ch[1].span,
                        "check the count (a param, or -D)")
        return ServerBlock(str(ch[0]), count, [x for x in ch[1:] if not isinstance(x, Q)], self.span(meta))

    @v_args(meta=True)
    def platform_decl(self, meta: Any, ch: list) -> Platform:
        classes, servers = platform_tree.walk(ch)
        seen: dict[str, DeviceClass] = {}
        for k in classes:
            if k.name in seen:
                raise PartError(f"device class '{k.name}' is declared twice", k.span)
            seen[k.name] = k
        return platform_tree.platform(classes, tuple(x for x in ch if isinstance(x, Link)), self.span(meta),
                                      servers, platform_tree.fabric(ch, "the platform", self.span(meta)))

    # ------------------------------------------------------------------ objective
    def training(self, ch: list) -> tuple[str, str]:
        return ("training", str(ch[0]) if ch else "pipedream")

    def overlap(self, ch: list) -> tuple[str, str]:
        return ("overlap", str(ch[0]) if ch else "simplex")

    @v_args(meta=True)
    def min_bottleneck(self, meta: Any, ch: list) -> Objective:
        return Objective("bottleneck", span=self.span(meta), **dict(ch))

    @v_args(meta=True)
    def min_latency(self, meta: Any, ch: list) -> Objective:
        by = str(ch[0]) if ch else "subgraphs"
        return Objective("task_latency" if by == "tasks" else "latency", span=self.span(meta))

    @v_args(meta=True)
    def max_throughput(self, meta: Any, ch: list) -> Objective:
        batch = self.need_batch(ch[0]) if ch else 1
        split = ch[1] if len(ch) > 1 else 1
        if batch % split:
            raise PartError(f"split {split} does not divide batch {batch}", self.span(meta),
                            f"pieces are whole multiples of batch / split: use a divisor of {batch}, e.g. "
                            f"`split {next(k for k in (4, 2, 1) if batch % k == 0)}`")
        return Objective("throughput", batch=batch, split=split, span=self.span(meta))

    def split(self, ch: list) -> int:
        k = self.need_int(ch[0], "split", 1)
        check_count(k, MAX_BATCH, "split is too large", ch[0].span, "pieces of batch / split samples: e.g. `split 4`")
        return k

    # ------------------------------------------------------------------ constraints
    @v_args(meta=True)
    def acyclic(self, meta: Any, ch: list) -> tuple:
        return ("acyclic", True, self.span(meta))

    @v_args(meta=True)
    def contiguous(self, meta: Any, ch: list) -> tuple:
        return ("contiguous", True, self.span(meta))

    @v_args(meta=True)
    def memory_mode(self, meta: Any, ch: list) -> tuple:
        return ("memory", str(ch[0]), self.span(meta))

    @v_args(meta=True)
    def colocate_groups(self, meta: Any, ch: list) -> tuple:
        if ch and str(ch[0]) not in ("group", "colorClass"):
            raise PartError(f"cannot colocate by '{ch[0]}'", self.span(meta),
                            "write `colocate` or `colocate by group` (imports map colorClass to group)")
        return ("colocate", True, self.span(meta))

    def _targets(self, refs: list[Ref]) -> tuple[Target, ...]:
        return tuple(Target(nm, r.span) for r in refs for nm in r.names)

    @v_args(meta=True)
    def colocate_nodes(self, meta: Any, ch: list) -> tuple:
        return ("colocate_sets", (self._targets(ch),), self.span(meta))

    @v_args(meta=True)
    def pin(self, meta: Any, ch: list) -> tuple:
        return ("pins", tuple((t, tuple(ch[1:])) for t in self._targets([ch[0]])), self.span(meta))

    @v_args(meta=True)
    def forbid(self, meta: Any, ch: list) -> tuple:
        return ("forbids", tuple((t, tuple(ch[1:])) for t in self._targets([ch[0]])), self.span(meta))

    @v_args(meta=True)
    def stages(self, meta: Any, ch: list) -> tuple:
        return ("max_stages", self.need_int(ch[0], "stages", 1), self.span(meta))

    @v_args(meta=True)
    def subgraphs(self, meta: Any, ch: list) -> tuple:
        q = self.need_int(ch[0], "subgraphs", 1)
        check_count(q, MAX_SUBGRAPHS, "subgraphs per accelerator", ch[0].span,
                    "q contiguous subgraphs per accelerator (Tarnawski sec. 4.1): a small number, e.g. 2")
        return ("subgraphs", q, self.span(meta))

    @v_args(meta=True)
    def replicate(self, meta: Any, ch: list) -> tuple:
        return ("replicate", self.need_int(ch[0], "replicate", 1), self.span(meta))

    @v_args(meta=True)
    def interleave(self, meta: Any, ch: list) -> tuple:
        return ("interleave", self.need_int(ch[0], "interleave", 1), self.span(meta))

    @v_args(meta=True)
    def activations(self, meta: Any, ch: list) -> tuple:
        return ("activations", True, self.span(meta))

    @v_args(meta=True)
    def constraints_decl(self, meta: Any, ch: list) -> Constraints:
        self.block_spans.setdefault(Constraints, []).append(self.span(meta))
        acc: dict[str, Any] = {}
        spans: dict[str, Span] = {}
        for key, val, span in ch:
            acc[key] = acc.get(key, ()) + val if key in ("colocate_sets", "pins", "forbids") else val
            spans.setdefault(key, span)
        return Constraints(**acc, spans=tuple(spans.items()))

    # ------------------------------------------------------------------ solve
    def time_opt(self, ch: list) -> tuple:
        ms = self.need(ch[0], TIME, "time")
        return ("time_limit", ch[0].number if ch[0].unit == "s" else ms / 1e3)

    def gap_opt(self, ch: list) -> tuple:
        g = self.need_fraction(ch[0], "gap")
        if not 0 <= g < 1:
            raise PartError(f"gap {ch[0].q.value:g} is not a fraction in [0, 1)", ch[0].span, "write e.g. `gap 1%`")
        return ("gap", g)

    def seed_opt(self, ch: list) -> tuple:
        return ("seed", self.need_int(ch[0], "seed"))

    def threads_opt(self, ch: list) -> tuple:
        return ("threads", self.need_int(ch[0], "threads", 1))

    def method_opt(self, ch: list) -> tuple:
        return ("options", ((str(ch[0]), self.need(ch[1], NUMBER, str(ch[0]))),))

    def solve_method(self, ch: list) -> tuple:
        return ("method", str(ch[0]))

    def solve_with(self, ch: list) -> tuple:
        return ("solver", str(ch[0]))

    @v_args(meta=True)
    def solve_decl(self, meta: Any, ch: list) -> SolveOptions:
        self.block_spans.setdefault(SolveOptions, []).append(self.span(meta))
        acc: dict[str, Any] = {}
        for key, val in ch:
            acc[key] = acc.get(key, ()) + val if key == "options" else val
        return SolveOptions(**acc)

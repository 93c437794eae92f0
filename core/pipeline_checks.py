"""The checks of what a pipeline's memory and shape add to a spec (issue 71, defects 6-8):
shared weights have one size, stashes need a known number of micro-batches in flight, and
`interleave V` goes with a bottleneck pipeline of one chunk chain (core/validate.py calls it)."""
from __future__ import annotations

from partdsl.core.errors import PartError
from partdsl.core.ir import Spec
from partdsl.core.quantities import human_size


def check_pipeline_terms(spec: Spec) -> None:
    _check_shares(spec)
    _check_interleave(spec)
    g, o = spec.graph, spec.objective
    stashing = next((nd for nd in g.nodes if nd.stash), None)
    if o.training == "gpipe" and stashing is not None:
        raise PartError(f"node '{stashing.name}' has a `stash`, and under `training gpipe` every micro-batch of a "
                        "step is in flight before the first backward pass: how many, the spec does not say",
                        stashing.span, "give the stash times the micro-batches per step as `params`, or train under "
                        "`training pipedream` (1F1B), where stage s of P holds P - s")
    sharing = next((nd for nd in g.nodes if nd.shares), None)
    if sharing is not None and o.scheduled:
        raise PartError(f"node '{sharing.name}' shares a weight, and the DiviML objectives' memory (eq. 6) counts each "
                        "node's parameters", sharing.span, "give the weight as `params` of one of its readers")


def _check_shares(spec: Spec) -> None:
    """A shared weight has one size wherever a node names it, and a node names it once."""
    size: dict[str, tuple[float, str]] = {}
    for nd in spec.graph.nodes:
        names = [w for w, _ in nd.shares]
        if len(set(names)) < len(names):
            raise PartError(f"node '{nd.name}' shares a weight twice ({', '.join(names)})", nd.span,
                            "name each shared weight once")
        for w, b in nd.shares:
            first = size.setdefault(w, (b, nd.name))
            if first[0] != b:
                raise PartError(f"shared weight '{w}' is {human_size(b)} at node '{nd.name}' but "
                                f"{human_size(first[0])} at node '{first[1]}'", nd.span,
                                "a shared weight is one tensor: give it one size")


def _check_interleave(spec: Spec) -> None:
    c, o = spec.constraints, spec.objective
    if c.interleave == 1:
        return
    where = c.span_of("interleave")
    if o.kind != "bottleneck":
        raise PartError(f"`interleave {c.interleave}` splits a pipeline (`minimize bottleneck`) into chunks, and this "
                        f"spec has the {o.kind} objective", where, "drop it, or use `minimize bottleneck`")
    clash = [w for w, on in (("acyclic", c.acyclic), ("contiguous", c.contiguous)) if on]
    if clash:
        raise PartError(f"`interleave {c.interleave}` gives each device {c.interleave} chunks, round robin, "
                        f"which `{clash[0]}` forbids (one block per device)", where,
                        f"drop `{clash[0]}`: an interleaved plan's chunks form an acyclic chain by themselves")
    if c.replicate > 1 or o.training == "gpipe":
        raise PartError(f"`interleave {c.interleave}` is Megatron's interleaved 1F1B: "
                        + ("without data-parallel stages" if c.replicate > 1 else "not under `training gpipe`"),
                        where, "drop one of the two")

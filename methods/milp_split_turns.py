"""MILP-SPLIT's modules in turn (Ghannane & Abdelfattah sec. IV-B2), and which composition
a spec gets: each module's MILP runs after the ones before it are fixed, with release
times (inputs from earlier modules, transfers counted where the device differs, and each
device's last busy time); memory shares per module MILP (`with_memory`, `window`)."""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Callable, Generator

import numpy as np
from partdsl.core.errors import PartError
from partdsl.core.events import Candidate
from partdsl.core.ir import Spec
from partdsl.core.schedule import Piece, Schedule
from partdsl.evaluator.schedule_eval import list_schedule, transfer_time
from partdsl.kernels.graph.modules import restrict
from partdsl.kernels.schedule import list_schedulers
from partdsl.methods.milp_split_modules import ModulePlan, piece_duration, solve_module
from partdsl.runtime.deadline import Deadline

DEFAULT_MODULE_LIMIT = 10.0  # seconds per module MILP without a time limit


def composition(spec: Spec, single: bool, compose: str | None) -> str:
    """How the modules are put together: "dp", IV-B1's DP over (input, output) devices
    (single-channel chains only), or "rolling", IV-B2's modules in turn with release times.
    By default the DP where it applies, except under a split batch: the DP's pairs pin each
    bridge's two ends whole, so at every bridge one device runs the whole batch while the
    others wait. In turn, the ends split into chunks like any node, each chunk starting when
    its inputs have arrived and its device is free (Table I's network at B = 128, 20 s:
    107.0 images/s in turn, 101.7 by the DP, HEFT 104.1; on 3 modules of 4 nodes at B = 8
    in 4, where every module MILP proves, the DP was up to 0.1% better on 2 of 6 draws)."""
    if compose is None:
        return "dp" if single and spec.objective.split == 1 else "rolling"
    if compose not in ("dp", "rolling"):
        raise PartError(f"-O compose={compose}: unknown composition", None, "use -O compose=dp or -O compose=rolling")
    if compose == "dp" and not single:
        raise PartError("-O compose=dp needs single-channel cuts between modules (IV-B1); this chain has cuts of "
                        "several edges", None, "use -O compose=rolling (the default here), or -O channels=1")
    return compose


ROLLING_LOOKAHEAD = 1  # modules after its own in each MILP in turn at batch 1 (0 under a split batch: on Table I's
# network at B = 128, 20 s, windows of two modules stalled near their starts: 104.4 images/s, 108.2 one at a time;
# 2 channels: 104.2 and 111.3)


def with_memory(sub: Spec, share: tuple[float, float] | None) -> Spec:
    """A module's spec with its share of each class's memory: (w, inbound) -> w M - inbound
    (None: as it is)."""
    if share is None:
        return sub
    w, inbound = share
    classes = tuple(replace(k, memory=max(k.memory * w - inbound, 0.0)) if k.memory is not None else k
                    for k in sub.platform.classes)
    return replace(sub, platform=replace(sub.platform, classes=classes))


def window(shares: list[tuple[float, float]] | None, k: int, lookahead: int) -> tuple[float, float] | None:
    """The share of a MILP over modules k .. k + lookahead (their w and inbound summed)."""
    if shares is None:
        return None
    mine = shares[k:k + 1 + lookahead]
    return sum(w for w, _ in mine), sum(b for _, b in mine)


def _limit(deadline: Deadline, module_limit: float | None, share: float) -> float:
    """Seconds per module MILP: `module_limit`, else a share of the time left (10 s
    without a time limit); never past the deadline."""
    left = deadline.left()
    if math.isinf(left):
        return float(module_limit) if module_limit is not None else DEFAULT_MODULE_LIMIT
    mine = float(module_limit) if module_limit is not None else min(share, 0.8) * left
    return max(min(mine, 0.8 * left), 0.05)


def in_turn(spec: Spec, plan: ModulePlan, deadline: Deadline, module_limit: float | None, solver: str | None,
            threads: int | None, progress: Callable[[str], None] | None,
            lookahead: int = 1, symmetry: int = 0,
            shares: list[tuple[float, float]] | None = None, whole_heft: Schedule | None = None
            ) -> Generator[Candidate, None, tuple[Schedule | None, str]]:
    """IV-B2: modules in chain order, each after the ones before it are fixed; each MILP
    also schedules the next `lookahead` modules (then dropped), so a module does not
    finish early at the expense of the ones after it. Each MILP may start from the whole
    graph's HEFT schedule on its nodes, re-timed to its release times (HEFT ranks a node by
    the work after it in every module; a module's own HEFT sees only its module). Yields
    answers so far (the modules done, the whole graph's HEFT after them) along the way, and
    returns the composed schedule. Past the deadline the modules left take the whole graph's
    HEFT pieces (a module's own starts on DenseNet-121's 941 nodes at B = 128 took 4 s past
    it), except under memory shares, which those pieces do not keep to. `whole_heft`: the
    whole graph's HEFT schedule if the caller has it (on `plan.s`)."""
    s = plan.s
    q = len(plan.modules)
    order: list[tuple[int, float, Piece]] = []
    whys = set()
    whole = whole_heft or list_schedulers.schedule(s, "heft")  # its pieces in each module: one more start there
    module_of = {v: k for k, m in enumerate(plan.modules) for v in m}
    every = max(1, -(-q // PARTIAL_CANDIDATES))

    def heft_after(k: int) -> list[tuple[int, float, Piece]]:  # HEFT's pieces of modules k + 1 ..
        return [(module_of[p.node], p.start or 0.0, replace(p, start=None)) for p in whole.pieces
                if module_of[p.node] > k]

    def stopped(k: int) -> tuple[Schedule, str] | None:  # past the deadline: modules 1..k, HEFT's pieces after
        if not k or not deadline.passed() or shares is not None:  # (HEFT's pieces do not keep to memory shares)
            return None
        return plan.to_original(spec, order + heft_after(k - 1)), \
            f"modules 1-{k} of {q} in turn, HEFT after (time limit): {'; '.join(sorted(whys))}"

    for k, own in enumerate(plan.modules):
        if (late := stopped(k)) is not None:
            return late
        nodes = sorted(v for m in plan.modules[k:k + 1 + lookahead] for v in m)
        release = _releases(s, _timed(plan, order), nodes)
        sub = with_memory(restrict(s, nodes), window(shares, k, lookahead))
        limit = _limit(deadline, module_limit, 1.0 / (q - k))
        local = {v: i for i, v in enumerate(nodes)}
        heft = Schedule(tuple(replace(p, node=local[p.node]) for p in whole.pieces if p.node in local), whole.batch)
        r = solve_module(sub, release, limit, solver, threads, symmetry=symmetry, given=(heft,), hard=deadline)
        whys.add(r.why)
        if progress:
            progress(f"MILP-SPLIT: module {k + 1}/{q} ({len(own)} nodes, {len(nodes)} in the MILP) {r.why}, "
                     f"ends at {r.makespan:.6g} ms")
        if not math.isfinite(r.makespan):  # (its own starts may have run past the deadline)
            return stopped(k) or (None, f"module {k + 1} has no schedule ({r.why})")
        keep = set(own)
        order += [(k, at, Piece(nodes[p.node], p.device, p.samples, None)) for at, p in r.pieces
                  if nodes[p.node] in keep]
        # an answer so far: the modules done, HEFT's pieces after them (not under memory shares:
        # HEFT's pieces do not keep to them)
        if k + 1 < q and (k + 1) % every == 0 and shares is None:
            yield Candidate(f"MILP-SPLIT (modules 1-{k + 1} of {q} in turn, HEFT after)",
                            schedule=plan.to_original(spec, order + heft_after(k)))
    return plan.to_original(spec, order), f"{q} modules in turn: {'; '.join(sorted(whys))}"


PARTIAL_CANDIDATES = 10  # answers so far that a composition in turn offers, at most


def _releases(s: Spec, timed: Schedule, nodes: list[int]) -> np.ndarray:
    """[len(nodes), D]: when each node may start on each device, given what is fixed
    (`timed`): after the device's last piece, and after each input from outside `nodes`
    has arrived there (its share's end plus the transfer from the share's device)."""
    d = s.dense
    busy = np.zeros(d.D)
    ends: dict[int, dict[int, float]] = {}  # node -> device -> its share's end
    for p in timed.pieces:
        end = (p.start or 0.0) + piece_duration(s, p)
        busy[p.device] = max(busy[p.device], end)
        mine = ends.setdefault(p.node, {})
        mine[p.device] = max(mine.get(p.device, 0.0), end)
    inside = set(nodes)
    release = np.tile(busy, (len(nodes), 1))
    for li, v in enumerate(nodes):
        for j in map(int, d.preds[v]):
            if j in inside:
                continue
            for w, e in ends.get(j, {}).items():
                for u in range(d.D):
                    release[li, u] = max(release[li, u], e + transfer_time(s, j, w, u))
    return release


def _timed(plan: ModulePlan, order: list[tuple[int, float, Piece]]) -> Schedule:
    """What is fixed so far, list-scheduled on the split spec."""
    pieces = tuple(p for _, _, p in sorted(order, key=lambda z: (z[0], z[1])))
    return list_schedule(plan.s, Schedule(pieces, plan.s.objective.batch), piece_order=range(len(pieces)))

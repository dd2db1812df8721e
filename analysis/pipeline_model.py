"""The models behind Kitsune's pipeline design: how deep a queue must be, and how many CTAs
each stage gets (the ILP of §5.3).

Queue depth. A consumer tile that reads `reads` entries (the final stage of a split reduction
adds its k partials) takes them as `reads` consecutive tickets, drawn at once, and holds them
together: a ring of fewer entries could never hold a whole group, so `reads` is the minimum (the
simulator shows the deadlock below it; drawing the tickets one at a time deadlocks even with
`reads × ctas` entries, and mixes the partials of different tiles). `(reads + 1) × ctas`
entries let every consumer CTA hold its group while producers fill the next one; where the L2
the ring may take holds fewer, as many as it holds (each entry more lets one more CTA work
ahead: dropping straight to the minimum left a 64-CTA stage pair one entry), never fewer than
the minimum.

CTA allotment (§5.3, Algorithm 2). Maximize the pipeline's throughput T (pipeline items per
second) subject to, for every stage i with a_i CTAs:

    w_i × T <= s_i × t_i × a_i / SMs        its rate scales with its share of the SMs
    T × Σ dram_i w_i <= DRAM peak,   T × Σ l2_i w_i <= L2 peak
    T × Σ_{class} w_i / (s_i t_i) <= 1 for each class (its pipes: CTAs sharing an SM share them)
    Σ_{SIMT} a_i <= SMs × slots,     Σ_{tensor} a_i <= SMs × slots,    1 <= a_i <= SMs × slots,
    a_i <= n_i

where t_i is the stage's measured bulk-synchronous rate (tiles per second on the whole GPU),
s_i = 1 / u_i the speedup of running with its operands on chip (u_i: its busiest pipe's
utilization in bulk-sync), w_i its tiles per pipeline item, and `slots` the CTAs of one class an
SM runs at once (Kitsune pairs one SIMT and one tensor CTA per SM: slots = 1). With
`shared_slots` the two classes share one budget, Σ a_i <= SMs × slots: the stages run as one
persistent kernel's blocks, so a SIMT CTA pairs with a tensor CTA only where the kernel fits
two blocks an SM (slots = 2). Among the optima, the fewest CTAs. With `equal` every stage
gets the same count, a_i = a (a pipeline in clusters: cluster c holds CTA c of every stage),
so T = min(caps, a × min_i r_i) and the largest a the budgets allow is the optimum: a <=
SMs × slots / (the stages of a class) for each class, a <= n_i.

The program is solved exactly by its structure (`allot`): T is capped by DRAM and L2 and
otherwise by min_i r_i a_i (r_i = s_i t_i / (SMs w_i)), and each class's budget binds only its
own stages, so within a class the greedy that gives one more CTA to the stage with the lowest
r_i a_i, while the budget lasts, reaches the largest minimum (each step raises the minimum or
leaves it where no allotment of that many CTAs gets it higher); the fewest CTAs at that T are
then a_i = ceil(T / r_i). `allot(..., solver="milp")` solves the same program with scipy's
`milp` (HiGHS), the general solver a program with other constraints needs: the tests check
that both agree. The exact solver imports nothing (scipy's import alone was 1.1 s of an MLP
stack's first compile on an H200 host).
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass


def queue_depth(reads: int, consumer_ctas: int, entry_bytes: int, budget_bytes: int
                ) -> int | None:
    """Entries for a queue whose consumer CTAs read `reads` entries per tile; None when even
    the deadlock-free minimum does not fit in `budget_bytes`."""
    required = max(1, reads)
    preferred = (reads + 1) * consumer_ctas
    fits = budget_bytes // entry_bytes if entry_bytes > 0 else preferred
    if fits < required:
        return None
    return min(preferred, fits)


SOLVERS = ("exact", "milp")
"""allot's solvers of the one program: by its structure, or scipy's milp (HiGHS)."""


@dataclass(frozen=True)
class StageRate:
    name: str
    tensor: bool  # tensor-core bound (else SIMT)
    bsp_rate: float  # tiles per second, bulk-synchronous, whole GPU
    tiles_per_item: float = 1.0
    utilization: float = 1.0  # in (0, 1]
    dram_bytes: float = 0.0  # per tile
    l2_bytes: float = 0.0  # per tile
    max_ctas: int | None = None  # its tiles per launch: a CTA past them has none to work on


@dataclass(frozen=True)
class Allotment:
    ctas: dict[str, int]
    throughput: float  # pipeline items per second
    bound: str  # the constraint that binds: a stage, "DRAM" or "L2"


def items_per_second(stage: StageRate, ctas: int, sms: int) -> float:
    """Pipeline items a second `stage` sustains with `ctas` of the `sms` CTA slots: its
    bulk-synchronous rate on the whole GPU, sped up by its operands on chip (1 / utilization),
    in proportion to its share of the slots, over its tiles per item (allot's constraint)."""
    return stage.bsp_rate / stage.utilization * ctas / sms / stage.tiles_per_item


def allot(stages: Sequence[StageRate], sms: int, dram_peak: float, l2_peak: float,
          slots: int = 1, shared_slots: bool = False, solver: str = "exact",
          equal: bool = False, budget: int | None = None) -> Allotment:
    """The throughput-optimal CTA counts, the fewest that reach it (see the module docstring);
    `solver`: "exact" (by the program's structure) or "milp" (scipy, HiGHS); `equal`: one
    count for every stage; `budget`: the CTA slots of a class, if fewer than SMs × slots (so
    that the allotment fits what the kernels' occupancy lets reside). A ValueError where the
    program has no solution."""
    if not stages:
        raise ValueError("a pipeline needs at least one stage")
    for stage in stages:
        if stage.max_ctas is not None and stage.max_ctas < 1:
            raise ValueError(f"stage {stage.name}: at most {stage.max_ctas} CTAs, fewer than 1")
        if stage.bsp_rate <= 0 or not 0 < stage.utilization <= 1:
            raise ValueError(f"stage {stage.name}: rate must be positive and utilization in "
                             f"(0, 1], got {stage.bsp_rate} and {stage.utilization}")
        if stage.tiles_per_item <= 0:
            raise ValueError(f"stage {stage.name}: tiles per item must be positive, got "
                             f"{stage.tiles_per_item}")
    classes = ([list(range(len(stages)))] if shared_slots else
               [[i for i, s in enumerate(stages) if s.tensor is kind] for kind in (False, True)])
    if solver not in SOLVERS:
        raise ValueError(f"unknown allotment solver {solver!r} ({', '.join(SOLVERS)})")
    slots_a_class = sms * slots if budget is None else min(budget, sms * slots)
    if solver == "exact":
        counts = (_equal_ctas if equal else _exact_ctas)(stages, sms, dram_peak, l2_peak,
                                                         slots_a_class, classes)
    else:
        counts = _milp_ctas(stages, sms, dram_peak, l2_peak, slots_a_class, classes, equal)
    ctas = {s.name: a for s, a in zip(stages, counts, strict=True)}
    throughput = _throughput(stages, counts, sms, dram_peak, l2_peak)
    slack = {s.name: s.tiles_per_item * (items_per_second(s, ctas[s.name], sms) - throughput)
             for s in stages}
    bound = min(slack, key=slack.get)
    least = slack[bound]
    for name, peak, per_tile in (("DRAM", dram_peak, "dram_bytes"), ("L2", l2_peak, "l2_bytes")):
        used = throughput * sum(getattr(s, per_tile) * s.tiles_per_item for s in stages)
        if used and peak - used < least * 1e-9 + 1e-9 * peak:
            bound = name
    for name, cap in _class_caps(stages).items():
        # named only where no stage's CTAs bind first (with one slot a class, they do)
        if cap - throughput < 1e-9 * cap and least > 1e-9 * throughput:
            bound = f"the {name}"
    return Allotment(ctas, throughput, bound)


def _rate_per_cta(stage: StageRate, sms: int) -> float:
    """r: the items a second one CTA of `stage` sustains (T <= r a)."""
    return items_per_second(stage, 1, sms)


def _pipe_time(stages: Sequence[StageRate], tensor: bool) -> float:
    """Seconds of one class's pipes (all SMs' tensor cores, or their SIMT lanes) an item
    takes: its stages of that class at their rates on the whole GPU."""
    return sum(s.tiles_per_item * s.utilization / s.bsp_rate for s in stages
               if s.tensor is tensor)


def _class_caps(stages: Sequence[StageRate]) -> dict[str, float]:
    """The throughput each class's pipes allow: however many CTAs share an SM (`slots`),
    they share its one set of pipes, so a class's stages together run at most at the rate
    of the whole GPU's (with one slot a class the CTA budget already says so)."""
    caps = {}
    for name, tensor in (("tensor cores", True), ("SIMT lanes", False)):
        time = _pipe_time(stages, tensor)
        if time > 0:
            caps[name] = 1 / time
    return caps


def _caps(stages: Sequence[StageRate], dram_peak: float, l2_peak: float) -> float:
    """The throughput DRAM, L2 and each class's pipes allow (inf where none binds)."""
    cap = min(_class_caps(stages).values(), default=math.inf)
    for peak, per_tile in ((dram_peak, "dram_bytes"), (l2_peak, "l2_bytes")):
        used = sum(getattr(s, per_tile) * s.tiles_per_item for s in stages)
        if used > 0:
            cap = min(cap, peak / used)
    return cap


def _throughput(stages: Sequence[StageRate], counts: Sequence[int], sms: int, dram_peak: float,
                l2_peak: float) -> float:
    return min(_caps(stages, dram_peak, l2_peak),
               *(_rate_per_cta(s, sms) * a for s, a in zip(stages, counts, strict=True)))


# The fewest CTAs are sized for the optimum less this fraction, as the milp's second solve
# bounds it: a CTA count that reaches T only up to rounding is not doubled.
_OPTIMUM_TOLERANCE = 1e-9


def _exact_ctas(stages: Sequence[StageRate], sms: int, dram_peak: float, l2_peak: float,
                budget: int, classes: list[list[int]]) -> list[int]:
    rates = [_rate_per_cta(s, sms) for s in stages]
    caps = [budget if s.max_ctas is None else s.max_ctas for s in stages]
    counts = [1] * len(stages)
    best = _caps(stages, dram_peak, l2_peak)
    for members in classes:
        if not members:
            continue
        left = budget - len(members)
        if left < 0:
            raise ValueError(f"the CTA allotment has no solution: {len(members)} stages of "
                             f"one class, {budget} CTA slots for them")
        while True:
            lowest = min(members, key=lambda i: rates[i] * counts[i])
            if left == 0 or counts[lowest] == min(budget, caps[lowest]) or \
                    rates[lowest] * counts[lowest] >= best:
                break
            counts[lowest] += 1
            left -= 1
        best = min(best, *(rates[i] * counts[i] for i in members))
    floor = best * (1 - _OPTIMUM_TOLERANCE)
    return [max(1, min(a, math.ceil(floor / r))) for a, r in zip(counts, rates, strict=True)]


def _equal_ctas(stages: Sequence[StageRate], sms: int, dram_peak: float, l2_peak: float,
                budget: int, classes: list[list[int]]) -> list[int]:
    """One count for every stage: T grows with it, so the largest the budgets and the
    stages' tiles allow reaches the optimum; the fewest that reach it where DRAM or L2 caps T
    first."""
    most = min([budget // len(members) for members in classes if members]
               + [s.max_ctas for s in stages if s.max_ctas is not None])
    if most < 1:
        raise ValueError(f"the CTA allotment has no solution: {len(stages)} stages of one CTA "
                         f"count each, {budget} CTA slots for a class of them")
    slowest = min(_rate_per_cta(s, sms) for s in stages)
    best = min(_caps(stages, dram_peak, l2_peak), slowest * most)
    fewest = math.ceil(best * (1 - _OPTIMUM_TOLERANCE) / slowest)
    return [max(1, min(most, fewest))] * len(stages)


@contextmanager
def _solver_output_dropped() -> Iterator[None]:
    """HiGHS writes debug lines to file descriptor 1 from C, past sys.stdout: where the
    compiler prints MLIR there (tilesync-opt), they would land inside it. fd 1 points at
    /dev/null while the solver runs, and back where it pointed after, whatever happens."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no fd 1 to protect
        yield
        return
    try:
        with open(os.devnull, "wb") as sink:
            os.dup2(sink.fileno(), 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def _milp_ctas(stages: Sequence[StageRate], sms: int, dram_peak: float, l2_peak: float,
               budget: int, classes: list[list[int]], equal: bool = False) -> list[int]:
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint, milp

    n = len(stages)
    # x = [T, a_1 .. a_n]; maximize T (then, in a second solve, the fewest CTAs that reach it:
    # what a stage does not need stays free for co-residency)
    cost = np.zeros(n + 1)
    cost[0] = -1.0
    rows, upper = [], []
    for i, stage in enumerate(stages):
        row = np.zeros(n + 1)
        row[0] = stage.tiles_per_item
        row[1 + i] = -stage.bsp_rate / stage.utilization / sms
        rows.append(row)
        upper.append(0.0)
    for peak, per_tile in ((dram_peak, [s.dram_bytes for s in stages]),
                           (l2_peak, [s.l2_bytes for s in stages])):
        row = np.zeros(n + 1)
        row[0] = sum(b * s.tiles_per_item for b, s in zip(per_tile, stages))
        rows.append(row)
        upper.append(peak)
    for tensor in (True, False):  # each class's pipes (_class_caps)
        row = np.zeros(n + 1)
        row[0] = _pipe_time(stages, tensor)
        rows.append(row)
        upper.append(1.0)
    for members in classes:
        row = np.zeros(n + 1)
        row[[1 + i for i in members]] = 1.0
        rows.append(row)
        upper.append(float(budget))
    lower = [-np.inf] * len(rows)
    for i in range(1, n if equal else 0):  # a_i - a_0 = 0
        row = np.zeros(n + 1)
        row[1 + i], row[1] = 1.0, -1.0
        rows.append(row)
        lower.append(0.0)
        upper.append(0.0)
    constraints = LinearConstraint(np.array(rows), np.array(lower), np.array(upper))
    integrality = np.array([0] + [1] * n)
    most = [float(budget if s.max_ctas is None else min(budget, s.max_ctas)) for s in stages]
    bounds = Bounds(np.array([0.0] + [1.0] * n), np.array([np.inf, *most]))
    with _solver_output_dropped():
        result = milp(cost, constraints=constraints, integrality=integrality, bounds=bounds)
    if not result.success:
        raise ValueError(f"the CTA allotment has no solution: {result.message}")
    best = float(result.x[0])
    fewest = np.ones(n + 1)
    fewest[0] = 0.0
    floor = Bounds(np.array([best * (1 - _OPTIMUM_TOLERANCE)] + [1.0] * n),
                   np.array([np.inf, *most]))
    with _solver_output_dropped():
        second = milp(fewest, constraints=constraints, integrality=integrality, bounds=floor)
    if second.success:
        result = second
    return [int(x + 0.5) for x in result.x[1:]]

"""The models behind Kitsune's pipeline design: how deep a queue must be, and how many CTAs
each stage gets (the ILP of §5.3).

Queue depth. A consumer tile that reads `reads` entries (the final stage of a split reduction
adds its k partials) takes them as `reads` consecutive tickets, drawn at once, and holds them
together: a ring of fewer entries could never hold a whole group, so `reads` is the minimum (the
simulator shows the deadlock below it; drawing the tickets one at a time deadlocks even with
`reads × ctas` entries, and mixes the partials of different tiles). `(reads + 1) × ctas`
entries let every consumer CTA hold its group while producers fill the next one. Both are
bounded by the L2 the ring may take.

CTA allotment (§5.3, Algorithm 2). Maximize the pipeline's throughput T (pipeline items per
second) subject to, for every stage i with a_i CTAs:

    w_i × T <= s_i × t_i × a_i / SMs        its rate scales with its share of the SMs
    T × Σ dram_i w_i <= DRAM peak,   T × Σ l2_i w_i <= L2 peak
    Σ_{SIMT} a_i <= SMs × slots,     Σ_{tensor} a_i <= SMs × slots,    1 <= a_i <= SMs × slots

where t_i is the stage's measured bulk-synchronous rate (tiles per second on the whole GPU),
s_i = 1 / u_i the speedup of running with its operands on chip (u_i: its busiest pipe's
utilization in bulk-sync), w_i its tiles per pipeline item, and `slots` the CTAs of one class an
SM runs at once (Kitsune pairs one SIMT and one tensor CTA per SM: slots = 1). With
`shared_slots` the two classes share one budget, Σ a_i <= SMs × slots: the stages run as one
persistent kernel's blocks, so a SIMT CTA pairs with a tensor CTA only where the kernel fits
two blocks an SM (slots = 2). Among the optima, the fewest CTAs. Solved exactly with scipy's
`milp` (HiGHS).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


def queue_depth(reads: int, consumer_ctas: int, entry_bytes: int, budget_bytes: int
                ) -> int | None:
    """Entries for a queue whose consumer CTAs read `reads` entries per tile; None when even
    the deadlock-free minimum does not fit in `budget_bytes`."""
    required = max(1, reads)
    preferred = (reads + 1) * consumer_ctas
    for entries in (preferred, required):
        if entries * entry_bytes <= budget_bytes:
            return entries
    return None


@dataclass(frozen=True)
class StageRate:
    name: str
    tensor: bool  # tensor-core bound (else SIMT)
    bsp_rate: float  # tiles per second, bulk-synchronous, whole GPU
    tiles_per_item: float = 1.0
    utilization: float = 1.0  # in (0, 1]
    dram_bytes: float = 0.0  # per tile
    l2_bytes: float = 0.0  # per tile


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
          slots: int = 1, shared_slots: bool = False) -> Allotment:
    """The throughput-optimal CTA counts (scipy.optimize.milp, HiGHS)."""
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint, milp

    n = len(stages)
    if n == 0:
        raise ValueError("a pipeline needs at least one stage")
    for stage in stages:
        if stage.bsp_rate <= 0 or not 0 < stage.utilization <= 1:
            raise ValueError(f"stage {stage.name}: rate must be positive and utilization in "
                             f"(0, 1], got {stage.bsp_rate} and {stage.utilization}")
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
    for classes in ([{False, True}] if shared_slots else [{False}, {True}]):
        row = np.zeros(n + 1)
        for i, stage in enumerate(stages):
            if stage.tensor in classes:
                row[1 + i] = 1.0
        rows.append(row)
        upper.append(float(sms * slots))
    constraints = LinearConstraint(np.array(rows), -np.inf, np.array(upper))
    integrality = np.array([0] + [1] * n)
    bounds = Bounds(np.array([0.0] + [1.0] * n), np.array([np.inf] + [sms * slots] * n))
    result = milp(cost, constraints=constraints, integrality=integrality, bounds=bounds)
    if not result.success:
        raise ValueError(f"the CTA allotment has no solution: {result.message}")
    best = float(result.x[0])
    fewest = np.ones(n + 1)
    fewest[0] = 0.0
    floor = Bounds(np.array([best * (1 - 1e-9)] + [1.0] * n),
                   np.array([np.inf] + [sms * slots] * n))
    second = milp(fewest, constraints=constraints, integrality=integrality, bounds=floor)
    if second.success:
        result = second
    throughput = float(result.x[0])
    ctas = {s.name: int(result.x[1 + i] + 0.5) for i, s in enumerate(stages)}
    slack = {s.name: s.tiles_per_item * (items_per_second(s, ctas[s.name], sms) - throughput)
             for s in stages}
    bound = min(slack, key=slack.get)
    for name, peak, per_tile in (("DRAM", dram_peak, "dram_bytes"), ("L2", l2_peak, "l2_bytes")):
        used = throughput * sum(getattr(s, per_tile) * s.tiles_per_item for s in stages)
        if used and peak - used < slack[bound] * 1e-9 + 1e-9 * peak:
            bound = name
    return Allotment(ctas, throughput, bound)

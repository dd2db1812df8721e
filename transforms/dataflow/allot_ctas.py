"""`dataflow-allot-ctas`: how many CTAs each stage of a pipeline gets (Kitsune §5.3): the
integer program of `analysis.pipeline_model.allot`, solved exactly by its structure, or with
`solver=milp` by scipy's milp (HiGHS).

Each stage carries what was measured of it run bulk-synchronously: `bsp_rate` (tiles per
second on the whole GPU), `utilization` (its busiest pipe, default 1), and the DRAM and L2
bytes per tile once its queue operands stay on chip (`dram_bytes`, `l2_bytes`, default 0); its
`tiles` per launch relative to the pipeline's last stage weighs its rate. The solution sets
every stage's `ctas` and records on the pipeline the predicted throughput (items per second)
and the constraint that binds it (`dataflow.allotment`). A stage without a measured rate is
refused: the allotment would be a guess. A stage that takes several entries of a queue for one
tile keeps the one CTA dataflow-insert-queues gave it. A pipeline in clusters (`dataflow.pipeline @p
cluster`, or a cluster queue) runs one CTA of each stage in a cluster, so its stages get one
count (`allot`'s `equal`). The allotment must leave every CTA resident at once (a CTA spinning
on a queue holds its slot): where the pipeline's `max_ctas` or the stages' recorded occupancy
(their kernels' registers, shared memory and block size, as dataflow-verify counts them) do not
hold the optimum's CTAs, the most CTA slots a class that they hold are allotted instead, and a
pipeline with no such allotment is refused.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.passes import ModulePass

from tilesync.analysis.forward_progress import Residency, co_residency
from tilesync.analysis.pipeline_model import SOLVERS, Allotment, StageRate, allot
from tilesync.contract import (
    BSP_RATE_ATTR,
    DRAM_BYTES_ATTR,
    L2_BYTES_ATTR,
    REGISTERS_ATTR,
    SHARED_BYTES_ATTR,
    TILES_ATTR,
    UTILIZATION_ATTR,
    limits_for_arch,
)
from tilesync.dialects import dataflow
from tilesync.dialects.locations import diagnostic
from tilesync.transforms.dataflow.insert_queues import one_worker
from tilesync.transforms.dataflow.verify import stage_residency

PASS = "dataflow-allot-ctas"
ALLOTMENT_ATTR = "dataflow.allotment"


def _number(stage: dataflow.StageOp, name: str, default: float | None = None) -> float | None:
    attr = stage.attributes.get(name)
    if isinstance(attr, FloatAttr | IntegerAttr):
        return float(attr.value.data)
    return default


def stage_rates(pipeline: dataflow.PipelineOp) -> list[StageRate]:
    stages = pipeline.stages
    for stage in stages:
        tiles = _number(stage, TILES_ATTR)
        if tiles is not None and not (math.isfinite(tiles) and tiles >= 1):
            raise diagnostic(PASS, stage, f"stage @{stage.sym_name.data}: '{TILES_ATTR}' must "
                             f"be a positive count, got {tiles:g}")
    last_tiles = _number(stages[-1], TILES_ATTR, 1.0) or 1.0
    rates = []
    for stage in stages:
        name = stage.sym_name.data
        rate = _number(stage, BSP_RATE_ATTR)
        if rate is None or not (math.isfinite(rate) and rate > 0):
            raise diagnostic(PASS, stage, f"stage @{name} has no measured '{BSP_RATE_ATTR}' "
                             f"(tiles per second, bulk-synchronous, a positive number)"
                             + ("" if rate is None else f", got {rate:g}"))
        utilization = _number(stage, UTILIZATION_ATTR, 1.0)
        if not 0 < utilization <= 1:
            raise diagnostic(PASS, stage, f"stage @{name}: '{UTILIZATION_ATTR}' must be in "
                             f"(0, 1], got {utilization}")
        traffic = []
        for attr in (DRAM_BYTES_ATTR, L2_BYTES_ATTR):
            value = _number(stage, attr, 0.0)
            if not (math.isfinite(value) and value >= 0):
                raise diagnostic(PASS, stage, f"stage @{name}: '{attr}' (bytes a tile) must be "
                                 f"a number >= 0, got {value:g}")
            traffic.append(value)
        tiles = _number(stage, TILES_ATTR)
        most = max(1, int(tiles)) if tiles else None
        if one_worker(stage, pipeline):
            most = 1  # insert-queues gave it one CTA
        rates.append(StageRate(
            name, stage.resource.data is dataflow.Resource.TENSOR, rate,
            (tiles or last_tiles) / last_tiles, utilization, traffic[0], traffic[1], most))
    return rates


def _room(module: ModuleOp, pipeline: dataflow.PipelineOp, sms: int, arch: str
          ) -> Callable[[Allotment], str | None]:
    """Why an allotment's CTAs cannot all reside at once (None where they can): the
    pipeline's `max_ctas`, and, for stages whose kernels' resources are recorded, their blocks
    per SM (what dataflow-verify proves co-residency with). A pipeline in clusters waits on
    no other cluster: only the cluster's own fit counts, which the allotment does not change."""
    if pipeline.clustered:
        return lambda _: None
    scope = pipeline.parent_op() or module
    stages = pipeline.stages
    per_sm = [stage_residency(scope, s, arch).blocks_per_sm
              if REGISTERS_ATTR in s.attributes and SHARED_BYTES_ATTR in s.attributes else None
              for s in stages]
    limit = None if pipeline.max_ctas is None else pipeline.max_ctas.value.data

    def why_not(result: Allotment) -> str | None:
        counts = [result.ctas[s.sym_name.data] for s in stages]
        if limit is not None and sum(counts) > limit:
            return f"{sum(counts)} CTAs, more than max_ctas {limit}"
        if all(b is not None for b in per_sm):
            fits = co_residency([Residency(a, b) for a, b in zip(counts, per_sm)], sms)
            if not fits:
                return fits.reason
        return None

    return why_not


def _largest_fitting(solve: Callable[[int], Allotment], top: int,
                     room: Callable[[Allotment], str | None],
                     pipeline: dataflow.PipelineOp, why_not_top: str) -> Allotment:
    """The allotment of the most CTA slots a class whose CTAs all reside at once (fewer slots
    never raise the throughput), or a refusal where even the smallest does not fit."""
    low, high, best = 1, top - 1, None
    smallest_why = why_not_top
    while low <= high:
        middle = (low + high) // 2
        try:
            candidate = solve(middle)
        except ValueError as err:  # fewer slots than a class has stages
            smallest_why = str(err)
            low = middle + 1
            continue
        why = room(candidate)
        if why is None:
            best, low = candidate, middle + 1
        else:
            smallest_why, high = why, middle - 1
    if best is None:
        raise diagnostic(PASS, pipeline, f"pipeline @{pipeline.sym_name.data}: no allotment "
                         f"of its stages resides at once ({smallest_why})")
    return best


@dataclass(frozen=True)
class AllotCTAsPass(ModulePass):
    """Size every pipeline's stages for the highest throughput the model predicts."""

    name = "dataflow-allot-ctas"

    sms: int = 132
    dram_bytes_per_s: float = 3.0e12  # measured device copy, bytes read + written
    l2_bytes_per_s: float = 7.0e12
    slots: int = 1  # CTAs of one class (SIMT or tensor) per SM
    shared_slots: bool = False  # SIMT and tensor CTAs take slots of one budget
    solver: str = "exact"  # or "milp" (scipy, HiGHS): the same optimum
    arch: str = "sm_90"  # the occupancy of stages whose kernels' resources are recorded

    def __post_init__(self) -> None:
        if self.sms < 1 or self.slots < 1:
            raise ValueError("options 'sms' and 'slots' must be positive")
        for option in ("dram_bytes_per_s", "l2_bytes_per_s"):
            value = getattr(self, option)
            if not math.isfinite(value):  # nan compares false to everything, `<= 0` included
                raise ValueError(f"bandwidth options must be finite numbers, got "
                                 f"{option}={value}")
        if self.dram_bytes_per_s <= 0 or self.l2_bytes_per_s <= 0:
            raise ValueError("bandwidth options must be positive")
        if self.solver not in SOLVERS:
            raise ValueError(f"option 'solver' must be one of {', '.join(SOLVERS)}")
        limits_for_arch(self.arch)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for pipeline in [p for p in op.walk() if isinstance(p, dataflow.PipelineOp)]:
            rates = stage_rates(pipeline)

            def solve(budget: int, rates: list[StageRate] = rates,
                      pipeline: dataflow.PipelineOp = pipeline) -> Allotment:
                return allot(rates, self.sms, self.dram_bytes_per_s, self.l2_bytes_per_s,
                             self.slots, self.shared_slots, self.solver,
                             equal=pipeline.clustered, budget=budget)

            try:
                result = solve(self.sms * self.slots)
            except ValueError as err:
                raise diagnostic(PASS, pipeline, str(err)) from err
            room = _room(op, pipeline, self.sms, self.arch)
            why_not = room(result)
            if why_not is not None:
                result = _largest_fitting(solve, self.sms * self.slots, room, pipeline,
                                          why_not)
            for stage in pipeline.stages:
                stage.ctas = IntegerAttr(result.ctas[stage.sym_name.data], i64)
            pipeline.attributes[ALLOTMENT_ATTR] = StringAttr(
                f"{result.throughput:.4g} items/s, bound by {result.bound}")

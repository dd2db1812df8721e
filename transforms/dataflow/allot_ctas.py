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
count (`allot`'s `equal`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.passes import ModulePass

from tilesync.analysis.pipeline_model import SOLVERS, StageRate, allot
from tilesync.contract import (
    BSP_RATE_ATTR,
    DRAM_BYTES_ATTR,
    L2_BYTES_ATTR,
    TILES_ATTR,
    UTILIZATION_ATTR,
)
from tilesync.dialects import dataflow
from tilesync.dialects.locations import diagnostic
from tilesync.transforms.dataflow.insert_queues import one_worker

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

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for pipeline in [p for p in op.walk() if isinstance(p, dataflow.PipelineOp)]:
            try:
                result = allot(stage_rates(pipeline), self.sms, self.dram_bytes_per_s,
                               self.l2_bytes_per_s, self.slots, self.shared_slots,
                               self.solver, equal=pipeline.clustered)
            except ValueError as err:
                raise diagnostic(PASS, pipeline, str(err)) from err
            for stage in pipeline.stages:
                stage.ctas = IntegerAttr(result.ctas[stage.sym_name.data], i64)
            pipeline.attributes[ALLOTMENT_ATTR] = StringAttr(
                f"{result.throughput:.4g} items/s, bound by {result.bound}")

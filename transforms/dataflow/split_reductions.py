"""`dataflow-split-reductions`: a reduction in a pipeline becomes fan-in + final stages
(Kitsune §5.2, Algorithm 1, lines 2-5).

A pipeline stage whose sync.stage is a `reduction` with `dataflow.split = k` (split-K of a GEMM,
a reduction over the batch) is replaced by two:

* `@n_fanin`: the same kernel over the grid with one more dimension, the partial index p in
  [0, k); it reads what the reduction read, with the last `forall` range (the reduced one) cut
  into k chunks (`s -> s + p × chunk`), so the k partials run on k times as many CTAs, on the
  resource the reduction declares (`dataflow.resource`; tensor cores by default, a split-K
  GEMM's);
* `@n_final`: the kernel named by `dataflow.final_kernel` over the original grid; each of its
  tiles reads the k partials of that tile.

Stages that read the reduction now read `@n_final`; the fan-in → final edge is a dependency like
any other, so dataflow-insert-queues turns it into a queue whose consumer takes k entries per
tile. Both sync stages join the pipeline, the original is erased with its launches.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr, SymbolRefAttr, i64
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.passes import ModulePass

from tilesync.analysis.stage_graph import StageGraph
from tilesync.contract import (
    DATAFLOW_ELEMENT_ATTR,
    DATAFLOW_FINAL_KERNEL_ATTR,
    DATAFLOW_KIND_ATTR,
    DATAFLOW_PIPELINE_ATTR,
    DATAFLOW_RESOURCE_ATTR,
    DATAFLOW_SPLIT_ATTR,
    TILES_ATTR,
    grid_error,
)
from tilesync.dialects import dataflow, sync
from tilesync.dialects.locations import diagnostic

PASS = "dataflow-split-reductions"


def split_input(dep: sync.DependencyOp, rank: int, parts: int, fanin: str
                 ) -> sync.DependencyOp:
    """`dep` read by the fan-in: one more consumer dimension p; the last forall range is cut
    into `parts` chunks, chunk p at offset p × chunk."""
    ranges = list(dep.ranges)
    old = dep.tiles_map
    dims = [AffineExpr.dimension(i) for i in range(rank + 1)]
    syms = [AffineExpr.symbol(i) for i in range(len(ranges))]
    uneven = _uneven_chunks(dep, parts)
    if uneven is not None:
        raise diagnostic(PASS, dep, uneven)
    if ranges:
        lo, hi = ranges[-1]
        chunk = (hi - lo) // parts
        ranges[-1] = (lo, lo + chunk)
        syms[-1] = syms[-1] + dims[rank] * chunk
    results = [expr.replace_dims_and_symbols(dims[:rank], syms) for expr in old.results]
    new_map = AffineMap(rank + 1, len(ranges), tuple(results))
    split = sync.DependencyOp(dep.producer, SymbolRefAttr(fanin), dep.operand.data, new_map,
                              ranges, dep.clipped is not None)
    split.location = dep.location  # a diagnostic about it points at the dependency it splits
    return split


def _parts(stage: sync.StageOp) -> int | None:
    """The partials a split reduction declares, None for a stage that is not one."""
    kind = stage.attributes.get(DATAFLOW_KIND_ATTR)
    split = stage.attributes.get(DATAFLOW_SPLIT_ATTR)
    if not (isinstance(kind, StringAttr) and kind.data == "reduction") or \
            not isinstance(split, IntegerAttr) or split.value.data < 2:
        return None
    return split.value.data


def split_refusal(stage: sync.StageOp, incoming: Sequence[sync.DependencyOp] = ()
                  ) -> str | None:
    """Why the reduction `stage` cannot become fan-in and final stages (None: it can, or it is
    no reduction): it needs its partials and the kernel adding them; the fan-in's grid is the
    reduction's with the partial index as one more dimension, which must still be a grid a
    launch takes; and each of its dependencies `incoming` must cut its reduced range into as
    many equal chunks."""
    kind = stage.attributes.get(DATAFLOW_KIND_ATTR)
    if not (isinstance(kind, StringAttr) and kind.data == "reduction"):
        return None
    name = stage.sym_name.data
    parts = _parts(stage)
    if parts is None:
        return (f"reduction @{name} needs '{DATAFLOW_SPLIT_ATTR}' (partials per output tile, "
                f"at least 2)")
    if not isinstance(stage.attributes.get(DATAFLOW_FINAL_KERNEL_ATTR), SymbolRefAttr):
        return (f"reduction @{name} needs '{DATAFLOW_FINAL_KERNEL_ATTR}' (the kernel adding "
                f"the partials)")
    why = _fanin_grid_error(stage, parts)
    if why is not None:
        return why
    for dep in incoming:
        uneven = _uneven_chunks(dep, parts)
        if uneven is not None:
            return f"reduction @{name} cannot split into {parts} partials: {uneven}"
    return None


def _fanin_grid_error(stage: sync.StageOp, parts: int) -> str | None:
    grid = (*stage.grid_shape, parts)
    why = grid_error(grid)
    if why is None:
        return None
    return (f"reduction @{stage.sym_name.data} cannot split into {parts} partials: its "
            f"fan-in's grid {list(grid)} (the partial index as one more dimension) is no "
            f"launch grid: {why}")


def _uneven_chunks(dep: sync.DependencyOp, parts: int) -> str | None:
    """Why `dep`'s reduced range (its last forall range) does not cut into `parts` equal
    chunks, if it does not."""
    if not dep.ranges:
        return None
    lo, hi = dep.ranges[-1]
    if (hi - lo) % parts:
        return f"the reduced range [{lo}, {hi}) does not split into {parts} equal chunks"
    return None


def split_fanin(stage: sync.StageOp) -> tuple[sync.StageOp, int] | None:
    """The fan-in stage (not inserted anywhere) a split reduction becomes, and its partials,
    or None for a stage that is not one: what dataflow-form-pipeline judges its reads by. A
    located diagnostic where it cannot split (`split_refusal`)."""
    parts = _parts(stage)
    if parts is None:
        return None
    why = _fanin_grid_error(stage, parts)
    if why is not None:
        raise diagnostic(PASS, stage, why)
    return sync.StageOp(f"{stage.sym_name.data}_fanin", stage.kernel,
                        [*stage.grid_shape, parts], stage.block_shape, stage.tile_shape), parts


@dataclass(frozen=True)
class SplitReductionsPass(ModulePass):
    """Replace each split reduction of a pipeline by fan-in and final stages."""

    name = "dataflow-split-reductions"

    sms: int = 132

    def __post_init__(self) -> None:
        if self.sms < 1:
            raise ValueError(f"option 'sms' must be positive, got {self.sms}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for pipeline in [p for p in op.walk() if isinstance(p, dataflow.PipelineOp)]:
            for df_stage in list(pipeline.stages):
                # the graph of the program as it is now: a split moves the dependencies of
                # the reductions next to it (in any order the pipeline lists them)
                graph = StageGraph.of(op)
                stage = graph.stages.get(df_stage.sym_name.data)
                kind = stage.attributes.get(DATAFLOW_KIND_ATTR) if stage else None
                if not (isinstance(kind, StringAttr) and kind.data == "reduction"):
                    continue
                self._split(op, graph, pipeline, df_stage, stage)

    def _split(self, module: ModuleOp, graph: StageGraph, pipeline: dataflow.PipelineOp,
               df_stage: dataflow.StageOp, stage: sync.StageOp) -> None:
        name = stage.sym_name.data
        why = split_refusal(stage)  # an uneven chunk is refused at its dependency (split_input)
        if why is not None:
            raise diagnostic(PASS, stage, why)
        final_kernel = stage.attributes[DATAFLOW_FINAL_KERNEL_ATTR]
        assert isinstance(final_kernel, SymbolRefAttr)
        fanin, parts = split_fanin(stage)  # type: ignore[misc]
        fanin_name, final_name = fanin.sym_name.data, f"{name}_final"
        # the partials do the reduction's work: the resource it declares (a batch sum is SIMT
        # work), else the tensor cores of a split-K GEMM's
        declared = stage.attributes.get(DATAFLOW_RESOURCE_ATTR)
        fanin_resource = declared if isinstance(declared, dataflow.ResourceAttr) else \
            dataflow.ResourceAttr(dataflow.Resource.TENSOR)
        grid, rank = stage.grid_shape, stage.rank
        final = sync.StageOp(final_name, final_kernel, grid, stage.block_shape, stage.tile_shape)
        # the sums land where the reduction's tiles did; the partials are the fan-in's own
        final.output_map = stage.output_map
        for new, kind in ((fanin, "gemm"), (final, "elementwise")):
            new.location = stage.location  # a diagnostic about it points at the reduction
            new.attributes[DATAFLOW_KIND_ATTR] = StringAttr(kind)
            if DATAFLOW_ELEMENT_ATTR in stage.attributes:  # partials and sums keep the type
                new.attributes[DATAFLOW_ELEMENT_ATTR] = stage.attributes[DATAFLOW_ELEMENT_ATTR]
            new.attributes[DATAFLOW_PIPELINE_ATTR] = SymbolRefAttr(pipeline.sym_name.data)
        parent = stage.parent_block()
        assert parent is not None
        parent.insert_ops_before([fanin, final], stage)
        for dep in graph.incoming(name):
            parent.insert_op_before(split_input(dep, rank, parts, fanin_name), dep)
            dep.detach()
            dep.erase()
        for dep in graph.outgoing(name):
            dep.producer = SymbolRefAttr(final_name)
        dims = [AffineExpr.dimension(i) for i in range(rank)]
        joined = AffineMap(rank, 1, (*dims, AffineExpr.symbol(0)))
        partials = sync.DependencyOp(fanin_name, final_name, 0, joined, [(0, parts)])
        partials.location = stage.location
        parent.insert_op_after(partials, final)
        for launch in [o for o in module.walk() if isinstance(o, sync.LaunchOp)
                       and o.stage.root_reference.data == name]:
            launch.detach()
            launch.erase()
        stage.detach()
        stage.erase()

        tiles = math.prod(grid)
        df_fanin = dataflow.StageOp(fanin_name, fanin.kernel, fanin_resource,
                                    min(tiles * parts, self.sms))
        df_fanin.attributes[TILES_ATTR] = IntegerAttr(tiles * parts, i64)
        df_final = dataflow.StageOp(final_name, final_kernel,
                                    dataflow.ResourceAttr(dataflow.Resource.SIMT),
                                    min(tiles, self.sms))
        df_final.attributes[TILES_ATTR] = IntegerAttr(tiles, i64)
        df_fanin.location = df_final.location = df_stage.location
        block = pipeline.body.block
        block.insert_ops_before([df_fanin, df_final], df_stage)
        df_stage.detach()
        df_stage.erase()

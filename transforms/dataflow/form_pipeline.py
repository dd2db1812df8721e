"""`dataflow-form-pipeline`: pick the stages of a stage program that run spatially (Kitsune
§5.1) and make them a `dataflow.pipeline`.

The input is the stage program the cuSync passes take (`sync.stage`, `sync.dependency`), with
each stage's operator kind in `dataflow.kind`. Two rules exclude a stage: it gathers across all
of its input (declared `gather`, an embedding lookup say, or found so: its one tile reads every
tile of a producer of several) or it is better bulk-synchronous (`bulk`); a reduction that
dataflow-split-reductions cannot split (`split_refusal`: no partials, no kernel adding them,
a reduced range that does not cut into equal chunks) stays out too, bulk-synchronous. The
pipeline must be *contiguous*: no path leaves it and re-enters it (a stage outside between two
inside would have to run before the second and after the first, which a spatial pipeline cannot
do), and a member's tiles reach its consumers in the pipeline through queues, so a stage joins
only where it reads each member as a queue hands entries out (`insert_queues.queue_reads`: each
producer tile to one consumer tile, in ticket order; a GEMM whose every tile reads the one row
tile of a full-row softmax stays outside, bulk-synchronous). A dependency cycle is refused (a
pipeline is part of a DAG, §5.1), and so is a second pipeline of the name of one that exists.
From each stage in dependency order as a seed, a stage joins when it reads a member or a member
reads it (a join's second producer), keeps the group contiguous and queues serve its reads,
until none joins; the largest group of at least two stages (the first of equals) becomes
`dataflow.pipeline @name`, one `dataflow.stage` per member (same kernel; resource from
`dataflow.resource`, else tensor for a GEMM and SIMT for the rest; `tiles` = its grid's tiles;
`ctas` = its tiles, at most the SMs, until dataflow-allot-ctas sizes them; what was measured of
the stage bulk-synchronously, `bsp_rate`, `utilization`, `dram_bytes`, `l2_bytes`, carried over
for it). Each member records `dataflow.pipeline = @name`; the pipeline lists the excluded
stages and why in `dataflow.excluded`. Queues come later (dataflow-insert-queues)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, ModuleOp, StringAttr, SymbolRefAttr, i64
from xdsl.passes import ModulePass

from tilesync.analysis.forward_progress import dependency_cycle, format_cycle
from tilesync.analysis.stage_graph import StageGraph
from tilesync.contract import (
    BSP_RATE_ATTR,
    DATAFLOW_KIND_ATTR,
    DATAFLOW_PIPELINE_ATTR,
    DATAFLOW_RESOURCE_ATTR,
    DRAM_BYTES_ATTR,
    L2_BYTES_ATTR,
    TILES_ATTR,
    UTILIZATION_ATTR,
)
from tilesync.dialects import dataflow, sync
from tilesync.dialects.locations import diagnostic
from tilesync.transforms.dataflow.insert_queues import NoQueue, queue_reads
from tilesync.transforms.dataflow.split_reductions import (
    split_fanin,
    split_input,
    split_refusal,
)

PASS = "dataflow-form-pipeline"
KINDS = ("gemm", "elementwise", "reduction", "gather", "bulk")
EXCLUDED_KINDS = {"gather": "gathers across all its input", "bulk": "bulk-synchronous friendly"}
EXCLUDED_ATTR = "dataflow.excluded"
MEASURED_ATTRS = (BSP_RATE_ATTR, UTILIZATION_ATTR, DRAM_BYTES_ATTR, L2_BYTES_ATTR)


def stage_kind(stage: sync.StageOp) -> str:
    attr = stage.attributes.get(DATAFLOW_KIND_ATTR)
    if attr is None:
        raise diagnostic(PASS, stage, f"stage @{stage.sym_name.data} has no "
                         f"'{DATAFLOW_KIND_ATTR}' ({' | '.join(KINDS)})")
    if not isinstance(attr, StringAttr):
        raise diagnostic(PASS, stage, f"stage @{stage.sym_name.data}: '{DATAFLOW_KIND_ATTR}' "
                         f"must be a string ({' | '.join(KINDS)}), got {attr}")
    if attr.data not in KINDS:
        raise diagnostic(PASS, stage, f"stage @{stage.sym_name.data}: unknown kind "
                         f"'{attr.data}' (expected {' | '.join(KINDS)})")
    return attr.data


def _reach(successors: dict[str, set[str]], start: set[str]) -> set[str]:
    seen, todo = set(), list(start)
    while todo:
        node = todo.pop()
        for nxt in successors[node]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def contiguous(group: set[str], successors: dict[str, set[str]],
               predecessors: dict[str, set[str]]) -> bool:
    """No stage outside `group` lies on a path from a member to a member."""
    below, above = _reach(successors, group), _reach(predecessors, group)
    return not ((below & above) - group)


def select(graph: StageGraph) -> tuple[list[str], dict[str, str]]:
    """The pipeline's stages in dependency order, and the stages excluded with the reason."""
    names = list(graph.stages)
    successors: dict[str, set[str]] = {n: set() for n in names}
    predecessors: dict[str, set[str]] = {n: set() for n in names}
    pairs = graph.dependent_pairs()
    cycle = dependency_cycle(names, pairs)
    if cycle is not None:
        back = next(d for d in graph.dependencies
                    if (d.producer.root_reference.data, d.consumer.root_reference.data)
                    == (cycle[-2], cycle[-1]))
        raise diagnostic(PASS, back, f"the dependencies form a cycle {format_cycle(cycle)}: "
                         "a spatial pipeline runs a part of a graph without cycles")
    for producer, consumer in pairs:
        successors[producer].add(consumer)
        predecessors[consumer].add(producer)
    excluded = {n: EXCLUDED_KINDS[k] for n in names
                if (k := stage_kind(graph.stages[n])) in EXCLUDED_KINDS}
    excluded.update({n: "already in a pipeline" for n in names
                     if DATAFLOW_PIPELINE_ATTR in graph.stages[n].attributes})
    excluded.update({n: why for n in names if n not in excluded
                     and (why := split_refusal(graph.stages[n], graph.incoming(n))) is not None})
    order, done = [], set()

    def visit(name: str) -> None:  # producers first, program order among equals
        if name in done:
            return
        done.add(name)
        for producer in sorted(predecessors[name], key=names.index):
            visit(producer)
        order.append(name)

    for name in names:
        visit(name)
    def reads_of(name: str, producer: str) -> int | NoQueue:
        """`queue_reads` of `name` (not excluded: a reduction that splits) from `producer` as
        dataflow-split-reductions will make it read (a split reduction's partials read its
        inputs, each a chunk of the reduced range)."""
        consumer = graph.stages[name]
        split = split_fanin(consumer)
        deps = [d for d in graph.incoming(name) if d.producer.root_reference.data == producer]
        reader = consumer
        if split is not None:
            deps = [split_input(d, consumer.rank, split[1], split[0].sym_name.data)
                    for d in deps]
            reader = split[0]
        return queue_reads(deps, graph.stages[producer], reader)

    def no_queue(name: str, group: list[str]) -> str | None:
        """Why `name` cannot read a member of `group` through a queue, if it cannot."""
        for producer in (p for p in names if p in group and p in predecessors[name]):
            reads = reads_of(name, producer)
            if isinstance(reads, NoQueue):
                return reads.reason
        return None

    def gathers_all(name: str) -> str | None:
        """Kitsune's second rule by what a stage reads, whatever its declared kind: one tile
        reading every tile of a producer of several starts only once that producer has ended,
        and its queue would hold all of it."""
        for producer in sorted(predecessors[name], key=names.index):
            reads = reads_of(name, producer)
            tiles = math.prod(graph.stages[producer].grid_shape)
            if isinstance(reads, int) and reads == tiles > 1:
                return (f"{EXCLUDED_KINDS['gather']} (its tile reads all {tiles} tiles of "
                        f"@{producer})")
        return None

    excluded.update({n: why for n in names if n not in excluded
                     and (why := gathers_all(n)) is not None})

    def joins(name: str, group: list[str]) -> bool:
        """`name` next to the group (reading a member, or read by one) keeps it contiguous,
        and queues serve every read between it and the members."""
        readers = successors[name] & set(group)
        if not (predecessors[name] & set(group) or readers):
            return False
        return contiguous({*group, name}, successors, predecessors) and \
            no_queue(name, group) is None and \
            all(no_queue(member, [name]) is None for member in readers)

    best: list[str] = []
    for seed in order:
        if seed in excluded:
            continue
        group = [seed]
        grown = True
        while grown:  # until no stage joins: a second producer of a join joins after it
            grown = False
            for name in order:
                if name not in group and name not in excluded and joins(name, group):
                    group.append(name)
                    grown = True
        group.sort(key=order.index)
        if len(group) > len(best):
            best = group
    def left_out(name: str) -> str | None:
        """Why `name` did not join the pipeline `best` (None where it is no pipeline and the
        stage reads it through queues): what `joins` found against it."""
        why = no_queue(name, best)
        if why is not None:
            return f"no queue serves its reads ({why})"
        if len(best) < 2:
            return None
        for member in sorted(successors[name] & set(best), key=order.index):
            why = no_queue(member, [name])
            if why is not None:
                return f"no queue serves @{member}'s reads of it ({why})"
        if not (predecessors[name] | successors[name]) & set(best):
            return "no dependency with the pipeline's stages"
        group = {*best, name}
        between = (_reach(successors, group) & _reach(predecessors, group)) - group
        if not between:
            return None
        return (f"the pipeline would not be contiguous: a path between it and the "
                f"pipeline's stages runs outside, through "
                f"@{', @'.join(sorted(between, key=order.index))}")

    for name in names:  # a stage left out: say why
        why = left_out(name) if name not in best and name not in excluded else None
        if why is not None:
            excluded[name] = why
    return best, excluded


def _reasons(excluded: dict[str, str]) -> ArrayAttr:
    return ArrayAttr([StringAttr(f"@{n}: {why}") for n, why in excluded.items()])


def resource_of(stage: sync.StageOp, kind: str) -> dataflow.ResourceAttr:
    attr = stage.attributes.get(DATAFLOW_RESOURCE_ATTR)
    if isinstance(attr, dataflow.ResourceAttr):
        return attr
    return dataflow.ResourceAttr(dataflow.Resource.TENSOR if kind == "gemm"
                                 else dataflow.Resource.SIMT)


@dataclass(frozen=True)
class FormPipelinePass(ModulePass):
    """Make the largest contiguous group of pipeline-friendly stages a dataflow.pipeline."""

    name = "dataflow-form-pipeline"

    pipeline: str = "spatial"  # the new pipeline's name
    sms: int = 132

    def __post_init__(self) -> None:
        if self.sms < 1:
            raise ValueError(f"option 'sms' must be positive, got {self.sms}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        graph = StageGraph.of(op)
        members, excluded = select(graph)
        if len(members) < 2:
            # nothing to run spatially: the program stays bulk-synchronous, and the module
            # says why where a stage was left out (a pipeline formed says it on itself)
            if excluded:
                op.attributes[EXCLUDED_ATTR] = _reasons(excluded)
            return
        taken = next((p for p in op.walk() if isinstance(p, dataflow.PipelineOp)
                      and p.sym_name.data == self.pipeline), None)
        if taken is not None:
            raise diagnostic(PASS, graph.stages[members[0]], f"a pipeline @{self.pipeline} exists "
                             f"already: name the next one (pipeline=NAME) to form another of @"
                             f"{', @'.join(members)}")
        stages = []
        for name in members:
            stage = graph.stages[name]
            tiles = math.prod(stage.grid_shape)
            df_stage = dataflow.StageOp(name, stage.kernel, resource_of(stage, stage_kind(stage)),
                                        min(tiles, self.sms))
            df_stage.attributes[TILES_ATTR] = IntegerAttr(tiles, i64)
            for name in MEASURED_ATTRS:  # what dataflow-allot-ctas sizes the stage by
                if name in stage.attributes:
                    df_stage.attributes[name] = stage.attributes[name]
            df_stage.location = stage.location  # diagnostics about it point at its stage
            stages.append(df_stage)
            stage.attributes[DATAFLOW_PIPELINE_ATTR] = SymbolRefAttr(self.pipeline)
        pipeline = dataflow.PipelineOp(self.pipeline, stages)
        if excluded:
            pipeline.attributes[EXCLUDED_ATTR] = _reasons(excluded)
        op.body.block.add_op(pipeline)


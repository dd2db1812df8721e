"""`dataflow-insert-queues`: producer → consumer edges of a pipeline become queues (Kitsune
§5.2, Algorithm 1, lines 7-13).

Each pipeline stage whose tiles another stage of the pipeline reads (a `sync.dependency` with
both ends inside) gets one queue `@<stage>_tiles`, whose payload is its output tile (the first
two extents of its `tile`, element type `dataflow.element`, f16 by default); every consumer
stage takes it as an input, so a producer read by several stages multicasts. A queue hands each
entry to one CTA of a consumer stage, so every producer tile must be read by exactly one tile
of each consumer stage (split a hidden dimension into stages first, or it is refused); a
consumer tile that reads r producer tiles takes r entries (`dataflow.reads`) as r consecutive
tickets, and its stage gets one CTA (outside clusters: CTAs drawing a tile's tickets one at a
time could each hold part of a tile and wait for each other, which dataflow-verify refuses).
Tickets name tiles in row-major order (ticket t: the producer's tile t, and the consumer's tile
t when r = 1), so consumer tile i must read exactly the producer tiles r·i .. r·i + r - 1; a
batch reduction reading a column of the producer's tiles, or two consumers of one producer
reading its rows and its columns, are refused (no ticket order serves them). The depth comes
from `pipeline_model.queue_depth`: (r + 1) rounds of the consumer's CTAs where the pipeline's
share of L2 (`l2_bytes` / queues) allows, else as many entries as it holds, never fewer than r.
The rings are pinned in L2. Stage kernels written against global memory do not take their
queues yet: such stages are marked `dataflow.unbound` (the verifier and the lowering refuse
them until a kernel generator rewrites them to acquire, read and release entries)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import gpu
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    IntegerAttr,
    ModuleOp,
    SymbolRefAttr,
    TensorType,
    UnitAttr,
    f16,
    i64,
)
from xdsl.ir import TypeAttribute
from xdsl.passes import ModulePass
from xdsl.traits import SymbolTable

from tilesync.analysis.dependency_analysis import tiles_read
from tilesync.analysis.grid import grid_tiles, linear_id
from tilesync.analysis.pipeline_model import queue_depth
from tilesync.analysis.stage_graph import StageGraph
from tilesync.contract import DATAFLOW_ELEMENT_ATTR, READS_ATTR, UNBOUND_ATTR, QueueLayout
from tilesync.dialects import dataflow, sync
from tilesync.dialects.locations import diagnostic

PASS = "dataflow-insert-queues"


@dataclass(frozen=True)
class NoQueue:
    """Why the tiles of a dependency cannot travel through a queue: the dependency, and the
    reason in words."""

    dependency: sync.DependencyOp
    reason: str


def queue_reads(deps: Sequence[sync.DependencyOp], producer: sync.StageOp,
                consumer: sync.StageOp) -> int | NoQueue:
    """Tiles of `producer` each tile of `consumer` reads through `deps` (the dependencies of
    one consumer on one producer: Q and K read from one QKV GEMM are one queue, its tiles read
    once), when every producer tile goes to exactly one consumer tile and tile i takes the
    tickets r·i .. r·i + r - 1; else why not. The rule dataflow-form-pipeline grows a pipeline
    by, and this pass refuses by."""
    dep = deps[0]
    for stage in (producer, consumer):
        if sync.box_size([(0, extent) for extent in stage.grid_shape]) > \
                sync.ENUMERATION_LIMIT:
            return NoQueue(dep, f"@{stage.sym_name.data}'s grid {tuple(stage.grid_shape)} has "
                                f"more than {sync.ENUMERATION_LIMIT} tiles, whose queue reads "
                                f"are not enumerated")
    readers: Counter = Counter()
    counts = set()
    reading: list[tuple[tuple[int, ...], list[int]]] = []  # consumer tile, tickets it reads
    for tile in grid_tiles(consumer.grid_shape):
        read = sorted({t for d in deps for t in tiles_read(d, tile)})
        counts.add(len(read))
        readers.update(read)
        reading.append((tile, sorted(linear_id(t, producer.grid_shape) for t in read)))
    pname, cname = producer.sym_name.data, consumer.sym_name.data
    shared = [t for t, n in readers.items() if n > 1]
    if shared:
        return NoQueue(dep, f"producer tile {shared[0]} of @{pname} is read by "
                            f"{readers[shared[0]]} tiles of @{cname}: a queue hands each entry "
                            f"to one CTA of a stage (split @{cname}'s hidden dimension into "
                            f"stages)")
    unread = sum(1 for _ in grid_tiles(producer.grid_shape)) - len(readers)
    if unread:
        return NoQueue(dep, f"{unread} tile(s) of @{pname} are never read by @{cname}: their "
                            f"entries would never be released")
    if len(counts) != 1:
        return NoQueue(dep, f"tiles of @{cname} read different numbers of @{pname} tiles "
                            f"({sorted(counts)})")
    r = counts.pop()
    for tile, tickets in reading:
        i = linear_id(tile, consumer.grid_shape)
        if tickets != list(range(r * i, r * i + r)):
            return NoQueue(dep, f"tile {tile} of @{cname} reads the @{pname} tiles of tickets "
                                f"{tickets}, but takes tickets {r * i}..{r * i + r - 1}: "
                                f"tickets name tiles in row-major order, so a tile's entries "
                                f"must be the next {r} of @{pname}'s tiles")
    return r


def reads_per_tile(graph: StageGraph, deps: Sequence[sync.DependencyOp]) -> int:
    """`queue_reads`, refusing where there is no queue."""
    reads = queue_reads(deps, graph.producer_of(deps[0]), graph.consumer_of(deps[0]))
    if isinstance(reads, NoQueue):
        raise diagnostic(PASS, reads.dependency, reads.reason)
    return reads


def one_worker(stage: dataflow.StageOp, pipeline: dataflow.PipelineOp) -> bool:
    """Whether `stage` runs one CTA: it takes several entries of a queue for one tile
    (`dataflow.reads`) outside clusters, where CTAs drawing a tile's tickets one at a time
    could each hold part of a tile and wait for each other forever (dataflow-verify refuses
    that; in a cluster each ring has one worker at each end)."""
    reads = stage.attributes.get(READS_ATTR)
    return not pipeline.clustered and isinstance(reads, DictionaryAttr) and any(
        isinstance(r, IntegerAttr) and r.value.data > 1 for r in reads.data.values())


@dataclass(frozen=True)
class InsertQueuesPass(ModulePass):
    """Make every edge inside a pipeline a queue (one per producer, multicast)."""

    name = "dataflow-insert-queues"

    l2_bytes: int = 25 * 1024 * 1024  # what the pipeline's rings may take of L2

    def __post_init__(self) -> None:
        if self.l2_bytes < 1:
            raise ValueError(f"option 'l2_bytes' must be positive, got {self.l2_bytes}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        graph = StageGraph.of(op)
        for pipeline in [p for p in op.walk() if isinstance(p, dataflow.PipelineOp)]:
            members = {s.sym_name.data: s for s in pipeline.stages}
            edges = [d for d in graph.dependencies
                     if d.producer.root_reference.data in members
                     and d.consumer.root_reference.data in members]
            feeding = {d.producer.root_reference.data for d in edges}
            producers = [name for name in members if name in feeding]  # pipeline order
            if not producers:
                continue
            budget = self.l2_bytes // len(producers)
            inputs: dict[str, list[str]] = {name: [] for name in members}
            reads: dict[str, dict[str, int]] = {name: {} for name in members}
            queues = []
            readers: dict[str, list[str]] = {}
            for producer in producers:
                queue_name = f"{producer}_tiles"
                outgoing = [d for d in edges if d.producer.root_reference.data == producer]
                readers[producer] = list(dict.fromkeys(d.consumer.root_reference.data
                                                       for d in outgoing))
                for consumer in readers[producer]:
                    r = reads_per_tile(graph, [d for d in outgoing
                                               if d.consumer.root_reference.data == consumer])
                    if r > 1:
                        reads[consumer][queue_name] = r
                    inputs[consumer].append(queue_name)
            for name, stage in members.items():
                if reads[name]:
                    stage.attributes[READS_ATTR] = DictionaryAttr(
                        {q: IntegerAttr(r, i64) for q, r in reads[name].items()})
                if one_worker(stage, pipeline):
                    stage.ctas = IntegerAttr(1, i64)
            for producer in producers:
                queue_name = f"{producer}_tiles"
                stage = graph.stages[producer]
                payload = self._payload(stage)
                consumers = readers[producer]
                probe = dataflow.QueueType(1, payload)
                entry = QueueLayout(1, probe.payload_bytes, len(consumers)).entry_bytes
                depths = [queue_depth(reads[c].get(queue_name, 1), members[c].num_ctas, entry,
                                      budget) for c in consumers]
                if None in depths:  # every consumer's tile must fit, not just one's
                    least = max(reads[c].get(queue_name, 1) for c in consumers)
                    raise diagnostic(PASS, stage, f"queue @{queue_name} needs at least {least} "
                                     f"entr{'y' if least == 1 else 'ies'} of {entry} bytes (a "
                                     f"consumer tile's reads), more than its {budget} bytes of "
                                     "L2")
                entries = max(d for d in depths if d is not None)
                queues.append(dataflow.QueueOp(queue_name, dataflow.QueueType(entries, payload),
                                               pin_l2=True))
                members[producer].outputs = ArrayAttr(
                    [*members[producer].outputs.data, *_refs([queue_name])])
            for name, stage in members.items():
                if inputs[name]:
                    stage.inputs = ArrayAttr([*stage.inputs.data, *_refs(inputs[name])])
                kernel = SymbolTable.lookup_symbol(op, stage.kernel)
                takes_queues = isinstance(kernel, gpu.FuncOp) and any(
                    isinstance(t, dataflow.QueueType) for t in kernel.function_type.inputs)
                if (stage.inputs.data or stage.outputs.data) and not takes_queues:
                    stage.attributes[UNBOUND_ATTR] = UnitAttr()
            block = pipeline.body.block
            first = block.first_op
            for queue in queues:
                block.insert_op_before(queue, first)

    @staticmethod
    def _payload(stage) -> TensorType:
        element = stage.attributes.get(DATAFLOW_ELEMENT_ATTR, f16)
        if not isinstance(element, TypeAttribute):
            raise diagnostic(PASS, stage, f"'{DATAFLOW_ELEMENT_ATTR}' must be a type")
        try:  # a queue entry holds whole elements: a type without a size in memory has none
            dataflow.element_bytes(element)
        except ValueError as err:
            raise diagnostic(PASS, stage, f"'{DATAFLOW_ELEMENT_ATTR}': {err}") from None
        shape = list(stage.tile_shape[:2])
        return TensorType(element, shape)


def _refs(names: list[str]) -> list[SymbolRefAttr]:
    return [SymbolRefAttr(n) for n in names]

"""`convert-dataflow-to-nvvm`: the queue ops of stage kernels (Kitsune's ring) as NVVM code.

Which queue a kernel's queue-typed argument is comes from the `dataflow.pipeline` that runs it
(its stage lists inputs, then outputs, in the kernel's argument order). Each such argument
becomes a trailing parameter with the role `queue:@name` (`contract.Role.queue`), bound by the
runtime to the queue's ring (`contract.QueueLayout`: ticket counters, then entries of a
metadata line and a payload). Built from `sync_primitives.SyncBuilder`:

- acquire: the leader thread draws a ticket t (relaxed `atom.add` on its stage's counter; or
  takes the given one, `at %t`), spins with acquire loads until entry `t mod N` is ready for
  round `t div N` (`spin_until`, counts compared modulo 2^32), and a block barrier hands the
  ticket to every thread (`from_leader`, through a shared-memory word per acquire). A free
  entry is one every consumer stage released `round` times (`empty >= round × consumers`); a
  full one was filled `round + 1` times;
- release: a block barrier (every thread is done with the entry), then the leader's
  `release_add` (`fence.acq_rel.gpu` + `red.relaxed.gpu`) adds 1 to the entry's `full` count
  (producer) or `empty` count (each consumer stage: a multicast entry is free once all did);
- draw (ahead): the leader's `atom.add` alone, its value in the leader only; the acquire that
  takes it (`at`) spins on it in the leader and hands it out like a ticket it drew itself;
- entry: the payload's address, `base + header + (t mod N) × entry_bytes + line`.

A kernel whose queue ops carry `threads N` runs B / N queue workers per CTA of its (B, 1, 1)
block (`dataflow.queue_workers`, which refuses other blocks): each group of N threads runs the
same protocol on its own (`sync_primitives.ThreadGroup`). Its leader is the thread with
`tid.x mod N == 0`, and its releases' the one with `tid.x mod N == 32` (`RELEASE_LEADER`,
where N > 32, and `tid.x == 32` for a one-dimensional block of more: a release's fence then
stalls another warp than the next acquire's spin); its
barrier is the named barrier `bar.sync QUEUE_GROUP_BARRIER_BASE + tid.x / N, N`; an acquire
hands the ticket out through a shared word per group (`memref<B/N x i64, 3>`, indexed by
`tid.x / N`).

A cluster queue (`dataflow.queue @q cluster`) has no ring parameter: its ring and transaction
barriers are shared memory of its kernels' CTAs, its tickets counted per thread from every
launch (lowering/cluster_queue_to_nvvm.py); every stage kernel of a clustered pipeline meets its
cluster at entry and before it returns, and records the cluster queues it lowered
(`dataflow.cluster_queues`).

Tickets and counts are never reset, so a pipeline re-launched or replayed from a CUDA graph
needs no memset, as long as each launch takes as many tickets from every stage as it gives.
Every spin times out (`default_timeout_ns`) and traps; with `debug` (the default) it first
writes the queue's parameter, the ticket, the block and whether it waited for a free or a full
entry into the debug record, which the runtime turns into an error naming queue, ticket and
stage.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from xdsl.context import Context
from xdsl.dialects import arith, gpu, llvm, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    DenseArrayBase,
    FunctionType,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StringAttr,
    UnitAttr,
    UnrealizedConversionCastOp,
    i8,
    i32,
    i64,
)
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, RewritePattern, op_type_rewrite_pattern
from xdsl.traits import SymbolTable

from tilesync.compat.rewrite_driver import apply_patterns, ops_of
from tilesync.contract import (
    CLUSTER_QUEUES_ATTR,
    DEBUG_RECORD,
    KNOWN_BLOCK_SIZE_ATTR,
    QUEUE_GROUP_BARRIER_BASE,
    QUEUE_LINE_BYTES,
    SPIN_SITE_QUEUE_FREE,
    SPIN_SITE_QUEUE_FULL,
    QueueLayout,
    Role,
    kernel_tag,
)
from tilesync.dialects import dataflow
from tilesync.dialects.kernel_args import sync_arg
from tilesync.dialects.locations import diagnostic
from tilesync.lowering.cluster_queue_to_nvvm import (
    WARP_THREADS,
    ClusterEnd,
    ClusterQueueLayout,
    add_prologue_and_epilogue,
    allocate_counter,
    declare_array,
    entry_address,
    next_ticket,
    signal_peer,
    wait_for_entry,
)
from tilesync.lowering.sync_primitives import BLOCK, SyncBuilder, ThreadGroup
from tilesync.lowering.sync_to_nvvm import MAX_BACKOFF_NS
from tilesync.lowering.type_conversion import SHARED_ADDRESS_SPACE, convert_type

DEFAULT_QUEUE_TIMEOUT_NS = 200_000_000  # every CTA of a pipeline is resident: 0.2 s is a hang
DEFAULT_QUEUE_BACKOFF_NS = 32
RING_TYPE = MemRefType(i8, [DYNAMIC_INDEX])  # a queue's parameter: its ring, in bytes
TICKET_SLOT_PREFIX = "__tilesync_queue_ticket"
PASS = "convert-dataflow-to-nvvm"
CLUSTER_ARRIVALS = ("warp", "block")


@dataclass(frozen=True)
class QueueUse:
    """A kernel's queue argument as the pipeline binds it: which queue, which end."""

    name: str
    layout: QueueLayout
    entries: int
    consumer: int | None  # index among the queue's consumer stages; None: the producer
    cluster_ranks: tuple[int, int] | None = None
    """A cluster queue's (producer, consumer) stage ranks in the cluster; None: in L2."""


@dataclass(frozen=True)
class BoundQueue:
    use: QueueUse
    ring: BlockArgument  # the appended `queue:@name` parameter
    func: gpu.FuncOp
    param: int  # the ring's parameter position once the queue arguments are dropped


def module_functions(module: ModuleOp) -> list[gpu.FuncOp]:
    """The gpu.funcs of the module's gpu.modules (no walk into function bodies)."""
    return [f for gmod in module.ops if isinstance(gmod, gpu.ModuleOp)
            for f in gmod.body.ops if isinstance(f, gpu.FuncOp)]


def pipelines_of(module: ModuleOp) -> list[dataflow.PipelineOp]:
    return [p for p in module.ops if isinstance(p, dataflow.PipelineOp)]


def queue_uses(module: ModuleOp) -> dict[str, tuple[str, list[QueueUse]]]:
    """For every kernel a pipeline stage runs: (stage, its queue arguments in order)."""
    uses: dict[str, tuple[str, list[QueueUse]]] = {}
    for pipeline in pipelines_of(module):
        queues = {q.sym_name.data: q.queue_type for q in pipeline.queues}
        in_cluster = {q.sym_name.data for q in pipeline.queues if q.in_cluster}
        consumers: dict[str, list[str]] = {name: [] for name in queues}
        producer_rank: dict[str, int] = {}
        for rank, stage in enumerate(pipeline.stages):
            for ref in stage.inputs:
                consumers[ref.root_reference.data].append(stage.sym_name.data)
            for ref in stage.outputs:
                producer_rank[ref.root_reference.data] = rank
        stage_rank = {stage.sym_name.data: rank for rank, stage in enumerate(pipeline.stages)}
        for stage in pipeline.stages:
            name = stage.sym_name.data
            found = []
            for port, refs in (("in", stage.inputs), ("out", stage.outputs)):
                for ref in refs:
                    queue = ref.root_reference.data
                    qtype = queues[queue]
                    layout = QueueLayout(qtype.num_entries, qtype.payload_bytes,
                                         len(consumers[queue]))
                    ranks = None
                    if queue in in_cluster and queue in producer_rank and consumers[queue]:
                        ranks = (producer_rank[queue], stage_rank[consumers[queue][0]])
                    found.append(QueueUse(queue, layout, qtype.num_entries,
                                          consumers[queue].index(name) if port == "in"
                                          else None, ranks))
            kernel = SymbolTable.lookup_symbol(module, stage.kernel)
            if not isinstance(kernel, gpu.FuncOp):
                continue
            key = kernel.sym_name.data
            if key in uses and uses[key][1] != found:
                raise diagnostic(PASS, stage, f"kernel @{key} runs in stages @{uses[key][0]} "
                                 f"and @{name} with different queues; give each stage its own "
                                 "kernel")
            uses[key] = (name, found)
    return uses


def _queue_args(func: gpu.FuncOp) -> list[BlockArgument]:
    return [a for a in func.body.blocks.first.args if isinstance(a.type, dataflow.QueueType)]


def bind_queues(func: gpu.FuncOp, uses: Sequence[QueueUse]) -> dict[SSAValue, BoundQueue]:
    """Append a `queue:@name` parameter for each queue argument of `func` in L2 (a cluster
    queue's ring is in shared memory: `cluster_ends`)."""
    args = _queue_args(func)
    if len(args) != len(uses):
        raise diagnostic(PASS, func, f"kernel @{func.sym_name.data} takes {len(args)} "
                         f"queue(s) but its stage binds {len(uses)}")
    in_l2 = [(arg, use) for arg, use in zip(args, uses) if use.cluster_ranks is None]
    rings = [sync_arg(func, Role.queue(use.name), RING_TYPE) for _, use in in_l2]
    return {arg: BoundQueue(use, ring, func, ring.index - len(args))
            for (arg, use), ring in zip(in_l2, rings)}


def cluster_ends(func: gpu.FuncOp, uses: Sequence[QueueUse], by_warp: bool = False
                 ) -> dict[SSAValue, ClusterEnd]:
    """The kernel's ends of cluster queues, by queue argument. Their barriers count the
    block's warps, so the block must be known and whole warps."""
    ends = {}
    for arg, use in zip(_queue_args(func), uses):
        if use.cluster_ranks is None:
            continue
        block = func.attributes.get(KNOWN_BLOCK_SIZE_ATTR)
        threads = math.prod(block.get_values()) if isinstance(block, DenseArrayBase) else None
        if threads is None or threads % WARP_THREADS:
            raise diagnostic(PASS, func, f"kernel @{func.sym_name.data} uses cluster queue "
                             f"@{use.name}, whose barriers count its warps: it declares a "
                             "block of whole warps (gpu.known_block_size)")
        layout = ClusterQueueLayout(use.entries, use.layout.payload_bytes)
        ends[arg] = ClusterEnd(use.name, layout, *use.cluster_ranks,
                               producer=use.consumer is None, func=func,
                               warps=threads // WARP_THREADS, by_warp=by_warp)
    return ends


def drop_queue_args(func: gpu.FuncOp) -> None:
    """Erase the (now unused) queue-typed arguments: the runtime binds the rings instead."""
    block = func.body.blocks.first
    for arg in _queue_args(func):
        if arg.uses:
            user = next(iter(arg.uses)).operation
            raise diagnostic(PASS, user, f"'{user.name}' takes a queue and has no lowering "
                             "(only dataflow.acquire_*, release_* and entry do)")
        block.erase_arg(arg)
    func.function_type = FunctionType.from_lists([a.type for a in block.args],
                                                 func.function_type.outputs.data)


# ---------------------------------------------------------------------------------------------
# Addresses
# ---------------------------------------------------------------------------------------------


def _ring(b: SyncBuilder, queue: BoundQueue) -> SSAValue:
    return b.value(UnrealizedConversionCastOp.get([queue.ring], [convert_type(RING_TYPE)]))


def _byte_offset(b: SyncBuilder, base: SSAValue, offset: SSAValue | int) -> SSAValue:
    if isinstance(offset, int):
        return b.value(llvm.GEPOp(base, [offset], i8, result_type=base.type))
    return b.value(llvm.GEPOp(base, [llvm.GEP_USE_SSA_VAL], i8, ssa_indices=[offset],
                              result_type=base.type))


def _entry_line(b: SyncBuilder, queue: BoundQueue, ticket: SSAValue) -> tuple[SSAValue,
                                                                              SSAValue]:
    """(address of the metadata line of ticket's entry, ticket's round as i32)."""
    layout = queue.use.layout
    entries = b.const(queue.use.entries, i64)
    entry = b.value(arith.RemUIOp(ticket, entries))
    round_ = b.value(arith.TruncIOp(b.value(arith.DivUIOp(ticket, entries)), i32))
    stride = b.value(arith.MuliOp(entry, b.const(layout.entry_bytes, i64)))
    offset = b.value(arith.AddiOp(stride, b.const(layout.header_bytes, i64)))
    return _byte_offset(b, _ring(b, queue), offset), round_


def _bound(bindings: dict[SSAValue, BoundQueue], op: Operation, queue: SSAValue,
           producer: bool) -> BoundQueue:
    bound = bindings.get(queue)
    if bound is None:
        raise diagnostic(PASS, op, f"'{op.name}': the queue must be an argument of the kernel "
                         "that a dataflow.stage runs")
    if (bound.use.consumer is None) != producer:
        end, ops = (("produces", "acquire_empty / release_full") if bound.use.consumer is None
                    else ("consumes", "acquire_full / release_empty"))
        raise diagnostic(PASS, op, f"'{op.name}': the stage {end} queue @{bound.use.name}, "
                         f"so its kernel uses {ops}")
    return bound


_PRODUCER_OPS = (dataflow.AcquireEmptyOp, dataflow.ReleaseFullOp, dataflow.DrawEmptyOp)
_CONSUMER_OPS = (dataflow.AcquireFullOp, dataflow.ReleaseEmptyOp, dataflow.DrawFullOp)


RELEASE_LEADER = 32
"""The rank in a worker's group of the thread that releases: the second warp's first, so that
its fence (waiting for the entry's writes) stalls another warp than the one whose leader draws
and waits for the next ticket, and the two overlap."""


def worker_group(workers: dataflow.QueueWorkers) -> ThreadGroup:
    """The threads of one queue worker, as SyncBuilder leads and synchronizes them."""
    if workers.threads is None:
        return BLOCK
    return ThreadGroup(workers.threads, QUEUE_GROUP_BARRIER_BASE)


def release_group(func: gpu.FuncOp, workers: dataflow.QueueWorkers) -> ThreadGroup:
    """A worker's threads as its releases lead them: by RELEASE_LEADER where the worker has a
    second warp (a group of more than 32 threads, or a block known to be one-dimensional and
    larger), else by its first thread."""
    group = worker_group(workers)
    if workers.threads is not None:
        return replace(group, leader=RELEASE_LEADER) if workers.threads > RELEASE_LEADER \
            else group
    block = func.attributes.get(KNOWN_BLOCK_SIZE_ATTR)
    if isinstance(block, DenseArrayBase):
        x, *rest = block.get_values()
        if x > RELEASE_LEADER and all(extent == 1 for extent in rest):
            return replace(group, leader=RELEASE_LEADER)
    return group


def _queue_workers(func: gpu.FuncOp) -> dataflow.QueueWorkers:
    try:
        return dataflow.queue_workers(func)
    except dataflow.QueueWorkersError as err:
        raise diagnostic(PASS, err.op, str(err)) from None


def _ticket_slot(func: gpu.FuncOp, workers: int) -> memref.GetGlobalOp:
    """Fresh shared-memory words, one per queue worker of a CTA, through which an acquire's
    leaders hand out their tickets."""
    gmod = func.parent_op()
    assert isinstance(gmod, gpu.ModuleOp)
    slot_type = MemRefType(i64, [workers], NoneAttr(), IntegerAttr(SHARED_ADDRESS_SPACE, i64))
    taken = {op.sym_name.data for op in gmod.body.ops if isinstance(op, memref.GlobalOp)}
    name = next(f"{TICKET_SLOT_PREFIX}_{k}" for k in range(len(taken) + 1)
                if f"{TICKET_SLOT_PREFIX}_{k}" not in taken)
    gmod.body.blocks.first.insert_op_before(
        memref.GlobalOp.get(StringAttr(name), slot_type, UnitAttr()),
        gmod.body.blocks.first.first_op)
    return memref.GetGlobalOp(name, slot_type)


# ---------------------------------------------------------------------------------------------
# Patterns
# ---------------------------------------------------------------------------------------------


_ACQUIRE_OPS = dataflow.ACQUIRE_OPS
_MEETING_OPS = (dataflow.AcquireEmptyOp, dataflow.AcquireFullOp, dataflow.ReleaseFullOp,
                dataflow.ReleaseEmptyOp, gpu.BarrierOp)
"""Ops whose lowering meets the worker (or the whole block) at a barrier."""


def _slot_reused_unseparated(op: Operation) -> bool:
    """Whether acquire `op` may run again, and its leader overwrite the ticket slot, while a
    thread of its worker has yet to read the ticket it handed out last time: `op` is in a loop
    whose body meets at no other barrier on every iteration (no other queue op or gpu.barrier
    at the body's top level; a release there, as a tile's usually is, separates them). The
    slot's barrier after the leader's write does not: a thread may still be before its read
    when the others pass it."""
    child, parent = op, op.parent_op()
    while parent is not None and not isinstance(parent, scf.ForOp | scf.WhileOp | gpu.FuncOp):
        child, parent = parent, parent.parent_op()
    if not isinstance(parent, scf.ForOp):
        return isinstance(parent, scf.WhileOp)
    body = parent.body.blocks.first
    return body is None or not any(isinstance(other, _MEETING_OPS) and other is not child
                                   for other in body.ops)


def _draw(b: SyncBuilder, queue: BoundQueue, producer: bool) -> SSAValue:
    """The next ticket of the stage's counter on `queue` (relaxed `atom.add`; in the leader)."""
    line = 0 if producer else 1 + queue.use.consumer
    counter = _byte_offset(b, _ring(b, queue), queue.use.layout.counter_offset(line))
    return b.atomic_add(counter, b.const(1, i64))


@dataclass
class LowerAcquire(RewritePattern):
    """acquire_empty / acquire_full: draw (or take) a ticket, spin until its entry is ready.

    A ticket drawn ahead (`at` a draw op's value, listed in `drawn`) is the leader's alone: the
    leader spins on it and hands it out, as for a ticket it draws here. An acquire in
    `unseparated` (`_slot_reused_unseparated`, decided before any op is rewritten) first meets
    its worker at a barrier."""

    bindings: dict[SSAValue, BoundQueue]
    workers: dataflow.QueueWorkers
    timeout_ns: int
    backoff_ns: int
    debug: bool
    drawn: set[Operation]
    unseparated: set[Operation]

    @staticmethod
    def matches_op_class(cls: type) -> bool:  # the ops it may rewrite (pattern driver)
        return issubclass(cls, dataflow.AcquireEmptyOp | dataflow.AcquireFullOp)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, dataflow.AcquireEmptyOp | dataflow.AcquireFullOp):
            return
        producer = isinstance(op, dataflow.AcquireEmptyOp)
        queue = _bound(self.bindings, op, op.queue, producer)
        layout = queue.use.layout
        b = SyncBuilder(rewriter)
        given = (b.value(arith.IndexCastOp(op.ticket, i64)) if op.ticket is not None
                 else None)

        def acquire(s: SyncBuilder) -> SSAValue:
            ticket = _draw(s, queue, producer) if given is None else given
            meta, round_ = _entry_line(s, queue, ticket)
            if producer:  # every consumer stage released the previous round
                ptr = _byte_offset(s, meta, QueueLayout.EMPTY_OFFSET)
                target = s.value(arith.MuliOp(round_, s.const(layout.consumers, i32)))
            else:  # the producer filled this round
                ptr = meta
                target = s.value(arith.AddiOp(round_, s.const(1, i32)))
            record, describe = None, None
            if self.debug:
                record = sync_arg(queue.func, DEBUG_RECORD, MemRefType(i32, [DYNAMIC_INDEX]))
                describe = _describe(s, queue, ticket,
                                     SPIN_SITE_QUEUE_FREE if producer else SPIN_SITE_QUEUE_FULL)
            s.spin_until(ptr, target, self.timeout_ns, self.backoff_ns, record, describe)
            return ticket

        group = worker_group(self.workers)
        if given is None or op in self.drawn:
            slot = b.value(_ticket_slot(queue.func, self.workers.count))
            if op in self.unseparated:
                b.barrier(group)  # every thread has read the ticket this slot held before
            ticket = b.from_leader(acquire, slot, group=group)
            rewriter.replace(op, arith.IndexCastOp(ticket, IndexType()))
        else:
            b.in_leader(lambda s: (acquire(s), None)[1], group=group)
            b.barrier(group)
            rewriter.replace(op, [], [op.ticket])


@dataclass
class LowerDraw(RewritePattern):
    """draw_empty / draw_full: the leader draws the ticket (the other threads hold 0 until the
    acquire hands it out); nothing waits for the atomic until that acquire uses it."""

    bindings: dict[SSAValue, BoundQueue]
    workers: dataflow.QueueWorkers

    @staticmethod
    def matches_op_class(cls: type) -> bool:  # the ops it may rewrite (pattern driver)
        return issubclass(cls, dataflow.DrawEmptyOp | dataflow.DrawFullOp)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, dataflow.DrawEmptyOp | dataflow.DrawFullOp):
            return
        producer = isinstance(op, dataflow.DrawEmptyOp)
        queue = _bound(self.bindings, op, op.queue, producer)
        b = SyncBuilder(rewriter)
        (ticket,) = b.in_leader(lambda s: [_draw(s, queue, producer)],
                                group=worker_group(self.workers),
                                otherwise=lambda s: [s.const(0, i64)], result_types=[i64])
        rewriter.replace(op, arith.IndexCastOp(ticket, IndexType()))


def _describe(b: SyncBuilder, queue: BoundQueue, ticket: SSAValue,
              site: int) -> dict[str, SSAValue]:
    """The debug record's fields of a queue spin: kernel, the queue's parameter, the ticket,
    the block and what it waited for."""
    func = queue.func
    block = b.block_fields()
    return {"kernel_tag": b.const(kernel_tag(func.sym_name.data), i32),
            "param": b.const(queue.param, i32),
            "index": b.value(arith.TruncIOp(ticket, i32)),
            **block, "site": b.const(site, i32)}


@dataclass
class LowerRelease(RewritePattern):
    """release_full / release_empty: the worker's barrier, then its leader counts the entry's
    fill (producer) or this consumer stage's release (consumer) with release semantics."""

    bindings: dict[SSAValue, BoundQueue]
    group: ThreadGroup  # `release_group`

    @staticmethod
    def matches_op_class(cls: type) -> bool:  # the ops it may rewrite (pattern driver)
        return issubclass(cls, dataflow.ReleaseFullOp | dataflow.ReleaseEmptyOp)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, dataflow.ReleaseFullOp | dataflow.ReleaseEmptyOp):
            return
        producer = isinstance(op, dataflow.ReleaseFullOp)
        queue = _bound(self.bindings, op, op.queue, producer)
        b = SyncBuilder(rewriter)
        ticket = b.value(arith.IndexCastOp(op.slot, i64))
        b.barrier(self.group)  # every thread has finished writing (or reading) the entry

        def release(s: SyncBuilder) -> None:
            meta, _ = _entry_line(s, queue, ticket)
            s.release_add(meta if producer else
                          _byte_offset(s, meta, QueueLayout.EMPTY_OFFSET))

        b.in_leader(release, group=self.group)
        rewriter.erase(op)


@dataclass
class LowerEntry(RewritePattern):
    """dataflow.entry: the payload of the ticket's entry, as the memref the kernel indexes."""

    bindings: dict[SSAValue, BoundQueue]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: dataflow.EntryOp, rewriter: PatternRewriter, /):
        queue = self.bindings.get(op.queue)
        if queue is None:
            raise diagnostic(PASS, op, "'dataflow.entry': the queue must be an argument of the "
                             "kernel that a dataflow.stage runs")
        b = SyncBuilder(rewriter)
        ticket = b.value(arith.IndexCastOp(op.slot, i64))
        meta, _ = _entry_line(b, queue, ticket)
        payload = _byte_offset(b, meta, QUEUE_LINE_BYTES)
        rewriter.replace(op, UnrealizedConversionCastOp.get([payload], [op.buffer.type]))


def _cluster_end(ends: dict[SSAValue, ClusterEnd], op: Operation, queue: SSAValue,
                 producer: bool) -> ClusterEnd:
    end = ends[queue]
    if end.producer != producer:
        which, ops = (("produces", "acquire_empty / release_full") if end.producer
                      else ("consumes", "acquire_full / release_empty"))
        raise diagnostic(PASS, op, f"'{op.name}': the stage {which} cluster queue "
                         f"@{end.queue}, so its kernel uses {ops}")
    return end


@dataclass
class LowerClusterAcquire(RewritePattern):
    """acquire_empty / acquire_full of a cluster queue: every thread takes its next ticket
    and waits on its CTA's barrier of the entry (cluster_queue_to_nvvm)."""

    ends: dict[SSAValue, ClusterEnd]
    timeout_ns: int
    debug: bool

    @staticmethod
    def matches_op_class(cls: type) -> bool:  # the ops it may rewrite (pattern driver)
        return issubclass(cls, dataflow.AcquireEmptyOp | dataflow.AcquireFullOp)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, dataflow.AcquireEmptyOp | dataflow.AcquireFullOp) or \
                op.queue not in self.ends:
            return
        end = _cluster_end(self.ends, op, op.queue, isinstance(op, dataflow.AcquireEmptyOp))
        b = SyncBuilder(rewriter)
        ticket = next_ticket(b, end)
        wait_for_entry(b, end, ticket, self.timeout_ns, self.debug)
        rewriter.replace(op, arith.IndexCastOp(ticket, IndexType()))


@dataclass
class LowerClusterRelease(RewritePattern):
    """release_full / release_empty of a cluster queue: each warp meets, then arrives on the
    peer's barrier of the entry."""

    ends: dict[SSAValue, ClusterEnd]

    @staticmethod
    def matches_op_class(cls: type) -> bool:  # the ops it may rewrite (pattern driver)
        return issubclass(cls, dataflow.ReleaseFullOp | dataflow.ReleaseEmptyOp)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, dataflow.ReleaseFullOp | dataflow.ReleaseEmptyOp) or \
                op.queue not in self.ends:
            return
        end = _cluster_end(self.ends, op, op.queue, isinstance(op, dataflow.ReleaseFullOp))
        b = SyncBuilder(rewriter)
        signal_peer(b, end, b.value(arith.IndexCastOp(op.slot, i64)))
        rewriter.erase(op)


@dataclass
class LowerClusterEntry(RewritePattern):
    """dataflow.entry of a cluster queue: the entry's generic address in the consumer."""

    ends: dict[SSAValue, ClusterEnd]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: dataflow.EntryOp, rewriter: PatternRewriter, /):
        end = self.ends.get(op.queue)
        if end is None:
            return
        b = SyncBuilder(rewriter)
        ticket = b.value(arith.IndexCastOp(op.slot, i64))
        address = entry_address(b, end, ticket)
        rewriter.replace(op, UnrealizedConversionCastOp.get([address], [op.buffer.type]))


def lower_cluster_queues(func: gpu.FuncOp, ends: dict[SSAValue, ClusterEnd],
                         timeout_ns: int, debug: bool) -> None:
    """The kernel's ops on cluster queues, its arrays, and the cluster's meetings around."""
    for op in func.walk():
        queue = getattr(op, "queue", None)
        if queue in ends:
            why = dataflow.cluster_queue_refusal(op, ends[queue].queue)
            if why is not None:
                raise diagnostic(PASS, op, why)
    ends = {arg: allocate_counter(func, end) for arg, end in ends.items()}
    apply_patterns(func.body, [LowerClusterAcquire(ends, timeout_ns, debug),
                               LowerClusterRelease(ends), LowerClusterEntry(ends)],
                   recursive=True, dce=False)
    used = list({(end.queue, end.producer): end for end in ends.values()}.values())
    for end in used:
        declare_array(end)
    add_prologue_and_epilogue(func, used)
    func.attributes[CLUSTER_QUEUES_ATTR] = ArrayAttr([StringAttr(end.queue) for end in used])


@dataclass(frozen=True)
class ConvertDataflowToNVVMPass(ModulePass):
    """Lower the queue ops of every kernel a `dataflow.pipeline` runs; the pipeline stays."""

    name = "convert-dataflow-to-nvvm"

    default_timeout_ns: int = DEFAULT_QUEUE_TIMEOUT_NS
    backoff_ns: int = DEFAULT_QUEUE_BACKOFF_NS
    debug: bool = True  # timed-out spins name queue, ticket and block in a host-mapped record
    cluster_arrivals: str = "block"
    """Who arrives on a cluster queue's peer barrier at a release: one thread after the CTA's
    barrier ("block"), or each warp for its lanes ("warp"). On an H100 (the queue bench's
    cluster transport, bench/results/dataflow-cluster-arrivals-ab-*, dbc7dc4) the block's one
    arrival delivered 2.44-2.46 / 2.62-2.68 / 2.68 TB/s at 16 / 32 / 64 KB payloads against
    1.83-1.85 / 2.31-2.36 / 2.29-2.48 by warp: a phase then completes on one remote arrival,
    not one a warp."""

    def __post_init__(self) -> None:
        if self.cluster_arrivals not in CLUSTER_ARRIVALS:
            raise ValueError(f"option 'cluster_arrivals' must be one of "
                             f"{', '.join(CLUSTER_ARRIVALS)}, got {self.cluster_arrivals!r}")
        if not 0 < self.default_timeout_ns < 1 << 63:
            raise ValueError("option 'default_timeout_ns' must be a positive number of "
                             f"nanoseconds, got {self.default_timeout_ns}")
        if not 0 <= self.backoff_ns <= MAX_BACKOFF_NS:
            raise ValueError(f"option 'backoff_ns' must be in [0, {MAX_BACKOFF_NS}] (nanosleep "
                             f"sleeps at most 1 ms), got {self.backoff_ns}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        in_clusters = {SymbolTable.lookup_symbol(op, stage.kernel)
                       for pipeline in pipelines_of(op) if pipeline.clustered
                       for stage in pipeline.stages}
        for func in module_functions(op):  # a clustered stage without a cluster queue
            if func in in_clusters and not _queue_args(func) and \
                    CLUSTER_QUEUES_ATTR not in func.attributes:
                add_prologue_and_epilogue(func, [])
                func.attributes[CLUSTER_QUEUES_ATTR] = ArrayAttr([])
        kernels = [f for f in module_functions(op) if _queue_args(f)]
        if not kernels:
            return
        uses = queue_uses(op)
        for func in kernels:
            name = func.sym_name.data
            if name not in uses:
                raise diagnostic(PASS, func, f"kernel @{name} takes queues but no "
                                 "dataflow.stage runs it")
            workers = _queue_workers(func)
            ends = cluster_ends(func, uses[name][1], self.cluster_arrivals == "warp")
            if ends:
                lower_cluster_queues(func, ends, self.default_timeout_ns, self.debug)
            bindings = bind_queues(func, uses[name][1])
            for inner in ops_of(func, (*_PRODUCER_OPS, *_CONSUMER_OPS)):  # refuse first
                _bound(bindings, inner, inner.queue, isinstance(inner, _PRODUCER_OPS))
            drawn = dataflow.drawn_acquires(func)
            unseparated = {acquire for acquire in ops_of(func, _ACQUIRE_OPS)
                           if _slot_reused_unseparated(acquire)}
            apply_patterns(func.body, [LowerAcquire(bindings, workers, self.default_timeout_ns,
                                                    self.backoff_ns, self.debug, drawn,
                                                    unseparated),
                                       LowerDraw(bindings, workers),
                                       LowerRelease(bindings, release_group(func, workers)),
                                       LowerEntry(bindings)],
                           recursive=True, dce=False)
            drop_queue_args(func)

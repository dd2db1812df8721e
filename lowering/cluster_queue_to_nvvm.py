"""The queue ops of a cluster queue (`dataflow.queue @q cluster`) as NVVM code, for
convert-dataflow-to-nvvm.

A cluster queue is one ring per cluster, in the shared memory of its consumer stage's CTA
(dialects/dataflow.py, "Cluster queues"). Every CTA of the pipeline's one kernel holds the same
shared array per queue (`ClusterQueueLayout`), of which each end uses its part:

    [0, 8N)        the consumer's `full` transaction barriers, one an entry (count 1)
    [8N, 16N)      the producer's `empty` barriers, one an entry (count 1)
    [16N, 16N+8)   the producer's next ticket;  [16N+8, 16N+16) the consumer's
    [ring, ...)    N entries of the payload (16-byte aligned), the consumer's

Tickets run 0, 1, 2, ... from every launch (the kernel's prologue initializes the barriers and
zeroes the counters, then meets its cluster at a cluster barrier); ticket t is entry t mod N of
round t div N:

- acquire_empty: the leader takes the next ticket t; from round 1 on it waits, acquiring at
  cluster scope, for the phase of round t div N - 1 of its own `empty[t mod N]` (the consumer's
  release of ticket t - N); the block barrier of `from_leader` hands t out;
- acquire_full: likewise for the phase of round t div N of its own `full[t mod N]`;
- release_full / release_empty: a block barrier (every thread is done with the entry), then
  the leader arrives on the peer's `full[t mod N]` (or `empty[t mod N]`), releasing at cluster
  scope, through `mapa` to the peer's rank;
- entry: the generic address of entry t mod N in the consumer's shared memory (`mapa` to the
  consumer's rank, the consumer's own address in its own CTA), so that plain loads and stores
  reach it.

A barrier's phases complete in ticket order and an end waits for a phase at most one ahead of
the last one it saw complete, so parity identifies the phase. Every wait times out like a queue
spin (`retry_until`), its debug record naming the queue's array (SPIN_SITE_CLUSTER_QUEUE_FREE /
_FULL, "param" the kernel tag of the array's name, "expected" the parity). Before each return
the kernel meets its cluster again, so that no CTA leaves while its peer may still reach its
shared memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.builder import Builder
from xdsl.dialects import arith, gpu, llvm, memref
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    IntegerAttr,
    MemRefType,
    NoneAttr,
    StringAttr,
    UnitAttr,
    UnrealizedConversionCastOp,
    i8,
    i32,
    i64,
)
from xdsl.ir import SSAValue
from xdsl.rewriter import InsertPoint

from tilesync.contract import (
    CLUSTER_QUEUE_SYMBOL_PREFIX,
    DEBUG_RECORD,
    DYNAMIC_SHARED_ATTR,
    SHARED_ADDRESS_SPACE,
    SPIN_SITE_CLUSTER_QUEUE_FREE,
    SPIN_SITE_CLUSTER_QUEUE_FULL,
    kernel_tag,
)
from tilesync.dialects import nvvm
from tilesync.dialects.kernel_args import sync_arg
from tilesync.lowering.sync_primitives import BLOCK, SyncBuilder
from tilesync.lowering.type_conversion import convert_type

BARRIER_BYTES = 8
ENTRY_ALIGNMENT = 16  # a thread's 16-byte access
RING_ALIGNMENT = 128
_DIMS = (gpu.DimensionEnum.X, gpu.DimensionEnum.Y, gpu.DimensionEnum.Z)


@dataclass(frozen=True)
class ClusterQueueLayout:
    """The shared array of one cluster queue, as every CTA of the pipeline holds it."""

    entries: int
    payload_bytes: int

    @property
    def empty_offset(self) -> int:
        return self.entries * BARRIER_BYTES

    def counter_offset(self, producer: bool) -> int:
        return 2 * self.entries * BARRIER_BYTES + (0 if producer else 8)

    @property
    def ring_offset(self) -> int:
        end = 2 * self.entries * BARRIER_BYTES + 16
        return -(-end // RING_ALIGNMENT) * RING_ALIGNMENT

    @property
    def entry_stride(self) -> int:
        return -(-self.payload_bytes // ENTRY_ALIGNMENT) * ENTRY_ALIGNMENT

    @property
    def total_bytes(self) -> int:
        return self.ring_offset + self.entries * self.entry_stride


@dataclass(frozen=True)
class ClusterEnd:
    """A kernel's end of a cluster queue: the queue, its array, the ranks of its two stages in
    the cluster, and which end this kernel is."""

    queue: str
    layout: ClusterQueueLayout
    producer_rank: int
    consumer_rank: int
    producer: bool
    func: gpu.FuncOp

    @property
    def symbol(self) -> str:
        return array_symbol(self.queue)

    @property
    def array_type(self) -> MemRefType:
        return MemRefType(i8, [self.layout.total_bytes], NoneAttr(),
                          IntegerAttr(SHARED_ADDRESS_SPACE, i64))


def array_symbol(queue: str) -> str:
    """The shared array of cluster queue `queue` in its kernels' gpu.module."""
    return f"{CLUSTER_QUEUE_SYMBOL_PREFIX}{queue}"


def declare_array(end: ClusterEnd) -> None:
    """The queue's shared array in the kernel's gpu.module (once for all its kernels): in the
    module's dynamic shared memory, a ring of 64 KiB entries being past the static 48 KiB."""
    gmod = end.func.parent_op()
    assert isinstance(gmod, gpu.ModuleOp)
    for op in gmod.body.ops:
        if isinstance(op, memref.GlobalOp) and op.sym_name.data == end.symbol:
            return
    glob = memref.GlobalOp.get(StringAttr(end.symbol), end.array_type, UnitAttr(),
                               alignment=RING_ALIGNMENT)
    glob.attributes[DYNAMIC_SHARED_ATTR] = UnitAttr()
    gmod.body.blocks.first.insert_op_before(glob, gmod.body.blocks.first.first_op)


def _array(b: SyncBuilder, end: ClusterEnd) -> SSAValue:
    """The array's shared-memory address (!llvm.ptr<3>)."""
    view = b.value(memref.GetGlobalOp(end.symbol, end.array_type))
    return b.value(UnrealizedConversionCastOp.get([view], [convert_type(end.array_type)]))


def _at(b: SyncBuilder, base: SSAValue, offset: SSAValue | int) -> SSAValue:
    if isinstance(offset, int):
        return b.value(llvm.GEPOp(base, [offset], i8, result_type=base.type))
    return b.value(llvm.GEPOp(base, [llvm.GEP_USE_SSA_VAL], i8, ssa_indices=[offset],
                              result_type=base.type))


def _entry_and_round(b: SyncBuilder, end: ClusterEnd, ticket: SSAValue
                     ) -> tuple[SSAValue, SSAValue]:
    entries = b.const(end.layout.entries, i64)
    return b.value(arith.RemUIOp(ticket, entries)), b.value(arith.DivUIOp(ticket, entries))


def _barrier(b: SyncBuilder, end: ClusterEnd, full: bool, entry: SSAValue) -> SSAValue:
    """The address of `full[entry]` or `empty[entry]` in this CTA's array."""
    offset = b.value(arith.MuliOp(entry, b.const(BARRIER_BYTES, i64)))
    if not full:
        offset = b.value(arith.AddiOp(offset, b.const(end.layout.empty_offset, i64)))
    return _at(b, _array(b, end), offset)


def next_ticket(b: SyncBuilder, end: ClusterEnd) -> SSAValue:
    """The end's next ticket, counted in its own array (in the leader: one thread a CTA)."""
    counter = _at(b, _array(b, end), end.layout.counter_offset(end.producer))
    ticket = b.load(counter, "weak", type_=i64)
    b.store(counter, b.value(arith.AddiOp(ticket, b.const(1, i64))), "weak")
    return ticket


def wait_for_entry(b: SyncBuilder, end: ClusterEnd, ticket: SSAValue, timeout_ns: int,
                   debug: bool) -> None:
    """In the leader: wait until ticket's entry is free (producer: the consumer released the
    previous round; nothing to wait for in round 0) or full (consumer)."""
    entry, round_ = _entry_and_round(b, end, ticket)
    bar = _barrier(b, end, not end.producer, entry)

    def wait(s: SyncBuilder, phase: SSAValue) -> None:
        parity = s.value(arith.TruncIOp(s.value(arith.AndIOp(phase, s.const(1, i64))), i32))

        def attempt(a: SyncBuilder) -> SSAValue:
            done = a.value(nvvm.MBarrierTryWaitParityOp(bar, parity, acquire_cluster=True))
            return a.value(arith.CmpiOp(done, a.const(0, i32), "eq"))

        record = describe = None
        if debug:
            record = sync_arg(end.func, DEBUG_RECORD, MemRefType(i32, [DYNAMIC_INDEX]))

            def describe(d: SyncBuilder) -> dict[str, SSAValue]:
                return _describe(d, end, ticket, parity)

        s.retry_until(attempt, timeout_ns, record, describe)

    if end.producer:
        later = b.value(arith.CmpiOp(round_, b.const(0, i64), "ugt"))

        def previous(s: SyncBuilder) -> None:
            wait(s, s.value(arith.SubiOp(round_, s.const(1, i64))))

        b.if_(later, previous)
    else:
        wait(b, round_)


def _describe(b: SyncBuilder, end: ClusterEnd, ticket: SSAValue,
              parity: SSAValue) -> dict[str, SSAValue]:
    ids = [b.value(arith.IndexCastOp(b.value(gpu.BlockIdOp(gpu.DimensionAttr(d))), i32))
           for d in _DIMS]
    site = SPIN_SITE_CLUSTER_QUEUE_FREE if end.producer else SPIN_SITE_CLUSTER_QUEUE_FULL
    return {"kernel_tag": b.const(kernel_tag(end.func.sym_name.data), i32),
            "param": b.const(kernel_tag(end.symbol), i32),
            "index": b.value(arith.TruncIOp(ticket, i32)), "expected": parity,
            "block_x": ids[0], "block_y": ids[1], "block_z": ids[2], "site": b.const(site, i32)}


def signal_peer(b: SyncBuilder, end: ClusterEnd, ticket: SSAValue) -> None:
    """In the leader: the producer marks ticket's entry full on the consumer, the consumer
    marks it free on the producer, releasing at cluster scope."""
    entry, _ = _entry_and_round(b, end, ticket)
    bar = _barrier(b, end, end.producer, entry)  # the peer's: same offset, the other CTA
    peer = end.consumer_rank if end.producer else end.producer_rank
    b.insert(nvvm.MBarrierArriveOp(bar, cta=b.const(peer, i32), release_cluster=True))


def entry_address(b: SyncBuilder, end: ClusterEnd, ticket: SSAValue) -> SSAValue:
    """The generic address of ticket's entry in the consumer's shared memory."""
    entry, _ = _entry_and_round(b, end, ticket)
    offset = b.value(arith.AddiOp(b.value(arith.MuliOp(entry, b.const(end.layout.entry_stride,
                                                                        i64))),
                                  b.const(end.layout.ring_offset, i64)))
    local = _at(b, _array(b, end), offset)
    return b.value(nvvm.MapaOp(local, b.const(end.consumer_rank, i32)))


def meet_cluster(b: SyncBuilder) -> None:
    """Every thread of every CTA of the cluster arrives (release) and waits (acquire)."""
    b.insert(nvvm.ClusterArriveOp())
    b.insert(nvvm.ClusterWaitOp())


def add_prologue_and_epilogue(func: gpu.FuncOp, ends: Sequence[ClusterEnd]) -> None:
    """At the kernel's entry the leader initializes its ends' barriers (count 1) and zeroes
    their counters, then the cluster meets (its peers' barriers are ready before any arrival
    on them); before each return the cluster meets again."""
    block = func.body.blocks.first
    first = block.first_op
    assert first is not None
    b = SyncBuilder(Builder(InsertPoint.before(first)))

    def initialize(s: SyncBuilder) -> None:
        for end in ends:
            base = _at(s, _array(s, end), end.layout.empty_offset if end.producer else 0)
            one = s.const(1, i32)
            for entry in range(end.layout.entries):
                s.insert(nvvm.MBarrierInitOp(_at(s, base, entry * BARRIER_BYTES), one))
            counter = _at(s, _array(s, end), end.layout.counter_offset(end.producer))
            s.store(counter, s.const(0, i64), "weak")
        s.insert(nvvm.FenceMBarrierInitOp())

    b.in_leader(initialize, group=BLOCK)
    meet_cluster(b)
    for ret in [op for op in func.walk() if isinstance(op, gpu.ReturnOp)]:
        meet_cluster(SyncBuilder(Builder(InsertPoint.before(ret))))


__all__ = ["ClusterEnd", "ClusterQueueLayout", "add_prologue_and_epilogue", "array_symbol",
           "declare_array", "entry_address", "next_ticket", "signal_peer",
           "wait_for_entry"]

"""The queue ops of a cluster queue (`dataflow.queue @q cluster`) as NVVM code, for
convert-dataflow-to-nvvm.

A cluster queue is one ring per cluster, in the shared memory of its consumer stage's CTA
(dialects/dataflow.py, "Cluster queues"). Every CTA of the pipeline's one kernel holds the same
shared array per queue (`ClusterQueueLayout`), of which each end uses its part:

    [0, 8N)        the consumer's `full` transaction barriers, one an entry
    [8N, 16N)      the producer's `empty` barriers, one an entry
    [ring, ...)    N entries of the payload (16-byte aligned), the consumer's

Every thread of an end takes every ticket, 0, 1, 2, ... from each launch, counted in a private
word of its own (no thread hands a ticket to another); ticket t is entry t mod N of round
t div N. A barrier's phase completes once the other end arrived: one thread after its CTA's
barrier (count 1), or with `by_warp` each of its warps (count: the block's warps):

- acquire_empty: from round 1 on, every thread waits, acquiring at cluster scope, for the phase
  of round t div N - 1 of its own CTA's `empty[t mod N]` (the consumer's release of t - N);
- acquire_full: every thread waits for the phase of round t div N of its CTA's `full[t mod N]`;
- release_full / release_empty: the CTA meets (or the warp, `bar.warp.sync`: the accesses of
  its threads to the entry come before), then its first thread arrives on the peer's
  `full[t mod N]` (or `empty[t mod N]`), releasing at cluster scope, through `mapa` to the
  peer's rank;
- entry: the generic address of entry t mod N in the consumer's shared memory (its
  shared::cluster address, `mapa` to the consumer's rank, in the producer; its shared address
  in the consumer), so that plain loads and stores reach it; LLVM infers the space back
  (`st.shared::cluster`, `ld.shared`).

A thread waits for a phase at most one ahead of one it saw complete (it took every earlier
ticket of the end, in order), and none completes before the thread's own CTA (or warp) arrived
for it, so parity identifies the phase. Every wait times out like a queue spin (`retry_until`), its
debug record naming the queue's array (SPIN_SITE_CLUSTER_QUEUE_FREE / _FULL, "param" the
kernel tag of its name, "expected" the parity). The kernel's prologue initializes its ends'
barriers (its leader) and the threads' counters, then meets its cluster (a peer's barriers are
ready before any arrival on them); before each return the cluster meets again, so that no CTA
leaves while its peer may still reach its shared memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from xdsl.builder import Builder
from xdsl.dialects import arith, gpu, llvm, memref
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    IndexType,
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
    DEBUG_RECORD,
    DYNAMIC_SHARED_ATTR,
    SHARED_ADDRESS_SPACE,
    SM_90,
    SPIN_SITE_CLUSTER_QUEUE_FREE,
    SPIN_SITE_CLUSTER_QUEUE_FULL,
    cluster_queue_symbol,
    kernel_tag,
)
from tilesync.dialects import nvvm
from tilesync.dialects.kernel_args import sync_arg
from tilesync.dialects.llvmx import AddrSpaceCastOp
from tilesync.lowering.sync_primitives import BLOCK, SyncBuilder
from tilesync.lowering.type_conversion import LOCAL_ADDRESS_SPACE, convert_type

BARRIER_BYTES = 8
WARP_THREADS = SM_90.warp_size
FULL_WARP = -1  # bar.warp.sync's mask: all 32 lanes
ENTRY_ALIGNMENT = 16  # a thread's 16-byte access
RING_ALIGNMENT = 128


@dataclass(frozen=True)
class ClusterQueueLayout:
    """The shared array of one cluster queue, as every CTA of the pipeline holds it."""

    entries: int
    payload_bytes: int

    @property
    def empty_offset(self) -> int:
        return self.entries * BARRIER_BYTES

    @property
    def ring_offset(self) -> int:
        end = 2 * self.entries * BARRIER_BYTES
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
    warps: int  # of each CTA (one block size)
    by_warp: bool = False  # True: each warp arrives for its lanes; else the CTA meets, one does
    counter: SSAValue | None = None  # the thread's next ticket (`allocate_counter`)

    @property
    def arrivals(self) -> int:
        """The arrivals that complete a phase of this end's barriers (the peer's)."""
        return self.warps if self.by_warp else 1

    @property
    def symbol(self) -> str:
        return cluster_queue_symbol(self.queue)

    @property
    def array_type(self) -> MemRefType:
        return MemRefType(i8, [self.layout.total_bytes], NoneAttr(),
                          IntegerAttr(SHARED_ADDRESS_SPACE, i64))


def declare_array(end: ClusterEnd) -> None:
    """The queue's shared array in the kernel's gpu.module (once for all its kernels), in the
    module's dynamic shared memory: a ring of 64 KiB entries is past the static 48 KiB."""
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


COUNTER_TYPE = MemRefType(i64, [1], NoneAttr(), IntegerAttr(LOCAL_ADDRESS_SPACE, i64))


def allocate_counter(func: gpu.FuncOp, end: ClusterEnd) -> ClusterEnd:
    """`end` with the thread's ticket counter: a private word at the kernel's entry, 0."""
    block = func.body.blocks.first
    first = block.first_op
    assert first is not None
    b = SyncBuilder(Builder(InsertPoint.before(first)))
    counter = b.value(memref.AllocaOp.get(i64, shape=[1], memory_space=COUNTER_TYPE.memory_space))
    zero = b.const(0, IndexType())
    b.insert(memref.StoreOp.get(b.const(0, i64), counter, [zero]))
    return replace(end, counter=counter)


def next_ticket(b: SyncBuilder, end: ClusterEnd) -> SSAValue:
    """The thread's next ticket of the end (its private counter, then one more)."""
    assert end.counter is not None
    zero = b.const(0, IndexType())
    ticket = b.value(memref.LoadOp.get(end.counter, [zero]))
    b.insert(memref.StoreOp.get(b.value(arith.AddiOp(ticket, b.const(1, i64))), end.counter,
                                [zero]))
    return ticket


def wait_for_entry(b: SyncBuilder, end: ClusterEnd, ticket: SSAValue, timeout_ns: int,
                   debug: bool) -> None:
    """Wait until ticket's entry is free (producer: the consumer released the previous round;
    nothing to wait for in round 0) or full (consumer)."""
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
    block = b.block_fields()
    site = SPIN_SITE_CLUSTER_QUEUE_FREE if end.producer else SPIN_SITE_CLUSTER_QUEUE_FULL
    return {"kernel_tag": b.const(kernel_tag(end.func.sym_name.data), i32),
            "param": b.const(kernel_tag(end.symbol), i32),
            "index": b.value(arith.TruncIOp(ticket, i32)), "expected": parity,
            **block, "site": b.const(site, i32)}


def signal_peer(b: SyncBuilder, end: ClusterEnd, ticket: SSAValue) -> None:
    """The warp (or with `by_warp` off the CTA) meets, then its first thread arrives for it:
    the producer's on the consumer's barrier of the ticket's entry (full), the consumer's on
    the producer's (free), releasing at cluster scope."""
    if end.by_warp:
        b.insert(nvvm.BarWarpSyncOp(b.const(FULL_WARP, i32)))
        thread, _ = b.block_thread_index()  # warps are runs of 32 in the linear order
        lane = b.value(arith.RemUIOp(thread, b.const(WARP_THREADS, IndexType())))
        first = b.value(arith.CmpiOp(lane, b.const(0, IndexType()), "eq"))
    else:
        b.block_barrier()
        first = b.is_block_leader()

    def arrive(s: SyncBuilder) -> None:
        entry, _ = _entry_and_round(s, end, ticket)
        bar = _barrier(s, end, end.producer, entry)  # the peer's: same offset, the other CTA
        peer = end.consumer_rank if end.producer else end.producer_rank
        s.insert(nvvm.MBarrierArriveOp(bar, cta=s.const(peer, i32), release_cluster=True))

    b.if_(first, arrive)


def entry_address(b: SyncBuilder, end: ClusterEnd, ticket: SSAValue) -> SSAValue:
    """The generic address of ticket's entry in the consumer's shared memory: the producer's
    through the cluster's window (`mapa`), the consumer's own as plain shared memory (a read
    through the window would take the SM-to-SM path to its own SM)."""
    entry, _ = _entry_and_round(b, end, ticket)
    offset = b.value(arith.AddiOp(b.value(arith.MuliOp(entry, b.const(end.layout.entry_stride,
                                                                        i64))),
                                  b.const(end.layout.ring_offset, i64)))
    local = _at(b, _array(b, end), offset)
    if not end.producer:
        return b.value(AddrSpaceCastOp(local, llvm.LLVMPointerType()))
    peer = b.value(nvvm.MapaOp(local, b.const(end.consumer_rank, i32)))
    return b.value(AddrSpaceCastOp(peer, llvm.LLVMPointerType()))


def meet_cluster(b: SyncBuilder) -> None:
    """Every thread of every CTA of the cluster arrives (release) and waits (acquire)."""
    b.insert(nvvm.ClusterArriveOp())
    b.insert(nvvm.ClusterWaitOp())


def add_prologue_and_epilogue(func: gpu.FuncOp, ends: Sequence[ClusterEnd]) -> None:
    """At the kernel's entry the leader initializes its ends' barriers, then the cluster
    meets (its peers' barriers are ready before any arrival on them, and every CTA of the
    cluster has started); before each return the cluster meets again (a stage kernel of a
    clustered pipeline without cluster queues, `ends` empty, meets all the same)."""
    block = func.body.blocks.first
    first = block.first_op
    assert first is not None
    b = SyncBuilder(Builder(InsertPoint.before(first)))

    def initialize(s: SyncBuilder) -> None:
        for end in ends:
            base = _at(s, _array(s, end), end.layout.empty_offset if end.producer else 0)
            arrivals = s.const(end.arrivals, i32)  # the peer's warps (or CTA) arrive on it
            for entry in range(end.layout.entries):
                s.insert(nvvm.MBarrierInitOp(_at(s, base, entry * BARRIER_BYTES), arrivals))
        s.insert(nvvm.FenceMBarrierInitOp())

    if ends:
        b.in_leader(initialize, group=BLOCK)
    meet_cluster(b)
    for ret in [op for op in func.walk() if isinstance(op, gpu.ReturnOp)]:
        meet_cluster(SyncBuilder(Builder(InsertPoint.before(ret))))


__all__ = ["ClusterEnd", "ClusterQueueLayout", "add_prologue_and_epilogue", "allocate_counter",
           "declare_array", "entry_address", "next_ticket", "signal_peer",
           "wait_for_entry"]

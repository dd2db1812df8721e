"""The synchronization primitives of the GPU memory model, built in one place.

`SyncBuilder` inserts them through an xDSL `Builder` (a pattern's rewriter inserts before the
matched op; `nested` builds the body of an `scf.if` or `scf.while`). The sync lowering
(convert-sync-to-nvvm: post, wait, ordered tiles) and the split-K arrival (convert-tile-to-nvvm)
use it, and so does the queue lowering (convert-dataflow-to-nvvm):

- `block_barrier`: `bar.sync 0`, every thread of the block (also its memory, at CTA scope);
  `block_barrier_or` also ORs a predicate over the block;
- `is_block_leader`: thread (0, 0, 0), the one thread that touches semaphores and counters;
- a `ThreadGroup`, the threads a leader acts for: the whole block (`BLOCK`) or each group of
  N consecutive threads of a one-dimensional block, led by its first thread and synchronized
  on a named barrier of its own (`is_leader`, `barrier`, `in_leader`, `from_leader`);
- `release_add`: `fence.acq_rel.gpu`, then a relaxed atomic add at gpu scope (`red`, or `atom`
  when the old value is wanted): the block's writes, ordered before it by the barrier, are
  visible to whoever sees the count. The fence is explicit because LLVM 22 drops the ordering
  of atomicrmw on NVPTX;
- `fence`, `atomic_add`, `compare_and_swap`, `load`, `store`: the nvvm memory operations
  with their ordering and scope;
- `from_leader`: a value computed by the leader thread, handed to its block or group (shared
  memory);
- `short_of`: whether a count is short of its target, both counted modulo 2^32;
- `spin_until`: one thread spins on an acquire load with `nanosleep` backoff until the value
  reaches a target; a first load before the loop decides alone when the target is reached;
  the loop reads `%globaltimer` and traps after a timeout, first writing what it saw into a
  debug record when there is one;
- `retry_until`: repeats an attempt that blocks a while itself (`mbarrier.try_wait`) until it
  succeeds, with the same timeout, trap and record, the clock started by the first failure.

Everything is emitted as gpu / arith / scf / nvvm ops (and the llvm GEPs of the debug record),
which the later passes lower like the rest of the kernel.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from xdsl.builder import Builder
from xdsl.dialects import arith, gpu, llvm, memref, scf
from xdsl.dialects.builtin import IndexType, UnrealizedConversionCastOp, i32, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint

from tilesync.compat.op_templates import TEMPLATES
from tilesync.contract import DEBUG_RECORD_FIELDS
from tilesync.dialects import nvvm
from tilesync.lowering.type_conversion import convert_type

_DIMS = (gpu.DimensionEnum.X, gpu.DimensionEnum.Y, gpu.DimensionEnum.Z)

OpT = TypeVar("OpT", bound=Operation)
Body = Callable[["SyncBuilder"], Sequence[SSAValue] | None]
"""Builds a region's body; returns the values its terminator yields (None: nothing)."""


@dataclass(frozen=True)
class ThreadGroup:
    """The threads that act together around a leader: the whole block (`threads` None), or each
    group of `threads` consecutive threads of a one-dimensional block (thread ids [kN, (k+1)N)),
    independently of the other groups: group k is led by its first thread and synchronizes on
    named barrier `first_barrier + k`. `leader`: the rank in its group of the thread that
    leads a group (another warp's than the first leads where that warp's stall should not
    delay the first's work)."""

    threads: int | None = None
    first_barrier: int = 0
    leader: int = 0


BLOCK = ThreadGroup()


class SyncBuilder:
    """Inserts synchronization primitives (and the few plain ops around them) through an xDSL
    Builder."""

    def __init__(self, builder: Builder):
        self.builder = builder

    @classmethod
    def nested(cls, block: Block) -> SyncBuilder:
        """A builder appending to `block` (the body of a region being built)."""
        return cls(Builder(InsertPoint.at_end(block)))

    def insert(self, op: OpT) -> OpT:
        return self.builder.insert(op)

    def value(self, op: Operation) -> SSAValue:
        """Insert `op`; its single result."""
        return self.insert(op).results[0]

    def const(self, value: int, type_: Attribute = i32) -> SSAValue:
        return self.value(TEMPLATES.int_constant(arith.ConstantOp, value, type_))

    # -- barriers and the leader thread -------------------------------------------------------

    def block_barrier(self) -> None:
        """`bar.sync 0`: every thread of the block arrives; their earlier accesses are done."""
        self.insert(nvvm.Barrier0Op())

    def block_barrier_or(self, pred: SSAValue) -> SSAValue:
        """A block barrier that also ORs the i32 `pred` over the block: 1 in every thread
        when any thread passed a non-zero one."""
        return self.value(nvvm.Barrier0OrOp(pred))

    def group_index(self, group: ThreadGroup) -> SSAValue:
        """k, the group of `group` the thread is in (`tid.x / threads`; 0 for the block)."""
        if group.threads is None:
            return self.const(0, IndexType())
        tid = self.value(gpu.ThreadIdOp(gpu.DimensionAttr(gpu.DimensionEnum.X)))
        return self.value(arith.DivUIOp(tid, self.const(group.threads, IndexType())))

    def is_leader(self, group: ThreadGroup, dims: int = 3) -> SSAValue:
        """True in the leading thread of the thread's group (`tid.x mod threads == leader`),
        or of the block: its first (`is_block_leader(dims)`), or `tid.x == leader` (a
        one-dimensional block)."""
        if group.threads is None and group.leader == 0:
            return self.is_block_leader(dims)
        tid = self.value(gpu.ThreadIdOp(gpu.DimensionAttr(gpu.DimensionEnum.X)))
        if group.threads is None:
            return self.value(arith.CmpiOp(tid, self.const(group.leader, IndexType()), "eq"))
        rank = self.value(arith.RemUIOp(tid, self.const(group.threads, IndexType())))
        return self.value(arith.CmpiOp(rank, self.const(group.leader, IndexType()), "eq"))

    def barrier(self, group: ThreadGroup) -> None:
        """Every thread of the thread's group arrives: `bar.sync first_barrier + k, threads`
        (its id computed at run time); the block's barrier for the block."""
        if group.threads is None:
            self.block_barrier()
            return
        index = self.value(arith.IndexCastOp(self.group_index(group), i32))
        barrier_id = self.value(arith.AddiOp(index, self.const(group.first_barrier)))
        self.insert(nvvm.BarrierSyncOp(barrier_id, group.threads))

    def is_block_leader(self, dims: int = 3) -> SSAValue:
        """True in the block's first thread. `dims`: how many thread dimensions the block has
        (a one-dimensional block needs only `tid.x == 0`)."""
        ids = [self.value(gpu.ThreadIdOp(gpu.DimensionAttr(d))) for d in _DIMS[:dims]]
        any_nonzero = ids[0]
        for other in ids[1:]:
            any_nonzero = self.value(arith.OrIOp(any_nonzero, other))
        return self.value(arith.CmpiOp(any_nonzero, self.const(0, IndexType()), "eq"))

    def block_fields(self) -> dict[str, SSAValue]:
        """The block's index as a debug record's `block_x`, `block_y`, `block_z` (i32)."""
        ids = [self.value(arith.IndexCastOp(self.value(gpu.BlockIdOp(gpu.DimensionAttr(d))),
                                            i32)) for d in _DIMS]
        return dict(zip(("block_x", "block_y", "block_z"), ids, strict=True))

    def block_thread_index(self) -> tuple[SSAValue, SSAValue]:
        """(the thread's linear index in its block, the block's number of threads)."""
        ids = [self.value(gpu.ThreadIdOp(gpu.DimensionAttr(d))) for d in _DIMS]
        dims = [self.value(gpu.BlockDimOp(gpu.DimensionAttr(d))) for d in _DIMS]
        plane = self.value(arith.AddiOp(ids[1], self.value(arith.MuliOp(dims[1], ids[2]))))
        thread = self.value(arith.AddiOp(ids[0], self.value(arith.MuliOp(dims[0], plane))))
        threads = self.value(arith.MuliOp(dims[0], self.value(arith.MuliOp(dims[1], dims[2]))))
        return thread, threads

    # -- ordered memory operations ----------------------------------------------------------

    def fence(self, ordering: str = "acq_rel", scope: str = "gpu") -> None:
        self.insert(nvvm.FenceOp(ordering, scope))

    def release_add(self, ptr: SSAValue, amount: int = 1, *, old: bool = False
                    ) -> SSAValue | None:
        """The release of a post or an arrival: `fence.acq_rel.gpu`, then a relaxed gpu-scope
        add of `amount` to the i32 at `ptr`; the value before the add when `old`."""
        self.fence("acq_rel", "gpu")
        if old:
            return self.atomic_add(ptr, self.const(amount))
        self.insert(nvvm.ReduceOp("add", ptr, self.const(amount), "relaxed", "gpu"))
        return None

    def atomic_add(self, ptr: SSAValue, value: SSAValue, scope: str = "gpu") -> SSAValue:
        """Relaxed `atom.add`; the old value."""
        return self.value(nvvm.AtomicOp("add", ptr, value, "relaxed", scope))

    def compare_and_swap(self, ptr: SSAValue, compare: SSAValue, new: SSAValue,
                         scope: str = "gpu") -> SSAValue:
        """Relaxed `atom.cas`; the old value."""
        return self.value(nvvm.AtomicCASOp(ptr, compare, new, "relaxed", scope))

    def load(self, ptr: SSAValue, ordering: str = "acquire", scope: str = "gpu",
             type_: Attribute = i32) -> SSAValue:
        return self.value(nvvm.LoadOp(ptr, type_, ordering, scope))

    def store(self, ptr: SSAValue, value: SSAValue, ordering: str = "relaxed",
              scope: str = "gpu") -> None:
        self.insert(nvvm.StoreOp(ptr, value, ordering, scope))

    # -- structured control flow -------------------------------------------------------------

    def if_(self, cond: SSAValue, then: Body, otherwise: Body | None = None,
            result_types: Sequence[Attribute] = ()) -> Sequence[SSAValue]:
        """`scf.if cond` with the bodies `then` and `otherwise` build; its results."""
        regions = [self._region(then)]
        if otherwise is not None:
            regions.append(self._region(otherwise))
        return self.insert(scf.IfOp(cond, list(result_types), *regions)).results

    def in_leader(self, then: Body, *, group: ThreadGroup = BLOCK, dims: int = 3,
                  otherwise: Body | None = None,
                  result_types: Sequence[Attribute] = ()) -> Sequence[SSAValue]:
        """`then` in the first thread of the block (or of each `group`) only (`otherwise` in
        the others)."""
        return self.if_(self.is_leader(group, dims), then, otherwise, result_types)

    @staticmethod
    def _region(body: Body) -> Region:
        block = Block()
        nested = SyncBuilder.nested(block)
        nested.insert(scf.YieldOp(*(body(nested) or ())))
        return Region(block)

    def from_leader(self, compute: Callable[[SyncBuilder], SSAValue], slot: SSAValue,
                    *, group: ThreadGroup = BLOCK, dims: int = 3) -> SSAValue:
        """`compute` in the first thread of the block (or of each `group`), its value handed to
        every thread of it through the shared-memory `slot` (a memref<GxT, 3>, a word per
        group: G = 1 for the block) and its barrier. The barrier that separates two uses of
        one slot is the caller's (a queue's release begins with one)."""
        index = self.group_index(group)

        def lead(b: SyncBuilder) -> None:
            b.insert(memref.StoreOp.get(compute(b), slot, [index]))

        self.in_leader(lead, group=group, dims=dims)
        self.barrier(group)
        return self.value(memref.LoadOp.get(slot, [index]))

    # -- spin-waiting -------------------------------------------------------------------------

    def short_of(self, seen: SSAValue, target: SSAValue) -> SSAValue:
        """Whether the count `seen` has not reached `target` yet, both i32 counted modulo
        2^32: `seen - target` as a signed i32 is < 0. Semaphores, start flags and queue rounds
        only grow, and a waiter is never 2^31 counts away from its target, so this holds
        across the wrap, where `seen < target` does not: after 2^31 / posts epochs a target
        turns negative while the last epoch's value is still positive, and the wait would
        pass early."""
        ahead = self.value(arith.SubiOp(seen, target))
        return self.value(arith.CmpiOp(ahead, self.const(0, i32), "slt"))

    def spin_until(self, ptr: SSAValue, target: SSAValue, timeout_ns: int, backoff_ns: int,
                   record: SSAValue | None = None,
                   describe: Mapping[str, SSAValue] | None = None) -> None:
        """Spin (acquire loads, `nanosleep` backoff) until the i32 at `ptr` reaches `target`
        (counted modulo 2^32: `short_of`); trap after `timeout_ns` of `%globaltimer`, first
        writing `describe`, the target and the value seen into the debug record (a memref,
        DEBUG_RECORD_FIELDS) when there is one.

        One acquire load decides first: a target already reached (a stream-ordered consumer,
        a tile finished long before) costs that load alone, no timer reads; the timed loop
        runs only after it failed."""
        def not_ready(b: SyncBuilder) -> tuple[SSAValue, SSAValue]:
            seen = b.load(ptr, "acquire", "gpu")
            return seen, b.short_of(seen, target)

        def spin(r: SyncBuilder) -> None:
            start = r.value(nvvm.read_sreg("globaltimer"))

            def before(b: SyncBuilder) -> None:
                seen, keep_spinning = not_ready(b)
                now = b.value(nvvm.read_sreg("globaltimer"))
                elapsed = b.value(arith.SubiOp(now, start))
                timed_out = b.value(arith.CmpiOp(elapsed, b.const(timeout_ns, i64), "sgt"))

                def on_timeout(t: SyncBuilder) -> None:
                    if record is not None:
                        t.record_timeout(record, {**(describe or {}), "expected": target,
                                                  "seen": seen})
                    t.insert(nvvm.TrapOp())

                b.if_(timed_out, on_timeout)
                b.insert(scf.ConditionOp(keep_spinning))

            def after(b: SyncBuilder) -> None:
                b.insert(nvvm.NanosleepOp(b.const(backoff_ns, i32)))
                b.insert(scf.YieldOp())

            condition, body = Block(), Block()
            before(SyncBuilder.nested(condition))
            after(SyncBuilder.nested(body))
            r.insert(scf.WhileOp([], [], Region(condition), Region(body)))

        self.if_(not_ready(self)[1], spin)

    def retry_until(self, attempt: Callable[[SyncBuilder], SSAValue], timeout_ns: int,
                    record: SSAValue | None = None,
                    describe: Callable[[SyncBuilder], Mapping[str, SSAValue]] | None = None,
                    before_trap: Callable[[SyncBuilder], None] | None = None) -> None:
        """Repeat `attempt` (it builds one try and an i1: true when the try failed) until a try
        succeeds; trap once `timeout_ns` of `%globaltimer` have passed since the first failure,
        first writing the fields `describe` builds into the debug record when there is one and
        then what `before_trap` builds. The first try comes before the loop: a wait that
        succeeds at once reads no timer and carries no state, and everything else is on the
        path of a failed try."""
        def retry(r: SyncBuilder) -> None:
            start = r.value(nvvm.read_sreg("globaltimer"))

            def before(b: SyncBuilder) -> None:
                b.insert(scf.ConditionOp(attempt(b)))

            def after(b: SyncBuilder) -> None:
                now = b.value(nvvm.read_sreg("globaltimer"))
                elapsed = b.value(arith.SubiOp(now, start))
                timed_out = b.value(arith.CmpiOp(elapsed, b.const(timeout_ns, i64), "sgt"))

                def on_timeout(t: SyncBuilder) -> None:
                    if record is not None:
                        t.record_timeout(record, describe(t) if describe is not None else {})
                    if before_trap is not None:
                        before_trap(t)
                    t.insert(nvvm.TrapOp())

                b.if_(timed_out, on_timeout)
                b.insert(scf.YieldOp())

            condition, body = Block(), Block()
            before(SyncBuilder.nested(condition))
            after(SyncBuilder.nested(body))
            r.insert(scf.WhileOp([], [], Region(condition), Region(body)))

        self.if_(attempt(self), retry)

    def record_timeout(self, record: SSAValue, fields: Mapping[str, SSAValue]) -> None:
        """The first block to time out claims the record (cas 0 -> 1) and writes `fields` (the
        other DEBUG_RECORD_FIELDS, in their order; one not given stays 0) volatile, then a
        system fence, then `complete` (and a fence again): the record is mapped host memory,
        still readable after the trap. A block that lost the claim waits (at most
        RECORD_WAIT_NS of `%globaltimer`) for `complete` before it goes on to its trap, which
        would stop the grid, the claiming block too, perhaps half-way through the fields."""
        base = self.value(UnrealizedConversionCastOp.get([record], [convert_type(record.type)]))
        zero, one = self.const(0, i32), self.const(1, i32)
        old = self.compare_and_swap(base, zero, one, "sys")
        claimed = self.value(arith.CmpiOp(old, zero, "eq"))

        def field(b: SyncBuilder, name: str) -> SSAValue:
            offset = DEBUG_RECORD_FIELDS.index(name)
            return b.value(llvm.GEPOp(base, [offset], i32, result_type=base.type))

        def write(b: SyncBuilder) -> None:
            for name in DEBUG_RECORD_FIELDS:
                if name not in ("claimed", "complete") and name in fields:
                    b.store(field(b, name), fields[name], "volatile")
            b.fence("sc", "sys")
            b.store(field(b, "complete"), one, "volatile")
            b.fence("sc", "sys")

        def wait_until_complete(b: SyncBuilder) -> None:
            complete = field(b, "complete")
            start = b.value(nvvm.read_sreg("globaltimer"))

            def before(w: SyncBuilder) -> None:
                written = w.load(complete, "volatile")
                pending = w.value(arith.CmpiOp(written, zero, "eq"))
                elapsed = w.value(arith.SubiOp(w.value(nvvm.read_sreg("globaltimer")), start))
                in_time = w.value(arith.CmpiOp(elapsed, w.const(RECORD_WAIT_NS, i64), "slt"))
                w.insert(scf.ConditionOp(w.value(arith.AndIOp(pending, in_time))))

            condition, body = Block(), Block()
            before(SyncBuilder.nested(condition))
            SyncBuilder.nested(body).insert(scf.YieldOp())
            b.insert(scf.WhileOp([], [], Region(condition), Region(body)))

        self.if_(claimed, write, wait_until_complete)


RECORD_WAIT_NS = 1_000_000
"""How long a block that timed out after another claimed the debug record waits for that
block's fields before its own trap (record_timeout)."""


__all__ = ["BLOCK", "RECORD_WAIT_NS", "SyncBuilder", "ThreadGroup"]

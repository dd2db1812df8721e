"""SyncBuilder: each primitive emits the ops of its protocol, in order, and verifies; a leader
acts for the whole block or for each group of threads (`ThreadGroup`)."""

from __future__ import annotations

from xdsl.builder import Builder
from xdsl.dialects import arith, func, llvm, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    IntAttr,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    NoneAttr,
    i32,
    i64,
)
from xdsl.ir import SSAValue
from xdsl.rewriter import InsertPoint

from tilesync.contract import DEBUG_RECORD_FIELDS
from tilesync.dialects import nvvm
from tilesync.lowering.sync_primitives import BLOCK, SyncBuilder, ThreadGroup

GLOBAL_PTR = llvm.LLVMPointerType(IntAttr(1))
RECORD = MemRefType(i32, [DYNAMIC_INDEX])


def _build(body) -> tuple[ModuleOp, func.FuncOp]:
    kernel = func.FuncOp("k", ([GLOBAL_PTR, i32, RECORD], []))
    block = kernel.body.block
    b = SyncBuilder(Builder(InsertPoint.at_end(block)))
    body(b, *block.args)
    b.insert(func.ReturnOp())
    module = ModuleOp([kernel])
    module.verify()
    return module, kernel


def _names(ops) -> list[str]:
    return [op.name for op in ops]


def test_post_is_barrier_then_the_leaders_fenced_red():
    def post(b: SyncBuilder, ptr, value, record):
        b.block_barrier()
        b.in_leader(lambda leader: leader.release_add(ptr))

    _, kernel = _build(post)
    ops = list(kernel.body.block.ops)
    assert _names(ops) == ["nvvm.barrier0", "gpu.thread_id", "gpu.thread_id", "gpu.thread_id",
                           "arith.ori", "arith.ori", "arith.constant", "arith.cmpi", "scf.if",
                           "func.return"]
    leader = ops[-2]
    assert isinstance(leader, scf.IfOp)
    assert _names(leader.true_region.block.ops) == [
        "nvvm.fence", "arith.constant", "nvvm.red", "scf.yield"]
    fence, _, red, _ = leader.true_region.block.ops
    assert isinstance(fence, nvvm.FenceOp) and fence.scope.data == nvvm.MemScope.GPU
    assert isinstance(red, nvvm.ReduceOp) and red.ordering.data == nvvm.MemOrder.RELAXED


def test_from_leader_hands_each_group_its_leaders_value_on_the_groups_barrier():
    slot_type = MemRefType(i64, [4], NoneAttr(), IntegerAttr(3, i64))
    group = ThreadGroup(threads=64, first_barrier=3)

    def hand_out(b: SyncBuilder, ptr, value, record):
        slot = b.value(memref.AllocaOp.get(i64, shape=[4], memory_space=IntegerAttr(3, i64)))
        b.from_leader(lambda leader: leader.atomic_add(ptr, leader.const(1, i64)), slot,
                      group=group)

    _, kernel = _build(hand_out)
    ops = list(kernel.body.block.ops)
    assert _names(ops) == [
        "memref.alloca",
        "gpu.thread_id", "arith.constant", "arith.divui",  # k = tid.x / 64: the slot's word
        "gpu.thread_id", "arith.constant", "arith.remui", "arith.constant", "arith.cmpi",
        "scf.if",  # the group's first thread: tid.x mod 64 == 0
        "gpu.thread_id", "arith.constant", "arith.divui", "arith.index_cast", "arith.constant",
        "arith.addi", "nvvm.barrier.sync",  # bar.sync 3 + k, 64
        "memref.load", "func.return"]
    word = ops[3].results[0]
    store = list(ops[9].true_region.block.ops)[-2]
    assert isinstance(store, memref.StoreOp) and list(store.indices) == [word]
    assert ops[0].results[0].type == slot_type
    barrier = ops[16]
    assert isinstance(barrier, nvvm.BarrierSyncOp) and barrier.count.value.data == 64
    assert barrier.dynamic_id is ops[15].results[0] and barrier.barrier_id is None
    assert ops[14].value.value.data == 3
    assert list(ops[17].indices) == [word]


def test_the_block_is_the_default_group():
    def hand_out(b: SyncBuilder, ptr, value, record):
        slot = b.value(memref.AllocaOp.get(i64, shape=[1], memory_space=IntegerAttr(3, i64)))
        b.from_leader(lambda leader: leader.atomic_add(ptr, leader.const(1, i64)), slot)
        b.barrier(BLOCK)

    _, kernel = _build(hand_out)
    assert _names(kernel.body.block.ops) == [
        "memref.alloca", "arith.constant", "gpu.thread_id", "gpu.thread_id", "gpu.thread_id",
        "arith.ori", "arith.ori", "arith.constant", "arith.cmpi", "scf.if", "nvvm.barrier0",
        "memref.load", "nvvm.barrier0", "func.return"]


def test_arrival_returns_the_old_count_and_a_one_dimensional_leader():
    def arrive(b: SyncBuilder, ptr, value, record):
        def count(leader: SyncBuilder):
            old = leader.release_add(ptr, 2, old=True)
            return [old]

        (mine,) = b.in_leader(count, dims=1, otherwise=lambda o: [o.const(0)],
                              result_types=[i32])
        b.block_barrier_or(mine)

    _, kernel = _build(arrive)
    names = _names(kernel.body.block.ops)
    assert names == ["gpu.thread_id", "arith.constant", "arith.cmpi", "scf.if",
                     "nvvm.barrier0.or", "func.return"]
    branch = kernel.body.block.ops.first.next_op.next_op.next_op
    assert _names(branch.true_region.block.ops) == [
        "nvvm.fence", "arith.constant", "nvvm.atom", "scf.yield"]
    assert _names(branch.false_region.block.ops) == ["arith.constant", "scf.yield"]


def test_spin_until_loads_acquire_once_then_times_out_records_and_backs_off():
    def wait(b: SyncBuilder, ptr, target, record):
        b.spin_until(ptr, target, timeout_ns=1000, backoff_ns=32, record=record,
                     describe={name: target for name in DEBUG_RECORD_FIELDS})

    module, kernel = _build(wait)
    # the fast path: one acquire load, and only a target not reached reads the timer
    # counts compare modulo 2^32: seen - target < 0 as a signed i32 (short_of)
    assert _names(kernel.body.block.ops) == ["nvvm.ld", "arith.subi", "arith.constant",
                                             "arith.cmpi", "scf.if", "func.return"]
    short = kernel.body.block.ops.last.prev_op.prev_op
    assert isinstance(short, arith.CmpiOp) and short.predicate.value.data == 2  # slt
    first = kernel.body.block.ops.first
    assert isinstance(first, nvvm.LoadOp) and first.ordering.data == nvvm.MemOrder.ACQUIRE
    spin = kernel.body.block.ops.last.prev_op
    assert isinstance(spin, scf.IfOp) and spin.cond is spin.prev_op.results[0]
    start, loop, _ = spin.true_region.block.ops
    assert isinstance(start, nvvm.SpecialRegisterOp) and start.SREG == "globaltimer"
    assert isinstance(loop, scf.WhileOp)
    before = _names(loop.before_region.block.ops)
    assert before == ["nvvm.ld", "arith.subi", "arith.constant", "arith.cmpi",
                      "nvvm.read.ptx.sreg.globaltimer", "arith.subi", "arith.constant",
                      "arith.cmpi", "scf.if", "scf.condition"]
    load = loop.before_region.block.ops.first
    assert isinstance(load, nvvm.LoadOp) and load.ordering.data == nvvm.MemOrder.ACQUIRE
    assert _names(loop.after_region.block.ops) == ["arith.constant", "nvvm.nanosleep",
                                                   "scf.yield"]
    on_timeout = next(op for op in loop.before_region.block.ops if isinstance(op, scf.IfOp))
    timeout_ops = _names(on_timeout.true_region.block.ops)
    assert timeout_ops[-2:] == ["nvvm.trap", "scf.yield"]
    assert "nvvm.atom.cas" in timeout_ops  # the first block to time out claims the record
    record_write = next(op for op in on_timeout.true_region.block.ops
                        if isinstance(op, scf.IfOp))
    stores = [op for op in record_write.true_region.block.ops if isinstance(op, nvvm.StoreOp)]
    assert len(stores) == len(DEBUG_RECORD_FIELDS) - 1  # every field but the claim
    assert all(s.ordering.data == nvvm.MemOrder.VOLATILE for s in stores)
    fence = record_write.true_region.block.ops.last.prev_op
    assert isinstance(fence, nvvm.FenceOp) and fence.scope.data == nvvm.MemScope.SYS
    assert "nvvm.trap" in str(module)


def test_retry_until_tries_once_before_any_timer_read_then_times_out():
    tries: list[SSAValue] = []

    def wait(b: SyncBuilder, ptr, value, record):
        def attempt(t: SyncBuilder) -> SSAValue:
            seen = t.load(ptr, "acquire", "gpu")
            tries.append(seen)
            return t.value(arith.CmpiOp(seen, value, "slt"))

        b.retry_until(attempt, timeout_ns=1000, record=record,
                      describe=lambda t: {"index": value},
                      before_trap=lambda t: t.insert(nvvm.NanosleepOp(t.const(7))))

    _, kernel = _build(wait)
    # the fast path: one try, and only its failure reads the timer
    assert _names(kernel.body.block.ops) == ["nvvm.ld", "arith.cmpi", "scf.if", "func.return"]
    retry = kernel.body.block.ops.first.next_op.next_op
    assert isinstance(retry, scf.IfOp) and retry.cond is kernel.body.block.ops.first.next_op.result
    start, loop, _ = retry.true_region.block.ops
    assert isinstance(start, nvvm.SpecialRegisterOp) and start.SREG == "globaltimer"
    assert isinstance(loop, scf.WhileOp) and len(tries) == 2
    assert _names(loop.before_region.block.ops) == ["nvvm.ld", "arith.cmpi", "scf.condition"]
    assert _names(loop.after_region.block.ops) == [
        "nvvm.read.ptx.sreg.globaltimer", "arith.subi", "arith.constant", "arith.cmpi", "scf.if",
        "scf.yield"]
    limit = loop.after_region.block.ops.first.next_op.next_op
    assert limit.value.value.data == 1000
    on_timeout = loop.after_region.block.ops.last.prev_op
    # the record (claimed, then written), what must precede the trap, the trap
    names = _names(on_timeout.true_region.block.ops)
    assert "nvvm.atom.cas" in names
    assert names[-3:] == ["nvvm.nanosleep", "nvvm.trap", "scf.yield"]

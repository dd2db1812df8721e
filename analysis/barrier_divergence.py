"""Barriers that some threads of their block pass by: a barrier waits for a fixed set of threads
(`bar.sync 0`: every thread of the block; `bar.sync id, N`: N of them), so one that control
flow depending on the thread index lets some of them skip waits forever (PTX leaves a
`.aligned` barrier reached by part of a warp undefined). A block that hangs holds its SM slot:
sync-verify and dataflow-verify refuse such a kernel (`divergent_barrier`).

    divergent_barrier(kernel, block) -> (op, message) | None

The barriers followed are the block-wide ones (gpu.barrier, bar.sync 0, an all-reduce, and
the synchronization and queue operations whose lowering meets the whole block: a sync.wait that
is not `single_thread`, a sync.probe, a sync.post without `threads`, a queue operation without
`threads`), a queue operation's group barrier (`threads N`: each group of N consecutive
threads meets) and a warpgroup's `.aligned` ops (wgmma, setmaxnreg: its 128 threads meet).
A barrier of a declared subset (a named barrier of N threads, a `threads N` post, a
`single_thread` wait) is the kernel's to place (kernel_eval checks a post's against the role
branches it follows).

Control flow depends on the thread index where its condition or bounds are computed from it
(`thread_dependent`: the thread and lane index, what ops compute from them, what a loop or a
branch carries from them, an atomic's result, a call's or assembly's). A branch whose
condition is computed from the thread index and constants alone (a warp-specialized kernel's
roles: `thread_id.x < 256`, a warp index compared) is evaluated for every thread of a block
of known size, and allowed around a barrier where each group that must meet takes the same
side (every thread, for a block-wide barrier); any other such branch, and any loop whose
bounds or condition depend on the thread index, around a barrier is refused. The sync
operations in a branch on `thread_id.x <pred> constant` are left, where sync-verify asks, to
kernel_eval (its messages say which threads of a role reach them).
"""

from __future__ import annotations

from xdsl.dialects import arith, func, gpu, llvm, memref, scf
from xdsl.dialects.builtin import IntegerAttr
from xdsl.ir import BlockArgument, Operation, SSAValue

from tilesync.contract import SM_90
from tilesync.dialects import dataflow, nvvm, sync, tile

WARPGROUP_THREADS = SM_90.warpgroup_warps * SM_90.warp_size
WARPGROUP_ALIGNED = (tile.WgmmaOp, tile.WgmmaRegAOp, tile.WgmmaFenceOp, tile.WgmmaCommitOp,
                     tile.WgmmaWaitOp, tile.SetMaxNRegOp, nvvm.WgmmaFenceAlignedOp,
                     nvvm.WgmmaCommitGroupSyncAlignedOp, nvvm.WgmmaWaitGroupSyncAlignedOp,
                     nvvm.WgmmaMmaAsyncOp, nvvm.WgmmaMmaAsyncRegAOp, nvvm.SetMaxNRegOp)
"""Executed by every thread of a warpgroup together (`.aligned`): a warpgroup's four warps
meet at it as at a barrier of WARPGROUP_THREADS."""

_THREAD_INDICES = (gpu.ThreadIdOp, gpu.LaneIdOp, nvvm.ThreadIdXOp, nvvm.ThreadIdYOp,
                   nvvm.ThreadIdZOp, nvvm.LaneIdOp, nvvm.WarpIdOp, nvvm.SmIdOp,
                   nvvm.GlobalTimerOp)
_PER_THREAD_RESULTS = (memref.AtomicRMWOp, nvvm.AtomicOp, nvvm.AtomicCASOp, func.CallOp,
                       llvm.CallOp, llvm.CallIntrinsicOp, llvm.InlineAsmOp, nvvm.ShflSyncOp,
                       tile.ShuffleOp)
"""Ops whose results may differ from thread to thread whatever their operands."""


def thread_dependent(value: SSAValue, group: int = 0,
                     block: tuple[int, ...] | None = None) -> bool:
    """Whether `value` may differ between threads of one block (`group` 0), or of one group of
    `group` consecutive threads (a queue worker's `threads N`): in a `block` whose rows hold
    whole groups, the thread index divided by a multiple of the group's size is one value a
    group."""
    rows_hold_groups = group > 0 and block is not None and \
        (tuple(block[1:]) in ((), (1,), (1, 1)) or block[0] % group == 0)
    return _Dependence(group if rows_hold_groups else 0).of(value)


class _Dependence:
    def __init__(self, group: int):
        self.group = group
        self.seen: set[SSAValue] = set()

    def of(self, value: SSAValue) -> bool:
        if value in self.seen:
            return False  # a cycle through a loop: decided by its other inputs
        self.seen.add(value)
        if isinstance(value, BlockArgument):
            parent = value.owner.parent_op()
            if isinstance(parent, scf.ForOp):
                if value.index == 0:  # the induction variable
                    return self.of(parent.lb) or self.of(parent.step)
                carried = value.index - 1
                last = parent.body.block.last_op
                return self.of(parent.iter_args[carried]) or (
                    isinstance(last, scf.YieldOp) and self.of(last.operands[carried]))
            # carried around a while loop whose trips may differ per thread; a kernel's
            # argument is the block's
            return isinstance(parent, scf.WhileOp)
        owner = value.owner
        if self.per_group(owner):
            return False
        if isinstance(owner, _THREAD_INDICES + _PER_THREAD_RESULTS):
            return True
        if isinstance(owner, dataflow.TICKET_OPS) and getattr(owner, "threads", None) is not None:
            # each group of threads its own ticket
            return not (self.group and owner.threads.value.data % self.group == 0)
        if isinstance(owner, scf.IfOp):
            return self.of(owner.cond) or any(
                isinstance(region.blocks.first.last_op, scf.YieldOp)
                and self.of(region.blocks.first.last_op.operands[value.index])
                for region in owner.regions if region.blocks)
        if isinstance(owner, scf.ForOp):
            last = owner.body.block.last_op
            return any(self.of(v) for v in (owner.lb, owner.ub, owner.step)) or \
                self.of(owner.iter_args[value.index]) or \
                (isinstance(last, scf.YieldOp) and self.of(last.operands[value.index]))
        if isinstance(owner, scf.WhileOp):
            return True  # its trips may differ
        return any(self.of(operand) for operand in owner.operands)

    def per_group(self, op: Operation) -> bool:
        """`thread_id.x` divided by a multiple of the group's size: one value a group."""
        if not self.group or not isinstance(op, arith.DivUIOp | arith.DivSIOp):
            return False
        divisor = op.rhs.owner
        return isinstance(op.lhs.owner, gpu.ThreadIdOp | nvvm.ThreadIdXOp) and \
            (not isinstance(op.lhs.owner, gpu.ThreadIdOp)
             or op.lhs.owner.dimension.data == gpu.DimensionEnum.X) and \
            isinstance(divisor, arith.ConstantOp) and \
            isinstance(divisor.value, IntegerAttr) and divisor.value.value.data > 0 and \
            divisor.value.value.data % self.group == 0


def _block_wide(op: Operation) -> bool:
    if isinstance(op, gpu.BarrierOp | nvvm.Barrier0Op | nvvm.Barrier0OrOp | gpu.AllReduceOp):
        return True
    if isinstance(op, tile.NamedBarrierOp):
        return op.barrier_id is not None and op.barrier_id.value.data == 0
    if isinstance(op, nvvm.BarrierSyncOp):
        return op.barrier_id is not None and op.barrier_id.value.data == 0
    return False


def _sync_block_wide(op: Operation) -> bool:
    """Synchronization whose lowering meets the whole block (kernel_eval judges it in a role
    branch)."""
    return (isinstance(op, sync.WaitOp) and op.single_thread is None) or \
        isinstance(op, sync.ProbeOp) or (isinstance(op, sync.PostOp) and op.threads is None)


def _group(op: Operation) -> int | None:
    """The threads of each group that meets at the op's barrier: 0 for the whole block, N for
    a queue operation of `threads N`, a warpgroup for its `.aligned` ops; None for an op that
    meets at no barrier of its own."""
    if _block_wide(op) or _sync_block_wide(op):
        return 0
    if isinstance(op, dataflow.TICKET_OPS):
        threads = getattr(op, "threads", None)
        return 0 if threads is None else threads.value.data
    if isinstance(op, WARPGROUP_ALIGNED):
        return WARPGROUP_THREADS
    return None


def _role_sides(cond: SSAValue, block: tuple[int, ...] | None
                ) -> tuple[list[bool], str] | None:
    """For `thread_id.x <pred> constant` in a one-dimensional block of known size: the side
    each thread index takes; None for any other condition."""
    cmp = cond.owner
    if not isinstance(cmp, arith.CmpiOp) or block is None or tuple(block[1:]) != (1, 1):
        return None
    tid, bound = cmp.lhs.owner, cmp.rhs.owner
    if not isinstance(tid, gpu.ThreadIdOp) or tid.dimension.data != gpu.DimensionEnum.X or \
            not isinstance(bound, arith.ConstantOp):
        return None
    sides = _sides(cond, block)
    predicate = arith.CMPI_COMPARISON_OPERATIONS[cmp.predicate.value.data]
    limit = bound.value.value.data  # type: ignore[union-attr]
    return (sides, f"thread_id.x {predicate} {limit}") if sides is not None else None


_COMPARE = {"eq": int.__eq__, "ne": int.__ne__, "slt": int.__lt__, "ult": int.__lt__,
            "sle": int.__le__, "ule": int.__le__, "sgt": int.__gt__, "ugt": int.__gt__,
            "sge": int.__ge__, "uge": int.__ge__}
_ARITH = {arith.AddiOp: int.__add__, arith.SubiOp: int.__sub__, arith.MuliOp: int.__mul__,
          arith.DivUIOp: int.__floordiv__, arith.RemUIOp: int.__mod__, arith.AndIOp: int.__and__,
          arith.OrIOp: int.__or__, arith.XOrIOp: int.__xor__, arith.ShLIOp: int.__lshift__,
          arith.ShRUIOp: int.__rshift__, arith.MinUIOp: min, arith.MaxUIOp: max}


def _sides(cond: SSAValue, block: tuple[int, ...] | None) -> list[bool] | None:
    """The side each thread of a block of known size takes of a branch whose condition is
    computed from the thread index and constants only (in the threads' linear order); None
    where it reads anything else, or a value an unsigned op would see negative."""
    if block is None:
        return None
    bx, by, bz = (*block, 1, 1)[:3]
    sides = []
    for t in range(bx * by * bz):
        index = (t % bx, t // bx % by, t // (bx * by))
        value = _evaluate(cond, index, {})
        if value is None:
            return None
        sides.append(bool(value))
    return sides


def _evaluate(value: SSAValue, index: tuple[int, int, int], memo: dict) -> int | None:
    if value in memo:
        return memo[value]
    owner = value.owner
    result: int | None = None
    if isinstance(owner, gpu.ThreadIdOp):
        result = index["xyz".index(owner.dimension.data.value.lower())]
    elif isinstance(owner, nvvm.ThreadIdXOp | nvvm.ThreadIdYOp | nvvm.ThreadIdZOp):
        result = index[(nvvm.ThreadIdXOp, nvvm.ThreadIdYOp, nvvm.ThreadIdZOp).index(type(owner))]
    elif isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        result = owner.value.value.data
    elif isinstance(owner, arith.IndexCastOp | arith.ExtUIOp | arith.TruncIOp):
        result = _evaluate(owner.operands[0], index, memo)
    elif isinstance(owner, (arith.CmpiOp, *_ARITH)):
        lhs, rhs = (_evaluate(v, index, memo) for v in owner.operands)
        if lhs is None or rhs is None or min(lhs, rhs) < 0 or \
                (isinstance(owner, arith.DivUIOp | arith.RemUIOp) and rhs == 0):
            return None  # unsigned and signed could differ; no division by zero
        if isinstance(owner, arith.CmpiOp):
            predicate = arith.CMPI_COMPARISON_OPERATIONS[owner.predicate.value.data]
            result = int(_COMPARE[predicate](lhs, rhs))
        else:
            result = _ARITH[type(owner)](lhs, rhs)
    elif isinstance(owner, arith.SelectOp):
        chosen = _evaluate(owner.cond, index, memo)
        result = None if chosen is None else \
            _evaluate(owner.lhs if chosen else owner.rhs, index, memo)
    memo[value] = result
    return result


def divergent_barrier(kernel: Operation, block: tuple[int, ...] | None,
                      roles_of_sync_ops: bool = False) -> tuple[Operation, str] | None:
    """The first barrier of `kernel` (in program order) that control flow depending on the
    thread index lets some of the threads it waits for pass by, with why; None where every
    barrier is reached by all of its threads or none. `roles_of_sync_ops`: the caller judges
    the sync operations in a branch on `thread_id.x <pred> constant` itself (sync-verify's
    kernel_eval, whose messages say which threads of a role reach them)."""
    for op in kernel.walk():
        group = _group(op)
        if group is None:
            continue
        around = op.parent_op()
        while around is not None and around is not kernel:
            reason = _divergence(around, op, group, block, roles_of_sync_ops)
            if reason is not None:
                return op, reason
            around = around.parent_op()
    return None


def _divergence(around: Operation, op: Operation, group: int,
                block: tuple[int, ...] | None, roles_of_sync_ops: bool) -> str | None:
    who = "every thread of the block" if group == 0 else f"each group of {group} threads"
    if isinstance(around, scf.IfOp) and thread_dependent(around.cond, group, block):
        roles = _role_sides(around.cond, block)
        if roles is not None and roles_of_sync_ops and _sync_block_wide(op):
            return None  # the caller says which threads of a role reach it
        sides = roles[0] if roles is not None else _sides(around.cond, block)
        if sides is None:
            return (f"'{op.name}' waits for {who}, but it is inside a branch whose condition "
                    "depends on the thread index: the threads that do not take it never "
                    "arrive")
        what = f"`{roles[1]}`" if roles is not None else "a condition on the thread index"
        size = len(sides) if group == 0 else group
        for first in range(0, len(sides), size):
            if len(set(sides[first:first + size])) > 1:
                return (f"'{op.name}' waits for {who}, but the branch on {what} around it "
                        f"splits threads {first}..{first + size - 1}: those that do not take "
                        "its side never arrive")
        return None
    if isinstance(around, scf.ForOp) and any(
            thread_dependent(v, group, block) for v in (around.lb, around.ub, around.step)):
        return (f"'{op.name}' waits for {who}, but it is inside a loop whose bounds depend on "
                "the thread index: threads that run fewer iterations stop arriving")
    if isinstance(around, scf.WhileOp):
        condition = around.before_region.blocks.first.last_op
        if isinstance(condition, scf.ConditionOp) and \
                thread_dependent(condition.condition, group, block):
            return (f"'{op.name}' waits for {who}, but it is inside a loop whose condition "
                    "depends on the thread index: threads that leave it earlier stop arriving")
    return None


__all__ = ["WARPGROUP_ALIGNED", "WARPGROUP_THREADS", "divergent_barrier", "thread_dependent"]

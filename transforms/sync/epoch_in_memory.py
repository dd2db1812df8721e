"""`sync-epoch-in-memory`: kernels read the epoch from device memory instead of a parameter.

A CUDA graph replays its kernels with the parameters they were captured with, so an epoch
passed by value would be the same on every replay and every wait would pass at once. Here the
epoch lives in one device word that a one-thread kernel, `tilesync_next_epoch`, increments at
the start of every run (the host launches it first; a graph captures it first), and every
kernel loads it on entry. Wait-kernels get the producer's block count as a constant instead of
a host-computed target. Semaphores still never need a reset: relaunches and replays alike.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, gpu, memref
from xdsl.dialects.builtin import (
    DenseArrayBase,
    FunctionType,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    i32,
)
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tilesync.contract import (
    EPOCH,
    EPOCH_COUNTER,
    KNOWN_BLOCK_SIZE_ATTR,
    NEXT_EPOCH_KERNEL,
    WAIT_BLOCKS,
    WAIT_TARGET,
    Role,
)
from tilesync.dialects.kernel_args import set_sync_roles, sync_roles

_COUNTER_TYPE = MemRefType(i32, [1])


def _replace_param(func: gpu.FuncOp, role: Role, new_roles: list[tuple[Role, object]]):
    """Swap the sync parameter `role` for `new_roles` (appended in order); returns the old
    argument (still in place, to be replaced by the caller) and the new arguments."""
    roles = sync_roles(func)
    block = func.body.blocks.first
    first_sync = len(block.args) - len(roles)
    old = block.args[first_sync + roles.index(role)]
    new_args = [block.insert_arg(t, len(block.args)) for _, t in new_roles]
    return old, new_args, roles


def _finish_signature(func: gpu.FuncOp, old, roles: list[Role], removed: Role,
                      added: list[Role]) -> None:
    """Drop the replaced (now unused) argument and record the new signature and roles."""
    block = func.body.blocks.first
    block.erase_arg(old)
    func.function_type = FunctionType.from_lists([a.type for a in block.args],
                                                 func.function_type.outputs.data)
    set_sync_roles(func, [*(r for r in roles if r != removed), *added])


def _load_epoch(counter) -> tuple[list, object]:
    zero = arith.ConstantOp(IntegerAttr(0, IndexType()))
    load = memref.LoadOp.get(counter, [zero])
    return [zero, load], load.results[0]


def _next_epoch_kernel() -> gpu.FuncOp:
    block = Block(arg_types=[_COUNTER_TYPE])
    ops, epoch = _load_epoch(block.args[0])
    one = arith.ConstantOp(IntegerAttr(1, i32))
    bumped = arith.AddiOp(epoch, one)
    block.add_ops([*ops, one, bumped, memref.StoreOp.get(bumped, block.args[0], [ops[0]]),
                   gpu.ReturnOp([])])
    func = gpu.FuncOp(NEXT_EPOCH_KERNEL, FunctionType.from_lists([_COUNTER_TYPE], []),
                      Region(block), kernel=True)
    func.attributes[KNOWN_BLOCK_SIZE_ATTR] = DenseArrayBase.from_list(i32, [1, 1, 1])
    set_sync_roles(func, [EPOCH_COUNTER])
    return func


@dataclass(frozen=True)
class EpochInMemoryPass(ModulePass):
    """Keep the epoch in device memory, so a run can be captured in a CUDA graph and replayed."""

    name = "sync-epoch-in-memory"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        first_module: gpu.ModuleOp | None = None
        for func in [f for f in op.walk() if isinstance(f, gpu.FuncOp)]:
            roles = sync_roles(func)
            entry = func.body.blocks.first.first_op
            if EPOCH in roles:
                old, (counter,), roles = _replace_param(func, EPOCH, [(EPOCH_COUNTER,
                                                                       _COUNTER_TYPE)])
                ops, epoch = _load_epoch(counter)
                Rewriter.insert_op(ops, InsertPoint.before(entry))
                old.replace_all_uses_with(epoch)
                _finish_signature(func, old, roles, EPOCH, [EPOCH_COUNTER])
            elif WAIT_TARGET in roles:  # the wait-kernel: target = epoch × producer blocks
                old, (counter, blocks), roles = _replace_param(
                    func, WAIT_TARGET, [(EPOCH_COUNTER, _COUNTER_TYPE), (WAIT_BLOCKS, i32)])
                ops, epoch = _load_epoch(counter)
                target = arith.MuliOp(epoch, blocks)
                Rewriter.insert_op([*ops, target], InsertPoint.before(entry))
                old.replace_all_uses_with(target.results[0])
                _finish_signature(func, old, roles, WAIT_TARGET, [EPOCH_COUNTER, WAIT_BLOCKS])
            else:
                continue
            if first_module is None:
                parent = func.parent_op()
                assert isinstance(parent, gpu.ModuleOp)
                first_module = parent
        if first_module is not None and not any(
                isinstance(f, gpu.FuncOp) and f.sym_name.data == NEXT_EPOCH_KERNEL
                for f in first_module.body.ops):
            first_module.body.blocks.first.add_op(_next_epoch_kernel())

"""`sync-reorder-loads` (optimization R, paper §IV-C): load the operand that needs no wait
first, so its load overlaps the wait for the produced one.

Works on the kernel hooks, before `sync-insert-post-wait`. In a block (typically a k-loop
body) of a consumer stage's kernel:

    sync.load_point operand A ...   ─┐ group A: from A's hook up to B's hook
    ...load A...                    ─┘
    sync.load_point operand B ...   ─┐ group B: from B's hook through the last op that
    ...load B...                    ─┘   uses kernel argument B

where some stage produces operand A and none produces operand B, group A moves below group B.
The waits that sync-insert-post-wait then puts in front of A's hook come after B's load, and
every k-step still loads A only after waiting for what it reads, at that step or at an earlier
one that read the same semaphores (the reference cuSync, with R, let RowSync never block and
TileSync wait only once; `sync-verify` proves ours does not). A warp-specialized kernel's
producer thread (Hopper) marks each operand's TMA copy with its own hook, after the buffer's
barrier expects both copies' bytes: there R issues the copy of the weights (B) before the wait
for the produced A, and the barrier completes once both land, in whichever order.

The move is made only when it is legal: no op of group B uses a value of group A or reads a
produced operand (it would move above that operand's waits), neither group contains an op
with memory effects other than loads, stores, cp.async copies and TMA copies (barriers, waits,
calls, ops with regions whose effects are unknown), and no memory one group writes is read or
written by the other (buffers compared through views: casts, subviews and the like name the
memref they view; a `memref.get_global` its global). Otherwise the block is left as it is.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import memref, scf
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import IsTerminator

from tilesync.analysis.stage_graph import StageGraph
from tilesync.compat.effects import is_side_effect_free
from tilesync.contract import REORDERED_ATTR
from tilesync.dialects import sync
from tilesync.dialects import tile as tl
from tilesync.dialects.kernel_args import lookup_kernel


def _uses_value(op: Operation, values: set[SSAValue]) -> bool:
    return any(o in values for inner in op.walk() for o in inner.operands)


_VIEWS = (memref.CastOp, memref.SubviewOp, memref.ReinterpretCastOp, memref.ExpandShapeOp,
          memref.CollapseShapeOp, memref.ViewOp, memref.MemorySpaceCastOp)
"""Ops whose result is a view of their first operand's memory (the same buffer)."""


def _memory_key(value: SSAValue) -> object:
    """The buffer `value` names: views resolved to the memref they view, a global by name."""
    owner = value.owner
    while isinstance(owner, _VIEWS):
        value = owner.operands[0]
        owner = value.owner
    if isinstance(owner, memref.GetGlobalOp):
        return ("global", owner.name_.root_reference.data)
    return value


_PURE_REGION_OPS = (scf.ForOp, scf.IfOp, scf.YieldOp)


def _effects(ops: list[Operation]) -> tuple[set[object], set[object], bool]:
    """(memory read, memory written, movable) of a group of ops: loads, stores and cp.async
    copies by buffer; any other op with memory effects (or unknown ones) pins the group."""
    reads: set[object] = set()
    writes: set[object] = set()
    for top in ops:
        for op in top.walk():
            if isinstance(op, memref.LoadOp):
                reads.add(_memory_key(op.memref))
            elif isinstance(op, memref.StoreOp):
                writes.add(_memory_key(op.memref))
            elif isinstance(op, tl.CpAsyncOp):
                reads.add(_memory_key(op.src))
                writes.add(_memory_key(op.dst))
            elif isinstance(op, tl.TmaLoadOp):
                # the copy engine reads global memory through the map and writes the buffer;
                # the bytes it completes on its barrier add up in any order
                reads.add(_memory_key(op.tensor_map))
                writes.add(_memory_key(op.dst))
            elif isinstance(op, (*_PURE_REGION_OPS, sync.LoadPointOp)):
                continue
            elif op.regions or not is_side_effect_free(op):
                return reads, writes, False
    return reads, writes, True


def _group_end(block_ops: list[Operation], start: int, arg: SSAValue) -> int:
    """Index of the last op of the load group starting at `start` (B's hook): the last op
    before the next hook or terminator that uses `arg`; the hook itself when none does."""
    end = start
    for i in range(start + 1, len(block_ops)):
        op = block_ops[i]
        if isinstance(op, sync.LoadPointOp) or op.has_trait(IsTerminator):
            break
        if _uses_value(op, {arg}):
            end = i
    return end


def reorder_block(block: Block, produced: set[int], args: tuple[SSAValue, ...]) -> int:
    """Move produced-operand load groups below the unproduced one that follows; count moves."""
    moves = 0
    produced_args = {args[i] for i in produced if i < len(args)}
    changed = True
    while changed:
        changed = False
        ops = list(block.ops)
        hooks = [i for i, op in enumerate(ops) if isinstance(op, sync.LoadPointOp)]
        for a_pos, b_pos in itertools.pairwise(hooks):
            a, b = ops[a_pos], ops[b_pos]
            assert isinstance(a, sync.LoadPointOp) and isinstance(b, sync.LoadPointOp)
            if REORDERED_ATTR in a.attributes:
                continue
            if a.operand.data not in produced or b.operand.data in produced:
                continue
            end = _group_end(ops, b_pos, args[b.operand.data])
            group_a, group_b = ops[a_pos:b_pos], ops[b_pos : end + 1]
            defined_a = {r for op in group_a for r in op.results}
            if any(_uses_value(op, defined_a) for op in group_b):
                continue
            # what moves above A's hook (and so above its waits) reads nothing produced
            if any(_uses_value(op, produced_args) for op in group_b[1:]):
                continue
            reads_a, writes_a, movable_a = _effects(group_a[1:])
            reads_b, writes_b, movable_b = _effects(group_b[1:])
            if not (movable_a and movable_b):
                continue
            if writes_a & (reads_b | writes_b) or writes_b & reads_a:
                continue
            anchor = group_b[-1]
            for op in reversed(group_a):
                op.detach()
                block.insert_op_after(op, anchor)
            a.attributes[REORDERED_ATTR] = UnitAttr()
            moves += 1
            changed = True
            break
    return moves


@dataclass(frozen=True)
class ReorderLoadsPass(ModulePass):
    """R: move loads of operands no stage produces above the waits on produced ones."""

    name = "sync-reorder-loads"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        graph = StageGraph.of(op)
        for name, stage in graph.stages.items():
            produced = {d.operand.data for d in graph.incoming(name)}
            if not produced:
                continue
            func = lookup_kernel(op, stage.kernel, f"sync.stage @{name}", stage)
            args = tuple(func.body.blocks.first.args)  # type: ignore[union-attr]
            for inner in func.walk():
                for region in inner.regions:
                    for block in region.blocks:
                        reorder_block(block, produced, args)

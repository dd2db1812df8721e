"""`lower-scf-to-cf`: xDSL's convert-scf-to-cf plus the `scf.while` lowering it lacks.

Spin-waits are `scf.while` loops (they may sit inside an `scf.for` k-loop, whose body must stay
one block until the for itself is lowered), so the whole scf dialect has to reach cf here.
"""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects.cf import BranchOp, ConditionalBranchOp
from xdsl.dialects.scf import ConditionOp, WhileOp, YieldOp
from xdsl.ir import Block
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import BlockInsertPoint, InsertPoint
from xdsl.transforms.convert_scf_to_cf import ForLowering, IfLowering, SwitchLowering

from tilesync.compat.rewrite_driver import apply_patterns


class WhileLowering(RewritePattern):
    """`scf.while` → a `before` block branching to `after` or out (as upstream SCFToControlFlow)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: WhileOp, rewriter: PatternRewriter, /):
        init_block = op.parent_block()
        assert init_block is not None
        continue_block = init_block.split_before(op)
        parent = init_block.parent_region()
        assert parent is not None
        exit_block = Block(arg_types=op.result_types)
        parent.insert_block_before(exit_block, continue_block)
        rewriter.insert(BranchOp(continue_block), InsertPoint.at_end(exit_block))

        before_first = op.before_region.first_block
        after_first = op.after_region.first_block
        before_last = op.before_region.last_block
        after_last = op.after_region.last_block
        assert before_first and after_first and before_last and after_last

        condition = before_last.last_op
        assert isinstance(condition, ConditionOp)
        rewriter.replace(
            condition,
            ConditionalBranchOp(condition.condition, after_first, condition.args,
                                exit_block, condition.args),
        )
        yield_op = after_last.last_op
        assert isinstance(yield_op, YieldOp)
        rewriter.replace(yield_op, BranchOp(before_first, *yield_op.operands))

        rewriter.inline_region(op.before_region, BlockInsertPoint.before(exit_block))
        rewriter.inline_region(op.after_region, BlockInsertPoint.before(exit_block))
        rewriter.insert(BranchOp(before_first, *op.arguments), InsertPoint.at_end(init_block))
        rewriter.replace(op, [], exit_block.args)


@dataclass(frozen=True)
class LowerSCFToCFPass(ModulePass):
    """scf.for/if/while to cf blocks and branches."""

    name = "lower-scf-to-cf"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        apply_patterns(op, [SwitchLowering(), IfLowering(), ForLowering(), WhileLowering()],
                       recursive=True)

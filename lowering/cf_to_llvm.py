"""`convert-cf-to-llvm`: cf.br / cf.cond_br / cf.switch to llvm.br / llvm.cond_br.

Successor blocks take the llvm types for their arguments (index → i64, memref → ptr); their
bodies keep the old types through casts at the block start until the other passes run, so the
pass can run before or after the arith/memref/func conversions. `cf.switch` (xDSL's llvm
dialect has no switch) becomes a chain of `icmp eq` + `llvm.cond_br` blocks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import cf, llvm
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import BlockInsertPoint, InsertPoint, Rewriter

from tilesync.compat.rewrite_driver import apply_patterns
from tilesync.lowering.llvm_conversion import (
    convert_block_argument_types,
    located_type_errors,
    reject_leftover_ops,
)
from tilesync.lowering.type_conversion import cast_value, convert_type

PASS_NAME = "convert-cf-to-llvm"


def _successor_operands(
    rewriter: PatternRewriter, values: Sequence[SSAValue], successor: Block
) -> list[SSAValue]:
    """`values` cast to the (converted) argument types of `successor`."""
    convert_block_argument_types(successor)
    return [
        cast_value(rewriter, value, arg.type)
        for value, arg in zip(values, successor.args, strict=True)
    ]


class BranchLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cf.BranchOp, rewriter: PatternRewriter, /):
        args = _successor_operands(rewriter, op.arguments, op.successor)
        rewriter.replace(op, llvm.BrOp(op.successor, *args))


class ConditionalBranchLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cf.ConditionalBranchOp, rewriter: PatternRewriter, /):
        then_args = _successor_operands(rewriter, op.then_arguments, op.then_block)
        else_args = _successor_operands(rewriter, op.else_arguments, op.else_block)
        cond = cast_value(rewriter, op.cond, convert_type(op.cond.type))
        rewriter.replace(
            op, llvm.CondBrOp(cond, op.then_block, then_args, op.else_block, else_args)
        )


class SwitchLowering(RewritePattern):
    """One test block per case: `icmp eq flag, value` then the case or the next test."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: cf.SwitchOp, rewriter: PatternRewriter, /):
        flag = cast_value(rewriter, op.flag, convert_type(op.flag.type))
        values = list(op.case_values.get_values()) if op.case_values else []
        cases = list(zip(values, op.case_blocks, op.case_operand, strict=True))
        default_args = _successor_operands(rewriter, op.default_operands, op.default_block)
        case_args = [_successor_operands(rewriter, args, blk) for _, blk, args in cases]

        current = op.parent_block()
        assert current is not None
        # Test blocks hang after the switch's block; only it branches to them, so the
        # operands defined there dominate them.
        test_blocks = [Block() for _ in cases[1:]]
        anchor = current
        for block in test_blocks:
            Rewriter.insert_block(block, BlockInsertPoint.after(anchor))
            anchor = block

        blocks = [current, *test_blocks]
        for index, ((value, case_block, _), args) in enumerate(zip(cases, case_args)):
            is_last = index == len(cases) - 1
            ops: list[Operation] = []
            constant = llvm.ConstantOp(IntegerAttr(value, flag.type), flag.type)
            is_case = llvm.ICmpOp(
                flag, constant.result, IntegerAttr(llvm.ICmpPredicateFlag.EQ.to_int(), i64)
            )
            if is_last:
                branch = llvm.CondBrOp(
                    is_case, case_block, args, op.default_block, default_args
                )
            else:
                branch = llvm.CondBrOp(is_case, case_block, args, test_blocks[index], [])
            ops += [constant, is_case, branch]
            if index == 0:
                rewriter.insert(ops)
            else:
                rewriter.insert(ops, InsertPoint.at_end(blocks[index]))
        if not cases:
            rewriter.insert(llvm.BrOp(op.default_block, *default_args))
        rewriter.erase(op)


CF_TO_LLVM_PATTERNS: tuple[RewritePattern, ...] = (
    BranchLowering(),
    ConditionalBranchLowering(),
    SwitchLowering(),
)


@dataclass(frozen=True)
class ConvertCfToLLVMPass(ModulePass):
    """cf branches to llvm branches."""

    name = "convert-cf-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        with located_type_errors(PASS_NAME, op):
            apply_patterns(op, CF_TO_LLVM_PATTERNS)
        reject_leftover_ops(op, PASS_NAME, "cf.")

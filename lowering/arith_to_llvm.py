"""`convert-arith-to-llvm`: arith ops to their llvm-dialect instructions.

Index-typed values become i64 (see type_conversion). Ops without a single LLVM instruction
expand: integer min/max to icmp + select, floor/ceil division to sdiv/srem fix-ups,
NaN-propagating `maximumf`/`minimumf` to the `llvm.maximum`/`llvm.minimum` intrinsics.
An arith op left unconverted (an unsupported op or type) is reported as a diagnostic.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import (
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from tilesync.compat.op_templates import TEMPLATES, create
from tilesync.compat.rewrite_driver import apply_patterns
from tilesync.lowering.llvm_conversion import (
    llvm_operands,
    located_type_errors,
    reject_leftover_ops,
    replace_with_llvm,
    unsupported_op_error,
)
from tilesync.lowering.type_conversion import INDEX_BITS, convert_type

PASS_NAME = "convert-arith-to-llvm"

_INT_BINARY_OPS: dict[type[Operation], type[Operation]] = {
    arith.AddiOp: llvm.AddOp,
    arith.SubiOp: llvm.SubOp,
    arith.MuliOp: llvm.MulOp,
    arith.DivSIOp: llvm.SDivOp,
    arith.DivUIOp: llvm.UDivOp,
    arith.RemSIOp: llvm.SRemOp,
    arith.RemUIOp: llvm.URemOp,
    arith.AndIOp: llvm.AndOp,
    arith.OrIOp: llvm.OrOp,
    arith.XOrIOp: llvm.XOrOp,
    arith.ShLIOp: llvm.ShlOp,
    arith.ShRSIOp: llvm.AShrOp,
    arith.ShRUIOp: llvm.LShrOp,
}

_FLOAT_BINARY_OPS: dict[type[Operation], type[Operation]] = {
    arith.AddfOp: llvm.FAddOp,
    arith.SubfOp: llvm.FSubOp,
    arith.MulfOp: llvm.FMulOp,
    arith.DivfOp: llvm.FDivOp,
    arith.MaxnumfOp: llvm.VectorFMaxOp,  # llvm.intr.maxnum
    arith.MinnumfOp: llvm.VectorFMinOp,  # llvm.intr.minnum
}

# Integer min/max as `select(icmp(pred, a, b), a, b)`.
_INT_MIN_MAX_PREDICATES: dict[type[Operation], str] = {
    arith.MaxSIOp: "sgt",
    arith.MinSIOp: "slt",
    arith.MaxUIOp: "ugt",
    arith.MinUIOp: "ult",
}

_FLOAT_SUFFIXES: dict[type[Attribute], str] = {
    Float16Type: "f16",
    BFloat16Type: "bf16",
    Float32Type: "f32",
    Float64Type: "f64",
}


def icmp(lhs: SSAValue, rhs: SSAValue, predicate: str) -> llvm.ICmpOp:
    flag = llvm.ICmpPredicateFlag(predicate)
    return llvm.ICmpOp(lhs, rhs, IntegerAttr(flag.to_int(), i64))


def int_constant(value: int, type_: Attribute) -> llvm.ConstantOp:
    return llvm.ConstantOp(IntegerAttr(value, type_), type_)


class IntegerBinaryOpLowering(RewritePattern):
    @staticmethod
    def matches_op_class(cls: type) -> bool:  # the ops it may rewrite (pattern driver)
        return cls in _INT_BINARY_OPS

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        llvm_op_type = _INT_BINARY_OPS.get(type(op))
        if llvm_op_type is None:
            return
        lhs, rhs = llvm_operands(rewriter, op)
        new_op = TEMPLATES.binary(llvm_op_type, lhs, rhs)
        replace_with_llvm(rewriter, op, [new_op], new_op.results)


class FloatBinaryOpLowering(RewritePattern):
    @staticmethod
    def matches_op_class(cls: type) -> bool:  # the ops it may rewrite (pattern driver)
        return cls in _FLOAT_BINARY_OPS

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        llvm_op_type = _FLOAT_BINARY_OPS.get(type(op))
        if llvm_op_type is None:
            return
        assert isinstance(op, arith.FloatingPointLikeBinaryOperation)
        lhs, rhs = llvm_operands(rewriter, op)
        new_op = create(llvm_op_type, (lhs, rhs), (lhs.type,),
                        {"fastmathFlags": llvm.FastMathAttr(op.fastmath.data)})
        replace_with_llvm(rewriter, op, [new_op], new_op.results)


class IntegerMinMaxLowering(RewritePattern):
    @staticmethod
    def matches_op_class(cls: type) -> bool:  # the ops it may rewrite (pattern driver)
        return cls in _INT_MIN_MAX_PREDICATES

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        predicate = _INT_MIN_MAX_PREDICATES.get(type(op))
        if predicate is None:
            return
        lhs, rhs = llvm_operands(rewriter, op)
        compare = icmp(lhs, rhs, predicate)
        select = llvm.SelectOp(compare, lhs, rhs)
        replace_with_llvm(rewriter, op, [compare, select], select.results)


class FloatMaximumMinimumLowering(RewritePattern):
    """`maximumf`/`minimumf` propagate NaN and order -0 < +0: exactly `llvm.maximum/minimum`."""

    @staticmethod
    def matches_op_class(cls: type) -> bool:  # the ops it may rewrite (pattern driver)
        return issubclass(cls, arith.MaximumfOp | arith.MinimumfOp)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if isinstance(op, arith.MaximumfOp):
            intrinsic = "llvm.maximum"
        elif isinstance(op, arith.MinimumfOp):
            intrinsic = "llvm.minimum"
        else:
            return
        suffix = _FLOAT_SUFFIXES.get(type(op.result.type))
        if suffix is None:
            return  # left over, reported by the pass
        lhs, rhs = llvm_operands(rewriter, op)
        call = llvm.CallIntrinsicOp(f"{intrinsic}.{suffix}", [lhs, rhs], [lhs.type])
        replace_with_llvm(rewriter, op, [call], call.results)


class NegfLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.NegfOp, rewriter: PatternRewriter, /):
        (value,) = llvm_operands(rewriter, op)
        neg = llvm.FNegOp(value, llvm.FastMathAttr(op.fastmath.data))
        replace_with_llvm(rewriter, op, [neg], neg.results)


class ConstantLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.ConstantOp, rewriter: PatternRewriter, /):
        value = op.value
        result_type = convert_type(op.result.type)
        if isinstance(value, IntegerAttr):
            # Index constants are re-typed as i64; the value itself is unchanged.
            if not -(2**63) <= value.value.data < 2**64:
                raise unsupported_op_error(PASS_NAME, op, f"index constant {value.value.data} "
                                           f"does not fit in {INDEX_BITS} bits")
            constant = TEMPLATES.int_constant(llvm.ConstantOp, value.value.data, result_type)
            replace_with_llvm(rewriter, op, [constant], constant.results)
            return
        if isinstance(value, DenseIntOrFPElementsAttr):
            if isinstance(value.get_element_type(), IndexType):
                return  # vector<index> has no llvm type here; reported by the pass
        elif not isinstance(value, FloatAttr):
            return
        constant = llvm.ConstantOp(value, result_type)
        replace_with_llvm(rewriter, op, [constant], constant.results)


class CmpiLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.CmpiOp, rewriter: PatternRewriter, /):
        lhs, rhs = llvm_operands(rewriter, op)
        # arith and llvm number the predicates alike (eq, ne, slt, ... uge).
        compare = llvm.ICmpOp(lhs, rhs, IntegerAttr(op.predicate.value.data, i64))
        replace_with_llvm(rewriter, op, [compare], compare.results)


class CmpfLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.CmpfOp, rewriter: PatternRewriter, /):
        lhs, rhs = llvm_operands(rewriter, op)
        # arith and llvm number the predicates alike (false, oeq, ... uno, true).
        compare = llvm.FCmpOp(lhs, rhs, IntegerAttr(op.predicate.value.data, i64))
        compare.fastmathFlags = llvm.FastMathAttr(op.fastmath.data)
        replace_with_llvm(rewriter, op, [compare], compare.results)


class SelectLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.SelectOp, rewriter: PatternRewriter, /):
        cond, lhs, rhs = llvm_operands(rewriter, op)
        if not isinstance(cond.type, IntegerType):
            return  # a vector condition; reported by the pass
        select = llvm.SelectOp(cond, lhs, rhs)
        replace_with_llvm(rewriter, op, [select], select.results)


def resize_integer(value: SSAValue, to_type: IntegerType, signed: bool) -> list[Operation]:
    """The ops that sign/zero-extend or truncate `value` to `to_type` (none if same width)."""
    assert isinstance(value.type, IntegerType)
    from_width = value.type.width.data
    to_width = to_type.width.data
    if from_width == to_width:
        return []
    if from_width > to_width:
        return [llvm.TruncOp(value, to_type)]
    return [llvm.SExtOp(value, to_type) if signed else llvm.ZExtOp(value, to_type)]


class IndexCastLowering(RewritePattern):
    """index_cast: sign-extends or truncates between i64 (the index) and the integer type."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.IndexCastOp, rewriter: PatternRewriter, /):
        (value,) = llvm_operands(rewriter, op)
        to_type = convert_type(op.result.type)
        if not isinstance(to_type, IntegerType):
            return
        new_ops = resize_integer(value, to_type, signed=True)
        result = new_ops[-1].results[0] if new_ops else value
        replace_with_llvm(rewriter, op, new_ops, [result])


class CastLowering(RewritePattern):
    """One-to-one casts: extsi extui trunci sitofp uitofp fptosi fptoui extf truncf bitcast."""

    @staticmethod
    def matches_op_class(cls: type) -> bool:  # the ops it may rewrite (pattern driver)
        return cls in _SIMPLE_CASTS or issubclass(
            cls, arith.FPToSIOp | arith.FPToUIOp | arith.UIToFPOp)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        cast_type = _cast_op_type(op)
        if cast_type is None:
            return
        (value,) = llvm_operands(rewriter, op)
        new_op = TEMPLATES.cast(cast_type, value, convert_type(op.results[0].type))
        replace_with_llvm(rewriter, op, [new_op], new_op.results)


_SIMPLE_CASTS: dict[type[Operation], type[Operation]] = {
    arith.ExtSIOp: llvm.SExtOp,
    arith.ExtUIOp: llvm.ZExtOp,
    arith.TruncIOp: llvm.TruncOp,
    arith.SIToFPOp: llvm.SIToFPOp,
    arith.ExtFOp: llvm.FPExtOp,
    arith.TruncFOp: llvm.FPTruncOp,
    arith.BitcastOp: llvm.BitcastOp,
}


def _cast_op_type(op: Operation) -> type[Operation] | None:
    if type(op) in _SIMPLE_CASTS:
        return _SIMPLE_CASTS[type(op)]
    if not isinstance(op, arith.FPToSIOp | arith.FPToUIOp | arith.UIToFPOp):
        return None
    # xDSL's llvm dialect lacks these three; our llvmx dialect has them.
    from tilesync.dialects import llvmx

    return {
        arith.FPToSIOp: llvmx.FPToSIOp,
        arith.FPToUIOp: llvmx.FPToUIOp,
        arith.UIToFPOp: llvmx.UIToFPOp,
    }[type(op)]


def rounding_division(
    lhs: SSAValue, rhs: SSAValue, rounding: str
) -> tuple[list[Operation], SSAValue]:
    """Integer division rounding "floor" (signed), "ceil" (signed) or "ceil_unsigned".

    q = a / b, r = a % b (truncating); floor: q - 1 where r != 0 and sign(r) != sign(b);
    ceil: q + 1 where r != 0 and sign(r) == sign(b); ceil_unsigned: q + 1 where r != 0.
    Returns the ops to insert and the quotient.
    """
    type_ = lhs.type
    unsigned = rounding == "ceil_unsigned"
    quotient = llvm.UDivOp(lhs, rhs) if unsigned else llvm.SDivOp(lhs, rhs)
    remainder = llvm.URemOp(lhs, rhs) if unsigned else llvm.SRemOp(lhs, rhs)
    zero = int_constant(0, type_)
    one = int_constant(1, type_)
    inexact = icmp(remainder.res, zero.result, "ne")
    new_ops: list[Operation] = [quotient, remainder, zero, one, inexact]
    if unsigned:
        adjust = inexact
    else:
        remainder_negative = icmp(remainder.res, zero.result, "slt")
        divisor_negative = icmp(rhs, zero.result, "slt")
        relation = "eq" if rounding == "ceil" else "ne"
        signs_match = icmp(remainder_negative.res, divisor_negative.res, relation)
        adjust = llvm.AndOp(inexact.res, signs_match.res)
        new_ops += [remainder_negative, divisor_negative, signs_match, adjust]
    step = llvm.SubOp if rounding == "floor" else llvm.AddOp
    adjusted = step(quotient.res, one.result)
    result = llvm.SelectOp(adjust.results[0], adjusted.res, quotient.res)
    new_ops += [adjusted, result]
    return new_ops, result.res


class FloorCeilDivLowering(RewritePattern):
    """floordivsi / ceildivsi / ceildivui: truncating division plus a fix-up."""

    @staticmethod
    def matches_op_class(cls: type) -> bool:  # the ops it may rewrite (pattern driver)
        return issubclass(cls, arith.FloorDivSIOp | arith.CeilDivSIOp | arith.CeilDivUIOp)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if isinstance(op, arith.FloorDivSIOp):
            rounding = "floor"
        elif isinstance(op, arith.CeilDivSIOp):
            rounding = "ceil"
        elif isinstance(op, arith.CeilDivUIOp):
            rounding = "ceil_unsigned"
        else:
            return
        lhs, rhs = llvm_operands(rewriter, op)
        if not isinstance(lhs.type, IntegerType):
            return
        new_ops, result = rounding_division(lhs, rhs, rounding)
        replace_with_llvm(rewriter, op, new_ops, [result])


ARITH_TO_LLVM_PATTERNS: tuple[RewritePattern, ...] = (
    ConstantLowering(),
    IntegerBinaryOpLowering(),
    FloatBinaryOpLowering(),
    IntegerMinMaxLowering(),
    FloatMaximumMinimumLowering(),
    NegfLowering(),
    CmpiLowering(),
    CmpfLowering(),
    SelectLowering(),
    IndexCastLowering(),
    CastLowering(),
    FloorCeilDivLowering(),
)


@dataclass(frozen=True)
class ConvertArithToLLVMPass(ModulePass):
    """arith ops to llvm ops."""

    name = "convert-arith-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        with located_type_errors(PASS_NAME, op):
            apply_patterns(op, ARITH_TO_LLVM_PATTERNS)
        reject_leftover_ops(op, PASS_NAME, "arith.")

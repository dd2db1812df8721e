"""`convert-index-to-llvm`: upstream MLIR's `index` dialect to i64 llvm ops.

xDSL 0.74 has no `index` dialect, so index ops reach tilesync only as generic ops (parsed with
`--allow-unregistered-dialect`, e.g. from IR that upstream MLIR produced). The patterns match
by op name and read the attributes upstream's ops carry (`value`, `pred`), so they also fit a
registered index dialect later. Every value of type index is an i64 (type_conversion.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    BoolAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    UnregisteredOp,
    i1,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
)

from tilesync.compat.rewrite_driver import apply_patterns, ops_where
from tilesync.lowering.arith_to_llvm import (
    icmp,
    int_constant,
    resize_integer,
    rounding_division,
)
from tilesync.lowering.llvm_conversion import (
    llvm_operands,
    located_type_errors,
    replace_with_llvm,
    unsupported_op_error,
)
from tilesync.lowering.type_conversion import INDEX_BITS, convert_type

PASS_NAME = "convert-index-to-llvm"

_BINARY_OPS: dict[str, Callable[[SSAValue, SSAValue], Operation]] = {
    "index.add": llvm.AddOp,
    "index.sub": llvm.SubOp,
    "index.mul": llvm.MulOp,
    "index.divs": llvm.SDivOp,
    "index.divu": llvm.UDivOp,
    "index.rems": llvm.SRemOp,
    "index.remu": llvm.URemOp,
    "index.and": llvm.AndOp,
    "index.or": llvm.OrOp,
    "index.xor": llvm.XOrOp,
    "index.shl": llvm.ShlOp,
    "index.shrs": llvm.AShrOp,
    "index.shru": llvm.LShrOp,
}

_MIN_MAX_PREDICATES = {
    "index.maxs": "sgt",
    "index.mins": "slt",
    "index.maxu": "ugt",
    "index.minu": "ult",
}

_ROUNDING_DIVISIONS = {
    "index.floordivs": "floor",
    "index.ceildivs": "ceil",
    "index.ceildivu": "ceil_unsigned",
}

_CMP_PREDICATE = re.compile(r"\b(eq|ne|slt|sle|sgt|sge|ult|ule|ugt|uge)\b")


def op_name(op: Operation) -> str:
    """The op's name, also for a generic op of an unregistered dialect."""
    return op.op_name.data if isinstance(op, UnregisteredOp) else op.name


def _attribute(op: Operation, name: str) -> Attribute | None:
    return op.properties.get(name, op.attributes.get(name))


_OTHER_OPS = {"index.constant", "index.bool.constant", "index.sizeof", "index.cmp",
              "index.casts", "index.castu"}
SUPPORTED_OPS = {*_BINARY_OPS, *_MIN_MAX_PREDICATES, *_ROUNDING_DIVISIONS, *_OTHER_OPS}


def _lower(op: Operation, operands: list[SSAValue]) -> list[Operation]:
    """New ops computing `op` from its i64 `operands`; the last one gives the result."""
    name = op_name(op)
    if name in _BINARY_OPS:
        return [_BINARY_OPS[name](*operands)]
    if name in _MIN_MAX_PREDICATES:
        compare = icmp(operands[0], operands[1], _MIN_MAX_PREDICATES[name])
        return [compare, llvm.SelectOp(compare, operands[0], operands[1])]
    if name in _ROUNDING_DIVISIONS:
        new_ops, _ = rounding_division(operands[0], operands[1], _ROUNDING_DIVISIONS[name])
        return new_ops
    if name == "index.constant":
        value = _attribute(op, "value")
        if not isinstance(value, IntegerAttr):
            raise unsupported_op_error(PASS_NAME, op, "expected an integer 'value' attribute")
        return [int_constant(value.value.data, i64)]
    if name == "index.bool.constant":
        value = _attribute(op, "value")
        if not isinstance(value, IntegerAttr | BoolAttr):
            raise unsupported_op_error(PASS_NAME, op, "expected a boolean 'value' attribute")
        return [int_constant(value.value.data, i1)]
    if name == "index.sizeof":
        return [int_constant(INDEX_BITS, i64)]
    if name == "index.cmp":
        # `pred` is `#index<cmp_predicate slt>` (unregistered here): read the keyword.
        match = _CMP_PREDICATE.search(str(_attribute(op, "pred")))
        if match is None:
            raise unsupported_op_error(PASS_NAME, op, "unknown comparison predicate")
        return [icmp(operands[0], operands[1], match.group(1))]
    if name in ("index.casts", "index.castu"):
        to_type = convert_type(op.results[0].type)
        assert isinstance(to_type, IntegerType)
        return resize_integer(operands[0], to_type, signed=name == "index.casts")
    raise AssertionError(f"{name} is in SUPPORTED_OPS but has no lowering")


class IndexOpLowering(RewritePattern):
    @staticmethod
    def matches_op_class(cls: type) -> bool:  # the ops it may rewrite (pattern driver)
        return issubclass(cls, UnregisteredOp) or getattr(cls, "name", "").startswith("index.")

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not op_name(op).startswith("index."):
            return
        if op_name(op) not in SUPPORTED_OPS:
            raise unsupported_op_error(PASS_NAME, op, "no lowering for this op")
        if len(op.results) != 1:
            raise unsupported_op_error(PASS_NAME, op, "expected a single result")
        converted = llvm_operands(rewriter, op)
        new_ops = _lower(op, converted)
        # A same-width cast (index.casts to i64) needs no instruction.
        result = new_ops[-1].results[0] if new_ops else converted[0]
        replace_with_llvm(rewriter, op, new_ops, [result])


@dataclass(frozen=True)
class ConvertIndexToLLVMPass(ModulePass):
    """index-typed arith and index ops to 64-bit llvm ops."""

    name = "convert-index-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        with located_type_errors(PASS_NAME, op):
            apply_patterns(op, [IndexOpLowering()])
        for leftover in ops_where(op, IndexOpLowering.matches_op_class):
            if op_name(leftover).startswith("index."):
                raise unsupported_op_error(PASS_NAME, leftover, "not converted")

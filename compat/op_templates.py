"""xDSL 0.74's IRDL constructors check and convert their arguments on every call, more than
half of the time it takes to build an op; the kernel generators and the lowering passes build
thousands of ops of a few kinds whose properties and attributes are the same for all of them
(an `arith.addi` or an `llvm.mul` with its default flags, an `llvm.zext` to i64).

`OpTemplates.build(key, operands, result_types, make)` returns `make()` for the first op of a
key and, for every later one, the op `make()` would return, built with `Operation.create` from
its operands and result types and the first op's class, properties and attributes: a key must
determine those three (`binary`, `cast` and `int_constant` key xDSL's own constructors by
their class). The
test compares ops built both ways. Under `rewrite_driver.xdsl_drivers()` every op comes from
its constructor.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import UNKNOWN_LOC, IntegerAttr
from xdsl.ir import Attribute, Operation, SSAValue

from tilesync.compat.rewrite_driver import using_xdsl_drivers

OpT = TypeVar("OpT", bound=Operation)


class OpTemplates:
    """Ops built like the first op of their key (see the module docstring)."""

    def __init__(self) -> None:
        self._found: dict[Hashable, tuple[type[Operation], dict[str, Attribute],
                                          dict[str, Attribute]]] = {}

    def build(self, key: Hashable, operands: Sequence[SSAValue],
              result_types: Sequence[Attribute], make: Callable[[], OpT]) -> OpT:
        """`make()`, for an op without regions or successors whose class, properties and
        attributes are a function of `key` (its operands and result types given)."""
        template = self._found.get(key)
        if template is None or using_xdsl_drivers():
            op = make()
            if template is None:
                self._found[key] = (type(op), dict(op.properties), dict(op.attributes))
            return op
        kind, properties, attributes = template
        # (the location given: xDSL's default imports it anew for every op)
        return kind.create(operands=operands, result_types=result_types,  # type: ignore
                           properties=properties, attributes=attributes, location=UNKNOWN_LOC)

    def binary(self, kind: type[OpT], lhs: SSAValue, rhs: SSAValue) -> OpT:
        """`kind(lhs, rhs)`: an arith or llvm binary op with its default flags."""
        if kind.__init__ not in _BINARY_CONSTRUCTORS:
            return kind(lhs, rhs)  # type: ignore[call-arg]
        return self.build(kind, (lhs, rhs), (lhs.type,),
                          lambda: kind(lhs, rhs))  # type: ignore[call-arg]

    def int_constant(self, kind: type[arith.ConstantOp | llvm.ConstantOp], value: int,
                     type_: Attribute) -> Operation:
        """An `arith.constant` or `llvm.mlir.constant` of the integer `value` of `type_`."""
        if kind is arith.ConstantOp:
            make = lambda: arith.ConstantOp(IntegerAttr(value, type_))  # noqa: E731
        else:
            make = lambda: llvm.ConstantOp(IntegerAttr(value, type_), type_)  # noqa: E731
        return self.build((kind, value, type_), (), (type_,), make)

    def cast(self, kind: type[OpT], value: SSAValue, to: Attribute) -> OpT:
        """`kind(value, to)`: an llvm cast (trunc, zext, bitcast, ...) with its default
        flags."""
        return self.build((kind, to), (value,), (to,),
                          lambda: kind(value, to))  # type: ignore[call-arg]


# The constructors `kind(lhs, rhs)` of xDSL's binary ops: the result has lhs's type, the
# properties are their defaults (arith's fastmath and overflow flags, llvm's overflow, exact
# and disjoint flags).
_BINARY_CONSTRUCTORS = frozenset(cls.__init__ for cls in (
    arith.SignlessIntegerBinaryOperation, arith.SignlessIntegerBinaryOperationWithOverflow,
    arith.FloatingPointLikeBinaryOperation, llvm.ArithmeticBinOperation,
    llvm.ArithmeticBinOpOverflow, llvm.ArithmeticBinOpExact, llvm.ArithmeticBinOpDisjoint))

TEMPLATES = OpTemplates()
"""The process's templates of the ops keyed by what alone makes them (`binary`, `cast`,
`int_constant`)."""

__all__ = ["TEMPLATES", "OpTemplates"]

"""xDSL 0.74's IRDL constructors check and convert their arguments on every call, more than
half of the time it takes to build an op; the kernel generators and the lowering passes build
thousands of ops of a few kinds whose properties and attributes are the same for all of them
(an `arith.addi` or an `llvm.mul` with its default flags, an `llvm.zext` to i64).

`OpTemplates.build(key, operands, result_types, make)` returns `make()` for the first op of a
key and, for every later one, the op `make()` would return, built by `create` (what
`Operation.create` does, without its setters' and IRDL's per-op overhead) from its operands and
result types and the first op's class, properties and attributes: a key must determine those
three (`binary`, `cast` and `int_constant` key xDSL's own constructors by their class). The
lowering passes call `create` for the other ops they make by the thousand (casts, struct
element accesses). The test compares ops built both ways. Under `rewrite_driver.xdsl_drivers()`
every op comes from its constructor or `Operation.create`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import TypeVar

from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import UNKNOWN_LOC, IntegerAttr
from xdsl.ir import Attribute, Operation, OpResult, SSAValue, Use
from xdsl.ir.core import SSAValues
from xdsl.irdl import IRDLOperation, OptionalDef

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
        # (the template's properties and attributes are complete: no defaults to fill)
        return _assemble(kind, operands, result_types, dict(properties),  # type: ignore
                         dict(attributes))

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


def create(kind: type[OpT], operands: Sequence[SSAValue] = (),
           result_types: Sequence[Attribute] = (),
           properties: Mapping[str, Attribute] | None = None,
           attributes: Mapping[str, Attribute] | None = None) -> OpT:
    """`kind.create(operands=..., result_types=..., properties=..., attributes=...,
    location=UNKNOWN_LOC)` of an op without successors or regions, the IRDL defaults of the
    properties and attributes not given filled in after them as IRDL's `__post_init__` does
    (from a table per class, not a search of the definition per op). Under
    `rewrite_driver.xdsl_drivers()`, `kind.create` itself."""
    if using_xdsl_drivers():
        return kind.create(operands=operands, result_types=result_types,
                           properties=properties or {}, attributes=attributes or {},
                           location=UNKNOWN_LOC)
    props = dict(properties) if properties else {}
    attrs = dict(attributes) if attributes else {}
    defaults = _DEFAULTS.get(kind)
    if defaults is None:
        defaults = _DEFAULTS[kind] = _defaults(kind)
    for filled, given in zip(defaults, (props, attrs), strict=True):
        for name, value in filled:
            if name not in given:
                given[name] = value
    return _assemble(kind, operands, result_types, props, attrs)


def _assemble(kind: type[OpT], operands: Sequence[SSAValue], result_types: Sequence[Attribute],
              properties: dict[str, Attribute], attributes: dict[str, Attribute]) -> OpT:
    """The op `Operation.__init__` makes of these (its own `properties` and `attributes`
    dicts, complete), its fields set directly: the operand and successor setters cost as
    much as the rest, and xDSL's default location is imported anew for every op."""
    op = kind.__new__(kind)
    uses = tuple(Use(op, index) for index in range(len(operands)))
    for operand, use in zip(operands, uses, strict=True):
        operand.add_use(use)
    op._operands = SSAValues(operands)
    op._operand_uses = uses
    op.results = SSAValues(OpResult(t, op, index) for index, t in enumerate(result_types))
    op.properties = properties
    op.attributes = attributes
    op.location = UNKNOWN_LOC
    op._successors = ()
    op._successor_uses = ()
    op.regions = ()
    return op


_DEFAULTS: dict[type, tuple[tuple[tuple[str, Attribute], ...], ...]] = {}


def _defaults(kind: type[Operation]) -> tuple[tuple[tuple[str, Attribute], ...], ...]:
    """The (name, default) of the properties, then the attributes, that IRDL's
    `__post_init__` fills in where an op of `kind` lacks them."""
    if not issubclass(kind, IRDLOperation):
        return (), ()
    op_def = kind.get_irdl_definition()
    return tuple(tuple((name, d.default_value) for name, d in defs.items()
                       if not isinstance(d, OptionalDef) and d.default_value is not None)
                 for defs in (op_def.properties, op_def.attributes))


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

__all__ = ["TEMPLATES", "OpTemplates", "create"]

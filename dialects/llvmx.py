"""The `llvmx` dialect: LLVM instructions that xDSL 0.74's `llvm` dialect lacks.

GPU synchronization needs atomics with an explicit memory ordering and a *synchronization
scope* (PTX `.gpu`/`.cta`/`.cluster`/`.sys`), fences, volatile loads and stores, and a few casts.
The ops here mirror the LLVM IR instructions of the same name one to one, so
`lowering/llvm_to_llvmlite.py` prints each as a single LLVM instruction.

Textual forms (orderings and scopes are bare keywords, as in LLVM IR):

    %old = llvmx.atomicrmw add %p, %v acq_rel syncscope("device") : !llvm.ptr<1>, i32
    %old, %ok = llvmx.cmpxchg %p, %c, %n acq_rel monotonic syncscope("device")
                    : !llvm.ptr<1>, i32
    llvmx.fence acq_rel syncscope("device")
    %v = llvmx.load volatile %p acquire syncscope("device") align 4 : !llvm.ptr<1> -> i32
    llvmx.store volatile %v, %p release syncscope("device") align 4 : i32, !llvm.ptr<1>
    %i = llvmx.fptosi %f : f32 to i32
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    AnyFloat,
    IntAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    UnitAttr,
    i1,
    i64,
)
from xdsl.dialects.llvm import LLVMPointerType
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import NoMemoryEffect
from xdsl.utils.exceptions import VerifyException

from tilesync.compat import ptx_kernel  # noqa: F401  (llvm.func ptx_kernel wherever llvm is)

# LLVM's atomic orderings, weakest first. "not_atomic" is a plain (possibly volatile) access.
ORDERINGS = ("not_atomic", "unordered", "monotonic", "acquire", "release", "acq_rel", "seq_cst")
# NVPTX synchronization scopes; "" is LLVM's default, the whole system (PTX `.sys`).
SYNCSCOPES = ("", "block", "cluster", "device")
ATOMIC_RMW_BIN_OPS = (
    "xchg", "add", "sub", "and", "nand", "or", "xor", "max", "min", "umax", "umin",
    "fadd", "fsub", "fmax", "fmin",
)  # fmt: skip
_FLOAT_RMW_BIN_OPS = ("fadd", "fsub", "fmax", "fmin")

_LOAD_ORDERINGS = ("not_atomic", "unordered", "monotonic", "acquire", "seq_cst")
_STORE_ORDERINGS = ("not_atomic", "unordered", "monotonic", "release", "seq_cst")
_RMW_ORDERINGS = ("monotonic", "acquire", "release", "acq_rel", "seq_cst")
_FENCE_ORDERINGS = ("acquire", "release", "acq_rel", "seq_cst")
_CMPXCHG_FAILURE_ORDERINGS = ("monotonic", "acquire", "seq_cst")


def address_space(ptr_type: LLVMPointerType) -> int:
    """The numeric address space of an `!llvm.ptr` (no parameter means 0, generic)."""
    space = ptr_type.addr_space
    return space.data if isinstance(space, IntAttr) else 0


def _is_float(type_: Attribute) -> bool:
    return isinstance(type_, AnyFloat)


def _verify_choice(what: str, value: str, allowed: Sequence[str], op_name: str) -> None:
    if value not in allowed:
        choices = ", ".join(f"'{a}'" if a else "'' (system)" for a in allowed)
        raise VerifyException(f"{op_name}: invalid {what} '{value}', expected one of {choices}")


def _verify_syncscope(op: _SyncScoped) -> None:
    _verify_choice("syncscope", op.scope, SYNCSCOPES, op.name)


# -- shared textual syntax -------------------------------------------------------------------


def _parse_ordering(parser: Parser) -> str:
    return parser.parse_identifier(" (an atomic ordering)")


def _parse_optional_ordering(parser: Parser) -> str | None:
    return parser.parse_optional_keyword_in(ORDERINGS[1:])


def _parse_optional_syncscope(parser: Parser) -> str:
    if parser.parse_optional_keyword("syncscope") is None:
        return ""
    parser.parse_punctuation("(")
    scope = parser.parse_str_literal()
    parser.parse_punctuation(")")
    return scope


def _print_syncscope(printer: Printer, scope: str) -> None:
    if scope:
        printer.print_string(f' syncscope("{scope}")')


def _parse_optional_align(parser: Parser) -> int | None:
    if parser.parse_optional_keyword("align") is None:
        return None
    return parser.parse_integer(allow_boolean=False, allow_negative=False)


def _optional_str(value: str) -> StringAttr | None:
    return StringAttr(value) if value else None


class _SyncScoped(IRDLOperation):
    """Mixin for ops that carry an optional `syncscope` property."""

    syncscope = opt_prop_def(StringAttr)

    @property
    def scope(self) -> str:
        """The synchronization scope; "" is the system scope."""
        return self.syncscope.data if self.syncscope is not None else ""


# -- atomics ---------------------------------------------------------------------------------


@irdl_op_definition
class AtomicRMWOp(_SyncScoped):
    """`atomicrmw`: atomically apply `bin_op` to `*ptr` and `val`; the result is the old value."""

    name = "llvmx.atomicrmw"

    ptr = operand_def(LLVMPointerType)
    val = operand_def()
    res = result_def()

    bin_op = prop_def(StringAttr)
    ordering = prop_def(StringAttr)
    alignment = opt_prop_def(IntegerAttr)

    def __init__(
        self,
        bin_op: str,
        ptr: SSAValue | Operation,
        val: SSAValue | Operation,
        ordering: str,
        syncscope: str = "",
        alignment: int | None = None,
    ):
        super().__init__(
            operands=[ptr, val],
            result_types=[SSAValue.get(val).type],
            properties={
                "bin_op": StringAttr(bin_op),
                "ordering": StringAttr(ordering),
                "syncscope": _optional_str(syncscope),
                "alignment": IntegerAttr(alignment, i64) if alignment is not None else None,
            },
        )

    def verify_(self) -> None:
        _verify_choice("binary operation", self.bin_op.data, ATOMIC_RMW_BIN_OPS, self.name)
        _verify_choice("ordering", self.ordering.data, _RMW_ORDERINGS, self.name)
        _verify_syncscope(self)
        if self.res.type != self.val.type:
            raise VerifyException(
                f"{self.name}: result type {self.res.type} must match value type {self.val.type}"
            )
        if self.bin_op.data in _FLOAT_RMW_BIN_OPS:
            if not _is_float(self.val.type):
                raise VerifyException(
                    f"{self.name}: '{self.bin_op.data}' needs a floating-point value, "
                    f"got {self.val.type}"
                )
        elif self.bin_op.data == "xchg":
            if not isinstance(self.val.type, IntegerType | LLVMPointerType | AnyFloat):
                raise VerifyException(
                    f"{self.name}: 'xchg' needs an integer, float or pointer value, "
                    f"got {self.val.type}"
                )
        elif not isinstance(self.val.type, IntegerType):
            raise VerifyException(
                f"{self.name}: '{self.bin_op.data}' needs an integer value, got {self.val.type}"
            )

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.bin_op.data} ")
        printer.print_operand(self.ptr)
        printer.print_string(", ")
        printer.print_operand(self.val)
        printer.print_string(f" {self.ordering.data}")
        _print_syncscope(printer, self.scope)
        if self.alignment is not None:
            printer.print_string(f" align {self.alignment.value.data}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.ptr.type)
        printer.print_string(", ")
        printer.print_attribute(self.val.type)

    @classmethod
    def parse(cls, parser: Parser) -> AtomicRMWOp:
        bin_op = parser.parse_identifier(" (an atomicrmw operation)")
        ptr = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        val = parser.parse_unresolved_operand()
        ordering = _parse_ordering(parser)
        scope = _parse_optional_syncscope(parser)
        alignment = _parse_optional_align(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        ptr_type = parser.parse_type()
        parser.parse_punctuation(",")
        val_type = parser.parse_type()
        op = cls(
            bin_op,
            parser.resolve_operand(ptr, ptr_type),
            parser.resolve_operand(val, val_type),
            ordering,
            scope,
            alignment,
        )
        op.attributes |= attrs
        return op


@irdl_op_definition
class CmpXchgOp(_SyncScoped):
    """`cmpxchg`: if `*ptr == cmp` store `new`; results are the old value and the success bit."""

    name = "llvmx.cmpxchg"

    ptr = operand_def(LLVMPointerType)
    cmp = operand_def()
    new = operand_def()
    res = result_def()
    success = result_def(i1)

    success_ordering = prop_def(StringAttr)
    failure_ordering = prop_def(StringAttr)
    alignment = opt_prop_def(IntegerAttr)
    weak = opt_prop_def(UnitAttr)

    def __init__(
        self,
        ptr: SSAValue | Operation,
        cmp: SSAValue | Operation,
        new: SSAValue | Operation,
        success_ordering: str,
        failure_ordering: str,
        syncscope: str = "",
        alignment: int | None = None,
        weak: bool = False,
    ):
        super().__init__(
            operands=[ptr, cmp, new],
            result_types=[SSAValue.get(cmp).type, i1],
            properties={
                "success_ordering": StringAttr(success_ordering),
                "failure_ordering": StringAttr(failure_ordering),
                "syncscope": _optional_str(syncscope),
                "alignment": IntegerAttr(alignment, i64) if alignment is not None else None,
                "weak": UnitAttr() if weak else None,
            },
        )

    def verify_(self) -> None:
        success, failure = self.success_ordering.data, self.failure_ordering.data
        _verify_choice("success ordering", success, _RMW_ORDERINGS, self.name)
        _verify_choice("failure ordering", failure, _CMPXCHG_FAILURE_ORDERINGS, self.name)
        _verify_syncscope(self)
        # The failure path only loads, so it may not be stronger than the success path.
        acquiring = ("acquire", "acq_rel", "seq_cst")
        if (failure == "acquire" and success not in acquiring) or (
            failure == "seq_cst" and success != "seq_cst"
        ):
            raise VerifyException(
                f"{self.name}: failure ordering '{failure}' is stronger than "
                f"success ordering '{success}'"
            )
        if self.cmp.type != self.new.type:
            raise VerifyException(
                f"{self.name}: compared value type {self.cmp.type} must match "
                f"new value type {self.new.type}"
            )
        if not isinstance(self.cmp.type, IntegerType | LLVMPointerType):
            raise VerifyException(
                f"{self.name}: needs an integer or pointer value, got {self.cmp.type}"
            )
        if self.res.type != self.cmp.type:
            raise VerifyException(
                f"{self.name}: result type {self.res.type} must match value type {self.cmp.type}"
            )

    def print(self, printer: Printer) -> None:
        if self.weak is not None:
            printer.print_string(" weak")
        printer.print_string(" ")
        printer.print_operand(self.ptr)
        printer.print_string(", ")
        printer.print_operand(self.cmp)
        printer.print_string(", ")
        printer.print_operand(self.new)
        printer.print_string(f" {self.success_ordering.data} {self.failure_ordering.data}")
        _print_syncscope(printer, self.scope)
        if self.alignment is not None:
            printer.print_string(f" align {self.alignment.value.data}")
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.ptr.type)
        printer.print_string(", ")
        printer.print_attribute(self.cmp.type)

    @classmethod
    def parse(cls, parser: Parser) -> CmpXchgOp:
        weak = parser.parse_optional_keyword("weak") is not None
        ptr = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        cmp = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        new = parser.parse_unresolved_operand()
        success = _parse_ordering(parser)
        failure = _parse_ordering(parser)
        scope = _parse_optional_syncscope(parser)
        alignment = _parse_optional_align(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        ptr_type = parser.parse_type()
        parser.parse_punctuation(",")
        val_type = parser.parse_type()
        op = cls(
            parser.resolve_operand(ptr, ptr_type),
            parser.resolve_operand(cmp, val_type),
            parser.resolve_operand(new, val_type),
            success,
            failure,
            scope,
            alignment,
            weak,
        )
        op.attributes |= attrs
        return op


@irdl_op_definition
class FenceOp(_SyncScoped):
    """`fence`: orders memory accesses of this thread within the synchronization scope."""

    name = "llvmx.fence"

    ordering = prop_def(StringAttr)

    def __init__(self, ordering: str, syncscope: str = ""):
        super().__init__(
            properties={"ordering": StringAttr(ordering), "syncscope": _optional_str(syncscope)}
        )

    def verify_(self) -> None:
        _verify_choice("ordering", self.ordering.data, _FENCE_ORDERINGS, self.name)
        _verify_syncscope(self)

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.ordering.data}")
        _print_syncscope(printer, self.scope)
        printer.print_op_attributes(self.attributes)

    @classmethod
    def parse(cls, parser: Parser) -> FenceOp:
        ordering = _parse_ordering(parser)
        scope = _parse_optional_syncscope(parser)
        op = cls(ordering, scope)
        op.attributes |= parser.parse_optional_attr_dict()
        return op


class _OrderedAccess(_SyncScoped):
    """Shared properties and checks of `llvmx.load` and `llvmx.store`."""

    ordering = prop_def(StringAttr, default_value=StringAttr("not_atomic"))
    volatile_ = opt_prop_def(UnitAttr)
    alignment = opt_prop_def(IntegerAttr)

    ALLOWED_ORDERINGS: ClassVar[tuple[str, ...]] = ()

    @staticmethod
    def _access_properties(
        ordering: str, syncscope: str, volatile: bool, alignment: int | None
    ) -> dict[str, Attribute | None]:
        return {
            "ordering": StringAttr(ordering),
            "syncscope": _optional_str(syncscope),
            "volatile_": UnitAttr() if volatile else None,
            "alignment": IntegerAttr(alignment, i64) if alignment is not None else None,
        }

    @property
    def is_atomic(self) -> bool:
        return self.ordering.data != "not_atomic"

    def _verify_access(self, value_type: Attribute) -> None:
        _verify_choice("ordering", self.ordering.data, self.ALLOWED_ORDERINGS, self.name)
        _verify_syncscope(self)
        if not self.is_atomic and self.scope:
            raise VerifyException(f"{self.name}: a syncscope needs an atomic ordering")
        if self.is_atomic and not isinstance(value_type, IntegerType | LLVMPointerType | AnyFloat):
            raise VerifyException(
                f"{self.name}: an atomic access needs an integer, float or pointer type, "
                f"got {value_type}"
            )

    def _print_access_suffix(self) -> str:
        text = f" {self.ordering.data}" if self.is_atomic else ""
        if self.scope:
            text += f' syncscope("{self.scope}")'
        if self.alignment is not None:
            text += f" align {self.alignment.value.data}"
        return text


@irdl_op_definition
class AtomicLoadOp(_OrderedAccess):
    """`load [atomic] [volatile]` with an ordering, a scope and an alignment."""

    name = "llvmx.load"

    ptr = operand_def(LLVMPointerType)
    res = result_def()

    ALLOWED_ORDERINGS: ClassVar[tuple[str, ...]] = _LOAD_ORDERINGS

    def __init__(
        self,
        ptr: SSAValue | Operation,
        result_type: Attribute,
        ordering: str,
        syncscope: str = "",
        volatile: bool = False,
        alignment: int | None = None,
    ):
        super().__init__(
            operands=[ptr],
            result_types=[result_type],
            properties=self._access_properties(ordering, syncscope, volatile, alignment),
        )

    def verify_(self) -> None:
        self._verify_access(self.res.type)

    def print(self, printer: Printer) -> None:
        if self.volatile_ is not None:
            printer.print_string(" volatile")
        printer.print_string(" ")
        printer.print_operand(self.ptr)
        printer.print_string(self._print_access_suffix())
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.ptr.type)
        printer.print_string(" -> ")
        printer.print_attribute(self.res.type)

    @classmethod
    def parse(cls, parser: Parser) -> AtomicLoadOp:
        volatile = parser.parse_optional_keyword("volatile") is not None
        ptr = parser.parse_unresolved_operand()
        ordering = _parse_optional_ordering(parser) or "not_atomic"
        scope = _parse_optional_syncscope(parser)
        alignment = _parse_optional_align(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        ptr_type = parser.parse_type()
        parser.parse_punctuation("->")
        result_type = parser.parse_type()
        op = cls(
            parser.resolve_operand(ptr, ptr_type),
            result_type,
            ordering,
            scope,
            volatile,
            alignment,
        )
        op.attributes |= attrs
        return op


@irdl_op_definition
class AtomicStoreOp(_OrderedAccess):
    """`store [atomic] [volatile]` with an ordering, a scope and an alignment."""

    name = "llvmx.store"

    value = operand_def()
    ptr = operand_def(LLVMPointerType)

    ALLOWED_ORDERINGS: ClassVar[tuple[str, ...]] = _STORE_ORDERINGS

    def __init__(
        self,
        value: SSAValue | Operation,
        ptr: SSAValue | Operation,
        ordering: str,
        syncscope: str = "",
        volatile: bool = False,
        alignment: int | None = None,
    ):
        super().__init__(
            operands=[value, ptr],
            properties=self._access_properties(ordering, syncscope, volatile, alignment),
        )

    def verify_(self) -> None:
        self._verify_access(self.value.type)

    def print(self, printer: Printer) -> None:
        if self.volatile_ is not None:
            printer.print_string(" volatile")
        printer.print_string(" ")
        printer.print_operand(self.value)
        printer.print_string(", ")
        printer.print_operand(self.ptr)
        printer.print_string(self._print_access_suffix())
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_attribute(self.value.type)
        printer.print_string(", ")
        printer.print_attribute(self.ptr.type)

    @classmethod
    def parse(cls, parser: Parser) -> AtomicStoreOp:
        volatile = parser.parse_optional_keyword("volatile") is not None
        value = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        ptr = parser.parse_unresolved_operand()
        ordering = _parse_optional_ordering(parser) or "not_atomic"
        scope = _parse_optional_syncscope(parser)
        alignment = _parse_optional_align(parser)
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        value_type = parser.parse_type()
        parser.parse_punctuation(",")
        ptr_type = parser.parse_type()
        op = cls(
            parser.resolve_operand(value, value_type),
            parser.resolve_operand(ptr, ptr_type),
            ordering,
            scope,
            volatile,
            alignment,
        )
        op.attributes |= attrs
        return op


# -- casts -----------------------------------------------------------------------------------


class _CastOp(IRDLOperation):
    """A one-operand conversion printed as `%r = llvmx.<op> %x : T to U`."""

    arg = operand_def()
    res = result_def()

    traits = traits_def(NoMemoryEffect())

    assembly_format = "$arg attr-dict `:` type($arg) `to` type($res)"

    def __init__(self, value: SSAValue | Operation, result_type: Attribute):
        super().__init__(operands=[value], result_types=[result_type])


class _FloatToIntCastOp(_CastOp):
    def verify_(self) -> None:
        if not _is_float(self.arg.type) or not isinstance(self.res.type, IntegerType):
            raise VerifyException(
                f"{self.name}: expected a float operand and an integer result, "
                f"got {self.arg.type} to {self.res.type}"
            )


@irdl_op_definition
class FPToSIOp(_FloatToIntCastOp):
    """Float to signed integer, rounding toward zero."""

    name = "llvmx.fptosi"


@irdl_op_definition
class FPToUIOp(_FloatToIntCastOp):
    """Float to unsigned integer, rounding toward zero."""

    name = "llvmx.fptoui"


@irdl_op_definition
class UIToFPOp(_CastOp):
    """Unsigned integer to float."""

    name = "llvmx.uitofp"

    def verify_(self) -> None:
        if not isinstance(self.arg.type, IntegerType) or not _is_float(self.res.type):
            raise VerifyException(
                f"{self.name}: expected an integer operand and a float result, "
                f"got {self.arg.type} to {self.res.type}"
            )


@irdl_op_definition
class AddrSpaceCastOp(_CastOp):
    """Pointer in one address space to a pointer in another (e.g. shared to generic)."""

    name = "llvmx.addrspacecast"

    def verify_(self) -> None:
        source, target = self.arg.type, self.res.type
        if not isinstance(source, LLVMPointerType) or not isinstance(target, LLVMPointerType):
            raise VerifyException(
                f"{self.name}: expected pointer operand and result, got {source} to {target}"
            )
        if address_space(source) == address_space(target):
            raise VerifyException(
                f"{self.name}: source and result are both in address space {address_space(source)}"
            )


LLVMX = Dialect(
    "llvmx",
    [
        AtomicRMWOp,
        CmpXchgOp,
        FenceOp,
        AtomicLoadOp,
        AtomicStoreOp,
        FPToSIOp,
        FPToUIOp,
        UIToFPOp,
        AddrSpaceCastOp,
    ],
)

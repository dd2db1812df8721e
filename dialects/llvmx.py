"""The `llvmx` dialect: LLVM casts that xDSL 0.74's `llvm` dialect lacks.

The ops mirror the LLVM IR instructions of the same name one to one, so
`lowering/llvm_to_llvmlite.py` prints each as a single LLVM instruction:

    %i = llvmx.fptosi %f : f32 to i32
    %u = llvmx.fptoui %f : f32 to i32
    %f = llvmx.uitofp %u : i32 to f32
    %g = llvmx.addrspacecast %s : !llvm.ptr<3> to !llvm.ptr

Ordered memory operations (atomics, fences, acquire loads, release stores) are nvvm ops
(`dialects/nvvm.py`), lowered to the exact PTX instruction by convert-nvvm-to-llvm.
"""

from __future__ import annotations

from xdsl.dialects.builtin import AnyFloat, IntAttr, IntegerType
from xdsl.dialects.llvm import LLVMPointerType
from xdsl.ir import Attribute, Dialect, Operation, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    result_def,
    traits_def,
)
from xdsl.traits import NoMemoryEffect
from xdsl.utils.exceptions import VerifyException

from tilesync.compat import ptx_kernel  # noqa: F401  (llvm.func ptx_kernel wherever llvm is)


def address_space(ptr_type: LLVMPointerType) -> int:
    """The numeric address space of an `!llvm.ptr` (no parameter means 0, generic)."""
    space = ptr_type.addr_space
    return space.data if isinstance(space, IntAttr) else 0


def _is_float(type_: Attribute) -> bool:
    return isinstance(type_, AnyFloat)


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
        FPToSIOp,
        FPToUIOp,
        UIToFPOp,
        AddrSpaceCastOp,
    ],
)

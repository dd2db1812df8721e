"""The one type conversion shared by every `*-to-llvm` pass.

Kernels use the bare-pointer convention: a memref becomes a typed-less `!llvm.ptr<AS>` to its
first element (shapes are static, or a 1-D `?`, so no descriptor is needed). `index` is i64.
Passes convert one dialect at a time and bridge to not-yet-converted code with
`builtin.unrealized_conversion_cast`, which `reconcile-unrealized-casts` removes at the end.
"""

from __future__ import annotations

from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    StringAttr,
    UnrealizedConversionCastOp,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from tilesync.compat.op_templates import create
from tilesync.contract import GENERIC_ADDRESS_SPACE, SHARED_ADDRESS_SPACE, TENSOR_MAP
from tilesync.dialects.tile import TensorMapType

GLOBAL_ADDRESS_SPACE = 1
LOCAL_ADDRESS_SPACE = 5

_NAMED_SPACES = {"global": GLOBAL_ADDRESS_SPACE, "workgroup": SHARED_ADDRESS_SPACE,
                 "shared": SHARED_ADDRESS_SPACE, "private": LOCAL_ADDRESS_SPACE}

INDEX_BITS = 64
_INDEX_AS_LLVM = IntegerType(INDEX_BITS)  # built once: the passes convert thousands
# NVPTX address spaces a memref may name: generic, global, shared, constant, local.
NVPTX_ADDRESS_SPACES = (GENERIC_ADDRESS_SPACE, GLOBAL_ADDRESS_SPACE, SHARED_ADDRESS_SPACE, 4,
                        LOCAL_ADDRESS_SPACE)


class UnsupportedTypeError(ValueError):
    """`type` has no LLVM equivalent (the lowering reports it at the first op that uses it:
    `llvm_conversion.located_type_errors`)."""

    def __init__(self, type: Attribute, reason: str):
        super().__init__(f"{type}: {reason}")
        self.type = type


def memref_address_space(memref: MemRefType) -> int:
    """NVPTX address space of a memref: none -> global (1); an integer or a name otherwise."""
    space = memref.memory_space
    if isinstance(space, NoneAttr):
        return GLOBAL_ADDRESS_SPACE
    number = space.value.data if isinstance(space, IntegerAttr) else \
        space.data if isinstance(space, IntAttr) else \
        _NAMED_SPACES.get(space.data) if isinstance(space, StringAttr) else None
    if number not in NVPTX_ADDRESS_SPACES:
        raise UnsupportedTypeError(memref, f"memory space {space} is not an NVPTX address "
                                           "space (0 generic, 1 global, 3 shared, 4 constant, "
                                           "5 local)")
    return number

# The pointer type of each address space, built once (memref operands are converted by the
# thousand).
_POINTERS = {space: llvm.LLVMPointerType(IntAttr(space)) if space != GENERIC_ADDRESS_SPACE
             else llvm.LLVMPointerType()  # generic: `!llvm.ptr`, as a cast to generic yields
             for space in NVPTX_ADDRESS_SPACES}


def convert_type(t: Attribute) -> Attribute:
    """Map a builtin type to its llvm-dialect counterpart (identity where they coincide)."""
    kind = _KINDS.get(type(t))
    if kind is None:  # by class: xDSL's types are ABCs, whose isinstance test runs Python code
        kind = _KINDS[type(t)] = next((c for c in _CONVERTED if isinstance(t, c)), Attribute)
    if kind is Attribute:
        return t
    if kind is IndexType:
        return _INDEX_AS_LLVM
    if kind is MemRefType:
        return _POINTERS[memref_address_space(t)]  # type: ignore[arg-type]
    if kind is TensorMapType:  # a by-value kernel parameter, used by its address
        return llvm.LLVMPointerType()
    if t.width.data == 0:  # type: ignore[attr-defined]
        raise UnsupportedTypeError(t, "LLVM has no integers of 0 bits")
    return t


_CONVERTED = (IndexType, MemRefType, TensorMapType, IntegerType)  # the types convert_type maps
_KINDS: dict[type, type] = {}  # a type's class -> the first of _CONVERTED it is, or Attribute


# The integer widths a kernel parameter may have, and the parameter kind each is passed as.
_INTEGER_PARAMS = {1: "i8", 8: "i8", 16: "i16", 32: "i32", 64: "i64"}
KERNEL_PARAM_TYPES = "memrefs, index, i1, i8, i16, i32, i64, f16, bf16, f32, f64 or tensor maps"


def kernel_param_kind(t: Attribute) -> str | None:
    """The `contract.PARAM_KINDS` name a kernel parameter of type `t` is passed as (None: a
    kernel cannot take it; LLVM would fail on some, the runtime could not pass the others)."""
    if isinstance(t, MemRefType | llvm.LLVMPointerType):
        return "ptr"
    if isinstance(t, IndexType):
        return "i64"
    if isinstance(t, IntegerType):
        return _INTEGER_PARAMS.get(t.width.data)
    if isinstance(t, TensorMapType):
        return TENSOR_MAP
    return {Float16Type: "f16", BFloat16Type: "bf16", Float32Type: "f32",
            Float64Type: "f64"}.get(type(t))



def unrealized_cast(value: SSAValue, to_type: Attribute) -> UnrealizedConversionCastOp:
    """`builtin.unrealized_conversion_cast value : T to to_type` (not inserted).

    The op `UnrealizedConversionCastOp.get` builds, without the generic IRDL constructor's
    argument checks (a cast has no attributes or properties); the lowering passes make
    thousands of these."""
    return create(UnrealizedConversionCastOp, (value,), (to_type,))


def cast_value(rewriter: Rewriter | None, value: SSAValue, to_type: Attribute,
               insert_point: InsertPoint | None = None) -> SSAValue:
    """`value` as `to_type`, through an unrealized cast inserted before the current op."""
    if value.type == to_type:
        return value
    owner = value.owner
    if (isinstance(owner, UnrealizedConversionCastOp) and len(owner.operands) == 1
            and owner.operands[0].type == to_type):
        return owner.operands[0]  # a cast back: the chain would fold to this value anyway
    cast = unrealized_cast(value, to_type)
    if insert_point is not None:
        Rewriter.insert_op(cast, insert_point)
    else:
        assert rewriter is not None
        rewriter.insert(cast)
    return cast.results[0]

"""The one type conversion shared by every `*-to-llvm` pass.

Kernels use the bare-pointer convention: a memref becomes a typed-less `!llvm.ptr<AS>` to its
first element (shapes are static, or a 1-D `?`, so no descriptor is needed). `index` is i64.
Passes convert one dialect at a time and bridge to not-yet-converted code with
`builtin.unrealized_conversion_cast`, which `reconcile-unrealized-casts` removes at the end.
"""

from __future__ import annotations

from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
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

from tilesync.dialects.tile import TensorMapType

GLOBAL_ADDRESS_SPACE = 1
SHARED_ADDRESS_SPACE = 3
LOCAL_ADDRESS_SPACE = 5

_NAMED_SPACES = {"global": GLOBAL_ADDRESS_SPACE, "workgroup": SHARED_ADDRESS_SPACE,
                 "shared": SHARED_ADDRESS_SPACE, "private": LOCAL_ADDRESS_SPACE}

INDEX_BITS = 64

def memref_address_space(memref: MemRefType) -> int:
    """NVPTX address space of a memref: none -> global (1); an integer or a name otherwise."""
    space = memref.memory_space
    if isinstance(space, NoneAttr):
        return GLOBAL_ADDRESS_SPACE
    if isinstance(space, IntegerAttr):
        return space.value.data
    if isinstance(space, IntAttr):
        return space.data
    if isinstance(space, StringAttr) and space.data in _NAMED_SPACES:
        return _NAMED_SPACES[space.data]
    raise ValueError(f"unsupported memref memory space {space}")

def convert_type(t: Attribute) -> Attribute:
    """Map a builtin type to its llvm-dialect counterpart (identity where they coincide)."""
    if isinstance(t, IndexType):
        return IntegerType(INDEX_BITS)
    if isinstance(t, MemRefType):
        return llvm.LLVMPointerType(IntAttr(memref_address_space(t)))
    if isinstance(t, TensorMapType):  # a by-value kernel parameter, used by its address
        return llvm.LLVMPointerType()
    return t



def unrealized_cast(value: SSAValue, to_type: Attribute) -> UnrealizedConversionCastOp:
    """`builtin.unrealized_conversion_cast value : T to to_type` (not inserted).

    The op `UnrealizedConversionCastOp.get` builds, without the generic IRDL constructor's
    argument checks (a cast has no attributes or properties); the lowering passes make
    thousands of these."""
    return UnrealizedConversionCastOp.create(operands=(value,), result_types=(to_type,))


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

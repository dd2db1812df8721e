"""`convert-memref-to-llvm`: memref accesses on bare pointers, shared-memory globals.

Kernels use the bare-pointer convention (type_conversion.py): a memref is `!llvm.ptr<AS>` to its
first element. This holds for identity (row-major, offset 0) layouts whose dimensions are static
except possibly the leading one, so a load/store is

    %lin = Σ idx_i * stride_i : i64   ;  %p = llvm.getelementptr inbounds %base[%lin]
    llvm.load %p {alignment = sizeof(elem)}

`memref.global` in shared memory (space 3) becomes an internal, uninitialized `llvm.mlir.global`
in addrspace 3 (16-byte aligned), `memref.get_global` an `llvm.mlir.addressof`;
A shared `memref.global` marked `tilesync.dynamic_shared` instead gets an offset in the one
dynamic shared-memory array of its gpu.module (`.extern .shared`): its `memref.get_global` is
that array's address plus the offset, and the module records the total as
`tilesync.dynamic_shared_bytes` for the launch (more than 48 KiB of shared memory per block
exists only as dynamic shared memory). The array starts after the kernel's static shared
memory, only 16-byte aligned; globals that ask for more (wgmma's 1024-byte swizzle atoms) are
placed from the array's address rounded up at run time, and the launch size includes the
worst-case padding.
`memref.alloca` (memory space 5) a generic `llvm.alloca` cast to the local space. Anything
else — other layouts, device `memref.alloc`, initialized globals — is reported as a diagnostic
naming the op.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import llvm, memref
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StridedLayoutAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.traits import SymbolTable

from tilesync.compat.op_templates import TEMPLATES
from tilesync.compat.rewrite_driver import apply_patterns, walk_ops
from tilesync.contract import (
    DYNAMIC_SHARED_ATTR,
    DYNAMIC_SHARED_BASE_ALIGNMENT,
    DYNAMIC_SHARED_BYTES_ATTR,
    SHARED_OVERLAY_ATTR,
)
from tilesync.dialects.dataflow import element_bytes
from tilesync.lowering.llvm_conversion import (
    llvm_operands,
    located_type_errors,
    reject_leftover_ops,
    replace_with_llvm,
    unsupported_op_error,
)
from tilesync.lowering.type_conversion import (
    LOCAL_ADDRESS_SPACE,
    SHARED_ADDRESS_SPACE,
    convert_type,
    memref_address_space,
)

PASS_NAME = "convert-memref-to-llvm"
SHARED_GLOBAL_ALIGNMENT = 16  # room for 128-bit vector accesses to shared tiles
DYNAMIC_SHARED_SYMBOL = "__tilesync_dynamic_shared"


def element_size_in_bytes(op: Operation, element_type: Attribute) -> int:
    """Byte size of a memref element (the natural alignment of its loads and stores): the
    dialects' element_bytes, which a queue's ring is sized by too."""
    try:
        return element_bytes(element_type)
    except ValueError:
        raise unsupported_op_error(PASS_NAME, op,
                                   f"unsupported element type {element_type}") from None


def row_major_strides(op: Operation, memref_type: MemRefType) -> list[int]:
    """Element strides of a bare-pointer memref, or a diagnostic for any other memref."""
    shape = memref_type.get_shape()
    if any(dim == DYNAMIC_INDEX for dim in shape[1:]):
        raise unsupported_op_error(
            PASS_NAME, op, f"{memref_type}: only the leading dimension may be dynamic"
        )
    strides = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        strides[i] = strides[i + 1] * shape[i + 1]
    layout = memref_type.layout
    if isinstance(layout, NoneAttr):
        return strides
    if (
        isinstance(layout, StridedLayoutAttr)
        and list(layout.get_strides()) == strides
        and layout.get_offset() == 0
    ):
        return strides
    raise unsupported_op_error(
        PASS_NAME, op, f"{memref_type}: only identity layouts lower to bare pointers"
    )


def _i64_constant(value: int) -> llvm.ConstantOp:
    return TEMPLATES.int_constant(llvm.ConstantOp, value, i64)  # type: ignore[return-value]


def element_pointer(
    rewriter: PatternRewriter,
    memref_type: MemRefType,
    strides: Sequence[int],
    base: SSAValue,
    indices: Sequence[SSAValue],
) -> SSAValue:
    """Insert the address computation of `base[indices]` before the matched op."""
    if not indices:
        return base
    new_ops: list[Operation] = []
    linear: SSAValue | None = None
    for index, stride in zip(indices, strides, strict=True):
        term = index
        if stride != 1:
            stride_value = _i64_constant(stride)
            product = TEMPLATES.binary(llvm.MulOp, index, stride_value.result)
            new_ops += [stride_value, product]
            term = product.res
        if linear is None:
            linear = term
        else:
            total = TEMPLATES.binary(llvm.AddOp, linear, term)
            new_ops.append(total)
            linear = total.res
    assert linear is not None
    element_type = convert_type(memref_type.element_type)
    gep = TEMPLATES.build(
        (llvm.GEPOp, "inbounds", element_type, base.type), (base, linear), (base.type,),
        lambda: llvm.GEPOp.from_mixed_indices(base, [linear], element_type,
                                              result_type=base.type, inbounds=True))
    new_ops.append(gep)
    rewriter.insert(new_ops)
    return gep.result


class LoadLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.LoadOp, rewriter: PatternRewriter, /):
        memref_type = op.memref.type
        assert isinstance(memref_type, MemRefType)
        # Diagnose before rewriting anything.
        strides = row_major_strides(op, memref_type)
        alignment = element_size_in_bytes(op, memref_type.element_type)
        base, *indices = llvm_operands(rewriter, op)
        pointer = element_pointer(rewriter, memref_type, strides, base, indices)
        loaded = convert_type(op.res.type)
        load = TEMPLATES.build((llvm.LoadOp, loaded, alignment), (pointer,), (loaded,),
                               lambda: llvm.LoadOp(pointer, loaded, alignment=alignment))
        replace_with_llvm(rewriter, op, [load], load.results)


class StoreLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.StoreOp, rewriter: PatternRewriter, /):
        memref_type = op.memref.type
        assert isinstance(memref_type, MemRefType)
        strides = row_major_strides(op, memref_type)
        alignment = element_size_in_bytes(op, memref_type.element_type)
        value, base, *indices = llvm_operands(rewriter, op)
        pointer = element_pointer(rewriter, memref_type, strides, base, indices)
        store = TEMPLATES.build((llvm.StoreOp, alignment), (value, pointer), (),
                                lambda: llvm.StoreOp(value, pointer, alignment=alignment))
        replace_with_llvm(rewriter, op, [store], [])


def _element_count(op: Operation, memref_type: MemRefType) -> int:
    shape = memref_type.get_shape()
    if any(dim == DYNAMIC_INDEX for dim in shape):
        raise unsupported_op_error(PASS_NAME, op, f"{memref_type} needs a static shape")
    row_major_strides(op, memref_type)  # layout check
    count = 1
    for dim in shape:
        count *= dim
    return count


def is_dynamic_shared(op: memref.GlobalOp) -> bool:
    return DYNAMIC_SHARED_ATTR in op.attributes


def _global_alignment(op: memref.GlobalOp) -> int:
    alignment = element_size_in_bytes(op, op.type.element_type)
    if memref_address_space(op.type) == SHARED_ADDRESS_SPACE:
        alignment = max(alignment, SHARED_GLOBAL_ALIGNMENT)
    if op.alignment is not None:
        alignment = max(alignment, op.alignment.value.data)
    return alignment


def pack_dynamic_shared(container: Operation) -> tuple[dict[str, int], int, int]:
    """Offsets of the dynamic shared globals directly in `container` (in order, each at its
    alignment) -> ({name: byte offset}, total bytes, largest alignment). Globals of an overlay
    (`SHARED_OVERLAY_ATTR`: one stage's of a kernel of several, a block running one of them)
    start where the others end, each overlay at the same place: the total is the largest."""
    offsets: dict[str, int] = {}
    common: list[memref.GlobalOp] = []
    overlays: dict[int, list[memref.GlobalOp]] = {}
    for region in container.regions:
        for block in region.blocks:
            for op in block.ops:
                if not isinstance(op, memref.GlobalOp) or not is_dynamic_shared(op):
                    continue
                if memref_address_space(op.type) != SHARED_ADDRESS_SPACE:
                    raise unsupported_op_error(
                        PASS_NAME, op, f"{DYNAMIC_SHARED_ATTR} needs a shared (space 3) global"
                    )
                overlay = op.attributes.get(SHARED_OVERLAY_ATTR)
                if isinstance(overlay, IntegerAttr):
                    overlays.setdefault(overlay.value.data, []).append(op)
                else:
                    common.append(op)
    align = SHARED_GLOBAL_ALIGNMENT

    def place(ops: list[memref.GlobalOp], start: int) -> int:
        nonlocal align
        end = start
        for op in ops:
            alignment = _global_alignment(op)
            end = -(-end // alignment) * alignment
            offsets[op.sym_name.data] = end
            end += _element_count(op, op.type) * element_size_in_bytes(op, op.type.element_type)
            align = max(align, alignment)
        return end

    shared = place(common, 0)
    total = max([shared, *(place(ops, shared) for ops in overlays.values())])
    return offsets, total, align


class GlobalLowering(RewritePattern):
    """memref.global → llvm.mlir.global of a flat array, without initializer (a dynamic
    shared one → nothing: the module's packed array replaces it)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.GlobalOp, rewriter: PatternRewriter, /):
        if is_dynamic_shared(op):
            rewriter.erase(op)
            return
        memref_type = op.type
        if not isinstance(op.initial_value, UnitAttr):
            raise unsupported_op_error(
                PASS_NAME, op, "initialized globals are not supported on the device"
            )
        space = memref_address_space(memref_type)
        count = _element_count(op, memref_type)
        element_type = convert_type(memref_type.element_type)
        alignment = _global_alignment(op)
        # Shared memory is per block: never visible outside the module.
        is_private = op.sym_visibility.data == "private"
        linkage = "internal" if space == SHARED_ADDRESS_SPACE or is_private else "external"
        global_op = llvm.GlobalOp(
            llvm.LLVMArrayType(count, element_type),
            op.sym_name,
            linkage,
            addr_space=space,
            constant=op.constant is not None,
            alignment=alignment,
        )
        rewriter.replace(op, global_op)


def _check_get_global(op: memref.GetGlobalOp) -> None:
    """MLIR's verifier checks that a get_global has its global's type; xDSL's does not, and
    the lowering would silently read the global as the other type."""
    found = SymbolTable.lookup_symbol(op, op.name_)
    if not isinstance(found, memref.GlobalOp | llvm.GlobalOp):
        what = "nothing" if found is None else f"a '{found.name}'"
        raise unsupported_op_error(PASS_NAME, op, f"{op.name_} names {what}, not a global")
    if isinstance(found, memref.GlobalOp) and found.type != op.memref.type:
        raise unsupported_op_error(PASS_NAME, op, f"the result type {op.memref.type} is not "
                                   f"the type {found.type} of global {op.name_}")


class GetGlobalLowering(RewritePattern):
    def __init__(self, dynamic: dict[Operation, tuple[dict[str, int], int]] | None = None):
        # symbol table op -> ({global: byte offset}, alignment of the packed array)
        self.dynamic = dynamic or {}

    def _dynamic_place(self, op: memref.GetGlobalOp) -> tuple[int, int] | None:
        name = op.name_.root_reference.data
        parent = op.parent_op()
        while parent is not None:
            if parent in self.dynamic:
                offsets, align = self.dynamic[parent]
                return (offsets[name], align) if name in offsets else None
            parent = parent.parent_op()
        return None

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.GetGlobalOp, rewriter: PatternRewriter, /):
        pointer_type = convert_type(op.memref.type)
        assert isinstance(pointer_type, llvm.LLVMPointerType)
        place = self._dynamic_place(op) if self.dynamic else None
        if place is None:
            address = llvm.AddressOfOp(op.name_, pointer_type)
            replace_with_llvm(rewriter, op, [address], address.results)
            return
        offset, align = place
        base = llvm.AddressOfOp(DYNAMIC_SHARED_SYMBOL, pointer_type)
        new_ops: list[Operation] = [base]
        byte_offset: SSAValue | None = _i64_constant(offset).result if offset else None
        if byte_offset is not None:
            new_ops.append(byte_offset.owner)  # type: ignore[arg-type]
        if align > DYNAMIC_SHARED_BASE_ALIGNMENT:
            # pad = -address mod align: the first `align`-aligned byte of the array
            address = llvm.PtrToIntOp(base.result, i64)
            zero, mask = _i64_constant(0), _i64_constant(align - 1)
            negated = llvm.SubOp(zero.result, address.results[0])
            pad = llvm.AndOp(negated.res, mask.result)
            new_ops += [address, zero, mask, negated, pad]
            if byte_offset is None:
                byte_offset = pad.res
            else:
                total = llvm.AddOp(pad.res, byte_offset)
                new_ops.append(total)
                byte_offset = total.res
        if byte_offset is None:
            replace_with_llvm(rewriter, op, new_ops, base.results)
            return
        at = llvm.GEPOp.from_mixed_indices(base.result, [byte_offset], IntegerType(8),
                                           result_type=pointer_type, inbounds=True)
        replace_with_llvm(rewriter, op, [*new_ops, at], at.results)


class AllocaLowering(RewritePattern):
    """Private arrays: a generic `llvm.alloca` cast to the local address space (5).

    The NVPTX data layout puts allocas in the generic space (0); NVPTX rewrites them to local
    memory, and the cast lets loads and stores use `ld.local`/`st.local` directly.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.AllocaOp, rewriter: PatternRewriter, /):
        from tilesync.dialects.llvmx import AddrSpaceCastOp

        memref_type = op.memref.type
        assert isinstance(memref_type, MemRefType)
        if memref_address_space(memref_type) != LOCAL_ADDRESS_SPACE:
            raise unsupported_op_error(
                PASS_NAME,
                op,
                f"memref.alloca needs memory space {LOCAL_ADDRESS_SPACE} (private); "
                f"got {memref_type}",
            )
        count = _element_count(op, memref_type)
        size = _i64_constant(count)
        alignment = element_size_in_bytes(op, memref_type.element_type)
        if op.alignment is not None:
            alignment = max(alignment, op.alignment.value.data)
        alloca = llvm.AllocaOp(size, convert_type(memref_type.element_type), alignment)
        local = AddrSpaceCastOp(alloca.res, llvm.LLVMPointerType(IntAttr(LOCAL_ADDRESS_SPACE)))
        replace_with_llvm(rewriter, op, [size, alloca, local], local.results)


class AllocLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.AllocOp, rewriter: PatternRewriter, /):
        raise unsupported_op_error(
            PASS_NAME,
            op,
            "no heap allocation in kernels: pass the buffer as an argument, use a "
            "shared-memory memref.global or a private memref.alloca",
        )


class CastLowering(RewritePattern):
    """memref.cast between static and dynamic shapes: the same bare pointer."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.CastOp, rewriter: PatternRewriter, /):
        source, dest = op.source.type, op.dest.type
        if not isinstance(source, MemRefType) or not isinstance(dest, MemRefType):
            raise unsupported_op_error(PASS_NAME, op, "unranked memrefs are not supported")
        row_major_strides(op, source)
        row_major_strides(op, dest)
        if convert_type(source) != convert_type(dest):
            raise unsupported_op_error(PASS_NAME, op, "memref.cast cannot change memory space")
        (pointer,) = llvm_operands(rewriter, op)
        replace_with_llvm(rewriter, op, [], [pointer])


class MemorySpaceCastLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: memref.MemorySpaceCastOp, rewriter: PatternRewriter, /):
        from tilesync.dialects.llvmx import AddrSpaceCastOp

        (pointer,) = llvm_operands(rewriter, op)
        cast = AddrSpaceCastOp(pointer, convert_type(op.dest.type))
        replace_with_llvm(rewriter, op, [cast], cast.results)


class ExtractAlignedPointerLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(
        self, op: memref.ExtractAlignedPointerAsIndexOp, rewriter: PatternRewriter, /
    ):
        (pointer,) = llvm_operands(rewriter, op)
        address = llvm.PtrToIntOp(pointer, i64)
        replace_with_llvm(rewriter, op, [address], address.results)


MEMREF_TO_LLVM_PATTERNS: tuple[RewritePattern, ...] = (
    LoadLowering(),
    StoreLowering(),
    GlobalLowering(),
    GetGlobalLowering(),
    AllocaLowering(),
    AllocLowering(),
    CastLowering(),
    MemorySpaceCastLowering(),
    ExtractAlignedPointerLowering(),
)


@dataclass(frozen=True)
class ConvertMemRefToLLVMPass(ModulePass):
    """memrefs to bare pointers: GEP + load/store, shared-memory globals."""

    name = "convert-memref-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        with located_type_errors(PASS_NAME, op):
            dynamic: dict[Operation, tuple[dict[str, int], int]] = {}
            for container in walk_ops(op):  # the module itself first
                if isinstance(container, memref.GetGlobalOp):
                    _check_get_global(container)
                if not container.regions or isinstance(container, llvm.FuncOp):
                    continue
                offsets, total, align = pack_dynamic_shared(container)
                if not offsets:
                    continue
                dynamic[container] = (offsets, align)
                # One extern array per module: every `.extern .shared` array starts at the same
                # address, so the globals must be packed into one, never declared separately.
                # Declared with the alignment it is guaranteed, so LLVM assumes no more.
                container.regions[0].blocks[0].insert_op_before(
                    llvm.GlobalOp(llvm.LLVMArrayType(0, IntegerType(8)), DYNAMIC_SHARED_SYMBOL,
                                  "external", addr_space=SHARED_ADDRESS_SPACE,
                                  alignment=DYNAMIC_SHARED_BASE_ALIGNMENT),
                    container.regions[0].blocks[0].first_op)
                padding = max(0, align - DYNAMIC_SHARED_BASE_ALIGNMENT)
                container.attributes[DYNAMIC_SHARED_BYTES_ATTR] = IntegerAttr(total + padding, 64)
            patterns = [GetGlobalLowering(dynamic) if isinstance(p, GetGlobalLowering)
                        else p for p in MEMREF_TO_LLVM_PATTERNS]
            apply_patterns(op, patterns)
        reject_leftover_ops(op, PASS_NAME, "memref.")


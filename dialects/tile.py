"""The `tile` dialect: warp- and thread-level tensor-core building blocks for kernel bodies.

A GEMM main loop is written with a handful of ops; `convert-tile-to-nvvm` lowers each one to
one PTX instruction (or a few) plus its address arithmetic:

    !tile.frag<a, f16, m16n8k16>        the A operand of one mma.sync (4 x b32 per lane)
    !tile.frag<b, f16, m16n8k16>        the B operand (2 x b32 per lane)
    !tile.frag<acc, f32, m16n8k16>      the fp32 accumulator / result (4 x f32 per lane)

    %z = tile.fill %zero : f32 -> !tile.frag<acc, f32, m16n8k16>
    tile.cp_async %smem[%s, %r, %c], %A[%gr, %gc] masked swizzle #tile.swizzle<2, 3, 3>
        : memref<3x128x32xf16, 3>, memref<4096x4096xf16>
    tile.cp_async_commit
    tile.cp_async_wait 1
    %a = tile.ldmatrix %smem[%s, %r, %c] swizzle #tile.swizzle<2, 3, 3>
        : memref<3x128x32xf16, 3> -> !tile.frag<a, f16, m16n8k16>
    %b0, %b1 = tile.ldmatrix %smemb[%s, %k, %n] trans swizzle #tile.swizzle<3, 3, 4>
        : memref<3x32x128xf16, 3> -> !tile.frag<b, f16, m16n8k16>, !tile.frag<b, f16, m16n8k16>
    %d = tile.mma %a, %b0, %acc : !tile.frag<a, f16, m16n8k16>, !tile.frag<b, f16, m16n8k16>,
        !tile.frag<acc, f32, m16n8k16>
    tile.store_acc %d, %C[%i, %j] masked epilogue {
    ^bb0(%v: f32, %row: index, %col: index):
      ...
      tile.yield %w : f32
    } : !tile.frag<acc, f32, m16n8k16>, memref<4096x4096xf16>

Semantics:

- `tile.ldmatrix` and `tile.mma` and `tile.store_acc` are *warp-collective*: every lane of the
  warp executes them with the same (warp-uniform) indices, which name the origin of the block
  in the last two dimensions of the memref. The lowering derives each lane's part from its
  lane id.
  - One A fragment: the 16x16 block [i, i+16) x [j, j+16) of a row-major M x K tile (with
    `trans`: of a K x M tile, i.e. the memory holds A transposed).
  - Two B fragments: the 16 (n) x 16 (k) block of a tile stored N x K (K contiguous, no
    `trans`), or the 16 (k) x 16 (n) block of a tile stored K x N (N contiguous, `trans`);
    the first fragment covers n in [0, 8), the second [8, 16).
  - One B fragment: the same with 8 columns of n (ldmatrix .x2).
- `tile.cp_async` is *per thread*: it copies the 16 bytes at src[idx...] (8 f16) to
  dst[idx...] asynchronously (PTX `cp.async.cg`); with `masked`, a source chunk outside the
  source memref's (static) shape is not read and the destination is zero-filled.
  `tile.copy_out %C[%i, %j], %smem[...] masked swizzle ...` is its way back, also per thread
  and 16 bytes, synchronous (`ld.shared` then `st.global`); `masked` skips a chunk outside
  C. A staged epilogue stores the accumulators into shared memory, then copies whole rows
  out with it.
- `tile.store_acc` stores the 16x8 accumulator tile at [i, j] of a row-major memref, after
  applying the optional `epilogue` region to each element (arguments: the fp32 value, its row
  and its column; result: the fp32 value to store), converting to the memref's element type;
  with `masked`, elements outside the memref's shape are not stored.
- Warp specialization on sm_90 (one thread copies, warpgroups multiply):
  `!tile.tensor_map<128x64xf16, swizzle 128>` is a kernel parameter holding a TMA tensor map
  (the box one copy moves and its shared-memory swizzle); `tile.tma_load %map[%r, %c],
  %smem[...], %bars[%i]` copies the box at (%r, %c) into shared memory and completes the
  transaction barrier `%bars[%i]` (an i64 in shared memory: `tile.mbarrier_init`,
  `tile.mbarrier_arrive [expect_tx]`, `tile.mbarrier_wait %parity [wgmma_in_flight]`, which
  traps after a timeout); `tile.tma_store` copies a box back (bulk groups:
  `tile.tma_store_commit`, `tile.tma_store_wait`; a post of the stored tile waits for their
  writes: `sync.store_point ... async_proxy`); `tile.bulk_load %smem[...], %src[...],
  %bars[%i] bytes N` and `tile.bulk_store %dst[...], %smem[...] bytes N` are their 1-D
  forms (N contiguous bytes, no tensor map), in the same barriers and bulk groups;
  `tile.named_barrier ID, N` synchronizes N threads (the consumers alone); `tile.setmaxnreg`
  moves registers between warpgroups; `tile.prefetch_tensor_map` warms a map. These ops are
  executed by whichever threads the kernel's control flow lets through.
- `#tile.swizzle<B, M, S>` (CUTLASS's Swizzle<B, M, S>) permutes the row-major linear element
  offset `o` of a shared-memory access: `o ^ ((o >> S) & (((1 << B) - 1) << M))`. Both writers
  (`tile.cp_async`) and readers (`tile.ldmatrix`) of a buffer must use the same swizzle.
  `swizzle_for_row(row_bytes, elem_bytes)` gives the bank-conflict-free one for a tile row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    I32,
    AnyFloat,
    ArrayAttr,
    BFloat16Type,
    Float16Type,
    Float32Type,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    NoneAttr,
    StringAttr,
    UnitAttr,
    i32,
    i64,
)
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import (
    Attribute,
    Block,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    AnyAttr,
    AttrSizedOperandSegments,
    BaseAttr,
    IRDLOperation,
    VarConstraint,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsTerminator
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from tilesync.contract import GENERIC_ADDRESS_SPACE, SHARED_ADDRESS_SPACE

# --------------------------------------------------------------------------------------------
# Types and attributes
# --------------------------------------------------------------------------------------------

ROLES = ("a", "b", "acc")
SHAPES = ("m16n8k16",)
INPUT_TYPES = (Float16Type, BFloat16Type)

# 32-bit registers per lane of each fragment of m16n8k16.
FRAG_REGISTERS = {"a": 4, "b": 2, "acc": 4}
SHARED_SPACE = SHARED_ADDRESS_SPACE


@irdl_attr_definition
class FragType(ParametrizedAttribute, TypeAttribute):
    """`!tile.frag<role, element, shape>`: one lane's share of an mma.sync operand.

    role `a` / `b` hold f16 or bf16 (packed two per 32-bit register), `acc` holds f32.
    """

    name = "tile.frag"

    role: StringAttr
    element_type: Attribute
    shape: StringAttr

    def __init__(self, role: str, element_type: Attribute, shape: str = "m16n8k16"):
        super().__init__(StringAttr(role), element_type, StringAttr(shape))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[Attribute, ...]:
        with parser.in_angle_brackets():
            role = parser.parse_identifier(" (the fragment role: a, b or acc)")
            parser.parse_punctuation(",")
            element = parser.parse_type()
            parser.parse_punctuation(",")
            shape = parser.parse_identifier(" (the mma shape, e.g. m16n8k16)")
        return (StringAttr(role), element, StringAttr(shape))

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(f"{self.role.data}, ")
            printer.print_attribute(self.element_type)
            printer.print_string(f", {self.shape.data}")

    def verify(self) -> None:
        if self.role.data not in ROLES:
            raise VerifyException(
                f"!tile.frag role must be one of {', '.join(ROLES)}, got '{self.role.data}'"
            )
        if self.shape.data not in SHAPES:
            raise VerifyException(
                f"!tile.frag shape must be one of {', '.join(SHAPES)}, got '{self.shape.data}'"
            )
        if self.role.data == "acc":
            if not isinstance(self.element_type, Float32Type):
                raise VerifyException(
                    f"!tile.frag<acc> accumulates in f32, got {self.element_type}"
                )
        elif not isinstance(self.element_type, INPUT_TYPES):
            raise VerifyException(
                f"!tile.frag<{self.role.data}> holds f16 or bf16, got {self.element_type}"
            )

    @property
    def registers(self) -> int:
        """32-bit registers per lane."""
        return FRAG_REGISTERS[self.role.data]


@irdl_attr_definition
class SwizzleAttr(ParametrizedAttribute):
    """`#tile.swizzle<B, M, S>`: o -> o ^ ((o >> S) & (((1 << B) - 1) << M)) on element offsets.

    Bits [M+S, M+S+B) of the offset are XORed into bits [M, M+B); the bits below M (one 16-byte
    chunk for M = 3 and 16-bit elements) stay together, and the map is a bijection when S >= B.
    """

    name = "tile.swizzle"

    bits: IntAttr
    base: IntAttr
    shift: IntAttr

    def __init__(self, bits: int, base: int, shift: int):
        super().__init__(IntAttr(bits), IntAttr(base), IntAttr(shift))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[Attribute, ...]:
        with parser.in_angle_brackets():
            values = [parser.parse_integer(allow_boolean=False)]
            for _ in range(2):
                parser.parse_punctuation(",")
                values.append(parser.parse_integer(allow_boolean=False))
        return tuple(IntAttr(v) for v in values)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.bits.data}, {self.base.data}, {self.shift.data}>")

    def verify(self) -> None:
        b, m, s = self.bits.data, self.base.data, self.shift.data
        if b < 0 or m < 0 or s < b:
            raise VerifyException(
                f"#tile.swizzle<{b}, {m}, {s}> needs B >= 0, M >= 0 and S >= B (a bijection)"
            )
        if b + m > 31 or s > 31:
            raise VerifyException(
                f"#tile.swizzle<{b}, {m}, {s}> needs B + M <= 31 and S <= 31 (offsets are "
                f"32-bit)"
            )

    @property
    def mask(self) -> int:
        return ((1 << self.bits.data) - 1) << self.base.data

    def apply(self, offset: int) -> int:
        """The swizzled offset (the same function the lowering emits)."""
        return offset ^ ((offset >> self.shift.data) & self.mask)


def swizzle_for_row(row_elems: int, elem_bytes: int = 2) -> SwizzleAttr:
    """The swizzle that makes 8 consecutive rows of 16-byte chunks hit distinct banks.

    Rows of 32, 64 or 128+ bytes: the row index bits above one 128-byte line are XORed into the
    16-byte-chunk bits. (ldmatrix reads 8 rows at one chunk column; cp.async writes 16 B.)
    """
    row_bytes = row_elems * elem_bytes
    chunk_elems = 16 // elem_bytes
    base = chunk_elems.bit_length() - 1  # log2 of elements per 16-byte chunk
    if row_bytes % 16 or row_bytes & (row_bytes - 1):
        raise ValueError(f"swizzled rows must be a power of two of 16-byte chunks, got {row_bytes}")
    chunks_per_row = row_bytes // 16
    row_shift = chunks_per_row.bit_length() - 1 + base  # bit of the row index in the offset
    if chunks_per_row >= 8:
        return SwizzleAttr(3, base, row_shift - base)
    # Rows shorter than a 128-byte line: 128 / row_bytes rows share a line; XOR the line index.
    rows_per_line = 8 // chunks_per_row
    bits = (chunks_per_row.bit_length() - 1)
    return SwizzleAttr(bits, base, row_shift + rows_per_line.bit_length() - 1 - base)


# --------------------------------------------------------------------------------------------
# Helpers for parsing and verifying
# --------------------------------------------------------------------------------------------


def _parse_indexed(parser: Parser) -> tuple[UnresolvedOperand, list[UnresolvedOperand]]:
    operand = parser.parse_unresolved_operand()
    indices = parser.parse_comma_separated_list(
        parser.Delimiter.SQUARE, parser.parse_unresolved_operand
    )
    return operand, indices


def _print_indexed(printer: Printer, value: SSAValue, indices: Sequence[SSAValue]) -> None:
    printer.print_ssa_value(value)
    printer.print_string("[")
    printer.print_list(indices, printer.print_ssa_value)
    printer.print_string("]")


def _memref(op: Operation, value: SSAValue, what: str) -> MemRefType:
    if not isinstance(value.type, MemRefType):
        raise VerifyException(f"'{op.name}' {what} must be a memref, got {value.type}")
    return value.type


def memory_space(memref_type: MemRefType) -> int | None:
    space = memref_type.memory_space
    if isinstance(space, IntegerAttr):
        return space.value.data
    if isinstance(space, IntAttr):
        return space.data
    if isinstance(space, StringAttr):
        return {"shared": SHARED_SPACE, "workgroup": SHARED_SPACE}.get(space.data)
    return None


def _verify_indices(op: Operation, memref_type: MemRefType, indices: Sequence[SSAValue],
                    what: str) -> None:
    if len(indices) != memref_type.get_num_dims():
        raise VerifyException(
            f"'{op.name}' {what} needs {memref_type.get_num_dims()} indices, got {len(indices)}"
        )
    for index in indices:
        if not isinstance(index.type, IndexType):
            raise VerifyException(f"'{op.name}' indices must be index, got {index.type}")


def _verify_shared(op: Operation, memref_type: MemRefType, what: str) -> None:
    if memory_space(memref_type) != SHARED_SPACE:
        raise VerifyException(
            f"'{op.name}' {what} must be in shared memory (memory space 3), got {memref_type}"
        )
    if memref_type.get_num_dims() < 2:
        raise VerifyException(f"'{op.name}' {what} must have rank >= 2, got {memref_type}")
    if any(d < 0 for d in memref_type.get_shape()):
        raise VerifyException(f"'{op.name}' {what} must have a static shape, got {memref_type}")


def _verify_swizzle(op: Operation, swizzle: SwizzleAttr | None, elem_bytes: int) -> None:
    # The swizzle must keep each 16-byte chunk whole (its low bits untouched).
    if swizzle is None:
        return
    chunk_bits = (16 // elem_bytes).bit_length() - 1
    if swizzle.base.data < chunk_bits and swizzle.bits.data > 0:
        raise VerifyException(
            f"'{op.name}' swizzle {swizzle} would split 16-byte chunks (needs M >= {chunk_bits})"
        )


def element_bytes(element_type: Attribute) -> int:
    if isinstance(element_type, AnyFloat):
        return element_type.bitwidth // 8
    if isinstance(element_type, IntegerType):
        return max(1, element_type.width.data // 8)
    raise VerifyException(f"unsupported element type {element_type}")


# --------------------------------------------------------------------------------------------
# Operations
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class FillOp(IRDLOperation):
    """`tile.fill %v : f32 -> !tile.frag<acc, f32, m16n8k16>`: every element of the fragment."""

    name = "tile.fill"
    value = operand_def(Float32Type)
    res = result_def(FragType)

    assembly_format = "$value attr-dict `:` type($value) `->` type($res)"

    def __init__(self, value: SSAValue, frag_type: FragType):
        super().__init__(operands=[value], result_types=[frag_type])

    def verify_(self) -> None:
        assert isinstance(self.res.type, FragType)
        if self.res.type.role.data != "acc":
            raise VerifyException("'tile.fill' fills accumulator fragments only")
        if self.value.type != self.res.type.element_type:
            raise VerifyException(
                f"'tile.fill' value type {self.value.type} does not match the fragment's "
                f"element type {self.res.type.element_type}"
            )


@irdl_op_definition
class LdMatrixOp(IRDLOperation):
    """Warp-collective `ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].b16` into fragments."""

    name = "tile.ldmatrix"
    source = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    res = var_result_def(FragType)
    trans = opt_prop_def(UnitAttr)
    swizzle = opt_prop_def(SwizzleAttr)

    assembly_format = (
        "$source `[` $indices `]` (`trans` $trans^)? (`swizzle` qualified($swizzle)^)? attr-dict "
        "`:` type($source) `->` type($res)"
    )

    def __init__(self, source: SSAValue, indices: Sequence[SSAValue],
                 result_types: Sequence[FragType], trans: bool = False,
                 swizzle: SwizzleAttr | None = None):
        super().__init__(
            operands=[source, indices],
            result_types=[list(result_types)],
            properties={"trans": UnitAttr() if trans else None, "swizzle": swizzle},
        )

    @property
    def matrices(self) -> int:
        """Number of 8x8 b16 matrices loaded (x1, x2 or x4)."""
        return sum(r.type.registers for r in self.res)  # type: ignore[union-attr]

    def verify_(self) -> None:
        memref_type = _memref(self, self.source, "source")
        _verify_shared(self, memref_type, "source")
        _verify_indices(self, memref_type, self.indices, "source")
        roles = [r.type.role.data for r in self.res]  # type: ignore[union-attr]
        if roles not in (["a"], ["b"], ["b", "b"]):
            raise VerifyException(
                "'tile.ldmatrix' loads one A fragment, one B fragment or two B fragments, "
                f"got ({', '.join(roles)})"
            )
        element = memref_type.element_type
        for r in self.res:
            if r.type.element_type != element:  # type: ignore[union-attr]
                raise VerifyException(
                    f"'tile.ldmatrix' fragment {r.type} does not match the element type "
                    f"{element} of the source"
                )
        _verify_swizzle(self, self.swizzle, element_bytes(element))
        if memref_type.get_shape()[-1] % 8:
            raise VerifyException(
                "'tile.ldmatrix' source rows must be a multiple of 8 elements (16-byte rows)"
            )

@irdl_op_definition
class MmaOp(IRDLOperation):
    """Warp-collective `mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32`."""

    name = "tile.mma"
    a = operand_def(FragType)
    b = operand_def(FragType)
    acc = operand_def(FragType)
    res = result_def(FragType)

    assembly_format = (
        "$a `,` $b `,` $acc attr-dict `:` type($a) `,` type($b) `,` type($acc)"
        " `->` type($res)"
    )

    def __init__(self, a: SSAValue, b: SSAValue, acc: SSAValue):
        super().__init__(operands=[a, b, acc], result_types=[acc.type])

    def verify_(self) -> None:
        a, b, acc = self.a.type, self.b.type, self.acc.type
        assert isinstance(a, FragType) and isinstance(b, FragType) and isinstance(acc, FragType)
        if (a.role.data, b.role.data, acc.role.data) != ("a", "b", "acc"):
            raise VerifyException(
                "'tile.mma' takes fragments of roles (a, b, acc), got "
                f"({a.role.data}, {b.role.data}, {acc.role.data})"
            )
        if a.element_type != b.element_type:
            raise VerifyException(
                f"'tile.mma' A and B must have the same element type, got {a.element_type} "
                f"and {b.element_type}"
            )
        if not a.shape == b.shape == acc.shape:
            raise VerifyException("'tile.mma' fragments must have the same shape")
        if self.res.type != acc:
            raise VerifyException(
                f"'tile.mma' result type {self.res.type} must be the accumulator type {acc}"
            )


@irdl_op_definition
class CpAsyncOp(IRDLOperation):
    """Per-thread `cp.async.cg.shared.global` of 16 bytes, optionally zero-filling (`masked`)."""

    name = "tile.cp_async"
    dst = operand_def(MemRefType)
    dst_indices = var_operand_def(IndexType)
    src = operand_def(MemRefType)
    src_indices = var_operand_def(IndexType)
    masked = opt_prop_def(UnitAttr)
    swizzle = opt_prop_def(SwizzleAttr)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$dst `[` $dst_indices `]` `,` $src `[` $src_indices `]` (`masked` $masked^)? "
        "(`swizzle` qualified($swizzle)^)? attr-dict `:` type($dst) `,` type($src)"
    )

    BYTES: ClassVar[int] = 16

    def __init__(self, dst: SSAValue, dst_indices: Sequence[SSAValue], src: SSAValue,
                 src_indices: Sequence[SSAValue], masked: bool = False,
                 swizzle: SwizzleAttr | None = None):
        super().__init__(
            operands=[dst, dst_indices, src, src_indices],
            properties={"masked": UnitAttr() if masked else None, "swizzle": swizzle},
        )

    def verify_(self) -> None:
        _verify_chunk_copy(self, shared=("destination", self.dst, self.dst_indices),
                           global_=("source", self.src, self.src_indices),
                           masked=self.masked is not None, swizzle=self.swizzle)


def _verify_chunk_copy(op: Operation, shared: tuple[str, SSAValue, Sequence[SSAValue]],
                       global_: tuple[str, SSAValue, Sequence[SSAValue]], masked: bool,
                       swizzle: SwizzleAttr | None) -> None:
    """A thread's 16-byte copy between a shared and a global memref (either way): indices,
    memory spaces, one element type, rows of whole chunks, a static shape where masked."""
    shared_what, shared_ref, shared_indices = shared
    global_what, global_ref, global_indices = global_
    shared_type = _memref(op, shared_ref, shared_what)
    global_type = _memref(op, global_ref, global_what)
    _verify_shared(op, shared_type, shared_what)
    _verify_indices(op, shared_type, shared_indices, shared_what)
    _verify_indices(op, global_type, global_indices, global_what)
    if memory_space(global_type) not in (None, 1):
        raise VerifyException(f"'{op.name}' {global_what} must be in global memory, got "
                              f"{global_type}")
    if shared_type.element_type != global_type.element_type:
        raise VerifyException(f"'{op.name}' element types differ: {shared_type.element_type} "
                              f"and {global_type.element_type}")
    size = element_bytes(global_type.element_type)
    per_chunk = CpAsyncOp.BYTES // size
    for what, memref_type in ((shared_what, shared_type), (global_what, global_type)):
        shape = memref_type.get_shape()
        if shape[-1] >= 0 and shape[-1] % per_chunk:
            raise VerifyException(
                f"'{op.name}' {what} rows must be a multiple of {per_chunk} elements "
                f"(16-byte aligned), got {shape[-1]}"
            )
    if masked and any(d < 0 for d in global_type.get_shape()):
        raise VerifyException(f"'{op.name}' masked needs a static {global_what} shape, got "
                              f"{global_type}")
    _verify_swizzle(op, swizzle, size)


@irdl_op_definition
class CopyOutOp(IRDLOperation):
    """Per-thread copy of 16 bytes from shared memory (`src`, optionally swizzled) to global
    memory (`dst`) through registers: `ld.shared` then `st.global`, 16 bytes each. A staged
    epilogue's way out: a warp's 32 chunks of one row are 512 consecutive bytes, four full
    lines, where the accumulators' own stores put 4 bytes in each of eight lines a row.
    With `masked` a chunk whose destination indices lie outside `dst` is not stored."""

    name = "tile.copy_out"
    dst = operand_def(MemRefType)
    dst_indices = var_operand_def(IndexType)
    src = operand_def(MemRefType)
    src_indices = var_operand_def(IndexType)
    masked = opt_prop_def(UnitAttr)
    swizzle = opt_prop_def(SwizzleAttr)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$dst `[` $dst_indices `]` `,` $src `[` $src_indices `]` (`masked` $masked^)? "
        "(`swizzle` qualified($swizzle)^)? attr-dict `:` type($dst) `,` type($src)"
    )

    BYTES: ClassVar[int] = CpAsyncOp.BYTES  # the same chunk, the other way

    def __init__(self, dst: SSAValue, dst_indices: Sequence[SSAValue], src: SSAValue,
                 src_indices: Sequence[SSAValue], masked: bool = False,
                 swizzle: SwizzleAttr | None = None):
        super().__init__(
            operands=[dst, dst_indices, src, src_indices],
            properties={"masked": UnitAttr() if masked else None, "swizzle": swizzle},
        )

    def verify_(self) -> None:
        _verify_chunk_copy(self, shared=("source", self.src, self.src_indices),
                           global_=("destination", self.dst, self.dst_indices),
                           masked=self.masked is not None, swizzle=self.swizzle)


@irdl_op_definition
class LoadL2Op(IRDLOperation):
    """`%v = tile.load_l2 %m[%i] : memref<?xi128> -> i128`: a 16-byte element of a global memref
    read as one 16-byte weak load cached at L2 only (`ld.global.cg.v2.b64`), so no line an
    earlier load left in this SM's L1 answers it. What a reader of data other SMs write sees
    without an acquire making its L1 current: the queue bench's unsynchronized transfers read
    their ring so, where plain loads met the lines of the ring's previous round in L1 and
    timed L1, not the transfer."""

    name = "tile.load_l2"
    src = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    res = result_def(IntegerType)
    assembly_format = "$src `[` $indices `]` attr-dict `:` type($src) `->` type($res)"

    def __init__(self, src: SSAValue, indices: Sequence[SSAValue]):
        src_type = src.type
        assert isinstance(src_type, MemRefType)
        super().__init__(operands=[src, indices], result_types=[src_type.element_type])

    def verify_(self) -> None:
        src_type = _memref(self, self.src, "source")
        _verify_indices(self, src_type, self.indices, "source")
        if src_type.element_type != IntegerType(128) or self.res.type != IntegerType(128):
            raise VerifyException(f"'tile.load_l2' reads a 16-byte element (i128) as an i128, "
                                  f"got {src_type} -> {self.res.type}")
        if memory_space(src_type) not in (None, 1):
            raise VerifyException(f"'tile.load_l2' reads global memory, got {src_type}")


@irdl_op_definition
class ClusterMapOp(IRDLOperation):
    """`%peer = tile.cluster_map %buf cta %r : memref<Nxi128, 3> -> memref<Nxi128, 0 : i64>`:
    this CTA's shared-memory buffer as the same buffer of CTA %r of its cluster (sm_90), by
    generic address: plain stores and loads through it reach the peer's shared memory. The
    peer must still be running (its kernel meets its cluster before it returns)."""

    name = "tile.cluster_map"
    src = operand_def(MemRefType)
    cta = operand_def(IndexType)
    res = result_def(MemRefType)
    assembly_format = "$src `cta` $cta attr-dict `:` type($src) `->` type($res)"

    def __init__(self, src: SSAValue, cta: SSAValue):
        src_type = src.type
        assert isinstance(src_type, MemRefType)
        generic = MemRefType(src_type.element_type, src_type.get_shape(), NoneAttr(),
                             IntegerAttr(GENERIC_ADDRESS_SPACE, 64))
        super().__init__(operands=[src, cta], result_types=[generic])

    def verify_(self) -> None:
        src_type = _memref(self, self.src, "source")
        res_type = _memref(self, self.res, "result")
        if memory_space(src_type) != SHARED_SPACE:
            raise VerifyException(f"'tile.cluster_map' maps a shared-memory buffer, got "
                                  f"{src_type}")
        if memory_space(res_type) != GENERIC_ADDRESS_SPACE or \
                res_type.element_type != src_type.element_type or \
                tuple(res_type.get_shape()) != tuple(src_type.get_shape()):
            raise VerifyException(f"'tile.cluster_map' yields the buffer's shape and element "
                                  f"type in memory space 0 (generic), got {res_type} for "
                                  f"{src_type}")


@irdl_op_definition
class CpAsyncCommitOp(IRDLOperation):
    """`cp.async.commit_group`: close the group of this thread's pending cp.async copies."""

    name = "tile.cp_async_commit"
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


class _WaitGroupOp(IRDLOperation):
    """`<name> N`: wait until at most N groups are pending (N in 0..7, as PTX counts them)."""

    pending = prop_def(IntegerAttr[I32])
    assembly_format = "$pending attr-dict"

    def __init__(self, pending: int):
        super().__init__(properties={"pending": IntegerAttr(pending, i32)})

    def verify_(self) -> None:
        if not 0 <= self.pending.value.data <= 7:
            raise VerifyException(
                f"'{self.name}' pending must be in 0..7, got {self.pending.value.data}"
            )

@irdl_op_definition
class CpAsyncWaitOp(_WaitGroupOp):
    """`cp.async.wait_group N`: wait until at most N of this thread's groups are pending.

    Only the issuing thread's copies are complete afterwards: a block barrier must follow
    before other threads read them.
    """

    name = "tile.cp_async_wait"


WGMMA_ROW_BYTES = 128
"""wgmma operands are K-major tiles whose rows are 128 bytes (64 f16/bf16), stored with the
128-byte swizzle (`swizzle_for_row(64)`: chunk c of row r at c ^ (r % 8)) from a 1024-byte
aligned base, i.e. the 8-row x 128-byte atoms of the sm_90 SWIZZLE_128B shared layout."""
WGMMA_N_ATOM = WGMMA_ROW_BYTES // 2
"""The columns of an N-major B (`tile.wgmma ... trans_b`) in one 128-byte swizzled row of
f16/bf16: wgmma reads a wider N from the next such atoms."""


class _WgmmaShape:
    """N and the operands' type of a wgmma, from its accumulators and B (A has B's type).
    (No annotations here: IRDL reads an op class's annotations as its fields.)"""

    @property
    def n(self) -> int:
        return 8 * len(self.acc)  # type: ignore[attr-defined]

    @property
    def element_kind(self) -> str:
        """"f16" or "bf16": the type of both operands."""
        element = self.b.type.element_type  # type: ignore[attr-defined]
        return "f16" if isinstance(element, Float16Type) else "bf16"


def _parse_wgmma_accumulators(parser: Parser
                              ) -> tuple[list[UnresolvedOperand], dict[str, Attribute],
                                         tuple[Attribute, Attribute, Attribute]]:
    """`, %acc... {attrs} : A-type, B-type, acc-type`, the end a wgmma's syntax shares: one
    accumulator type stands for all of them, which a declarative format (one type per operand
    of a variadic) cannot say."""
    accs = []
    while parser.parse_optional_punctuation(",") is not None:
        accs.append(parser.parse_unresolved_operand())
    attrs = parser.parse_optional_attr_dict()
    parser.parse_punctuation(":")
    a_type = parser.parse_type()
    parser.parse_punctuation(",")
    b_type = parser.parse_type()
    parser.parse_punctuation(",")
    return accs, attrs, (a_type, b_type, parser.parse_type())


def _print_wgmma_accumulators(printer: Printer, op: WgmmaOp | WgmmaRegAOp) -> None:
    for value in op.acc:
        printer.print_string(", ")
        printer.print_ssa_value(value)
    printer.print_op_attributes(op.attributes)
    printer.print_string(" : ")
    printer.print_attribute(op.a.type)
    printer.print_string(", ")
    printer.print_attribute(op.b.type)
    printer.print_string(", ")
    printer.print_attribute(op.acc[0].type if op.acc else FragType("acc", Float32Type()))


@irdl_op_definition
class WgmmaOp(_WgmmaShape, IRDLOperation):
    """Warpgroup-collective `wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}` (sm_90a).

    `tile.wgmma %a[%s, %m, %k], %b[%s, %n, %k], %acc...` adds A[m:m+64, k:k+16] times
    B[n:n+N, k:k+16]^T to the accumulators, both operands read from shared memory through
    descriptors (K-major, WGMMA_ROW_BYTES-byte swizzled rows). N = 8 x the number of
    accumulators; warp w of the group holds rows m + 16 (w % 4) .. + 15 and accumulator j
    columns 8 j .. 8 j + 7 of them, in the mma.sync m16n8 accumulator layout, so `tile.store_acc`
    stores them as it stores mma.sync results. Asynchronous: the results may be read only after
    `tile.wgmma_commit` and a `tile.wgmma_wait` that covers it; `tile.wgmma_fence` must come
    before the first wgmma that reads registers written otherwise, and shared memory written by
    this CTA's threads needs `tile.fence_proxy_async` before a barrier first.

    With `trans_b` B is N-major (a K x N operand, N contiguous, such as a weight stored K x N):
    `%b[..., %atom, %k, %n]` is K row k of 64 columns of N (one 128-byte swizzled row), and
    an N wider than 64 runs on through the next atoms of the memref's third dimension from the
    end (B stored as [..., N / 64, K, 64], one TMA box per 64 columns): at most 64 x its
    extent there (64 for a memref of rank 2).
    """

    name = "tile.wgmma"
    a = operand_def(MemRefType)
    a_indices = var_operand_def(IndexType)
    b = operand_def(MemRefType)
    b_indices = var_operand_def(IndexType)
    acc = var_operand_def(FragType)
    res = var_result_def(FragType)
    trans_b = opt_prop_def(UnitAttr)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, a: SSAValue, a_indices: Sequence[SSAValue], b: SSAValue,
                 b_indices: Sequence[SSAValue], acc: Sequence[SSAValue], trans_b: bool = False):
        super().__init__(operands=[a, a_indices, b, b_indices, acc],
                         result_types=[[v.type for v in acc]],
                         properties={"trans_b": UnitAttr() if trans_b else None})

    @property
    def b_atoms(self) -> int:
        """With `trans_b`: the 64-column atoms of N the memref holds (its third dimension from
        the end; 1 for rank 2)."""
        shape = self.b.type.get_shape()  # type: ignore[attr-defined]
        return shape[-3] if len(shape) >= 3 else 1


    def verify_(self) -> None:
        element = None
        for what, value, indices in (("A", self.a, self.a_indices),
                                     ("B", self.b, self.b_indices)):
            memref_type = _memref(self, value, what)
            _verify_shared(self, memref_type, what)
            _verify_indices(self, memref_type, indices, what)
            row_bytes = memref_type.get_shape()[-1] * element_bytes(memref_type.element_type)
            if row_bytes != WGMMA_ROW_BYTES:
                raise VerifyException(
                    f"'tile.wgmma' {what} rows must be {WGMMA_ROW_BYTES} bytes (K-major, "
                    f"128-byte swizzle), got {memref_type}"
                )
            if element is not None and memref_type.element_type != element:
                raise VerifyException("'tile.wgmma' A and B must have the same element type")
            element = memref_type.element_type
        if not isinstance(element, INPUT_TYPES):
            raise VerifyException(f"'tile.wgmma' multiplies f16 or bf16, got {element}")
        if not 1 <= len(self.acc) <= 32:
            raise VerifyException(
                f"'tile.wgmma' takes 1 to 32 accumulators (N = 8 .. 256), got {len(self.acc)}"
            )
        if self.trans_b is not None and self.n > WGMMA_N_ATOM * self.b_atoms:
            raise VerifyException(
                f"'tile.wgmma' trans_b reads N in atoms of {WGMMA_N_ATOM} columns: N = "
                f"{self.n} needs {-(-self.n // WGMMA_N_ATOM)}, B holds {self.b_atoms} "
                f"({self.b.type})"
            )
        for value in self.acc:
            t = value.type
            if not isinstance(t, FragType) or t.role.data != "acc":
                raise VerifyException(f"'tile.wgmma' accumulators must be !tile.frag<acc>, "
                                      f"got {t}")
        if [r.type for r in self.res] != [v.type for v in self.acc]:
            raise VerifyException("'tile.wgmma' results must have the accumulators' types")

    @classmethod
    def parse(cls, parser: Parser) -> WgmmaOp:
        a, a_indices = _parse_indexed(parser)
        parser.parse_punctuation(",")
        b, b_indices = _parse_indexed(parser)
        trans_b = parser.parse_optional_keyword("trans_b") is not None
        accs, attrs, (a_type, b_type, acc_type) = _parse_wgmma_accumulators(parser)
        index = IndexType()
        op = cls(parser.resolve_operand(a, a_type),
                 [parser.resolve_operand(i, index) for i in a_indices],
                 parser.resolve_operand(b, b_type),
                 [parser.resolve_operand(i, index) for i in b_indices],
                 [parser.resolve_operand(v, acc_type) for v in accs], trans_b)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        _print_indexed(printer, self.a, self.a_indices)
        printer.print_string(", ")
        _print_indexed(printer, self.b, self.b_indices)
        if self.trans_b is not None:
            printer.print_string(" trans_b")
        _print_wgmma_accumulators(printer, self)


@irdl_op_definition
class WgmmaRegAOp(_WgmmaShape, IRDLOperation):
    """`tile.wgmma_reg_a %a, %b[%s, %n, %k], %acc...`: `tile.wgmma` with A from registers.

    Warp w of the warpgroup passes the A fragment (`!tile.frag<a>`, m16k16) of rows
    16 (w % 4) .. of the 64-row A: an mma.sync-layout fragment, e.g. accumulators turned into A
    by `tile.acc_to_a` (attention's P · v keeps P in registers). B is read from shared memory
    as with `tile.wgmma`, its N rows K-major; with `trans_b` N-major instead: `%b[...]` is
    K row k, and N = 8 x the accumulators (at most 64, one 128-byte swizzled row) runs along
    the row (a row-major K x N tile such as v). The same fences and groups as `tile.wgmma`,
    and the A registers are registers written otherwise: `tile.wgmma_fence` before it.
    """

    name = "tile.wgmma_reg_a"
    a = operand_def(FragType)
    b = operand_def(MemRefType)
    b_indices = var_operand_def(IndexType)
    acc = var_operand_def(FragType)
    res = var_result_def(FragType)
    trans_b = opt_prop_def(UnitAttr)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, a: SSAValue, b: SSAValue, b_indices: Sequence[SSAValue],
                 acc: Sequence[SSAValue], trans_b: bool = False):
        super().__init__(operands=[a, b, b_indices, acc],
                         result_types=[[v.type for v in acc]],
                         properties={"trans_b": UnitAttr() if trans_b else None})


    def verify_(self) -> None:
        a = self.a.type
        assert isinstance(a, FragType)
        if a.role.data != "a":
            raise VerifyException(f"'tile.wgmma_reg_a' takes an A fragment, got {a}")
        memref_type = _memref(self, self.b, "B")
        _verify_shared(self, memref_type, "B")
        _verify_indices(self, memref_type, self.b_indices, "B")
        row_bytes = memref_type.get_shape()[-1] * element_bytes(memref_type.element_type)
        if row_bytes != WGMMA_ROW_BYTES:
            raise VerifyException(f"'tile.wgmma_reg_a' B rows must be {WGMMA_ROW_BYTES} bytes "
                                  f"(128-byte swizzle), got {memref_type}")
        if memref_type.element_type != a.element_type:
            raise VerifyException("'tile.wgmma_reg_a' A and B must have the same element type")
        limit = 8 if self.trans_b is not None else 32
        if not 1 <= len(self.acc) <= limit:
            why = "; trans_b reads one 128-byte row of N" if self.trans_b is not None else ""
            raise VerifyException(f"'tile.wgmma_reg_a' takes 1 to {limit} accumulators "
                                  f"(N = 8 .. {8 * limit}{why}), got {len(self.acc)}")
        for value in self.acc:
            if value.type != FragType("acc", Float32Type()):
                raise VerifyException(f"'tile.wgmma_reg_a' accumulators must be "
                                      f"!tile.frag<acc>, got {value.type}")
        if [r.type for r in self.res] != [v.type for v in self.acc]:
            raise VerifyException("'tile.wgmma_reg_a' results must have the accumulators' "
                                  "types")

    @classmethod
    def parse(cls, parser: Parser) -> WgmmaRegAOp:
        a = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        b, b_indices = _parse_indexed(parser)
        trans_b = parser.parse_optional_keyword("trans_b") is not None
        accs, attrs, (a_type, b_type, acc_type) = _parse_wgmma_accumulators(parser)
        index = IndexType()
        op = cls(parser.resolve_operand(a, a_type), parser.resolve_operand(b, b_type),
                 [parser.resolve_operand(i, index) for i in b_indices],
                 [parser.resolve_operand(v, acc_type) for v in accs], trans_b)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_ssa_value(self.a)
        printer.print_string(", ")
        _print_indexed(printer, self.b, self.b_indices)
        if self.trans_b is not None:
            printer.print_string(" trans_b")
        _print_wgmma_accumulators(printer, self)


@irdl_op_definition
class WgmmaFenceOp(IRDLOperation):
    """`wgmma.fence.sync.aligned`: order earlier register and shared accesses before the next
    wgmma of this warpgroup (needed before the first wgmma and after touching accumulators).

    `%a2, %c2 = tile.wgmma_fence (%a, %c) : !tile.frag<a, ...>, !tile.frag<acc, ...>` fences the
    fragments the next wgmmas read, computed in registers just before (A from `tile.acc_to_a`,
    accumulators rescaled or zeroed): the wgmmas take the results, so every write of those
    registers is ordered before the fence and no copy of them can come after it (the compiler
    would otherwise be free to move it there, past the fence the hardware needs)."""

    name = "tile.wgmma_fence"
    values = var_operand_def(FragType)
    res = var_result_def(FragType)

    def __init__(self, values: Sequence[SSAValue] = ()):
        super().__init__(operands=[list(values)], result_types=[[v.type for v in values]])

    def verify_(self) -> None:
        if [r.type for r in self.res] != [v.type for v in self.values]:
            raise VerifyException("'tile.wgmma_fence' results must have its operands' types")

    @classmethod
    def parse(cls, parser: Parser) -> WgmmaFenceOp:
        values = parser.parse_optional_comma_separated_list(
            parser.Delimiter.PAREN, parser.parse_unresolved_operand) or []
        types = []
        if values:
            parser.parse_punctuation(":")
            types = parser.parse_comma_separated_list(parser.Delimiter.NONE, parser.parse_type)
        attrs = parser.parse_optional_attr_dict()
        if len(types) != len(values):
            parser.raise_error(f"'tile.wgmma_fence' takes one type per fragment, got "
                               f"{len(types)} for {len(values)}")
        op = cls([parser.resolve_operand(v, t) for v, t in zip(values, types, strict=True)])
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        if self.values:
            printer.print_string(" (")
            printer.print_list(self.values, printer.print_ssa_value)
            printer.print_string(") : ")
            printer.print_list(self.values.types, printer.print_attribute)
        printer.print_op_attributes(self.attributes)


@irdl_op_definition
class WgmmaCommitOp(IRDLOperation):
    """`wgmma.commit_group.sync.aligned`: close the group of this warpgroup's pending wgmmas."""

    name = "tile.wgmma_commit"
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


@irdl_op_definition
class WgmmaWaitOp(_WaitGroupOp):
    """`wgmma.wait_group.sync.aligned N`: wait until at most N wgmma groups are pending; their
    accumulators and the shared memory they read are free afterwards."""

    name = "tile.wgmma_wait"


@irdl_op_definition
class TmaStoreWaitOp(_WaitGroupOp):
    """`cp.async.bulk.wait_group.read N`: at most N of this thread's bulk store groups (TMA
    stores, `tile.bulk_store`) still read their shared-memory source; the others' sources may
    be written again. With `writes` (`cp.async.bulk.wait_group N`), the others' writes are
    complete and visible to this thread (a release that publishes them fences the proxies
    first: `tile.fence_proxy_async global`)."""

    name = "tile.tma_store_wait"
    writes = opt_prop_def(UnitAttr)
    assembly_format = "$pending (`writes` $writes^)? attr-dict"

    def __init__(self, pending: int, writes: bool = False):
        IRDLOperation.__init__(self, properties={
            "pending": IntegerAttr(pending, i32), "writes": UnitAttr() if writes else None})


@irdl_op_definition
class FenceProxyAsyncOp(IRDLOperation):
    """`fence.proxy.async.shared::cta`: make this thread's shared-memory writes (plain stores,
    cp.async) visible to the async proxy (wgmma operand reads, bulk stores); a barrier
    follows. With `global` (`fence.proxy.async.global`): order this thread's global-memory
    accesses of the generic proxy with its bulk copies', both ways (an acquire before the
    bulk copies that read or overwrite what it guards; completed bulk writes before a
    release)."""

    name = "tile.fence_proxy_async"
    global_memory = opt_prop_def(UnitAttr, prop_name="global")
    assembly_format = "(`global` $global^)? attr-dict"

    def __init__(self, global_memory: bool = False):
        super().__init__(properties={"global": UnitAttr() if global_memory else None})


# --------------------------------------------------------------------------------------------
# Bulk tensor copies (TMA), transaction barriers, warp specialization (sm_90)
# --------------------------------------------------------------------------------------------

TMA_SWIZZLES = (0, 32, 64, 128)
TMA_MAX_BOX = 256


@irdl_attr_definition
class TensorMapType(ParametrizedAttribute, TypeAttribute):
    """`!tile.tensor_map<128x64xf16, swizzle 128>`: a kernel parameter holding a TMA tensor
    map (CUtensorMap) of a row-major global tensor of `element_type`, whose box (the tile one
    copy moves) is `box` (outermost first) and whose shared-memory layout is swizzled in
    `swizzle`-byte spans (0: none; 128: the 8-row x 128-byte atoms wgmma reads). The map lives
    in the parameter space (by value, 64-byte aligned); the runtime encodes it
    (`cuTensorMapEncodeTiled`) for each tensor it describes.

    `!tile.tensor_map<128x64xf16, swizzle 128, im2col [2, 56, 56, 64]>`: an im2col map of a
    tensor of that shape (N x spatial x C; `cuTensorMapEncodeIm2col`), its box pixels x
    channels: what `tile.tma_load ... im2col` copies from (an implicit GEMM's A rows)."""

    name = "tile.tensor_map"

    box: ArrayAttr[IntAttr]
    element_type: Attribute
    swizzle: IntAttr
    im2col: ArrayAttr[IntAttr]

    def __init__(self, box: Sequence[int], element_type: Attribute, swizzle: int = 128,
                 im2col: Sequence[int] | None = None):
        super().__init__(ArrayAttr([IntAttr(d) for d in box]), element_type, IntAttr(swizzle),
                         ArrayAttr([IntAttr(d) for d in im2col or ()]))

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[Attribute, ...]:
        with parser.in_angle_brackets():
            dims, element = parser.parse_ranked_shape()
            parser.parse_punctuation(",")
            parser.parse_keyword("swizzle")
            swizzle = parser.parse_integer(allow_boolean=False, allow_negative=False)
            tensor: list[int] = []
            if parser.parse_optional_punctuation(",") is not None:
                parser.parse_keyword("im2col")
                tensor = parser.parse_comma_separated_list(
                    parser.Delimiter.SQUARE,
                    lambda: parser.parse_integer(allow_boolean=False, allow_negative=False))
        return (ArrayAttr([IntAttr(d) for d in dims]), element, IntAttr(swizzle),
                ArrayAttr([IntAttr(d) for d in tensor]))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<" + "".join(f"{d}x" for d in self.shape))
        printer.print_attribute(self.element_type)
        tensor = self.im2col_tensor
        printer.print_string(f", swizzle {self.swizzle.data}"
                             + (f", im2col [{', '.join(map(str, tensor))}]>" if tensor
                                else ">"))

    @property
    def im2col_tensor(self) -> tuple[int, ...]:
        """The shape of the tensor an im2col map describes; () for a tiled map."""
        return tuple(d.data for d in self.im2col.data)

    @property
    def is_im2col(self) -> bool:
        return bool(self.im2col.data)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.box.data)

    @property
    def box_bytes(self) -> int:
        count = 1
        for d in self.shape:
            count *= d
        return count * element_bytes(self.element_type)

    def verify(self) -> None:
        shape = self.shape
        if not 1 <= len(shape) <= 5:
            raise VerifyException(f"!tile.tensor_map box has 1 to 5 dimensions, got {len(shape)}")
        if any(not 1 <= d <= TMA_MAX_BOX for d in shape):
            raise VerifyException(f"!tile.tensor_map box dimensions must be in 1..{TMA_MAX_BOX},"
                                  f" got {list(shape)}")
        if not isinstance(self.element_type, Float16Type | BFloat16Type | Float32Type):
            raise VerifyException(f"!tile.tensor_map holds f16, bf16 or f32, got "
                                  f"{self.element_type}")
        swizzle = self.swizzle.data
        if swizzle not in TMA_SWIZZLES:
            raise VerifyException(f"!tile.tensor_map swizzle must be one of "
                                  f"{', '.join(map(str, TMA_SWIZZLES))}, got {swizzle}")
        inner = shape[-1] * element_bytes(self.element_type)
        if inner % 16 or (swizzle and inner > swizzle):
            raise VerifyException(
                f"!tile.tensor_map inner box dimension is {inner} bytes: it must be a multiple "
                f"of 16" + (f" and at most the {swizzle}-byte swizzle span" if swizzle else ""))
        tensor = self.im2col_tensor
        if tensor and (len(shape) != 2 or not 3 <= len(tensor) <= 5 or min(tensor) < 1
                       or shape[1] > tensor[-1]):
            raise VerifyException(f"!tile.tensor_map of im2col has a box of pixels x channels "
                                  f"(at most the tensor's) over an N x spatial x C tensor of "
                                  f"rank 3 to 5, got a box {list(shape)} over {list(tensor)}")


def _verify_barriers(op: Operation, bars: SSAValue, indices: Sequence[SSAValue]) -> None:
    bars_type = _memref(op, bars, "barrier")
    if memory_space(bars_type) != SHARED_SPACE or bars_type.element_type != i64 or \
            any(d < 0 for d in bars_type.get_shape()):
        raise VerifyException(f"'{op.name}' barriers must be a static memref of i64 in shared "
                              f"memory (memory space 3), got {bars_type}")
    _verify_indices(op, bars_type, indices, "barrier")


@irdl_op_definition
class MBarrierInitOp(IRDLOperation):
    """`tile.mbarrier_init %bars[%i] count N`: one thread initializes the barrier for N
    arrivals per phase (and fences the initialization for the async proxy). The block must
    synchronize before any other thread or a TMA copy uses it."""

    name = "tile.mbarrier_init"
    bars = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    count = prop_def(IntegerAttr[I32])
    assembly_format = "$bars `[` $indices `]` `count` $count attr-dict `:` type($bars)"

    def __init__(self, bars: SSAValue, indices: Sequence[SSAValue], count: int):
        super().__init__(operands=[bars, indices], properties={"count": IntegerAttr(count, i32)})

    def verify_(self) -> None:
        _verify_barriers(self, self.bars, self.indices)
        if not 1 <= self.count.value.data < 1 << 20:
            raise VerifyException(f"'{self.name}' count must be in 1..2^20-1, got "
                                  f"{self.count.value.data}")


@irdl_op_definition
class MBarrierArriveOp(IRDLOperation):
    """`tile.mbarrier_arrive %bars[%i] (expect_tx BYTES)? (cta %r)?`: this thread arrives on
    the barrier's current phase; with `expect_tx`, it first adds BYTES to the bytes the phase
    waits for (the TMA copies that complete on it). With `cta %r` it arrives on the barrier
    at the same place in CTA %r of its cluster instead (a consumer freeing a buffer that
    both CTAs' copies fill)."""

    name = "tile.mbarrier_arrive"
    bars = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    cta = opt_operand_def(IndexType)
    expect_tx = opt_prop_def(IntegerAttr[I32])
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$bars `[` $indices `]` (`expect_tx` $expect_tx^)? (`cta` $cta^)? attr-dict "
        "`:` type($bars)"
    )

    def __init__(self, bars: SSAValue, indices: Sequence[SSAValue],
                 expect_tx: int | None = None, cta: SSAValue | None = None):
        super().__init__(operands=[bars, indices, [] if cta is None else [cta]], properties={
            "expect_tx": None if expect_tx is None else IntegerAttr(expect_tx, i32)})

    def verify_(self) -> None:
        _verify_barriers(self, self.bars, self.indices)
        if self.expect_tx is not None and not 0 < self.expect_tx.value.data < 1 << 20:
            raise VerifyException(f"'{self.name}' expect_tx must be in 1..2^20-1 bytes, got "
                                  f"{self.expect_tx.value.data}")
        if self.expect_tx is not None and self.cta is not None:
            raise VerifyException(f"'{self.name}' expects bytes on its own CTA's barriers "
                                  "only: expect_tx and cta exclude each other")


@irdl_op_definition
class MBarrierWaitOp(IRDLOperation):
    """`tile.mbarrier_wait %bars[%i], %parity (wgmma_in_flight)?`: this thread waits until
    the barrier's phase of parity `%parity` (i1: 0 even, 1 odd) has completed. Waiting on the
    parity before the current phase returns at once, so a ring of barriers is waited on with
    parity (round & 1) by its consumers and (round & 1) ^ 1 by its producers. A wait that
    times out traps. `wgmma_in_flight`: the thread's warpgroup waits together and may have
    wgmma groups in flight, which a timed-out wait waits for before it traps."""

    name = "tile.mbarrier_wait"
    bars = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    parity = operand_def(IntegerType(1))
    wgmma_in_flight = opt_prop_def(UnitAttr)
    assembly_format = ("$bars `[` $indices `]` `,` $parity (`wgmma_in_flight` $wgmma_in_flight^)?"
                       " attr-dict `:` type($bars)")

    def __init__(self, bars: SSAValue, indices: Sequence[SSAValue], parity: SSAValue,
                 wgmma_in_flight: bool = False):
        super().__init__(operands=[bars, indices, parity],
                         properties={"wgmma_in_flight": UnitAttr() if wgmma_in_flight else None})

    def verify_(self) -> None:
        _verify_barriers(self, self.bars, self.indices)


@irdl_op_definition
class TmaLoadOp(IRDLOperation):
    """`tile.tma_load %map[%r, %c], %dst[%s, %i, %j], %bars[%b]`: one thread copies the box
    of the tensor map whose first element is at (%r, %c) of the global tensor (outermost
    first; out-of-bounds elements read as 0) into shared memory at %dst[%s, %i, %j], swizzled
    as the map says; the copy's bytes complete the barrier's phase (whose expected bytes an
    `expect_tx` arrival announced). The trailing dimensions of %dst hold the box: the inner
    ones equal, the outermost at least as large.

    `tile.tma_load %map[%n, %h, %w, %c] im2col [%r, %s], ...`: the map is an im2col map of an
    N x H x W x C tensor (its box: pixels x channels) and the copy gathers the rows of an
    implicit GEMM's A: `pixels` consecutive window positions from (%n, %h, %w) on (walking W,
    then H, then N inside the map's window corners), each pixel's channels %c.. at the
    filter offset (%r, %s) from its position; pixels outside the tensor read as 0 (padding).
    One offset per spatial dimension, outermost first."""

    name = "tile.tma_load"
    tensor_map = operand_def(TensorMapType)
    coords = var_operand_def(IndexType)
    dst = operand_def(MemRefType)
    dst_indices = var_operand_def(IndexType)
    bars = operand_def(MemRefType)
    bar_indices = var_operand_def(IndexType)
    im2col = var_operand_def(IndexType)
    multicast = opt_prop_def(IntegerAttr[I32])

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$tensor_map `[` $coords `]` (`im2col` `[` $im2col^ `]`)? `,` $dst `[` $dst_indices `]` "
        "`,` $bars `[` $bar_indices `]` (`multicast` $multicast^)? attr-dict `:` "
        "type($tensor_map) `,` type($dst) `,` type($bars)"
    )

    def __init__(self, tensor_map: SSAValue, coords: Sequence[SSAValue], dst: SSAValue,
                 dst_indices: Sequence[SSAValue], bars: SSAValue,
                 bar_indices: Sequence[SSAValue], multicast: int | None = None,
                 im2col: Sequence[SSAValue] = ()):
        super().__init__(operands=[tensor_map, coords, dst, dst_indices, bars, bar_indices,
                                   im2col],
                         properties={"multicast": None if multicast is None
                                     else IntegerAttr(multicast, i32)})

    def verify_(self) -> None:
        map_type = self.tensor_map.type
        assert isinstance(map_type, TensorMapType)
        coords = len(self.coords)
        if bool(self.im2col) != map_type.is_im2col:
            raise VerifyException(f"'{self.name}' im2col offsets go with an im2col map and "
                                  f"only with one, got {len(self.im2col)} offsets and {map_type}")
        if self.im2col:
            spatial = len(self.im2col)
            if len(map_type.shape) != 2 or not 1 <= spatial <= 3 or coords != spatial + 2:
                raise VerifyException(
                    f"'{self.name}' im2col takes a box of pixels x channels, 1 to 3 filter "
                    f"offsets and two coordinates more (batch, spatial ..., channel), got a "
                    f"box of rank {len(map_type.shape)}, {spatial} offsets and {coords} "
                    f"coordinates")
            coords = 2  # as many as the box's rank: pixels and channels
        _verify_tma_box(self, map_type, coords, self.dst, self.dst_indices, "destination")
        _verify_barriers(self, self.bars, self.bar_indices)
        if self.multicast is not None and not 0 < self.multicast.value.data < 1 << 16:
            raise VerifyException(f"'{self.name}' multicast is a mask of up to 16 CTAs of the "
                                  f"cluster, got {self.multicast.value.data}")


@irdl_op_definition
class TmaPrefetchOp(IRDLOperation):
    """`tile.tma_prefetch %map[%r, %c]`: one thread asks for the box of the tensor map at
    (%r, %c) to be brought into L2 (no shared memory, no barrier, nothing waits for it): bytes
    a later `tile.tma_load` of the box finds there. It reads no element a program can see (L2
    is where every SM's writes land, so a box prefetched before its producer wrote it is not
    stale), and may point past the tensor."""

    name = "tile.tma_prefetch"
    tensor_map = operand_def(TensorMapType)
    coords = var_operand_def(IndexType)
    assembly_format = "$tensor_map `[` $coords `]` attr-dict `:` type($tensor_map)"

    def __init__(self, tensor_map: SSAValue, coords: Sequence[SSAValue]):
        super().__init__(operands=[tensor_map, coords])

    def verify_(self) -> None:
        map_type = self.tensor_map.type
        assert isinstance(map_type, TensorMapType)
        if map_type.is_im2col or len(self.coords) != len(map_type.shape):
            raise VerifyException(f"'{self.name}' prefetches a tiled map's box at one "
                                  f"coordinate per dimension of the box, got {map_type} and "
                                  f"{len(self.coords)} coordinates")


@irdl_op_definition
class TmaStoreOp(IRDLOperation):
    """`tile.tma_store %src[%s, %i, %j], %map[%r, %c]`: one thread copies a box from shared
    memory (laid out as the map says) to the global tensor at (%r, %c); elements outside the
    tensor are not written. The copy completes in bulk groups (`tile.tma_store_commit`,
    `tile.tma_store_wait`); the threads that wrote the box must `tile.fence_proxy_async` and
    synchronize with the issuing thread first."""

    name = "tile.tma_store"
    src = operand_def(MemRefType)
    src_indices = var_operand_def(IndexType)
    tensor_map = operand_def(TensorMapType)
    coords = var_operand_def(IndexType)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$src `[` $src_indices `]` `,` $tensor_map `[` $coords `]` attr-dict `:` type($src) "
        "`,` type($tensor_map)"
    )

    def __init__(self, src: SSAValue, src_indices: Sequence[SSAValue], tensor_map: SSAValue,
                 coords: Sequence[SSAValue]):
        super().__init__(operands=[src, src_indices, tensor_map, coords])

    def verify_(self) -> None:
        map_type = self.tensor_map.type
        assert isinstance(map_type, TensorMapType)
        _verify_tma_box(self, map_type, len(self.coords), self.src, self.src_indices, "source")


def _verify_tma_box(op: Operation, map_type: TensorMapType, coords: int,
                    smem: SSAValue, indices: Sequence[SSAValue], what: str) -> None:
    box = map_type.shape
    if coords != len(box):
        raise VerifyException(f"'{op.name}' a box of rank {len(box)} takes {len(box)} "
                              f"coordinates, got {coords}")
    smem_type = _memref(op, smem, what)
    if memory_space(smem_type) != SHARED_SPACE:
        raise VerifyException(f"'{op.name}' {what} must be in shared memory (memory space 3), "
                              f"got {smem_type}")
    _verify_indices(op, smem_type, indices, what)
    if smem_type.element_type != map_type.element_type:
        raise VerifyException(f"'{op.name}' {what} element type {smem_type.element_type} is "
                              f"not the tensor map's {map_type.element_type}")
    shape = smem_type.get_shape()
    trailing = tuple(shape[-len(box):]) if len(shape) >= len(box) else None
    if trailing is None or trailing[1:] != box[1:] or trailing[0] < box[0]:
        raise VerifyException(f"'{op.name}' {what} {smem_type} cannot hold the box "
                              f"{'x'.join(map(str, box))} in its trailing dimensions")


BULK_COPY_ALIGN = 16  # bytes: a bulk copy's size and both its addresses


def _verify_bulk_copy(op: Operation, shared: tuple[str, SSAValue, Sequence[SSAValue]],
                      global_: tuple[str, SSAValue, Sequence[SSAValue]], nbytes: int) -> None:
    """A 1-D bulk copy between shared and global memory (either way): a positive multiple of
    16 bytes that fits the shared memref (static) from its first element, indices, memory
    spaces, one element type."""
    shared_what, shared_ref, shared_indices = shared
    global_what, global_ref, global_indices = global_
    shared_type = _memref(op, shared_ref, shared_what)
    global_type = _memref(op, global_ref, global_what)
    if memory_space(shared_type) != SHARED_SPACE or \
            any(d < 0 for d in shared_type.get_shape()):
        raise VerifyException(f"'{op.name}' {shared_what} must be a static memref in shared "
                              f"memory (memory space 3), got {shared_type}")
    if memory_space(global_type) not in (None, 1):
        raise VerifyException(f"'{op.name}' {global_what} must be in global memory, got "
                              f"{global_type}")
    _verify_indices(op, shared_type, shared_indices, shared_what)
    _verify_indices(op, global_type, global_indices, global_what)
    if shared_type.element_type != global_type.element_type:
        raise VerifyException(f"'{op.name}' element types differ: {shared_type.element_type} "
                              f"and {global_type.element_type}")
    if nbytes <= 0 or nbytes % BULK_COPY_ALIGN:
        raise VerifyException(f"'{op.name}' bytes must be a positive multiple of "
                              f"{BULK_COPY_ALIGN}, got {nbytes}")
    capacity = shared_type.element_count() * element_bytes(shared_type.element_type)
    if nbytes > capacity:
        raise VerifyException(f"'{op.name}' {nbytes} bytes do not fit the {shared_what} "
                              f"{shared_type} ({capacity} bytes)")


@irdl_op_definition
class BulkLoadOp(IRDLOperation):
    """`tile.bulk_load %smem[...], %src[...], %bars[%b] bytes N`: one thread copies N
    contiguous bytes from global memory at %src[...] into shared memory at %smem[...]
    (both 16-byte aligned); the bytes complete the barrier's phase, as a `tile.tma_load`'s
    (an `expect_tx` arrival announces them). A bulk load that reads what a generic acquire
    guards follows a `tile.fence_proxy_async global` in its thread."""

    name = "tile.bulk_load"
    dst = operand_def(MemRefType)
    dst_indices = var_operand_def(IndexType)
    src = operand_def(MemRefType)
    src_indices = var_operand_def(IndexType)
    bars = operand_def(MemRefType)
    bar_indices = var_operand_def(IndexType)
    bytes = prop_def(IntegerAttr[I32])

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$dst `[` $dst_indices `]` `,` $src `[` $src_indices `]` `,` $bars `[` $bar_indices "
        "`]` `bytes` $bytes attr-dict `:` type($dst) `,` type($src) `,` type($bars)"
    )

    def __init__(self, dst: SSAValue, dst_indices: Sequence[SSAValue], src: SSAValue,
                 src_indices: Sequence[SSAValue], bars: SSAValue,
                 bar_indices: Sequence[SSAValue], nbytes: int):
        super().__init__(operands=[dst, dst_indices, src, src_indices, bars, bar_indices],
                         properties={"bytes": IntegerAttr(nbytes, i32)})

    def verify_(self) -> None:
        _verify_bulk_copy(self, ("destination", self.dst, self.dst_indices),
                          ("source", self.src, self.src_indices), self.bytes.value.data)
        _verify_barriers(self, self.bars, self.bar_indices)
        if self.bytes.value.data >= 1 << 20:  # a barrier phase counts fewer bytes
            raise VerifyException(f"'{self.name}' completes at most 2^20-1 bytes on a barrier, "
                                  f"got {self.bytes.value.data}")


@irdl_op_definition
class BulkStoreOp(IRDLOperation):
    """`tile.bulk_store %dst[...], %smem[...] bytes N`: one thread copies N contiguous bytes
    from shared memory at %smem[...] to global memory at %dst[...] (both 16-byte aligned).
    It completes in bulk groups (`tile.tma_store_commit`, `tile.tma_store_wait`); the threads
    that wrote the source must `tile.fence_proxy_async` and synchronize with the issuing
    thread first."""

    name = "tile.bulk_store"
    dst = operand_def(MemRefType)
    dst_indices = var_operand_def(IndexType)
    src = operand_def(MemRefType)
    src_indices = var_operand_def(IndexType)
    bytes = prop_def(IntegerAttr[I32])

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$dst `[` $dst_indices `]` `,` $src `[` $src_indices `]` `bytes` $bytes attr-dict "
        "`:` type($dst) `,` type($src)"
    )

    def __init__(self, dst: SSAValue, dst_indices: Sequence[SSAValue], src: SSAValue,
                 src_indices: Sequence[SSAValue], nbytes: int):
        super().__init__(operands=[dst, dst_indices, src, src_indices],
                         properties={"bytes": IntegerAttr(nbytes, i32)})

    def verify_(self) -> None:
        _verify_bulk_copy(self, ("source", self.src, self.src_indices),
                          ("destination", self.dst, self.dst_indices), self.bytes.value.data)


BULK_READS = (TmaLoadOp, BulkLoadOp)
"""The copies that read global memory in the async proxy (a bulk tensor or 1-D bulk load): a
generic acquire (a semaphore wait, a queue's acquire) orders them only through a
`tile.fence_proxy_async global` after it in the thread issuing the copy (sync-verify's and
dataflow-verify's proxy rules)."""
BULK_WRITES = (TmaStoreOp, BulkStoreOp)
"""The copies that write global memory in the async proxy (a bulk tensor or 1-D bulk store):
their writes, complete (`tile.tma_store_wait ... writes`), reach a generic release only through
a `tile.fence_proxy_async global` after the wait in the thread that issued them."""


@irdl_op_definition
class TmaStoreCommitOp(IRDLOperation):
    """`cp.async.bulk.commit_group`: close this thread's group of pending TMA stores."""

    name = "tile.tma_store_commit"
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


@irdl_op_definition
class PrefetchTensorMapOp(IRDLOperation):
    """`tile.prefetch_tensor_map %map`: fetch the tensor map into the cache ahead of its copies."""

    name = "tile.prefetch_tensor_map"
    tensor_map = operand_def(TensorMapType)
    assembly_format = "$tensor_map attr-dict `:` type($tensor_map)"

    def __init__(self, tensor_map: SSAValue):
        super().__init__(operands=[tensor_map])


@irdl_op_definition
class ClusterBarrierOp(IRDLOperation):
    """`tile.cluster_barrier`: every thread of every CTA of the cluster arrives and waits
    (`barrier.cluster.arrive` release, `barrier.cluster.wait` acquire): barriers initialized
    before it may be used by the other CTAs after it, and a CTA leaves no peer that may still
    write its shared memory."""

    name = "tile.cluster_barrier"
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


@irdl_op_definition
class NamedBarrierOp(IRDLOperation):
    """`tile.named_barrier ID, THREADS`: `bar.sync ID, THREADS`, a barrier of a subset of the
    block's warps (warp specialization: the consumer warpgroups without the producer). ID 0
    is the whole block's `gpu.barrier`; THREADS is a multiple of 32. The id may be an i32
    computed at run time (`tile.named_barrier %id, 128`): several groups of threads running
    the same code, each on a barrier of its own."""

    name = "tile.named_barrier"
    dynamic_id = opt_operand_def(I32)
    barrier_id = opt_prop_def(IntegerAttr[I32])
    threads = prop_def(IntegerAttr[I32])
    assembly_format = "($dynamic_id^):($barrier_id)? `,` $threads attr-dict"

    def __init__(self, barrier_id: int | SSAValue, threads: int):
        constant = isinstance(barrier_id, int)
        super().__init__(
            operands=[[] if constant else [barrier_id]],
            properties={"barrier_id": IntegerAttr(barrier_id, i32) if constant else None,
                        "threads": IntegerAttr(threads, i32)})

    def verify_(self) -> None:
        if (self.barrier_id is None) == (self.dynamic_id is None):
            raise VerifyException(f"'{self.name}' takes its id either as a constant or as an "
                                  "operand, not both or neither")
        if self.barrier_id is not None and not 1 <= self.barrier_id.value.data <= 15:
            raise VerifyException(f"'{self.name}' id must be in 1..15 (0 is gpu.barrier), got "
                                  f"{self.barrier_id.value.data}")
        threads = self.threads.value.data
        if threads <= 0 or threads % 32 or threads > 1024:
            raise VerifyException(f"'{self.name}' threads must be a multiple of 32 up to 1024, "
                                  f"got {threads}")


@irdl_op_definition
class SetMaxNRegOp(IRDLOperation):
    """`tile.setmaxnreg inc|dec N` (sm_90a): the executing warpgroup's threads raise (`inc`)
    or lower (`dec`) their register allotment to N, a multiple of 8 in 24..256. Every warp of
    the warpgroup executes it; it takes effect where the kernel has a register cap at entry
    (launch bounds with one block per SM)."""

    name = "tile.setmaxnreg"
    action = prop_def(StringAttr)
    registers = prop_def(IntegerAttr[I32])

    def __init__(self, action: str, registers: int):
        super().__init__(properties={"action": StringAttr(action),
                                     "registers": IntegerAttr(registers, i32)})

    def verify_(self) -> None:
        if self.action.data not in ("inc", "dec"):
            raise VerifyException(f"'{self.name}' action must be inc or dec, got "
                                  f"{self.action.data}")
        n = self.registers.value.data
        if not 24 <= n <= 256 or n % 8:
            raise VerifyException(f"'{self.name}' registers must be a multiple of 8 in 24..256, "
                                  f"got {n}")

    @classmethod
    def parse(cls, parser: Parser) -> SetMaxNRegOp:
        action = parser.parse_identifier(" (inc or dec)")
        registers = parser.parse_integer(allow_boolean=False, allow_negative=False)
        attrs = parser.parse_optional_attr_dict()
        op = cls(action, registers)
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" {self.action.data} {self.registers.value.data}")
        printer.print_op_attributes(self.attributes)


EPILOGUE_ARG_TYPES = (Float32Type(), IndexType(), IndexType())


def epilogue_arg_types(accumulators: int = 1) -> tuple[Attribute, ...]:
    """(value of each accumulator..., row, column) of an epilogue block."""
    return (Float32Type(),) * accumulators + (IndexType(), IndexType())


PACKED_BLOCK = (16, 8)
"""The trailing shape of a `packed` accumulator workspace: one m16n8 fragment a block."""


def verify_packed_block(op: Operation, memref_type: MemRefType,
                        indices: Sequence[SSAValue]) -> None:
    """A `packed` fragment is a whole (16, 8) f32 block: the memref ends in those dimensions
    and the block's own indices are 0."""
    name = f"'{op.name}'"
    if not isinstance(memref_type.element_type, Float32Type) or \
            tuple(memref_type.get_shape()[-2:]) != PACKED_BLOCK:
        raise VerifyException(f"{name} packed needs f32 blocks of {PACKED_BLOCK[0]}x"
                              f"{PACKED_BLOCK[1]} (the memref's last two dimensions), got "
                              f"{memref_type}")
    for index in indices[-2:]:
        owner = index.owner
        if isinstance(owner, arith.ConstantOp) and \
                isinstance(owner.value, IntegerAttr) and owner.value.value.data != 0:
            raise VerifyException(f"{name} packed addresses a whole block: its last two "
                                  f"indices are 0")


@irdl_op_definition
class StoreAccOp(IRDLOperation):
    """Warp-collective store of a 16x8 f32 accumulator tile with an elementwise epilogue.

    With several accumulators (`tile.store_acc %g, %u, %C[...]`) the epilogue gets the element
    of each at the same position (SwiGLU: silu(gate) * up of two tiles) and one value is
    stored. With `reduce` the values are atomically added (`red.relaxed.gpu.global.add.f32`)
    into an f32 destination instead of stored: a split-K slice's partial sums.

    `at [%row, %col]` gives the position in the output tensor of the fragment's element (0, 0)
    where the destination is a staging buffer (the TMA-store epilogue): the epilogue sees output
    positions (bias columns, dropout hashes), not buffer positions.

    With `packed` the destination is a workspace of (..., 16, 8) f32 blocks, one fragment each
    (`%ws[%f, %c0, %c0]`), its values stored lane-interleaved: value k of lane l at element
    32 k + l of the block (`tile.take_acc ... packed` reads them back). Each of a lane's four
    stores is then part of one contiguous 128-byte warp access, where the m16n8 layout's rows
    spread a warp's store over eight half-used sectors (a stream-K partial tile).
    """

    name = "tile.store_acc"
    accs = var_operand_def(FragType)
    dst = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    at = var_operand_def(IndexType)
    masked = opt_prop_def(UnitAttr)
    reduce = opt_prop_def(UnitAttr)
    packed = opt_prop_def(UnitAttr)
    epilogue = region_def()

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(self, acc: SSAValue | Sequence[SSAValue], dst: SSAValue,
                 indices: Sequence[SSAValue], masked: bool = False,
                 epilogue: Region | None = None, reduce: bool = False,
                 at: Sequence[SSAValue] = (), packed: bool = False):
        accs = [acc] if isinstance(acc, SSAValue) else list(acc)
        super().__init__(
            operands=[accs, dst, indices, list(at)],
            properties={"masked": UnitAttr() if masked else None,
                        "reduce": UnitAttr() if reduce else None,
                        "packed": UnitAttr() if packed else None},
            regions=[epilogue if epilogue is not None else Region()],
        )

    @property
    def acc(self) -> SSAValue:
        """The first (or only) accumulator."""
        return self.accs[0]

    def verify_(self) -> None:
        if not self.accs:
            raise VerifyException("'tile.store_acc' needs at least one accumulator")
        for acc in self.accs:
            acc_type = acc.type
            assert isinstance(acc_type, FragType)
            if acc_type.role.data != "acc":
                raise VerifyException("'tile.store_acc' stores accumulator fragments only")
        dst_type = _memref(self, self.dst, "destination")
        _verify_indices(self, dst_type, self.indices, "destination")
        if dst_type.get_num_dims() < 2:
            raise VerifyException("'tile.store_acc' destination must have rank >= 2")
        if any(d < 0 for d in dst_type.get_shape()[1:]):
            raise VerifyException(
                f"'tile.store_acc' only the leading dimension may be dynamic, got {dst_type}"
            )
        if self.masked is not None and dst_type.get_shape()[0] < 0:
            raise VerifyException(
                f"'tile.store_acc' masked needs a static destination shape, got {dst_type}"
            )
        if not isinstance(dst_type.element_type, Float16Type | BFloat16Type | Float32Type):
            raise VerifyException(
                f"'tile.store_acc' stores f16, bf16 or f32, got {dst_type.element_type}"
            )
        if self.reduce is not None and not isinstance(dst_type.element_type, Float32Type):
            raise VerifyException(
                f"'tile.store_acc' reduce adds into f32 only, got {dst_type.element_type}"
            )
        if self.at and len(self.at) != 2:
            raise VerifyException(
                f"'tile.store_acc' at takes the (row, column) of the fragment in the output, got "
                f"{len(self.at)} values"
            )
        if len(self.accs) > 1 and not self.epilogue.blocks:
            raise VerifyException(
                "'tile.store_acc' with several accumulators needs an epilogue combining them"
            )
        if self.packed is not None:
            if self.masked is not None or self.reduce is not None or self.at or \
                    self.epilogue.blocks:
                raise VerifyException("'tile.store_acc' packed stores one fragment as it is: "
                                      "no masked, reduce, at or epilogue")
            verify_packed_block(self, dst_type, self.indices)
        if self.epilogue.blocks:
            if len(self.epilogue.blocks) != 1:
                raise VerifyException("'tile.store_acc' epilogue must be a single block")
            block = self.epilogue.block
            types = tuple(a.type for a in block.args)
            expected = epilogue_arg_types(len(self.accs))
            if types != expected:
                raise VerifyException(
                    "'tile.store_acc' epilogue block takes "
                    f"({', '.join(str(t) for t in expected)}) (the value of each accumulator, "
                    f"row, column), got ({', '.join(str(t) for t in types)})"
                )
            if not isinstance(block.last_op, YieldOp):
                raise VerifyException("'tile.store_acc' epilogue must end with tile.yield")

    # Custom syntax: the variadic accumulators and the destination are one comma-separated
    # list told apart by the destination's `[indices]`, which a declarative format cannot parse.
    @classmethod
    def parse(cls, parser: Parser) -> StoreAccOp:
        accs = [parser.parse_unresolved_operand()]
        parser.parse_punctuation(",")
        while True:
            operand = parser.parse_unresolved_operand()
            indices = parser.parse_optional_comma_separated_list(
                parser.Delimiter.SQUARE, parser.parse_unresolved_operand)
            if indices is not None:
                dst = operand
                break
            accs.append(operand)
            parser.parse_punctuation(",")
        at = []
        if parser.parse_optional_keyword("at") is not None:
            at = parser.parse_comma_separated_list(parser.Delimiter.SQUARE,
                                                   parser.parse_unresolved_operand)
        masked = parser.parse_optional_keyword("masked") is not None
        reduce = parser.parse_optional_keyword("reduce") is not None
        packed = parser.parse_optional_keyword("packed") is not None
        region = None
        if parser.parse_optional_keyword("epilogue") is not None:
            region = parser.parse_region()
        attrs = parser.parse_optional_attr_dict()
        parser.parse_punctuation(":")
        acc_types = []
        for _ in accs:
            acc_types.append(parser.parse_type())
            parser.parse_punctuation(",")
        dst_type = parser.parse_type()
        index = IndexType()
        op = cls(
            [parser.resolve_operand(a, t) for a, t in zip(accs, acc_types, strict=True)],
            parser.resolve_operand(dst, dst_type),
            [parser.resolve_operand(i, index) for i in indices],
            masked,
            region,
            reduce,
            [parser.resolve_operand(v, index) for v in at],
            packed,
        )
        op.attributes |= attrs
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_list(self.accs, printer.print_ssa_value)
        printer.print_string(", ")
        _print_indexed(printer, self.dst, self.indices)
        if self.at:
            printer.print_string(" at [")
            printer.print_list(self.at, printer.print_ssa_value)
            printer.print_string("]")
        if self.masked is not None:
            printer.print_string(" masked")
        if self.reduce is not None:
            printer.print_string(" reduce")
        if self.packed is not None:
            printer.print_string(" packed")
        if self.epilogue.blocks:
            printer.print_string(" epilogue ")
            printer.print_region(self.epilogue, print_entry_block_args=True)
        printer.print_op_attributes(self.attributes)
        printer.print_string(" : ")
        printer.print_list(self.accs.types, printer.print_attribute)
        printer.print_string(", ")
        printer.print_attribute(self.dst.type)


@irdl_op_definition
class TakeAccOp(IRDLOperation):
    """Warp-collective read of a 16x8 f32 tile into an accumulator fragment, zeroing it.

    `%acc = tile.take_acc %ws[%i, %j] masked : memref<MxNxf32> -> !tile.frag<acc, ...>`
    reads each element this lane holds in the store_acc layout with an atomic exchange of 0
    (`atom.relaxed.gpu.global.exch.b32`): the value comes from L2, where the split-K slices'
    `red.add`s landed, and the workspace is clean for the next launch without a memset.
    With `masked`, elements outside the memref read as 0 (and are not touched).

    From shared memory the elements are plain loads and stay as they are (split-K slices that
    meet in a cluster: each writes its partial tile into its own buffer before every read);
    with `cta %r`, from the same place in CTA %r of the cluster (`mapa`,
    `ld.shared::cluster`). With `keep`, global elements are read with `ld.relaxed.gpu` and
    stay as they are (a stream-K partial tile, stored into a slot of its own and overwritten
    by the next launch). With `packed`, the source is a workspace of (..., 16, 8) blocks that
    `tile.store_acc ... packed` wrote lane-interleaved.
    """

    name = "tile.take_acc"
    src = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    cta = opt_operand_def(IndexType)
    masked = opt_prop_def(UnitAttr)
    keep = opt_prop_def(UnitAttr)
    packed = opt_prop_def(UnitAttr)
    res = result_def(FragType)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$src `[` $indices `]` (`cta` $cta^)? (`masked` $masked^)? (`keep` $keep^)? "
        "(`packed` $packed^)? attr-dict `:` type($src) `->` type($res)"
    )

    def __init__(self, src: SSAValue, indices: Sequence[SSAValue], masked: bool = False,
                 cta: SSAValue | None = None, keep: bool = False, packed: bool = False):
        super().__init__(operands=[src, indices, [] if cta is None else [cta]],
                         result_types=[FragType("acc", Float32Type())],
                         properties={"masked": UnitAttr() if masked else None,
                                     "keep": UnitAttr() if keep else None,
                                     "packed": UnitAttr() if packed else None})

    def verify_(self) -> None:
        src_type = _memref(self, self.src, "source")
        _verify_indices(self, src_type, self.indices, "source")
        if src_type.get_num_dims() < 2 or any(d < 0 for d in src_type.get_shape()):
            raise VerifyException(
                f"'tile.take_acc' source must have rank >= 2 and a static shape, got {src_type}"
            )
        if not isinstance(src_type.element_type, Float32Type):
            raise VerifyException(
                f"'tile.take_acc' reads f32, got {src_type.element_type}"
            )
        shared = memory_space(src_type) == SHARED_SPACE
        if memory_space(src_type) not in (None, 1) and not shared:
            raise VerifyException(f"'tile.take_acc' source must be global or shared, got "
                                  f"{src_type}")
        if shared and self.masked is not None:
            raise VerifyException("'tile.take_acc' masked reads a global workspace; a shared "
                                  "buffer holds the whole tile")
        if self.cta is not None and not shared:
            raise VerifyException(f"'tile.take_acc' cta reads a peer CTA's shared memory, got "
                                  f"{src_type}")
        if self.res.type != FragType("acc", Float32Type()):
            raise VerifyException(f"'tile.take_acc' yields {FragType('acc', Float32Type())}, "
                                  f"got {self.res.type}")
        if self.packed is not None:
            if self.masked is not None or shared:
                raise VerifyException("'tile.take_acc' packed reads a whole block of a global "
                                      "workspace: not masked, not shared memory")
            verify_packed_block(self, src_type, self.indices)

@irdl_op_definition
class AddAccOp(IRDLOperation):
    """`%s = tile.add_acc %a, %b : !tile.frag<acc, f32, ...>`: the elementwise sum of two
    accumulator fragments (split-K partial tiles of the same place)."""

    name = "tile.add_acc"
    T: ClassVar = VarConstraint("T", BaseAttr(FragType))
    lhs = operand_def(T)
    rhs = operand_def(T)
    res = result_def(T)
    assembly_format = "$lhs `,` $rhs attr-dict `:` type($res)"

    def __init__(self, lhs: SSAValue, rhs: SSAValue):
        super().__init__(operands=[lhs, rhs], result_types=[lhs.type])

    def verify_(self) -> None:
        acc = FragType("acc", Float32Type())
        if not self.lhs.type == self.rhs.type == self.res.type == acc:
            raise VerifyException(f"'tile.add_acc' adds two {acc}, got {self.lhs.type}, "
                                  f"{self.rhs.type} -> {self.res.type}")


ACC = FragType("acc", Float32Type())


@irdl_op_definition
class UnpackAccOp(IRDLOperation):
    """`%c0, %c1, %c2, %c3 = tile.unpack_acc %acc : !tile.frag<acc, f32, m16n8k16>`: the four
    values this lane holds of a 16x8 accumulator tile, in mma.sync's m16n8 layout (store_acc's):
    c0, c1 at row lane / 4, columns 2 (lane % 4) and 2 (lane % 4) + 1; c2, c3 eight rows below.
    Per-lane, no data moves: math on a tile's elements between mma.sync's (attention's online
    softmax) reads them here and builds the tile again with `tile.pack_acc`."""

    name = "tile.unpack_acc"
    acc = operand_def(FragType)
    c0 = result_def(Float32Type)
    c1 = result_def(Float32Type)
    c2 = result_def(Float32Type)
    c3 = result_def(Float32Type)
    assembly_format = "$acc attr-dict `:` type($acc)"

    def __init__(self, acc: SSAValue):
        super().__init__(operands=[acc], result_types=[Float32Type()] * 4)

    def verify_(self) -> None:
        if self.acc.type != ACC:
            raise VerifyException(f"'tile.unpack_acc' reads an {ACC}, got {self.acc.type}")


@irdl_op_definition
class PackAccOp(IRDLOperation):
    """`%acc = tile.pack_acc %c0, %c1, %c2, %c3 : !tile.frag<acc, f32, m16n8k16>`: the
    accumulator fragment holding these four values at `tile.unpack_acc`'s positions."""

    name = "tile.pack_acc"
    c0 = operand_def(Float32Type)
    c1 = operand_def(Float32Type)
    c2 = operand_def(Float32Type)
    c3 = operand_def(Float32Type)
    res = result_def(FragType)
    assembly_format = "$c0 `,` $c1 `,` $c2 `,` $c3 attr-dict `:` type($res)"

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=list(values), result_types=[ACC])

    def verify_(self) -> None:
        if self.res.type != ACC:
            raise VerifyException(f"'tile.pack_acc' builds an {ACC}, got {self.res.type}")


@irdl_op_definition
class AccToAOp(IRDLOperation):
    """`%a = tile.acc_to_a %lo, %hi : !tile.frag<acc, f32, m16n8k16> -> !tile.frag<a, f16,
    m16n8k16>`: two 16x8 accumulator tiles side by side, rounded to f16 or bf16, as the A
    operand (16 x 16) of the next mma.sync: columns 0-7 from `lo`, 8-15 from `hi`. The
    accumulator's m16n8 layout is A's m16k16 layout by halves, so every lane keeps its own
    values (FlashAttention-2's P · V reads P, softmax(q · kᵀ), this way, from registers)."""

    name = "tile.acc_to_a"
    T: ClassVar = VarConstraint("T", BaseAttr(FragType))
    lo = operand_def(T)
    hi = operand_def(T)
    res = result_def(FragType)
    assembly_format = "$lo `,` $hi attr-dict `:` type($lo) `->` type($res)"

    def __init__(self, lo: SSAValue, hi: SSAValue, element: Attribute):
        super().__init__(operands=[lo, hi], result_types=[FragType("a", element)])

    def verify_(self) -> None:
        if not self.lo.type == self.hi.type == ACC:
            raise VerifyException(f"'tile.acc_to_a' reads two {ACC}, got {self.lo.type} and "
                                  f"{self.hi.type}")
        res = self.res.type
        assert isinstance(res, FragType)
        if res.role.data != "a":
            raise VerifyException(f"'tile.acc_to_a' yields an A fragment, got {res}")


@irdl_op_definition
class ArriveOp(IRDLOperation):
    """Block-collective arrival on a per-tile counter: `%last = tile.arrive %cnt[%t] of N`.

    Every thread of the block executes it (block-uniform control flow). After a barrier, thread
    0 issues `fence.acq_rel.gpu` (the block's earlier global writes, e.g. split-K `red.add`s,
    are released) and an atomic add of 1 to the counter; the arrival that sees N - 1 is the
    last: it resets the counter to 0 (ready for the next launch, no memset) and fences again
    (acquire). `bar.red.or.pred` hands the answer to every thread: %last is true in all
    threads of exactly one of the N blocks that arrive.

    `by %amount` adds that many instead of 1 (a stream-K segment counts its k-tiles: the
    arrivals of one tile add up to N, in as many pieces as its segments); the last is then
    the arrival whose add reaches N. `threads T`: only the block's first T threads arrive
    (whole warps), meeting on named barrier SYNC_NAMED_BARRIER instead of the block's: the
    consumer warpgroups of a warp-specialized kernel, whose producer warp is elsewhere.
    """

    name = "tile.arrive"
    counters = operand_def(MemRefType)
    indices = var_operand_def(IndexType)
    amount = opt_operand_def(IndexType)
    expected = prop_def(IntegerAttr[I32])
    threads = opt_prop_def(IntegerAttr[I32])
    last = result_def(IntegerType(1))
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = ("$counters `[` $indices `]` (`by` $amount^)? `of` $expected "
                       "(`threads` $threads^)? attr-dict `:` type($counters)")

    def __init__(self, counters: SSAValue, indices: Sequence[SSAValue], expected: int,
                 amount: SSAValue | None = None, threads: int | None = None):
        super().__init__(operands=[counters, indices, [] if amount is None else [amount]],
                         result_types=[IntegerType(1)],
                         properties={"expected": IntegerAttr(expected, i32),
                                     "threads": None if threads is None
                                     else IntegerAttr(threads, i32)})

    def verify_(self) -> None:
        counters_type = _memref(self, self.counters, "counters")
        _verify_indices(self, counters_type, self.indices, "counters")
        if counters_type.element_type != i32:
            raise VerifyException(
                f"'tile.arrive' counters must be i32, got {counters_type.element_type}"
            )
        if any(d < 0 for d in counters_type.get_shape()):
            raise VerifyException(f"'tile.arrive' counters need a static shape, got "
                                  f"{counters_type}")
        if self.expected.value.data < 1:
            raise VerifyException("'tile.arrive' expects at least 1 arrival")
        if self.threads is not None:
            threads = self.threads.value.data
            if threads <= 0 or threads % 32 or threads > 1024:
                raise VerifyException(f"'tile.arrive' threads counts whole warps (a multiple "
                                      f"of 32 up to 1024), got {threads}")


class ShuffleKind(StrEnum):
    """Which lane a shuffle reads: lane ^ offset, lane + offset, lane - offset, or offset."""

    BFLY = "bfly"
    DOWN = "down"
    UP = "up"
    IDX = "idx"


@irdl_attr_definition
class ShuffleKindAttr(EnumAttribute[ShuffleKind], SpacedOpaqueSyntaxAttribute):
    name = "tile.shuffle_kind"


@irdl_op_definition
class ShuffleOp(IRDLOperation):
    """Warp shuffle of an f32 or i32 across all 32 lanes: `shfl.sync.{bfly,down,up,idx}.b32`.

    `%r = tile.shuffle bfly %v, 16 : f32` gives lane l the value of lane l ^ 16 (a butterfly
    step of a warp reduction). Every lane of the warp must execute it (member mask all ones).
    """

    name = "tile.shuffle"
    # Any type here, so that a wrong one is the verifier's located error, not the parser's.
    T: ClassVar = VarConstraint("T", AnyAttr())
    value = operand_def(T)
    kind = prop_def(ShuffleKindAttr)
    offset = prop_def(IntegerAttr[I32])
    res = result_def(T)
    assembly_format = "$kind $value `,` $offset attr-dict `:` type($value)"

    def __init__(self, kind: str, value: SSAValue, offset: int):
        super().__init__(operands=[value], result_types=[value.type],
                         properties={"kind": ShuffleKindAttr(ShuffleKind(kind)),
                                     "offset": IntegerAttr(offset, i32)})

    def verify_(self) -> None:
        if not 0 <= self.offset.value.data < 32:
            raise VerifyException("'tile.shuffle' offset must be in 0..31")
        if self.value.type not in (Float32Type(), i32):
            raise VerifyException(f"'tile.shuffle' moves f32 or i32, got {self.value.type}")


@irdl_op_definition
class YieldOp(IRDLOperation):
    """`tile.yield %v : f32`: the value an epilogue stores."""

    name = "tile.yield"
    value = operand_def(Float32Type)
    traits = traits_def(IsTerminator(), HasParent(StoreAccOp))

    assembly_format = "$value attr-dict `:` type($value)"

    def __init__(self, value: SSAValue):
        super().__init__(operands=[value])


def epilogue_block(accumulators: int = 1) -> Block:
    """An empty epilogue block with the (value..., row, column) arguments."""
    return Block(arg_types=epilogue_arg_types(accumulators))


Tile = Dialect(
    "tile",
    [FillOp, LdMatrixOp, MmaOp, CpAsyncOp, CopyOutOp, LoadL2Op, ClusterMapOp, CpAsyncCommitOp,
     CpAsyncWaitOp,
     StoreAccOp, YieldOp, TakeAccOp, AddAccOp, UnpackAccOp, PackAccOp, AccToAOp, ArriveOp,
     ShuffleOp, WgmmaOp, WgmmaRegAOp, WgmmaFenceOp,
     WgmmaCommitOp, WgmmaWaitOp,
     FenceProxyAsyncOp, MBarrierInitOp, MBarrierArriveOp, MBarrierWaitOp, TmaLoadOp,
     TmaStoreOp, TmaStoreCommitOp, TmaStoreWaitOp, TmaPrefetchOp, BulkLoadOp, BulkStoreOp,
     PrefetchTensorMapOp, NamedBarrierOp, SetMaxNRegOp, ClusterBarrierOp],
    [FragType, SwizzleAttr, ShuffleKindAttr, TensorMapType],
)

__all__ = [
    "BULK_READS",
    "BULK_WRITES",
    "AccToAOp",
    "AddAccOp",
    "ArriveOp",
    "BulkLoadOp",
    "BulkStoreOp",
    "ClusterBarrierOp",
    "ClusterMapOp",
    "CopyOutOp",
    "CpAsyncCommitOp",
    "CpAsyncOp",
    "CpAsyncWaitOp",
    "FenceProxyAsyncOp",
    "FillOp",
    "FragType",
    "LdMatrixOp",
    "LoadL2Op",
    "MBarrierArriveOp",
    "MBarrierInitOp",
    "MBarrierWaitOp",
    "MmaOp",
    "NamedBarrierOp",
    "PackAccOp",
    "PrefetchTensorMapOp",
    "SetMaxNRegOp",
    "ShuffleOp",
    "StoreAccOp",
    "SwizzleAttr",
    "TakeAccOp",
    "TensorMapType",
    "Tile",
    "TmaLoadOp",
    "TmaPrefetchOp",
    "TmaStoreCommitOp",
    "TmaStoreOp",
    "TmaStoreWaitOp",
    "UnpackAccOp",
    "WgmmaCommitOp",
    "WgmmaFenceOp",
    "WgmmaOp",
    "WgmmaRegAOp",
    "WgmmaWaitOp",
    "YieldOp",
    "epilogue_arg_types",
    "epilogue_block",
    "memory_space",
    "swizzle_for_row",
]

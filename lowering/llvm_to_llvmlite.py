"""Translate xDSL's `llvm` dialect (plus tilesync's `llvmx` casts) to llvmlite IR for NVPTX.

xDSL 0.74's `xdsl.backend.llvm` now keeps load/store alignment and the address space and
linkage of globals, but GPU code still needs what it lacks: its GEP bitcasts the pointer to
address space 0 (invalid IR for global and shared pointers), loads and stores lose their
ordering and `volatile`, a bf16 load fails, and calling conventions, function attributes and
global alignment are dropped. So tilesync owns this translation. It keeps llvmlite's IR builder
for the plain instructions and prints ordered or volatile loads and stores itself
(`_AtomicLoad`, `_AtomicStore`), which llvmlite cannot.

    translate_module(op) -> llvmlite.ir.Module
    translate_to_llvm_ir(op) -> str

`op` is a `builtin.module` or `gpu.module` whose body holds only `llvm.func` and
`llvm.mlir.global` (a `gpu.module` nested in a `builtin.module` is translated in place).

The ordered memory operations of the GPU memory model are nvvm ops, lowered to the exact PTX
instruction by convert-nvvm-to-llvm: LLVM 22 ignores the ordering and scope of `atomicrmw`
for NVPTX.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable, Iterable
from typing import Any

from llvmlite import ir
from xdsl.dialects import builtin, gpu, llvm
from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    StringAttr,
    UnitAttr,
    VectorType,
)
from xdsl.ir import Attribute, Block, Operation, SSAValue, TypeAttribute

from tilesync.compat.ptx_kernel import PTX_KERNEL_CCONV
from tilesync.contract import launch_bounds_error
from tilesync.dialects import llvmx
from tilesync.dialects.llvmx import address_space

NVPTX_TRIPLE = "nvptx64-nvidia-cuda"
NVPTX_DATA_LAYOUT = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"


class TranslationError(Exception):
    """The IR holds something this translation cannot express in LLVM IR."""


_LAUNCH_BOUNDS = ("nvvm.maxntid", "nvvm.minctasm")


def _check_launch_bound(op: Operation, key: str, value: str) -> None:
    """NVPTX ends the process on a launch bound it cannot parse or that is out of range."""
    try:
        numbers = tuple(int(v) for v in value.split(","))
    except ValueError:
        raise TranslationError(f"{_describe(op)}: {key} must be integers, got '{value}'") \
            from None
    error = launch_bounds_error(block=numbers) if key == "nvvm.maxntid" else \
        launch_bounds_error(min_blocks_per_sm=numbers[0]) if len(numbers) == 1 else \
        f"one number expected, got '{value}'"
    if error is not None:
        raise TranslationError(f"{_describe(op)}: {key}: {error}")


def _describe(op: Operation) -> str:
    """'llvm.foo' at <location> (in @function), for error messages."""
    where = f"at {op.location}"
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, llvm.FuncOp):
        parent = parent.parent_op()
    if isinstance(parent, llvm.FuncOp):
        where += f" in @{parent.sym_name.data}"
    return f"'{op.name}' {where}"


# -- types -----------------------------------------------------------------------------------


class BFloatType(ir.types._BaseFloatType):
    """LLVM's `bfloat`, which llvmlite lacks."""

    null = "0.0"
    intrinsic_name = "bf16"

    def __str__(self) -> str:
        return "bfloat"

    def format_constant(self, value: float) -> str:
        # LLVM spells bfloat constants as 0xR + the 16 bits; round to nearest even from f32.
        bits = struct.unpack("<I", struct.pack("<f", value))[0]
        if value != value:  # NaN: keep it quiet NaN
            return "0xR7FC0"
        bits += 0x7FFF + ((bits >> 16) & 1)
        return f"0xR{(bits >> 16) & 0xFFFF:04X}"


BFloatType._create_instance()


def _half_constant(value: float) -> str:
    return f"0xH{struct.unpack('<H', struct.pack('<e', value))[0]:04X}"


class _HalfType(ir.HalfType):
    """`half` whose constants print exactly (0xH...), whatever the value."""

    def format_constant(self, value: float) -> str:
        return _half_constant(value)


_HalfType._create_instance()


WIDE_STRUCT_MEMBERS = 16
"""A struct of at least this many members of one type (a wgmma accumulator: 32 to 128 f32) is
an identified type of its module (`%"floatx128" = type {float, ...}`), as every
extractvalue and insertvalue would spell out its members otherwise: NeRF's MLP pipeline is 1 MB
of LLVM IR instead of 3.4 MB, translated and parsed in half the time, to the same PTX."""


def convert_type(type_: Attribute, context: ir.Context | None = None) -> ir.Type:
    """The llvmlite type of an xDSL builtin/llvm type (index is i64, pointers are opaque); with
    the module's `context`, a wide struct of one member type is an identified type of it."""
    match type_:
        case IntegerType():
            return ir.IntType(type_.width.data)
        case IndexType():
            return ir.IntType(64)
        case Float16Type():
            return _HalfType()
        case BFloat16Type():
            return BFloatType()
        case Float32Type():
            return ir.FloatType()
        case Float64Type():
            return ir.DoubleType()
        case llvm.LLVMPointerType():
            return ir.PointerType(addrspace=address_space(type_))
        case llvm.LLVMArrayType():
            return ir.ArrayType(convert_type(type_.type, context), type_.size.data)
        case llvm.LLVMStructType():
            members = type_.types.data
            if context is not None and len(members) >= WIDE_STRUCT_MEMBERS \
                    and len(set(members)) == 1:
                return _identified_struct(context, convert_type(members[0]), len(members))
            return ir.LiteralStructType([convert_type(t, context) for t in members])
        case llvm.LLVMVoidType():
            return ir.VoidType()
        case VectorType():
            if type_.get_num_dims() != 1 or type_.get_num_scalable_dims():
                raise TranslationError(f"only fixed 1-D vectors are supported, got {type_}")
            return ir.VectorType(convert_type(type_.element_type), type_.get_shape()[0])
        case llvm.LLVMFunctionType():
            output = convert_type(type_.output, context)
            inputs = [convert_type(t, context) for t in type_.inputs.data]
            return ir.FunctionType(output, inputs, var_arg=type_.is_variadic)
        case _:
            raise TranslationError(f"type {type_} has no LLVM equivalent")


def _identified_struct(context: ir.Context, member: ir.Type, count: int) -> ir.Type:
    struct = context.get_identified_type(f"{member}x{count}")
    if struct.elements is None:
        struct.set_body(*[member] * count)
    return struct


def _natural_alignment(type_: ir.Type) -> int:
    """The alignment an atomic access needs when the IR gives none (its size, a power of 2)."""
    if isinstance(type_, ir.IntType):
        size = max(1, (type_.width + 7) // 8)
    elif isinstance(type_, ir.HalfType | BFloatType):
        size = 2
    elif isinstance(type_, ir.FloatType):
        size = 4
    else:
        size = 8
    return 1 << (size - 1).bit_length()


# -- instructions llvmlite cannot print ------------------------------------------------------


class _AtomicLoad(ir.Instruction):
    """`load [atomic] [volatile] T, ptr %p [ordering], align N`."""

    def __init__(self, parent, type_, ptr, ordering: str, volatile: bool, align, name):
        super().__init__(parent, type_, "load", [ptr], name=name)
        self.ordering, self.volatile, self.align = ordering, volatile, align

    def descr(self, buf: list[str]) -> None:
        [ptr] = self.operands
        atomic = self.ordering != "not_atomic"
        text = "load" + (" atomic" if atomic else "") + (" volatile" if self.volatile else "")
        text += f" {self.type}, {ptr.type} {ptr.get_reference()}"
        if atomic:
            text += f" {self.ordering}"
        if self.align is not None:
            text += f", align {self.align}"
        buf.append(text + self._stringify_metadata(leading_comma=True) + "\n")


class _AtomicStore(ir.Instruction):
    """`store [atomic] [volatile] T %v, ptr %p [ordering], align N`."""

    def __init__(self, parent, value, ptr, ordering: str, volatile: bool, align):
        super().__init__(parent, ir.VoidType(), "store", [value, ptr])
        self.ordering, self.volatile, self.align = ordering, volatile, align

    def descr(self, buf: list[str]) -> None:
        value, ptr = self.operands
        atomic = self.ordering != "not_atomic"
        text = "store" + (" atomic" if atomic else "") + (" volatile" if self.volatile else "")
        text += f" {value.type} {value.get_reference()}, {ptr.type} {ptr.get_reference()}"
        if atomic:
            text += f" {self.ordering}"
        if self.align is not None:
            text += f", align {self.align}"
        buf.append(text + self._stringify_metadata(leading_comma=True) + "\n")


@functools.lru_cache(maxsize=4096)  # a kernel's inline asm repeats a few texts hundreds of times
def _escape_llvm_string(text: str) -> str:
    """Escape for an LLVM IR string literal: `"`, `\\` and non-printables become `\\XX`."""
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return text
    out = []
    for byte in text.encode():
        char = chr(byte)
        if char in '"\\' or not 0x20 <= byte < 0x7F:
            out.append(f"\\{byte:02X}")
        else:
            out.append(char)
    return "".join(out)


class _InlineAsm(ir.InlineAsm):
    """llvmlite's InlineAsm prints the asm text unescaped; quotes or newlines would break it."""

    def descr(self, buf: list[str]) -> None:
        side_effect = " sideeffect" if self.side_effect else ""
        buf.append(
            f'asm{side_effect} "{_escape_llvm_string(self.asm)}", '
            f'"{_escape_llvm_string(self.constraint)}"'
        )


class _FunctionAttributes(ir.FunctionAttributes):
    """Function attributes plus string attributes (`"nvvm.maxntid"="256,1,1"`)."""

    def __init__(self) -> None:
        super().__init__()
        self.strings: dict[str, str | None] = {}

    def __bool__(self) -> bool:
        return bool(self.strings) or super().__len__() > 0

    def _to_list(self, ret_type):
        attrs = super()._to_list(ret_type)
        for key, value in self.strings.items():
            key_text = f'"{_escape_llvm_string(key)}"'
            attrs.append(
                key_text if value is None else f'{key_text}="{_escape_llvm_string(value)}"'
            )
        return attrs


class _ArgumentAttributes(ir.values.ArgumentAttributes):
    """Argument attributes plus the ones llvmlite cannot print for opaque pointers: `byval`
    of an explicit type, and string attributes (`"nvvm.grid_constant"`)."""

    def __init__(self) -> None:
        super().__init__()
        self.byval: ir.Type | None = None
        self.strings: list[str] = []

    def __bool__(self) -> bool:
        return self.byval is not None or bool(self.strings) or super().__len__() > 0 or \
            bool(self.align)

    def _to_list(self, typ):
        attrs = super()._to_list(typ)
        if self.byval is not None:
            attrs.insert(0, f"byval({self.byval})")
        attrs += [f'"{_escape_llvm_string(key)}"' for key in self.strings]
        return attrs


class _Builder(ir.IRBuilder):
    def insert(self, instruction: ir.Instruction) -> ir.Instruction:
        self._insert(instruction)
        return instruction


# -- op tables -------------------------------------------------------------------------------

_INT_BINARY = {
    llvm.AddOp: "add",
    llvm.SubOp: "sub",
    llvm.MulOp: "mul",
    llvm.UDivOp: "udiv",
    llvm.SDivOp: "sdiv",
    llvm.URemOp: "urem",
    llvm.SRemOp: "srem",
    llvm.AndOp: "and_",
    llvm.OrOp: "or_",
    llvm.XOrOp: "xor",
    llvm.ShlOp: "shl",
    llvm.LShrOp: "lshr",
    llvm.AShrOp: "ashr",
}
_FLOAT_BINARY = {
    llvm.FAddOp: "fadd",
    llvm.FSubOp: "fsub",
    llvm.FMulOp: "fmul",
    llvm.FDivOp: "fdiv",
    llvm.FRemOp: "frem",
}
_CASTS = {
    llvm.TruncOp: "trunc",
    llvm.ZExtOp: "zext",
    llvm.SExtOp: "sext",
    llvm.SIToFPOp: "sitofp",
    llvm.FPExtOp: "fpext",
    llvm.FPTruncOp: "fptrunc",
    llvm.BitcastOp: "bitcast",
    llvm.PtrToIntOp: "ptrtoint",
    llvm.IntToPtrOp: "inttoptr",
    llvmx.FPToSIOp: "fptosi",
    llvmx.FPToUIOp: "fptoui",
    llvmx.UIToFPOp: "uitofp",
    llvmx.AddrSpaceCastOp: "addrspacecast",
}
# llvm.intr.* ops that are overloaded LLVM intrinsics on their first operand's type.
_FLOAT_INTRINSICS = {
    llvm.FAbsOp: "llvm.fabs",
    llvm.FCeilOp: "llvm.ceil",
    llvm.FSqrtOp: "llvm.sqrt",
    llvm.FFloorOp: "llvm.floor",
    llvm.FExp2Op: "llvm.exp2",
    llvm.FLogOp: "llvm.log",
    llvm.FExpOp: "llvm.exp",
    llvm.FSinOp: "llvm.sin",
    llvm.FCosOp: "llvm.cos",
    llvm.FLog2Op: "llvm.log2",
    llvm.VectorFMaxOp: "llvm.maxnum",
    llvm.VectorFMinOp: "llvm.minnum",
    llvm.FCopySignOp: "llvm.copysign",
    llvm.FMAOp: "llvm.fma",
    llvm.FPowOp: "llvm.pow",
}
_SIGNED_ICMP = {"slt", "sle", "sgt", "sge"}


def _fastmath_flags(attr: Attribute | None) -> tuple[str, ...]:
    flags = attr.data if isinstance(attr, llvm.FastMathAttr) else ()
    return tuple(sorted(str(getattr(flag, "value", flag)) for flag in flags))


def _fastmath(t: _FunctionTranslator, op: Operation) -> tuple[str, ...]:
    return t.mt.converted(op.properties.get("fastmathFlags"), _fastmath_flags)


def _array_values(attr: Attribute) -> tuple[int, ...]:
    return tuple(attr.iter_values())  # type: ignore[attr-defined]


def _int_prop(op: Operation, name: str) -> int | None:
    attr = op.properties.get(name, op.attributes.get(name))
    return attr.value.data if isinstance(attr, IntegerAttr) else None


# -- the translation -------------------------------------------------------------------------


class _FunctionTranslator:
    """Translates the body of one llvm.func into an llvmlite function."""

    def __init__(self, module_translator: _ModuleTranslator, func_op: llvm.FuncOp):
        self.mt = module_translator
        self.func_op = func_op
        self.function: ir.Function = module_translator.functions[func_op.sym_name.data]
        self.values: dict[SSAValue, Any] = {}
        self.blocks: dict[Block, ir.Block] = {}
        self.phis: dict[Block, list[ir.PhiInstr]] = {}
        self.builder = _Builder()

    def value(self, ssa: SSAValue, user: Operation) -> Any:
        try:
            return self.values[ssa]
        except KeyError:
            raise TranslationError(
                f"{_describe(user)} uses a value that is not defined before it "
                "(or is defined in an unreachable block)"
            ) from None

    def translate(self) -> None:
        region_blocks = list(self.func_op.body.blocks)
        entry = region_blocks[0]
        for arg, ir_arg in zip(entry.args, self.function.args, strict=True):
            if arg.name_hint:
                ir_arg.name = arg.name_hint
            self.values[arg] = ir_arg
        order = _reverse_post_order(entry)
        reachable = set(order)
        order += [b for b in region_blocks if b not in reachable]  # unreachable ones last
        index = {block: i for i, block in enumerate(region_blocks)}
        for block in order:
            name = "entry" if index[block] == 0 else f"bb{index[block]}"
            self.blocks[block] = self.function.append_basic_block(name)
        # Block arguments become phi nodes, created up front so branches can fill them in.
        for block in order[1:]:
            self.builder.position_at_end(self.blocks[block])
            self.phis[block] = [
                self.builder.phi(self.type(arg.type), name=arg.name_hint or "")
                for arg in block.args
            ]
            self.values.update(zip(block.args, self.phis[block]))
        for block in order:
            self.builder.position_at_end(self.blocks[block])
            for op in block.ops:
                self.translate_op(op)

    def type(self, type_: Attribute) -> ir.Type:
        return self.mt.type(type_)

    # (The op's `_operands` and results tuples indexed as tuples: xDSL's `operands` view and
    # its SSAValues indexing are a Python call each, for every op translated.)
    def set_result(self, op: Operation, value: Any, index: int = 0) -> None:
        result = tuple.__getitem__(op.results, index)
        # llvmlite still infers typed pointers in places (alloca): keep the dialect's type.
        if type(result.type) is llvm.LLVMPointerType and isinstance(value, ir.Instruction):
            value.type = self.type(result.type)
        self.values[result] = value

    def operands(self, op: Operation) -> list[Any]:
        try:
            return [self.values[operand] for operand in op._operands]
        except KeyError:
            return [self.value(operand, op) for operand in op._operands]

    def name(self, op: Operation, index: int = 0) -> str:
        results = op.results
        return (tuple.__getitem__(results, index).name_hint or "") if results else ""

    def translate_op(self, op: Operation) -> None:
        handler = _HANDLERS.get(type(op))
        if handler is None:
            for table, generic in _TABLE_HANDLERS:
                if type(op) in table:
                    handler = generic
                    break
        if handler is None:
            raise TranslationError(f"cannot translate {_describe(op)} to LLVM IR")
        handler(self, op)

    # -- terminators ---------------------------------------------------------------------------

    def branch_to(self, op: Operation, target: Block, args: Iterable[SSAValue]) -> None:
        for phi, arg in zip(self.phis.get(target, []), args, strict=True):
            phi.add_incoming(self.value(arg, op), self.builder.block)


def _reverse_post_order(entry: Block) -> list[Block]:
    """Blocks reachable from entry, each after all of its dominators."""
    seen: set[Block] = set()
    post: list[Block] = []
    stack: list[tuple[Block, list[Block]]] = [(entry, _successors(entry))]
    seen.add(entry)
    while stack:
        block, successors = stack[-1]
        if successors:
            nxt = successors.pop(0)
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, _successors(nxt)))
        else:
            post.append(block)
            stack.pop()
    return post[::-1]


def _successors(block: Block) -> list[Block]:
    terminator = block.last_op
    return list(terminator.successors) if terminator is not None else []


# Handlers: each takes the function translator and the op.
_Handler = Callable[[_FunctionTranslator, Any], None]
_HANDLERS: dict[type[Operation], _Handler] = {}


def _handles(*op_types: type[Operation]):
    def register(handler: _Handler) -> _Handler:
        for op_type in op_types:
            _HANDLERS[op_type] = handler
        return handler

    return register


def _int_binary(t: _FunctionTranslator, op: Operation) -> None:
    lhs, rhs = t.operands(op)
    t.set_result(op, getattr(t.builder, _INT_BINARY[type(op)])(lhs, rhs, name=t.name(op)))


def _float_binary(t: _FunctionTranslator, op: Operation) -> None:
    lhs, rhs = t.operands(op)
    method = getattr(t.builder, _FLOAT_BINARY[type(op)])
    t.set_result(op, method(lhs, rhs, name=t.name(op), flags=_fastmath(t, op)))


def _cast(t: _FunctionTranslator, op: Operation) -> None:
    [value] = t.operands(op)
    method = getattr(t.builder, _CASTS[type(op)])
    t.set_result(op, method(value, t.type(op.results[0].type), name=t.name(op)))


def _float_intrinsic(t: _FunctionTranslator, op: Operation) -> None:
    args = t.operands(op)
    result_type = t.type(op.results[0].type)
    base = _FLOAT_INTRINSICS[type(op)]
    callee = t.mt.declare_intrinsic(
        f"{base}.{_type_suffix(result_type)}", result_type, [a.type for a in args], op
    )
    t.set_result(op, t.builder.call(callee, args, name=t.name(op), fastmath=_fastmath(t, op)))


def _type_suffix(type_: ir.Type) -> str:
    if isinstance(type_, ir.VectorType):
        return f"v{type_.count}{_type_suffix(type_.element)}"
    return type_.intrinsic_name


_TABLE_HANDLERS: list[tuple[dict, _Handler]] = [
    (_INT_BINARY, _int_binary),
    (_FLOAT_BINARY, _float_binary),
    (_CASTS, _cast),
    (_FLOAT_INTRINSICS, _float_intrinsic),
]


def _constant_value(attr: Attribute, type_: ir.Type, op: Operation) -> ir.Constant:
    if isinstance(attr, IntegerAttr):
        value = attr.value.data
        if isinstance(type_, ir.IntType) and type_.width == 1:
            value = bool(value & 1)  # prints as true/false
        if isinstance(type_, ir.VectorType):
            return ir.Constant(type_, [ir.Constant(type_.element, value)] * type_.count)
        return ir.Constant(type_, value)
    if isinstance(attr, FloatAttr):
        if isinstance(type_, ir.VectorType):
            element = ir.Constant(type_.element, attr.value.data)
            return ir.Constant(type_, [element] * type_.count)
        return ir.Constant(type_, attr.value.data)
    if isinstance(attr, DenseIntOrFPElementsAttr) and isinstance(
        type_, ir.VectorType | ir.ArrayType
    ):
        element_type = type_.element
        values = list(attr.get_values())
        count = type_.count
        if len(values) == 1:
            values = values * count
        if len(values) != count:
            raise TranslationError(f"{_describe(op)}: {len(values)} values for {type_}")
        return ir.Constant(type_, [ir.Constant(element_type, v) for v in values])
    raise TranslationError(f"{_describe(op)}: unsupported constant {attr} of type {type_}")


@_handles(llvm.ConstantOp)
def _constant(t: _FunctionTranslator, op: llvm.ConstantOp) -> None:
    t.set_result(op, _constant_value(op.value, t.type(op.result.type), op))


@_handles(llvm.UndefOp)
def _undef(t: _FunctionTranslator, op: llvm.UndefOp) -> None:
    t.set_result(op, ir.Constant(t.type(op.res.type), ir.Undefined))


@_handles(llvm.ZeroOp)
def _zero(t: _FunctionTranslator, op: llvm.ZeroOp) -> None:
    t.set_result(op, ir.Constant(t.type(op.res.type), None))


@_handles(llvm.FNegOp)
def _fneg(t: _FunctionTranslator, op: llvm.FNegOp) -> None:
    [value] = t.operands(op)
    t.set_result(op, t.builder.fneg(value, name=t.name(op), flags=_fastmath(t, op)))


@_handles(llvm.ICmpOp)
def _icmp(t: _FunctionTranslator, op: llvm.ICmpOp) -> None:
    lhs, rhs = t.operands(op)
    predicate = str(llvm.ICmpPredicateFlag.from_int(op.predicate.value.data).value)
    instruction = ir.instructions.ICMPInstr(t.builder.block, predicate, lhs, rhs, name=t.name(op))
    t.set_result(op, t.builder.insert(instruction))


@_handles(llvm.FCmpOp)
def _fcmp(t: _FunctionTranslator, op: llvm.FCmpOp) -> None:
    lhs, rhs = t.operands(op)
    predicate = str(llvm.FCmpPredicateFlag.from_int(op.predicate.value.data).value).lstrip("_")
    instruction = ir.instructions.FCMPInstr(
        t.builder.block, predicate, lhs, rhs, name=t.name(op), flags=_fastmath(t, op)
    )
    t.set_result(op, t.builder.insert(instruction))


@_handles(llvm.SelectOp)
def _select(t: _FunctionTranslator, op: llvm.SelectOp) -> None:
    cond, lhs, rhs = t.operands(op)
    t.set_result(op, t.builder.select(cond, lhs, rhs, name=t.name(op)))


@_handles(llvm.GEPOp)
def _gep(t: _FunctionTranslator, op: llvm.GEPOp) -> None:
    ptr = t.value(op.ptr, op)
    ssa_indices = iter(op.ssa_indices)
    indices = []
    for raw in t.mt.converted(op.rawConstantIndices, _array_values):
        if raw == llvm.GEP_USE_SSA_VAL:
            indices.append(t.value(next(ssa_indices), op))
        else:
            indices.append(ir.Constant(ir.IntType(32), raw))
    gep = t.builder.gep(
        ptr,
        indices,
        inbounds=op.inbounds is not None,
        name=t.name(op),
        source_etype=t.type(op.elem_type),
    )
    t.set_result(op, gep)


@_handles(llvm.AllocaOp)
def _alloca(t: _FunctionTranslator, op: llvm.AllocaOp) -> None:
    size = t.value(op.size, op)
    alloca = t.builder.alloca(t.type(op.elem_type), size=size, name=t.name(op))
    alloca.align = _int_prop(op, "alignment")
    t.set_result(op, alloca)


def _ordering_keyword(op: Operation) -> str:
    ordering = _int_prop(op, "ordering") or 0
    return llvm.ATOMIC_ORDERING_KEYWORDS[ordering] if ordering else "not_atomic"


def _alignment_for(ordering: str, explicit: int | None, type_: ir.Type) -> int | None:
    # LLVM requires an alignment on atomic accesses; default to the natural one.
    if explicit is None and ordering != "not_atomic":
        return _natural_alignment(type_)
    return explicit


@_handles(llvm.LoadOp)
def _load(t: _FunctionTranslator, op: llvm.LoadOp) -> None:
    ptr = t.value(op.ptr, op)
    type_ = t.type(op.dereferenced_value.type)
    ordering = _ordering_keyword(op)
    volatile = op.properties.get("volatile_") is not None
    align = _alignment_for(ordering, _int_prop(op, "alignment"), type_)
    load = _AtomicLoad(t.builder.block, type_, ptr, ordering, volatile, align, t.name(op))
    t.set_result(op, t.builder.insert(load))


@_handles(llvm.StoreOp)
def _store(t: _FunctionTranslator, op: llvm.StoreOp) -> None:
    value, ptr = t.operands(op)
    ordering = _ordering_keyword(op)
    align = _alignment_for(ordering, _int_prop(op, "alignment"), value.type)
    volatile = op.volatile_ is not None
    t.builder.insert(_AtomicStore(t.builder.block, value, ptr, ordering, volatile, align))


@_handles(llvm.ExtractValueOp)
def _extractvalue(t: _FunctionTranslator, op: llvm.ExtractValueOp) -> None:
    container = t.value(op.container, op)
    indices = t.mt.converted(op.position, _array_values)
    t.set_result(op, t.builder.extract_value(container, indices, name=t.name(op)))


@_handles(llvm.InsertValueOp)
def _insertvalue(t: _FunctionTranslator, op: llvm.InsertValueOp) -> None:
    container, value = t.value(op.container, op), t.value(op.value, op)
    indices = t.mt.converted(op.position, _array_values)
    t.set_result(op, t.builder.insert_value(container, value, indices, name=t.name(op)))


@_handles(llvm.AddressOfOp)
def _addressof(t: _FunctionTranslator, op: llvm.AddressOfOp) -> None:
    symbol = op.global_name.root_reference.data
    try:
        t.set_result(op, t.mt.module.get_global(symbol))
    except KeyError:
        raise TranslationError(f"{_describe(op)}: no global or function @{symbol}") from None


@_handles(llvm.CallIntrinsicOp)
def _call_intrinsic(t: _FunctionTranslator, op: llvm.CallIntrinsicOp) -> None:
    if op.op_bundle_operands:
        raise TranslationError(f"{_describe(op)}: operand bundles are not supported")
    args = [t.value(a, op) for a in op.args]
    result_type = t.type(op.ress.type) if op.ress is not None else ir.VoidType()
    callee = t.mt.declare_intrinsic(op.intrin.data, result_type, [a.type for a in args], op)
    call = t.builder.call(callee, args, name=t.name(op), fastmath=_fastmath(t, op))
    if op.ress is not None:
        t.set_result(op, call)


@_handles(llvm.CallOp)
def _call(t: _FunctionTranslator, op: llvm.CallOp) -> None:
    if op.callee is None:
        raise TranslationError(f"{_describe(op)}: indirect calls are not supported")
    name = op.callee.root_reference.data
    callee = t.mt.functions.get(name)
    if callee is None:
        raise TranslationError(f"{_describe(op)}: no llvm.func @{name}")
    args = [t.value(a, op) for a in op.args]
    call = t.builder.call(callee, args, name=t.name(op), fastmath=_fastmath(t, op))
    if op.returned is not None:
        t.set_result(op, call)


@_handles(llvm.InlineAsmOp)
def _inline_asm(t: _FunctionTranslator, op: llvm.InlineAsmOp) -> None:
    if op.asm_dialect is not None and op.asm_dialect.value.data != 0:
        raise TranslationError(f"{_describe(op)}: only the default asm dialect exists for PTX")
    args = [t.value(a, op) for a in op.operands_]
    result_type = t.type(op.res.type) if op.res is not None else ir.VoidType()
    asm = _InlineAsm(
        ir.FunctionType(result_type, [a.type for a in args]),
        op.asm_string.data,
        op.constraints.data,
        side_effect=op.has_side_effects is not None,
    )
    call = t.builder.call(asm, args, name=t.name(op))
    if op.res is not None:
        t.set_result(op, call)


@_handles(llvm.BrOp)
def _br(t: _FunctionTranslator, op: llvm.BrOp) -> None:
    t.branch_to(op, op.successor, op.arguments)
    t.builder.branch(t.blocks[op.successor])


@_handles(llvm.CondBrOp)
def _cond_br(t: _FunctionTranslator, op: llvm.CondBrOp) -> None:
    cond = t.value(op.cond, op)
    t.branch_to(op, op.then_block, op.then_arguments)
    t.branch_to(op, op.else_block, op.else_arguments)
    t.builder.cbranch(cond, t.blocks[op.then_block], t.blocks[op.else_block])


@_handles(llvm.ReturnOp)
def _return(t: _FunctionTranslator, op: llvm.ReturnOp) -> None:
    if op.arg is None:
        t.builder.ret_void()
    else:
        t.builder.ret(t.value(op.arg, op))


@_handles(llvm.UnreachableOp)
def _unreachable(t: _FunctionTranslator, op: llvm.UnreachableOp) -> None:
    t.builder.unreachable()


_KERNEL_MARKERS = ("nvvm.kernel", "gpu.kernel")


class _ModuleTranslator:
    def __init__(self, name: str):
        self.module = ir.Module(name=name, context=ir.Context())
        self.module.triple = NVPTX_TRIPLE
        self.module.data_layout = NVPTX_DATA_LAYOUT
        self.functions: dict[str, ir.Function] = {}
        # Types by object: the ops of a kernel share a few dozen type attributes, which
        # convert_type would rebuild for each of thousands of values. The attribute is kept
        # alive with its translation, so its id stays its own.
        self.types: dict[int, tuple[Attribute, ir.Type]] = {}
        self.attributes: dict[tuple[int, Callable], tuple[Attribute | None, Any]] = {}

    def type(self, type_: Attribute) -> ir.Type:
        found = self.types.get(id(type_))
        if found is None:
            found = self.types[id(type_)] = (type_, convert_type(type_, self.module.context))
        return found[1]

    def converted(self, attribute: Attribute | None, convert: Callable[[Any], Any]) -> Any:
        """`convert(attribute)` once per attribute object (an extractvalue's `position`, a
        float op's fastmath flags: shared by thousands of ops), kept alive like the types."""
        key = (id(attribute), convert)
        found = self.attributes.get(key)
        if found is None:
            found = self.attributes[key] = (attribute, convert(attribute))
        return found[1]

    def declare_intrinsic(
        self, name: str, result_type: ir.Type, arg_types: list[ir.Type], op: Operation
    ) -> ir.Function:
        function_type = ir.FunctionType(result_type, arg_types)
        existing = self.functions.get(name)
        if existing is None:
            function = ir.Function(self.module, function_type, name)
            self.functions[name] = function
            return function
        if existing.function_type != function_type:
            raise TranslationError(
                f"{_describe(op)}: {name} is used as {function_type} "
                f"but was declared as {existing.function_type}"
            )
        return existing

    def declare_function(self, op: llvm.FuncOp) -> None:
        name = op.sym_name.data
        if name in self.functions:
            raise TranslationError(f"{_describe(op)}: @{name} is defined twice")
        function = ir.Function(self.module, self.type(op.function_type), name)
        function.attributes = _FunctionAttributes()
        cconv = op.CConv.convention.data
        # MLIR upstream marks kernels with a `nvvm.kernel` unit attribute instead.
        if any(k in op.attributes or k in op.properties for k in _KERNEL_MARKERS):
            cconv = PTX_KERNEL_CCONV
        if cconv != "ccc":
            function.calling_convention = cconv
        linkage = op.linkage.linkage.data
        if linkage != "external":
            function.linkage = linkage
        self._add_function_attributes(function, op)
        self._add_argument_attributes(function, op, self.module.context)
        self.functions[name] = function

    @staticmethod
    def _add_function_attributes(function: ir.Function, op: llvm.FuncOp) -> None:
        passthrough = op.properties.get("passthrough", op.attributes.get("passthrough"))
        attrs: _FunctionAttributes = function.attributes
        if op.no_inline is not None:
            attrs.add("noinline")
        if op.no_unwind is not None:
            attrs.add("nounwind")
        if passthrough is None:
            return
        if not isinstance(passthrough, ArrayAttr):
            raise TranslationError(f"{_describe(op)}: passthrough must be an array")
        for entry in passthrough.data:
            if isinstance(entry, StringAttr):
                if entry.data in ir.FunctionAttributes._known:
                    attrs.add(entry.data)
                else:
                    attrs.strings[entry.data] = None
            elif (
                isinstance(entry, ArrayAttr)
                and len(entry.data) == 2
                and all(isinstance(e, StringAttr) for e in entry.data)
            ):
                key, value = entry.data
                if key.data in _LAUNCH_BOUNDS:
                    _check_launch_bound(op, key.data, value.data)
                attrs.strings[key.data] = value.data
            else:
                raise TranslationError(
                    f"{_describe(op)}: passthrough entry {entry} is neither a string "
                    "nor a [key, value] pair of strings"
                )

    @staticmethod
    def _add_argument_attributes(function: ir.Function, op: llvm.FuncOp,
                                 context: ir.Context) -> None:
        if op.arg_attrs is None:
            return
        for arg, attrs in zip(function.args, op.arg_attrs.data, strict=False):
            if not isinstance(attrs, DictionaryAttr):
                continue
            arg.attributes = _ArgumentAttributes()
            for key, value in attrs.data.items():
                short = key.removeprefix("llvm.")
                if short == "align" and isinstance(value, IntegerAttr):
                    arg.attributes.align = value.value.data
                elif short == "byval" and isinstance(value, TypeAttribute):
                    arg.attributes.byval = convert_type(value, context)
                elif isinstance(value, UnitAttr) and short in ir.ArgumentAttributes._known:
                    arg.attributes.add(short)
                elif isinstance(value, UnitAttr) and key.startswith("nvvm."):
                    arg.attributes.strings.append(key)  # "nvvm.grid_constant"
                else:
                    raise TranslationError(f"{_describe(op)}: argument attribute {key} = "
                                           f"{value} has no LLVM spelling here")

    def define_global(self, op: llvm.GlobalOp) -> None:
        name = op.sym_name.data
        value_type = self.type(op.global_type)
        variable = ir.GlobalVariable(
            self.module, value_type, name, addrspace=op.addr_space.value.data
        )
        variable.type = ir.PointerType(addrspace=op.addr_space.value.data)
        linkage = op.linkage.linkage.data
        initializer = self._global_initializer(op, value_type)
        if initializer is None and linkage != "external":
            # MLIR gives globals without a value `undef` (all shared memory looks like this).
            initializer = ir.Constant(value_type, ir.Undefined)
        if linkage != "external" or initializer is None:
            variable.linkage = linkage
        variable.initializer = initializer
        variable.global_constant = op.constant is not None
        if op.alignment is not None:
            variable.align = op.alignment.value.data
        if op.section is not None:
            variable.section = op.section.data

    @staticmethod
    def _global_initializer(op: llvm.GlobalOp, value_type: ir.Type) -> ir.Constant | None:
        if op.value is not None:
            if isinstance(op.value, StringAttr):
                data = bytearray(op.value.data.encode())
                return ir.Constant(value_type, data)
            return _constant_value(op.value, value_type, op)
        if not op.body.blocks:
            return None
        # An initializer region: support the constant forms (zero, undef, constant).
        terminator = op.body.block.last_op
        if not isinstance(terminator, llvm.ReturnOp) or terminator.arg is None:
            raise TranslationError(f"{_describe(op)}: initializer region must return a value")
        producer = terminator.arg.owner
        if isinstance(producer, llvm.ZeroOp):
            return ir.Constant(value_type, None)
        if isinstance(producer, llvm.UndefOp):
            return ir.Constant(value_type, ir.Undefined)
        if isinstance(producer, llvm.ConstantOp):
            return _constant_value(producer.value, value_type, producer)
        raise TranslationError(
            f"{_describe(op)}: initializer regions may only return llvm.mlir.zero, "
            "llvm.mlir.undef or llvm.mlir.constant"
        )


def _top_level_ops(op: Operation) -> list[Operation]:
    if not isinstance(op, builtin.ModuleOp | gpu.ModuleOp):
        raise TranslationError(f"expected a builtin.module or gpu.module, got {_describe(op)}")
    ops: list[Operation] = []
    for child in op.body.block.ops:
        if isinstance(child, gpu.ModuleOp):
            ops.extend(_top_level_ops(child))
        elif isinstance(child, llvm.FuncOp | llvm.GlobalOp):
            ops.append(child)
        else:
            raise TranslationError(
                f"cannot translate {_describe(child)}: a module to translate may only hold "
                "llvm.func and llvm.mlir.global"
            )
    return ops


def translate_module(op: Operation) -> ir.Module:
    """Translate a module of llvm.func/llvm.mlir.global ops into an llvmlite module for NVPTX."""
    name = op.sym_name.data if isinstance(op, gpu.ModuleOp) else "tilesync"
    if isinstance(op, builtin.ModuleOp) and op.sym_name is not None:
        name = op.sym_name.data
    translator = _ModuleTranslator(name)
    top_level = _top_level_ops(op)
    # Declare everything first so functions can call and take the address of later symbols.
    for child in top_level:
        if isinstance(child, llvm.GlobalOp):
            translator.define_global(child)
    for child in top_level:
        if isinstance(child, llvm.FuncOp):
            translator.declare_function(child)
    for child in top_level:
        if isinstance(child, llvm.FuncOp) and child.body.blocks:
            _FunctionTranslator(translator, child).translate()
    return translator.module


def translate_to_llvm_ir(op: Operation) -> str:
    """The textual LLVM IR of `translate_module(op)`."""
    return str(translate_module(op))


__all__ = [
    "NVPTX_DATA_LAYOUT",
    "NVPTX_TRIPLE",
    "BFloatType",
    "TranslationError",
    "convert_type",
    "translate_module",
    "translate_to_llvm_ir",
]

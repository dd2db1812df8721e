"""`convert-nvvm-to-llvm`: the nvvm dialect to `llvm.call_intrinsic` and `llvm.inline_asm`.

- Special registers, `barrier0`, `griddepcontrol.*` and `trap` become NVVM intrinsics
  (`llvm.nvvm.read.ptx.sreg.*`, `llvm.nvvm.barrier0`, `llvm.nvvm.griddepcontrol.*`, `llvm.trap`).
- Every ordered memory operation (ld, st, atom, atom.cas, red, fence, fence.proxy.async) and
  nanosleep become inline PTX with side effects; the memory operations also clobber `memory`, so
  LLVM moves no load or store across them. LLVM 22 drops ordering and scope from `atomicrmw` for
  NVPTX (REFERENCE.md), so inline PTX is the one way to get exactly the instruction asked for.

Every PTX instruction is spelled once, in `PTX_TEMPLATES`; the pieces filled in are the
semantics (`.acquire.gpu`, `.volatile`, nothing for weak), the state space from the pointer's
address space (`.global` 1, `.shared` 3, nothing for generic 0) and the type suffix from the
value type. Pointers are passed in 64-bit registers (`l`), which holds for every address space
under the default nvptx64 data layout (no short shared pointers).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import llvm
from xdsl.dialects.builtin import Float32Type, IntegerType, ModuleOp
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from tilesync.compat.rewrite_driver import apply_patterns
from tilesync.dialects import nvvm
from tilesync.dialects.llvmx import address_space
from tilesync.lowering.llvm_conversion import reject_leftover_ops

# --------------------------------------------------------------------------------------------
# The tables: every intrinsic name and every PTX instruction string, once.
# --------------------------------------------------------------------------------------------

INTRINSICS: dict[type[Operation], str] = {
    nvvm.Barrier0Op: "llvm.nvvm.barrier0",
    nvvm.GridDepControlWaitOp: "llvm.nvvm.griddepcontrol.wait",
    nvvm.GridDepControlLaunchDependentsOp: "llvm.nvvm.griddepcontrol.launch.dependents",
    nvvm.TrapOp: "llvm.trap",
}
"""Zero-operand, no-result nvvm ops lowered to an intrinsic call."""

SREG_INTRINSIC = "llvm.nvvm.read.ptx.sreg.{sreg}"

PTX_TEMPLATES: dict[type[Operation], str] = {
    nvvm.LoadOp: "ld{sem}{space}.{type} $0, [$1];",
    nvvm.StoreOp: "st{sem}{space}.{type} [$0], $1;",
    nvvm.AtomicOp: "atom{sem}{space}.{kind}.{type} $0, [$1], $2;",
    nvvm.AtomicCASOp: "atom{sem}{space}.cas.{type} $0, [$1], $2, $3;",
    nvvm.ReduceOp: "red{sem}{space}.{kind}.{type} [$0], $1;",
    nvvm.FenceOp: "fence{sem};",
    nvvm.FenceProxyAsyncOp: "fence.proxy.async{space};",
    nvvm.NanosleepOp: "nanosleep.u32 $0;",
}
"""PTX of each inline-asm op; `$i` are the LLVM inline-asm operands (results first)."""

STATE_SPACE: dict[int, str] = {0: "", 1: ".global", 3: ".shared"}

# Type suffix by value type: unsigned (`.u32`), signed (`.s32`) and bit-size (`.b32`) flavours.
_SUFFIX = {"u": {32: "u32", 64: "u64"}, "s": {32: "s32", 64: "s64"}, "b": {32: "b32", 64: "b64"}}
_BITWISE_KINDS = frozenset(
    {nvvm.AtomicKind.EXCH, nvvm.AtomicKind.AND, nvvm.AtomicKind.OR, nvvm.AtomicKind.XOR}
)
# atom/red `.op` of each kind where it differs from the kind's name (signedness is in the type).
_PTX_OP = {nvvm.AtomicKind.SMAX: "max", nvvm.AtomicKind.SMIN: "min"}

# LLVM inline-asm register constraint letters for NVPTX.
_CONSTRAINT = {32: "r", 64: "l"}
_MEMORY_CLOBBER = "~{memory}"


def type_suffix(value_type: Attribute, flavour: str = "u") -> str:
    """PTX type suffix: i32 -> u32 (s32 signed, b32 bitwise), i64 -> u64, f32 -> f32 (b32)."""
    if isinstance(value_type, Float32Type):
        return "b32" if flavour == "b" else "f32"
    assert isinstance(value_type, IntegerType)
    return _SUFFIX[flavour][value_type.width.data]


def _kind_flavour(kind: nvvm.AtomicKind) -> str:
    if kind in _BITWISE_KINDS:
        return "b"
    return "s" if kind in (nvvm.AtomicKind.SMAX, nvvm.AtomicKind.SMIN) else "u"


def constraint(value_type: Attribute) -> str:
    """Register constraint letter of a value type (pointers: `l`, 64-bit)."""
    if isinstance(value_type, Float32Type):
        return "f"
    if isinstance(value_type, llvm.LLVMPointerType):
        return "l"
    assert isinstance(value_type, IntegerType)
    return _CONSTRAINT[value_type.width.data]


def semantics(ordering: nvvm.MemOrder, scope: nvvm.MemScopeAttr | None) -> str:
    """`.acquire.gpu`, `.volatile`, or nothing for weak."""
    if ordering == nvvm.MemOrder.WEAK:
        return ""
    if scope is None:
        return f".{ordering.value}"
    return f".{ordering.value}.{scope.data.value}"


def state_space(ptr: SSAValue) -> str:
    assert isinstance(ptr.type, llvm.LLVMPointerType)
    return STATE_SPACE[address_space(ptr.type)]


def ptx_string(op: Operation) -> str:
    """The PTX instruction an nvvm op lowers to (with `$i` operand placeholders)."""
    template = PTX_TEMPLATES[type(op)]
    match op:
        case nvvm.LoadOp():
            fields = dict(
                sem=semantics(op.ordering.data, op.scope),
                space=state_space(op.ptr),
                type=type_suffix(op.res.type),
            )
        case nvvm.StoreOp():
            fields = dict(
                sem=semantics(op.ordering.data, op.scope),
                space=state_space(op.ptr),
                type=type_suffix(op.value.type),
            )
        case nvvm.AtomicOp() | nvvm.ReduceOp():
            fields = dict(
                sem=semantics(op.ordering.data, op.scope),
                space=state_space(op.ptr),
                kind=_PTX_OP.get(op.kind.data, op.kind.data.value),
                type=type_suffix(op.value.type, _kind_flavour(op.kind.data)),
            )
        case nvvm.AtomicCASOp():
            fields = dict(
                sem=semantics(op.ordering.data, op.scope),
                space=state_space(op.ptr),
                type=type_suffix(op.new.type, "b"),
            )
        case nvvm.FenceOp():
            fields = dict(sem=semantics(op.ordering.data, op.scope))
        case nvvm.FenceProxyAsyncOp():
            space = op.space.data
            fields = dict(space="" if space == nvvm.ProxySpace.ALL else f".{space.value}")
        case _:
            fields = {}
    return template.format(**fields)


def _is_memory_op(op: Operation) -> bool:
    return not isinstance(op, nvvm.NanosleepOp)


def inline_asm_for(op: Operation) -> llvm.InlineAsmOp:
    """The `llvm.inline_asm` replacing a memory op, fence or nanosleep."""
    outputs = [f"={constraint(r.type)}" for r in op.results]
    inputs = [constraint(o.type) for o in op.operands]
    clobbers = [_MEMORY_CLOBBER] if _is_memory_op(op) else []
    return llvm.InlineAsmOp(
        ptx_string(op),
        ",".join(outputs + inputs + clobbers),
        list(op.operands),
        [r.type for r in op.results],
        has_side_effects=True,
    )


# --------------------------------------------------------------------------------------------
# Patterns
# --------------------------------------------------------------------------------------------


class SpecialRegisterLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nvvm.SpecialRegisterOp, rewriter: PatternRewriter, /):
        intrinsic = SREG_INTRINSIC.format(sreg=op.SREG)
        rewriter.replace(op, llvm.CallIntrinsicOp(intrinsic, [], [op.res.type]))


class IntrinsicLowering(RewritePattern):
    @staticmethod
    def matches_op_class(cls: type) -> bool:  # the ops it may rewrite (pattern driver)
        return cls in INTRINSICS

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        intrinsic = INTRINSICS.get(type(op))
        if intrinsic is not None:
            rewriter.replace(op, llvm.CallIntrinsicOp(intrinsic, [], []))


class InlinePTXLowering(RewritePattern):
    @staticmethod
    def matches_op_class(cls: type) -> bool:  # the ops it may rewrite (pattern driver)
        return cls in PTX_TEMPLATES

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if type(op) in PTX_TEMPLATES:
            rewriter.replace(op, inline_asm_for(op))


NVVM_TO_LLVM_PATTERNS: tuple[RewritePattern, ...] = (
    SpecialRegisterLowering(),
    IntrinsicLowering(),
    InlinePTXLowering(),
)


@dataclass(frozen=True)
class ConvertNVVMToLLVMPass(ModulePass):
    """nvvm ops to llvm.call_intrinsic (sregs, barrier, PDL, trap) and inline PTX (the rest)."""

    name = "convert-nvvm-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        apply_patterns(op, NVVM_TO_LLVM_PATTERNS)
        reject_leftover_ops(op, self.name, "nvvm.")

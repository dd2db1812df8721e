"""`convert-nvvm-to-llvm`: the nvvm dialect to `llvm.call_intrinsic` and `llvm.inline_asm`.

- Special registers, the barriers (named ones too), `griddepcontrol.*`, `trap`, ldmatrix,
  mma.sync, shfl.sync, cp.async and mbarrier.init become NVVM intrinsics (`INTRINSICS`: names
  that LLVM 22 lowers).
- Every ordered memory operation (ld, st, atom, atom.cas, red, fence, fence.proxy.async),
  nanosleep, wgmma (which LLVM 22 cannot select), the mbarrier arrivals and waits, the bulk
  copies (tensor ones, TMA, and 1-D ones) and their groups, setmaxnreg, the packing
  conversions and the approximate math become inline PTX. The memory operations and fences
  also clobber `memory`, so LLVM moves no load or store across them. LLVM 22 drops ordering
  and scope from `atomicrmw` for NVPTX, so inline PTX is the one way to get exactly the
  instruction asked for.

Every inline PTX instruction of tilesync is spelled once, here, in `PTX_TEMPLATES`; the pieces
filled in are the semantics (`.acquire.gpu`, `.volatile`, nothing for weak), the state space
from the pointer's address space (`.global` 1, `.shared` 3, nothing for generic 0), the type
suffix from the value type, and the operand numbers. Pointers are passed in 64-bit registers
(`l`), which holds for every address space under the default nvptx64 data layout (no short
shared pointers).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import llvm
from xdsl.dialects.builtin import Float32Type, IntegerType, ModuleOp, i32
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from tilesync.compat.op_templates import create
from tilesync.compat.rewrite_driver import apply_patterns
from tilesync.dialects import nvvm
from tilesync.dialects.llvmx import address_space
from tilesync.lowering.llvm_conversion import reject_leftover_ops

# --------------------------------------------------------------------------------------------
# The tables: every intrinsic name and every PTX instruction string, once.
# --------------------------------------------------------------------------------------------

INTRINSICS: dict[type[Operation], str] = {
    nvvm.Barrier0Op: "llvm.nvvm.barrier0",
    nvvm.Barrier0OrOp: "llvm.nvvm.barrier0.or",
    nvvm.GridDepControlWaitOp: "llvm.nvvm.griddepcontrol.wait",
    nvvm.GridDepControlLaunchDependentsOp: "llvm.nvvm.griddepcontrol.launch.dependents",
    nvvm.TrapOp: "llvm.trap",
    nvvm.LdMatrixOp: "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x{num}{trans}.b16",
    nvvm.MmaSyncOp: "llvm.nvvm.mma.m16n8k16.row.col.{types}",
    nvvm.ShflSyncOp: "llvm.nvvm.shfl.sync.{kind}.{type}",
    nvvm.CpAsyncOp: "llvm.nvvm.cp.async.{cache}.shared.global.{size}{zero_fill}",
    nvvm.CpAsyncCommitGroupOp: "llvm.nvvm.cp.async.commit.group",
    nvvm.CpAsyncWaitGroupOp: "llvm.nvvm.cp.async.wait.group",
    nvvm.MBarrierInitOp: "llvm.nvvm.mbarrier.init.shared",
    nvvm.BarrierSyncOp: "llvm.nvvm.barrier.cta.sync.aligned.count",
    nvvm.ClusterArriveOp: "llvm.nvvm.barrier.cluster.arrive",
    nvvm.ClusterWaitOp: "llvm.nvvm.barrier.cluster.wait",
}
"""The nvvm ops lowered to an intrinsic call: the name (fields from the op's properties and
types), the op's operands as arguments (then the immediates of IMMEDIATE_ARGS), its results."""

IMMEDIATE_ARGS: dict[type[Operation], tuple[str, ...]] = {
    nvvm.CpAsyncWaitGroupOp: ("n",),
    nvvm.BarrierSyncOp: ("barrier_id", "count"),
}
"""Integer properties an intrinsic takes as trailing i32 constant arguments, in order. An
optional one that is absent is skipped: the op carries that argument as an operand instead
(a barrier id computed at run time, the intrinsic's first argument, as operands come first)."""

# mma.sync name suffix: the D and C types for f16 inputs, the input type for bf16 (LLVM's names).
_MMA_TYPES = {nvvm.HalfType.F16: "f32.f32", nvvm.HalfType.BF16: "bf16"}

SREG_INTRINSIC = "llvm.nvvm.read.ptx.sreg.{sreg}"

PTX_TEMPLATES: dict[type[Operation] | tuple[type[Operation], str], str] = {
    nvvm.LoadOp: "ld{sem}{space}.{type} $0, [$1];",
    nvvm.LoadL2PairOp: "ld.global.cg.v2.b64 {{$0, $1}}, [$2];",
    nvvm.StoreOp: "st{sem}{space}.{type} [$0], $1;",
    nvvm.AtomicOp: "atom{sem}{space}.{kind}.{type} $0, [$1], $2;",
    nvvm.AtomicCASOp: "atom{sem}{space}.cas.{type} $0, [$1], $2, $3;",
    nvvm.ReduceOp: "red{sem}{space}.{kind}.{type} [$0], $1;",
    nvvm.FenceOp: "fence{sem};",
    nvvm.FenceProxyAsyncOp: "fence.proxy.async{space};",
    nvvm.NanosleepOp: "nanosleep.u32 $0;",
    nvvm.WgmmaFenceAlignedOp: "wgmma.fence.sync.aligned;",
    nvvm.WgmmaCommitGroupSyncAlignedOp: "wgmma.commit_group.sync.aligned;",
    nvvm.WgmmaWaitGroupSyncAlignedOp: "wgmma.wait_group.sync.aligned {n};",
    nvvm.WgmmaFenceRegistersOp: "wgmma.fence.sync.aligned;",
    # The accumulators are tied to the outputs; scale-d comes in a register, as a predicate;
    # imm-trans-b reads B N-major.
    nvvm.WgmmaMmaAsyncOp: (
        "{{\n.reg .pred p;\nsetp.ne.b32 p, ${scale_d}, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{type}.{type} {{{outputs}}}, ${desc_a}, "
        "${desc_b}, p, 1, 1, 0, {trans_b};\n}}"
    ),
    # A in four registers of this thread; imm-trans-b reads B N-major.
    nvvm.WgmmaMmaAsyncRegAOp: (
        "{{\n.reg .pred p;\nsetp.ne.b32 p, ${scale_d}, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{type}.{type} {{{outputs}}}, {{{a}}}, "
        "${desc_b}, p, 1, 1, {trans_b};\n}}"
    ),
    nvvm.MBarrierArriveOp: "mbarrier.arrive{expect_tx}.shared::cta.b64 _, [$0]{tx};",
    # On the barrier at the same offset in CTA $1 of the cluster (release at CTA scope, the
    # default, as CUTLASS's ClusterBarrier: a cluster-scope release would also wait for this
    # thread's earlier global stores, e.g. an epilogue's, on every k-step).
    (nvvm.MBarrierArriveOp, "cta"): (
        "{{\n.reg .b32 a, r;\ncvt.u32.u64 a, $0;\nmapa.shared::cluster.u32 r, a, $1;\n"
        "mbarrier.arrive.shared::cluster.b64 _, [r];\n}}"
    ),
    # The same, releasing at cluster scope (a queue entry's writes or reads in the peer's
    # shared memory happen before the peer's acquire of the phase).
    (nvvm.MBarrierArriveOp, "cta release_cluster"): (
        "{{\n.reg .b32 a, r;\ncvt.u32.u64 a, $0;\nmapa.shared::cluster.u32 r, a, $1;\n"
        "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [r];\n}}"
    ),
    # The same offset in CTA $2 of the cluster.
    (nvvm.LoadOp, "cta"): (
        "{{\n.reg .b32 a, r;\ncvt.u32.u64 a, $1;\nmapa.shared::cluster.u32 r, a, $2;\n"
        "ld{sem}.shared::cluster.{type} $0, [r];\n}}"
    ),
    nvvm.MBarrierTryWaitParityOp: (
        "{{\n.reg .pred p;\nmbarrier.try_wait.parity{sem}.shared::cta.b64 p, [$1], $2;\n"
        "selp.b32 $0, 1, 0, p;\n}}"
    ),
    nvvm.BarWarpSyncOp: "bar.warp.sync $0;",
    nvvm.MapaOp: "mapa.shared::cluster.u64 $0, $1, $2;",
    nvvm.FenceMBarrierInitOp: "fence.mbarrier_init.release.cluster;",
    nvvm.CpAsyncBulkTensorLoadOp: (
        "cp.async.bulk.tensor.{rank}d.shared::cluster.global.{mode}.mbarrier::complete_tx::"
        "bytes{multicast} [$0], [$2, {{{coords}}}], [$1]{offsets}{mask};"
    ),
    nvvm.CpAsyncBulkTensorStoreOp: (
        "cp.async.bulk.tensor.{rank}d.global.shared::cta.tile.bulk_group [$0, {{{coords}}}], "
        "[${src}];"
    ),
    nvvm.CpAsyncBulkPrefetchTensorOp: (
        "cp.async.bulk.prefetch.tensor.{rank}d.L2.global.tile [$0, {{{coords}}}];"
    ),
    nvvm.CpAsyncBulkLoadOp: (
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1], $2, [$3];"
    ),
    nvvm.CpAsyncBulkStoreOp: "cp.async.bulk.global.shared::cta.bulk_group [$0], [$1], $2;",
    nvvm.CpAsyncBulkCommitGroupOp: "cp.async.bulk.commit_group;",
    nvvm.CpAsyncBulkWaitGroupReadOp: "cp.async.bulk.wait_group.read {n};",
    nvvm.CpAsyncBulkWaitGroupOp: "cp.async.bulk.wait_group {n};",
    nvvm.PrefetchTensorMapOp: "prefetch.tensormap [$0];",
    nvvm.SetMaxNRegOp: "setmaxnreg.{action}.sync.aligned.u32 {registers};",
    nvvm.CvtPackOp: "cvt.rn.{type}x2.f32 $0, $1, $2;",
    nvvm.TanhApproxOp: "tanh.approx.f32 $0, $1;",
    nvvm.Ex2ApproxFtzOp: "ex2.approx.ftz.f32 $0, $1;",
    nvvm.RsqrtApproxOp: "rsqrt.approx.f32 $0, $1;",
    nvvm.BarrierRedOrOp: (
        "{{\n.reg .pred p, q;\nsetp.ne.b32 p, $1, 0;\n"
        "bar.red.or.pred q, {barrier_id}, {count}, p;\nselp.b32 $0, 1, 0, q;\n}}"
    ),
}
"""PTX of each inline-asm op; `$i` are the LLVM inline-asm operands (results first). An
(op, variant) key spells a variant of the op that is another instruction sequence."""

PURE_PTX: frozenset[type[Operation]] = frozenset(
    {nvvm.CvtPackOp, nvvm.TanhApproxOp, nvvm.Ex2ApproxFtzOp, nvvm.RsqrtApproxOp, nvvm.MapaOp}
)
"""Inline-asm ops that compute a value only: no side effects, no memory clobber."""
_NO_MEMORY_CLOBBER = frozenset({nvvm.NanosleepOp, nvvm.WgmmaMmaAsyncOp,
                                nvvm.WgmmaMmaAsyncRegAOp}) | PURE_PTX

STATE_SPACE: dict[int, str] = {0: "", 1: ".global", 3: ".shared"}

# Type suffix by value type: unsigned (`.u32`), signed (`.s32`) and bit-size (`.b32`) flavours.
_SUFFIX = {"u": {32: "u32", 64: "u64"}, "s": {32: "s32", 64: "s64"}, "b": {32: "b32", 64: "b64"},
           "i": {32: "i32", 64: "i64"}}
_BITWISE_KINDS = frozenset(
    {nvvm.AtomicKind.EXCH, nvvm.AtomicKind.AND, nvvm.AtomicKind.OR, nvvm.AtomicKind.XOR}
)
# atom/red `.op` of each kind where it differs from the kind's name (signedness is in the type).
_PTX_OP = {nvvm.AtomicKind.SMAX: "max", nvvm.AtomicKind.SMIN: "min"}

# LLVM inline-asm register constraint letters for NVPTX.
_CONSTRAINT = {16: "h", 32: "r", 64: "l"}
_MEMORY_CLOBBER = "~{memory}"


def type_suffix(value_type: Attribute, flavour: str = "u") -> str:
    """PTX type suffix: i32 -> u32 (s32 signed, b32 bitwise), i64 -> u64, f32 -> f32 (b32).
    Flavour "i" spells LLVM intrinsic suffixes: i32, i64, f32."""
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


def _template_key(op: Operation) -> type[Operation] | tuple[type[Operation], str]:
    if isinstance(op, nvvm.MBarrierArriveOp) and op.release_cluster is not None:
        return (type(op), "cta release_cluster")
    if isinstance(op, nvvm.MBarrierArriveOp | nvvm.LoadOp) and op.cta is not None:
        return (type(op), "cta")
    return type(op)


def ptx_string(op: Operation) -> str:
    """The PTX instruction an nvvm op lowers to (with `$i` operand placeholders)."""
    template = PTX_TEMPLATES[_template_key(op)]
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
        case nvvm.WgmmaWaitGroupSyncAlignedOp():
            fields = dict(n=op.n.value.data)
        case nvvm.WgmmaMmaAsyncOp():
            count = len(op.acc)  # outputs $0 .. $count-1, then the operands in order
            fields = dict(n=op.n.value.data, type=op.type.data.value,
                          outputs=", ".join(f"${i}" for i in range(count)),
                          desc_a=count, desc_b=count + 1, scale_d=count + 2,
                          trans_b=int(op.trans_b is not None))
        case nvvm.WgmmaMmaAsyncRegAOp():
            count = len(op.acc)  # outputs, then A's 4 registers, desc_b, scale_d
            fields = dict(n=op.n.value.data, type=op.type.data.value,
                          outputs=", ".join(f"${i}" for i in range(count)),
                          a=", ".join(f"${count + i}" for i in range(4)),
                          desc_b=count + 4, scale_d=count + 5,
                          trans_b=int(op.trans_b is not None))
        case nvvm.MBarrierArriveOp():
            with_tx = op.tx is not None
            fields = dict(expect_tx=".expect_tx" if with_tx else "",
                          tx=", $1" if with_tx else "")
        case nvvm.MBarrierTryWaitParityOp():
            fields = dict(sem=".acquire.cluster" if op.acquire_cluster is not None else "")
        case nvvm.CpAsyncBulkTensorLoadOp():
            rank, offsets = len(op.coords), len(op.im2col)
            first_offset = 3 + rank
            offset_list = ", ".join(f"${first_offset + i}" for i in range(offsets))
            fields = dict(rank=rank, coords=", ".join(f"${3 + i}" for i in range(rank)),
                          mode="im2col" if offsets else "tile",
                          offsets=f", {{{offset_list}}}" if offsets else "",
                          multicast=".multicast::cluster" if op.multicast is not None else "",
                          mask=f", ${first_offset + offsets}" if op.multicast is not None
                          else "")
        case nvvm.CpAsyncBulkTensorStoreOp():
            rank = len(op.coords)
            fields = dict(rank=rank, coords=", ".join(f"${1 + i}" for i in range(rank)),
                          src=1 + rank)
        case nvvm.CpAsyncBulkPrefetchTensorOp():
            rank = len(op.coords)
            fields = dict(rank=rank, coords=", ".join(f"${1 + i}" for i in range(rank)))
        case nvvm.CpAsyncBulkWaitGroupReadOp() | nvvm.CpAsyncBulkWaitGroupOp():
            fields = dict(n=op.n.value.data)
        case nvvm.SetMaxNRegOp():
            fields = dict(action=op.action.data.value, registers=op.registers.value.data)
        case nvvm.CvtPackOp():
            fields = dict(type=op.type.data.value)
        case nvvm.BarrierRedOrOp():
            fields = dict(barrier_id=op.barrier_id.value.data, count=op.count.value.data)
        case _:
            fields = {}
    return template.format(**fields)


def constraints(op: Operation) -> str:
    """LLVM inline-asm constraints: `=` outputs (one per struct member), inputs (a wgmma's
    accumulators tied to the outputs), and the memory clobber of memory ops and fences."""
    if isinstance(op, nvvm.WgmmaMmaAsyncOp):
        count = len(op.acc)
        parts = ["=f"] * count + ["l", "l", "r"] + [str(i) for i in range(count)]
    elif isinstance(op, nvvm.WgmmaFenceRegistersOp):
        count = len(op.values)
        parts = [f"={constraint(v.type)}" for v in op.values] + [str(i) for i in range(count)]
    elif isinstance(op, nvvm.LoadL2PairOp):
        parts = ["=l", "=l", "l"]
    elif isinstance(op, nvvm.WgmmaMmaAsyncRegAOp):
        count = len(op.acc)
        parts = ["=f"] * count + ["r"] * 4 + ["l", "r"] + [str(i) for i in range(count)]
    else:
        parts = [f"={constraint(r.type)}" for r in op.results]
        parts += [constraint(o.type) for o in op.operands]
    if type(op) not in _NO_MEMORY_CLOBBER:
        parts.append(_MEMORY_CLOBBER)
    return ",".join(parts)


# A kernel has hundreds of these calls, few distinct: the properties of the first op built
# for a key (they are a function of it) are reused, without the generic constructor.
_PROPERTIES: dict[tuple, dict[str, Attribute]] = {}


def _built_like(key: tuple, operands: list[SSAValue], result_types: list[Attribute],
                build) -> Operation:
    properties = _PROPERTIES.get(key)
    if properties is None:
        op = build()
        _PROPERTIES[key] = dict(op.properties)
        return op
    return create(key[0], operands, result_types, properties)


def inline_asm_for(op: Operation) -> llvm.InlineAsmOp:
    """The `llvm.inline_asm` replacing an op of PTX_TEMPLATES."""
    text, constraint_text = ptx_string(op), constraints(op)
    side_effects = type(op) not in PURE_PTX
    operands, result_types = list(op.operands), [r.type for r in op.results]
    return _built_like(  # type: ignore[return-value]
        (llvm.InlineAsmOp, text, constraint_text, side_effects), operands, result_types,
        lambda: llvm.InlineAsmOp(text, constraint_text, operands, result_types,
                                 has_side_effects=side_effects))


def intrinsic_call(name: str, args: list[SSAValue],
                   result_types: list[Attribute]) -> llvm.CallIntrinsicOp:
    return _built_like(  # type: ignore[return-value]
        (llvm.CallIntrinsicOp, name, len(args)), args, result_types,
        lambda: llvm.CallIntrinsicOp(name, args, result_types))


def intrinsic_name(op: Operation) -> str:
    """The NVVM intrinsic an op of INTRINSICS calls."""
    template = INTRINSICS[type(op)]
    match op:
        case nvvm.LdMatrixOp():
            fields = dict(num=op.num.value.data, trans=".trans" if op.trans else "")
        case nvvm.MmaSyncOp():
            fields = dict(types=_MMA_TYPES[op.type.data])
        case nvvm.ShflSyncOp():
            fields = dict(kind=op.kind.data.value, type=type_suffix(op.val.type, "i"))
        case nvvm.CpAsyncOp():
            fields = dict(cache=op.cache.data.value, size=op.size.value.data,
                          zero_fill=".s" if op.src_size is not None else "")
        case _:
            fields = {}
    return template.format(**fields)


# --------------------------------------------------------------------------------------------
# Patterns
# --------------------------------------------------------------------------------------------


class SpecialRegisterLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: nvvm.SpecialRegisterOp, rewriter: PatternRewriter, /):
        intrinsic = SREG_INTRINSIC.format(sreg=op.SREG)
        rewriter.replace(op, intrinsic_call(intrinsic, [], [op.res.type]))


class IntrinsicLowering(RewritePattern):
    @staticmethod
    def matches_op_class(cls: type) -> bool:  # the ops it may rewrite (pattern driver)
        return cls in INTRINSICS

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if type(op) not in INTRINSICS:
            return
        args = list(op.operands)
        for prop in IMMEDIATE_ARGS.get(type(op), ()):
            if prop not in op.properties:
                continue
            constant = llvm.ConstantOp(op.properties[prop], i32)
            rewriter.insert(constant)
            args.append(constant.result)
        rewriter.replace(op, intrinsic_call(intrinsic_name(op), args,
                                            [r.type for r in op.results]))


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

"""The `nvvm` dialect: the NVVM/PTX operations tilesync needs, named after upstream MLIR's nvvm.

Special registers (`nvvm.read.ptx.sreg.*`), the block barriers, grid-dependency control (PDL),
nanosleep, trap; the memory operations of the PTX memory consistency model with explicit
ordering and scope: `nvvm.ld`, `nvvm.st`, `nvvm.atom`, `nvvm.atom.cas`, `nvvm.red`,
`nvvm.fence` and `nvvm.fence.proxy.async`; the tensor-core and copy instructions of the tile
lowering: `nvvm.ldmatrix`, `nvvm.mma.sync`, `nvvm.shfl.sync`, `nvvm.cp.async.*`,
`nvvm.wgmma.*`; Hopper's transaction barriers (`nvvm.mbarrier.*`), bulk tensor copies (TMA:
`nvvm.cp.async.bulk.tensor.*`, `nvvm.cp.async.bulk.*` groups), named barriers
(`nvvm.barrier.sync`) and register reallocation (`nvvm.setmaxnreg`); and `nvvm.cvt.pack`,
`nvvm.tanh.approx.f32`, `nvvm.ex2.approx.ftz.f32`.
`convert-nvvm-to-llvm` lowers each to its intrinsic or to inline PTX, so what is written here
is exactly the instruction that runs.

Pointers are `!llvm.ptr` in address space 0 (generic), 1 (global) or 3 (shared).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I32,
    Float16Type,
    IntAttr,
    IntegerAttr,
    IntegerType,
    UnitAttr,
    VectorType,
    f32,
    i32,
    i64,
)
from xdsl.dialects.llvm import LLVMPointerType, LLVMStructType
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Dialect, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    AnyAttr,
    AttrSizedOperandSegments,
    EqAttrConstraint,
    IRDLOperation,
    VarConstraint,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

from tilesync.contract import NAMED_BARRIERS, SHARED_CLUSTER_ADDRESS_SPACE
from tilesync.dialects.llvmx import address_space

# --------------------------------------------------------------------------------------------
# Attributes
# --------------------------------------------------------------------------------------------


class MemOrder(StrEnum):
    """Memory ordering semantics of PTX (`.sem`), plus `weak`/`volatile` for plain accesses."""

    WEAK = "weak"
    RELAXED = "relaxed"
    ACQUIRE = "acquire"
    RELEASE = "release"
    ACQ_REL = "acq_rel"
    VOLATILE = "volatile"
    SC = "sc"


class MemScope(StrEnum):
    """PTX scopes (`.scope`)."""

    CTA = "cta"
    CLUSTER = "cluster"
    GPU = "gpu"
    SYS = "sys"


class AtomicKind(StrEnum):
    """The operation of `atom`/`red` (`.op`). `max`/`min` compare unsigned, `smax`/`smin` signed."""

    ADD = "add"
    EXCH = "exch"
    MAX = "max"
    MIN = "min"
    SMAX = "smax"
    SMIN = "smin"
    INC = "inc"
    DEC = "dec"
    AND = "and"
    OR = "or"
    XOR = "xor"


class ProxySpace(StrEnum):
    """State space of `fence.proxy.async`; `all` (no suffix in PTX) covers every state space."""

    ALL = "all"
    SHARED_CTA = "shared::cta"
    SHARED_CLUSTER = "shared::cluster"
    GLOBAL = "global"


class HalfType(StrEnum):
    """The 16-bit float type of tensor-core operands and packed conversions."""

    F16 = "f16"
    BF16 = "bf16"


class CpAsyncCache(StrEnum):
    """Cache operator of `cp.async`: `ca` caches in L1 and L2, `cg` in L2 only (16 bytes)."""

    CA = "ca"
    CG = "cg"


class ShflKind(StrEnum):
    """Lane selection of `shfl.sync`."""

    BFLY = "bfly"
    UP = "up"
    DOWN = "down"
    IDX = "idx"


@irdl_attr_definition
class MemOrderAttr(EnumAttribute[MemOrder], SpacedOpaqueSyntaxAttribute):
    name = "nvvm.mem_order"


@irdl_attr_definition
class MemScopeAttr(EnumAttribute[MemScope], SpacedOpaqueSyntaxAttribute):
    name = "nvvm.mem_scope"


@irdl_attr_definition
class AtomicKindAttr(EnumAttribute[AtomicKind], SpacedOpaqueSyntaxAttribute):
    name = "nvvm.atomic_kind"


@irdl_attr_definition
class ProxySpaceAttr(EnumAttribute[ProxySpace], SpacedOpaqueSyntaxAttribute):
    name = "nvvm.proxy_space"


@irdl_attr_definition
class HalfTypeAttr(EnumAttribute[HalfType], SpacedOpaqueSyntaxAttribute):
    name = "nvvm.half_type"


@irdl_attr_definition
class CpAsyncCacheAttr(EnumAttribute[CpAsyncCache], SpacedOpaqueSyntaxAttribute):
    name = "nvvm.cp_async_cache"


@irdl_attr_definition
class ShflKindAttr(EnumAttribute[ShflKind], SpacedOpaqueSyntaxAttribute):
    name = "nvvm.shfl_kind"


# --------------------------------------------------------------------------------------------
# Shared checks
# --------------------------------------------------------------------------------------------

ADDRESS_SPACES = (0, 1, 3)
"""Generic, global, shared."""

LD_ORDERS = frozenset({MemOrder.WEAK, MemOrder.RELAXED, MemOrder.ACQUIRE, MemOrder.VOLATILE})
ST_ORDERS = frozenset({MemOrder.WEAK, MemOrder.RELAXED, MemOrder.RELEASE, MemOrder.VOLATILE})
ATOM_ORDERS = frozenset({MemOrder.RELAXED, MemOrder.ACQUIRE, MemOrder.RELEASE, MemOrder.ACQ_REL})
RED_ORDERS = frozenset({MemOrder.RELAXED, MemOrder.RELEASE})
FENCE_ORDERS = frozenset({MemOrder.SC, MemOrder.ACQ_REL})
SCOPED_ORDERS = frozenset({MemOrder.RELAXED, MemOrder.ACQUIRE, MemOrder.RELEASE})
"""Orderings of ld/st that take a scope; weak and volatile take none."""

# Value types allowed per atomic kind (PTX: add u32/u64/f32, exch b32/b64, min/max u32/u64,
# inc/dec u32, and/or/xor b32/b64). max/min are unsigned (u32/u64), smax/smin signed (s32/s64).
ATOM_TYPES: dict[AtomicKind, tuple[Attribute, ...]] = {
    AtomicKind.ADD: (i32, i64, f32),
    AtomicKind.EXCH: (i32, i64, f32),
    AtomicKind.MAX: (i32, i64),
    AtomicKind.MIN: (i32, i64),
    AtomicKind.SMAX: (i32, i64),
    AtomicKind.SMIN: (i32, i64),
    AtomicKind.INC: (i32,),
    AtomicKind.DEC: (i32,),
    AtomicKind.AND: (i32, i64),
    AtomicKind.OR: (i32, i64),
    AtomicKind.XOR: (i32, i64),
}

_ValueT = EqAttrConstraint(i32) | EqAttrConstraint(i64) | EqAttrConstraint(f32)


def _verify_ptr(op: IRDLOperation, ptr: SSAValue) -> None:
    assert isinstance(ptr.type, LLVMPointerType)
    space = address_space(ptr.type)
    if space not in ADDRESS_SPACES:
        raise VerifyException(
            f"'{op.name}' pointer must be in address space 0 (generic), 1 (global) or "
            f"3 (shared), got {space}"
        )


def _verify_order(op: IRDLOperation, order: MemOrder, allowed: frozenset[MemOrder]) -> None:
    if order not in allowed:
        names = ", ".join(o.value for o in MemOrder if o in allowed)
        raise VerifyException(
            f"'{op.name}' cannot have ordering '{order.value}' (expected one of: {names})"
        )


def _verify_ldst_scope(op: IRDLOperation, order: MemOrder, scope: MemScopeAttr | None) -> None:
    if order in SCOPED_ORDERS and scope is None:
        raise VerifyException(f"'{op.name}' with ordering '{order.value}' needs a scope")
    if order not in SCOPED_ORDERS and scope is not None:
        raise VerifyException(f"'{op.name}' with ordering '{order.value}' takes no scope")


def _verify_atomic_type(op: IRDLOperation, kind: AtomicKind, value_type: Attribute) -> None:
    if value_type not in ATOM_TYPES[kind]:
        names = ", ".join(str(t) for t in ATOM_TYPES[kind])
        raise VerifyException(
            f"'{op.name}' {kind.value} does not support type {value_type} (expected {names})"
        )


def _scope_for(order: str, scope: str) -> MemScopeAttr | None:
    return MemScopeAttr(MemScope(scope)) if MemOrder(order) in SCOPED_ORDERS else None


# --------------------------------------------------------------------------------------------
# Special registers
# --------------------------------------------------------------------------------------------


class SpecialRegisterOp(IRDLOperation):
    """Base of the `nvvm.read.ptx.sreg.*` ops: no operands, one integer result."""

    SREG: ClassVar[str]
    """Register name without `%`, e.g. `tid.x`."""
    RESULT_TYPE: ClassVar[Attribute] = i32

    res = result_def(IntegerType)

    assembly_format = "attr-dict `:` type($res)"

    def __init__(self):
        super().__init__(result_types=[self.RESULT_TYPE])

    def verify_(self) -> None:
        if self.res.type != self.RESULT_TYPE:
            raise VerifyException(
                f"'{self.name}' must return {self.RESULT_TYPE}, got {self.res.type}"
            )


def _sreg(class_name: str, sreg: str, result_type: Attribute = i32) -> type[SpecialRegisterOp]:
    cls = type(
        class_name,
        (SpecialRegisterOp,),
        {
            "name": f"nvvm.read.ptx.sreg.{sreg}",
            "SREG": sreg,
            "RESULT_TYPE": result_type,
            "__doc__": f"Reads the PTX special register `%{sreg}`.",
            "__module__": __name__,
            "__annotations__": {"SREG": ClassVar[str], "RESULT_TYPE": ClassVar[Attribute]},
        },
    )
    return irdl_op_definition(cls)


ThreadIdXOp = _sreg("ThreadIdXOp", "tid.x")
ThreadIdYOp = _sreg("ThreadIdYOp", "tid.y")
ThreadIdZOp = _sreg("ThreadIdZOp", "tid.z")
BlockDimXOp = _sreg("BlockDimXOp", "ntid.x")
BlockDimYOp = _sreg("BlockDimYOp", "ntid.y")
BlockDimZOp = _sreg("BlockDimZOp", "ntid.z")
BlockIdXOp = _sreg("BlockIdXOp", "ctaid.x")
BlockIdYOp = _sreg("BlockIdYOp", "ctaid.y")
BlockIdZOp = _sreg("BlockIdZOp", "ctaid.z")
GridDimXOp = _sreg("GridDimXOp", "nctaid.x")
GridDimYOp = _sreg("GridDimYOp", "nctaid.y")
GridDimZOp = _sreg("GridDimZOp", "nctaid.z")
LaneIdOp = _sreg("LaneIdOp", "laneid")
WarpIdOp = _sreg("WarpIdOp", "warpid")
SmIdOp = _sreg("SmIdOp", "smid")
NSmIdOp = _sreg("NSmIdOp", "nsmid")
GlobalTimerOp = _sreg("GlobalTimerOp", "globaltimer", i64)

SPECIAL_REGISTERS: dict[str, type[SpecialRegisterOp]] = {
    op.SREG: op
    for op in (
        ThreadIdXOp, ThreadIdYOp, ThreadIdZOp, BlockDimXOp, BlockDimYOp, BlockDimZOp,
        BlockIdXOp, BlockIdYOp, BlockIdZOp, GridDimXOp, GridDimYOp, GridDimZOp,
        LaneIdOp, WarpIdOp, SmIdOp, NSmIdOp, GlobalTimerOp,
    )
}


def read_sreg(name: str) -> SpecialRegisterOp:
    """A new op reading special register `name` ("tid.x", "ctaid.y", "globaltimer", ...)."""
    if name not in SPECIAL_REGISTERS:
        raise ValueError(
            f"unknown special register '{name}' (known: {', '.join(SPECIAL_REGISTERS)})"
        )
    return SPECIAL_REGISTERS[name]()


# --------------------------------------------------------------------------------------------
# Control
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class Barrier0Op(IRDLOperation):
    """`bar.sync 0`: all threads of the block (CTA) wait here; orders their memory at CTA scope."""

    name = "nvvm.barrier0"
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


@irdl_op_definition
class Barrier0OrOp(IRDLOperation):
    """`bar.red.or.pred`: a block barrier that also ORs a predicate over the block's threads;
    every thread gets 1 when any thread passed a non-zero `pred`."""

    name = "nvvm.barrier0.or"
    pred = operand_def(i32)
    res = result_def(i32)
    assembly_format = "$pred attr-dict"

    def __init__(self, pred: SSAValue):
        super().__init__(operands=[pred], result_types=[i32])


@irdl_op_definition
class GridDepControlWaitOp(IRDLOperation):
    """`griddepcontrol.wait` (sm_90): wait until the prerequisite grids finished and flushed."""

    name = "nvvm.griddepcontrol.wait"
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


@irdl_op_definition
class GridDepControlLaunchDependentsOp(IRDLOperation):
    """`griddepcontrol.launch_dependents` (sm_90): allow the dependent grid to be scheduled."""

    name = "nvvm.griddepcontrol.launch_dependents"
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


@irdl_op_definition
class TrapOp(IRDLOperation):
    """`trap`: abort the kernel with an error."""

    name = "nvvm.trap"
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


@irdl_op_definition
class BarWarpSyncOp(IRDLOperation):
    """`bar.warp.sync mask`: the warp's threads in `mask` meet; their earlier memory accesses
    are ordered before what each does after (a lane's release then covers the warp's)."""

    name = "nvvm.bar.warp.sync"
    mask = operand_def(i32)
    assembly_format = "$mask attr-dict `:` type($mask)"

    def __init__(self, mask: SSAValue):
        super().__init__(operands=[mask])


@irdl_op_definition
class NanosleepOp(IRDLOperation):
    """`nanosleep.u32 d`: suspend the thread for about `d` nanoseconds (at most 1 ms)."""

    name = "nvvm.nanosleep"
    duration = operand_def(i32)
    assembly_format = "$duration attr-dict `:` type($duration)"

    def __init__(self, duration: SSAValue):
        super().__init__(operands=[duration])


# --------------------------------------------------------------------------------------------
# Fences
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class FenceOp(IRDLOperation):
    """`fence.{sc,acq_rel}.{cta,cluster,gpu,sys}`."""

    name = "nvvm.fence"
    ordering = prop_def(MemOrderAttr)
    scope = prop_def(MemScopeAttr)
    assembly_format = "$ordering `,` $scope attr-dict"

    def __init__(self, ordering: str, scope: str):
        super().__init__(
            properties={
                "ordering": MemOrderAttr(MemOrder(ordering)),
                "scope": MemScopeAttr(MemScope(scope)),
            }
        )

    def verify_(self) -> None:
        _verify_order(self, self.ordering.data, FENCE_ORDERS)


@irdl_op_definition
class FenceProxyAsyncOp(IRDLOperation):
    """`fence.proxy.async{.space}`: orders generic-proxy and async-proxy (TMA) accesses."""

    name = "nvvm.fence.proxy.async"
    space = prop_def(ProxySpaceAttr)
    assembly_format = "$space attr-dict"

    def __init__(self, space: str = "shared::cta"):
        """`space`: "shared::cta", "shared::cluster", "global", or "" (or "all") for all."""
        space_enum = ProxySpace(space) if space else ProxySpace.ALL
        super().__init__(properties={"space": ProxySpaceAttr(space_enum)})


# --------------------------------------------------------------------------------------------
# Memory operations
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class LoadOp(IRDLOperation):
    """`ld{.weak,.volatile,.relaxed.scope,.acquire.scope}{.space}.type d, [ptr]`. With `cta`,
    `ptr` is in shared memory and the load reads the same offset in CTA `cta` of the cluster
    (`mapa`, then `ld.shared::cluster`)."""

    name = "nvvm.ld"
    ptr = operand_def(LLVMPointerType)
    cta = opt_operand_def(i32)
    res = result_def(_ValueT)
    ordering = prop_def(MemOrderAttr)
    scope = opt_prop_def(MemScopeAttr)
    assembly_format = (
        "$ordering (`,` $scope^)? $ptr (`cta` $cta^)? attr-dict `:` type($ptr) `->` type($res)"
    )

    def __init__(
        self, ptr: SSAValue, result_type: Attribute, ordering: str, scope: str = "gpu",
        cta: SSAValue | None = None,
    ):
        super().__init__(
            operands=[ptr, [] if cta is None else [cta]],
            result_types=[result_type],
            properties={
                "ordering": MemOrderAttr(MemOrder(ordering)),
                "scope": _scope_for(ordering, scope),
            },
        )

    def verify_(self) -> None:
        _verify_order(self, self.ordering.data, LD_ORDERS)
        _verify_ldst_scope(self, self.ordering.data, self.scope)
        _verify_ptr(self, self.ptr)
        if self.cta is not None:
            _verify_shared_ptr(self, self.ptr, "pointer into a peer CTA")


@irdl_op_definition
class LoadL2PairOp(IRDLOperation):
    """`ld.global.cg.v2.b64 {lo, hi}, [ptr]`: 16 bytes as two i64 (a struct), a weak load
    cached at L2 only (`.cg`): no line in this SM's L1 answers it."""

    name = "nvvm.ld.global.cg.v2"
    ptr = operand_def(LLVMPointerType)
    res = result_def(LLVMStructType)
    assembly_format = "$ptr attr-dict `:` type($ptr) `->` type($res)"

    PAIR: ClassVar = LLVMStructType.from_type_list([i64, i64])

    def __init__(self, ptr: SSAValue):
        super().__init__(operands=[ptr], result_types=[self.PAIR])

    def verify_(self) -> None:
        if self.res.type != self.PAIR:
            raise VerifyException(f"'{self.name}' yields {self.PAIR}, got {self.res.type}")
        if address_space(self.ptr.type) != 1:
            raise VerifyException(f"'{self.name}' reads global memory (!llvm.ptr<1>), got "
                                  f"{self.ptr.type}")


@irdl_op_definition
class StoreOp(IRDLOperation):
    """`st{.weak,.volatile,.relaxed.scope,.release.scope}{.space}.type [ptr], v`."""

    name = "nvvm.st"
    ptr = operand_def(LLVMPointerType)
    value = operand_def(_ValueT)
    ordering = prop_def(MemOrderAttr)
    scope = opt_prop_def(MemScopeAttr)
    assembly_format = (
        "$ordering (`,` $scope^)? $ptr `,` $value attr-dict `:` type($ptr) `,` type($value)"
    )

    def __init__(self, ptr: SSAValue, value: SSAValue, ordering: str, scope: str = "gpu"):
        super().__init__(
            operands=[ptr, value],
            properties={
                "ordering": MemOrderAttr(MemOrder(ordering)),
                "scope": _scope_for(ordering, scope),
            },
        )

    def verify_(self) -> None:
        _verify_order(self, self.ordering.data, ST_ORDERS)
        _verify_ldst_scope(self, self.ordering.data, self.scope)
        _verify_ptr(self, self.ptr)


@irdl_op_definition
class AtomicOp(IRDLOperation):
    """`atom.sem.scope{.space}.op.type old, [ptr], v`; the result is the old value."""

    name = "nvvm.atom"
    T: ClassVar = VarConstraint("T", _ValueT)
    ptr = operand_def(LLVMPointerType)
    value = operand_def(T)
    res = result_def(T)
    kind = prop_def(AtomicKindAttr)
    ordering = prop_def(MemOrderAttr)
    scope = prop_def(MemScopeAttr)
    assembly_format = (
        "$kind $ordering `,` $scope $ptr `,` $value attr-dict `:` type($ptr) `,` type($value)"
    )

    def __init__(
        self,
        kind: str,
        ptr: SSAValue,
        value: SSAValue,
        ordering: str = "relaxed",
        scope: str = "gpu",
    ):
        super().__init__(
            operands=[ptr, value],
            result_types=[value.type],
            properties={
                "kind": AtomicKindAttr(AtomicKind(kind)),
                "ordering": MemOrderAttr(MemOrder(ordering)),
                "scope": MemScopeAttr(MemScope(scope)),
            },
        )

    def verify_(self) -> None:
        _verify_order(self, self.ordering.data, ATOM_ORDERS)
        _verify_ptr(self, self.ptr)
        _verify_atomic_type(self, self.kind.data, self.value.type)


@irdl_op_definition
class AtomicCASOp(IRDLOperation):
    """`atom.sem.scope{.space}.cas.bN old, [ptr], cmp, new`; the result is the old value."""

    name = "nvvm.atom.cas"
    T: ClassVar = VarConstraint("T", EqAttrConstraint(i32) | EqAttrConstraint(i64))
    ptr = operand_def(LLVMPointerType)
    compare = operand_def(T)
    new = operand_def(T)
    res = result_def(T)
    ordering = prop_def(MemOrderAttr)
    scope = prop_def(MemScopeAttr)
    assembly_format = (
        "$ordering `,` $scope $ptr `,` $compare `,` $new attr-dict `:` type($ptr) `,` type($new)"
    )

    def __init__(
        self,
        ptr: SSAValue,
        compare: SSAValue,
        new: SSAValue,
        ordering: str = "relaxed",
        scope: str = "gpu",
    ):
        super().__init__(
            operands=[ptr, compare, new],
            result_types=[new.type],
            properties={
                "ordering": MemOrderAttr(MemOrder(ordering)),
                "scope": MemScopeAttr(MemScope(scope)),
            },
        )

    def verify_(self) -> None:
        _verify_order(self, self.ordering.data, ATOM_ORDERS)
        _verify_ptr(self, self.ptr)


@irdl_op_definition
class ReduceOp(IRDLOperation):
    """`red.sem.scope{.space}.op.type [ptr], v`: an atomic without a result."""

    name = "nvvm.red"
    ptr = operand_def(LLVMPointerType)
    value = operand_def(_ValueT)
    kind = prop_def(AtomicKindAttr)
    ordering = prop_def(MemOrderAttr)
    scope = prop_def(MemScopeAttr)
    assembly_format = (
        "$kind $ordering `,` $scope $ptr `,` $value attr-dict `:` type($ptr) `,` type($value)"
    )

    def __init__(
        self,
        kind: str,
        ptr: SSAValue,
        value: SSAValue,
        ordering: str = "relaxed",
        scope: str = "gpu",
    ):
        super().__init__(
            operands=[ptr, value],
            properties={
                "kind": AtomicKindAttr(AtomicKind(kind)),
                "ordering": MemOrderAttr(MemOrder(ordering)),
                "scope": MemScopeAttr(MemScope(scope)),
            },
        )

    def verify_(self) -> None:
        _verify_order(self, self.ordering.data, RED_ORDERS)
        _verify_ptr(self, self.ptr)
        if self.kind.data == AtomicKind.EXCH:
            raise VerifyException("'nvvm.red' cannot be 'exch' (it has no result): use nvvm.atom")
        _verify_atomic_type(self, self.kind.data, self.value.type)


# --------------------------------------------------------------------------------------------
# Warp-level matrix operations and shuffles (sm_80)
# --------------------------------------------------------------------------------------------

LDMATRIX_COUNTS = (1, 2, 4)


def ldmatrix_result_type(num: int) -> Attribute:
    """What `nvvm.ldmatrix` of `num` matrices yields: i32, or a struct of `num` i32."""
    return i32 if num == 1 else LLVMStructType.from_type_list([i32] * num)


@irdl_op_definition
class LdMatrixOp(IRDLOperation):
    """`ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16`: warp-collective load of 8x8
    b16 matrices from shared memory; lane l gives the row address of row l % 8 of matrix
    l / 8, and each lane gets one 32-bit register per matrix."""

    name = "nvvm.ldmatrix"
    ptr = operand_def(LLVMPointerType)
    res = result_def()
    num = prop_def(IntegerAttr[I32])
    trans = opt_prop_def(UnitAttr)
    assembly_format = (
        "$ptr `num` $num (`trans` $trans^)? attr-dict `:` type($ptr) `->` type($res)"
    )

    def __init__(self, ptr: SSAValue, num: int, trans: bool = False):
        super().__init__(
            operands=[ptr],
            result_types=[ldmatrix_result_type(num)],
            properties={"num": IntegerAttr(num, i32), "trans": UnitAttr() if trans else None},
        )

    def verify_(self) -> None:
        num = self.num.value.data
        if num not in LDMATRIX_COUNTS:
            raise VerifyException(f"'{self.name}' loads 1, 2 or 4 matrices, got {num}")
        if address_space(self.ptr.type) != 3:  # type: ignore[arg-type]
            raise VerifyException(f"'{self.name}' reads shared memory (!llvm.ptr<3>), got "
                                  f"{self.ptr.type}")
        if self.res.type != ldmatrix_result_type(num):
            raise VerifyException(f"'{self.name}' of {num} matrices yields "
                                  f"{ldmatrix_result_type(num)}, got {self.res.type}")


MMA_A_REGISTERS, MMA_B_REGISTERS, MMA_C_REGISTERS = 4, 2, 4
"""32-bit registers per lane of the A, B and C/D operands of mma.sync m16n8k16."""

MMA_ACCUMULATOR = LLVMStructType.from_type_list([f32] * MMA_C_REGISTERS)
HALF2 = VectorType(Float16Type(), [2])


def mma_operand_type(kind: HalfType) -> Attribute:
    """The register type of an A/B operand: two f16 as vector<2xf16>, two bf16 as i32."""
    return HALF2 if kind == HalfType.F16 else i32


@irdl_op_definition
class MmaSyncOp(IRDLOperation):
    """`mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32`: warp-collective
    D = A B + C with f32 accumulation; each lane passes its registers of A, B and C."""

    name = "nvvm.mma.sync"
    a = var_operand_def(EqAttrConstraint(HALF2) | EqAttrConstraint(i32))
    b = var_operand_def(EqAttrConstraint(HALF2) | EqAttrConstraint(i32))
    c = var_operand_def(f32)
    res = result_def(EqAttrConstraint(MMA_ACCUMULATOR))
    type = prop_def(HalfTypeAttr)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$type `A` `[` $a `]` `B` `[` $b `]` `C` `[` $c `]` attr-dict "
        "`:` `(` type($a) `)` `,` `(` type($b) `)`"
    )

    def __init__(self, kind: str, a: Sequence[SSAValue], b: Sequence[SSAValue],
                 c: Sequence[SSAValue]):
        super().__init__(operands=[a, b, c], result_types=[MMA_ACCUMULATOR],
                         properties={"type": HalfTypeAttr(HalfType(kind))})

    def verify_(self) -> None:
        counts = (len(self.a), len(self.b), len(self.c))
        if counts != (MMA_A_REGISTERS, MMA_B_REGISTERS, MMA_C_REGISTERS):
            raise VerifyException(
                f"'{self.name}' m16n8k16 takes 4 A, 2 B and 4 C registers, got "
                f"{counts[0]}, {counts[1]} and {counts[2]}")
        expected = mma_operand_type(self.type.data)
        for value in (*self.a, *self.b):
            if value.type != expected:
                raise VerifyException(f"'{self.name}' {self.type.data.value} operands are "
                                      f"{expected}, got {value.type}")


@irdl_op_definition
class ShflSyncOp(IRDLOperation):
    """`shfl.sync.{bfly,up,down,idx}.b32 d, a, b, c, membermask`: warp shuffle of a 32-bit
    value among the lanes of `thread_mask` (`mask_and_clamp` packs the segment mask and the
    clamp, as PTX's `c` operand)."""

    name = "nvvm.shfl.sync"
    # Any type here, so that a wrong one is the verifier's located error, not the parser's.
    T: ClassVar = VarConstraint("T", AnyAttr())
    thread_mask = operand_def(i32)
    val = operand_def(T)
    offset = operand_def(i32)
    mask_and_clamp = operand_def(i32)
    res = result_def(T)
    kind = prop_def(ShflKindAttr)
    assembly_format = (
        "$kind $thread_mask `,` $val `,` $offset `,` $mask_and_clamp attr-dict `:` type($val)"
    )

    def __init__(self, kind: str, thread_mask: SSAValue, val: SSAValue, offset: SSAValue,
                 mask_and_clamp: SSAValue):
        super().__init__(operands=[thread_mask, val, offset, mask_and_clamp],
                         result_types=[val.type],
                         properties={"kind": ShflKindAttr(ShflKind(kind))})

    def verify_(self) -> None:
        if self.val.type not in (i32, f32):
            raise VerifyException(f"'{self.name}' moves i32 or f32, got {self.val.type}")


# --------------------------------------------------------------------------------------------
# Asynchronous copies global -> shared (sm_80)
# --------------------------------------------------------------------------------------------

CP_ASYNC_SIZES = (4, 8, 16)


@irdl_op_definition
class CpAsyncOp(IRDLOperation):
    """`cp.async.{ca,cg}.shared.global [dst], [src], size{, src_size}`: this thread copies
    `size` bytes asynchronously; with `src_size`, only that many are read and the rest of
    the destination is zero-filled."""

    name = "nvvm.cp.async.shared.global"
    dst = operand_def(LLVMPointerType)
    src = operand_def(LLVMPointerType)
    src_size = opt_operand_def(i32)
    size = prop_def(IntegerAttr[I32])
    cache = prop_def(CpAsyncCacheAttr)
    assembly_format = (
        "$dst `,` $src `,` $size `,` `cache` `=` $cache (`,` $src_size^)? attr-dict "
        "`:` type($dst) `,` type($src)"
    )

    def __init__(self, dst: SSAValue, src: SSAValue, size: int = 16, cache: str = "cg",
                 src_size: SSAValue | None = None):
        super().__init__(
            operands=[dst, src, [] if src_size is None else [src_size]],
            properties={"size": IntegerAttr(size, i32),
                        "cache": CpAsyncCacheAttr(CpAsyncCache(cache))},
        )

    def verify_(self) -> None:
        size = self.size.value.data
        if size not in CP_ASYNC_SIZES:
            raise VerifyException(f"'{self.name}' copies 4, 8 or 16 bytes, got {size}")
        if self.cache.data == CpAsyncCache.CG and size != 16:
            raise VerifyException(f"'{self.name}' cache = cg copies 16 bytes, got {size}")
        if address_space(self.dst.type) != 3:  # type: ignore[arg-type]
            raise VerifyException(f"'{self.name}' writes shared memory (!llvm.ptr<3>), got "
                                  f"{self.dst.type}")
        if address_space(self.src.type) not in (0, 1):  # type: ignore[arg-type]
            raise VerifyException(f"'{self.name}' reads global memory (!llvm.ptr<1> or "
                                  f"generic), got {self.src.type}")


@irdl_op_definition
class CpAsyncCommitGroupOp(IRDLOperation):
    """`cp.async.commit_group`: close the group of this thread's pending cp.async copies."""

    name = "nvvm.cp.async.commit.group"
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


class _WaitGroupOp(IRDLOperation):
    """`<name> N`: wait until at most N groups are pending (0..7)."""

    n = prop_def(IntegerAttr[I32])
    assembly_format = "$n attr-dict"

    def __init__(self, n: int):
        super().__init__(properties={"n": IntegerAttr(n, i32)})

    def verify_(self) -> None:
        if not 0 <= self.n.value.data <= 7:
            raise VerifyException(f"'{self.name}' waits for 0..7 pending groups, got "
                                  f"{self.n.value.data}")


@irdl_op_definition
class CpAsyncWaitGroupOp(_WaitGroupOp):
    """`cp.async.wait_group N`: wait until at most N of this thread's groups are pending."""

    name = "nvvm.cp.async.wait.group"


# --------------------------------------------------------------------------------------------
# Warpgroup matrix multiply-accumulate (sm_90a)
# --------------------------------------------------------------------------------------------

WGMMA_N = tuple(range(8, 257, 8))


@irdl_op_definition
class WgmmaFenceAlignedOp(IRDLOperation):
    """`wgmma.fence.sync.aligned`: order register accesses before the warpgroup's wgmma."""

    name = "nvvm.wgmma.fence.aligned"
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


@irdl_op_definition
class WgmmaFenceRegistersOp(IRDLOperation):
    """`wgmma.fence.sync.aligned` through which the registers the next wgmmas read pass: each
    value goes in and comes out in the same register (tied), so its writes are ordered before
    the fence and the wgmmas read the results."""

    name = "nvvm.wgmma.fence.registers"
    values = var_operand_def(EqAttrConstraint(f32) | EqAttrConstraint(i32))
    res = result_def(LLVMStructType)
    assembly_format = "`[` $values `]` attr-dict `:` type($values) `->` type($res)"

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[list(values)], result_types=[
            LLVMStructType.from_type_list([v.type for v in values])])

    def verify_(self) -> None:
        expected = LLVMStructType.from_type_list(list(self.values.types))
        if self.res.type != expected:
            raise VerifyException(f"'{self.name}' yields {expected}, got {self.res.type}")


@irdl_op_definition
class WgmmaCommitGroupSyncAlignedOp(IRDLOperation):
    """`wgmma.commit_group.sync.aligned`: close the group of pending wgmma operations."""

    name = "nvvm.wgmma.commit.group.sync.aligned"
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


@irdl_op_definition
class WgmmaWaitGroupSyncAlignedOp(_WaitGroupOp):
    """`wgmma.wait_group.sync.aligned N`: wait until at most N wgmma groups are pending."""

    name = "nvvm.wgmma.wait.group.sync.aligned"


def _verify_wgmma_accumulators(op: IRDLOperation) -> None:
    """N one of WGMMA_N, N / 2 f32 accumulators a thread, yielded back as a struct of them."""
    n = op.n.value.data  # type: ignore[attr-defined]
    if n not in WGMMA_N:
        raise VerifyException(f"'{op.name}' N must be a multiple of 8 in 8..256, got {n}")
    acc = op.acc  # type: ignore[attr-defined]
    if len(acc) != n // 2:
        raise VerifyException(f"'{op.name}' m64n{n}k16 takes {n // 2} accumulator "
                              f"registers, got {len(acc)}")
    expected = LLVMStructType.from_type_list([f32] * len(acc))
    if op.res.type != expected:  # type: ignore[attr-defined]
        raise VerifyException(f"'{op.name}' yields {expected}, got {op.res.type}")  # type: ignore[attr-defined]


@irdl_op_definition
class WgmmaMmaAsyncOp(IRDLOperation):
    """`wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}.{f16,bf16}`: warpgroup-collective
    D = A B + scale_d * D with both operands read from shared memory through 64-bit matrix
    descriptors, A K-major, B K-major or with `trans_b` N-major (imm-trans-b); each thread
    passes its N / 2 f32 accumulator registers and gets them back, updated, as a struct.
    `scale_d` = 0 ignores the accumulators (D = A B)."""

    name = "nvvm.wgmma.mma_async"
    desc_a = operand_def(i64)
    desc_b = operand_def(i64)
    scale_d = operand_def(i32)
    acc = var_operand_def(f32)
    res = result_def(LLVMStructType)
    n = prop_def(IntegerAttr[I32])
    type = prop_def(HalfTypeAttr)
    trans_b = opt_prop_def(UnitAttr)
    assembly_format = (
        "$type `n` `=` $n (`trans_b` $trans_b^)? $desc_a `,` $desc_b `,` $scale_d `,` "
        "`[` $acc `]` attr-dict `->` type($res)"
    )

    def __init__(self, kind: str, n: int, desc_a: SSAValue, desc_b: SSAValue,
                 scale_d: SSAValue, acc: Sequence[SSAValue], trans_b: bool = False):
        super().__init__(
            operands=[desc_a, desc_b, scale_d, acc],
            result_types=[LLVMStructType.from_type_list([f32] * len(acc))],
            properties={"n": IntegerAttr(n, i32), "type": HalfTypeAttr(HalfType(kind)),
                        "trans_b": UnitAttr() if trans_b else None},
        )

    def verify_(self) -> None:
        _verify_wgmma_accumulators(self)


@irdl_op_definition
class WgmmaMmaAsyncRegAOp(IRDLOperation):
    """`wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}.{f16,bf16}` with A from registers:
    each thread passes its four 32-bit registers of A (the m16k16 A fragment of its warp's 16
    rows), B comes through its descriptor, K-major or with `trans_b` N-major (imm-trans-b)."""

    name = "nvvm.wgmma.mma_async.reg_a"
    a = var_operand_def(i32)
    desc_b = operand_def(i64)
    scale_d = operand_def(i32)
    acc = var_operand_def(f32)
    res = result_def(LLVMStructType)
    n = prop_def(IntegerAttr[I32])
    type = prop_def(HalfTypeAttr)
    trans_b = opt_prop_def(UnitAttr)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$type `n` `=` $n (`trans_b` $trans_b^)? `[` $a `]` `,` $desc_b `,` $scale_d `,` "
        "`[` $acc `]` attr-dict `->` type($res)"
    )

    def __init__(self, kind: str, n: int, a: Sequence[SSAValue], desc_b: SSAValue,
                 scale_d: SSAValue, acc: Sequence[SSAValue], trans_b: bool = False):
        super().__init__(
            operands=[a, desc_b, scale_d, acc],
            result_types=[LLVMStructType.from_type_list([f32] * len(acc))],
            properties={"n": IntegerAttr(n, i32), "type": HalfTypeAttr(HalfType(kind)),
                        "trans_b": UnitAttr() if trans_b else None},
        )

    def verify_(self) -> None:
        _verify_wgmma_accumulators(self)
        if len(self.a) != 4:
            raise VerifyException(f"'{self.name}' takes A in 4 registers, got {len(self.a)}")


# --------------------------------------------------------------------------------------------
# Transaction barriers, bulk tensor copies (TMA), named barriers, register reallocation (sm_90)
# --------------------------------------------------------------------------------------------

TMA_RANKS = (1, 2, 3, 4, 5)


def _verify_shared_ptr(op: IRDLOperation, ptr: SSAValue, what: str) -> None:
    if address_space(ptr.type) != 3:  # type: ignore[arg-type]
        raise VerifyException(f"'{op.name}' {what} must be in shared memory (!llvm.ptr<3>), "
                              f"got {ptr.type}")


@irdl_op_definition
class MBarrierInitOp(IRDLOperation):
    """`mbarrier.init.shared::cta.b64 [bar], count`: a transaction barrier whose phase
    completes when `count` threads have arrived and every expected byte has landed."""

    name = "nvvm.mbarrier.init"
    bar = operand_def(LLVMPointerType)
    count = operand_def(i32)
    assembly_format = "$bar `,` $count attr-dict `:` type($bar)"

    def __init__(self, bar: SSAValue, count: SSAValue):
        super().__init__(operands=[bar, count])

    def verify_(self) -> None:
        _verify_shared_ptr(self, self.bar, "barrier")


@irdl_op_definition
class MBarrierArriveOp(IRDLOperation):
    """`mbarrier.arrive[.expect_tx].shared::cta.b64 _, [bar][, tx]`: this thread arrives; with
    `tx`, it first announces that many bytes the phase must also wait for (a TMA load's). With
    `cta`, it arrives instead on the barrier at the same offset in CTA `cta` of its cluster
    (`mapa`, then `mbarrier.arrive.shared::cluster`), releasing at CTA scope, or with
    `release_cluster` at cluster scope: the thread's earlier accesses to the peer's shared
    memory (a queue entry it wrote or read there) happen before whatever the peer does once it
    sees the phase complete."""

    name = "nvvm.mbarrier.arrive"
    bar = operand_def(LLVMPointerType)
    tx = opt_operand_def(i32)
    cta = opt_operand_def(i32)
    release_cluster = opt_prop_def(UnitAttr)
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$bar (`expect_tx` $tx^)? (`cta` $cta^)? (`release_cluster` $release_cluster^)? "
        "attr-dict `:` type($bar)"
    )

    def __init__(self, bar: SSAValue, tx: SSAValue | None = None, cta: SSAValue | None = None,
                 release_cluster: bool = False):
        super().__init__(operands=[bar, [] if tx is None else [tx],
                                   [] if cta is None else [cta]],
                         properties={"release_cluster": UnitAttr() if release_cluster
                                     else None})

    def verify_(self) -> None:
        _verify_shared_ptr(self, self.bar, "barrier")
        if self.tx is not None and self.cta is not None:
            raise VerifyException(f"'{self.name}' announces bytes on its own CTA's barriers "
                                  "only: expect_tx and cta exclude each other")
        if self.release_cluster is not None and self.cta is None:
            raise VerifyException(f"'{self.name}' releases at cluster scope on a peer CTA's "
                                  "barrier only: release_cluster needs cta")


@irdl_op_definition
class MBarrierTryWaitParityOp(IRDLOperation):
    """`mbarrier.try_wait.parity.shared::cta.b64`: 1 when the phase of parity `parity` (0
    even, 1 odd) of the barrier has completed, else 0 (after a bounded, hardware-chosen wait).
    With `acquire_cluster` it acquires at cluster scope: what a peer CTA's thread did before
    its `release_cluster` arrival on this barrier is visible once the wait returns 1."""

    name = "nvvm.mbarrier.try_wait.parity"
    bar = operand_def(LLVMPointerType)
    parity = operand_def(i32)
    res = result_def(i32)
    acquire_cluster = opt_prop_def(UnitAttr)
    assembly_format = ("$bar `,` $parity (`acquire_cluster` $acquire_cluster^)? attr-dict "
                       "`:` type($bar)")

    def __init__(self, bar: SSAValue, parity: SSAValue, acquire_cluster: bool = False):
        super().__init__(operands=[bar, parity], result_types=[i32],
                         properties={"acquire_cluster": UnitAttr() if acquire_cluster
                                     else None})

    def verify_(self) -> None:
        _verify_shared_ptr(self, self.bar, "barrier")


@irdl_op_definition
class MapaOp(IRDLOperation):
    """`mapa.shared::cluster.u64 d, a, cta`: the shared::cluster address (`!llvm.ptr<7>`) of
    the shared-memory location at `ptr`'s offset in CTA `cta` of the cluster. Cast to generic,
    plain loads and stores reach the peer's shared memory through it (as
    `ld/st.shared::cluster` once LLVM infers the space)."""

    name = "nvvm.mapa"
    ptr = operand_def(LLVMPointerType)
    cta = operand_def(i32)
    res = result_def(LLVMPointerType)
    assembly_format = "$ptr `,` $cta attr-dict `:` type($ptr) `->` type($res)"

    def __init__(self, ptr: SSAValue, cta: SSAValue):
        super().__init__(operands=[ptr, cta], result_types=[
            LLVMPointerType(IntAttr(SHARED_CLUSTER_ADDRESS_SPACE))])

    def verify_(self) -> None:
        _verify_shared_ptr(self, self.ptr, "pointer")
        if address_space(self.res.type) != SHARED_CLUSTER_ADDRESS_SPACE:  # type: ignore
            raise VerifyException(f"'{self.name}' yields a shared::cluster pointer "
                                  f"(!llvm.ptr<{SHARED_CLUSTER_ADDRESS_SPACE}>), got "
                                  f"{self.res.type}")


@irdl_op_definition
class FenceMBarrierInitOp(IRDLOperation):
    """`fence.mbarrier_init.release.cluster`: barrier initializations are visible to the
    async proxy (TMA completions) and the cluster before a barrier that follows."""

    name = "nvvm.fence.mbarrier_init"
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


@irdl_op_definition
class CpAsyncBulkTensorLoadOp(IRDLOperation):
    """`cp.async.bulk.tensor.Nd.shared::cluster.global.tile.mbarrier::complete_tx::bytes
    [dst], [tmap, {c0, ...}], [bar]`: one thread copies the box of the tensor map at the
    coordinates (innermost first, in elements) into shared memory; the bytes complete the
    barrier's transaction count. Out-of-bounds elements are zero-filled. With `multicast`
    (`.multicast::cluster`, an i16 mask of the cluster's CTAs), the box lands at the same
    offset in the shared memory of every CTA of the mask and completes each one's barrier.
    With `im2col` offsets (i16, innermost first, one per spatial dimension) the load mode is
    `.im2col`: the map is an im2col map and the copy gathers its pixels at those filter
    offsets."""

    name = "nvvm.cp.async.bulk.tensor.shared.global"
    dst = operand_def(LLVMPointerType)
    bar = operand_def(LLVMPointerType)
    tensor_map = operand_def(LLVMPointerType)
    coords = var_operand_def(i32)
    im2col = var_operand_def(IntegerType(16))
    multicast = opt_operand_def(IntegerType(16))
    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$dst `,` $tensor_map `[` $coords `]` (`im2col` `[` $im2col^ `]`)? `,` $bar "
        "(`multicast` $multicast^)? attr-dict `:` type($dst) `,` type($tensor_map) `,` "
        "type($bar)"
    )

    def __init__(self, dst: SSAValue, tensor_map: SSAValue, coords: Sequence[SSAValue],
                 bar: SSAValue, multicast: SSAValue | None = None,
                 im2col: Sequence[SSAValue] = ()):
        super().__init__(operands=[dst, bar, tensor_map, coords, im2col,
                                   [] if multicast is None else [multicast]])

    def verify_(self) -> None:
        _verify_shared_ptr(self, self.dst, "destination")
        _verify_shared_ptr(self, self.bar, "barrier")
        _verify_tensor_map_coords(self)
        if self.im2col and len(self.im2col) != len(self.coords) - 2:
            raise VerifyException(f"'{self.name}' im2col takes an offset for each coordinate "
                                  f"but the channel and the batch: {len(self.coords) - 2}, got "
                                  f"{len(self.im2col)}")


@irdl_op_definition
class CpAsyncBulkPrefetchTensorOp(IRDLOperation):
    """`cp.async.bulk.prefetch.tensor.Nd.L2.global.tile [tmap, {c0, ...}]`: one thread asks
    for the box of the tensor map at the coordinates (innermost first) to be brought into L2."""

    name = "nvvm.cp.async.bulk.prefetch.tensor.l2.global"
    tensor_map = operand_def(LLVMPointerType)
    coords = var_operand_def(i32)
    assembly_format = "$tensor_map `[` $coords `]` attr-dict `:` type($tensor_map)"

    def __init__(self, tensor_map: SSAValue, coords: Sequence[SSAValue]):
        super().__init__(operands=[tensor_map, coords])

    def verify_(self) -> None:
        _verify_tensor_map_coords(self)


@irdl_op_definition
class CpAsyncBulkTensorStoreOp(IRDLOperation):
    """`cp.async.bulk.tensor.Nd.global.shared::cta.tile.bulk_group [tmap, {c0, ...}], [src]`:
    one thread copies a box from shared memory to the tensor at the coordinates (innermost
    first); elements outside the tensor are not written. Completes in bulk groups."""

    name = "nvvm.cp.async.bulk.tensor.global.shared"
    tensor_map = operand_def(LLVMPointerType)
    coords = var_operand_def(i32)
    src = operand_def(LLVMPointerType)
    assembly_format = (
        "$tensor_map `[` $coords `]` `,` $src attr-dict `:` type($tensor_map) `,` type($src)"
    )

    def __init__(self, tensor_map: SSAValue, coords: Sequence[SSAValue], src: SSAValue):
        super().__init__(operands=[tensor_map, coords, src])

    def verify_(self) -> None:
        _verify_shared_ptr(self, self.src, "source")
        _verify_tensor_map_coords(self)


def _verify_tensor_map_coords(op: IRDLOperation) -> None:
    """A bulk tensor copy's map by its generic address, and 1 to 5 coordinates."""
    if address_space(op.tensor_map.type) != 0:  # type: ignore[attr-defined]
        raise VerifyException(f"'{op.name}' takes the tensor map by its generic address "
                              f"(!llvm.ptr), got {op.tensor_map.type}")  # type: ignore[attr-defined]
    if len(op.coords) not in TMA_RANKS:  # type: ignore[attr-defined]
        raise VerifyException(f"'{op.name}' takes 1 to 5 coordinates, got "
                              f"{len(op.coords)}")  # type: ignore[attr-defined]


def _verify_global_ptr(op: IRDLOperation, ptr: SSAValue, what: str) -> None:
    if address_space(ptr.type) != 1:  # type: ignore[arg-type]
        raise VerifyException(f"'{op.name}' {what} must be in global memory (!llvm.ptr<1>), "
                              f"got {ptr.type}")


@irdl_op_definition
class CpAsyncBulkLoadOp(IRDLOperation):
    """`cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [dst], [src], size,
    [bar]`: one thread copies `size` bytes (a multiple of 16, both addresses 16-byte aligned)
    from global to shared memory; the bytes complete the barrier's transaction count."""

    name = "nvvm.cp.async.bulk.shared.global"
    dst = operand_def(LLVMPointerType)
    src = operand_def(LLVMPointerType)
    size = operand_def(i32)
    bar = operand_def(LLVMPointerType)
    assembly_format = (
        "$dst `,` $src `,` $size `,` $bar attr-dict `:` type($dst) `,` type($src) `,` type($bar)"
    )

    def __init__(self, dst: SSAValue, src: SSAValue, size: SSAValue, bar: SSAValue):
        super().__init__(operands=[dst, src, size, bar])

    def verify_(self) -> None:
        _verify_shared_ptr(self, self.dst, "destination")
        _verify_global_ptr(self, self.src, "source")
        _verify_shared_ptr(self, self.bar, "barrier")


@irdl_op_definition
class CpAsyncBulkStoreOp(IRDLOperation):
    """`cp.async.bulk.global.shared::cta.bulk_group [dst], [src], size`: one thread copies
    `size` bytes (a multiple of 16, both addresses 16-byte aligned) from shared to global
    memory. Completes in bulk groups, as the bulk tensor stores do."""

    name = "nvvm.cp.async.bulk.global.shared"
    dst = operand_def(LLVMPointerType)
    src = operand_def(LLVMPointerType)
    size = operand_def(i32)
    assembly_format = "$dst `,` $src `,` $size attr-dict `:` type($dst) `,` type($src)"

    def __init__(self, dst: SSAValue, src: SSAValue, size: SSAValue):
        super().__init__(operands=[dst, src, size])

    def verify_(self) -> None:
        _verify_global_ptr(self, self.dst, "destination")
        _verify_shared_ptr(self, self.src, "source")


@irdl_op_definition
class ClusterArriveOp(IRDLOperation):
    """`barrier.cluster.arrive.aligned`: this thread arrives at the cluster barrier (release:
    its earlier accesses are visible to the threads that wait)."""

    name = "nvvm.cluster.arrive"
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


@irdl_op_definition
class ClusterWaitOp(IRDLOperation):
    """`barrier.cluster.wait.aligned`: wait until every thread of every CTA of the cluster has
    arrived (acquire)."""

    name = "nvvm.cluster.wait"
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


@irdl_op_definition
class CpAsyncBulkCommitGroupOp(IRDLOperation):
    """`cp.async.bulk.commit_group`: close this thread's group of bulk (TMA store) copies."""

    name = "nvvm.cp.async.bulk.commit.group"
    assembly_format = "attr-dict"

    def __init__(self):
        super().__init__()


@irdl_op_definition
class CpAsyncBulkWaitGroupReadOp(_WaitGroupOp):
    """`cp.async.bulk.wait_group.read N`: at most N of this thread's bulk groups still read
    their shared-memory source (it may be written again)."""

    name = "nvvm.cp.async.bulk.wait.group.read"


@irdl_op_definition
class CpAsyncBulkWaitGroupOp(_WaitGroupOp):
    """`cp.async.bulk.wait_group N`: at most N of this thread's bulk groups are pending; the
    others' writes are complete and visible to this thread."""

    name = "nvvm.cp.async.bulk.wait.group"


@irdl_op_definition
class PrefetchTensorMapOp(IRDLOperation):
    """`prefetch.tensormap [tmap]`: bring a tensor map into the cache before its first use."""

    name = "nvvm.prefetch.tensormap"
    tensor_map = operand_def(LLVMPointerType)
    assembly_format = "$tensor_map attr-dict `:` type($tensor_map)"

    def __init__(self, tensor_map: SSAValue):
        super().__init__(operands=[tensor_map])


def _verify_named_barrier(name: str, barrier_id: int | None, count: int) -> None:
    """A named barrier's constant id (None: computed at run time) and thread count."""
    if barrier_id is not None and not 0 <= barrier_id < NAMED_BARRIERS:
        raise VerifyException(f"'{name}' barrier id must be in 0..{NAMED_BARRIERS - 1}, got "
                              f"{barrier_id}")
    if count <= 0 or count % 32 or count > 1024:
        raise VerifyException(f"'{name}' counts whole warps (a multiple of 32 up to "
                              f"1024 threads), got {count}")


@irdl_op_definition
class BarrierSyncOp(IRDLOperation):
    """`bar.sync id, count`: named barrier `id` (0..15) of `count` threads (a multiple of 32,
    whole warps); orders their memory accesses at CTA scope like `bar.sync 0`. The id is a
    constant (`nvvm.barrier.sync 1, 256`) or an i32 computed at run time
    (`nvvm.barrier.sync %id, 128`: each group of threads on a barrier of its own); every
    thread of a warp must pass the same id."""

    name = "nvvm.barrier.sync"
    dynamic_id = opt_operand_def(I32)
    barrier_id = opt_prop_def(IntegerAttr[I32])
    count = prop_def(IntegerAttr[I32])
    assembly_format = "($dynamic_id^):($barrier_id)? `,` $count attr-dict"

    def __init__(self, barrier_id: int | SSAValue, count: int):
        constant = isinstance(barrier_id, int)
        super().__init__(
            operands=[[] if constant else [barrier_id]],
            properties={"barrier_id": IntegerAttr(barrier_id, i32) if constant else None,
                        "count": IntegerAttr(count, i32)})

    def verify_(self) -> None:
        if (self.barrier_id is None) == (self.dynamic_id is None):
            raise VerifyException(f"'{self.name}' takes its id either as a constant or as an "
                                  "operand, not both or neither")
        _verify_named_barrier(self.name, None if self.barrier_id is None
                              else self.barrier_id.value.data, self.count.value.data)



@irdl_op_definition
class BarrierRedOrOp(IRDLOperation):
    """`bar.red.or.pred id, count`: named barrier `id` of `count` threads that also ORs the
    i32 `pred` over them (every one gets 1 when any passed a non-zero one): the block's
    `nvvm.barrier0.or` for part of a block (the consumer warpgroups of a warp-specialized
    kernel, whose producer warp never arrives)."""

    name = "nvvm.barrier.red.or"
    pred = operand_def(I32)
    barrier_id = prop_def(IntegerAttr[I32])
    count = prop_def(IntegerAttr[I32])
    res = result_def(I32)
    assembly_format = "$barrier_id `,` $count `,` $pred attr-dict"

    def __init__(self, barrier_id: int, count: int, pred: SSAValue):
        super().__init__(operands=[pred], result_types=[i32],
                         properties={"barrier_id": IntegerAttr(barrier_id, i32),
                                     "count": IntegerAttr(count, i32)})

    def verify_(self) -> None:
        _verify_named_barrier(self.name, self.barrier_id.value.data, self.count.value.data)

class RegisterAction(StrEnum):
    INC = "inc"
    DEC = "dec"


@irdl_attr_definition
class RegisterActionAttr(EnumAttribute[RegisterAction], SpacedOpaqueSyntaxAttribute):
    name = "nvvm.register_action"


@irdl_op_definition
class SetMaxNRegOp(IRDLOperation):
    """`setmaxnreg.{inc,dec}.sync.aligned.u32 N` (sm_90a): the warpgroup's warps raise or
    lower their register allotment to N (24..256, a multiple of 8)."""

    name = "nvvm.setmaxnreg"
    action = prop_def(RegisterActionAttr)
    registers = prop_def(IntegerAttr[I32])
    assembly_format = "$action $registers attr-dict"

    def __init__(self, action: str, registers: int):
        super().__init__(properties={"action": RegisterActionAttr(RegisterAction(action)),
                                     "registers": IntegerAttr(registers, i32)})

    def verify_(self) -> None:
        n = self.registers.value.data
        if not 24 <= n <= 256 or n % 8:
            raise VerifyException(f"'{self.name}' registers must be a multiple of 8 in "
                                  f"24..256, got {n}")


# --------------------------------------------------------------------------------------------
# Conversions and approximate math
# --------------------------------------------------------------------------------------------


@irdl_op_definition
class CvtPackOp(IRDLOperation):
    """`cvt.rn.{f16x2,bf16x2}.f32 d, hi, lo`: both values rounded to nearest even and packed
    in one 32-bit register, `hi` in the upper half."""

    name = "nvvm.cvt.pack"
    hi = operand_def(f32)
    lo = operand_def(f32)
    res = result_def(i32)
    type = prop_def(HalfTypeAttr)
    assembly_format = "$type $hi `,` $lo attr-dict"

    def __init__(self, kind: str, hi: SSAValue, lo: SSAValue):
        super().__init__(operands=[hi, lo], result_types=[i32],
                         properties={"type": HalfTypeAttr(HalfType(kind))})


class _ApproxF32Op(IRDLOperation):
    x = operand_def(f32)
    res = result_def(f32)
    assembly_format = "$x attr-dict"

    def __init__(self, x: SSAValue):
        super().__init__(operands=[x], result_types=[f32])


@irdl_op_definition
class TanhApproxOp(_ApproxF32Op):
    """`tanh.approx.f32`: hyperbolic tangent, about 2^-11 relative error (sm_75)."""

    name = "nvvm.tanh.approx.f32"


@irdl_op_definition
class Ex2ApproxFtzOp(_ApproxF32Op):
    """`ex2.approx.ftz.f32`: 2^x, subnormals flushed to zero."""

    name = "nvvm.ex2.approx.ftz.f32"


@irdl_op_definition
class RsqrtApproxOp(_ApproxF32Op):
    """`rsqrt.approx.f32`: 1 / sqrt(x), about 2^-22.9 relative error."""

    name = "nvvm.rsqrt.approx.f32"


NVVM = Dialect(
    "nvvm",
    [
        *SPECIAL_REGISTERS.values(),
        Barrier0Op,
        Barrier0OrOp,
        GridDepControlWaitOp,
        GridDepControlLaunchDependentsOp,
        TrapOp,
        BarWarpSyncOp,
        NanosleepOp,
        FenceOp,
        LoadL2PairOp,
        FenceProxyAsyncOp,
        LoadOp,
        StoreOp,
        AtomicOp,
        AtomicCASOp,
        ReduceOp,
        LdMatrixOp,
        MmaSyncOp,
        ShflSyncOp,
        CpAsyncOp,
        CpAsyncCommitGroupOp,
        CpAsyncWaitGroupOp,
        WgmmaFenceAlignedOp,
        WgmmaCommitGroupSyncAlignedOp,
        WgmmaWaitGroupSyncAlignedOp,
        WgmmaMmaAsyncOp,
        WgmmaMmaAsyncRegAOp,
        WgmmaFenceRegistersOp,
        MBarrierInitOp,
        MBarrierArriveOp,
        MBarrierTryWaitParityOp,
        MapaOp,
        FenceMBarrierInitOp,
        CpAsyncBulkTensorLoadOp,
        CpAsyncBulkTensorStoreOp,
        CpAsyncBulkPrefetchTensorOp,
        CpAsyncBulkLoadOp,
        CpAsyncBulkStoreOp,
        CpAsyncBulkCommitGroupOp,
        CpAsyncBulkWaitGroupReadOp,
        CpAsyncBulkWaitGroupOp,
        ClusterArriveOp,
        ClusterWaitOp,
        PrefetchTensorMapOp,
        BarrierSyncOp,
        BarrierRedOrOp,
        SetMaxNRegOp,
        CvtPackOp,
        TanhApproxOp,
        Ex2ApproxFtzOp,
        RsqrtApproxOp,
    ],
    [MemOrderAttr, MemScopeAttr, AtomicKindAttr, ProxySpaceAttr, HalfTypeAttr,
     CpAsyncCacheAttr, ShflKindAttr, RegisterActionAttr],
)

__all__ = [
    "NVVM",
    "AtomicCASOp",
    "AtomicOp",
    "BarWarpSyncOp",
    "Barrier0Op",
    "Barrier0OrOp",
    "BarrierRedOrOp",
    "BarrierSyncOp",
    "ClusterArriveOp",
    "ClusterWaitOp",
    "CpAsyncBulkCommitGroupOp",
    "CpAsyncBulkLoadOp",
    "CpAsyncBulkPrefetchTensorOp",
    "CpAsyncBulkStoreOp",
    "CpAsyncBulkTensorLoadOp",
    "CpAsyncBulkTensorStoreOp",
    "CpAsyncBulkWaitGroupOp",
    "CpAsyncBulkWaitGroupReadOp",
    "CpAsyncCommitGroupOp",
    "CpAsyncOp",
    "CpAsyncWaitGroupOp",
    "CvtPackOp",
    "Ex2ApproxFtzOp",
    "FenceMBarrierInitOp",
    "FenceOp",
    "FenceProxyAsyncOp",
    "GridDepControlLaunchDependentsOp",
    "GridDepControlWaitOp",
    "LdMatrixOp",
    "LoadL2PairOp",
    "LoadOp",
    "MBarrierArriveOp",
    "MBarrierInitOp",
    "MBarrierTryWaitParityOp",
    "MapaOp",
    "MmaSyncOp",
    "NanosleepOp",
    "PrefetchTensorMapOp",
    "ReduceOp",
    "SetMaxNRegOp",
    "ShflSyncOp",
    "SpecialRegisterOp",
    "StoreOp",
    "TanhApproxOp",
    "TrapOp",
    "WgmmaCommitGroupSyncAlignedOp",
    "WgmmaFenceAlignedOp",
    "WgmmaFenceRegistersOp",
    "WgmmaMmaAsyncOp",
    "WgmmaMmaAsyncRegAOp",
    "WgmmaWaitGroupSyncAlignedOp",
    "ldmatrix_result_type",
    "read_sreg",
]

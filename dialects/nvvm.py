"""The `nvvm` dialect: the NVVM/PTX operations tilesync needs, named after upstream MLIR's nvvm.

Special registers (`nvvm.read.ptx.sreg.*`), the block barrier, grid-dependency control (PDL),
nanosleep, trap, and the memory operations of the PTX memory consistency model with explicit
ordering and scope: `nvvm.ld`, `nvvm.st`, `nvvm.atom`, `nvvm.atom.cas`, `nvvm.red`, `nvvm.fence`
and `nvvm.fence.proxy.async`. `convert-nvvm-to-llvm` lowers the ordered memory operations to
inline PTX, so what is written here is exactly the instruction that runs.

Pointers are `!llvm.ptr` in address space 0 (generic), 1 (global) or 3 (shared).
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import (
    IntegerType,
    f32,
    i32,
    i64,
)
from xdsl.dialects.llvm import LLVMPointerType
from xdsl.dialects.utils import EnumAttribute
from xdsl.ir import Attribute, Dialect, SpacedOpaqueSyntaxAttribute, SSAValue
from xdsl.irdl import (
    EqAttrConstraint,
    IRDLOperation,
    VarConstraint,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
)
from xdsl.utils.exceptions import VerifyException
from xdsl.utils.str_enum import StrEnum

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
    """`ld{.weak,.volatile,.relaxed.scope,.acquire.scope}{.space}.type d, [ptr]`."""

    name = "nvvm.ld"
    ptr = operand_def(LLVMPointerType)
    res = result_def(_ValueT)
    ordering = prop_def(MemOrderAttr)
    scope = opt_prop_def(MemScopeAttr)
    assembly_format = (
        "$ordering (`,` $scope^)? $ptr attr-dict `:` type($ptr) `->` type($res)"
    )

    def __init__(
        self, ptr: SSAValue, result_type: Attribute, ordering: str, scope: str = "gpu"
    ):
        super().__init__(
            operands=[ptr],
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


NVVM = Dialect(
    "nvvm",
    [
        *SPECIAL_REGISTERS.values(),
        Barrier0Op,
        GridDepControlWaitOp,
        GridDepControlLaunchDependentsOp,
        TrapOp,
        NanosleepOp,
        FenceOp,
        FenceProxyAsyncOp,
        LoadOp,
        StoreOp,
        AtomicOp,
        AtomicCASOp,
        ReduceOp,
    ],
    [MemOrderAttr, MemScopeAttr, AtomicKindAttr, ProxySpaceAttr],
)

__all__ = [
    "NVVM",
    "AtomicCASOp",
    "AtomicOp",
    "Barrier0Op",
    "FenceOp",
    "FenceProxyAsyncOp",
    "GridDepControlLaunchDependentsOp",
    "GridDepControlWaitOp",
    "LoadOp",
    "NanosleepOp",
    "ReduceOp",
    "SpecialRegisterOp",
    "StoreOp",
    "TrapOp",
    "read_sreg",
]

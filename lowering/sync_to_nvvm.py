"""`convert-sync-to-nvvm`: the kernel-level sync ops (tile, wait, post) as NVVM code.

The memory-model rules of DESIGN.md, in one place:
- post: every thread of the block has stored its part of the tile (`bar.sync`), then one thread
  makes those stores visible at gpu scope (`fence.acq_rel.gpu`) and adds 1 to the semaphore
  (`red.relaxed.gpu`). A fence is emitted explicitly because LLVM 22 drops the ordering of
  atomicrmw on NVPTX.
- wait: one thread spins on an acquire load (`ld.acquire.gpu`, every iteration, including the
  first) with `nanosleep` backoff until the semaphore reaches `epoch * posts`; then `bar.sync`
  so the whole block reads after the acquire. Semaphores are never reset: the epoch (launch
  count) makes a relaunch or a graph replay need no memset.
- no hang: every spin reads `%globaltimer` and traps after a timeout; the host turns the trap into
  an error instead of waiting forever.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, arith, gpu, llvm, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AffineMapAttr,
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StringAttr,
    UnitAttr,
    UnrealizedConversionCastOp,
    i1,
    i32,
    i64,
)
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import DiagnosticException

from tilesync.analysis.tile_order import order_permutation
from tilesync.contract import (
    DEBUG_RECORD,
    DEBUG_RECORD_FIELDS,
    ORDER_TABLE,
    ORDER_TABLE_ATTR,
    TILE_COUNTER,
    kernel_tag,
)
from tilesync.dialects import nvvm, sync
from tilesync.dialects.kernel_args import sync_arg
from tilesync.lowering.rewrite_driver import apply_patterns
from tilesync.lowering.type_conversion import SHARED_ADDRESS_SPACE, convert_type

_DIMS = (gpu.DimensionEnum.X, gpu.DimensionEnum.Y, gpu.DimensionEnum.Z)
DEFAULT_TIMEOUT_NS = 10_000_000_000
DEFAULT_BACKOFF_NS = 64
MAX_BACKOFF_NS = 1_000_000


class _Emitter:
    """Collects ops in order; `emit` returns the op's single result for chaining."""

    def __init__(self) -> None:
        self.ops: list[Operation] = []

    def op(self, operation: Operation) -> Operation:
        self.ops.append(operation)
        return operation

    def emit(self, operation: Operation) -> SSAValue:
        return self.op(operation).results[0]

    def const(self, value: int, type_) -> SSAValue:
        return self.emit(arith.ConstantOp(IntegerAttr(value, type_)))


def _is_leader(e: _Emitter) -> SSAValue:
    """True in thread (0, 0, 0) of the block: the one thread that touches semaphores."""
    ids = [e.emit(gpu.ThreadIdOp(gpu.DimensionAttr(d))) for d in _DIMS]
    any_nonzero = e.emit(arith.OrIOp(e.emit(arith.OrIOp(ids[0], ids[1])), ids[2]))
    return e.emit(arith.CmpiOp(any_nonzero, e.const(0, IndexType()), "eq"))


def _semaphore_pointer(e: _Emitter, sems: SSAValue, tile: Sequence[SSAValue],
                       policy: sync.PolicyAttr) -> tuple[SSAValue, SSAValue]:
    """(address, index) of the semaphore that `policy` assigns to producer tile `tile`."""
    index = e.emit(affine.ApplyOp(list(tile), AffineMapAttr(policy.sem_map.data)))
    index64 = e.emit(arith.IndexCastOp(index, i64))
    base_type = convert_type(sems.type)
    assert isinstance(base_type, llvm.LLVMPointerType)
    base = e.emit(UnrealizedConversionCastOp.get([sems], [base_type]))
    ptr = e.emit(llvm.GEPOp(base, [llvm.GEP_USE_SSA_VAL], i32, ssa_indices=[index64],
                            result_type=base_type))
    return ptr, index


def _record_timeout(record: SSAValue, fields: Mapping[str, SSAValue]) -> list[Operation]:
    """The first block to time out claims the record (cas 0 → 1) and writes what it saw (the
    other DEBUG_RECORD_FIELDS, in their order), at system scope: the record is mapped host
    memory, still readable after the trap."""
    e = _Emitter()
    base = e.emit(UnrealizedConversionCastOp.get([record], [convert_type(record.type)]))
    old = e.emit(nvvm.AtomicCASOp(base, e.const(0, i32), e.const(1, i32), "relaxed", "sys"))
    claimed = e.emit(arith.CmpiOp(old, e.const(0, i32), "eq"))
    write = _Emitter()
    for offset, name in enumerate(DEBUG_RECORD_FIELDS):
        if name == "claimed":
            continue
        slot = write.emit(llvm.GEPOp(base, [offset], i32, result_type=base.type))
        write.op(nvvm.StoreOp(slot, fields[name], ordering="volatile"))
    write.op(nvvm.FenceOp("sc", "sys"))
    write.op(scf.YieldOp())
    e.op(scf.IfOp(claimed, [], write.ops))
    return e.ops


def _spin_until(ptr: SSAValue, target: SSAValue, timeout_ns: int, backoff_ns: int,
                record: SSAValue | None = None,
                describe: Mapping[str, SSAValue] | None = None) -> list:
    """Ops that spin (acquire loads, backoff) until *ptr >= target; trap after `timeout_ns`
    (first writing `describe` + the value seen into `record`, when there is one)."""
    e = _Emitter()
    start = e.emit(nvvm.read_sreg("globaltimer"))

    before = _Emitter()
    seen = before.emit(nvvm.LoadOp(ptr, i32, ordering="acquire", scope="gpu"))
    ready = before.emit(arith.CmpiOp(seen, target, "sge"))
    now = before.emit(nvvm.read_sreg("globaltimer"))
    elapsed = before.emit(arith.SubiOp(now, start))
    timed_out = before.emit(arith.CmpiOp(elapsed, before.const(timeout_ns, i64), "sgt"))
    on_timeout: list[Operation] = []
    if record is not None:
        on_timeout += _record_timeout(record, {**(describe or {}), "expected": target,
                                               "seen": seen})
    before.op(scf.IfOp(timed_out, [], [*on_timeout, nvvm.TrapOp(), scf.YieldOp()]))
    keep_spinning = before.emit(arith.XOrIOp(ready, before.const(1, i1)))
    before.op(scf.ConditionOp(keep_spinning))

    after = _Emitter()
    after.op(nvvm.NanosleepOp(after.const(backoff_ns, i32)))
    after.op(scf.YieldOp())
    e.op(scf.WhileOp([], [], before.ops, after.ops))
    return e.ops


TILE_SLOT_GLOBAL = "__tilesync_tile_slot"


def _shared_slot(func: gpu.FuncOp) -> SSAValue:
    """A one-word shared-memory variable through which thread 0 hands the slot to its block."""
    gmod = func.parent_op()
    assert isinstance(gmod, gpu.ModuleOp)
    slot_type = MemRefType(i32, [1], NoneAttr(), IntegerAttr(SHARED_ADDRESS_SPACE, i64))
    if SymbolTable.lookup_symbol(gmod, TILE_SLOT_GLOBAL) is None:
        gmod.body.blocks.first.insert_op_before(
            memref.GlobalOp.get(StringAttr(TILE_SLOT_GLOBAL), slot_type, UnitAttr()),
            gmod.body.blocks.first.first_op)
    return memref.GetGlobalOp(TILE_SLOT_GLOBAL, slot_type)


class LowerOrderedTile(RewritePattern):
    """sync.tile with an order: tiles handed out in block dispatch order (cuSync's tile()).

    Thread 0 takes the next slot of a global atomic counter and the block reads its tile from
    the order (arithmetic for row/column-major, an uploaded table otherwise). A block spinning
    on a tile thus knows every earlier tile of the order was taken by a block already running.
    The counter is never reset: slot = count mod blocks, so relaunches need no memset.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sync.TileOp, rewriter: PatternRewriter, /):
        if op.order is None:
            return
        kind = op.order.kind.data
        if kind not in ("row_major", "column_major", "table"):
            raise DiagnosticException(f"convert-sync-to-nvvm: tile order '{kind}' needs the "
                                      "grid of its stage (a sync.stage naming this kernel)")
        func = op.parent_op()
        while func is not None and not isinstance(func, gpu.FuncOp):
            func = func.parent_op()
        if func is None:
            raise DiagnosticException("convert-sync-to-nvvm: an ordered sync.tile must be "
                                      "inside a gpu.func")
        counter = sync_arg(func, TILE_COUNTER, MemRefType(i32, [1]))
        table = (sync_arg(func, ORDER_TABLE, MemRefType(i32, [DYNAMIC_INDEX]))
                 if kind == "table" else None)
        if table is not None:
            func.attributes[ORDER_TABLE_ATTR] = DenseArrayBase.from_list(i32, op.order.values)

        e = _Emitter()
        slot_ref = e.emit(_shared_slot(func))
        zero = e.const(0, IndexType())
        leader = _is_leader(e)
        take = _Emitter()
        ptr = take.emit(UnrealizedConversionCastOp.get([counter], [convert_type(counter.type)]))
        count = take.emit(nvvm.AtomicOp("add", ptr, take.const(1, i32), "relaxed", "gpu"))
        take.op(memref.StoreOp.get(count, slot_ref, [zero]))
        take.op(scf.YieldOp())
        e.op(scf.IfOp(leader, [], take.ops))
        e.op(gpu.BarrierOp())
        count = e.emit(memref.LoadOp.get(slot_ref, [zero]))
        extents = [e.emit(gpu.GridDimOp(gpu.DimensionAttr(d))) for d in _DIMS]
        blocks = e.emit(arith.MuliOp(e.emit(arith.MuliOp(extents[0], extents[1])), extents[2]))
        blocks32 = e.emit(arith.IndexCastOp(blocks, i32))
        slot = e.emit(arith.IndexCastOp(e.emit(arith.RemUIOp(count, blocks32)), IndexType()))
        linear = e.emit(memref.LoadOp.get(table, [slot])) if table is not None else slot
        if table is not None:
            linear = e.emit(arith.IndexCastOp(linear, IndexType()))
        rank = len(op.results)
        dims = extents[:rank]
        # row-major: the last coordinate varies fastest; column-major: the first
        order = range(rank - 1, -1, -1) if kind != "column_major" else range(rank)
        coords: dict[int, SSAValue] = {}
        rest = linear
        for position, d in enumerate(order):
            if position == rank - 1:
                coords[d] = rest
            else:
                coords[d] = e.emit(arith.RemUIOp(rest, dims[d]))
                rest = e.emit(arith.DivUIOp(rest, dims[d]))
        rewriter.replace(op, e.ops, [coords[d] for d in range(rank)])


class LowerTile(RewritePattern):
    """sync.tile without an order → the block's coordinates."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sync.TileOp, rewriter: PatternRewriter, /):
        if op.order is not None:
            return
        ids = [gpu.BlockIdOp(gpu.DimensionAttr(_DIMS[i])) for i in range(len(op.results))]
        rewriter.replace(op, ids, [i.results[0] for i in ids])


def _enclosing_kernel(op: Operation) -> gpu.FuncOp | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, gpu.FuncOp):
        parent = parent.parent_op()
    return parent


def _debug_description(e: _Emitter, op: sync.WaitOp, func: gpu.FuncOp,
                       index: SSAValue) -> dict[str, SSAValue]:
    """The kernel tag, semaphore parameter (-1 if not a parameter), index and block, i32."""
    sems = op.sems
    position = sems.index if isinstance(sems, BlockArgument) and sems.owner is \
        func.body.blocks.first else -1
    ids = [e.emit(arith.IndexCastOp(e.emit(gpu.BlockIdOp(gpu.DimensionAttr(d))), i32))
           for d in _DIMS]
    return {"kernel_tag": e.const(kernel_tag(func.sym_name.data), i32),
            "param": e.const(position, i32), "index": e.emit(arith.IndexCastOp(index, i32)),
            "block_x": ids[0], "block_y": ids[1], "block_z": ids[2]}


@dataclass
class LowerWait(RewritePattern):
    default_timeout_ns: int
    backoff_ns: int
    debug: bool = False

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sync.WaitOp, rewriter: PatternRewriter, /):
        e = _Emitter()
        posts = e.const(op.policy.posts.data, i32)
        target = e.emit(arith.MuliOp(op.epoch, posts))
        leader = _is_leader(e)
        inner = _Emitter()
        ptr, index = _semaphore_pointer(inner, op.sems, list(op.tile), op.policy)
        timeout = op.timeout_ns.value.data if op.timeout_ns is not None else \
            self.default_timeout_ns
        func = _enclosing_kernel(op)
        record, describe = None, None
        if self.debug and func is not None:
            # the parameter must exist before the description reads parameter positions
            record = sync_arg(func, DEBUG_RECORD, MemRefType(i32, [DYNAMIC_INDEX]))
            describe = _debug_description(inner, op, func, index)
        inner.ops += _spin_until(ptr, target, timeout, self.backoff_ns, record, describe)
        inner.op(scf.YieldOp())
        e.op(scf.IfOp(leader, [], inner.ops))
        e.op(gpu.BarrierOp())
        rewriter.replace(op, e.ops, [])


class LowerPost(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sync.PostOp, rewriter: PatternRewriter, /):
        e = _Emitter()
        e.op(gpu.BarrierOp())
        leader = _is_leader(e)
        inner = _Emitter()
        ptr, _ = _semaphore_pointer(inner, op.sems, list(op.tile), op.policy)
        inner.op(nvvm.FenceOp("acq_rel", "gpu"))
        inner.op(nvvm.ReduceOp("add", ptr, inner.const(1, i32), ordering="relaxed", scope="gpu"))
        inner.op(scf.YieldOp())
        e.op(scf.IfOp(leader, [], inner.ops))
        rewriter.replace(op, e.ops, [])


# --- kernel hooks (owned by the sync-passes engineer; kept to this one pattern) ---------------
class EraseSyncHooks(RewritePattern):
    """sync.load_point / sync.store_point are markers with no code of their own: the waits and
    posts they call for were put beside them by sync-insert-post-wait (which also erases the
    hooks of kernels and operands nothing depends on). Left-over markers vanish here."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if isinstance(op, sync.HOOK_OPS):
            rewriter.erase(op)


def adopt_stage_orders(module: ModuleOp) -> None:
    """A stage's tile order (set by sync-tile-order and friends) reaches its kernel's sync.tile
    ops that name none, so the order passes need not edit kernels."""
    for stage in module.walk():
        if not isinstance(stage, sync.StageOp) or stage.order is None:
            continue
        kernel = SymbolTable.lookup_symbol(module, stage.kernel)
        if not isinstance(kernel, gpu.FuncOp):
            continue
        for tile in kernel.walk():
            if isinstance(tile, sync.TileOp) and tile.order is None:
                tile.order = stage.order
            if isinstance(tile, sync.TileOp) and tile.order.kind.data == "strided":
                # StridedSync's order: its permutation of the stage's grid, as a table
                tile.order = sync.OrderAttr("table", order_permutation(tile.order,
                                                                       stage.grid_shape))


@dataclass(frozen=True)
class ConvertSyncToNVVMPass(ModulePass):
    """Lower sync.tile / sync.wait / sync.post inside kernels; host-level sync ops stay."""

    name = "convert-sync-to-nvvm"

    default_timeout_ns: int = DEFAULT_TIMEOUT_NS
    backoff_ns: int = DEFAULT_BACKOFF_NS
    debug: bool = False  # timed-out waits describe themselves in a host-mapped record

    def __post_init__(self) -> None:
        if not 0 < self.default_timeout_ns < 1 << 63:
            raise ValueError("option 'default_timeout_ns' must be a positive number of "
                             f"nanoseconds, got {self.default_timeout_ns}")
        if not 0 <= self.backoff_ns <= MAX_BACKOFF_NS:
            raise ValueError(f"option 'backoff_ns' must be in [0, {MAX_BACKOFF_NS}] (nanosleep "
                             f"sleeps at most 1 ms), got {self.backoff_ns}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        adopt_stage_orders(op)
        apply_patterns(op, [LowerOrderedTile(), LowerTile(),
                            LowerWait(self.default_timeout_ns, self.backoff_ns, self.debug),
                            LowerPost(), EraseSyncHooks()], recursive=True)

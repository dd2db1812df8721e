"""`convert-sync-to-nvvm`: the kernel-level sync ops (tile, wait, post) as NVVM code.

Built from the primitives of `sync_primitives.SyncBuilder`:
- post: every thread of the block has stored its part of the tile (`bar.sync`), then the
  block's first thread makes those stores visible at gpu scope and adds 1 to the semaphore
  (`release_add`: `fence.acq_rel.gpu` + `red.relaxed.gpu`).
- wait: the first thread spins on an acquire load until the semaphore reaches
  `epoch * posts` (`spin_until`: `ld.acquire.gpu` every iteration, `nanosleep` backoff,
  `%globaltimer` timeout and trap, the debug record in debug builds); then `bar.sync` so the
  whole block reads after the acquire. A `single_thread` wait spins in the thread that issues
  the loads, without a barrier; an `async_proxy` wait then fences the proxies
  (`fence.proxy.async.global`), since bulk tensor copies do not see the generic acquire.
  Semaphores are never reset: the epoch (launch count) makes a relaunch or a graph replay need
  no memset.
- probe: the block's threads split the points, an acquire load and a compare each (no
  spin), and `bar.red.or` tells all of them whether any semaphore was short; a wait
  `unless` the probe's answer is skipped where it is true.
- post by part of the block (`threads N`): named barrier SYNC_NAMED_BARRIER of the N threads
  that stored the tile instead of the block barrier.
- ordered tile: the first thread takes the next slot of a global counter (relaxed `atom.add`)
  and hands it to the block through shared memory.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, arith, func, gpu, llvm, memref, scf
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
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.ir.affine import AffineMap
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.traits import SymbolTable

from tilesync.analysis.stage_graph import StageGraph
from tilesync.analysis.tile_order import kernel_order_error, order_permutation
from tilesync.compat.rewrite_driver import apply_patterns
from tilesync.contract import (
    DEBUG_RECORD,
    FILLED_ATTR,
    ORDER_TABLE,
    ORDER_TABLE_ATTR,
    SYNC_NAMED_BARRIER,
    TILE_COUNTER,
    kernel_tag,
)
from tilesync.dialects import nvvm, sync
from tilesync.dialects.kernel_args import sync_arg
from tilesync.dialects.locations import diagnostic
from tilesync.dialects.sync import ENUMERATION_LIMIT
from tilesync.lowering.llvm_conversion import located_type_errors
from tilesync.lowering.sync_primitives import SyncBuilder
from tilesync.lowering.type_conversion import SHARED_ADDRESS_SPACE, convert_type
from tilesync.transforms.sync.fuse_launches import order_coordinates

PASS_NAME = "convert-sync-to-nvvm"

_DIMS = (gpu.DimensionEnum.X, gpu.DimensionEnum.Y, gpu.DimensionEnum.Z)
DEFAULT_TIMEOUT_NS = 10_000_000_000
"""How long a semaphore wait spins before it traps: the option `default_timeout_ns`, which
convert-tile-to-nvvm takes too and turns into its mbarrier waits' timeout."""
DEFAULT_BACKOFF_NS = 64
MAX_BACKOFF_NS = 1_000_000


def mbarrier_timeout_ns(semaphore_timeout_ns: int) -> int:
    """An mbarrier wait's timeout: twice the semaphore waits'. The thread that completes an
    mbarrier (a TMA producer with sync hooks) may itself spin on a semaphore, up to the
    semaphore timeout, having started after the barrier's waiters; the margin lets the
    semaphore's trap, whose error names the semaphore, come first."""
    return min(2 * semaphore_timeout_ns, (1 << 63) - 1)


def check_timeout_ns(timeout_ns: int) -> None:
    """The option `default_timeout_ns` must be a positive i64 number of nanoseconds."""
    if not 0 < timeout_ns < 1 << 63:
        raise ValueError("option 'default_timeout_ns' must be a positive number of "
                         f"nanoseconds, got {timeout_ns}")


def _semaphore_pointer(b: SyncBuilder, sems: SSAValue, tile: Sequence[SSAValue],
                       policy: sync.PolicyAttr) -> tuple[SSAValue, SSAValue]:
    """(address, index) of the semaphore that `policy` assigns to producer tile `tile`."""
    index = b.value(affine.ApplyOp(list(tile), AffineMapAttr(policy.sem_map.data)))
    index64 = b.value(arith.IndexCastOp(index, i64))
    base_type = convert_type(sems.type)
    assert isinstance(base_type, llvm.LLVMPointerType)
    base = b.value(UnrealizedConversionCastOp.get([sems], [base_type]))
    ptr = b.value(llvm.GEPOp(base, [llvm.GEP_USE_SSA_VAL], i32, ssa_indices=[index64],
                             result_type=base_type))
    return ptr, index


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


def _share_first_draw(func: gpu.FuncOp, op: sync.TileOp, rewriter: PatternRewriter) -> bool:
    """A block takes one tile of its order: where a kernel has several ordered sync.tile ops,
    the later ones read the first's coordinates (each lowered alone would draw a ticket of
    its own, and the block would store and post another tile than it computed). True where
    `op` was such a later one (and is gone)."""
    draws = [t for t in func.walk() if isinstance(t, sync.TileOp) and t.order is not None]
    if len(draws) < 2:
        return False
    first = draws[0]
    if first.parent_block() is not func.body.blocks.first:
        raise diagnostic(PASS_NAME, draws[1], "a kernel with several ordered sync.tile ops "
                         "takes its tile once: the first must be in the kernel's entry block, "
                         "so that it runs before the others")
    other = next((d for d in draws if d.order != first.order), None)
    if other is not None:
        raise diagnostic(PASS_NAME, other, "the ordered sync.tile ops of one kernel name "
                         "different orders: a block takes one tile")
    if op is first:
        for later in draws[1:]:
            rewriter.replace_op(later, [], list(first.results))
        return False
    rewriter.replace_op(op, [], list(first.results))
    return True


class LowerOrderedTile(RewritePattern):
    """sync.tile with an order: tiles handed out in block dispatch order (cuSync's tile()).

    Thread 0 takes the next slot of a global atomic counter and the block reads its tile from
    the order (arithmetic for row/column-major, an uploaded table otherwise). A block spinning
    on a tile thus knows every earlier tile of the order was taken by a block already running.
    The counter is never reset: slot = count mod blocks, so relaunches need no memset. It is
    64-bit: a 32-bit count wraps after 2^32 tickets, and where `blocks` does not divide 2^32
    the launch across the wrap hands out some slots twice and others never (a tile never
    posted, another posted twice), and every later launch starts mid-order.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sync.TileOp, rewriter: PatternRewriter, /):
        if op.order is None:
            return
        kind = op.order.kind.data
        if kind not in ("row_major", "column_major", "table"):
            raise diagnostic(PASS_NAME, op, f"tile order '{kind}' needs the grid of its stage "
                             "(a sync.stage naming this kernel)")
        func = op.parent_op()
        while func is not None and not isinstance(func, gpu.FuncOp):
            func = func.parent_op()
        if func is None:
            raise diagnostic(PASS_NAME, op, "an ordered sync.tile must be inside a gpu.func")
        if _share_first_draw(func, op, rewriter):
            return
        counter = sync_arg(func, TILE_COUNTER, MemRefType(i64, [1]))
        table = (sync_arg(func, ORDER_TABLE, MemRefType(i32, [DYNAMIC_INDEX]))
                 if kind == "table" else None)
        if table is not None:
            func.attributes[ORDER_TABLE_ATTR] = DenseArrayBase.from_list(i32, op.order.values)

        b = SyncBuilder(rewriter)
        slot_ref = b.value(_shared_slot(func))
        zero = b.const(0, IndexType())
        extents = [b.value(gpu.GridDimOp(gpu.DimensionAttr(d))) for d in _DIMS]
        blocks = b.value(arith.MuliOp(b.value(arith.MuliOp(extents[0], extents[1])), extents[2]))

        def take(t: SyncBuilder) -> None:
            ptr = t.value(UnrealizedConversionCastOp.get([counter], [convert_type(counter.type)]))
            count = t.atomic_add(ptr, t.const(1, i64))
            blocks64 = t.value(arith.IndexCastOp(blocks, i64))
            slot64 = t.value(arith.RemUIOp(count, blocks64))
            t.insert(memref.StoreOp.get(t.value(arith.TruncIOp(slot64, i32)), slot_ref, [zero]))

        b.in_leader(take)
        b.block_barrier()
        slot = b.value(arith.IndexCastOp(b.value(memref.LoadOp.get(slot_ref, [zero])),
                                         IndexType()))
        linear = b.value(memref.LoadOp.get(table, [slot])) if table is not None else slot
        if table is not None:
            linear = b.value(arith.IndexCastOp(linear, IndexType()))
        # row-major (and a table's entries): the last coordinate varies fastest
        decode, coords = order_coordinates("column_major" if kind == "column_major" else
                                           "row_major", linear, extents[:len(op.results)])
        for decoded in decode:
            b.insert(decoded)
        rewriter.replace(op, [], coords)


class LowerTile(RewritePattern):
    """sync.tile without an order → the block's coordinates."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sync.TileOp, rewriter: PatternRewriter, /):
        if op.order is not None:
            return
        ids = [gpu.BlockIdOp(gpu.DimensionAttr(_DIMS[i])) for i in range(len(op.results))]
        rewriter.replace(op, ids, [i.results[0] for i in ids])


def _require_function(op: Operation) -> None:
    """The spin loop and barriers of a wait or post are function code (outside one, the
    lowering would put control flow in a module's body)."""
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, gpu.FuncOp | func.FuncOp | llvm.FuncOp):
        parent = parent.parent_op()
    if parent is None:
        raise diagnostic(PASS_NAME, op, f"'{op.name}' must be inside a function")


def _enclosing_kernel(op: Operation) -> gpu.FuncOp | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, gpu.FuncOp):
        parent = parent.parent_op()
    return parent


def _debug_description(b: SyncBuilder, op: sync.WaitOp | sync.ProbeOp, func: gpu.FuncOp,
                       index: SSAValue) -> dict[str, SSAValue]:
    """The kernel tag, semaphore parameter (-1 if not a parameter), index and block, i32."""
    sems = op.sems
    position = sems.index if isinstance(sems, BlockArgument) and sems.owner is \
        func.body.blocks.first else -1
    block = b.block_fields()
    return {"kernel_tag": b.const(kernel_tag(func.sym_name.data), i32),
            "param": b.const(position, i32), "index": b.value(arith.IndexCastOp(index, i32)),
            **block}


@dataclass
class LowerWait(RewritePattern):
    default_timeout_ns: int
    backoff_ns: int
    debug: bool = False

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sync.WaitOp, rewriter: PatternRewriter, /):
        _require_function(op)
        b = SyncBuilder(rewriter)
        posts = b.const(op.policy.posts.data, i32)
        target = b.value(arith.MuliOp(op.epoch, posts))
        timeout = op.timeout_ns.value.data if op.timeout_ns is not None else \
            self.default_timeout_ns
        func = _enclosing_kernel(op)

        def spin(s: SyncBuilder) -> None:
            ptr, index = _semaphore_pointer(s, op.sems, list(op.tile), op.policy)
            record, describe = None, None
            if self.debug and func is not None:
                # the parameter must exist before the description reads parameter positions
                record = sync_arg(func, DEBUG_RECORD, MemRefType(i32, [DYNAMIC_INDEX]))
                describe = _debug_description(s, op, func, index)
            s.spin_until(ptr, target, timeout, self.backoff_ns, record, describe)

        def wait(w: SyncBuilder) -> None:
            if op.single_thread is not None:  # the thread that issues the loads waits alone
                spin(w)
            else:
                w.in_leader(spin)
                w.block_barrier()

        if op.unless is None:
            wait(b)
        else:  # the probe's answer is the block's: every thread skips, or every one waits
            b.if_(b.value(arith.XOrIOp(op.unless, b.const(1, i1))), wait)
        if op.async_proxy is not None:
            # The loads are bulk tensor copies (the async proxy), which the generic proxy's
            # acquire does not order: a proxy fence in each thread issuing them, after the
            # probe's acquire loads too where the wait is skipped.
            b.insert(nvvm.FenceProxyAsyncOp("global"))
        rewriter.erase(op)


@dataclass
class LowerProbe(RewritePattern):
    """The block's threads share the probe's points (thread t takes points t, t + threads,
    ...), each an acquire load compared with the wait's target; `bar.red.or` of "some point
    not ready" answers every thread at once. `until_ready`: each thread spins on its points
    instead (a wait's spin: its first load decides, then backoff and timeout) and a block
    barrier ends the probe, whose answer is then true."""

    default_timeout_ns: int
    backoff_ns: int
    debug: bool = False

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sync.ProbeOp, rewriter: PatternRewriter, /):
        _require_function(op)
        b = SyncBuilder(rewriter)
        target = b.value(arith.MuliOp(op.epoch, b.const(op.policy.posts.data, i32)))
        thread, threads = b.block_thread_index()
        grid = op.clipped_to.get_values() if op.clipped_to is not None else None
        if op.until_ready is not None:
            self._wait_for_points(op, b, target, thread, threads, grid)
            b.block_barrier()  # every point seen posted by some thread: the block may read
            rewriter.replace(op, arith.ConstantOp.from_int_and_width(1, 1))
            return
        missing = b.const(0, i32)
        for amap, ranges in op.parts():
            body = Block(arg_types=[IndexType(), i32])
            lb = SyncBuilder.nested(body)
            point, seen_missing = body.args
            coords = _probe_point_coords(lb, op, amap, ranges, point)

            def not_ready(t: SyncBuilder, coords: list[SSAValue] = coords) -> list[SSAValue]:
                ptr, _ = _semaphore_pointer(t, op.sems, coords, op.policy)
                seen = t.load(ptr, "acquire", "gpu")
                short = t.short_of(seen, target)
                return [t.value(arith.ExtUIOp(short, i32))]

            if grid is None:
                short = not_ready(lb)[0]
            else:  # a producer tile outside the grid is read by nobody: it counts as ready
                short = lb.if_(_inside(lb, coords, grid), not_ready,
                               lambda t: [t.const(0, i32)], [i32])[0]
            lb.insert(scf.YieldOp(lb.value(arith.OrIOp(seen_missing, short))))
            points = math.prod(r.count for r in ranges)
            loop = scf.ForOp(thread, b.const(points, IndexType()), threads, [missing],
                             Region(body))
            missing = b.insert(loop).results[0]
        some_missing = b.block_barrier_or(missing)
        rewriter.replace(op, arith.CmpiOp(some_missing, b.const(0, i32), "eq"))

    def _wait_for_points(self, op: sync.ProbeOp, b: SyncBuilder, target: SSAValue,
                         thread: SSAValue, threads: SSAValue, grid: Sequence[int] | None
                         ) -> None:
        """Each thread spins on its points until they reach `target` (a timed-out spin
        names its semaphore in the debug record)."""
        func = _enclosing_kernel(op)
        record = sync_arg(func, DEBUG_RECORD, MemRefType(i32, [DYNAMIC_INDEX])) \
            if self.debug and func is not None else None

        def spin(t: SyncBuilder, coords: list[SSAValue]) -> None:
            ptr, index = _semaphore_pointer(t, op.sems, coords, op.policy)
            describe = _debug_description(t, op, func, index) if record is not None else None
            t.spin_until(ptr, target, self.default_timeout_ns, self.backoff_ns, record,
                         describe)

        for amap, ranges in op.parts():
            body = Block(arg_types=[IndexType()])
            lb = SyncBuilder.nested(body)
            coords = _probe_point_coords(lb, op, amap, ranges, body.args[0])
            if grid is None:
                spin(lb, coords)
            else:  # a producer tile outside the grid is read by nobody: no wait
                lb.if_(_inside(lb, coords, grid), lambda t, coords=coords: spin(t, coords))
            lb.insert(scf.YieldOp())
            points = math.prod(r.count for r in ranges)
            b.insert(scf.ForOp(thread, b.const(points, IndexType()), threads, [],
                               Region(body)))


def _probe_point_coords(b: SyncBuilder, op: sync.ProbeOp, amap: AffineMap,
                        ranges: Sequence[sync.ProbeRange], point: SSAValue) -> list[SSAValue]:
    """The producer tile of a probe part's point number `point` (its symbols' values in
    row-major order of their ranges)."""
    index = IndexType()
    syms: list[SSAValue] = [point] * len(ranges)
    rest = point
    for j in reversed(range(len(ranges))):  # the last symbol varies fastest
        r = ranges[j]
        count = b.const(r.count, index)
        k = b.value(arith.RemUIOp(rest, count)) if j else rest
        scaled = b.value(arith.MuliOp(k, b.const(r.step, index)))
        syms[j] = b.value(arith.AddiOp(scaled, b.const(r.lo, index)))
        if j:
            rest = b.value(arith.DivUIOp(rest, count))
    return [b.value(affine.ApplyOp([*op.tile, *syms], AffineMapAttr(
        AffineMap(amap.num_dims, amap.num_symbols, (e,))))) for e in amap.results]


def _inside(b: SyncBuilder, coords: Sequence[SSAValue], grid: Sequence[int]) -> SSAValue:
    """Whether producer tile `coords` lies in `grid`."""
    index = IndexType()
    inside = b.const(1, i1)
    for c, extent in zip(coords, grid, strict=True):
        low = b.value(arith.CmpiOp(c, b.const(0, index), "sge"))
        high = b.value(arith.CmpiOp(c, b.const(extent, index), "slt"))
        inside = b.value(arith.AndIOp(inside, b.value(arith.AndIOp(low, high))))
    return inside


class LowerPost(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: sync.PostOp, rewriter: PatternRewriter, /):
        _require_function(op)
        b = SyncBuilder(rewriter)
        if op.async_proxy is not None:  # the tile's bulk copies have written it, in order
            # wait_group waits for committed groups only: a copy issued after the thread's
            # last commit would still be in flight at the release
            b.insert(nvvm.CpAsyncBulkCommitGroupOp())
            b.insert(nvvm.CpAsyncBulkWaitGroupOp(0))
            b.insert(nvvm.FenceProxyAsyncOp("global"))
        # every thread that stored part of the tile has stored it: the block, or its first N
        if op.threads is None:
            b.block_barrier()
        else:
            b.insert(nvvm.BarrierSyncOp(SYNC_NAMED_BARRIER, op.threads.value.data))

        def release(s: SyncBuilder) -> None:
            ptr, _ = _semaphore_pointer(s, op.sems, list(op.tile), op.policy)
            s.release_add(ptr)

        b.in_leader(release)
        rewriter.erase(op)


class EraseSyncHooks(RewritePattern):
    """sync.load_point / sync.store_point are markers with no code of their own: the waits and
    posts they call for were put beside them by sync-insert-post-wait (which also erases the
    hooks of kernels and operands nothing depends on). Left-over markers vanish here."""

    @staticmethod
    def matches_op_class(cls: type) -> bool:  # the ops it may rewrite (pattern driver)
        return issubclass(cls, sync.HOOK_OPS)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if isinstance(op, sync.HOOK_OPS):
            rewriter.erase(op)


def refuse_unfilled_hooks(module: ModuleOp) -> None:
    """A hook left unfilled in the kernel of a stage that a sync.dependency names: lowering
    would erase it and emit a kernel that synchronizes nothing, silently. sync-insert-post-wait
    fills (or erases) every hook the dependencies call for, so one left means it never ran."""
    graph = StageGraph.of(module)
    named = {name for dep in graph.dependencies
             for name in (dep.producer.root_reference.data, dep.consumer.root_reference.data)}
    for name in sorted(named & set(graph.stages)):
        kernel = SymbolTable.lookup_symbol(module, graph.stages[name].kernel)
        if not isinstance(kernel, gpu.FuncOp):
            continue
        for hook in kernel.walk():
            if isinstance(hook, sync.HOOK_OPS) and FILLED_ATTR not in hook.attributes:
                raise diagnostic(PASS_NAME, hook, f"this {hook.name} of stage @{name}'s kernel "
                                 "was never filled: lowering would drop the synchronization "
                                 "its sync.dependency calls for (run sync-generate-policies, "
                                 "sync-insert-post-wait and sync-verify first, as tilesync "
                                 "compile does)")


def adopt_stage_orders(module: ModuleOp) -> None:
    """A stage's tile order (set by sync-tile-order and friends) reaches its kernel's sync.tile
    ops that name none, so the order passes need not edit kernels."""
    misordered = kernel_order_error(module)
    if misordered is not None:
        raise diagnostic(PASS_NAME, *misordered)
    for stage in StageGraph.of(module).stages.values():
        if stage.order is None:
            continue
        kernel = SymbolTable.lookup_symbol(module, stage.kernel)
        if not isinstance(kernel, gpu.FuncOp):
            continue
        for tile in kernel.walk():
            if isinstance(tile, sync.TileOp) and tile.order is None:
                tile.order = stage.order
            if isinstance(tile, sync.TileOp) and tile.order.kind.data == "strided":
                # StridedSync's order: its permutation of the stage's grid, as a table
                tiles = math.prod(stage.grid_shape)
                if tiles > ENUMERATION_LIMIT:
                    raise diagnostic(PASS_NAME, stage, f"the strided tile order of "
                                     f"{stage.kernel}'s sync.tile becomes a table of this "
                                     f"stage's tiles: {tiles} are more than "
                                     f"{ENUMERATION_LIMIT}")
                tile.order = sync.OrderAttr("table", order_permutation(tile.order,
                                                                       stage.grid_shape))


@dataclass(frozen=True)
class ConvertSyncToNVVMPass(ModulePass):
    """Lower sync.tile / sync.wait / sync.post inside kernels; host-level sync ops stay."""

    name = PASS_NAME

    default_timeout_ns: int = DEFAULT_TIMEOUT_NS
    backoff_ns: int = DEFAULT_BACKOFF_NS
    debug: bool = False  # timed-out waits describe themselves in a host-mapped record

    def __post_init__(self) -> None:
        check_timeout_ns(self.default_timeout_ns)
        if not 0 <= self.backoff_ns <= MAX_BACKOFF_NS:
            raise ValueError(f"option 'backoff_ns' must be in [0, {MAX_BACKOFF_NS}] (nanosleep "
                             f"sleeps at most 1 ms), got {self.backoff_ns}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        refuse_unfilled_hooks(op)
        adopt_stage_orders(op)
        with located_type_errors(PASS_NAME, op):
            apply_patterns(op, [LowerOrderedTile(), LowerTile(),
                                LowerWait(self.default_timeout_ns, self.backoff_ns, self.debug),
                                LowerProbe(self.default_timeout_ns, self.backoff_ns, self.debug),
                                LowerPost(), EraseSyncHooks()], recursive=True)

"""`sync-insert-post-wait`: fill each kernel's sync hooks with the waits and posts that the
declared dependencies require (cuSync's wait/post calls, generated instead of hand-written).

For every `sync.dependency @P -> @C operand N`, in C's kernel (`kernel = @mod::@func` of the
stage):

* each `sync.load_point operand N [tile] (step %k)?` gets, in front of it, `sync.wait`s on P's
  semaphore array for exactly the producer tiles that consumer tile reads (the dependency
  map over its forall box; with `step %k` the first forall variable s0 is %k), one wait per
  distinct semaphore of P's policy: a forall variable the semaphore does not depend on is
  not looped over (RowSync on a row: one wait), the others become an `scf.for` over their
  range, stepping over values that share a semaphore (TileSync: one wait per tile). With a
  step, only the first steps that between them read every semaphore the tile reads wait
  (`steps_to_wait`: RowSync along a GEMM's k waits at step 0; TileSync at every step where
  a producer tile is first read: every fourth where it spans four k-steps). Every
  produced operand gets its waits, not only the first (a fault of the reference cuSync).
  The filled hook stays, marked `sync.filled`, as the point `sync-verify` checks the waits
  against; `convert-sync-to-nvvm` erases it.
* Where a consumer tile waits for one producer at several semaphores (TileSync along a
  GEMM's k), one `sync.probe` of them all goes in front of the tile's first load of them, out
  of the k-loop, and every such wait gets `unless %ready`: the block's threads load the
  semaphores at once, so a tile whose producer tiles were posted long before (a consumer two
  kernels downstream, stream order) pays one round trip instead of one per wait, each of
  which stalls the whole block. Only for block-wide hooks (the probe ANDs in a block
  barrier) that share one tile; `probe=false` leaves the waits alone. With
  `probe_until_ready=true` the probe waits for them all instead (`until_ready`: every thread
  spins on its share, in parallel), so the waits after it never run: a consumer launched
  early (PDL), whose probe would fail, then pays one round trip for the tile instead of a
  block-wide wait at each step, and gives up starting its first steps before the last of
  its producer tiles is posted. A stage marked `sync.wait_at_probe` gets such probes alone.
* P's `sync.store_point [tile]` becomes `sync.post` on P's own semaphore array.

Hooks that nothing needs (operands no stage produces, stages nobody reads, kernels of no
stage) are erased, so a kernel without dependencies lowers with no trace of them. The
pipeline (`sync-generate-policies, sync-insert-post-wait, sync-verify, ...`) runs this pass
before lowering.

A kernel gets trailing parameters, recorded by role in its `sync.args` attribute so the host
runtime binds them: `"sems:@S"` (its own array, when a stage reads it), `"sems:@P"` per
producer it waits on, and `"epoch"` (the launch count) when it has any sync. A stage that is
read gets `num_semaphores` (from its policy and grid). A kernel shared by several stages is
cloned per stage (`@func_stage`), since each stage synchronizes differently.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine, arith, gpu, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AffineMapAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
    i32,
    i64,
)
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.ir.affine import (
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
    AffineSymExpr,
)
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tilesync.analysis.dependency_analysis import (
    WaitLoop,
    WaitSteps,
    steps_to_wait,
    wait_loops,
)
from tilesync.analysis.kernel_eval import constant_index
from tilesync.analysis.stage_graph import StageGraph
from tilesync.contract import (
    EPOCH,
    FILLED_ATTR,
    NUM_SEMAPHORES_ATTR,
    WAIT_AT_PROBE_ATTR,
    Role,
)
from tilesync.dialects import sync
from tilesync.dialects.kernel_args import lookup_kernel, sync_arg
from tilesync.dialects.locations import diagnostic

PASS = "sync-insert-post-wait"


def semaphore_type() -> MemRefType:
    return MemRefType(i32, [DYNAMIC_INDEX])


def hooks(func: Operation) -> list[Operation]:
    return [op for op in func.walk() if isinstance(op, sync.HOOK_OPS)]


def erase_unfilled_hooks(func: Operation) -> None:
    for op in hooks(func):
        if FILLED_ATTR not in op.attributes:
            op.detach()
            op.erase()


def _index_const(value: int) -> arith.ConstantOp:
    return arith.ConstantOp(IntegerAttr(value, IndexType()))


def _waited_map(dep: sync.DependencyOp, loops: Sequence[WaitLoop]) -> tuple[list[int], AffineMap]:
    """The dependency's map with the symbols the semaphore does not depend on (`loops`'
    invariant ones) fixed at their first value, and the live ones, the step or a loop
    variable, renumbered densely (returned: their positions in the dependency's map)."""
    tiles_map = dep.tiles_map
    invariant = {loop.symbol: loop.lo for loop in loops if loop.invariant}
    live = [i for i in range(tiles_map.num_symbols) if i not in invariant]
    replacements = [
        AffineExpr.constant(invariant[i]) if i in invariant else AffineExpr.symbol(live.index(i))
        for i in range(tiles_map.num_symbols)
    ]
    dims = [AffineExpr.dimension(i) for i in range(tiles_map.num_dims)]
    results = [e.replace_dims_and_symbols(dims, replacements) for e in tiles_map.results]
    return live, AffineMap(tiles_map.num_dims, len(live), tuple(results))


def build_waits(
    dep: sync.DependencyOp,
    policy: sync.PolicyAttr,
    consumer_grid: Sequence[int],
    tile: Sequence[SSAValue],
    step: SSAValue | None,
    sems: SSAValue,
    epoch: SSAValue,
    single_thread: bool = False,
    async_proxy: bool = False,
    wait_steps: WaitSteps | None = None,
    unless: SSAValue | None = None,
) -> list[Operation]:
    """The ops that wait for every producer tile `tile` reads through `dep` (s0 = step); the
    waits take the participants of their hook (`single_thread`, `async_proxy`) and are
    skipped where `unless` (the tile's probe of the producer) is true. With
    `wait_steps` (steps_to_wait's: every semaphore a tile reads is first read at one of its
    first steps, at an offset from the range's start that is a multiple of the period) the
    waits run at those steps only: a tile's loads run from the first step of the range up,
    and sync-verify checks that every other step is covered by them."""
    tiles_map = dep.tiles_map
    bound = {0} if step is not None and tiles_map.num_symbols > 0 else set()
    loops = wait_loops(policy, dep, consumer_grid, bound)
    looped = [loop for loop in loops if not loop.invariant]
    live, waited_map = _waited_map(dep, loops)
    results = waited_map.results
    values: dict[int, SSAValue] = {}  # live symbol position (renumbered) → value
    if bound:
        values[live.index(0)] = step  # type: ignore[assignment]

    def body_ops() -> list[Operation]:
        ops: list[Operation] = []
        coords: list[SSAValue] = []
        for expr in results:
            if isinstance(expr, AffineDimExpr):
                coords.append(tile[expr.position])
            elif isinstance(expr, AffineSymExpr):
                coords.append(values[expr.position])
            elif isinstance(expr, AffineConstantExpr):
                const = _index_const(expr.value)
                ops.append(const)
                coords.append(const.result)
            else:
                one = AffineMap(tiles_map.num_dims, len(live), (expr,))
                operands = [*tile, *(values[i] for i in range(len(live)))]
                apply = affine.ApplyOp(operands, AffineMapAttr(one))
                ops.append(apply)
                coords.append(apply.result)
        wait = sync.WaitOp(sems, coords, policy, epoch, single_thread=single_thread,
                           async_proxy=async_proxy, unless=unless)
        if dep.clipped is None:
            return [*ops, wait]
        # a clipped dependency reads nothing outside the producer grid: guard the wait
        inside: SSAValue | None = None
        for coord, extent in zip(coords, dep.producer_stage().grid_shape):
            zero, bound = _index_const(0), _index_const(extent)
            low = arith.CmpiOp(coord, zero, "sge")
            high = arith.CmpiOp(coord, bound, "slt")
            both = arith.AndIOp(low, high)
            ops += [zero, bound, low, high, both]
            if inside is not None:
                both = arith.AndIOp(inside, both)
                ops.append(both)
            inside = both.result
        assert inside is not None
        return [*ops, scf.IfOp(inside, [], [wait, scf.YieldOp()])]

    def nest(remaining: list) -> list[Operation]:
        if not remaining:
            return body_ops()
        loop, rest = remaining[0], remaining[1:]
        lo, hi, st = _index_const(loop.lo), _index_const(loop.hi), _index_const(loop.step)
        block = Block(arg_types=[IndexType()])
        values[live.index(loop.symbol)] = block.args[0]
        block.add_ops([*nest(rest), scf.YieldOp()])
        block.args[0].name_hint = f"s{loop.symbol}"
        return [lo, hi, st, scf.ForOp(lo, hi, st, [], block)]

    waits = nest(looped)
    lo, hi = dep.ranges[0] if bound else (0, 0)
    if not bound or wait_steps is None or not _ascends_from(step, lo):
        return waits
    assert step is not None
    ops: list[Operation] = []
    guard: SSAValue | None = None  # i1: this step waits
    if wait_steps.first < hi - lo:
        last = _index_const(lo + wait_steps.first)
        early = arith.CmpiOp(step, last, "slt")
        ops += [last, early]
        guard = early.result
    if wait_steps.period > 1:
        offset: SSAValue = step
        if lo:
            start = _index_const(lo)
            from_start = arith.SubiOp(step, start)
            ops += [start, from_start]
            offset = from_start.result
        period, zero = _index_const(wait_steps.period), _index_const(0)
        phase = arith.RemUIOp(offset, period)
        first_read = arith.CmpiOp(phase, zero, "eq")
        ops += [period, zero, phase, first_read]
        if guard is None:
            guard = first_read.result
        else:
            both = arith.AndIOp(guard, first_read.result)
            ops.append(both)
            guard = both.result
    if guard is None:
        return waits
    return [*ops, scf.IfOp(guard, [], [*waits, scf.YieldOp()])]


def _ascends_from(step: SSAValue | None, lo: int) -> bool:
    """Whether the step values `step` takes are known to be visited upward from the range's
    start `lo`, so that the waits of the range's first steps run before any later step's
    loads: a constant (a pipeline's prologue), the induction variable of an scf.for with
    constant bounds starting at `lo` and a positive step, or that variable plus a constant
    (a prefetch `kt + 2`). Anything else (a loop starting at a slice's `2 z`, a reversed
    `n - 1 - i`) waits at every step."""
    if step is None:
        return False
    if constant_index(step) is not None:
        return True
    owner = step.owner
    if isinstance(owner, arith.AddiOp):
        for var, offset in ((owner.lhs, owner.rhs), (owner.rhs, owner.lhs)):
            shift = constant_index(offset)
            if shift is not None and shift >= 0 and _loop_from(var, lo):
                return True
        return False
    return _loop_from(step, lo)


def _loop_from(value: SSAValue, lo: int) -> bool:
    """Whether `value` is the induction variable of an scf.for from constant `lo` upward."""
    if not isinstance(value, BlockArgument) or value.index != 0:
        return False
    loop = value.block.parent_op()
    if not isinstance(loop, scf.ForOp):
        return False
    first, stride = constant_index(loop.lb), constant_index(loop.step)
    return first == lo and stride is not None and stride > 0



# A probe of more points than this would take the block several rounds of loads: the waits
# alone are as good.
MAX_PROBE_POINTS = 1024
# Waits that all run back to back before a tile's first load get a probe only from this many
# semaphores on.
# Measured on an H200: the conv chain's five halo rows 2-6% slower with a probe (09eae51);
# attention's softmax under TileSync at T = 4096, a row of 32 score tiles read at once,
# 51.8 -> 29.2 us with it (cdfb9b2).
MIN_PROBE_AT_ONCE = 16


def _available_before(value: SSAValue, point: Operation) -> bool:
    """Whether `value` is defined where an op inserted just before `point` could use it."""
    if isinstance(value, BlockArgument):
        return value.block.find_ancestor_op_in_block(point) is not None
    owner = value.owner
    assert isinstance(owner, Operation)
    block = owner.parent_block()
    if block is None:
        return False
    holder = block.find_ancestor_op_in_block(point)
    return holder is not None and holder is not owner and block.get_operation_index(owner) < \
        block.get_operation_index(holder)


def _probe_point(points: Sequence[sync.LoadPointOp]) -> Operation | None:
    """The op a probe for these load points goes in front of: in the innermost block that
    holds them all, the first op that holds one, and from there out of every region (the
    k-loop, its branches) that the tile is known in front of: the probe runs once per tile,
    before any of their waits. None where the tile is not known there."""
    def chain(op: Operation) -> list[tuple[Block, Operation]]:
        out = []
        while (block := op.parent_block()) is not None:
            out.append((block, op))
            if (parent := block.parent_op()) is None:
                break
            op = parent
        return out[::-1]

    chains = [chain(lp) for lp in points]
    depth = 0
    while all(len(c) > depth for c in chains) and \
            len({id(c[depth][0]) for c in chains}) == 1:
        depth += 1
    if depth == 0:
        return None
    block = chains[0][depth - 1][0]
    first = min((c[depth - 1][1] for c in chains), key=block.get_operation_index)
    tile = points[0].tile
    if not all(_available_before(t, first) for t in tile):
        return None
    while (parent := first.parent_op()) is not None and not isinstance(parent, gpu.FuncOp) \
            and all(_available_before(t, parent) for t in tile):
        first = parent
    return first


def insert_probes(stage: sync.StageOp, incoming: Sequence[sync.DependencyOp],
                  graph: StageGraph, load_points: Sequence[sync.LoadPointOp],
                  producer_sems: dict[str, SSAValue], epoch: SSAValue,
                  wait_steps: dict[sync.DependencyOp, WaitSteps], until_ready: bool = False
                  ) -> dict[str, SSAValue]:
    """Per producer whose tiles a consumer tile waits for at several semaphores, a
    `sync.probe` of all of them in front of the tile's first load of them; returns each
    probe's answer (the waits take it as `unless`). Only where the block waits together
    (the probe's barrier needs every thread) and the load points share one tile. Where the
    waits all run back to back before the tile's first load (a load point without a step, or
    every semaphore first read at the first k-step: `wait_steps`), only for MIN_PROBE_AT_ONCE
    semaphores or more. `until_ready`: the probes wait for their semaphores (in parallel)
    instead of testing them, so the waits after them never run; then for any two
    semaphores or more."""
    probes: dict[str, SSAValue] = {}
    by_producer: dict[str, list[sync.DependencyOp]] = {}
    for dep in incoming:
        by_producer.setdefault(dep.producer.root_reference.data, []).append(dep)
    for producer, deps in by_producer.items():
        operands = {d.operand.data for d in deps}
        points = [lp for lp in load_points if lp.operand.data in operands]
        if not points or any(lp.single_thread is not None or lp.async_proxy is not None
                             for lp in points):
            continue
        if any(list(lp.tile) != list(points[0].tile) for lp in points):
            continue
        policy = graph.stages[producer].policy
        assert policy is not None
        parts = []
        for dep in deps:
            loops = wait_loops(policy, dep, stage.grid_shape)
            _, probed = _waited_map(dep, loops)
            parts.append((probed, [sync.ProbeRange(loop.lo, loop.hi, loop.step)
                                   for loop in loops if not loop.invariant]))
        count = sum(math.prod(r.count for r in ranges) for _, ranges in parts)
        if not 2 <= count <= MAX_PROBE_POINTS:
            continue  # one semaphore: its wait is the probe
        at_once = all(d not in wait_steps or wait_steps[d].first == 1 for d in deps)
        if at_once and count < MIN_PROBE_AT_ONCE and not until_ready:
            continue
        point = _probe_point(points)
        if point is None:
            continue
        clipped = any(d.clipped is not None for d in deps)
        probe = sync.ProbeOp(producer_sems[producer], list(points[0].tile), policy, epoch,
                             parts, graph.stages[producer].grid_shape if clipped else None,
                             until_ready)
        probe.ready.name_hint = f"ready_{producer}"
        Rewriter.insert_op(probe, InsertPoint.before(point))
        probes[producer] = probe.ready
    return probes


def _specialize_shared_kernels(module: ModuleOp, graph: StageGraph) -> None:
    """Give every stage its own kernel: clone a gpu.func that several stages launch."""
    first_user: dict[SymbolRefAttr, str] = {}
    for name, stage in graph.stages.items():
        if stage.kernel not in first_user:
            first_user[stage.kernel] = name
            continue
        func = lookup_kernel(module, stage.kernel, f"sync.stage @{name}", stage)
        gmod = func.parent_op()
        assert gmod is not None
        taken = {op.sym_name.data for op in gmod.walk() if isinstance(op, gpu.FuncOp)}
        new_name = f"{func.sym_name.data}_{name}"
        while new_name in taken:
            new_name += "_"
        clone = func.clone()
        clone.sym_name = StringAttr(new_name)
        Rewriter.insert_op(clone, InsertPoint.after(func))
        stage.kernel = SymbolRefAttr(stage.kernel.root_reference, [StringAttr(new_name)])


def _named(arg: SSAValue, stage: str | None) -> SSAValue:
    if arg.name_hint is None:
        arg.name_hint = "epoch" if stage is None else f"sems_{stage}"
    return arg


def _fill_stage(module: ModuleOp, graph: StageGraph, name: str, probe: bool,
                until_ready: bool = False) -> None:
    stage = graph.stages[name]
    func = lookup_kernel(module, stage.kernel, f"sync.stage @{name}", stage)
    where = f"kernel {stage.kernel} of stage @{name}"
    consumers = graph.outgoing(name)
    incoming = graph.incoming(name)
    if not consumers and not incoming:
        erase_unfilled_hooks(func)
        return
    def semaphores(stage: str) -> SSAValue:
        return _named(sync_arg(func, Role.semaphores(stage), semaphore_type()), stage)

    own = semaphores(name) if consumers else None
    producer_sems = {p: semaphores(p) for p in graph.producers(name)}
    epoch = _named(sync_arg(func, EPOCH, i32), None)

    load_points = [op for op in func.walk() if isinstance(op, sync.LoadPointOp)]
    store_points = [op for op in func.walk() if isinstance(op, sync.StorePointOp)]
    for dep in incoming:
        if not any(lp.operand.data == dep.operand.data for lp in load_points):
            raise diagnostic(
                PASS,
                dep,
                f"{where} has no sync.load_point operand {dep.operand.data}, but stage "
                f"{dep.producer} writes that operand: the kernel would read it unsynchronized",
            )
    already_posts = own is not None and any(
        isinstance(o, sync.PostOp) and o.sems == own for o in func.walk()
    )
    if consumers and not store_points and not already_posts:
        readers = ", ".join(str(d.consumer) for d in consumers)
        raise diagnostic(
            PASS,
            stage,
            f"{where} has no sync.store_point, but {readers} read its tiles and would wait forever",
        )

    unfilled = [lp for lp in load_points if FILLED_ATTR not in lp.attributes]
    wait_steps = {  # steps_to_wait of the dependencies loaded a k-step at a time
        dep: steps_to_wait(graph.producer_of(dep).policy, dep, stage.grid_shape)
        for dep in incoming if dep.ranges and any(
            lp.step is not None and lp.operand.data == dep.operand.data for lp in unfilled)}
    until_ready = until_ready or WAIT_AT_PROBE_ATTR in stage.attributes
    probes = insert_probes(stage, incoming, graph, unfilled, producer_sems, epoch,
                           wait_steps, until_ready) if probe else {}
    for lp in unfilled:
        deps = [d for d in incoming if d.operand.data == lp.operand.data]
        if not deps:
            continue  # erased below: no producer writes this operand
        ops: list[Operation] = []
        for dep in deps:
            producer = graph.producer_of(dep)
            assert producer.policy is not None  # checked by the pass first
            if len(lp.tile) != dep.tiles_map.num_dims:
                raise diagnostic(
                    PASS,
                    lp,
                    f"in {where}, sync.load_point operand {lp.operand.data} gives "
                    f"{len(lp.tile)} tile coordinates but the stage has a {stage.rank}-D grid",
                )
            producer_name = dep.producer.root_reference.data
            ops += build_waits(
                dep,
                producer.policy,
                stage.grid_shape,
                list(lp.tile),
                lp.step,
                producer_sems[producer_name],
                epoch,
                lp.single_thread is not None,
                lp.async_proxy is not None,
                wait_steps.get(dep) if lp.step is not None else None,
                probes.get(producer_name),
            )
        Rewriter.insert_op(ops, InsertPoint.before(lp))
        lp.attributes[FILLED_ATTR] = UnitAttr()

    if consumers:
        assert own is not None and stage.policy is not None
        for sp in store_points:
            if len(sp.tile) != stage.rank:
                raise diagnostic(
                    PASS,
                    sp,
                    f"in {where}, sync.store_point gives {len(sp.tile)} tile coordinates but "
                    f"the stage has a {stage.rank}-D grid",
                )
            threads = sp.threads.value.data if sp.threads is not None else None
            Rewriter.replace_op(sp, sync.PostOp(own, list(sp.tile), stage.policy, epoch,
                                                threads, sp.async_proxy is not None))
        stage.attributes[NUM_SEMAPHORES_ATTR] = IntegerAttr(
            stage.policy.num_semaphores(stage.grid_shape), i64
        )
    erase_unfilled_hooks(func)


@dataclass(frozen=True)
class InsertPostWaitPass(ModulePass):
    """Fill the kernels' sync hooks: waits before produced loads, posts after the tile's store
    (`probe`: and a probe per producer a tile waits for at several semaphores;
    `probe_until_ready`: the probes wait for all of them at once, so a tile waits for its
    producer tiles in one parallel round trip before its first load of them, not one
    block-wide wait per k-step where they were not all posted when it started)."""

    name = PASS

    probe: bool = True
    probe_until_ready: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        graph = StageGraph.of(op)
        for name in graph.stages:
            stage = graph.stages[name]
            if graph.outgoing(name) and stage.policy is None:
                raise diagnostic(
                    PASS,
                    stage,
                    f"stage @{name} is read by other stages but has no policy; run "
                    f"sync-generate-policies (or sync-select-policy) first",
                )
        _specialize_shared_kernels(op, graph)
        for name in graph.stages:
            _fill_stage(op, graph, name, self.probe, self.probe_until_ready)
        # Kernels of no stage: nothing depends on them, their hooks go.
        for func in op.walk():
            if isinstance(func, gpu.FuncOp):
                erase_unfilled_hooks(func)

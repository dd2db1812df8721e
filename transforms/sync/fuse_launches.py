"""`sync-fuse-launches`: the stages of one launch (`sync.launch ... fused`) as one kernel.

cuSync in one launch: one grid holds every block of the launch's stages. Each block takes a
ticket from one atomic counter in dispatch order (an ordered `sync.tile` over the launch's one-
dimensional grid, never reset: the ticket is the count modulo the blocks) and runs the stage
whose range of tickets holds it, in the launch's stage order, as that stage's block `ticket -
first`. A block waiting on a tile of an earlier stage thus knows the block computing it holds an
earlier ticket, so is already running (forward_progress's one-launch guarantee). Within its
stage a ticket becomes the stage's block: `gpu.block_id` and an unordered `sync.tile` are its
coordinates in the stage's grid, x fastest (the order the hardware dispatches a grid's blocks);
`gpu.grid_dim` is the stage's grid; a `sync.tile` ordered row-major or column-major is the
ticket's place in that order.

The kernel, `@<first stage>_launch`, goes into a gpu.module of its own, named on the launch it
realizes (`ONE_LAUNCH_KERNEL_ATTR`); the runtime launches it for all the stages, with each
stage's own arguments (transforms/kernel_fusion.py: their parameters in stage order, then every
role once). The shared-memory globals each stage's code uses are copied into that module under
the stage's name, all in dynamic shared memory: a block runs one stage, so those of different
stages overlap (`SHARED_OVERLAY_ATTR`: the kernel's shared memory is the largest stage's, not
their sum, which for two GEMMs would not fit). It runs after the sync passes (the waits and
posts are in the stage kernels) and before convert-sync-to-nvvm, which lowers the ticket.

The kernel's block is the largest of the stages'; a stage of a smaller block (one-dimensional,
whole warps) runs in its first threads, `gpu.block_dim` its own block, while the other warps
skip to the end and exit (a barrier of the whole block waits only for warps that have not).

Stages share a launch only where one kernel can run them (`launch_sharing_refusal`: blocks of
one size or one-dimensional ones of whole warps, whole warpgroups where a kernel reallocates
registers, no clusters, no tile order from a table, no start flag for a wait-kernel,
shared-memory globals only); a program that fuses other launches is refused at the launch.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, gpu, memref, scf
from xdsl.dialects.builtin import (
    IndexType,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.traits import SymbolTable

from tilesync.analysis.stage_graph import StageGraph, one_launch_groups
from tilesync.compat.rewrite_driver import ops_of
from tilesync.contract import (
    CLUSTER_DIMS_ATTR,
    DYNAMIC_SHARED_ATTR,
    FUSED_INTO_ATTR,
    KNOWN_BLOCK_SIZE_ATTR,
    ONE_LAUNCH_KERNEL_ATTR,
    SHARED_ADDRESS_SPACE,
    SHARED_OVERLAY_ATTR,
    SM_90,
    START_FLAG,
    grid_error,
)
from tilesync.dialects import sync
from tilesync.dialects import tile as tl
from tilesync.dialects.kernel_args import sync_roles
from tilesync.dialects.locations import OpDiagnostic
from tilesync.transforms.kernel_fusion import (
    branch_chain,
    fused_kernel,
    fused_parameters,
    mark_fused_into,
    symbol_uses,
    take_body,
)

PASS_NAME = "sync-fuse-launches"
WARP = SM_90.warp_size
WARPGROUP = SM_90.warpgroup_warps * WARP
_DIMS = (gpu.DimensionEnum.X, gpu.DimensionEnum.Y, gpu.DimensionEnum.Z)
FIRST_FASTEST = "column_major"  # the order of block ids the hardware dispatches: x fastest


def one_launch_kernel_name(first_stage: str) -> str:
    """The kernel of a launch that others join (unique: kernels are looked up by name)."""
    return f"{first_stage}_launch"


def one_launch_module_name(first_stage: str) -> str:
    return f"{one_launch_kernel_name(first_stage)}_module"


def order_coordinates(kind: str, linear: SSAValue, extents: Sequence[int | SSAValue]
                      ) -> tuple[list[Operation], list[SSAValue]]:
    """The coordinates of place `linear` in the tiles of `extents` taken in order `kind`
    (row_major: the last coordinate fastest; column_major: the first), with the ops that
    compute them."""
    ops: list[Operation] = []

    def value(extent: int | SSAValue) -> SSAValue:
        if isinstance(extent, SSAValue):
            return extent
        const = arith.ConstantOp(IntegerAttr(extent, IndexType()))
        ops.append(const)
        return const.result

    rank = len(extents)
    order = range(rank) if kind == "column_major" else range(rank - 1, -1, -1)
    coords: dict[int, SSAValue] = {}
    rest = linear
    for position, d in enumerate(order):
        if position == rank - 1:
            coords[d] = rest
            break
        if isinstance(extents[d], int) and extents[d] == 1:
            coords[d] = value(0)
            continue
        extent = value(extents[d])
        remainder, quotient = arith.RemUIOp(rest, extent), arith.DivUIOp(rest, extent)
        ops += [remainder, quotient]
        coords[d], rest = remainder.result, quotient.result
    return ops, [coords[d] for d in range(rank)]


def _shared_globals(kernel: gpu.FuncOp) -> tuple[dict[str, memref.GlobalOp], str | None]:
    """The globals `kernel`'s code names, by name, or why one cannot move with it."""
    gmod = kernel.parent_op()
    found: dict[str, memref.GlobalOp] = {}
    for get in ops_of(kernel, (memref.GetGlobalOp,)):
        name = get.name_.root_reference.data
        if name in found:
            continue
        target = SymbolTable.lookup_symbol(gmod, name) if gmod is not None else None
        space = target.type.memory_space if isinstance(target, memref.GlobalOp) else None
        if not (isinstance(space, IntegerAttr) and space.value.data == SHARED_ADDRESS_SPACE):
            return found, f"its kernel reads the global @{name}, not one in shared memory"
        found[name] = target
    return found, None


def launch_sharing_refusal(module: ModuleOp, stages: Sequence[sync.StageOp],
                           losing_start_flags: Collection[str] = ()) -> str | None:
    """Why the stages' kernels cannot run as one kernel (one launch), or None where they can.
    `losing_start_flags`: stages whose start flags go with the move (no wait-kernel left)."""
    sizes: set[tuple[int, ...]] = set()
    for stage in stages:
        name = f"@{stage.sym_name.data}"
        kernel = SymbolTable.lookup_symbol(module, stage.kernel)
        if not isinstance(kernel, gpu.FuncOp) or len(kernel.body.blocks) != 1:
            return f"{name}'s kernel {stage.kernel} is not a gpu.func of one block here"
        if FUSED_INTO_ATTR in kernel.attributes:
            return f"{name}'s kernel already runs in another kernel"
        size = kernel.attributes.get(KNOWN_BLOCK_SIZE_ATTR)
        if size is None:
            return f"{name}'s kernel declares no block size"
        threads = tuple(size.get_values())
        if len(sizes | {threads}) > 1:
            why = _mixing_refusal(kernel, threads, sizes)
            if why is not None:
                return why
        sizes.add(threads)
        if CLUSTER_DIMS_ATTR in kernel.attributes:
            return f"{name}'s kernel runs in clusters of blocks"
        if START_FLAG in sync_roles(kernel) and stage.sym_name.data not in losing_start_flags:
            return f"{name}'s kernel posts a start flag for a wait-kernel"
        for tile in ops_of(kernel, (sync.TileOp,)):
            if tile.order is not None and tile.order.kind.data not in ("row_major",
                                                                         "column_major"):
                return (f"{name}'s kernel takes its tiles in a {tile.order.kind.data} order "
                        f"(only row-major and column-major orders follow from a ticket)")
        why = _shared_globals(kernel)[1]
        if why is not None:
            return f"{name}: {why}"
    return None


def _mixing_refusal(kernel: gpu.FuncOp, threads: tuple[int, ...],
                    others: Collection[tuple[int, ...]]) -> str | None:
    """Why blocks of `threads` cannot share one kernel with blocks of the `others`' sizes.
    One-dimensional blocks of whole warps can: the kernel's block is the largest, and a stage
    of fewer threads runs in its first ones while the other warps skip to the end (a barrier
    of the whole block counts only warps that have not exited). Register reallocation
    (setmaxnreg) is per warpgroup: a kernel that reallocates needs whole warpgroups."""
    shown = " and ".join("x".join(map(str, s)) for s in sorted({*others, threads}))
    if any(len([d for d in size if d != 1]) > 1 or size[0] % WARP for size in
           (threads, *others)):
        return (f"their kernels' blocks differ ({shown} threads), and not all are "
                f"one-dimensional blocks of whole warps")
    if threads[0] % WARPGROUP and any(True for _ in ops_of(kernel, (tl.SetMaxNRegOp,))):
        return (f"their kernels' blocks differ ({shown} threads), and one that reallocates "
                f"registers (setmaxnreg) is not whole warpgroups")
    return None


@dataclass
class _Member:
    stage: sync.StageOp
    kernel: gpu.FuncOp
    first: int  # its tickets [first, end)
    end: int

    @property
    def block(self) -> tuple[int, ...]:
        return tuple(self.kernel.attributes[KNOWN_BLOCK_SIZE_ATTR].get_values())


def _stage_body(member: _Member, ticket: SSAValue, params: Sequence[SSAValue], movable: bool,
                renamed: dict[str, str], threads: int) -> Block:
    """The member's code as block `ticket - first` of its stage's grid, run by the first of
    the kernel's `threads` threads (its block's)."""
    body = Block()
    first = arith.ConstantOp(IntegerAttr(member.first, IndexType()))
    local = arith.SubiOp(ticket, first.result)
    body.add_ops([first, local])
    grid = list(member.stage.grid_shape)
    ops = take_body(member.kernel, params, movable)
    body.add_ops(ops)
    block_ids: list[SSAValue] | None = None
    for op in [found for top in ops for found in ops_of(
            top, (gpu.BlockIdOp, gpu.GridDimOp, gpu.BlockDimOp, sync.TileOp,
                  memref.GetGlobalOp))]:
        if isinstance(op, memref.GetGlobalOp):
            op.properties["name"] = SymbolRefAttr(renamed[op.name_.root_reference.data])
            continue
        if isinstance(op, gpu.BlockDimOp):
            d = _DIMS.index(op.dimension.data)
            extent = arith.ConstantOp(IntegerAttr(member.block[d], IndexType()))
            body.insert_op_after(extent, local)
            op.results[0].replace_all_uses_with(extent.result)
            op.detach()
            op.erase()
            continue
        if isinstance(op, gpu.GridDimOp):
            d = _DIMS.index(op.dimension.data)
            extent = arith.ConstantOp(IntegerAttr(grid[d] if d < len(grid) else 1, IndexType()))
            body.insert_op_after(extent, local)
            op.results[0].replace_all_uses_with(extent.result)
        elif isinstance(op, gpu.BlockIdOp) or op.order is None:
            if block_ids is None:
                decode, block_ids = order_coordinates(FIRST_FASTEST, local.result, grid)
                zero = arith.ConstantOp(IntegerAttr(0, IndexType()))
                body.insert_ops_after([*decode, zero], local)
                block_ids += [zero.result] * (3 - len(grid))
            if isinstance(op, gpu.BlockIdOp):
                op.results[0].replace_all_uses_with(block_ids[_DIMS.index(op.dimension.data)])
            else:
                for result, value in zip(op.results, block_ids, strict=False):
                    result.replace_all_uses_with(value)
        else:
            decode, coords = order_coordinates(op.order.kind.data, local.result,
                                               grid[:len(op.results)])
            op.parent_block().insert_ops_before(decode, op)
            for result, value in zip(op.results, coords, strict=True):
                result.replace_all_uses_with(value)
        op.detach()
        op.erase()
    body.add_op(scf.YieldOp())
    if math.prod(member.block) == threads:
        return body
    # a smaller block: its threads run the code, the other warps skip to the kernel's end
    outer = Block()
    tid = gpu.ThreadIdOp(gpu.DimensionAttr(gpu.DimensionEnum.X))
    count = arith.ConstantOp(IntegerAttr(math.prod(member.block), IndexType()))
    inside = arith.CmpiOp(tid.result, count.result, "ult")
    outer.add_ops([tid, count, inside, scf.IfOp(inside.result, [], Region(body)),
                   scf.YieldOp()])
    return outer


def _dispatch(block: Block, ticket: SSAValue, members: list[_Member], bodies: list[Block]
              ) -> None:
    """if ticket < end_0 { stage 0 } else if ticket < end_1 { stage 1 } ... else { last }."""
    def below_end(index: int, into: Block) -> SSAValue:
        end = arith.ConstantOp(IntegerAttr(members[index].end, IndexType()))
        inside = arith.CmpiOp(ticket, end.result, "ult")
        into.add_ops([end, inside])
        return inside.result

    branch_chain(block, bodies, below_end)


def _copy_globals(members: list[_Member], target: gpu.ModuleOp) -> list[dict[str, str]]:
    """Each member's shared globals copied into `target` under its stage's name, in dynamic
    shared memory and marked with the member's overlay, with the names each member's code now
    uses."""
    renamed: list[dict[str, str]] = []
    for index, member in enumerate(members):
        names: dict[str, str] = {}
        found, _ = _shared_globals(member.kernel)
        for name, original in found.items():
            copy = original.clone()
            new_name = f"{member.stage.sym_name.data}_{name}"
            copy.properties["sym_name"] = StringAttr(new_name)
            # all in dynamic shared memory, where stages can overlap (static globals add up)
            copy.attributes[DYNAMIC_SHARED_ATTR] = UnitAttr()
            copy.attributes[SHARED_OVERLAY_ATTR] = IntegerAttr(index, i64)
            target.body.blocks.first.add_op(copy)
            names[name] = new_name
        renamed.append(names)
    return renamed


def fuse_launch(module: ModuleOp, graph: StageGraph, launches: list[sync.LaunchOp],
                uses) -> gpu.FuncOp:
    """The kernel of one launch of several stages (`launches`, in ticket order)."""
    stages = [graph.stages[launch.stage.root_reference.data] for launch in launches]
    why = launch_sharing_refusal(module, stages)
    if why is not None:
        raise OpDiagnostic(f"{PASS_NAME}: @{stages[1].sym_name.data} cannot join the launch "
                           f"of @{stages[0].sym_name.data}: {why}", launches[1])
    kernels = [SymbolTable.lookup_symbol(module, stage.kernel) for stage in stages]
    members, first = [], 0
    for stage, kernel in zip(stages, kernels, strict=True):
        assert isinstance(kernel, gpu.FuncOp)
        blocks = math.prod(stage.grid_shape)
        members.append(_Member(stage, kernel, first, first + blocks))
        first = members[-1].end
    too_many = grid_error((first,))
    if too_many is not None:
        raise OpDiagnostic(f"{PASS_NAME}: one launch of these stages: {too_many}", launches[1])
    head = stages[0].sym_name.data
    module_name, kernel_name = one_launch_module_name(head), one_launch_kernel_name(head)
    if SymbolTable.lookup_symbol(module, module_name) is not None or kernel_name in {
            f.sym_name.data for f in ops_of(module, (gpu.FuncOp,))}:
        raise OpDiagnostic(f"{PASS_NAME}: the launch of @{head} needs the names @{module_name} "
                           f"and @{kernel_name} for its kernel, and the program uses one",
                           launches[0])
    gmod = gpu.ModuleOp(StringAttr(module_name), Region(Block()))
    anchor = kernels[0].parent_op()
    assert isinstance(anchor, gpu.ModuleOp)
    anchor.parent_block().insert_op_after(gmod, anchor)
    renamed = _copy_globals(members, gmod)

    parameters = fused_parameters(kernels)
    block = parameters.block
    ticket = sync.TileOp(sync.OrderAttr("row_major"), rank=1)
    block.add_op(ticket)
    movable = [uses[str(stage.kernel)] == 1 for stage in stages]
    widest = max(members, key=lambda m: math.prod(m.block))
    threads = math.prod(widest.block)
    bodies = [_stage_body(member, ticket.results[0], params, move, names, threads)
              for member, params, move, names in zip(members, parameters.params, movable,
                                                     renamed, strict=True)]
    _dispatch(block, ticket.results[0], members, bodies)
    block.add_op(gpu.ReturnOp([]))
    fused = fused_kernel(kernel_name, parameters, widest.kernel, kernels)
    gmod.body.blocks.first.add_op(fused)
    mark_fused_into([k for k, move in zip(kernels, movable, strict=True) if move], fused)
    launches[0].attributes[ONE_LAUNCH_KERNEL_ATTR] = SymbolRefAttr(gmod.sym_name.data,
                                                                   [fused.sym_name.data])
    return fused


@dataclass(frozen=True)
class FuseLaunchesPass(ModulePass):
    """Make one kernel of the stages of each launch that others join."""

    name = PASS_NAME

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        graph = StageGraph.of(op)
        uses = None
        for group in one_launch_groups(graph.plan):
            launches = [launch.op for launch in group]
            if len(group) < 2 or None in launches or \
                    ONE_LAUNCH_KERNEL_ATTR in launches[0].attributes:
                continue
            uses = uses if uses is not None else symbol_uses(op)
            fuse_launch(op, graph, launches, uses)  # type: ignore[arg-type]


__all__ = ["FuseLaunchesPass", "launch_sharing_refusal", "one_launch_kernel_name",
           "one_launch_module_name", "order_coordinates"]

"""`sync-insert-wait-kernel`: cuSync's wait-kernel (paper §III-B) for every dependent launch.

A consumer block that spins holds its SM slot; if consumer blocks take the SMs before the
producer's blocks are dispatched, nothing can finish. The wait-kernel, one thread launched on
the consumer's stream just before the consumer, spins until *every* producer block has
started (each posts the producer's start flag on entry; the host passes epoch × blocks as the
target): only then can consumer blocks be dispatched, so they can never hold the slots a
producer block needs. (The paper's wait-kernel waits for the first block only, which relies on
the hardware preferring the producer's remaining blocks; analysis/simulator shows an
adversarial dispatcher deadlocking it.) The flag is an epoch semaphore: no reset between
launches. Consumers already ordered after their producer (stream order, or PDL right after it
on its stream: `analysis.forward_progress`) need none; `pdl = true` on another stream than the
producer's orders nothing. A wait-kernel already in the plan before the consumer on its stream
is made to work (the producer's start flag, the wait-kernel function) rather than repeated, so
the pass is idempotent. A program whose dependencies form a cycle, or whose producer is
launched behind its consumer (a wait-kernel there would never end), is refused with the cycle
named.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, gpu
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AffineMap,
    DenseArrayBase,
    FunctionType,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    i32,
)
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tilesync.analysis import forward_progress
from tilesync.analysis.forward_progress import ProgressFacts, analyze
from tilesync.analysis.stage_graph import StageGraph
from tilesync.contract import (
    EPOCH,
    KNOWN_BLOCK_SIZE_ATTR,
    START_FLAG,
    WAIT_FLAG,
    WAIT_KERNEL,
    WAIT_TARGET,
)
from tilesync.dialects import sync
from tilesync.dialects.kernel_args import set_sync_roles, sync_arg, sync_roles
from tilesync.dialects.locations import OpDiagnostic
from tilesync.transforms.sync.launch_plan import (
    device_launch_of,
    entry_insertion_point,
    kernel_of,
    launch_of,
)

FLAG_POLICY = sync.PolicyAttr(AffineMap.identity(1), 1)  # one flag, one post per launch


def _flag_type() -> MemRefType:
    return MemRefType(i32, [DYNAMIC_INDEX])


def add_start_signal(func: gpu.FuncOp) -> None:
    """Every block of the producer posts its start flag on entry (once per kernel)."""
    if START_FLAG in sync_roles(func):
        return
    flag = sync_arg(func, START_FLAG, _flag_type())
    epoch = sync_arg(func, EPOCH, i32)
    zero = arith.ConstantOp(IntegerAttr(0, IndexType()))
    post = sync.PostOp(flag, [zero], FLAG_POLICY, epoch)
    Rewriter.insert_op([zero, post], InsertPoint.before(entry_insertion_point(func)))


def remove_start_signal(func: gpu.FuncOp) -> None:
    """Undo add_start_signal: the flag's posts and parameter go (the epoch stays: the kernel's
    other waits and posts compare against it)."""
    roles = sync_roles(func)
    if START_FLAG not in roles:
        return
    block = func.body.blocks.first
    assert block is not None
    flag = block.args[len(block.args) - len(roles) + roles.index(START_FLAG)]
    for use in list(flag.uses):
        post = use.operation
        if not isinstance(post, sync.PostOp):
            return  # the flag serves something else: keep it
    for use in list(flag.uses):
        post = use.operation
        indices = [index.owner for index in post.tile]
        post.detach()
        post.erase()
        for index in indices:
            if isinstance(index, arith.ConstantOp) and not index.result.uses:
                index.detach()
                index.erase()
    block.erase_arg(flag)
    func.function_type = FunctionType.from_lists([a.type for a in block.args],
                                                 func.function_type.outputs.data)
    set_sync_roles(func, [r for r in roles if r != START_FLAG])


def wait_kernel(gmod: gpu.ModuleOp) -> gpu.FuncOp:
    """The one wait-kernel of a gpu.module: spin (acquire, backoff, timeout) until a start
    flag reaches the target the host passes (epoch × producer blocks)."""
    for op in gmod.body.ops:
        if isinstance(op, gpu.FuncOp) and op.sym_name.data == WAIT_KERNEL:
            return op
    block = Block(arg_types=[_flag_type(), i32])
    zero = arith.ConstantOp(IntegerAttr(0, IndexType()))
    block.add_ops([zero, sync.WaitOp(block.args[0], [zero], FLAG_POLICY, block.args[1]),
                   gpu.ReturnOp([])])
    func = gpu.FuncOp(WAIT_KERNEL, FunctionType.from_lists([_flag_type(), i32], []),
                      Region(block), kernel=True)
    func.attributes[KNOWN_BLOCK_SIZE_ATTR] = DenseArrayBase.from_list(i32, [1, 1, 1])
    set_sync_roles(func, [WAIT_FLAG, WAIT_TARGET])
    gmod.body.blocks.first.add_op(func)
    return func


@dataclass(frozen=True)
class InsertWaitKernelPass(ModulePass):
    """Launch a one-thread wait-kernel before each consumer, so producers are dispatched first."""

    name = "sync-insert-wait-kernel"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        graph = StageGraph.of(op)
        pairs = graph.dependent_pairs()
        report = analyze(ProgressFacts(list(graph.stages), pairs, graph.plan, {}))
        for producer, consumer in pairs:
            if (producer, consumer) in report.blocked:
                raise OpDiagnostic(
                    f"{self.name}: no wait-kernel can order @{consumer} after @{producer}: "
                    f"{report.reasons[(producer, consumer)]}",
                    launch_of(graph, consumer, self.name))
            guarantee = report.guarantees[(producer, consumer)]
            kind = None if guarantee is None else guarantee.kind
            if kind in (forward_progress.PDL, forward_progress.STREAM_ORDER,
                        forward_progress.ONE_LAUNCH):
                # the stream (or the launch's tickets) already orders the grids: a program
                # without sync.launch runs its stages on stream 0 in order
                continue
            realize_wait_kernel(op, graph, producer)
            if kind == forward_progress.WAIT_KERNEL:
                continue  # one already waits for the producer on the consumer's stream
            launch = device_launch_of(graph, consumer, self.name)
            Rewriter.insert_op(sync.WaitKernelOp(producer, launch.stream.value.data),
                               InsertPoint.before(launch))


def realize_wait_kernel(module: ModuleOp, graph: StageGraph, producer: str) -> None:
    """What makes a `sync.wait_kernel @producer` work: the producer's blocks post its start
    flag, and the producer's gpu.module holds the wait-kernel (both idempotent)."""
    func = kernel_of(module, graph.stages[producer])
    add_start_signal(func)
    gmod = func.parent_op()
    assert isinstance(gmod, gpu.ModuleOp)
    wait_kernel(gmod)

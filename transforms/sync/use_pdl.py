"""`sync-use-pdl`: Hopper's programmatic dependent launch instead of a wait-kernel.

Each consumer is launched on its producer's stream with programmatic stream serialization;
each producer block triggers `griddepcontrol.launch_dependents` on entry. The dependent grid
is dispatched only after every producer block has triggered, i.e. has started, so spinning
consumer blocks can never keep a producer block from an SM. Data still flows through the
per-tile semaphores (release/acquire), so consumers need no `griddepcontrol.wait`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import BoolAttr, IntegerAttr, ModuleOp, i64
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tilesync.dialects import nvvm, sync
from tilesync.transforms.sync.forward_progress import (
    dependent_pairs,
    entry_insertion_point,
    kernel_of,
    launch_of,
    stages,
)


def _triggers(func) -> bool:
    return any(isinstance(op, nvvm.GridDepControlLaunchDependentsOp) for op in func.walk())


@dataclass(frozen=True)
class UsePDLPass(ModulePass):
    """Launch consumers with programmatic dependent launch (Hopper) instead of a wait-kernel."""

    name = "sync-use-pdl"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        all_stages = stages(op)
        for producer, consumer in list(dependent_pairs(op)):
            producer_launch = launch_of(op, producer, self.name)
            consumer_launch = launch_of(op, consumer, self.name)
            consumer_launch.pdl = BoolAttr.from_bool(True)
            consumer_launch.stream = IntegerAttr(producer_launch.stream.value.data, i64)
            for wait in [w for w in op.walk() if isinstance(w, sync.WaitKernelOp)
                         and w.producer.root_reference.data == producer]:
                Rewriter.erase_op(wait)
            func = kernel_of(op, all_stages[producer])
            if not _triggers(func):
                Rewriter.insert_op(nvvm.GridDepControlLaunchDependentsOp(),
                                   InsertPoint.before(entry_insertion_point(func)))

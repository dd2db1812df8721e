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

from tilesync.analysis.stage_graph import StageGraph
from tilesync.dialects import nvvm
from tilesync.transforms.sync.launch_plan import entry_insertion_point, kernel_of, launch_of


def _triggers(func) -> bool:
    return any(isinstance(op, nvvm.GridDepControlLaunchDependentsOp) for op in func.walk())


@dataclass(frozen=True)
class UsePDLPass(ModulePass):
    """Launch consumers with programmatic dependent launch (Hopper) instead of a wait-kernel."""

    name = "sync-use-pdl"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        graph = StageGraph.of(op)
        for producer, consumer in graph.dependent_pairs():
            producer_launch = launch_of(graph, producer, self.name)
            consumer_launch = launch_of(graph, consumer, self.name)
            consumer_launch.pdl = BoolAttr.from_bool(True)
            consumer_launch.stream = IntegerAttr(producer_launch.stream.value.data, i64)
            for wait in graph.wait_kernels():
                if wait.producer == producer and wait.op is not None and wait.op.parent:
                    Rewriter.erase_op(wait.op)
            func = kernel_of(op, graph.stages[producer])
            if not _triggers(func):
                Rewriter.insert_op(nvvm.GridDepControlLaunchDependentsOp(),
                                   InsertPoint.before(entry_insertion_point(func)))

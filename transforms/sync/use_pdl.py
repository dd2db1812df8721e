"""`sync-use-pdl`: Hopper's programmatic dependent launch instead of a wait-kernel.

Each consumer is launched on its producers' stream with programmatic stream serialization; each
producer block triggers `griddepcontrol.launch_dependents` on entry. The dependent grid is
dispatched only after every block of the launch before it on the stream has triggered, i.e. has
started, so spinning consumer blocks can never keep a producer block from an SM. Data still
flows through the per-tile semaphores (release/acquire), so consumers need no
`griddepcontrol.wait`.

PDL orders a launch after the previous launch on its own stream only. A consumer is moved only
where the whole program stays ordered (`analysis.forward_progress.analyze` on the plan with the
move): all its producers on one stream, launched before it, and no other dependency losing its
guarantee. A stage whose launch holds others (`sync.launch ... fused`) stays. A consumer whose
producers run on several streams keeps its place and its wait-kernels (made to work: the
producers' start flags and the wait-kernel function), so the plan never trades a working
guarantee for a PDL edge that orders nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from xdsl.context import Context
from xdsl.dialects.builtin import BoolAttr, IntegerAttr, ModuleOp, i64
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from tilesync.analysis import forward_progress
from tilesync.analysis.forward_progress import ProgressFacts, analyze
from tilesync.analysis.stage_graph import HostStep, Launch, StageGraph, WaitKernel
from tilesync.dialects import nvvm, sync
from tilesync.transforms.sync.insert_wait_kernel import realize_wait_kernel
from tilesync.transforms.sync.launch_plan import (
    entry_insertion_point,
    guards,
    kernel_of,
    launch_of,
)

ORDERED = (forward_progress.PDL, forward_progress.STREAM_ORDER)


def _triggers(func) -> bool:
    return any(isinstance(op, nvvm.GridDepControlLaunchDependentsOp) for op in func.walk())


@dataclass(frozen=True)
class UsePDLPass(ModulePass):
    """Launch consumers with programmatic dependent launch (Hopper) instead of a wait-kernel."""

    name = "sync-use-pdl"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        graph = StageGraph.of(op)
        pairs = graph.dependent_pairs()
        stages = list(graph.stages)

        def report(plan: list[HostStep]) -> dict[tuple[str, str], object]:
            return analyze(ProgressFacts(stages, pairs, plan, {})).guarantees

        plan = list(graph.plan)
        if not any(isinstance(o, sync.LaunchOp) for o in op.ops):
            return  # every stage on stream 0 in program order: nothing to overlap
        consumers = list(dict.fromkeys(c for _, c in pairs))
        for consumer in consumers:
            if len(graph.launch_group(consumer)) > 1:
                continue  # its launch holds other stages: it moves with none of them
            producers = graph.producers(consumer)
            launches = {p: launch_of(graph, p, self.name) for p in producers}
            launch_op = launch_of(graph, consumer, self.name)
            streams = {launch.stream.value.data for launch in launches.values()}
            current = report(plan)
            step = next(s for s in plan if isinstance(s, Launch) and s.stage == consumer)
            if len(streams) != 1:
                for producer in producers:  # keep the wait-kernels, working
                    if any(isinstance(s, WaitKernel) and s.producer == producer for s in plan):
                        realize_wait_kernel(op, graph, producer)
                continue
            (stream,) = streams
            moved = replace(step, stream=stream, pdl=True)
            guarding = [w for w in plan if isinstance(w, WaitKernel) and w.producer in producers
                      and guards(plan, w, step)]
            candidate = [moved if s is step else s for s in plan
                         if not any(s is w for w in guarding)]
            after = report(candidate)
            kept = all(after[pair] is not None for pair in pairs if current[pair] is not None)
            ordered = all(getattr(after[(p, consumer)], "kind", None) in ORDERED
                          for p in producers)
            if not (kept and ordered):
                continue
            plan = candidate
            launch_op.pdl = BoolAttr.from_bool(True)
            launch_op.stream = IntegerAttr(stream, i64)
            for wait in guarding:
                if wait.op is not None and wait.op.parent:
                    Rewriter.erase_op(wait.op)
            for producer in producers:
                func = kernel_of(op, graph.stages[producer])
                if not _triggers(func):
                    Rewriter.insert_op(nvvm.GridDepControlLaunchDependentsOp(),
                                       InsertPoint.before(entry_insertion_point(func)))

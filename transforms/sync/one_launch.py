"""`sync-one-launch`: cuSync in one launch, a consumer's blocks joining its producers' launch.

A consumer whose producers all run in one launch joins it where one kernel can run them all
(`fuse_launches.launch_sharing_refusal`): its `sync.launch` moves right after that launch's
last stage, on its stream, `fused` (no pdl, no priority of its own). The blocks of the launch
then take tickets of one counter, the producers' tiles first, so a waiting consumer block never
holds a slot a producer tile still needs (forward_progress's one-launch guarantee): no
wait-kernel, no PDL edge, no launch gap, and the consumer's first tiles run on the SMs the
producers' last partial wave leaves idle. The wait-kernels that guarded the consumer for those
producers go, and a producer's start flag with its last wait-kernel. As sync-use-pdl does, a
move is made only where the whole program keeps its guarantees (`forward_progress.analyze` on
the plan with the move) and every dependency of the consumer is then one-launch. Consumers join
in program order, so a chain (GEMM -> GEMM -> GEMM) becomes one launch.

`stages=a,b`: only those consumers join, and one that cannot is refused with the reason;
without it every consumer that can joins. Stages whose blocks differ join only with
`mixed_blocks=true`: their one kernel runs every stage in the largest block (sync-fuse-launches),
and on an H200 that was slower than the same kernels with PDL everywhere it was measured (the
MLP at M = 256, 0.57-0.85 of stream sync; decoding attention, 0.72-0.98:
bench/results/mlp-one-launch-nvidia-h200.json, attention-decode-nvidia-h200.json), where one
launch of stages of one block size ran at 1.00-1.01 of stream sync. sync-fuse-launches (in the
lowering) then makes the kernel.
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
from tilesync.contract import CompileError
from tilesync.dialects.locations import OpDiagnostic
from tilesync.transforms.sync.fuse_launches import launch_sharing_refusal
from tilesync.transforms.sync.insert_wait_kernel import remove_start_signal
from tilesync.transforms.sync.launch_plan import guards, kernel_of, launch_of


def _joined(plan: list[HostStep], launch: tuple[Launch, ...], group: tuple[str, ...],
            guarding: list[WaitKernel]) -> tuple[list[HostStep], list[Launch]]:
    """`plan` with the stages of `launch` fused right after the launch of `group`, in order,
    and the wait-kernels `guarding` it gone."""
    last = next(s for s in plan if isinstance(s, Launch) and s.stage == group[-1])
    head = next(s for s in plan if isinstance(s, Launch) and s.stage == group[0])
    moved = [replace(step, stream=head.stream, priority=0, pdl=False, fused=True)
             for step in launch]
    candidate: list[HostStep] = []
    for step in plan:
        if any(step is s for s in (*launch, *guarding)):
            continue
        candidate.append(step)
        if step is last:
            candidate += moved
    return candidate, moved


@dataclass(frozen=True)
class OneLaunchPass(ModulePass):
    """Let each consumer's blocks join its producers' launch (cuSync in one launch)."""

    name = "sync-one-launch"

    stages: tuple[str, ...] = ()
    mixed_blocks: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        graph = StageGraph.of(op)
        wanted = set(self.stages)
        unknown = sorted(wanted - set(graph.stages))
        if unknown:
            raise CompileError(f"{self.name}: no stage named {', '.join(unknown)}")
        consumers = [c for c in dict.fromkeys(c for _, c in graph.dependent_pairs())
                     if not wanted or c in wanted]
        # until nothing moves: a consumer whose own consumers' wait-kernels keep its start
        # flag joins once they have joined it
        refusals: dict[str, str] = {}
        moved = True
        while moved:
            moved = False
            for consumer in consumers:
                graph = StageGraph.of(op)
                if consumer in graph.launch_group(graph.producers(consumer)[0]):
                    continue
                why = self._join(op, graph, consumer)
                if why is None:
                    moved = True
                    refusals.pop(consumer, None)
                else:
                    refusals[consumer] = why
        for consumer in consumers:
            if consumer in wanted and consumer in refusals:
                graph = StageGraph.of(op)
                raise OpDiagnostic(f"{self.name}: @{consumer} cannot join its producers' "
                                   f"launch: {refusals[consumer]}",
                                   launch_of(graph, consumer, self.name))

    def _join(self, op: ModuleOp, graph: StageGraph, consumer: str) -> str | None:
        """Join `consumer`'s launch to its producers' launch, or say why not."""
        if not graph.steps:
            return "the program declares no sync.launch"
        producers = graph.producers(consumer)
        groups = {graph.launch_group(p) for p in producers}
        if len(groups) != 1:
            return "its producers run in different launches"
        (group,) = groups
        own = graph.launch_group(consumer)
        if own[0] != consumer:
            return f"it runs in the launch of @{own[0]}, not its producers'"
        plan = graph.plan
        launch = tuple(graph.launch(s) for s in own)
        assert all(s is not None and s.op is not None for s in launch)
        guarding = [w for w in plan if isinstance(w, WaitKernel) and w.producer in producers
                    and guards(plan, w, launch[0])]
        kept = {w.producer for w in plan
                if isinstance(w, WaitKernel) and not any(w is g for g in guarding)}
        stages = [graph.stages[s] for s in (*group, *own)]
        why = launch_sharing_refusal(op, stages, {w.producer for w in guarding} - kept)
        if why is not None:
            return why
        blocks = {stage.block_shape for stage in stages}
        if len(blocks) > 1 and not self.mixed_blocks:
            shown = " and ".join("x".join(map(str, b)) for b in sorted(blocks))
            return (f"their blocks differ ({shown} threads): one kernel would run them all in "
                    f"the largest, measured slower than PDL (mixed_blocks=true to join anyway)")
        candidate, moved = _joined(plan, launch, group, guarding)  # type: ignore[arg-type]
        pairs = graph.dependent_pairs()
        names = list(graph.stages)
        before = analyze(ProgressFacts(names, pairs, plan, {})).guarantees
        after = analyze(ProgressFacts(names, pairs, candidate, {})).guarantees
        lost = [pair for pair in pairs if before[pair] is not None and after[pair] is None]
        if lost:
            return (f"@{lost[0][0]} -> @{lost[0][1]} would lose its guarantee "
                    f"({before[lost[0]]})")
        if any(getattr(after[(p, consumer)], "kind", None) != forward_progress.ONE_LAUNCH
               for p in producers):
            return "its launch would not order it after its producers"
        self._move(op, graph, launch, group, moved, guarding)  # type: ignore[arg-type]
        return None

    @staticmethod
    def _move(op: ModuleOp, graph: StageGraph, launch: tuple[Launch, ...],
              group: tuple[str, ...], moved: list[Launch], guarding: list[WaitKernel]) -> None:
        last = graph.launch(group[-1])
        assert last is not None and last.op is not None
        after = last.op
        for step, new in zip(launch, moved, strict=True):
            launch_op = step.op
            assert launch_op is not None
            launch_op.detach()
            Rewriter.insert_op(launch_op, InsertPoint.after(after))
            launch_op.stream = IntegerAttr(new.stream, i64)
            launch_op.priority = IntegerAttr(0, i64)
            launch_op.pdl = BoolAttr.from_bool(False)
            launch_op.fused = BoolAttr.from_bool(True)
            after = launch_op
        for wait in guarding:
            if wait.op is not None and wait.op.parent:
                Rewriter.erase_op(wait.op)
        remaining = {w.producer for w in StageGraph.of(op).wait_kernels()}
        for wait in guarding:
            if wait.producer not in remaining:
                remove_start_signal(kernel_of(op, graph.stages[wait.producer]))

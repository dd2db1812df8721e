"""cuSyncGen's optimizations W and T (paper §IV-C), applied only where the wave model proves them.

    tilesync-opt prog.mlir -p 'sync-annotate-occupancy,sync-drop-wait-kernel{strict=true}'

* `sync-drop-wait-kernel` (W) removes a `sync.wait_kernel @producer {stream = s}` when the
  whole program keeps a forward-progress guarantee for every dependency without it
  (`forward_progress.analyze` over the plan without that wait-kernel, with the blocks per SM
  of every stage: the same model sync-verify proves with). Wait-kernels are weighed one by one
  in program order against the plan left by the earlier decisions, so two wait-kernels that
  could each go alone are not both dropped when together they are needed.
* `sync-drop-tile-order` (T) resets the order of a consumer stage (a stage some
  sync.dependency feeds) to `#sync.order<row_major>` when its order is another one and
  `wave_model.tile_order_legality` holds for the stage together with the stages it depends on
  and the stages it feeds (whose own orders were derived from when this stage's tiles finish).

Both read `blocks_per_sm` from the stages (sync-annotate-occupancy writes it) and take the SM
count as option `sms` (default 132); a stage without `blocks_per_sm` is an error, not a guess,
and so is a `waves` annotation that disagrees with `sms` (annotated for another device). Where
the optimization is not legal the IR is left as it is; with `strict=true` that is an error
saying why. The reference cuSync applied W and T from a tuned table; here each removal is
justified by the occupancy of the kernels involved.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import gpu
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from tilesync.analysis.forward_progress import Residency, program_facts, wait_kernel_removal
from tilesync.analysis.stage_graph import HostStep, StageGraph, WaitKernel
from tilesync.analysis.wave_model import Legality, tile_order_legality
from tilesync.contract import WAIT_KERNEL
from tilesync.dialects.kernel_args import lookup_kernel
from tilesync.dialects.locations import OpDiagnostic
from tilesync.dialects.sync import DependencyOp, OrderAttr, StageOp
from tilesync.transforms.sync.annotate_occupancy import annotated_waves
from tilesync.transforms.sync.insert_wait_kernel import remove_start_signal


def _stage(stages: dict[str, StageOp], name: str, pass_name: str, what: str) -> StageOp:
    if name not in stages:
        raise DiagnosticException(f"{pass_name}: {what} @{name} is not a sync.stage")
    return stages[name]


def wait_kernel_verdict(wait: WaitKernel, graph: StageGraph, sms: int,
                        plan: Sequence[HostStep] | None = None) -> Legality:
    """Whether `wait` may be dropped from `plan` (default: the graph's), with the reason
    (diagnostics for missing facts): `forward_progress.wait_kernel_removal` with the blocks
    per SM of every stage."""
    name = DropWaitKernelPass.name
    _stage(graph.stages, wait.producer, name, "producer")
    residency = {}
    for stage_name, stage in graph.stages.items():
        waves = annotated_waves(stage, sms, name)
        residency[stage_name] = Residency(waves.blocks, waves.blocks_per_sm)
    facts = program_facts(graph, residency, sms, plan=plan)
    return wait_kernel_removal(facts, wait)


@dataclass(frozen=True)
class DropWaitKernelPass(ModulePass):
    """W: remove the wait-kernels the whole-program forward-progress model proves unnecessary."""

    name = "sync-drop-wait-kernel"

    sms: int = 132
    strict: bool = False

    def __post_init__(self) -> None:
        if self.sms < 1:
            raise ValueError(f"option 'sms' must be positive, got {self.sms}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        graph = StageGraph.of(op)
        plan = list(graph.plan)
        for wait in graph.wait_kernels():
            verdict = wait_kernel_verdict(wait, graph, self.sms, plan)
            if verdict.legal:
                assert wait.op is not None
                plan = [s for s in plan if s is not wait]
                wait.op.detach()
                wait.op.erase()
            elif self.strict:
                raise OpDiagnostic(
                    f"{self.name}: cannot drop the wait-kernel of @{wait.producer} on stream "
                    f"{wait.stream}: {verdict.reason}", wait.op
                )
        _drop_unused_signals(op, graph, {w.producer for w in StageGraph.of(op).wait_kernels()})


def _drop_unused_signals(module: ModuleOp, graph: StageGraph, waited: set[str]) -> None:
    """The start flags of producers no wait-kernel waits for any more, and the wait-kernel
    function where none is left: every block of such a producer would still post its flag."""
    def kernel(name: str) -> gpu.FuncOp | None:
        stage = graph.stages[name]
        try:
            return lookup_kernel(module, stage.kernel, f"sync.stage @{name}", stage)
        except OpDiagnostic:  # a host plan without its kernels: nothing posts
            return None

    still_signalling = {kernel(name) for name in waited}
    for name in graph.stages:
        func = kernel(name)
        if name not in waited and func is not None and func not in still_signalling:
            remove_start_signal(func)
    if waited:
        return
    for func in [f for f in module.walk() if isinstance(f, gpu.FuncOp)
                 and f.sym_name.data == WAIT_KERNEL]:
        func.detach()
        func.erase()


def tile_order_group(name: str, deps: Sequence[DependencyOp]) -> list[str]:
    """The stages T weighs for stage `name`: itself, the stages it reads, the stages reading
    it (their orders were derived from when its tiles finish), each once, in that order."""
    group = [name]
    for dep in deps:
        p, c = dep.producer.root_reference.data, dep.consumer.root_reference.data
        if c == name and p not in group:
            group.append(p)
    for dep in deps:
        p, c = dep.producer.root_reference.data, dep.consumer.root_reference.data
        if p == name and c not in group:
            group.append(c)
    return group


def tile_order_verdict(
    stage: StageOp, stages: dict[str, StageOp], deps: Sequence[DependencyOp], sms: int
) -> Legality:
    """Whether `stage`'s custom order may become row_major, with the reason."""
    pass_name = DropTileOrderPass.name
    names = tile_order_group(stage.sym_name.data, deps)
    involved = [_stage(stages, n, pass_name, "dependency stage") for n in names]
    verdict = tile_order_legality([annotated_waves(s, sms, pass_name) for s in involved])
    return Legality(verdict.legal, ", ".join(f"@{n}" for n in names) + f": {verdict.reason}")


@dataclass(frozen=True)
class DropTileOrderPass(ModulePass):
    """T: reset a consumer's custom tile order to row_major where the wave model allows."""

    name = "sync-drop-tile-order"

    sms: int = 132
    strict: bool = False

    def __post_init__(self) -> None:
        if self.sms < 1:
            raise ValueError(f"option 'sms' must be positive, got {self.sms}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        graph = StageGraph.of(op)
        stages, deps = graph.stages, graph.dependencies
        consumers = {d.consumer.root_reference.data for d in deps}
        decisions: list[tuple[StageOp, Legality]] = []
        for name, stage in stages.items():
            if name not in consumers or stage.order is None:
                continue
            if stage.order.kind.data == "row_major":
                continue
            decisions.append((stage, tile_order_verdict(stage, stages, deps, self.sms)))
        # Decide on the orders as they were, then rewrite: one reset must not change another.
        for stage, verdict in decisions:
            if verdict.legal:
                stage.order = OrderAttr("row_major")
            elif self.strict:
                raise OpDiagnostic(
                    f"{self.name}: cannot drop the {stage.order.kind.data} order of stage "
                    f"@{stage.sym_name.data}: {verdict.reason}", stage
                )

"""The one reader of a stage program: its stages, its dependencies and its host plan.

A stage program is a module (or any op) holding `sync.stage`, `sync.dependency`, and the host
plan: `sync.launch` and `sync.wait_kernel` ops in program order. `StageGraph.of` reads them in
one walk; passes, the verifier, the runtime and the simulator all take what they need from it.
A program without any `sync.launch` runs every stage on stream 0 in program order (`plan`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from xdsl.ir import Operation

from tilesync.compat.rewrite_driver import ops_of
from tilesync.dialects import sync
from tilesync.dialects.locations import OpDiagnostic


@dataclass(frozen=True)
class Launch:
    """Launch a stage on a stream. CUDA priorities: a smaller number is a higher priority.
    `pdl`: a programmatic dependent of the previous launch on the same stream. `fused`: the
    stage's blocks join the previous launch on the stream in one grid (`one_launch_groups`)."""

    stage: str
    stream: int = 0
    priority: int = 0
    pdl: bool = False
    op: sync.LaunchOp | None = field(default=None, compare=False, repr=False)
    fused: bool = False


@dataclass(frozen=True)
class WaitKernel:
    """cuSync's wait-kernel for `producer` on a stream: later launches on the stream start once
    it ends (once every producer block has been dispatched)."""

    producer: str
    stream: int = 0
    op: sync.WaitKernelOp | None = field(default=None, compare=False, repr=False)


HostStep = Launch | WaitKernel


def default_plan(stages: Iterable[str]) -> list[HostStep]:
    """The plan of a program that declares none: every stage on stream 0 in program order."""
    return [Launch(name) for name in stages]


def one_launch_groups(plan: Iterable[HostStep]) -> list[list[Launch]]:
    """The plan's launches as the device sees them: each launch with the fused launches that
    join it, in ticket order (their stages' blocks take tickets of one counter, the first
    launch's tiles first). A fused launch with no launch right before it on its stream (a
    wait-kernel between, or none at all; sync.launch refuses both) launches alone."""
    groups: list[list[Launch]] = []
    open_group: dict[int, list[Launch]] = {}
    for step in plan:
        if isinstance(step, WaitKernel):
            open_group.pop(step.stream, None)
        elif step.fused and step.stream in open_group:
            open_group[step.stream].append(step)
        else:
            groups.append([step])
            open_group[step.stream] = groups[-1]
    return groups


def launch_group_of(plan: Iterable[HostStep]) -> dict[str, tuple[str, ...]]:
    """Each launched stage's one-launch group: the stages of its grid in ticket order."""
    return {launch.stage: tuple(member.stage for member in group)
            for group in one_launch_groups(plan) for launch in group}


_HOST_OPS = (sync.StageOp, sync.DependencyOp, sync.LaunchOp, sync.WaitKernelOp)
"""The ops `StageGraph.of` reads (found with ops_of: a program's kernels have thousands of
others)."""


@dataclass
class StageGraph:
    """Stages by name, the dependencies between them and the host plan, in program order."""

    stages: dict[str, sync.StageOp]
    dependencies: list[sync.DependencyOp]
    steps: list[HostStep]  # the declared plan (empty when the program declares none)

    @staticmethod
    def of(program: Operation) -> StageGraph:
        stages: dict[str, sync.StageOp] = {}
        dependencies: list[sync.DependencyOp] = []
        steps: list[HostStep] = []
        for op in ops_of(program, _HOST_OPS):
            if isinstance(op, sync.StageOp):
                stages[op.sym_name.data] = op
            elif isinstance(op, sync.DependencyOp):
                dependencies.append(op)
            elif isinstance(op, sync.LaunchOp):
                steps.append(Launch(op.stage.root_reference.data, op.stream.value.data,
                                    op.priority.value.data, bool(op.pdl.value.data), op,
                                    bool(op.fused.value.data)))
            elif isinstance(op, sync.WaitKernelOp):
                steps.append(WaitKernel(op.producer.root_reference.data, op.stream.value.data,
                                        op))
        for dep in dependencies:
            for role, ref in (("producer", dep.producer), ("consumer", dep.consumer)):
                if ref.root_reference.data not in stages:
                    raise OpDiagnostic(
                        f"sync.dependency: {role} {ref} is not a sync.stage of this module", dep)
        return StageGraph(stages, dependencies, steps)

    # -- dependencies ------------------------------------------------------------------------
    def producer_of(self, dep: sync.DependencyOp) -> sync.StageOp:
        return self.stages[dep.producer.root_reference.data]

    def consumer_of(self, dep: sync.DependencyOp) -> sync.StageOp:
        return self.stages[dep.consumer.root_reference.data]

    def outgoing(self, stage: str) -> list[sync.DependencyOp]:
        return [d for d in self.dependencies if d.producer.root_reference.data == stage]

    def incoming(self, stage: str) -> list[sync.DependencyOp]:
        return [d for d in self.dependencies if d.consumer.root_reference.data == stage]

    def producers(self, stage: str) -> list[str]:
        """Names of the stages `stage` waits on, once each, in program order."""
        names: dict[str, None] = {}
        for dep in self.incoming(stage):
            names.setdefault(dep.producer.root_reference.data, None)
        return list(names)

    def dependent_pairs(self) -> list[tuple[str, str]]:
        """(producer, consumer) stage names, once each, in program order."""
        pairs: dict[tuple[str, str], None] = {}
        for dep in self.dependencies:
            pairs.setdefault((dep.producer.root_reference.data,
                              dep.consumer.root_reference.data), None)
        return list(pairs)

    # -- the host plan -----------------------------------------------------------------------
    @property
    def plan(self) -> list[HostStep]:
        """The host plan the runtime follows: the declared one, or every stage on stream 0 in
        program order."""
        return list(self.steps) if self.steps else default_plan(self.stages)

    def launch(self, stage: str) -> Launch | None:
        """The declared launch of `stage` (sync.launch refuses a second one)."""
        return next((s for s in self.steps if isinstance(s, Launch) and s.stage == stage), None)

    def launch_group(self, stage: str) -> tuple[str, ...]:
        """The stages of `stage`'s launch in ticket order (itself alone unless fused ones
        join it: `one_launch_groups`)."""
        return launch_group_of(self.plan).get(stage, (stage,))

    def wait_kernels(self) -> list[WaitKernel]:
        return [s for s in self.steps if isinstance(s, WaitKernel)]

    def guarded_launch(self, wait: WaitKernel) -> Launch | None:
        """The launch a wait-kernel guards: the next launch on its stream in program order."""
        position = next(i for i, step in enumerate(self.steps) if step is wait)
        after = self.steps[position + 1 :]
        return next((s for s in after if isinstance(s, Launch) and s.stream == wait.stream),
                    None)

"""What the wait-kernel and PDL passes share: a stage's kernel, its launch, the kernel entry.

Stages, dependencies and launches are read through `analysis.stage_graph.StageGraph`; which
mechanism orders a launch is `analysis.forward_progress`'s to say.
"""

from __future__ import annotations

from xdsl.dialects import gpu
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from tilesync.analysis.stage_graph import HostStep, Launch, StageGraph, WaitKernel
from tilesync.dialects import sync
from tilesync.dialects.kernel_args import lookup_kernel
from tilesync.dialects.locations import OpDiagnostic


def kernel_of(module: ModuleOp, stage: sync.StageOp) -> gpu.FuncOp:
    return lookup_kernel(module, stage.kernel, f"sync.stage @{stage.sym_name.data}", stage)


def launch_of(graph: StageGraph, name: str, pass_name: str) -> sync.LaunchOp:
    launch = graph.launch(name)
    if launch is None or launch.op is None:
        raise OpDiagnostic(f"{pass_name}: stage @{name} has no sync.launch, so there is no "
                           "launch to order", graph.stages[name])
    return launch.op


def device_launch_of(graph: StageGraph, name: str, pass_name: str) -> sync.LaunchOp:
    """The launch that puts `name`'s blocks on the device: its own, or the launch its fused
    launch joins (a wait-kernel or a stream change goes there)."""
    own = launch_of(graph, name, pass_name)
    group = graph.launch_group(name)
    return own if group[0] == name else launch_of(graph, group[0], pass_name)


def entry_insertion_point(func: gpu.FuncOp) -> Operation:
    """The op before which kernel-entry code goes."""
    first = func.body.blocks.first.first_op
    assert first is not None
    return first


def guards(plan: list[HostStep], wait: WaitKernel, launch: Launch) -> bool:
    """Whether `wait` is on `launch`'s stream before it, with no launch between them."""
    position = next(i for i, s in enumerate(plan) if s is wait)
    for later in plan[position + 1:]:
        if later.stream != wait.stream:
            continue
        return later is launch or (isinstance(later, WaitKernel) and guards(plan, later,
                                                                            launch))
    return False

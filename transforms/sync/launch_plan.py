"""What the wait-kernel and PDL passes share: a stage's kernel, its launch, the kernel entry.

Stages, dependencies and launches are read through `analysis.stage_graph.StageGraph`; which
mechanism orders a launch is `analysis.forward_progress`'s to say.
"""

from __future__ import annotations

from xdsl.dialects import gpu
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from tilesync.analysis.stage_graph import StageGraph
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


def entry_insertion_point(func: gpu.FuncOp) -> Operation:
    """The op before which kernel-entry code goes."""
    first = func.body.blocks.first.first_op
    assert first is not None
    return first

"""What the wait-kernel and PDL passes share: stages, their launches and their kernels."""

from __future__ import annotations

from collections.abc import Iterator

from xdsl.dialects import gpu
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from tilesync.dialects import sync
from tilesync.dialects.kernel_args import lookup_kernel
from tilesync.dialects.locations import OpDiagnostic


def stages(module: ModuleOp) -> dict[str, sync.StageOp]:
    return {op.sym_name.data: op for op in module.walk() if isinstance(op, sync.StageOp)}


def launches(module: ModuleOp) -> dict[str, sync.LaunchOp]:
    return {op.stage.root_reference.data: op for op in module.walk()
            if isinstance(op, sync.LaunchOp)}


def dependent_pairs(module: ModuleOp) -> Iterator[tuple[str, str]]:
    """(producer, consumer) stage names, once each, in program order."""
    seen: set[tuple[str, str]] = set()
    for op in module.walk():
        if isinstance(op, sync.DependencyOp):
            pair = (op.producer.root_reference.data, op.consumer.root_reference.data)
            if pair not in seen:
                seen.add(pair)
                yield pair


def kernel_of(module: ModuleOp, stage: sync.StageOp) -> gpu.FuncOp:
    return lookup_kernel(module, stage.kernel, f"sync.stage @{stage.sym_name.data}")


def launch_of(module: ModuleOp, name: str, pass_name: str) -> sync.LaunchOp:
    launch = launches(module).get(name)
    if launch is None:
        stage = next((op for op in module.walk()
                      if isinstance(op, sync.StageOp) and op.sym_name.data == name), module)
        raise OpDiagnostic(f"{pass_name}: stage @{name} has no sync.launch, so there is no "
                           "launch to order", stage)
    return launch


def entry_insertion_point(func: gpu.FuncOp) -> Operation:
    """The op before which kernel-entry code goes."""
    first = func.body.blocks.first.first_op
    assert first is not None
    return first

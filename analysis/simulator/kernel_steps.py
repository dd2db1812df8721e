"""A compiled kernel's own program order, per tile: which semaphores it waits on and which
producer tiles it reads, in the order it does so.

The block-level model of the simulator takes a consumer's reads from its declared
dependencies and waits for all of them before reading; a kernel that waits for one tile and
reads another (an off-by-one between the wait of k-step k and the load of k-step k + 1) runs
clean there. Following the kernel instead, a block waits where the kernel's `sync.wait`s are
and reads where its loads are, so such a read happens before its tile's wait and the
simulator reports it as an early read.

The kernel is run abstractly for every tile (`kernel_eval`, the evaluator sync-verify runs:
loops around synchronization unrolled, branches on known conditions taken) and records, in
program order, each `sync.wait` (its stage's semaphore index and posts per launch) and each
load of a produced operand (the producer tiles that wrote the elements its indices can reach,
`operand_access.access_box` over `operand_regions.OperandLayout`, as verify maps them). A
kernel this cannot follow exactly (a wait or a load that may or may not run, one that only
some threads reach, a semaphore that cannot be evaluated, an operand with no tile layout, a
write to a produced operand) is reported with the reason, and the simulator keeps the
block-level model for that stage.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.utils.exceptions import DiagnosticException

from tilesync.analysis.grid import Tile, grid_tiles
from tilesync.analysis.kernel_eval import (
    NO_SEMAPHORE,
    BatchRun,
    Scalar,
    Unproven,
    affine_exact,
    probe_semaphores,
    run_batches,
)
from tilesync.analysis.operand_access import NO_ELEMENT_OPS, WRITE_OPS, access_box
from tilesync.analysis.operand_regions import OperandLayout, layout_for
from tilesync.analysis.stage_graph import StageGraph
from tilesync.contract import RoleKind
from tilesync.dialects import sync
from tilesync.dialects.kernel_args import lookup_kernel, role_arguments


@dataclass(frozen=True)
class KernelStep:
    """One step of a block in its kernel's order: the waits it performs (producer stage,
    semaphore index, posts per launch the wait expects), then the producer tiles it reads
    (producer stage, tile) before its next wait."""

    waits: tuple[tuple[str, int, int], ...]
    reads: tuple[tuple[str, Tile], ...]


class Unfollowable(Exception):
    """The kernel's order cannot be followed exactly; the message says why."""


def _at(x: Scalar, i: int) -> int:
    return int(x[i]) if isinstance(x, np.ndarray) and x.ndim else int(x)


class _OrderRun(BatchRun):
    """Records the waits and reads of a batch of tiles in program order (`events`)."""

    def __init__(self, func: Operation, tiles: np.ndarray, stage: sync.StageOp,
                 operands: dict[SSAValue, list[tuple[str, OperandLayout]]]):
        super().__init__(func, tiles, stage.grid_shape, stage.block_shape)  # type: ignore
        self.budget = None
        self.name = stage.sym_name.data
        self.roles = role_arguments(func)  # type: ignore[arg-type]
        self.operands = operands
        self.readers = {use.operation for arg in operands for use in arg.uses}
        # ("wait", stage, semaphore, posts) or ("read", stage, coords, valid), per batch tile
        self.events: list[tuple] = []

    def _certain(self, op: Operation, what: str) -> None:
        if not self.definite:
            raise Unfollowable(f"a {what} ('{op.name}') that may or may not run")
        if self.threads is not None:
            raise Unfollowable(f"a {what} ('{op.name}') that only some threads reach")

    def on_wait(self, op: sync.WaitOp, state: object, definite: bool) -> None:
        self._certain(op, "wait")
        role = self.roles.get(op.sems)
        coords = self.exact_values(op.tile)
        if role is None or role.kind != RoleKind.SEMAPHORES or coords is None:
            raise Unfollowable("a sync.wait whose semaphore cannot be told")
        semaphore = affine_exact(op.policy.sem_map.data.results[0], coords, (), op)
        self.events.append(("wait", role.stage, semaphore, op.policy.posts.data))

    def on_probe(self, op: sync.ProbeOp, state: object) -> None:
        """A probe `until_ready` waits for each of its points (inside its clipped grid); a
        testing probe waits for nothing (the waits it guards are followed as waits)."""
        if op.until_ready is None:
            return
        self._certain(op, "probe that waits")
        role = self.roles.get(op.sems)
        coords = self.exact_values(op.tile)
        if role is None or role.kind != RoleKind.SEMAPHORES or coords is None:
            raise Unfollowable("a sync.probe whose semaphores cannot be told")
        semaphores, inside = probe_semaphores(op, coords, self.size)
        for waited in np.where(inside, semaphores, NO_SEMAPHORE):
            self.events.append(("wait", role.stage, waited, op.policy.posts.data))

    def slice_roots(self) -> set[Operation]:
        return self.readers

    def on_op(self, op: Operation, state: object) -> None:
        if op not in self.readers or isinstance(op, (*sync.HOOK_OPS, *NO_ELEMENT_OPS)):
            return
        for value, producers in self.operands.items():
            if value not in op.operands:
                continue
            if isinstance(op, WRITE_OPS):
                raise Unfollowable(f"'{op.name}' writes a produced operand")
            self._certain(op, "read")
            box = access_box(self, op, value, value.index, f"@{self.name}")  # type: ignore
            if box is None:
                continue
            for producer, layout in producers:
                for coords, valid in layout.tiles(*box):
                    self.events.append(("read", producer, coords, valid))

    def steps(self, i: int) -> list[KernelStep]:
        """Tile i of the batch's steps: a new step begins at each wait after a read."""
        steps: list[KernelStep] = []
        waits: dict[tuple[str, int, int], None] = {}
        reads: dict[tuple[str, Tile], None] = {}
        for kind, stage, where, extra in self.events:
            if kind == "wait":
                if _at(where, i) == NO_SEMAPHORE:
                    continue
                if reads:
                    steps.append(KernelStep(tuple(waits), tuple(reads)))
                    waits, reads = {}, {}
                waits[(stage, _at(where, i), extra)] = None
            elif _at(extra, i):
                reads[(stage, tuple(_at(c, i) for c in where))] = None
        if waits or reads or not steps:
            steps.append(KernelStep(tuple(waits), tuple(reads)))
        return steps


def follow_stage(module: ModuleOp, graph: StageGraph, name: str) -> dict[Tile, list[KernelStep]]:
    """Every tile of stage `name`'s steps in its kernel's order; Unfollowable where the kernel
    cannot be followed exactly."""
    stage = graph.stages[name]
    try:
        func = lookup_kernel(module, stage.kernel, f"sync.stage @{name}", stage)
    except DiagnosticException as err:
        raise Unfollowable(str(err)) from err
    args = func.body.blocks.first.args  # type: ignore[union-attr]
    operands: dict[SSAValue, list[tuple[str, OperandLayout]]] = {}
    for dep in graph.incoming(name):
        producer = graph.producer_of(dep)
        if dep.operand.data >= len(args):
            raise Unfollowable(f"the kernel has no argument {dep.operand.data}")
        arg = args[dep.operand.data]
        layout = layout_for(producer, arg.type)
        if isinstance(layout, str):
            raise Unfollowable(f"operand {dep.operand.data}: {layout}")
        operands.setdefault(arg, []).append((producer.sym_name.data, layout))
    all_tiles = list(grid_tiles(stage.grid_shape))
    tiles = np.array(all_tiles, dtype=np.int64).reshape(len(all_tiles), stage.rank)

    def attempt(indices: np.ndarray) -> _OrderRun:
        run = _OrderRun(func, tiles[indices], stage, operands)
        try:
            run.run(None)
        except Unproven as err:
            raise Unfollowable(str(err)) from err
        return run

    found: dict[Tile, list[KernelStep]] = {}
    for indices, run in run_batches(tiles, attempt):
        for i, index in enumerate(indices):
            found[all_tiles[int(index)]] = run.steps(i)
    return found


def kernel_order(module: ModuleOp, graph: StageGraph
                   ) -> tuple[dict[str, dict[Tile, list[KernelStep]]], dict[str, str]]:
    """The steps of every stage that reads another's tiles, where its kernel can be followed;
    and, for the others, why not."""
    followed: dict[str, dict[Tile, list[KernelStep]]] = {}
    unfollowed: dict[str, str] = {}
    for name in graph.stages:
        if not graph.incoming(name):
            continue  # it reads no produced tile: the block-level model is its order
        try:
            followed[name] = follow_stage(module, graph, name)
        except Unfollowable as err:
            unfollowed[name] = str(err)
    return followed, unfollowed

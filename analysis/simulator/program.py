"""The simulated program: stages, dependencies, policies, the launch plan and the machine, as
plain Python (`SimProgram`, `SimMachine`), read from IR by `program_from_ir`, and validated
against each other by `CheckedProgram`."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Operation
from xdsl.ir.affine import AffineMap
from xdsl.traits import SymbolTable

from tilesync.analysis.forward_progress import Residency
from tilesync.analysis.grid import Tile, grid_tiles, in_grid
from tilesync.analysis.simulator.kernel_steps import KernelStep, kernel_order
from tilesync.analysis.simulator.records import BlockStep
from tilesync.analysis.stage_graph import (
    HostStep,
    Launch,
    StageGraph,
    WaitKernel,
    default_plan,
    launch_group_of,
)
from tilesync.analysis.tile_order import order_tiles
from tilesync.contract import MIN_BLOCKS_PER_SM_ATTR
from tilesync.dialects.sync import DependencyOp, OrderAttr, PolicyAttr, StageOp, box_points

BLOCK_ORDERS = ("row_major", "column_major")

# A stage's compute: (tile, epoch, inputs per dependency in declaration order) → tile value.
Compute = Callable[[Tile, int, list[list[Any]]], Any]


class PolicyLike(Protocol):
    """What the simulator needs of a policy: `PolicyAttr`, or a hand-made (wrong) one."""

    posts: Any  # int, or IntAttr as in PolicyAttr

    def semaphore_index(self, tile: Sequence[int]) -> int: ...


@dataclass(frozen=True)
class SimPolicy:
    """A policy outside the IR: any tile → index function and a post count. Tests use it to
    build wrong policies that PolicyAttr's verifier would refuse (posts = 0, say)."""

    index: Callable[[Tile], int]
    posts: int

    def semaphore_index(self, tile: Sequence[int]) -> int:
        return self.index(tuple(tile))


def posts_of(policy: PolicyLike) -> int:
    posts = policy.posts
    return posts.data if hasattr(posts, "data") else int(posts)


# ---------------------------------------------------------------------------------------------
# The program
# ---------------------------------------------------------------------------------------------


@dataclass
class SimStage:
    """One kernel launch, tile by tile.

    `duration` is ticks per tile (an int or a function of the tile). `order` is an order table
    (tiles taken in dispatch order through an atomic counter); without one, block b computes
    tile b of `block_tiles` order ("row_major": the last coordinate fastest; "column_major":
    the first fastest, which is what CUDA's blockIdx.x-fastest dispatch gives for
    tile = block id). `blocks_per_sm` overrides the machine's occupancy for this kernel.
    """

    name: str
    grid: tuple[int, ...]
    duration: int | Callable[[Tile], int] = 1
    policy: PolicyLike | None = None
    order: Sequence[Tile] | None = None
    block_tiles: Literal["row_major", "column_major"] = "row_major"
    blocks_per_sm: int | None = None
    per_step: bool = False
    compute: Compute | None = None
    # Each tile's steps in its compiled kernel's own order (`kernel_steps`): the block waits
    # and reads exactly there, instead of reading what its dependencies declare, all at once
    # (or per step with `per_step`) after waiting for all of it.
    kernel_steps: Mapping[Tile, Sequence[KernelStep]] | None = None

    def tiles(self) -> list[Tile]:
        """Tile of each block id, without an order table."""
        if self.block_tiles not in BLOCK_ORDERS:
            raise ValueError(f"unknown block order {self.block_tiles!r}")
        return order_tiles(OrderAttr(self.block_tiles), self.grid)

    def duration_of(self, tile: Tile) -> int:
        ticks = self.duration(tile) if callable(self.duration) else self.duration
        if ticks < 0:
            raise ValueError(f"stage {self.name}: tile {tile} has negative duration {ticks}")
        return ticks


@dataclass
class SimDependency:
    """Consumer tile → the producer tiles it reads. `guarded=False` reads without waiting
    (the reference cuSync's fault of guarding only the A operand)."""

    producer: str
    consumer: str
    reads: Callable[[Tile], Sequence[Tile]]
    guarded: bool = True

    @classmethod
    def affine(
        cls,
        producer: str,
        consumer: str,
        tiles_map: AffineMap,
        forall_ranges: Sequence[tuple[int, int]] = (),
        guarded: bool = True,
    ) -> SimDependency:
        """The cuSyncGen form: producer tile = map(consumer tile)[forall symbols]."""
        ranges = list(forall_ranges)
        if len(ranges) != tiles_map.num_symbols:
            raise ValueError(
                f"{tiles_map.num_symbols} forall variables need as many ranges, got {ranges}"
            )

        def reads(tile: Tile) -> list[Tile]:
            seen: dict[Tile, None] = {}
            for symbols in box_points(ranges):
                seen.setdefault(tuple(tiles_map.eval(tile, symbols)), None)
            return list(seen)

        return cls(producer, consumer, reads, guarded)

    @classmethod
    def from_op(cls, op: DependencyOp) -> SimDependency:
        if op.clipped is not None:  # the op knows which tiles fall outside the grid
            return cls(op.producer.root_reference.data, op.consumer.root_reference.data,
                       lambda tile: op.producer_tiles(tile))
        return cls.affine(
            op.producer.root_reference.data,
            op.consumer.root_reference.data,
            op.tiles_map,
            op.ranges,
        )


@dataclass
class SimProgram:
    """Stages, dependencies and the launch plan in program order (default: every stage on
    stream 0 in list order, i.e. plain stream order)."""

    stages: list[SimStage]
    dependencies: list[SimDependency] = field(default_factory=list)
    launches: list[HostStep] | None = None
    # stages whose kernel was to be followed but could not be, with why (they keep the
    # block-level model of their declared dependencies)
    unfollowed: dict[str, str] = field(default_factory=dict)

    def launch_plan(self) -> list[HostStep]:
        if self.launches is None:
            return default_plan(stage.name for stage in self.stages)
        return list(self.launches)

    def stage(self, name: str) -> SimStage:
        for stage in self.stages:
            if stage.name == name:
                return stage
        raise KeyError(name)


@dataclass(frozen=True)
class SimMachine:
    """`sms` SMs of `blocks_per_sm` blocks each (the occupancy of a stage that gives none)."""

    sms: int
    blocks_per_sm: int = 1

    @property
    def slots(self) -> int:
        return self.sms * self.blocks_per_sm


# ---------------------------------------------------------------------------------------------
# The program checked against the machine
# ---------------------------------------------------------------------------------------------


class CheckedProgram:
    """A program validated against a machine: its stages by name, the dependencies into each,
    the tiles each consumer tile reads, stage depths, the launch plan, and SM capacity in units
    (a block of a stage that fits b per SM takes capacity / b)."""

    def __init__(self, program: SimProgram, machine: SimMachine):
        self.program = program
        self.machine = machine
        self.stages = {stage.name: stage for stage in program.stages}
        if len(self.stages) != len(program.stages):
            raise ValueError("stage names must be unique")
        self.position = {stage.name: i for i, stage in enumerate(program.stages)}
        self.inputs: dict[str, list[SimDependency]] = defaultdict(list)
        for dependency in program.dependencies:
            for role in (dependency.producer, dependency.consumer):
                if role not in self.stages:
                    raise ValueError(f"dependency names an unknown stage {role!r}")
            if dependency.producer == dependency.consumer:
                raise ValueError(f"stage {dependency.producer} cannot depend on itself")
            self.inputs[dependency.consumer].append(dependency)
        self.topological = self._topological_order()
        self.depth = self._depths()
        self.followed = {name: self._followed_steps(stage) for name, stage in self.stages.items()
                         if stage.kernel_steps is not None}
        self.reads = {name: self._reads_of(self.stages[name]) for name in self.stages}
        self.plan = program.launch_plan()
        self._check_plan()
        self.launch_group = launch_group_of(self.plan)
        self.capacity = math.lcm(
            machine.blocks_per_sm, *(self.blocks_per_sm(name) for name in self.stages)
        )

    def blocks_per_sm(self, stage: str) -> int:
        """Blocks of `stage` an SM holds: of its launch's one kernel, where other stages join
        it, the fewest among theirs."""
        return min(self._own_blocks_per_sm(name) for name in self.launch_group[stage])

    def _own_blocks_per_sm(self, stage: str) -> int:
        value = self.stages[stage].blocks_per_sm or self.machine.blocks_per_sm
        if value < 1:
            raise ValueError(f"stage {stage}: blocks_per_sm must be positive")
        return value

    def units(self, stage: str) -> int:
        """SM capacity a block of `stage` takes, in units of capacity / lcm(occupancies)."""
        return self.capacity // self.blocks_per_sm(stage)

    def _topological_order(self) -> list[str]:
        indegree = {name: len(self.inputs[name]) for name in self.stages}
        ready = [name for name in self.stages if indegree[name] == 0]
        order: list[str] = []
        while ready:
            name = ready.pop(0)
            order.append(name)
            for dependency in self.program.dependencies:
                if dependency.producer == name:
                    indegree[dependency.consumer] -= 1
                    if indegree[dependency.consumer] == 0:
                        ready.append(dependency.consumer)
        if len(order) != len(self.stages):
            cycle = sorted(set(self.stages) - set(order))
            raise ValueError(f"dependencies form a cycle through {cycle}")
        return order

    def _depths(self) -> dict[str, int]:
        depth: dict[str, int] = {}
        for name in self.topological:
            depth[name] = max((depth[d.producer] + 1 for d in self.inputs[name]), default=0)
        return depth

    def _reads_of(self, stage: SimStage) -> dict[Tile, list[list[Tile]]]:
        """Per tile, the producer tiles read through each dependency, in reading order."""
        reads: dict[Tile, list[list[Tile]]] = {}
        dependencies = self.inputs[stage.name]
        for tile in grid_tiles(stage.grid):
            if stage.name in self.followed:
                per_dependency: list[list[Tile]] = [[] for _ in dependencies]
                for step in self.followed[stage.name][tile]:
                    for k, producer_tile in step.reads:
                        per_dependency[k].append(producer_tile)
            else:
                per_dependency = [[tuple(t) for t in d.reads(tile)] for d in dependencies]
            for dependency, tiles in zip(dependencies, per_dependency):
                producer_grid = self.stages[dependency.producer].grid
                for producer_tile in tiles:
                    if not in_grid(producer_tile, producer_grid):
                        raise ValueError(
                            f"{stage.name} tile {tile} reads {dependency.producer} tile "
                            f"{producer_tile} outside its grid {tuple(producer_grid)}"
                        )
            reads[tile] = per_dependency
        return reads

    def _followed_steps(self, stage: SimStage) -> dict[Tile, list[BlockStep]]:
        """Each tile's steps in its kernel's order, reads by dependency position (a
        producer's tiles go to the first dependency on it)."""
        position: dict[str, int] = {}
        for k, dependency in enumerate(self.inputs[stage.name]):
            position.setdefault(dependency.producer, k)
        assert stage.kernel_steps is not None
        followed = {}
        for tile in grid_tiles(stage.grid):
            steps = []
            for step in stage.kernel_steps[tile]:
                for producer, _ in step.reads:
                    if producer not in position:
                        raise ValueError(f"{stage.name} tile {tile}: its kernel reads tiles of "
                                         f"{producer}, on which it declares no dependency")
                steps.append(BlockStep(step.waits,
                                       tuple((position[p], t) for p, t in step.reads)))
            followed[tile] = steps
        return followed

    def _check_plan(self) -> None:
        launched = [item.stage for item in self.plan if isinstance(item, Launch)]
        for name in launched:
            if name not in self.stages:
                raise ValueError(f"launch of unknown stage {name!r}")
        if sorted(launched) != sorted(self.stages):
            raise ValueError(
                f"every stage must be launched exactly once per program; launched {launched}"
            )
        for item in self.plan:
            if isinstance(item, WaitKernel) and item.producer not in self.stages:
                raise ValueError(f"wait-kernel for unknown stage {item.producer!r}")

    def residency(self) -> dict[str, Residency]:
        """Blocks of one launch and blocks per SM of every stage, for the forward-progress
        rules."""
        return {
            name: Residency(math.prod(stage.grid), self.blocks_per_sm(name))
            for name, stage in self.stages.items()
        }


# ---------------------------------------------------------------------------------------------
# From IR
# ---------------------------------------------------------------------------------------------


def _stage_policy(stage: StageOp) -> PolicyAttr | None:
    """The stage's `policy` property or attribute, where the dialect has one."""
    for source in (stage.properties, stage.attributes):
        policy = source.get("policy")
        if isinstance(policy, PolicyAttr):
            return policy
    return None


def _kernel_blocks_per_sm(stage: StageOp) -> int | None:
    """`tilesync.min_blocks_per_sm` on the stage's gpu.func, when the kernel is in the module."""
    try:
        kernel = SymbolTable.lookup_symbol(stage, stage.kernel)
    except (ValueError, AttributeError):  # no symbol table above the stage
        return None
    attr = kernel.attributes.get(MIN_BLOCKS_PER_SM_ATTR) if kernel else None
    return attr.value.data if isinstance(attr, IntegerAttr) else None


def program_from_ir(
    module: ModuleOp | Operation,
    *,
    policies: Mapping[str, PolicyLike] | None = None,
    durations: int | Mapping[str, int | Callable[[Tile], int]] = 1,
    blocks_per_sm: Mapping[str, int] | None = None,
    per_step: Iterable[str] = (),
    compute: Mapping[str, Compute] | None = None,
    follow_kernels: bool = False,
) -> SimProgram:
    """A `SimProgram` from `sync.stage` / `sync.dependency` / `sync.launch` /
    `sync.wait_kernel` ops, in module order.

    A stage's policy is `policies[name]` if given, else its `policy` property or attribute.
    A stage with an `order` takes tiles from an order table; without one its tile is its block
    id, which the hardware dispatches blockIdx.x (d0) fastest. Without any `sync.launch` every
    stage is launched on stream 0 in module order.

    `follow_kernels` (for a module after sync-insert-post-wait): each stage that reads
    another's tiles waits and reads where its compiled kernel does (`kernel_steps`), not where
    its dependencies say; a stage whose kernel cannot be followed keeps the block-level model,
    with the reason in the program's `unfollowed`.
    """
    policies = dict(policies or {})
    steps = set(per_step)
    graph = StageGraph.of(module)
    followed, unfollowed = kernel_order(module, graph) if follow_kernels else ({}, {})  # type: ignore[arg-type]
    stages: list[SimStage] = []
    for name, op in graph.stages.items():
        duration = durations if isinstance(durations, int) else durations.get(name, 1)
        stages.append(
            SimStage(
                name,
                op.grid_shape,
                duration=duration,
                policy=policies.get(name) or _stage_policy(op),
                order=None if op.order is None else order_tiles(op.order, op.grid_shape),
                block_tiles="column_major",
                blocks_per_sm=(blocks_per_sm or {}).get(name) or _kernel_blocks_per_sm(op),
                per_step=name in steps,
                compute=(compute or {}).get(name),
                kernel_steps=followed.get(name),
            )
        )
    dependencies = [SimDependency.from_op(op) for op in graph.dependencies]
    return SimProgram(stages, dependencies, list(graph.steps) or None, unfollowed)

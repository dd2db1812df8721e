"""A CPU simulator of a stage program: cuSync's per-tile semaphores without a GPU.

The model, in the terms of the cuSync paper (§III) and DESIGN.md ("Forward progress"):

* A program is a list of stages (kernels), each a grid of tiles computed by one block per tile,
  dependencies (consumer tile → the producer tiles it reads), one policy per producer stage
  (producer tile → semaphore index, `posts` posts per launch), and a launch plan: launches on
  streams (FIFO per stream, a priority, optionally PDL) and wait-kernels.
* A block, once dispatched, holds its SM slot until it ends. It waits (spins) until every
  semaphore covering the producer tiles it reads reaches `epoch × posts`, reads those tiles
  (recording which launch stored them), computes for its tile's duration, stores its tile and
  posts +1 to its own semaphore. With `per_step` it does this step by step (k-steps of a GEMM):
  wait for the tiles of step s, read them, compute a share of its duration, next step.
* Without an order table block b computes a fixed tile; with one (cuSync's tile()) the k-th
  block *dispatched* takes entry k of the table from an atomic counter.
* The block scheduler fills SM slots (`sms × blocks_per_sm`, a stage may fit fewer blocks per
  SM) from the grids that are eligible: in launch order (priority first), at random, or
  adversarially (consumer grids ahead of producers, as early as their launch allows).
* Semaphores are never reset; a program launched several times (epochs 1, 2, ...) waits for
  `epoch × posts`, so wrong epoch arithmetic shows up as reads of a previous launch's tiles.

What it reports (`SimResult`): the makespan in ticks, when each stage ran, a deadlock (every
waiting block with the semaphore, the value expected and the value seen), every read of a tile
the current launch had not stored yet, semaphores left at a count other than `epoch × posts`,
and whether every output tile equals a reference computed stage after stage.

Tiles carry values: by default a hash of (stage, tile, epoch, values read); a stage may give its
own `compute(tile, epoch, inputs)` returning e.g. small numpy arrays.
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np
from xdsl.dialects.builtin import IntegerAttr, ModuleOp
from xdsl.ir import Operation
from xdsl.ir.affine import AffineMap
from xdsl.traits import SymbolTable

from tilesync.contract import MIN_BLOCKS_PER_SM_ATTR
from tilesync.dialects.sync import (
    DependencyOp,
    LaunchOp,
    OrderAttr,
    PolicyAttr,
    StageOp,
    WaitKernelOp,
)

Tile = tuple[int, ...]
Scheduler = Literal["in_order", "random", "adversarial"]
SCHEDULERS: tuple[Scheduler, ...] = ("in_order", "random", "adversarial")
WaitKernelMode = Literal["all_dispatched", "first_started"]

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


def _posts_of(policy: PolicyLike) -> int:
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

    def tiles(self) -> list[Tile]:
        return grid_tiles(self.grid, self.block_tiles)

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
            for symbols in itertools.product(*(range(lo, hi) for lo, hi in ranges)):
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


@dataclass(frozen=True)
class SimLaunch:
    """Launch a stage on a stream. CUDA priorities: a smaller number is a higher priority.
    `pdl`: a programmatic dependent of the previous launch on the stream, dispatchable once
    every block of that launch has started (our kernels trigger at block start)."""

    stage: str
    stream: int = 0
    priority: int = 0
    pdl: bool = False


@dataclass(frozen=True)
class SimWaitKernel:
    """cuSync's wait-kernel on a stream: later launches on the stream wait for it. It takes no
    SM slot (one thread) and ends when the producer's blocks have started (see `simulate`)."""

    producer: str
    stream: int = 0


LaunchItem = SimLaunch | SimWaitKernel


@dataclass
class SimProgram:
    """Stages, dependencies and the launch plan in program order (default: every stage on
    stream 0 in list order, i.e. plain stream order)."""

    stages: list[SimStage]
    dependencies: list[SimDependency] = field(default_factory=list)
    launches: list[LaunchItem] | None = None

    def launch_plan(self) -> list[LaunchItem]:
        if self.launches is None:
            return [SimLaunch(stage.name) for stage in self.stages]
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
# Tile orders
# ---------------------------------------------------------------------------------------------


def grid_tiles(grid: Sequence[int], order: str = "row_major") -> list[Tile]:
    """Every tile of the grid, row-major (last coordinate fastest) or column-major."""
    tiles = list(itertools.product(*(range(extent) for extent in grid)))
    if order == "column_major":
        tiles.sort(key=lambda tile: tile[::-1])
    elif order != "row_major":
        raise ValueError(f"unknown block order {order!r}")
    return tiles


def order_table(grid: Sequence[int], order: OrderAttr) -> list[Tile]:
    """The tiles of `grid` in the order a `#sync.order<...>` hands them out."""
    kind, params = order.kind.data, order.values
    if kind in ("row_major", "column_major"):
        return grid_tiles(grid, kind)
    if kind == "strided":
        # Tiles `stride` columns apart are taken consecutively: per row, columns
        # 0, s, 2s, ..., then 1, 1 + s, ... (Q, K and V tiles of one head together).
        (stride,) = params
        if len(grid) < 2:
            raise ValueError(f"strided order needs a column dimension, got grid {tuple(grid)}")
        return sorted(grid_tiles(grid), key=lambda t: (t[0], t[1] % stride, t[1] // stride, *t[2:]))
    if kind == "table":
        tiles = grid_tiles(grid)
        if sorted(params) != list(range(len(tiles))):
            raise ValueError(
                f"order table {list(params)} is not a permutation of the {len(tiles)} tiles "
                f"of grid {tuple(grid)}"
            )
        return [tiles[index] for index in params]
    raise ValueError(f"tile order {kind!r} has no simulator model")


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BlockWait:
    """A block stuck in a wait: which semaphore, the value it expects and the value seen."""

    stage: str
    block: int
    tile: Tile
    epoch: int
    semaphore_stage: str
    semaphore: int
    expected: int
    seen: int

    def __str__(self) -> str:
        return (
            f"{self.stage} block {self.block} (tile {self.tile}, launch {self.epoch}) waits on "
            f"{self.semaphore_stage} semaphore {self.semaphore}: expected {self.expected}, "
            f"seen {self.seen}"
        )


DeadlockReason = Literal["slots-held-by-waiters", "posts-never-arrive", "launch-blocked"]


@dataclass(frozen=True)
class Deadlock:
    """No block can make progress.

    * slots-held-by-waiters: waiting blocks hold the slots that pending producer blocks need
      (the deadlock of cuSync §III-B);
    * posts-never-arrive: every producer tile the stuck waits cover has posted, yet they
      expect more (a policy's `posts` or an epoch count too large);
    * launch-blocked: the rest: a grid or wait-kernel that never becomes eligible (a consumer
      ahead of its producer on one stream, a wait-kernel ahead of its producer).
    """

    time: int
    reason: DeadlockReason
    waits: tuple[BlockWait, ...]
    pending_blocks: Mapping[str, int]  # "stage@launch" → blocks not yet dispatched
    blocked_launches: tuple[str, ...]  # grids / wait-kernels never eligible or never done
    free_slots: int

    def describe(self, limit: int = 5) -> str:
        lines = [f"deadlock at tick {self.time} ({self.reason}), {self.free_slots} free slots"]
        lines += [f"  {wait}" for wait in self.waits[:limit]]
        if len(self.waits) > limit:
            lines.append(f"  ... and {len(self.waits) - limit} more waiting blocks")
        if self.pending_blocks:
            pending = ", ".join(f"{k}: {n}" for k, n in self.pending_blocks.items())
            lines.append(f"  blocks not dispatched: {pending}")
        if self.blocked_launches:
            lines.append(f"  never eligible or never done: {', '.join(self.blocked_launches)}")
        return "\n".join(lines)


ViolationKind = Literal["read-before-write", "read-after-overwrite"]


@dataclass(frozen=True)
class Violation:
    """A consumer read a producer tile that the current launch had not stored yet
    (`found_epoch` < `epoch`; 0 = never stored), or that a later launch already overwrote."""

    kind: ViolationKind
    time: int
    epoch: int
    consumer: str
    consumer_tile: Tile
    producer: str
    producer_tile: Tile
    found_epoch: int

    def __str__(self) -> str:
        return (
            f"{self.kind} at tick {self.time}: {self.consumer} tile {self.consumer_tile} "
            f"(launch {self.epoch}) read {self.producer} tile {self.producer_tile} stored by "
            f"launch {self.found_epoch}"
        )


@dataclass(frozen=True)
class SemaphoreMismatch:
    """After launch `epoch` completed, a semaphore held a count other than epoch × posts: the
    policy's `posts` disagrees with how many tiles map to it."""

    stage: str
    semaphore: int
    epoch: int
    expected: int
    seen: int


class SimulationError(AssertionError):
    """Raised by `SimResult.check()`."""


@dataclass
class SimResult:
    makespan: int
    stage_finish: dict[str, int]  # the last launch's finish per stage
    stage_spans: dict[str, list[tuple[int, int]]]  # (first dispatch, finish) per launch
    tile_spans: dict[str, dict[Tile, tuple[int, int]]]  # last launch: (dispatch, finish)
    deadlock: Deadlock | None
    violations: list[Violation]
    semaphore_mismatches: list[SemaphoreMismatch]
    outputs: list[dict[str, dict[Tile, Any]]]  # per launch: stage → tile → value
    reference: list[dict[str, dict[Tile, Any]]]
    mismatched_tiles: list[tuple[int, str, Tile]]  # (launch, stage, tile)
    guarantees: dict[tuple[str, str], str | None]

    @property
    def outputs_match(self) -> bool:
        return self.deadlock is None and not self.mismatched_tiles

    @property
    def ok(self) -> bool:
        return self.outputs_match and not self.violations and not self.semaphore_mismatches

    def check(self) -> None:
        """Raise a readable error for a deadlock, a violation or wrong outputs."""
        problems: list[str] = []
        if self.deadlock is not None:
            problems.append(self.deadlock.describe())
        problems += [str(v) for v in self.violations[:5]]
        problems += [
            f"{m.stage} semaphore {m.semaphore} after launch {m.epoch}: expected {m.expected},"
            f" seen {m.seen}"
            for m in self.semaphore_mismatches[:5]
        ]
        if self.mismatched_tiles and self.deadlock is None:
            problems.append(
                f"{len(self.mismatched_tiles)} output tiles differ from the "
                f"reference, first {self.mismatched_tiles[0]}"
            )
        if problems:
            raise SimulationError("\n".join(problems))


# ---------------------------------------------------------------------------------------------
# Program analysis shared by the simulation and the guarantee check
# ---------------------------------------------------------------------------------------------


class _Analysis:
    """Validated program facts: reads per consumer tile, semaphore sizes, stage depth."""

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
        self.reads = {name: self._reads_of(self.stages[name]) for name in self.stages}
        self.semaphores = self._semaphore_sizes()
        self.plan = program.launch_plan()
        self._check_plan()
        self.capacity = math.lcm(
            machine.blocks_per_sm, *(self.blocks_per_sm(name) for name in self.stages)
        )

    def blocks_per_sm(self, stage: str) -> int:
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
        reads: dict[Tile, list[list[Tile]]] = {}
        for tile in grid_tiles(stage.grid):
            per_dependency = []
            for dependency in self.inputs[stage.name]:
                producer_grid = self.stages[dependency.producer].grid
                tiles = [tuple(t) for t in dependency.reads(tile)]
                for producer_tile in tiles:
                    if len(producer_tile) != len(producer_grid) or not all(
                        0 <= c < e for c, e in zip(producer_tile, producer_grid)
                    ):
                        raise ValueError(
                            f"{stage.name} tile {tile} reads {dependency.producer} tile "
                            f"{producer_tile} outside its grid {tuple(producer_grid)}"
                        )
                per_dependency.append(tiles)
            reads[tile] = per_dependency
        return reads

    def _semaphore_sizes(self) -> dict[str, int]:
        sizes: dict[str, int] = {}
        for stage in self.stages.values():
            guarded = any(d.guarded for d in self.program.dependencies if d.producer == stage.name)
            if stage.policy is None:
                if guarded:
                    raise ValueError(
                        f"stage {stage.name} is waited on but has no policy (pass one)"
                    )
                continue
            indices = [stage.policy.semaphore_index(t) for t in grid_tiles(stage.grid)]
            if min(indices) < 0:
                raise ValueError(f"policy of stage {stage.name} maps a tile below index 0")
            sizes[stage.name] = max(indices) + 1
        return sizes

    def _check_plan(self) -> None:
        launched = [item.stage for item in self.plan if isinstance(item, SimLaunch)]
        for name in launched:
            if name not in self.stages:
                raise ValueError(f"launch of unknown stage {name!r}")
        if sorted(launched) != sorted(self.stages):
            raise ValueError(
                f"every stage must be launched exactly once per program; launched {launched}"
            )
        for item in self.plan:
            if isinstance(item, SimWaitKernel) and item.producer not in self.stages:
                raise ValueError(f"wait-kernel for unknown stage {item.producer!r}")

    def all_blocks_fit(self) -> bool:
        """Every block of one launch of the program is resident at once, whatever the order
        and placement of dispatches (the occupancy check of DESIGN.md)."""
        units = [self.units(s.name) for s in self.program.stages for _ in grid_tiles(s.grid)]
        total, sms = sum(units), self.machine.sms
        if len(set(units)) == 1:
            return total <= sms * (self.capacity // units[0]) * units[0]
        # Mixed occupancies: a block of u units finds no SM only if every SM holds at least
        # one other block and more than capacity - u units, while the other blocks number
        # len(units) - 1 and use at most total - u units.
        return all(
            sms > len(units) - 1 or sms * (self.capacity - u + 1) > total - u for u in set(units)
        )


# ---------------------------------------------------------------------------------------------
# Forward-progress guarantees
# ---------------------------------------------------------------------------------------------


def progress_guarantees(
    program: SimProgram,
    machine: SimMachine,
    wait_kernel_mode: WaitKernelMode = "all_dispatched",
    scheduler: Scheduler = "adversarial",
) -> dict[tuple[str, str], str | None]:
    """For each dependency (producer, consumer), the mechanism that keeps a waiting consumer
    block from holding the slot its producer tile needs, or None where nothing does.

    * "stream-order": the consumer is launched after the producer on its stream (its grid
      becomes eligible once the producer completed);
    * "pdl": the same, through programmatic dependent launches only (eligible once every
      producer block started);
    * "wait-kernel": a wait-kernel for the producer precedes the consumer on its stream and
      ends once every producer block is dispatched. The paper's wait-kernel ends when the
      producer's *first* block started (`wait_kernel_mode="first_started"`); that is enough
      only for an in-order block scheduler that puts the consumer behind the producer, so
      under any other scheduler it counts as no guarantee;
    * "co-resident": every block of one launch of the program fits on the machine at once
      (with `launch_barrier=False` launches may overlap; this check does not cover that).

    A producer whose eligibility itself needs the consumer (e.g. launched after it on the same
    stream) gets no guarantee: nothing can break that cycle.
    """
    return _guarantees(_Analysis(program, machine), wait_kernel_mode, scheduler)


def _guarantees(
    analysis: _Analysis, wait_kernel_mode: WaitKernelMode, scheduler: Scheduler
) -> dict[tuple[str, str], str | None]:
    program = analysis.program
    plan = analysis.plan
    streams: dict[int, list[int]] = defaultdict(list)
    for index, item in enumerate(plan):
        streams[item.stream].append(index)
    launch_index = {item.stage: i for i, item in enumerate(plan) if isinstance(item, SimLaunch)}
    priority = {item.stage: item.priority for item in plan if isinstance(item, SimLaunch)}

    # needs[i]: plan items whose progress item i's eligibility or completion depends on.
    needs: dict[int, set[int]] = defaultdict(set)
    for indices in streams.values():
        for earlier, later in itertools.pairwise(indices):
            needs[later].add(earlier)
    for index, item in enumerate(plan):
        if isinstance(item, SimWaitKernel):
            needs[index].add(launch_index[item.producer])
        else:
            for dependency in analysis.inputs[item.stage]:
                needs[index].add(launch_index[dependency.producer])

    def reachable(start: int) -> set[int]:
        seen: set[int] = set()
        todo = list(needs[start])
        while todo:
            node = todo.pop()
            if node not in seen:
                seen.add(node)
                todo.extend(needs[node])
        return seen

    reach = {index: reachable(index) for index in range(len(plan))}
    on_cycle = {index for index in range(len(plan)) if index in reach[index]}

    co_resident = analysis.all_blocks_fit()
    result: dict[tuple[str, str], str | None] = {}
    for dependency in program.dependencies:
        producer, consumer = launch_index[dependency.producer], launch_index[dependency.consumer]
        key = (dependency.producer, dependency.consumer)
        if consumer in reach[producer] or on_cycle & (reach[producer] | {producer}):
            # The producer's launch waits, directly or not, on the consumer or on a cycle.
            result[key] = None
            continue
        stream = streams[plan[consumer].stream]
        before = stream[: stream.index(consumer)]
        if producer in before:
            between = stream[stream.index(producer) + 1 : stream.index(consumer) + 1]
            all_pdl = all(isinstance(plan[i], SimLaunch) and plan[i].pdl for i in between)
            result[key] = "pdl" if all_pdl else "stream-order"
        elif any(
            isinstance(plan[i], SimWaitKernel) and plan[i].producer == dependency.producer
            for i in before
        ) and (
            wait_kernel_mode == "all_dispatched"
            or (
                scheduler == "in_order"
                and priority[dependency.consumer] >= priority[dependency.producer]
            )
        ):
            result[key] = "wait-kernel"
        elif co_resident:
            result[key] = "co-resident"
        else:
            result[key] = None
    return result


# ---------------------------------------------------------------------------------------------
# The simulation
# ---------------------------------------------------------------------------------------------


def _digest(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return hash((value.shape, value.tobytes()))
    return hash(value)


def _default_compute(position: int) -> Compute:
    def compute(tile: Tile, epoch: int, inputs: list[list[Any]]) -> int:
        return hash((position, tile, epoch, tuple(tuple(map(_digest, i)) for i in inputs)))

    return compute


def _values_equal(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(a, b))
    return bool(a == b)


@dataclass(eq=False)
class _Grid:
    stage: str
    epoch: int
    stream: int
    priority: int
    pdl: bool
    seq: int
    size: int
    pending: list[int]
    eligible_at: int | None = None
    eligible_rank: int = 0  # place in the hardware's queue of eligible grids
    dispatched: int = 0
    finished: int = 0
    first_dispatch: int | None = None
    done_at: int | None = None

    @property
    def label(self) -> str:
        return f"{self.stage}@{self.epoch}"


@dataclass(eq=False)
class _WaitKernel:
    producer: str
    epoch: int
    stream: int
    seq: int
    eligible_at: int | None = None
    done_at: int | None = None

    @property
    def label(self) -> str:
        return f"wait_kernel({self.producer})@{self.epoch}"


@dataclass(eq=False)
class _Block:
    grid: _Grid
    block_id: int
    tile: Tile
    sm: int
    dispatched_at: int
    steps: list[list[tuple[int, Tile]]]  # per step: (dependency position, producer tile)
    step: int = 0
    inputs: list[list[Any]] = field(default_factory=list)
    waiting: dict[tuple[str, int], int] = field(default_factory=dict)  # semaphore → target


class _Simulation:
    def __init__(
        self,
        analysis: _Analysis,
        scheduler: Scheduler,
        seed: int,
        launches: int,
        wait_kernel_mode: WaitKernelMode,
        launch_barrier: bool,
        wait_target: Callable[[int, int], int],
    ):
        if scheduler not in SCHEDULERS:
            raise ValueError(f"unknown scheduler {scheduler!r}, expected one of {SCHEDULERS}")
        if launches < 1:
            raise ValueError("launches must be >= 1")
        self.a = analysis
        self.scheduler = scheduler
        self.rng = random.Random(seed)
        self.launches = launches
        self.wait_kernel_mode = wait_kernel_mode
        self.launch_barrier = launch_barrier
        self.wait_target = wait_target
        self.now = 0
        self.events: list[tuple[int, float, int, _Block]] = []
        self.event_seq = itertools.count()
        self.eligible_ranks = itertools.count()
        self.free = [analysis.capacity] * analysis.machine.sms
        self.sems = {
            (name, index): 0 for name, size in analysis.semaphores.items() for index in range(size)
        }
        self.waiters: dict[tuple[str, int], list[_Block]] = defaultdict(list)
        self.store: dict[str, dict[Tile, tuple[int, Any]]] = defaultdict(dict)
        self.counters: dict[str, int] = defaultdict(int)  # order-table counters, never reset
        self.outputs: list[dict[str, dict[Tile, Any]]] = [
            defaultdict(dict) for _ in range(launches)
        ]
        self.violations: list[Violation] = []
        self.tile_spans: dict[str, dict[Tile, tuple[int, int]]] = defaultdict(dict)
        self.mismatches: list[SemaphoreMismatch] = []
        self.compute = {
            s.name: s.compute or _default_compute(analysis.position[s.name])
            for s in analysis.program.stages
        }
        self.block_tiles = {s.name: s.tiles() for s in analysis.program.stages}
        self._build_streams()

    # --- launch plan ------------------------------------------------------------------------

    def _build_streams(self) -> None:
        self.streams: dict[int, list[_Grid | _WaitKernel]] = defaultdict(list)
        self.grids: list[_Grid] = []
        self.grid_of: dict[tuple[str, int], _Grid] = {}
        self.items_of_epoch: dict[int, list[_Grid | _WaitKernel]] = defaultdict(list)
        seq = itertools.count()
        for epoch in range(1, self.launches + 1):
            for item in self.a.plan:
                run: _Grid | _WaitKernel
                if isinstance(item, SimWaitKernel):
                    run = _WaitKernel(item.producer, epoch, item.stream, next(seq))
                else:
                    size = math.prod(self.a.stages[item.stage].grid)
                    run = _Grid(
                        item.stage,
                        epoch,
                        item.stream,
                        item.priority,
                        item.pdl,
                        next(seq),
                        size,
                        self._block_order(item.stage, size),
                    )
                    self.grids.append(run)
                    self.grid_of[(item.stage, epoch)] = run
                self.streams[item.stream].append(run)
                self.items_of_epoch[epoch].append(run)

    def _block_order(self, stage: str, size: int) -> list[int]:
        blocks = list(range(size))
        if self.scheduler == "random":
            self.rng.shuffle(blocks)
        elif self.scheduler == "adversarial" and self.a.depth[stage] == 0:
            # Producers hand out their blocks backwards, so the tiles consumers (in forward
            # order) want first come last.
            blocks.reverse()
        return blocks

    @staticmethod
    def _complete(item: _Grid | _WaitKernel) -> bool:
        return item.done_at is not None

    def _epoch_open(self, epoch: int) -> bool:
        if not self.launch_barrier or epoch == 1:
            return True
        return all(self._complete(item) for item in self.items_of_epoch[epoch - 1])

    @staticmethod
    def _releases(previous: _Grid | _WaitKernel, item: _Grid | _WaitKernel) -> bool:
        """Whether `previous` on a stream lets `item` become eligible."""
        if isinstance(item, _Grid) and item.pdl and isinstance(previous, _Grid):
            return previous.dispatched == previous.size
        return previous.done_at is not None

    def _update_eligibility(self) -> bool:
        released: list[_Grid | _WaitKernel] = []
        for items in self.streams.values():
            for position, item in enumerate(items):
                if item.eligible_at is not None:
                    continue
                if not self._epoch_open(item.epoch):
                    break
                if position > 0 and not self._releases(items[position - 1], item):
                    break
                item.eligible_at = self.now
                released.append(item)
        # Grids join the hardware queue when released, behind every grid released before
        # (program order only breaks ties within one release).
        for item in sorted(released, key=lambda i: i.seq):
            if isinstance(item, _Grid):
                item.eligible_rank = next(self.eligible_ranks)
        return bool(released)

    def _finish_wait_kernels(self) -> bool:
        changed = False
        for items in self.streams.values():
            for item in items:
                if not isinstance(item, _WaitKernel) or item.eligible_at is None:
                    continue
                if item.done_at is not None:
                    continue
                producer = self.grid_of[(item.producer, item.epoch)]
                needed = producer.size if self.wait_kernel_mode == "all_dispatched" else 1
                if producer.dispatched >= needed:
                    item.done_at = self.now
                    changed = True
        return changed

    # --- dispatch ---------------------------------------------------------------------------

    def _candidates(self) -> list[_Grid]:
        grids = [g for g in self.grids if g.eligible_at is not None and g.pending]
        if self.scheduler == "in_order":
            grids.sort(key=lambda g: (g.priority, g.eligible_rank))
        elif self.scheduler == "adversarial":
            # Consumers first (deepest stage first), the latest launch first.
            grids.sort(key=lambda g: (-self.a.depth[g.stage], -g.seq))
        else:
            self.rng.shuffle(grids)
        return grids

    def _place(self, units: int) -> int | None:
        """The SM with the most free capacity that fits the block (hardware spreads blocks)."""
        best = max(range(len(self.free)), key=lambda sm: self.free[sm])
        return best if self.free[best] >= units else None

    def _dispatch(self) -> bool:
        """Dispatch one block, if any fits. One at a time: a wait-kernel or PDL launch may
        release a consumer grid between two blocks of its producer (the adversary uses it)."""
        for grid in self._candidates():
            units = self.a.units(grid.stage)
            sm = self._place(units)
            if sm is not None:
                self.free[sm] -= units
                self._start_block(grid, grid.pending.pop(0), sm)
                return True
        return False

    def _start_block(self, grid: _Grid, block_id: int, sm: int) -> None:
        stage = self.a.stages[grid.stage]
        if stage.order is not None:
            # cuSync's tile(): the next slot of an atomic counter, in dispatch order.
            table = stage.order
            tile = tuple(table[self.counters[grid.stage] % len(table)])
            self.counters[grid.stage] += 1
        else:
            tile = self.block_tiles[grid.stage][block_id]
        grid.dispatched += 1
        if grid.first_dispatch is None:
            grid.first_dispatch = self.now
        reads = self.a.reads[grid.stage][tile]
        if stage.per_step:
            count = max((len(r) for r in reads), default=0)
            steps = [
                [(k, r[s]) for k, r in enumerate(reads) if s < len(r)] for s in range(count)
            ] or [[]]
        else:
            steps = [[(k, t) for k, r in enumerate(reads) for t in r]]
        block = _Block(grid, block_id, tile, sm, self.now, steps, inputs=[[] for _ in reads])
        self._begin_step(block)

    # --- blocks -----------------------------------------------------------------------------

    def _begin_step(self, block: _Block) -> None:
        dependencies = self.a.inputs[block.grid.stage]
        targets: dict[tuple[str, int], int] = {}
        for k, producer_tile in block.steps[block.step]:
            dependency = dependencies[k]
            if not dependency.guarded:
                continue
            policy = self.a.stages[dependency.producer].policy
            assert policy is not None
            semaphore = (dependency.producer, policy.semaphore_index(producer_tile))
            targets[semaphore] = self.wait_target(block.grid.epoch, _posts_of(policy))
        unmet = {s: target for s, target in targets.items() if self._seen(s) < target}
        if not unmet:
            self._run_step(block)
            return
        block.waiting = targets
        for semaphore in unmet:
            self.waiters[semaphore].append(block)

    def _seen(self, semaphore: tuple[str, int]) -> int:
        # A wait on an index past the array (a wrong policy) reads a word nobody posts.
        return self.sems.get(semaphore, 0)

    def _run_step(self, block: _Block) -> None:
        """The waits of this step are over: read its tiles, compute a share of the duration."""
        epoch = block.grid.epoch
        dependencies = self.a.inputs[block.grid.stage]
        for k, producer_tile in block.steps[block.step]:
            producer = dependencies[k].producer
            found_epoch, value = self.store[producer].get(producer_tile, (0, None))
            if found_epoch != epoch:
                self.violations.append(
                    Violation(
                        "read-before-write" if found_epoch < epoch else "read-after-overwrite",
                        self.now,
                        epoch,
                        block.grid.stage,
                        block.tile,
                        producer,
                        producer_tile,
                        found_epoch,
                    )
                )
            block.inputs[k].append(value)
        total = self.a.stages[block.grid.stage].duration_of(block.tile)
        count = len(block.steps)
        share = total // count + (1 if block.step < total % count else 0)
        tiebreak = self.rng.random() if self.scheduler == "random" else 0.0
        heapq.heappush(self.events, (self.now + share, tiebreak, next(self.event_seq), block))

    def _segment_done(self, block: _Block) -> None:
        block.step += 1
        if block.step < len(block.steps):
            self._begin_step(block)
            return
        grid = block.grid
        value = self.compute[grid.stage](block.tile, grid.epoch, block.inputs)
        self.store[grid.stage][block.tile] = (grid.epoch, value)
        self.outputs[grid.epoch - 1][grid.stage][block.tile] = value
        if grid.epoch == self.launches:
            self.tile_spans[grid.stage][block.tile] = (block.dispatched_at, self.now)
        policy = self.a.stages[grid.stage].policy
        if policy is not None:
            self._post((grid.stage, policy.semaphore_index(block.tile)))
        self.free[block.sm] += self.a.units(grid.stage)
        grid.finished += 1
        if grid.finished == grid.size:
            grid.done_at = self.now
            if self.launch_barrier:
                self._check_semaphores_after(grid.epoch)

    def _post(self, semaphore: tuple[str, int]) -> None:
        self.sems[semaphore] += 1
        # Waiters see each post as it lands, so a wait satisfied one post too early reads
        # before the last tile of its semaphore is stored.
        for block in list(self.waiters[semaphore]):
            if all(self._seen(s) >= target for s, target in block.waiting.items()):
                for s in block.waiting:
                    if block in self.waiters[s]:
                        self.waiters[s].remove(block)
                block.waiting = {}
                self._run_step(block)

    def _check_semaphores_after(self, epoch: int) -> None:
        if not all(g.done_at is not None for g in self.grids if g.epoch == epoch):
            return
        for (stage, index), seen in self.sems.items():
            expected = epoch * _posts_of(self.a.stages[stage].policy)  # type: ignore[arg-type]
            if seen != expected:
                self.mismatches.append(SemaphoreMismatch(stage, index, epoch, expected, seen))

    # --- main loop --------------------------------------------------------------------------

    def run(self) -> Deadlock | None:
        while True:
            while any([self._update_eligibility(), self._finish_wait_kernels(), self._dispatch()]):
                pass
            if not self.events:
                break
            self.now = self.events[0][0]
            while self.events and self.events[0][0] == self.now:
                self._segment_done(heapq.heappop(self.events)[3])
        if all(g.done_at is not None for g in self.grids):
            if not self.launch_barrier:
                self._check_semaphores_after(self.launches)
            return None
        return self._deadlock()

    def _deadlock(self) -> Deadlock:
        waits = []
        blocks = {id(b): b for queue in self.waiters.values() for b in queue}
        for block in blocks.values():
            for semaphore, target in block.waiting.items():
                if self._seen(semaphore) < target:
                    waits.append(
                        BlockWait(
                            block.grid.stage,
                            block.block_id,
                            block.tile,
                            block.grid.epoch,
                            semaphore[0],
                            semaphore[1],
                            target,
                            self._seen(semaphore),
                        )
                    )
        pending = {g.label: len(g.pending) for g in self.grids if g.pending}
        eligible_pending = any(g.pending and g.eligible_at is not None for g in self.grids)
        blocked = tuple(
            item.label
            for items in self.streams.values()
            for item in items
            if item.eligible_at is None or (item.done_at is None and isinstance(item, _WaitKernel))
        )
        reason: DeadlockReason
        if waits and eligible_pending:
            reason = "slots-held-by-waiters"
        elif waits and all(
            self.grid_of[(w.semaphore_stage, w.epoch)].done_at is not None for w in waits
        ):
            # Every tile these waits cover has been posted: the counts can never be reached.
            reason = "posts-never-arrive"
        else:
            reason = "launch-blocked"
        free_slots = sum(self.free) // (self.a.capacity // self.a.machine.blocks_per_sm)
        return Deadlock(self.now, reason, tuple(waits), pending, blocked, free_slots)


def _reference(analysis: _Analysis, launches: int) -> list[dict[str, dict[Tile, Any]]]:
    """Every launch computed stage after stage in dependency order: what a correct program
    stores."""
    results: list[dict[str, dict[Tile, Any]]] = []
    for epoch in range(1, launches + 1):
        values: dict[str, dict[Tile, Any]] = {}
        for name in analysis.topological:
            stage = analysis.stages[name]
            compute = stage.compute or _default_compute(analysis.position[name])
            dependencies = analysis.inputs[name]
            values[name] = {
                tile: compute(
                    tile,
                    epoch,
                    [
                        [values[d.producer][t] for t in tiles]
                        for d, tiles in zip(dependencies, analysis.reads[name][tile])
                    ],
                )
                for tile in grid_tiles(stage.grid)
            }
        results.append(values)
    return results


def simulate(
    program: SimProgram,
    machine: SimMachine,
    scheduler: Scheduler = "in_order",
    *,
    seed: int = 0,
    launches: int = 1,
    wait_kernel_mode: WaitKernelMode = "all_dispatched",
    launch_barrier: bool = True,
    wait_target: Callable[[int, int], int] = lambda epoch, posts: epoch * posts,
) -> SimResult:
    """Run `program` `launches` times on `machine` without resetting semaphores.

    `wait_kernel_mode`: "all_dispatched" (default) is what `sync.wait_kernel` promises and what
    forward progress needs: the consumer's stream continues once every producer block has been
    dispatched. "first_started" is the paper's wait-kernel (the producer's first block raises
    the flag), which is enough only while the hardware dispatches grids in launch order.
    `launch_barrier`: the host waits for each launch of the program before the next (as the
    benchmarks do); without it launches only queue on their streams, and a later launch
    overwriting a tile an earlier consumer has not read yet is reported.
    `wait_target(epoch, posts)`: the value a wait expects; override it to model wrong epoch
    arithmetic.
    """
    analysis = _Analysis(program, machine)
    simulation = _Simulation(
        analysis, scheduler, seed, launches, wait_kernel_mode, launch_barrier, wait_target
    )
    deadlock = simulation.run()
    reference = _reference(analysis, launches)
    outputs = [dict(values) for values in simulation.outputs]
    mismatched = [
        (epoch, name, tile)
        for epoch in range(1, launches + 1)
        for name in analysis.topological
        for tile, expected in reference[epoch - 1][name].items()
        if tile not in outputs[epoch - 1].get(name, {})
        or not _values_equal(outputs[epoch - 1][name][tile], expected)
    ]
    spans: dict[str, list[tuple[int, int]]] = {
        name: [
            (grid.first_dispatch or 0, grid.done_at)
            for grid in simulation.grids
            if grid.stage == name and grid.done_at is not None
        ]
        for name in analysis.stages
    }
    finish = {name: span[-1][1] for name, span in spans.items() if span}
    makespan = max((grid.done_at or 0 for grid in simulation.grids), default=0)
    return SimResult(
        makespan=deadlock.time if deadlock else makespan,
        stage_finish=finish,
        stage_spans=spans,
        tile_spans=dict(simulation.tile_spans),
        deadlock=deadlock,
        violations=simulation.violations,
        semaphore_mismatches=simulation.mismatches,
        outputs=outputs,
        reference=reference,
        mismatched_tiles=mismatched,
        guarantees=_guarantees(analysis, wait_kernel_mode, scheduler),
    )


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
) -> SimProgram:
    """A `SimProgram` from `sync.stage` / `sync.dependency` / `sync.launch` /
    `sync.wait_kernel` ops, in module order.

    A stage's policy is `policies[name]` if given, else its `policy` property or attribute.
    A stage with an `order` takes tiles from an order table; without one its tile is its block
    id, which the hardware dispatches blockIdx.x (d0) fastest. Without any `sync.launch` every
    stage is launched on stream 0 in module order.
    """
    policies = dict(policies or {})
    steps = set(per_step)
    stages: list[SimStage] = []
    dependencies: list[SimDependency] = []
    launches: list[LaunchItem] = []
    for op in module.walk():
        if isinstance(op, StageOp):
            name = op.sym_name.data
            duration = durations if isinstance(durations, int) else durations.get(name, 1)
            stages.append(
                SimStage(
                    name,
                    op.grid_shape,
                    duration=duration,
                    policy=policies.get(name) or _stage_policy(op),
                    order=None if op.order is None else order_table(op.grid_shape, op.order),
                    block_tiles="column_major",
                    blocks_per_sm=(blocks_per_sm or {}).get(name) or _kernel_blocks_per_sm(op),
                    per_step=name in steps,
                    compute=(compute or {}).get(name),
                )
            )
        elif isinstance(op, DependencyOp):
            dependencies.append(SimDependency.from_op(op))
        elif isinstance(op, LaunchOp):
            launches.append(
                SimLaunch(
                    op.stage.root_reference.data,
                    op.stream.value.data,
                    op.priority.value.data,
                    bool(op.pdl.value.data),
                )
            )
        elif isinstance(op, WaitKernelOp):
            launches.append(SimWaitKernel(op.producer.root_reference.data, op.stream.value.data))
    return SimProgram(stages, dependencies, launches or None)

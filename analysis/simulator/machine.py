"""The simulated machine: SMs with slots, streams, the block dispatcher and the main loop;
`simulate` runs a program on it, `progress_guarantees` asks the forward-progress rules about it.
"""

from __future__ import annotations

import heapq
import itertools
import math
import random
from collections import defaultdict
from collections.abc import Callable
from typing import Any, Literal

import numpy as np

from tilesync.analysis.forward_progress import ProgressFacts, WaitKernelEnds, guarantees
from tilesync.analysis.grid import Tile, grid_tiles
from tilesync.analysis.simulator.program import (
    CheckedProgram,
    Compute,
    SimMachine,
    SimProgram,
    SimStage,
    posts_of,
)
from tilesync.analysis.simulator.records import Block, BlockStep, Grid, WaitKernelRun
from tilesync.analysis.simulator.results import Deadlock, DeadlockReason, SimResult, Violation
from tilesync.analysis.simulator.sync_objects import Semaphores, SyncObjects
from tilesync.analysis.stage_graph import WaitKernel

Scheduler = Literal["in_order", "random", "adversarial"]
SCHEDULERS: tuple[Scheduler, ...] = ("in_order", "random", "adversarial")


# ---------------------------------------------------------------------------------------------
# Forward-progress guarantees
# ---------------------------------------------------------------------------------------------


def progress_guarantees(
    program: SimProgram,
    machine: SimMachine,
    wait_kernel_mode: WaitKernelEnds = "all_dispatched",
    scheduler: Scheduler = "adversarial",
) -> dict[tuple[str, str], str | None]:
    """For each dependency (producer, consumer), the mechanism that keeps a waiting consumer
    block from holding the slot its producer tile needs (a kind of
    `forward_progress.GUARANTEES`), or None where nothing does. The rules are
    `forward_progress`'s, with the machine's SMs and each stage's blocks per SM; the paper's
    wait-kernel (`wait_kernel_mode="first_started"`) counts only under the in-order scheduler.
    Co-residency covers one launch of the program (with `launch_barrier=False` launches may
    overlap; this check does not cover that).
    """
    return _guarantees(CheckedProgram(program, machine), wait_kernel_mode, scheduler)


def _guarantees(
    program: CheckedProgram, wait_kernel_mode: WaitKernelEnds, scheduler: Scheduler
) -> dict[tuple[str, str], str | None]:
    facts = ProgressFacts(
        stages=list(program.stages),
        dependencies=[(d.producer, d.consumer) for d in program.program.dependencies],
        plan=program.plan,
        residency=program.residency(),
        sms=program.machine.sms,
        wait_kernel_ends=wait_kernel_mode,
        in_order_dispatch=scheduler == "in_order",
        # the simulated machine holds a launch's stages at its kernel's blocks per SM already
        # (CheckedProgram.blocks_per_sm): as many as of one block size
        block_threads=dict.fromkeys(program.stages, 1),
    )
    return {pair: None if g is None else g.kind for pair, g in guarantees(facts).items()}


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


class Machine:
    """SMs with slots, streams with their launches and wait-kernels, and a block dispatcher;
    what blocks wait on is the synchronization objects' business (`sync_objects`)."""

    def __init__(
        self,
        program: CheckedProgram,
        sync: SyncObjects,
        scheduler: Scheduler,
        seed: int,
        launches: int,
        wait_kernel_mode: WaitKernelEnds,
        launch_barrier: bool,
    ):
        if scheduler not in SCHEDULERS:
            raise ValueError(f"unknown scheduler {scheduler!r}, expected one of {SCHEDULERS}")
        if launches < 1:
            raise ValueError("launches must be >= 1")
        self.program = program
        self.scheduler = scheduler
        self.rng = random.Random(seed)
        self.launches = launches
        self.wait_kernel_mode = wait_kernel_mode
        self.launch_barrier = launch_barrier
        self.now = 0
        self.events: list[tuple[int, float, int, Block]] = []
        self.event_seq = itertools.count()
        self.eligible_ranks = itertools.count()
        self.free = [program.capacity] * program.machine.sms
        self.sync = sync
        self.store: dict[str, dict[Tile, tuple[int, Any]]] = defaultdict(dict)
        self.counters: dict[str, int] = defaultdict(int)  # order-table counters, never reset
        self.outputs: list[dict[str, dict[Tile, Any]]] = [
            defaultdict(dict) for _ in range(launches)
        ]
        self.violations: list[Violation] = []
        self.tile_spans: dict[str, dict[Tile, tuple[int, int]]] = defaultdict(dict)
        self.compute = {
            s.name: s.compute or _default_compute(program.position[s.name])
            for s in program.program.stages
        }
        self.block_tiles = {s.name: s.tiles() for s in program.program.stages}
        self._build_streams()

    # --- launch plan ------------------------------------------------------------------------

    def _build_streams(self) -> None:
        self.streams: dict[int, list[Grid | WaitKernelRun]] = defaultdict(list)
        self.grids: list[Grid] = []
        self.grid_of: dict[tuple[str, int], Grid] = {}
        self.items_of_epoch: dict[int, list[Grid | WaitKernelRun]] = defaultdict(list)
        seq = itertools.count()
        for epoch in range(1, self.launches + 1):
            for item in self.program.plan:
                run: Grid | WaitKernelRun
                if isinstance(item, WaitKernel):
                    run = WaitKernelRun(item.producer, epoch, item.stream, next(seq))
                else:
                    size = math.prod(self.program.stages[item.stage].grid)
                    run = Grid(
                        item.stage,
                        epoch,
                        item.stream,
                        item.priority,
                        item.pdl,
                        next(seq),
                        size,
                        self._block_order(item.stage, size),
                    )
                    if item.fused and self.streams[item.stream] and isinstance(
                            self.streams[item.stream][-1], Grid):
                        run.launch = self.streams[item.stream][-1].launch
                    run.launch.append(run)
                    self.grids.append(run)
                    self.grid_of[(item.stage, epoch)] = run
                self.streams[item.stream].append(run)
                self.items_of_epoch[epoch].append(run)

    def _block_order(self, stage: str, size: int) -> list[int]:
        blocks = list(range(size))
        if len(self.program.launch_group[stage]) > 1:
            return blocks  # one launch: a block's tile is the ticket it takes, in order
        if self.scheduler == "random":
            self.rng.shuffle(blocks)
        elif self.scheduler == "adversarial" and self.program.depth[stage] == 0:
            # Producers hand out their blocks backwards, so the tiles consumers (in forward
            # order) want first come last.
            blocks.reverse()
        return blocks

    @staticmethod
    def _complete(item: Grid | WaitKernelRun) -> bool:
        return item.done_at is not None

    def _epoch_open(self, epoch: int) -> bool:
        if not self.launch_barrier or epoch == 1:
            return True
        return all(self._complete(item) for item in self.items_of_epoch[epoch - 1])

    @staticmethod
    def _releases(previous: Grid | WaitKernelRun, item: Grid | WaitKernelRun) -> bool:
        """Whether `previous` on a stream lets `item` become eligible (a grid that joins a
        launch: with it; after a launch of several grids: once all of them allow it)."""
        if isinstance(item, Grid) and item.joins:
            return previous.eligible_at is not None
        before = previous.launch if isinstance(previous, Grid) else [previous]
        if isinstance(item, Grid) and item.pdl and isinstance(previous, Grid):
            return all(grid.dispatched == grid.size for grid in before)
        return all(grid.done_at is not None for grid in before)

    def _update_eligibility(self) -> bool:
        released: list[Grid | WaitKernelRun] = []
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
            if isinstance(item, Grid):
                item.eligible_rank = item.launch[0].eligible_rank if item.joins else \
                    next(self.eligible_ranks)
        return bool(released)

    def _finish_wait_kernels(self) -> bool:
        changed = False
        for items in self.streams.values():
            for item in items:
                if not isinstance(item, WaitKernelRun) or item.eligible_at is None:
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

    def _candidates(self) -> list[Grid]:
        # a launch of several grids hands out its tickets grid after grid
        grids = [g for g in self.grids if g.eligible_at is not None and g.pending
                 and not any(h.pending for h in g.launch[:g.launch.index(g)])]
        if self.scheduler == "in_order":
            grids.sort(key=lambda g: (g.priority, g.eligible_rank))
        elif self.scheduler == "adversarial":
            # Consumers first (deepest stage first), the latest launch first.
            grids.sort(key=lambda g: (-self.program.depth[g.stage], -g.seq))
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
            units = self.program.units(grid.stage)
            sm = self._place(units)
            if sm is not None:
                self.free[sm] -= units
                self._start_block(grid, grid.pending.pop(0), sm)
                return True
        return False

    def _start_block(self, grid: Grid, block_id: int, sm: int) -> None:
        stage = self.program.stages[grid.stage]
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
        reads = self.program.reads[grid.stage][tile]
        followed = self.program.followed.get(grid.stage)
        steps = followed[tile] if followed is not None else self._declared_steps(stage, reads)
        block = Block(grid, block_id, tile, sm, self.now, steps, inputs=[[] for _ in reads])
        self._begin_step(block)

    def _declared_steps(self, stage: SimStage, reads: list[list[Tile]]) -> list[BlockStep]:
        """The block-level model: the tiles its dependencies declare, read in one step after
        waiting for all of them (with `per_step`, step s reads the s-th tile of each), each
        guarded one waited for on its producer's policy's semaphore."""
        if stage.per_step:
            count = max((len(r) for r in reads), default=0)
            groups = [[(k, r[s]) for k, r in enumerate(reads) if s < len(r)]
                      for s in range(count)] or [[]]
        else:
            groups = [[(k, t) for k, r in enumerate(reads) for t in r]]
        dependencies = self.program.inputs[stage.name]
        steps = []
        for group in groups:
            waits: dict[tuple[str, int, int], None] = {}
            for k, producer_tile in group:
                dependency = dependencies[k]
                if not dependency.guarded:
                    continue
                policy = self.program.stages[dependency.producer].policy
                assert policy is not None  # Semaphores refuses a waited-on stage without one
                waits[(dependency.producer, policy.semaphore_index(producer_tile),
                       posts_of(policy))] = None
            steps.append(BlockStep(tuple(waits), tuple(group)))
        return steps

    # --- blocks -----------------------------------------------------------------------------

    def _begin_step(self, block: Block) -> None:
        if self.sync.enter(block):
            self._run_step(block)

    def _run_step(self, block: Block) -> None:
        """The waits of this step are over: read its tiles, compute a share of the duration."""
        epoch = block.grid.epoch
        dependencies = self.program.inputs[block.grid.stage]
        for k, producer_tile in block.steps[block.step].reads:
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
        total = self.program.stages[block.grid.stage].duration_of(block.tile)
        count = len(block.steps)
        share = total // count + (1 if block.step < total % count else 0)
        tiebreak = self.rng.random() if self.scheduler == "random" else 0.0
        heapq.heappush(self.events, (self.now + share, tiebreak, next(self.event_seq), block))

    def _segment_done(self, block: Block) -> None:
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
        for released in self.sync.finish(block):
            self._run_step(released)
        self.free[block.sm] += self.program.units(grid.stage)
        grid.finished += 1
        if grid.finished == grid.size:
            grid.done_at = self.now
            if self.launch_barrier:
                self._check_launch_complete(grid.epoch)

    def _check_launch_complete(self, epoch: int) -> None:
        if all(g.done_at is not None for g in self.grids if g.epoch == epoch):
            self.sync.launch_complete(epoch)

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
                self._check_launch_complete(self.launches)
            return None
        return self._deadlock()

    def _deadlock(self) -> Deadlock:
        waits = self.sync.stuck()
        pending = {g.label: len(g.pending) for g in self.grids if g.pending}
        eligible_pending = any(g.pending and g.eligible_at is not None for g in self.grids)
        blocked = tuple(
            item.label
            for items in self.streams.values()
            for item in items
            if item.eligible_at is None
            or (item.done_at is None and isinstance(item, WaitKernelRun))
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
        slot = self.program.capacity // self.program.machine.blocks_per_sm
        free_slots = sum(self.free) // slot
        return Deadlock(self.now, reason, tuple(waits), pending, blocked, free_slots)


def _reference(program: CheckedProgram, launches: int) -> list[dict[str, dict[Tile, Any]]]:
    """Every launch computed stage after stage in dependency order: what a correct program
    stores."""
    results: list[dict[str, dict[Tile, Any]]] = []
    for epoch in range(1, launches + 1):
        values: dict[str, dict[Tile, Any]] = {}
        for name in program.topological:
            stage = program.stages[name]
            compute = stage.compute or _default_compute(program.position[name])
            dependencies = program.inputs[name]
            values[name] = {
                tile: compute(
                    tile,
                    epoch,
                    [
                        [values[d.producer][t] for t in tiles]
                        for d, tiles in zip(dependencies, program.reads[name][tile])
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
    wait_kernel_mode: WaitKernelEnds = "all_dispatched",
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
    checked = CheckedProgram(program, machine)
    semaphores = Semaphores(checked, wait_target)
    simulation = Machine(
        checked, semaphores, scheduler, seed, launches, wait_kernel_mode, launch_barrier
    )
    deadlock = simulation.run()
    reference = _reference(checked, launches)
    outputs = [dict(values) for values in simulation.outputs]
    mismatched = [
        (epoch, name, tile)
        for epoch in range(1, launches + 1)
        for name in checked.topological
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
        for name in checked.stages
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
        semaphore_mismatches=simulation.sync.mismatches,
        outputs=outputs,
        reference=reference,
        mismatched_tiles=mismatched,
        guarantees=_guarantees(checked, wait_kernel_mode, scheduler),
        followed=tuple(checked.followed),
        unfollowed=dict(program.unfollowed),
    )



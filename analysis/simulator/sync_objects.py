"""The synchronization objects of a simulated program, apart from the machine that runs it.

The machine (SM slots, streams, the block dispatcher) tells them two things of every block:
it is about to run its current step (`enter`: may it, or must it wait?), and it has stored its
tile (`finish`: which waiting blocks may run now?). Per-tile semaphores implement this today; a
queue model (Kitsune: acquire a free or a full entry, release it) implements the same
interface and is handed to `Machine` in their place.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Protocol

from tilesync.analysis.grid import grid_tiles
from tilesync.analysis.simulator.program import CheckedProgram, posts_of
from tilesync.analysis.simulator.records import Block
from tilesync.analysis.simulator.results import BlockWait, SemaphoreMismatch

Semaphore = tuple[str, int]  # (stage whose policy it belongs to, index)


class SyncObjects(Protocol):
    """What the machine asks of a program's synchronization objects."""

    mismatches: list[SemaphoreMismatch]  # counts found wrong once a launch completed

    def enter(self, block: Block) -> bool:
        """Whether `block` may run its current step now; if not, the objects keep it until a
        `finish` releases it."""
        ...

    def finish(self, block: Block) -> list[Block]:
        """`block` has stored its tile: the waiting blocks that may run their step now, in the
        order they are released."""
        ...

    def launch_complete(self, epoch: int) -> None:
        """Every grid of launch `epoch` has finished."""
        ...

    def stuck(self) -> list[BlockWait]:
        """Every wait still unmet, one per block and object (for a deadlock report)."""
        ...


class Semaphores:
    """cuSync's per-tile semaphores: a block waits until every semaphore its step waits on
    reaches `wait_target(epoch, posts)`, and posts +1 to its own semaphore
    when its tile is stored. Never reset: launch e expects e × posts."""

    def __init__(self, program: CheckedProgram, wait_target: Callable[[int, int], int]):
        self.program = program
        self.wait_target = wait_target
        self.counts: dict[Semaphore, int] = {
            (name, index): 0 for name, size in self._sizes().items() for index in range(size)
        }
        self.waiters: dict[Semaphore, list[Block]] = defaultdict(list)
        self.targets: dict[Block, dict[Semaphore, int]] = {}  # a waiting block's targets
        self.mismatches: list[SemaphoreMismatch] = []

    def _sizes(self) -> dict[str, int]:
        sizes: dict[str, int] = {}
        dependencies = self.program.program.dependencies
        for stage in self.program.stages.values():
            guarded = any(d.guarded for d in dependencies if d.producer == stage.name)
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

    def seen(self, semaphore: Semaphore) -> int:
        # A wait on an index past the array (a wrong policy) reads a word nobody posts.
        return self.counts.get(semaphore, 0)

    def enter(self, block: Block) -> bool:
        targets: dict[Semaphore, int] = {}
        # one semaphore waited on twice in a step (policies of different posts) must reach both
        for stage, index, posts in block.steps[block.step].waits:
            target = self.wait_target(block.grid.epoch, posts)
            targets[(stage, index)] = max(target, targets.get((stage, index), target))
        unmet = [s for s, target in targets.items() if self.seen(s) < target]
        if not unmet:
            return True
        self.targets[block] = targets
        for semaphore in unmet:
            self.waiters[semaphore].append(block)
        return False

    def finish(self, block: Block) -> list[Block]:
        policy = self.program.stages[block.grid.stage].policy
        if policy is None:
            return []
        return self._post((block.grid.stage, policy.semaphore_index(block.tile)))

    def _post(self, semaphore: Semaphore) -> list[Block]:
        self.counts[semaphore] += 1
        # Waiters see each post as it lands, so a wait satisfied one post too early reads
        # before the last tile of its semaphore is stored.
        released = []
        for block in list(self.waiters[semaphore]):
            targets = self.targets[block]
            if all(self.seen(s) >= target for s, target in targets.items()):
                for s in targets:
                    if block in self.waiters[s]:
                        self.waiters[s].remove(block)
                del self.targets[block]
                released.append(block)
        return released

    def launch_complete(self, epoch: int) -> None:
        for (stage, index), seen in self.counts.items():
            policy = self.program.stages[stage].policy
            assert policy is not None
            expected = epoch * posts_of(policy)
            if seen != expected:
                self.mismatches.append(SemaphoreMismatch(stage, index, epoch, expected, seen))

    def stuck(self) -> list[BlockWait]:
        waits = []
        blocks = {id(b): b for queue in self.waiters.values() for b in queue}
        for block in blocks.values():
            for semaphore, target in self.targets[block].items():
                if self.seen(semaphore) < target:
                    waits.append(
                        BlockWait(
                            block.grid.stage,
                            block.block_id,
                            block.tile,
                            block.grid.epoch,
                            semaphore[0],
                            semaphore[1],
                            target,
                            self.seen(semaphore),
                        )
                    )
        return waits

"""What a simulation reports: deadlocks with every stuck wait, early or late reads, semaphore
counts that disagree with their policy, and the outputs against a reference."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from tilesync.analysis.grid import Tile


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
    # the stages that waited and read as their compiled kernels do, and those whose kernel
    # could not be followed (with why): they waited for their declared tiles and read them
    followed: tuple[str, ...] = ()
    unfollowed: dict[str, str] = field(default_factory=dict)

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

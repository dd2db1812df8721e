"""What the simulated machine keeps while it runs: grids (one launch of a stage), wait-kernels
and blocks. The dispatcher and the synchronization objects both read them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tilesync.analysis.grid import Tile


@dataclass(eq=False)
class Grid:
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
    # the grids of its launch in ticket order (itself alone, unless stages share a launch)
    launch: list[Grid] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.stage}@{self.epoch}"

    @property
    def joins(self) -> bool:
        """Whether this grid's blocks join the launch of the grids before it."""
        return self.launch[0] is not self


@dataclass(eq=False)
class WaitKernelRun:
    producer: str
    epoch: int
    stream: int
    seq: int
    eligible_at: int | None = None
    done_at: int | None = None

    @property
    def label(self) -> str:
        return f"wait_kernel({self.producer})@{self.epoch}"


@dataclass(frozen=True)
class BlockStep:
    """One step of a block: it waits until each semaphore (stage whose semaphores, index)
    reaches its epoch's count of `posts` per launch, then reads the producer tiles (dependency
    position, producer tile)."""

    waits: tuple[tuple[str, int, int], ...]  # (stage, semaphore index, posts per launch)
    reads: tuple[tuple[int, Tile], ...]


@dataclass(eq=False)
class Block:
    grid: Grid
    block_id: int
    tile: Tile
    sm: int
    dispatched_at: int
    steps: list[BlockStep]
    step: int = 0
    inputs: list[list[Any]] = field(default_factory=list)

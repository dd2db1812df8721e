"""The wave model of cuSync (paper §I, Table I; §IV-C): waves, predicted gains, and the T rule.

Pure Python, no IR; blocks per SM come from `occupancy`.

* **waves** — a stage of `B` blocks on `S` SMs with `b` blocks per SM runs in
  `waves = B / (S·b)` waves; the last wave is `B - (⌈waves⌉-1)·S·b` blocks of `S·b` slots, and
  the average utilization of all waves is `waves / ⌈waves⌉` (the 60 % / 80 % of paper Table I
  are this average: 1.2 / 2 and 2.4 / 3).
* **prediction** — in tile-time units (every tile takes one unit, the premise of the model):
  stream synchronization runs stage after stage, `Σ ⌈waves_i⌉`; per-tile synchronization lets
  the tiles of the next stage fill the last wave of the previous one, `⌈Σ waves_i⌉` for a chain.
  All wave arithmetic uses exact fractions so that `⌈2.4⌉` is never `⌈2.4000000001⌉`.
* **T** — when cuSyncGen's custom tile order may be dropped (`tile_order_legality`), a question
  of speed only. W (dropping a wait-kernel) is a question of forward progress and lives in
  `forward_progress`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

# ---------------------------------------------------------------------------------------------
# Waves
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StageWaves:
    """Wave quantities of one stage (paper Table I)."""

    blocks: int
    blocks_per_sm: int
    sms: int

    def __post_init__(self) -> None:
        if self.blocks < 1 or self.blocks_per_sm < 1 or self.sms < 1:
            raise ValueError(
                f"waves need positive blocks, blocks per SM and SMs, got {self.blocks}, "
                f"{self.blocks_per_sm}, {self.sms}"
            )

    @property
    def blocks_per_wave(self) -> int:
        return self.sms * self.blocks_per_sm

    @property
    def waves(self) -> Fraction:
        return Fraction(self.blocks, self.blocks_per_wave)

    @property
    def full_waves(self) -> int:
        return self.blocks // self.blocks_per_wave

    @property
    def wave_count(self) -> int:
        """⌈waves⌉: how many waves the stage takes when it runs alone."""
        return math.ceil(self.waves)

    @property
    def last_wave_blocks(self) -> int:
        return self.blocks - (self.wave_count - 1) * self.blocks_per_wave

    @property
    def last_wave_utilization(self) -> Fraction:
        """Fraction of the last wave's slots that hold a block (1.2 waves → 0.2)."""
        return Fraction(self.last_wave_blocks, self.blocks_per_wave)

    @property
    def utilization(self) -> Fraction:
        """Average utilization over all waves, waves / ⌈waves⌉ (paper Table I: 1.2 → 60 %)."""
        return self.waves / self.wave_count


def stage_waves(grid: Sequence[int], blocks_per_sm: int, sms: int) -> StageWaves:
    return StageWaves(math.prod(grid), blocks_per_sm, sms)


@dataclass(frozen=True)
class Prediction:
    """Predicted times in tile-time units of a chain of stages run back to back."""

    stream_sync: int  # Σ ⌈waves_i⌉
    fine_grained: int  # ⌈Σ waves_i⌉
    total_waves: Fraction

    @property
    def speedup(self) -> Fraction:
        return Fraction(self.stream_sync, self.fine_grained)


def _waves_of(stage: StageWaves | Fraction | float | int) -> Fraction:
    if isinstance(stage, StageWaves):
        return stage.waves
    return Fraction(stage)


def predict_chain(stages: Sequence[StageWaves | Fraction | float | int]) -> Prediction:
    """Stream sync vs per-tile sync for a chain of dependent stages (each tile one time unit).

    Stream sync pays every partial wave: Σ ⌈w_i⌉. Per-tile sync packs the chain's tiles into
    ⌈Σ w_i⌉ waves: the ideal bound of the wave model (consumers take tiles in the order
    producers finish them, and a wave of mixed stages is counted as a fraction of the GPU per
    block). Floats are read as exact decimals would be only if they are exact binary
    fractions: pass StageWaves or Fractions for exact results.
    """
    if not stages:
        raise ValueError("a chain needs at least one stage")
    waves = [_waves_of(s) for s in stages]
    if any(w <= 0 for w in waves):
        raise ValueError(f"waves must be positive, got {[str(w) for w in waves]}")
    total = sum(waves, Fraction(0))
    return Prediction(sum(math.ceil(w) for w in waves), math.ceil(total), total)


# ---------------------------------------------------------------------------------------------
# T legality (cuSyncGen §IV-C), proven from the waves instead of read from a tuned table
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Legality:
    """Whether an optimization or a guarantee holds, and why (or why not), in words."""

    legal: bool
    reason: str

    def __bool__(self) -> bool:
        return self.legal


def format_waves(value: Fraction) -> str:
    """A wave count for a reason text: at most three decimals, no trailing zeros."""
    return f"{float(value):.3f}".rstrip("0").rstrip(".")


def tile_order_legality(stages: Sequence[StageWaves]) -> Legality:
    """May a consumer's custom tile order be dropped for row-major (optimization T)?

    Legal iff the stages involved (the consumer and the stages it depends on or feeds) take at
    most two waves together: `Σ w_i ≤ 2` (paper §IV-C: "all tiles ... can be executed in two
    waves"). Reason: the first wave is filled before any consumer tile can be ready; with at
    most two waves in all, every remaining tile (the producers' remainder and all consumer
    tiles) is resident at once from then on, so each consumer tile starts the moment its
    producer tiles finish whatever order it was dispatched in. With more, a consumer tile that
    becomes ready early can sit behind one dispatched earlier in a worse order. Both orders
    take tiles through the same atomic counter, so forward progress is unchanged.
    """
    if not stages:
        raise ValueError("T legality needs at least one stage")
    total = sum((s.waves for s in stages), Fraction(0))
    parts = " + ".join(format_waves(s.waves) for s in stages)
    if total <= 2:
        return Legality(True, f"{parts} = {format_waves(total)} waves, at most 2")
    return Legality(False, f"{parts} = {format_waves(total)} waves, more than 2")

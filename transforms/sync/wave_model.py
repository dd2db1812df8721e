"""The wave model of cuSync (paper §I, Table I; §IV-C): occupancy, waves, predicted gains.

Pure Python, no IR. Three layers:

* **occupancy** — `blocks_per_sm(threads, registers, shared_bytes, limits)` mirrors the CUDA
  occupancy calculator (`cuda_occupancy.h`, `cudaOccMaxActiveBlocksPerMultiprocessor`) for
  sm_80 and sm_90: warps are allocated whole; registers are allocated per warp in units of 256
  and per SM sub-partition (4 per SM), so a block whose warps do not fill the sub-partitions
  still pays for them; shared memory is allocated in units of 128 bytes and every block also
  holds 1 KB reserved by the system (sm_80+). The smallest of the four limits (threads, blocks,
  registers, shared memory) is the answer; the limiting resource is named.
* **waves** — a stage of `B` blocks on `S` SMs with `b` blocks per SM runs in
  `waves = B / (S·b)` waves; the last wave is `B - (⌈waves⌉-1)·S·b` blocks of `S·b` slots, and
  the average utilization of all waves is `waves / ⌈waves⌉` (the 60 % / 80 % of paper Table I
  are this average: 1.2 / 2 and 2.4 / 3).
* **prediction** — in tile-time units (every tile takes one unit, the premise of the model):
  stream synchronization runs stage after stage, `Σ ⌈waves_i⌉`; per-tile synchronization lets
  the tiles of the next stage fill the last wave of the previous one, `⌈Σ waves_i⌉` for a chain.
  All wave arithmetic uses exact fractions so that `⌈2.4⌉` is never `⌈2.4000000001⌉`.

And the legality of cuSyncGen's optimizations W (drop the wait-kernel) and T (drop the custom
tile order), stated precisely in `wait_kernel_legality` and `tile_order_legality`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from tilesync.contract import ARCH_LIMITS, SM_80, SM_90, DeviceLimits, limits_for_arch

# ---------------------------------------------------------------------------------------------
# Device limits
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeviceModel:
    """A GPU for the wave model: its SM count and per-SM limits."""

    sms: int
    limits: DeviceLimits = field(default=SM_90)
    name: str = ""

    def __post_init__(self) -> None:
        if self.sms < 1:
            raise ValueError(f"a device needs at least one SM, got {self.sms}")

    @classmethod
    def h100(cls) -> DeviceModel:
        return cls(sms=132, limits=SM_90, name="H100")

    @classmethod
    def h200(cls) -> DeviceModel:
        return cls(sms=132, limits=SM_90, name="H200")

    @classmethod
    def a100(cls) -> DeviceModel:
        return cls(sms=108, limits=SM_80, name="A100")

    @classmethod
    def from_runtime_device(cls, info: Mapping[str, Any]) -> DeviceModel:
        """From `tilesync.runtime.device.Device.to_dict()` (or any dict with those keys).

        Needs `sm_count` and `compute_capability` ("9.0", (9, 0) or "sm_90"); takes the
        per-block shared memory opt-in maximum from `max_shared_memory_per_block_optin` and,
        where the dict has them, `max_shared_memory_per_multiprocessor`,
        `max_threads_per_multiprocessor`, `max_blocks_per_multiprocessor`,
        `max_registers_per_multiprocessor`, `max_registers_per_block`, `max_threads_per_block`
        and `reserved_shared_memory_per_block` (the names of the CUDA device attributes).
        Other limits come from the architecture's table.
        """
        if "sm_count" not in info or "compute_capability" not in info:
            raise ValueError(
                "a runtime device description needs 'sm_count' and 'compute_capability'"
            )
        cc = info["compute_capability"]
        if isinstance(cc, str) and cc.startswith("sm_"):
            arch = cc
        elif isinstance(cc, str):
            major, _, minor = cc.partition(".")
            arch = f"sm_{int(major)}{int(minor or 0)}"
        else:
            major, minor = cc
            arch = f"sm_{int(major)}{int(minor)}"
        limits = limits_for_arch(arch)
        overrides = {
            "max_shared_per_block": info.get("max_shared_memory_per_block_optin"),
            "shared_per_sm": info.get("max_shared_memory_per_multiprocessor"),
            "max_threads_per_sm": info.get("max_threads_per_multiprocessor"),
            "max_blocks_per_sm": info.get("max_blocks_per_multiprocessor"),
            "registers_per_sm": info.get("max_registers_per_multiprocessor"),
            "max_registers_per_block": info.get("max_registers_per_block"),
            "max_threads_per_block": info.get("max_threads_per_block"),
            "reserved_shared_per_block": info.get("reserved_shared_memory_per_block"),
        }
        limits = replace(limits, **{k: int(v) for k, v in overrides.items() if v})
        return cls(sms=int(info["sm_count"]), limits=limits, name=str(info.get("name", "")))


# ---------------------------------------------------------------------------------------------
# Occupancy
# ---------------------------------------------------------------------------------------------

LIMITERS = ("blocks", "threads", "registers", "shared_memory")


def _round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


@dataclass(frozen=True)
class Occupancy:
    """Blocks of one kernel that fit on one SM, with the limit each resource imposes."""

    blocks_per_sm: int
    limits: Mapping[str, int]  # resource → blocks per SM it allows
    reason: str = ""  # why a kernel cannot run at all (blocks_per_sm == 0)

    @property
    def limiters(self) -> tuple[str, ...]:
        """Every resource whose limit equals the answer (ties: several), in LIMITERS order."""
        return tuple(r for r in LIMITERS if self.limits[r] == self.blocks_per_sm)

    @property
    def limiter(self) -> str:
        """The limiting resources joined by '+', e.g. 'threads+registers'."""
        return "+".join(self.limiters) if self.blocks_per_sm else "none fit: " + self.reason


def blocks_per_sm(
    threads: int,
    registers: int = 32,
    shared_bytes: int = 0,
    limits: DeviceLimits = SM_90,
) -> Occupancy:
    """Blocks per SM for `threads` per block, `registers` per thread and `shared_bytes`
    (static + dynamic) shared memory per block, as cudaOccMaxActiveBlocksPerMultiprocessor
    computes it with the largest shared-memory carveout.

    A kernel that cannot run at all (too many threads, registers or shared memory for one
    block) has 0 blocks per SM and a `reason`.
    """
    if threads < 1:
        raise ValueError(f"a block needs at least one thread, got {threads}")
    if registers < 0 or shared_bytes < 0:
        raise ValueError(
            f"registers and shared memory must be >= 0, got {registers}, {shared_bytes}"
        )
    lim = limits
    warps = -(-threads // lim.warp_size)

    by_blocks = lim.max_blocks_per_sm
    by_threads = lim.max_warps_per_sm // warps

    regs_per_warp = _round_up(registers * lim.warp_size, lim.register_alloc_unit)
    # The hardware check assumes the block's warps are spread over every sub-partition.
    regs_assumed = regs_per_warp * _round_up(warps, lim.sub_partitions)
    if regs_per_warp == 0:
        by_registers = by_blocks
    else:
        warps_per_partition = (lim.registers_per_sm // lim.sub_partitions) // regs_per_warp
        by_registers = warps_per_partition * lim.sub_partitions // warps

    smem = _round_up(shared_bytes + lim.reserved_shared_per_block, lim.shared_alloc_unit)
    by_shared = lim.shared_per_sm // smem

    reason = ""
    if threads > lim.max_threads_per_block:
        reason = f"{threads} threads per block, more than {lim.max_threads_per_block}"
        by_threads = 0
    if registers > lim.max_registers_per_thread:
        reason = f"{registers} registers per thread, more than {lim.max_registers_per_thread}"
        by_registers = 0
    elif max(regs_assumed, regs_per_warp * warps) > lim.max_registers_per_block:
        reason = (
            f"{max(regs_assumed, regs_per_warp * warps)} registers per block, more than "
            f"{lim.max_registers_per_block}"
        )
        by_registers = 0
    if shared_bytes > lim.max_shared_per_block:
        reason = (
            f"{shared_bytes} bytes of shared memory per block, more than {lim.max_shared_per_block}"
        )
        by_shared = 0
    per_resource = {
        "blocks": by_blocks,
        "threads": by_threads,
        "registers": by_registers,
        "shared_memory": by_shared,
    }
    return Occupancy(min(per_resource.values()), per_resource, reason)


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
# W and T legality (cuSyncGen §IV-C), proven from occupancy instead of read from a tuned table
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Legality:
    legal: bool
    reason: str

    def __bool__(self) -> bool:
        return self.legal


def _fmt(value: Fraction) -> str:
    return f"{float(value):.3f}".rstrip("0").rstrip(".")


def consumer_blocks_that_starve(producer: StageWaves, consumer: StageWaves) -> int:
    """The fewest consumer blocks that, placed adversarially, leave no SM a producer block
    can use: SMs × m, where m is the fewest consumer blocks on one SM that leave no room for
    one producer block.

    Each block of a kernel with b blocks per SM uses at most 1/b of every per-SM resource
    (b·r ≤ R for each resource), so k consumer blocks and one producer block fit on an SM when
    k/b_c + 1/b_p ≤ 1; m is therefore ⌊b_c·(b_p − 1)/b_p⌋ + 1. With equal occupancy b this is
    b, i.e. the consumer starves the producer only from one full wave on.
    """
    b_c, b_p = consumer.blocks_per_sm, producer.blocks_per_sm
    per_sm = (b_c * (b_p - 1)) // b_p + 1
    return consumer.sms * per_sm


def wait_kernel_legality(producer: StageWaves, consumer: StageWaves) -> Legality:
    """May the wait-kernel between `producer` and `consumer` be dropped (optimization W)?

    The wait-kernel keeps consumer blocks from taking SMs before the producer's blocks are
    dispatched (paper §III-B); without it, the consumer's blocks may be dispatched first and
    spin. Dropping it is legal iff one of:

    1. **co-residency** (early cuSync, §V-1): every block of both kernels fits at once,
       `B_p + B_c ≤ S · min(b_p, b_c)`. Then no block ever waits for a slot, whatever order
       the blocks are dispatched in.
    2. **fewer than two waves, no starvation** (cuSync 2024, §IV-C): `w_p + w_c < 2`, the
       paper's condition (a performance rule: with the producer launched first, on a
       higher-priority stream, the consumer's blocks then fill at most the producer's partial
       last wave), and the consumer cannot starve the producer even if every consumer block
       is dispatched first: `B_c < consumer_blocks_that_starve(...)` (with equal occupancy:
       `w_c < 1`). The paper states only the first half; without the second a consumer of
       one wave or more, dispatched first, would fill every SM with spinning blocks and
       deadlock. The second half is what makes the removal safe for any dispatch order; the
       first only bounds the cost under the in-order dispatch the paper observed.

    `w = B / (S·b)` with exact fractions; strict `< 2`, so exactly two waves is not legal.
    """
    if producer.sms != consumer.sms:
        raise ValueError(f"stages on different devices ({producer.sms} vs {consumer.sms} SMs)")
    sms = producer.sms
    total_blocks = producer.blocks + consumer.blocks
    capacity = sms * min(producer.blocks_per_sm, consumer.blocks_per_sm)
    if total_blocks <= capacity:
        return Legality(
            True,
            f"all {total_blocks} blocks are co-resident (at most {capacity} "
            f"= {sms} SMs x {capacity // sms} blocks per SM)",
        )
    total = producer.waves + consumer.waves
    if total >= 2:
        return Legality(
            False,
            f"producer and consumer take {_fmt(producer.waves)} + "
            f"{_fmt(consumer.waves)} = {_fmt(total)} waves, not fewer than 2",
        )
    starve = consumer_blocks_that_starve(producer, consumer)
    if consumer.blocks >= starve:
        return Legality(
            False,
            f"{consumer.blocks} consumer blocks dispatched first could fill "
            f"every SM (from {starve} on no producer block fits): the "
            f"wait-kernel is what keeps this from deadlocking",
        )
    return Legality(
        True,
        f"{_fmt(total)} waves in all (fewer than 2) and {consumer.blocks} "
        f"consumer blocks cannot starve the producer (that needs {starve})",
    )


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
    parts = " + ".join(_fmt(s.waves) for s in stages)
    if total <= 2:
        return Legality(True, f"{parts} = {_fmt(total)} waves, at most 2")
    return Legality(False, f"{parts} = {_fmt(total)} waves, more than 2")


__all__ = [
    "ARCH_LIMITS",
    "LIMITERS",
    "SM_80",
    "SM_90",
    "DeviceLimits",
    "DeviceModel",
    "Legality",
    "Occupancy",
    "Prediction",
    "StageWaves",
    "blocks_per_sm",
    "consumer_blocks_that_starve",
    "limits_for_arch",
    "predict_chain",
    "stage_waves",
    "tile_order_legality",
    "wait_kernel_legality",
]

"""Occupancy: how many blocks of one kernel fit on one SM, and the device the wave model runs on.

`blocks_per_sm(threads, registers, shared_bytes, limits)` mirrors the CUDA occupancy calculator
(`cuda_occupancy.h`, `cudaOccMaxActiveBlocksPerMultiprocessor`) for sm_80 and sm_90: warps are
allocated whole; registers are allocated per warp in units of 256 and per SM sub-partition (4
per SM), so a block whose warps do not fill the sub-partitions still pays for them; shared
memory is allocated in units of 128 bytes and every block also holds 1 KB reserved by the
system (sm_80+). The smallest of the four limits (threads, blocks, registers, shared memory) is
the answer; the limiting resource is named.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from tilesync.contract import SM_80, SM_90, DeviceLimits, limits_for_arch

# ---------------------------------------------------------------------------------------------
# The device
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


def register_cap(threads: int, limits: DeviceLimits = SM_90, blocks: int = 1) -> int:
    """Registers a thread of a `threads`-thread block is allotted at most with `blocks` blocks
    on the SM, in whole allocation units (256 where ptxas may use 255): what ptxas takes under
    launch bounds of that many blocks per SM (one block: a 384-thread block 168, a 640-thread
    one 96: the block's warps are spread over the sub-partitions' register files). A block's
    setmaxnreg pool is this times its threads."""
    unit = limits.register_alloc_unit // limits.warp_size
    registers = -(-limits.max_registers_per_thread // unit) * unit
    while registers > unit and blocks_per_sm(
            threads, min(registers, limits.max_registers_per_thread), 0, limits
    ).blocks_per_sm < blocks:
        registers -= unit
    return registers


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

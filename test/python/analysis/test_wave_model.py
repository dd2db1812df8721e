"""The wave model: occupancy (CUDA occupancy calculator rules), waves, predictions, W/T."""

from __future__ import annotations

from fractions import Fraction

import pytest

from tilesync.analysis.forward_progress import (
    consumer_blocks_that_starve,
    wait_kernel_legality,
)
from tilesync.analysis.occupancy import DeviceModel, blocks_per_sm
from tilesync.analysis.wave_model import (
    StageWaves,
    predict_chain,
    stage_waves,
    tile_order_legality,
)
from tilesync.contract import SM_80, SM_90, limits_for_arch

KB = 1024

# ----------------------------------------------------------------------------- occupancy


def test_1024_threads_32_registers_two_blocks_threads_and_registers_tie():
    occ = blocks_per_sm(1024, 32, 0, SM_90)
    assert occ.blocks_per_sm == 2
    # 32 warps of 1024 registers: 64 warps per SM by threads and by registers alike.
    assert occ.limits == {"blocks": 32, "threads": 2, "registers": 2, "shared_memory": 228}
    assert occ.limiters == ("threads", "registers")
    assert occ.limiter == "threads+registers"


def test_256_threads_128_registers_register_limited():
    occ = blocks_per_sm(256, 128, 0, SM_90)
    assert occ.blocks_per_sm == 2
    assert occ.limiter == "registers"
    assert occ.limits["threads"] == 8


def test_register_allocation_is_warp_granular_in_units_of_256():
    # 33 registers x 32 threads = 1056, rounded up to 1280 per warp: 12 warps per sub-partition,
    # 48 per SM, 6 blocks of 8 warps (a per-thread count, 65536 // (33 x 256), would say 7).
    assert blocks_per_sm(256, 33, 0, SM_90).blocks_per_sm == 6
    assert blocks_per_sm(256, 40, 0, SM_90).blocks_per_sm == 6  # 1280 per warp too
    assert blocks_per_sm(256, 41, 0, SM_90).blocks_per_sm == 5  # 1536 per warp: 10 per part


def test_register_allocation_per_sub_partition():
    # 200 registers -> 6400 per warp. Over the whole SM 65536 // 6400 = 10 warps would fit,
    # but a warp's registers live in one of 4 sub-partitions of 16384: 2 warps each, 8 in all,
    # so 4 blocks of 2 warps, not 5.
    occ = blocks_per_sm(64, 200, 0, SM_90)
    assert (occ.blocks_per_sm, occ.limiter) == (4, "registers")
    # 13 warps x 152 registers (4864 per warp): 3 warps per sub-partition, 12 < 13 per SM.
    assert blocks_per_sm(416, 152, 0, SM_90).blocks_per_sm == 0


def test_threads_round_up_to_whole_warps():
    # 33 threads take 2 warps: 32 blocks by warps, 32 by the block limit.
    occ = blocks_per_sm(33, 16, 0, SM_90)
    assert occ.limits["threads"] == 32 and occ.blocks_per_sm == 32
    assert blocks_per_sm(96, 16, 0, SM_90).limits["threads"] == 21  # 64 warps // 3


def test_block_limit():
    occ = blocks_per_sm(32, 16, 0, SM_90)
    assert (occ.blocks_per_sm, occ.limiter) == (32, "blocks")


@pytest.mark.parametrize(
    ("shared", "limits", "expected"),
    [
        (48 * KB, SM_90, 4),  # 49152 + 1 KB reserved = 50176: 233472 // 50176
        (100 * KB, SM_90, 2),  # 103424 x 2 = 206848 <= 233472
        (113 * KB, SM_90, 2),  # 115712 + 1024 = 116736, exactly half of 228 KB
        (113 * KB + 1, SM_90, 1),  # one byte more: rounds to 116864 per block, only one fits
        (227 * KB, SM_90, 1),  # the per-block maximum still runs, with the reserved 1 KB
        (48 * KB, SM_80, 3),  # 164 KB per SM on sm_80
        (81 * KB, SM_80, 2),  # 82944 + 1024 = 83968, exactly half of 164 KB
        (82 * KB, SM_80, 1),
    ],
)
def test_shared_memory_limited(shared, limits, expected):
    occ = blocks_per_sm(128, 32, shared, limits)
    assert occ.blocks_per_sm == expected
    assert occ.limiter == "shared_memory"


def test_shared_memory_allocation_granularity_is_128_bytes():
    # 3 KB + 1 byte: 3073 + 1024 reserved = 4097, rounded up to 4224: 233472 // 4224 = 55
    # (unrounded, 233472 // 4097 would be 56).
    occ = blocks_per_sm(32, 16, 3 * KB + 1, SM_90)
    assert occ.limits["shared_memory"] == 55


def test_kernels_that_cannot_run():
    too_much_smem = blocks_per_sm(128, 32, 227 * KB + 1, SM_90)
    assert too_much_smem.blocks_per_sm == 0
    assert "shared memory" in too_much_smem.reason
    assert too_much_smem.limiter.startswith("none fit")
    assert blocks_per_sm(128, 256, 0, SM_90).blocks_per_sm == 0  # > 255 registers
    # 1024 threads x 65 registers: 2304 per warp x 32 warps = 73728 > 65536 per block.
    regs = blocks_per_sm(1024, 65, 0, SM_90)
    assert regs.blocks_per_sm == 0 and "registers per block" in regs.reason
    assert blocks_per_sm(1024, 64, 0, SM_90).blocks_per_sm == 1
    assert blocks_per_sm(2048, 16, 0, SM_90).blocks_per_sm == 0
    with pytest.raises(ValueError):
        blocks_per_sm(0, 32)


# ----------------------------------------------------------------------------- devices


def test_device_models():
    assert DeviceModel.h100().sms == 132 and DeviceModel.h200().limits.arch == "sm_90"
    assert SM_90.max_shared_per_block == 227 * KB and SM_90.shared_per_sm == 228 * KB
    assert SM_90.registers_per_sm == 64 * KB and SM_90.max_threads_per_sm == 2048
    runtime = {
        "name": "NVIDIA H200",
        "compute_capability": "9.0",
        "sm_count": 132,
        "max_threads_per_block": 1024,
        "max_shared_memory_per_block_optin": 232448,
    }
    model = DeviceModel.from_runtime_device(runtime)
    assert (model.sms, model.limits, model.name) == (132, SM_90, "NVIDIA H200")
    a100 = DeviceModel.from_runtime_device({"compute_capability": (8, 0), "sm_count": 108})
    assert a100.limits == SM_80
    smaller = DeviceModel.from_runtime_device(
        {
            "compute_capability": "sm_90",
            "sm_count": 114,
            "max_shared_memory_per_multiprocessor": 100 * KB,
        }
    )
    assert smaller.sms == 114 and smaller.limits.shared_per_sm == 100 * KB
    with pytest.raises(ValueError, match="sm_count"):
        DeviceModel.from_runtime_device({"compute_capability": "9.0"})
    with pytest.raises(ValueError, match="sm_75"):
        DeviceModel.from_runtime_device({"compute_capability": "7.5", "sm_count": 40})
    with pytest.raises(ValueError):
        limits_for_arch("sm_100")


# ----------------------------------------------------------------------------- waves


def test_paper_table_one_utilization():
    # V100-like: 80 SMs; 192 blocks at 2 per SM = 1.2 waves -> 60 % average utilization.
    s = StageWaves(blocks=192, blocks_per_sm=2, sms=80)
    assert s.waves == Fraction(6, 5)
    assert s.wave_count == 2 and s.full_waves == 1
    assert s.last_wave_blocks == 32
    assert s.last_wave_utilization == Fraction(1, 5)
    assert s.utilization == Fraction(3, 5)
    t = StageWaves(blocks=384, blocks_per_sm=2, sms=80)  # 2.4 waves -> 80 %
    assert (t.waves, t.utilization, t.last_wave_utilization) == (
        Fraction(12, 5),
        Fraction(4, 5),
        Fraction(2, 5),
    )


def test_exact_waves_fill_the_last_wave():
    s = stage_waves((4, 66), 2, 132)
    assert s.waves == 1 and s.last_wave_utilization == 1 and s.utilization == 1
    assert s.blocks == 264 and s.blocks_per_wave == 264


@pytest.mark.parametrize(
    ("blocks", "stream", "fine", "speedup"),
    [
        (317, 4, 3, Fraction(4, 3)),  # 1.2 waves each (264 per wave: 316.8 -> 317)
        (581, 6, 5, Fraction(6, 5)),  # 2.2
        (845, 8, 7, Fraction(8, 7)),  # 3.2
    ],
)
def test_two_stage_chains_ideal_speedups(blocks, stream, fine, speedup):
    # 1024 threads x 32 registers: 2 blocks per SM on 132 SMs, as in REFERENCE's measurements.
    bpsm = blocks_per_sm(1024, 32).blocks_per_sm
    stage = StageWaves(blocks, bpsm, 132)
    p = predict_chain([stage, stage])
    assert (p.stream_sync, p.fine_grained, p.speedup) == (stream, fine, speedup)


def test_predictions_from_fractions_and_rounding_is_exact():
    assert predict_chain([Fraction(6, 5)] * 2).speedup == Fraction(4, 3)
    assert predict_chain([Fraction(11, 5)] * 2).speedup == Fraction(6, 5)
    assert predict_chain([Fraction(16, 5)] * 2).speedup == Fraction(8, 7)
    # Waves that sum to exactly 2 take 2 tile times, not 3 (floats would give 2.0000000004).
    third = StageWaves(88, 2, 132)  # 1/3 wave
    p = predict_chain([StageWaves(440, 2, 132), third, third])  # 5/3 + 1/3 + 1/3 = 7/3
    assert p.total_waves == Fraction(7, 3) and p.fine_grained == 3 and p.stream_sync == 4
    assert predict_chain([StageWaves(264, 2, 132)] * 2).speedup == 1  # full waves: no gain
    with pytest.raises(ValueError):
        predict_chain([])


# ----------------------------------------------------------------------------- W and T


def test_wait_kernel_co_resident_is_legal():
    p, c = StageWaves(100, 2, 132), StageWaves(164, 2, 132)  # 264 blocks = one wave
    verdict = wait_kernel_legality(p, c)
    assert verdict and "co-resident" in verdict.reason
    # Mixed occupancy: co-residency is checked against the smaller blocks-per-SM.
    mixed = wait_kernel_legality(StageWaves(100, 1, 132), StageWaves(40, 4, 132))
    assert mixed and "co-resident" not in mixed.reason  # 140 > 132 x 1: legal by rule 2


def test_wait_kernel_under_two_waves_without_starvation_is_legal():
    p, c = StageWaves(237, 2, 132), StageWaves(237, 2, 132)  # 0.9 + 0.9 waves
    verdict = wait_kernel_legality(p, c)
    assert verdict and "fewer than 2" in verdict.reason


def test_wait_kernel_exactly_two_waves_is_illegal():
    p, c = StageWaves(264, 2, 132), StageWaves(264, 2, 132)  # 1 + 1 = 2: not fewer than 2
    verdict = wait_kernel_legality(p, c)
    assert not verdict and "not fewer than 2" in verdict.reason


def test_wait_kernel_consumer_that_could_starve_the_producer_is_illegal():
    # 0.5 + 1.2 < 2 waves, but 317 consumer blocks dispatched first fill all 264 slots.
    p, c = StageWaves(132, 2, 132), StageWaves(317, 2, 132)
    verdict = wait_kernel_legality(p, c)
    assert not verdict and "deadlock" in verdict.reason


def test_starvation_bound_with_mixed_occupancy():
    # Producer needs a whole SM (1 block/SM): any consumer block on an SM blocks it, so
    # the consumer starves the producer from 132 blocks (one per SM) on.
    assert consumer_blocks_that_starve(StageWaves(10, 1, 132), StageWaves(10, 4, 132)) == 132
    # Equal occupancy b: b consumer blocks per SM.
    assert consumer_blocks_that_starve(StageWaves(10, 3, 132), StageWaves(10, 3, 132)) == 396
    # Producer 2/SM, consumer 4/SM: 2 consumer blocks (half the SM) still leave room.
    assert consumer_blocks_that_starve(StageWaves(10, 2, 132), StageWaves(10, 4, 132)) == 396
    # 0.25 + 0.5 waves in all, but the producer needs a whole SM and 264 consumer blocks
    # (2 per SM) dispatched first would leave it none.
    verdict = wait_kernel_legality(StageWaves(33, 1, 132), StageWaves(264, 4, 132))
    assert not verdict


def test_tile_order_legality_at_most_two_waves():
    one = StageWaves(264, 2, 132)
    assert tile_order_legality([one, one])  # exactly 2: legal
    assert tile_order_legality([StageWaves(317, 2, 132), StageWaves(100, 2, 132)])
    verdict = tile_order_legality([StageWaves(317, 2, 132), StageWaves(317, 2, 132)])
    assert not verdict and "more than 2" in verdict.reason
    with pytest.raises(ValueError):
        tile_order_legality([])

"""Kitsune's design models: queue depth and the CTA allotment ILP (scipy milp)."""

from __future__ import annotations

import pytest

from tilesync.analysis.pipeline_model import StageRate, allot, queue_depth


def test_queue_depth_prefers_a_spare_round_and_falls_back_to_the_deadlock_free_minimum():
    assert queue_depth(reads=2, consumer_ctas=10, entry_bytes=1000, budget_bytes=10**6) == 30
    assert queue_depth(reads=2, consumer_ctas=10, entry_bytes=1000, budget_bytes=25_000) == 2
    assert queue_depth(reads=2, consumer_ctas=10, entry_bytes=1000, budget_bytes=1_999) is None


def test_allotment_balances_stage_rates_and_keeps_the_fewest_ctas():
    stages = [StageRate("gemm1", True, 1e6), StageRate("act", False, 4e6),
              StageRate("gemm2", True, 1e6)]
    result = allot(stages, sms=132, dram_peak=3e12, l2_peak=7e12)
    assert result.ctas == {"gemm1": 66, "act": 17, "gemm2": 66}
    assert result.throughput == pytest.approx(0.5e6)
    assert result.bound in ("gemm1", "gemm2")


def test_shared_slots_put_simt_and_tensor_ctas_in_one_budget():
    """Kitsune pairs a SIMT and a tensor CTA on an SM (two budgets of `sms`); one persistent
    kernel's blocks share one (`shared_slots`), and two slots an SM double it."""
    stages = [StageRate("gemm1", True, 1e6), StageRate("act", False, 4e6),
              StageRate("gemm2", True, 1e6)]
    shared = allot(stages, sms=132, dram_peak=3e12, l2_peak=7e12, shared_slots=True)
    assert sum(shared.ctas.values()) <= 132
    assert shared.ctas == {"gemm1": 58, "act": 15, "gemm2": 58}
    assert shared.throughput < 0.5e6  # the pair's 0.5 M items/s needs 66 + 17 + 66 CTAs
    two = allot(stages, sms=132, dram_peak=3e12, l2_peak=7e12, slots=2, shared_slots=True)
    assert sum(two.ctas.values()) <= 264 and two.throughput > shared.throughput


def test_on_chip_operands_speed_a_stage_up_and_dram_can_bind():
    # a stage at 50% utilization in bulk-sync runs twice as fast with operands on chip
    fast = allot([StageRate("a", True, 1e6, utilization=0.5)], sms=100, dram_peak=1e15,
                 l2_peak=1e15)
    assert fast.throughput == pytest.approx(2e6) and fast.ctas == {"a": 100}
    capped = allot([StageRate("a", True, 1e6, dram_bytes=1e6)], sms=100, dram_peak=1e11,
                   l2_peak=1e15)
    assert capped.bound == "DRAM" and capped.throughput == pytest.approx(1e5)
    assert capped.ctas == {"a": 10}


def test_bad_rates_are_refused():
    with pytest.raises(ValueError, match="rate must be positive"):
        allot([StageRate("a", True, 0.0)], sms=8, dram_peak=1.0, l2_peak=1.0)

"""The host side of a dataflow pipeline without a GPU: the plan read from the compiled IR, the
rings' layout, and the queue benchmark's checksum."""

from __future__ import annotations

from pathlib import Path

import pytest

import tilesync
from tilesync.kernels.queue_bench import (
    QueueBenchConfig,
    checksum,
    expected_checksum,
    queue_bench_mlir,
)
from tilesync.runtime.dataflow import read_pipeline

INPUTS = Path(__file__).parent.parent / "lowering" / "Inputs"


def test_plan_lists_stages_producers_first_with_their_rings():
    plan = read_pipeline(tilesync.compile(INPUTS / "queue_copy.mlir"))
    assert plan.name == "copy"
    assert [(s.name, s.kernel, s.ctas, s.inputs, s.outputs) for s in plan.stages] == [
        ("produce", "producer", 1, (), ("q",)), ("consume", "consumer", 1, ("q",), ())]
    queue = plan.queues["q"]
    assert queue.pin_l2 and queue.layout.consumers == 1
    assert queue.layout.total_bytes == 2 * 128 + 4 * (128 + 1024)
    offsets, total, pinned = plan.ring_offsets()
    assert offsets == {"q": 0} and pinned == total == 4864


def test_benchmark_checksum_is_the_sum_of_every_payload_word():
    words, first, tickets = 8, 5, 7
    brute = sum(((t << 40) + j) for t in range(first, first + tickets) for j in range(words))
    assert expected_checksum(first, tickets, words) == brute % (1 << 128)
    # a consumer that read round r - 1 of one entry sees a different sum
    stale = brute - words * (4 << 40)
    assert checksum([stale]) != expected_checksum(first, tickets, words)


def test_benchmark_programs_compile_synchronized_and_not():
    for synchronized in (True, False):
        cfg = QueueBenchConfig(4096, pairs=8, synchronized=synchronized)
        program = tilesync.compile(queue_bench_mlir(cfg))
        assert set(program.kernels) == {"producer", "consumer", "fig5_persistent"}
        assert ("ld.global.v2.b64" in program.ptx) and ("st.global.v2.b64" in program.ptx)
        assert ("ld.acquire.gpu" in program.ptx) == synchronized



def test_a_pipeline_whose_kernels_do_not_take_their_queues_is_refused():
    import pytest

    with pytest.raises(ValueError, match="@take do not take their queues yet"):
        read_pipeline(tilesync.compile(Path(__file__).parent / "Inputs" /
                                       "unbound_pipeline.mlir"))

def test_bulk_transport_moves_each_payload_with_one_bulk_copy_through_shared_memory():
    for synchronized in (True, False):
        cfg = QueueBenchConfig(64 << 10, pairs=8, synchronized=synchronized, transport="bulk")
        program = tilesync.compile(queue_bench_mlir(cfg))
        ptx = program.ptx
        assert "cp.async.bulk.global.shared::cta.bulk_group" in ptx
        assert "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes" in ptx
        assert "cp.async.bulk.wait_group 0;" in ptx and "ld.global.v2.b64" not in ptx
        # the async proxy is ordered after the acquire and before the release
        assert ("fence.proxy.async.global;" in ptx) == synchronized
        assert ("ld.acquire.gpu" in ptx) == synchronized
        # the 64 KiB staging buffer is dynamic shared memory (aligned to 128 bytes)
        assert {k.dynamic_shared_bytes for k in program.kernels.values()} == {65536 + 128 - 16}


def test_bulk_transport_refuses_payloads_beyond_shared_memory():
    with pytest.raises(ValueError, match="at most 64 KiB"):
        QueueBenchConfig(128 << 10, transport="bulk")
    with pytest.raises(ValueError, match="transport must be one of threads, bulk"):
        QueueBenchConfig(4096, transport="dma")

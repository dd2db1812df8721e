"""The host side of a dataflow pipeline without a GPU: the plan read from the compiled IR, the
rings' layout, and the queue benchmark's checksum."""

from __future__ import annotations

from pathlib import Path

import pytest
from xdsl.dialects import gpu

import tilesync
from tilesync.contract import MIN_BLOCKS_PER_SM_ATTR
from tilesync.dialects import dataflow
from tilesync.kernels.queue_bench import (
    QueueBenchConfig,
    checksum,
    expected_checksum,
    queue_bench_module,
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
    """Both forms move 16-byte words; a synchronized consumer loads them after its acquire, an
    unsynchronized one cached at L2 only (ld.global.cg: no stale L1 line answers it)."""
    for synchronized in (True, False):
        cfg = QueueBenchConfig(4096, pairs=8, synchronized=synchronized)
        program = tilesync.compile(queue_bench_module(cfg))
        assert set(program.kernels) == {"producer", "consumer", "fig5_persistent"}
        assert "st.global.v2.b64" in program.ptx
        assert ("ld.global.v2.b64" in program.ptx) == synchronized
        assert ("ld.global.cg.v2.b64" in program.ptx) != synchronized
        assert ("ld.acquire.gpu" in program.ptx) == synchronized



def test_a_pipeline_whose_kernels_do_not_take_their_queues_is_refused():
    import pytest

    with pytest.raises(ValueError, match="@take do not take their queues yet"):
        read_pipeline(tilesync.compile(Path(__file__).parent / "Inputs" /
                                       "unbound_pipeline.mlir"))



def test_a_pipeline_with_queues_whose_stages_were_not_fused_is_refused():
    """Its stage kernels would be co-launched on a stream each, which need not run at once (an
    H100 ran them one after the other in graph replays, the producer spinning on its full ring
    until the timeout): refused before anything is loaded or launched, naming the pass."""
    from tilesync.contract import CompileError
    from tilesync.lowering.pipeline import KERNEL_TO_LLVM
    from tilesync.runtime.dataflow import DataflowProgram

    unfused = [name for name in KERNEL_TO_LLVM if name != "dataflow-persistent-kernel"]
    compiled = tilesync.compile(INPUTS / "queue_copy.mlir", pipeline=unfused)
    assert read_pipeline(compiled).persistent is None
    with pytest.raises(CompileError, match="pipeline @copy passes entries through queues, but "
                       "its stages could not be fused into one persistent kernel"):
        DataflowProgram(compiled)


def test_bulk_transport_moves_each_payload_with_one_bulk_copy_through_shared_memory():
    for synchronized in (True, False):
        cfg = QueueBenchConfig(64 << 10, pairs=8, synchronized=synchronized, transport="bulk")
        program = tilesync.compile(queue_bench_module(cfg))
        ptx = program.ptx
        assert "cp.async.bulk.global.shared::cta.bulk_group" in ptx
        assert "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes" in ptx
        assert "cp.async.bulk.wait_group 0;" in ptx and "ld.global.v2.b64" not in ptx
        # the async proxy is ordered after the acquire and before the release
        assert ("fence.proxy.async.global;" in ptx) == synchronized
        assert ("ld.acquire.gpu" in ptx) == synchronized
        # the 64 KiB staging buffer is dynamic shared memory (aligned to 128 bytes)
        assert {k.dynamic_shared_bytes for k in program.kernels.values()} == {65536 + 128 - 16}


def test_several_workers_a_cta_drawing_ahead_are_proved_and_lowered():
    """Each worker's queue ops name its threads; the first ticket is drawn before the loop
    where it runs and each next one in the iteration before it: dataflow-verify proves the
    program, and the PTX has one atomic a draw (none in the acquires that take them)."""
    cfg = QueueBenchConfig(16 << 10, pairs=8, threads=128, workers=2, draw_ahead=True)
    module = queue_bench_module(cfg)
    ops = list(module.walk())
    acquires = [op for op in ops if isinstance(op, dataflow.AcquireEmptyOp)]
    assert len(acquires) == 1 and acquires[0].ticket is not None  # `at` the drawn ticket
    drawn = [op for op in ops if isinstance(op, dataflow.DrawFullOp)]
    assert len(drawn) == 2  # before the loop and in it
    assert all(op.threads.value.data == 128 for op in acquires + drawn)
    assert cfg.block_threads == 256 and cfg.producers == 16 and cfg.entries == 64
    program = tilesync.compile(module)
    assert {k.block for k in program.kernels.values()} == {(256, 1, 1)}
    # a kernel's draws: before its loop and in it (the acquires take them, no atomic of
    # their own); without draws ahead, the acquire's one
    draws = "atom.relaxed.gpu.global.add.u64"
    assert program.ptx.count(draws) == 4
    at_acquire = QueueBenchConfig(16 << 10, pairs=8, threads=128, workers=2)
    assert tilesync.compile(queue_bench_module(at_acquire)).ptx.count(draws) == 2
    unsync = QueueBenchConfig(16 << 10, pairs=8, threads=128, workers=2, synchronized=False)
    assert "ld.acquire.gpu" not in tilesync.compile(queue_bench_module(unsync)).ptx
    with pytest.raises(ValueError, match="one worker a CTA"):
        QueueBenchConfig(16 << 10, transport="bulk", workers=2)
    with pytest.raises(ValueError, match="whole warps"):
        QueueBenchConfig(16 << 10, threads=48, workers=2)


def test_both_forms_declare_the_blocks_an_sm_holds_with_every_cta_resident():
    """Synchronized and not, the kernels keep their registers to the blocks per SM that the
    co-resident grid needs, so the unsynchronized twin runs the same CTAs side by side."""
    from tilesync.kernels.queue_bench import blocks_per_sm

    for synchronized in (True, False):
        cfg = QueueBenchConfig(16 << 10, pairs=396, threads=128, synchronized=synchronized)
        assert blocks_per_sm(cfg) == 6
        assert ".minnctapersm 6" in tilesync.compile(queue_bench_module(cfg)).ptx
    too_many = QueueBenchConfig(16 << 10, pairs=264, threads=1024, unroll=2)
    assert blocks_per_sm(too_many) is None  # 4 blocks of 1024 threads: more than an SM holds
    kernels = [op for op in queue_bench_module(too_many).walk() if isinstance(op, gpu.FuncOp)]
    assert len(kernels) == 2 and not any(MIN_BLOCKS_PER_SM_ATTR in k.attributes
                                         for k in kernels)


def test_bulk_transport_refuses_payloads_beyond_shared_memory():
    with pytest.raises(ValueError, match="at most 64 KiB"):
        QueueBenchConfig(128 << 10, transport="bulk")
    with pytest.raises(ValueError, match="transport must be one of threads, bulk"):
        QueueBenchConfig(4096, transport="dma")


def test_cluster_transport_runs_in_clusters_without_rings():
    """A queue in distributed shared memory: the plan runs in clusters of one CTA a stage
    (the fused kernel's `.reqnctapercluster 2`), has no ring to allocate, and the producer
    stores into its peer's shared memory (st.shared::cluster after mapa) while the consumer
    reads its own (ld.shared); phases are mbarrier waits acquiring at cluster scope."""
    cfg = QueueBenchConfig(16 << 10, pairs=8, depth=3, transport="cluster", pin_l2=False)
    program = tilesync.compile(queue_bench_module(cfg))
    plan = read_pipeline(program)
    assert plan.clustered and plan.queues["q"].in_cluster
    assert plan.ring_offsets() == ({}, 0, 0)
    ptx = program.ptx
    assert ".reqnctapercluster 2, 1, 1" in ptx
    assert "mapa.shared::cluster.u64" in ptx and "st.shared::cluster.v2.b64" in ptx
    assert "ld.shared.v2.b64" in ptx and "ld.global" not in ptx.split("fig5_persistent")[-1]
    assert "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64" in ptx
    assert "mbarrier.arrive.release.cluster.shared::cluster.b64" in ptx
    # 3 entries of 16 KiB after the 6 barriers (padded to 128 bytes), the array aligned to
    # 128 bytes in the dynamic array (whose base is 16-byte aligned)
    assert program.kernels["fig5_persistent"].dynamic_shared_bytes == \
        128 + 3 * (16 << 10) + 128 - 16


def test_cluster_transport_checksum_counts_each_clusters_tickets_from_zero():
    from tilesync.kernels.queue_bench import run_checksum

    cfg = QueueBenchConfig(4096, pairs=3, transport="cluster", pin_l2=False)
    one = expected_checksum(0, 5, cfg.words)
    assert run_checksum(cfg, 0, 5) == run_checksum(cfg, 7, 5) == 3 * one % (1 << 128)
    l2 = QueueBenchConfig(4096, pairs=3)
    assert run_checksum(l2, 2, 5) == expected_checksum(2 * 15, 15, l2.words)


@pytest.mark.parametrize("kwargs, message", [
    ({"workers": 2, "threads": 128}, "one worker a CTA"),
    ({"draw_ahead": True}, "one worker a CTA"),
    ({"pin_l2": True}, "pin_l2=False"),
    ({"depth": 4, "payload_bytes": 64 << 10}, "at most 192 KiB"),
])
def test_cluster_transport_refuses_what_it_cannot_run(kwargs, message):
    options = {"payload_bytes": 16 << 10, "transport": "cluster", "pin_l2": False} | kwargs
    payload = options.pop("payload_bytes")
    with pytest.raises(ValueError, match=message):
        QueueBenchConfig(payload, **options)


def test_cluster_transports_twin_stores_into_its_peers_ring_without_waits():
    """The same transfers unsynchronized: pairs in clusters (the pipeline `cluster`), the
    producer's stores through tile.cluster_map to its peer's ring, the consumer's loads from
    its own, no transaction barrier; both kernels meet their cluster at entry and return."""
    cfg = QueueBenchConfig(16 << 10, pairs=8, depth=3, transport="cluster", pin_l2=False,
                           synchronized=False)
    program = tilesync.compile(queue_bench_module(cfg))
    assert read_pipeline(program).clustered
    ptx = program.ptx
    assert ".reqnctapercluster 2, 1, 1" in ptx and "mbarrier" not in ptx
    assert "mapa.shared::cluster.u64" in ptx and "st.shared::cluster.v2.b64" in ptx
    assert "ld.shared.v2.b64" in ptx
    assert ptx.count("barrier.cluster.arrive") == ptx.count("barrier.cluster.wait") == 4


def test_a_chain_of_cluster_queues_runs_in_clusters_of_three():
    """Inputs/cluster_relay.mlir: @fill -> @add -> @sum, both queues in distributed shared
    memory; clusters of three CTAs (rank r runs stage r), each of @add's CTAs holding @a's
    ring and filling @sum's @b."""
    program = tilesync.compile(Path(__file__).parent / "Inputs" / "cluster_relay.mlir")
    plan = read_pipeline(program)
    assert plan.clustered and [s.name for s in plan.stages] == ["fill", "add", "sum"]
    assert ".reqnctapercluster 3, 1, 1" in program.ptx
    assert program.ptx.count("mapa.shared::cluster.u64") == 2  # @fill's into @a, @add's into @b
    # @a: 2 barriers a side then 2 entries of 1 KiB; @b: 3 a side then 3; each 128-aligned
    assert program.kernels["chain_persistent"].dynamic_shared_bytes == \
        (128 + 2 * 1024) + (128 + 3 * 1024) + 128 - 16

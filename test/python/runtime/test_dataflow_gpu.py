"""A dataflow pipeline on the GPU: every ticket's payload arrives once and filled (fresh
tickets every run, output poisoned), runs repeat and replay from a CUDA graph without a memset,
a dropped release ends in an error naming queue, ticket and stage within a second, and a
pipeline whose CTAs cannot all be resident is refused before it launches."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tilesync.lowering.dataflow_to_nvvm import DEFAULT_QUEUE_TIMEOUT_NS

pytestmark = pytest.mark.gpu


def _program(payload=16 << 10, pairs=16, **kw):
    import tilesync
    from tilesync.kernels.queue_bench import QueueBenchConfig, queue_bench_module
    from tilesync.runtime.dataflow import DataflowProgram

    cfg = QueueBenchConfig(payload, pairs=pairs, **kw)
    return cfg, DataflowProgram(tilesync.compile(queue_bench_module(cfg)))


def _check_runs_and_replays(cfg, program, out, iters: int, runs: int, replays: int) -> None:
    """`runs` runs, then `replays` replays of one captured run, no memset between any: after
    each, the consumers' checksum (output poisoned before) is that of the run's fresh
    tickets."""
    from tilesync.bench.dataflow import consumers_checksum
    from tilesync.kernels.queue_bench import run_checksum

    args = {"produce": [iters], "consume": [out, iters]}

    def checked(launch) -> None:
        out.fill_bytes(0xFF)
        expected = run_checksum(cfg, program.runs, iters)
        launch()
        program.synchronize()
        assert consumers_checksum(out) == expected

    for _ in range(runs):
        checked(lambda: program.run(args))
    graph = program.capture(args)
    for _ in range(replays):
        checked(graph.launch)
    graph.close()


@pytest.mark.parametrize("payload, depth, workers, ahead",
                         [(4 << 10, 1, 1, False), (16 << 10, 4, 1, False), (64 << 10, 2, 1, False),
                          (16 << 10, 2, 2, True), (32 << 10, 1, 4, True), (16 << 10, 2, 4, False),
                          (4 << 10, 1, 1, True)])
def test_every_ticket_arrives_once_filled_across_runs_and_replays(gpu_device, payload, depth,
                                                                  workers, ahead):
    """Several workers a CTA (each its own tickets) and draws ahead too: a ticket drawn ahead
    in the last iteration of a run would be a ticket nobody fills, and the next run hangs."""
    from tilesync.runtime.buffers import DeviceBuffer

    cfg, program = _program(payload, depth=depth, workers=workers, draw_ahead=ahead,
                            threads=128 if workers > 1 else 256)
    out = DeviceBuffer(cfg.pairs * cfg.block_threads * 2, np.uint64)
    # 37 iterations, not a multiple of the ring: rounds straddle runs
    _check_runs_and_replays(cfg, program, out, iters=37, runs=3, replays=10)
    program.close()


@pytest.mark.parametrize("payload, synchronized",
                         [(16 << 10, True), (64 << 10, True), (64 << 10, False)])
def test_bulk_transport_delivers_every_ticket_once_filled(gpu_device, payload, synchronized):
    from tilesync.runtime.buffers import DeviceBuffer

    cfg, program = _program(payload, depth=2, synchronized=synchronized, transport="bulk")
    iters = 37
    out = DeviceBuffer(cfg.pairs * cfg.block_threads * 2, np.uint64)
    if not synchronized:  # no tickets, so no checksum: it must finish and every consumer
        # thread must have stored its sums (racing reads make their values arbitrary)
        ring = DeviceBuffer(cfg.entries * cfg.words * 2, np.uint64)
        out.fill_bytes(0xFF)
        program.run({"produce": [ring, iters], "consume": [ring, out, iters]})
        program.synchronize()
        words = out.to_numpy().view(np.uint64).reshape(-1, 2)
        assert not np.all(words == np.uint64(2**64 - 1), axis=1).any()
        program.close()
        return
    _check_runs_and_replays(cfg, program, out, iters, runs=3, replays=1)
    program.close()


@pytest.mark.parametrize("payload, depth, threads",
                         [(16 << 10, 3, 256), (64 << 10, 2, 512), (4 << 10, 1, 256),
                          (32 << 10, 4, 128)])
def test_cluster_transport_delivers_every_ticket_once_filled(gpu_device, payload, depth,
                                                             threads):
    """A cluster queue: each cluster's producer CTA stores into its consumer CTA's shared
    memory; one entry (depth 1) makes every ticket wait for the previous one's release."""
    from tilesync.runtime.buffers import DeviceBuffer

    cfg, program = _program(payload, pairs=40, depth=depth, threads=threads,
                            transport="cluster", pin_l2=False)
    assert program.plan.clustered and program._rings.nbytes <= 1  # no rings in global memory
    out = DeviceBuffer(cfg.pairs * cfg.block_threads * 2, np.uint64)
    _check_runs_and_replays(cfg, program, out, iters=37, runs=3, replays=10)
    program.close()


def test_a_chain_of_cluster_queues_delivers_every_entry_once(gpu_device):
    """Inputs/cluster_relay.mlir on 44 clusters of three: every word the sink sums went
    through both rings, filled (source: 1000 t + thread; relay: + 1), each ticket once, run
    after run and replayed from a graph."""
    from pathlib import Path

    import tilesync
    from tilesync.runtime.buffers import DeviceBuffer
    from tilesync.runtime.dataflow import DataflowProgram

    program = DataflowProgram(tilesync.compile(Path(__file__).parent / "Inputs" /
                                               "cluster_relay.mlir"))
    iters, clusters = 37, 44
    sums = DeviceBuffer(clusters * 256, np.int32)
    words = np.arange(256)
    _sums_of_every_run_and_replay(
        program, {"fill": [iters], "add": [iters], "sum": [sums, iters]},
        [(sums, np.tile(1000 * iters * (iters - 1) // 2 + iters * (words + 1), clusters))])


def _sums_of_every_run_and_replay(program, args, expected) -> None:
    """Three runs, then five replays of a graph of one: each time every (buffer, values) of
    `expected` poisoned before and equal to its values after."""
    def checked(launch) -> None:
        for sums, _ in expected:
            sums.fill_bytes(0xFF)
        launch()
        program.synchronize()
        for sums, values in expected:
            assert np.array_equal(sums.to_numpy(), values)

    for _ in range(3):
        checked(lambda: program.run(args))
    graph = program.capture(args)
    for _ in range(5):
        checked(graph.launch)
    graph.close()
    program.close()


def test_a_split_reduction_and_a_fork_in_clusters_deliver_every_entry_once(gpu_device):
    """Inputs/cluster_split_fork.mlir on 44 clusters of three, the forms a cluster's
    one-worker rings let dataflow-verify prove: a CTA drawing on two rings on its own (a
    fork), a tile taking four partials one at a time (a split reduction's final). Every word
    both consumers sum went through its ring once, filled, run after run and replayed."""
    from pathlib import Path

    import tilesync
    from tilesync.runtime.buffers import DeviceBuffer
    from tilesync.runtime.dataflow import DataflowProgram

    program = DataflowProgram(tilesync.compile(Path(__file__).parent / "Inputs" /
                                               "cluster_split_fork.mlir"))
    clusters, tiles = 44, 36
    final, side = DeviceBuffer(clusters * 256, np.int32), DeviceBuffer(clusters * 256, np.int32)
    words, ticket_sum = np.arange(256), tiles * (tiles - 1) // 2
    _sums_of_every_run_and_replay(
        program, {"src": [], "fin": [final], "aside": [side]},
        [(final, np.tile(1000 * ticket_sum + tiles * words, clusters)),
         (side, np.tile(2000 * ticket_sum + tiles * (words + 7), clusters))])


def test_cluster_transport_released_by_warps_delivers_every_ticket_once_filled(gpu_device):
    """convert-dataflow-to-nvvm{cluster_arrivals=warp}: each warp arrives for its lanes, a
    phase counting the peer's warps."""
    import tilesync
    from tilesync.kernels.queue_bench import QueueBenchConfig, queue_bench_module
    from tilesync.lowering.pipeline import KERNEL_TO_LLVM
    from tilesync.runtime.buffers import DeviceBuffer
    from tilesync.runtime.dataflow import DataflowProgram

    cfg = QueueBenchConfig(16 << 10, pairs=40, depth=2, transport="cluster", pin_l2=False)
    spec = ",".join(f"{name}{{cluster_arrivals=warp}}" if name == "convert-dataflow-to-nvvm"
                    else name for name in KERNEL_TO_LLVM)
    program = DataflowProgram(tilesync.compile(queue_bench_module(cfg), pipeline=spec))
    assert "bar.warp.sync" in program.compiled.ptx
    out = DeviceBuffer(cfg.pairs * cfg.block_threads * 2, np.uint64)
    _check_runs_and_replays(cfg, program, out, iters=37, runs=3, replays=5)
    program.close()


def test_cluster_transports_twin_runs_every_pair_to_its_end(gpu_device):
    """The cluster transport unsynchronized: no tickets, so no checksum; every pair must
    finish (each CTA meets its cluster before it returns) and every consumer thread must have
    stored its sums (racing reads make their values arbitrary), run after run."""
    from tilesync.runtime.buffers import DeviceBuffer

    cfg, program = _program(32 << 10, pairs=40, depth=3, transport="cluster", pin_l2=False,
                            synchronized=False)
    out = DeviceBuffer(cfg.pairs * cfg.block_threads * 2, np.uint64)
    for _ in range(3):
        out.fill_bytes(0xFF)
        program.run({"produce": [37], "consume": [out, 37]})
        program.synchronize()
        words = out.to_numpy().view(np.uint64).reshape(-1, 2)
        assert not np.all(words == np.uint64(2**64 - 1), axis=1).any()
    program.close()


@pytest.mark.parametrize("transport", ["threads", "cluster"])
def test_dropped_release_is_a_named_error_within_a_second(gpu_device, transport):
    # A trap leaves the context unusable: run it in a child process.
    script = textwrap.dedent("""
        import time, numpy as np, tilesync
        from tilesync.contract import SpinTimeoutError
        from tilesync.kernels.queue_bench import QueueBenchConfig, queue_bench_module
        from tilesync.runtime.buffers import DeviceBuffer
        from tilesync.runtime.dataflow import DataflowProgram
        cfg = QueueBenchConfig(4096, pairs=4, transport=TRANSPORT, pin_l2=TRANSPORT != "cluster")
        program = DataflowProgram(tilesync.compile(queue_bench_module(cfg)))
        out = DeviceBuffer(cfg.pairs * cfg.block_threads * 2, np.uint64)
        # the consumers take one ticket more than the producers ever fill
        start = time.perf_counter()
        program.run({"produce": [5], "consume": [out, 6]})
        try:
            program.synchronize()
        except SpinTimeoutError as err:
            print(f"{time.perf_counter() - start:.3f}s|{err}")
        else:
            print("no error")
    """).replace("TRANSPORT", repr(transport))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)
    line = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr
    _seconds, _, message = line.partition("s|")
    assert message, line
    # The spin's budget makes it a second at most; the elapsed time is not asserted (it also
    # counts module loads, and other processes on the GPU stretched it to 1.2 s once).
    assert DEFAULT_QUEUE_TIMEOUT_NS < 1_000_000_000
    assert "stage @consume" in message and "queue @q" in message
    if transport == "cluster":  # each cluster's producer filled tickets 0-4
        assert ("cluster queue @q ticket 5 (modulo 2^32) waited for the producer to fill its "
                "entry") in message
    else:
        assert "waited for a full entry" in message
        assert re.search(r"ticket 2[0-3] ", message), message  # 20 tickets were filled


def test_pipeline_that_cannot_be_resident_is_refused(gpu_device):
    from tilesync.runtime.dataflow import PipelineNotResidentError

    with pytest.raises(PipelineNotResidentError, match="not all 200000 blocks are co-resident"):
        _program(4096, pairs=100_000)

"""End to end on a GPU: the examples compiled by our pipeline, launched, every element checked.

Marked `gpu`: skipped with the reason where no GPU or driver is present (conftest.py).
"""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tilesync.bench import experiments

pytestmark = pytest.mark.gpu


def test_copy_chain_both_modes_exact():
    result = experiments.copy_chain(warmup=1, reps=3)
    assert result["tiles"] > 0
    for mode in experiments.MODES:
        assert result["modes"][mode]["median_ms"] > 0


def test_synthetic_waves_correct_at_each_wave_count():
    result = experiments.synthetic_waves(wave_counts=(0.6, 1.2), iters=200, tile_us=5,
                                             warmup=1, reps=3)
    assert [row["waves"] for row in result["rows"]] == [0.6, 1.2]
    assert all(row["rel_error"] <= 1e-4 for row in result["rows"])
    assert result["blocks_per_sm"] >= 1


def test_relaunch_100_times_without_memset():
    """Epoch semaphores: the same arrays serve 100 launches; outputs poisoned and checked."""
    from tilesync.runtime.buffers import DeviceBuffer
    from tilesync.runtime.semaphores import SemaphoreArray

    kernels = experiments.load_chain("copy_chain.mlir", block=256)
    tiles = 64
    n = tiles * 8192
    sems = SemaphoreArray(tiles)
    src_host = np.random.default_rng(1).standard_normal(n, dtype=np.float32)
    src = DeviceBuffer.from_numpy(src_host)
    mid, dst = DeviceBuffer.empty(n, np.float32), DeviceBuffer.empty(n, np.float32)
    for i in range(100):
        dst.fill_bytes(0xFF)
        experiments.run_chain(kernels, tiles, [src, mid, sems, experiments.EPOCH, 8192],
                              [mid, dst, sems, experiments.EPOCH, 8192], "tile_sync",
                              0, 1, sems.next_epoch)
        got = dst.to_numpy()
        assert np.array_equal(got, src_host), f"launch {i}"
    assert np.all(sems.to_numpy() == 100)


def test_missing_post_times_out_with_an_error_not_a_hang():
    """A consumer whose producer never runs traps after its timeout; the host raises."""
    script = textwrap.dedent("""
        import numpy as np, tilesync
        from importlib import resources
        from tilesync.runtime.buffers import DeviceBuffer
        from tilesync.runtime.module import load_ptx
        from tilesync.runtime.launch import launch
        from tilesync.runtime.device import synchronize
        from tilesync.runtime.errors import TilesyncRuntimeError
        from tilesync.lowering.pipeline import KERNEL_TO_LLVM
        text = resources.files("tilesync").joinpath("examples", "copy_chain.mlir").read_text()
        pipeline = ",".join(name + "{default_timeout_ns=200000000}"
                            if name == "convert-sync-to-nvvm" else name
                            for name in KERNEL_TO_LLVM)
        program = tilesync.compile(text, pipeline=pipeline)
        module = load_ptx(program.ptx, "timeout")
        consumer = module.function("consumer", program.kernels["consumer"].params)
        mid, dst = DeviceBuffer.zeros(4096, np.float32), DeviceBuffer.zeros(4096, np.float32)
        sems = DeviceBuffer.zeros(2, np.int32)
        launch(consumer, 2, 256, [mid, dst, sems, 1, 2048])
        try:
            synchronize()
        except TilesyncRuntimeError as err:
            print("RAISED", err)
        else:
            print("NO ERROR")
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert "RAISED" in proc.stdout, proc.stdout + proc.stderr
    assert "trap" in proc.stdout.lower() or "fault" in proc.stdout.lower()

"""On a GPU: the GPT-3 MLP stage program (examples/gpt3_mlp_sync.mlir) with synchronization
generated from its declared dependency, under each policy, with and without the R reordering
and a generated tile order, made safe by the wait-kernel or by PDL, run 100 times without a
memset between runs, checked against numpy. Skipped without a GPU (conftest.py)."""

from importlib import resources

import numpy as np
import pytest

import tilesync
from tilesync.api import default_pipeline

pytestmark = pytest.mark.gpu

VARIANTS = {
    "row+wait-kernel": ["sync-generate-policies", "sync-insert-post-wait",
                        "sync-insert-wait-kernel"],
    "row+pdl": ["sync-generate-policies", "sync-insert-post-wait", "sync-use-pdl"],
    "tile+wait-kernel": ["sync-generate-policies", "sync-select-policy{policy=tile}",
                         "sync-insert-post-wait", "sync-insert-wait-kernel"],
    "tile+R+pdl": ["sync-generate-policies", "sync-select-policy{policy=tile}",
                   "sync-reorder-loads", "sync-insert-post-wait", "sync-use-pdl"],
    "row+order+wait-kernel": ["sync-generate-policies", "sync-tile-order{order=generated}",
                              "sync-insert-post-wait", "sync-insert-wait-kernel"],
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_gpt3_mlp_stage_program_100_runs(variant):
    from tilesync.runtime.buffers import DeviceBuffer
    from tilesync.runtime.program import StageProgram

    text = resources.files("tilesync").joinpath("examples", "gpt3_mlp_sync.mlir").read_text()
    passes = (*VARIANTS[variant], "sync-verify")
    program = StageProgram(tilesync.compile(text, pipeline=default_pipeline(before=passes)))
    rng = np.random.default_rng(7)
    x = rng.standard_normal((256, 512), dtype=np.float32)
    w1 = rng.standard_normal((512, 1536), dtype=np.float32) / 16
    w2 = rng.standard_normal((1536, 512), dtype=np.float32) / 32
    want = (x.astype(np.float64) @ w1) @ w2
    bx, bw1, bw2 = (DeviceBuffer.from_numpy(a) for a in (x, w1, w2))
    h, y = DeviceBuffer.empty((256, 1536), np.float32), DeviceBuffer.empty((256, 512), np.float32)
    for run in range(100):
        if run % 25 == 0:
            h.fill_bytes(0xFF)
            y.fill_bytes(0xFF)  # NaN: anything not written this run fails the check
        program.run({"gemm1": [bx, bw1, h], "gemm2": [h, bw2, y]})
        if run % 25 == 0 or run == 99:
            program.synchronize()
            got = y.to_numpy()
            assert np.all(np.isfinite(got)), f"run {run}: unwritten outputs"
            err = np.linalg.norm(got - want) / np.linalg.norm(want)
            assert err < 1e-4, f"run {run}: relative error {err}"
    assert program.epoch == 100
    assert np.all(program.semaphores("gemm1").to_numpy() ==
                  100 * program.stages["gemm1"].posts_per_semaphore)


@pytest.mark.parametrize("progress", ["sync-use-pdl", "sync-insert-wait-kernel"])
def test_graph_replays_100_times_without_memset(progress):
    """sync-epoch-in-memory: a CUDA graph of one run, replayed; the device bumps the epoch."""
    from tilesync.runtime.buffers import DeviceBuffer
    from tilesync.runtime.program import StageProgram

    text = resources.files("tilesync").joinpath("examples", "gpt3_mlp_sync.mlir").read_text()
    passes = ("sync-generate-policies", "sync-insert-post-wait", progress, "sync-verify",
              "sync-epoch-in-memory")
    program = StageProgram(tilesync.compile(text, pipeline=default_pipeline(before=passes)))
    assert program.device_epoch
    rng = np.random.default_rng(3)
    x = rng.standard_normal((256, 512), dtype=np.float32)
    w1 = rng.standard_normal((512, 1536), dtype=np.float32) / 16
    w2 = rng.standard_normal((1536, 512), dtype=np.float32) / 32
    want = (x.astype(np.float64) @ w1) @ w2
    bx, bw1, bw2 = (DeviceBuffer.from_numpy(a) for a in (x, w1, w2))
    h, y = DeviceBuffer.empty((256, 1536), np.float32), DeviceBuffer.empty((256, 512), np.float32)
    graph = program.capture({"gemm1": [bx, bw1, h], "gemm2": [h, bw2, y]})
    for replay in range(100):
        if replay % 25 == 0:
            program.synchronize()
            y.fill_bytes(0xFF)
        graph.launch()
        if replay % 25 == 24:
            program.synchronize()
            got = y.to_numpy()
            assert np.all(np.isfinite(got)), f"replay {replay}: unwritten outputs"
            assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-4, f"replay {replay}"
    program.synchronize()
    assert program.epoch == 100
    assert np.all(program.semaphores("gemm1").to_numpy() ==
                  100 * program.stages["gemm1"].posts_per_semaphore)
    graph.close()

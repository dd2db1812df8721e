"""The MLP stage programs on the GPU: Y of every sync mode against an fp32 torch reference.

GPT-3 M=256 (its TMA GEMM1 has BM = 64 under GEMM2's 128: a GEMM2 tile row reads two GEMM1
tile rows) and M=512 (RowSync/TileSync with R = 2 k-steps per GEMM1 tile), LLaMA M=256 and
M=1024 (SwiGLU; on the TMA kernels GEMM1 writes 88 columns of H a tile, so a k-step of GEMM2
may wait for two tiles, and at M=256 for two tile rows each); M=64 of both (the TMA MLP in
64-row tiles; LLaMA's GEMM1 writes 32 columns of H a tile, so every k-step waits for two
tiles); the tma: modes on the
warp-specialized TMA kernels, GEMM1 storing H with TMA copies. Each mode's program runs 10
times without any memset of its semaphores (each run is a new epoch); before every run H and
Y are poisoned with NaN, so a consumer that reads H before it is written, or a tile never
stored, fails the check. Programs are compiled with debug spin-waits (a timed-out wait says
which semaphore it waited for) and the bench's timeout; compiled programs come from the
bench's cache (.tilesync-cache/mlp).
"""

from __future__ import annotations

import pytest

from tilesync.contract import target_for_device

CASES = [("gpt3", 64), ("gpt3", 256), ("gpt3", 512), ("llama", 64), ("llama", 256),
         ("llama", 1024)]
RUNS = 10


@pytest.mark.gpu
@pytest.mark.parametrize(("model", "M"), CASES)
def test_every_mode_computes_y(model, M, gpu_device):
    from tilesync.bench import mlp as bench
    from tilesync.kernels.mlp import mlp_spec

    target = target_for_device(gpu_device.arch)
    modes = bench.modes_for(model, M, tuple(bench.MODES))  # one launch too
    # compile (process pool, or the cache) before torch starts its threads
    compiled = bench.compile_jobs([(model, M, mode, True) for mode in modes], target,
                                  cache=bench.mlp_cache())
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    data = bench._Data(torch, mlp_spec(model, M), seed=1)
    errors = {}
    for mode in modes:
        entry = compiled[(model, M, mode, True)]
        assert "error" not in entry, entry.get("error")
        program = bench.load_program(entry)
        # buffers, or for the TMA kernels (tma: modes) their tensor maps
        args = bench.kernel_args(bench.mode_spec(model, M, mode), data)
        errors[mode] = data.worst_of_runs(program, args, RUNS, f"{model} M={M} {mode}")
        assert program.epoch == RUNS
    for layouts in bench.TORCH_LAYOUTS:  # the baseline agrees with the reference too
        assert data.error(data.torch_mlp(layouts)) < bench.TOL, layouts
    assert set(errors) == set(modes), errors


@pytest.mark.gpu
@pytest.mark.parametrize(("model", "M", "item", "layouts"), [
    ("gpt3", 256, "w1-kxn", ("row", "col")), ("gpt3", 256, "w2-kxn", ("col", "row")),
    ("llama", 1024, "w2-kxn", ("col", "row"))])
def test_gemms_reading_weights_k_by_n_compute_y(model, M, item, layouts, gpu_device):
    """The table's tiles with one GEMM reading its weight as K x N (bench.mlp.W1_KXN /
    W2_KXN), the other N x K, stream-synchronized, RowSync and TileSync: the N-major B of a
    kernel that produces A for another, and of one whose A another kernel produces."""
    from tilesync.bench import mlp as bench
    from tilesync.bench.mlp_sweep import table_tiles
    from tilesync.kernels.mlp import mlp_spec

    assert item in (bench.W1_KXN, bench.W2_KXN)
    tiles = (*table_tiles(model, M), item)
    modes = ("tma:stream_sync", "tma:row+pdl", "tma:tile+pdl")
    target = target_for_device(gpu_device.arch)
    compiled = bench.compile_jobs([(model, M, mode, True, tiles) for mode in modes], target,
                                  cache=bench.mlp_cache())
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    data = bench._Data(torch, mlp_spec(model, M), seed=2)
    for mode in modes:
        entry = compiled[(model, M, mode, True, tiles)]
        assert "error" not in entry, entry.get("error")
        spec = bench.mode_spec(model, M, mode, tiles)
        assert (spec.cfg1.b_layout, spec.cfg2.b_layout) == layouts
        program = bench.load_program(entry)
        data.worst_of_runs(program, bench.kernel_args(spec, data), RUNS,
                           f"{model} M={M} {mode} {item}")
        assert program.epoch == RUNS

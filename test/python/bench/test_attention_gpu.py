"""The attention benchmark's programs on the GPU (bench/attention.py): y of every mode (the
five-kernel chain's and the fused program's; after a KV cache the fused one's) against an fp32
torch reference of the chain, on GPU_TEST_SHAPES.

Each mode's program runs 10 times without any memset of its semaphores (each run a new
epoch); before every run the temporaries (QKV, S, P, O) and y are poisoned with NaN, so a tile
read before its producer wrote it, or a tile never stored, fails the check. Programs are
compiled with debug spin-waits (a timed-out wait names its semaphore) and come from the bench's
cache (.tilesync-cache/attention)."""

from __future__ import annotations

import pytest

from tilesync.bench import attention
from tilesync.contract import target_for_device

RUNS = 10


@pytest.mark.gpu
@pytest.mark.parametrize("shape", attention.GPU_TEST_SHAPES, ids=attention.shape_label)
def test_every_mode_computes_the_chain(shape, gpu_device):
    modes = attention.modes_for(shape)
    # compile (process pool, or the cache) before torch starts its threads
    compiled = attention.compile_jobs([(shape, mode, True) for mode in modes],
                                      target_for_device(gpu_device.arch),
                                      cache=attention.attention_cache())
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    data = attention.AttentionData(torch, shape, seed=1)
    for mode in modes:
        entry = compiled[(shape, mode, True)]
        assert "error" not in entry, entry.get("error")
        program = attention.mlp.load_program(entry)
        data.worst_of_runs(program, data.kernel_args(mode.startswith(attention.FUSED)), RUNS,
                           f"{shape} {mode}")
        assert program.epoch == RUNS
    # torch's two paths agree with the reference too
    assert data.error(data.torch_chain()) < attention.mlp.TOL
    assert data.error(data.torch_sdpa()) < attention.mlp.TOL

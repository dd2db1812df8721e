"""The conv-chain benchmark's programs on the GPU (bench/conv.py): y of every mode against an fp32
torch reference of conv3x3 -> ReLU -> conv3x3. Every mode runs, the cp.async convs' and the
im2col TMA convs' (tma:, whose producer threads wait through the async proxy; tma:persistent
without hooks, in stream order). The shape is GPU_TEST_SHAPES: two 24x24 images of 256 channels
(BM 64, halo 1: conv2's tiles at an image border wait for conv1 tiles of the other image; four
column tiles of 64, so RowSync and TileSync are different programs). Each mode's program runs
10 times without any memset of its semaphores (each run a new epoch); before every run the
middle activation and y are poisoned with NaN, so a conv2 tile that reads h before conv1 wrote
it, or a tile never stored, fails the check. Programs are compiled with debug spin-waits (a
timed-out wait names its semaphore); compiled programs come from the bench's cache
(.tilesync-cache/conv).
"""

from __future__ import annotations

import pytest

from tilesync.bench import conv
from tilesync.contract import target_for_device

RUNS = 10


@pytest.mark.gpu
@pytest.mark.parametrize("shape", conv.GPU_TEST_SHAPES, ids=conv.shape_label)
def test_every_mode_computes_the_chain(shape, gpu_device):
    modes = conv.modes_for(shape)
    # compile (process pool, or the cache) before torch starts its threads
    compiled = conv.compile_jobs([(shape, mode, True) for mode in modes],
                                 target_for_device(gpu_device.arch), cache=conv.conv_cache())
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    data = conv.ChainData(torch, conv.chain_spec(shape), seed=1)
    errors = {}
    for mode in modes:
        entry = compiled[(shape, mode, True)]
        assert "error" not in entry, entry.get("error")
        assert conv.verdicts(entry["host"]) == \
            ({} if mode == conv.PERSISTENT else {"conv1": "proved", "conv2": "proved"})
        program = conv.mlp.load_program(entry)
        args = data.kernel_args(conv.mode_spec(shape, mode))  # the tma: modes take maps
        errors[mode] = data.worst_of_runs(program, args, RUNS, f"{shape} {mode}")
        assert program.epoch == RUNS
    assert data.error(data.torch_chain()) < conv.mlp.TOL  # cuDNN agrees with the reference
    assert set(errors) == set(modes) and len(modes) == len(conv.MODES), errors


"""On a GPU: producers that place their tiles with `output_map` (a batched producer whose z is
the batch of a [B, M, N] output; two producers writing column blocks of one buffer), their
consumers on other streams reading tiles of other producer blocks than their own, 100 runs
without a memset, each checked against numpy. Skipped without a GPU (conftest.py)."""

from pathlib import Path

import numpy as np
import pytest

import tilesync

pytestmark = pytest.mark.gpu

INPUTS = Path(__file__).parent / "Inputs"


def _program(name: str):
    from tilesync.runtime.program import StageProgram

    return StageProgram(tilesync.compile((INPUTS / name).read_text(), filename=name))


def _runs(program, args, out, want, runs: int = 100) -> None:
    for run in range(runs):
        if run % 25 == 0:
            program.synchronize()
            out.fill_bytes(0xFF)  # NaN: an element not written this run fails the check
        program.run(args)
        if run % 25 == 24:
            program.synchronize()
            np.testing.assert_array_equal(out.to_numpy(), want, err_msg=f"run {run}")
    assert program.epoch == runs


def test_a_batched_producer_placed_by_output_map():
    from tilesync.runtime.buffers import DeviceBuffer

    x = np.random.default_rng(1).standard_normal((3, 64, 32), dtype=np.float32)
    want = np.roll(2 * x, -1, axis=0) + 1  # consumer batch z reads producer batch z + 1
    bx = DeviceBuffer.from_numpy(x)
    mid, y = DeviceBuffer.empty((3, 64, 32), np.float32), DeviceBuffer.empty((3, 64, 32),
                                                                            np.float32)
    program = _program("output_map_batched.mlir")
    _runs(program, {"p": [bx, mid], "c": [mid, y]}, y, want)


def test_two_producers_writing_column_blocks_of_one_buffer():
    from tilesync.runtime.buffers import DeviceBuffer

    rng = np.random.default_rng(2)
    q, k = (rng.standard_normal((64, 32), dtype=np.float32) for _ in range(2))
    want = np.roll(np.concatenate([q, -k], axis=1), -8, axis=0)  # the next row block
    bq, bk = DeviceBuffer.from_numpy(q), DeviceBuffer.from_numpy(k)
    qk, y = DeviceBuffer.empty((64, 64), np.float32), DeviceBuffer.empty((64, 64), np.float32)
    program = _program("output_map_columns.mlir")
    _runs(program, {"q": [bq, qk], "kk": [bk, qk], "c": [qk, y]}, y, want)

"""kernels/row_dot.py: a Linear to one output, one warp per row, fp32 sums by shuffles.

CPU: the kernel's shape (a lane's columns of the row and of w loaded before the sum, one store
by lane 0), its PTX accepted by nvJitLink, the config's checks. GPU (`-m gpu`): the kernel
against a float64 reference on poisoned outputs, rows not a multiple of the block's.
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import arith, gpu, memref, scf

from tilesync.dialects import tile as tl
from tilesync.harness.compile import compile_kernel
from tilesync.kernels.config import RowDotConfig
from tilesync.kernels.row_dot import row_dot_module
from tilesync.lowering.ptx import validate_ptx


def _kernel(cfg: RowDotConfig) -> gpu.FuncOp:
    return next(op for op in row_dot_module(cfg).walk() if isinstance(op, gpu.FuncOp))


def test_a_lane_loads_its_columns_then_one_lane_stores_the_warps_sum():
    ops = list(_kernel(RowDotConfig(1000, 256)).walk())
    loads = [i for i, op in enumerate(ops) if isinstance(op, memref.LoadOp)]
    shuffles = [i for i, op in enumerate(ops) if isinstance(op, tl.ShuffleOp)]
    # 8 columns of w, the bias, 8 columns of the row, all before the warp sum's 5 steps
    assert len(loads) == 17 and len(shuffles) == 5 and loads[-1] < shuffles[0]
    store, = [op for op in ops if isinstance(op, memref.StoreOp)]
    guard = store.parent_op()
    assert isinstance(guard, scf.IfOp)
    compare = guard.cond.owner
    assert isinstance(compare, arith.CmpiOp) and compare.predicate.value.data == 0  # lane == 0


def test_ptx_is_valid():
    ptx = compile_kernel(RowDotConfig(1000, 256), "sm_90").ptx
    assert ptx.count("shfl.sync.bfly") == 5
    validate_ptx(ptx, "sm_90")


@pytest.mark.parametrize("kwargs, message", [
    (dict(rows=8, cols=100), "multiple of 32"),
    (dict(rows=0, cols=128), "rows positive"),
])
def test_config_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RowDotConfig(**kwargs)


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", [RowDotConfig(1003, 256), RowDotConfig(517, 64, warps=4)],
                         ids=lambda c: f"{c.rows}x{c.cols}")
def test_gpu_row_dot_matches_the_reference(cfg, gpu_device):
    from tilesync.harness.runner import RowDotRunner
    from tilesync.runtime.buffers import DeviceBuffer
    from tilesync.runtime.launch import synchronize

    rng = np.random.default_rng(cfg.cols)
    x = rng.standard_normal((cfg.rows, cfg.cols)).astype(np.float16)
    w = (rng.standard_normal(cfg.cols) / cfg.cols ** 0.5).astype(np.float16)
    bias = rng.standard_normal(1).astype(np.float16)
    y = DeviceBuffer.empty((cfg.rows,), np.float16)
    y.fill_bytes(0xFF)  # NaN: a row never written shows up
    RowDotRunner(cfg).launch(*(DeviceBuffer.from_numpy(a) for a in (x, w, bias)), y)
    synchronize()
    got = y.to_numpy().astype(np.float64)
    ref = x.astype(np.float64) @ w.astype(np.float64) + float(bias[0])
    assert np.isfinite(got).all(), f"{np.count_nonzero(~np.isfinite(got))} not written"
    assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 2e-3

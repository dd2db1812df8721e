"""kernels/layer_norm.py: one warp per row, fp32 sums by butterfly shuffles, rsqrt.approx.

CPU: the kernel's shape (guarded rows, a lane's columns), its PTX accepted by nvJitLink, the
config's checks, the float64 reference against torch's definition. GPU (`-m gpu`): the kernel
against the reference on poisoned outputs, rows not a multiple of the block's.
"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.dialects import gpu, math, memref

from tilesync.dialects import tile as tl
from tilesync.harness.compile import compile_kernel
from tilesync.kernels.config import LayerNormConfig
from tilesync.kernels.layer_norm import layer_norm_module
from tilesync.kernels.reference import reference_layer_norm
from tilesync.lowering.ptx import validate_ptx


def _kernel(cfg: LayerNormConfig) -> gpu.FuncOp:
    return next(op for op in layer_norm_module(cfg).walk() if isinstance(op, gpu.FuncOp))


def test_a_lane_loads_its_columns_once_and_reduces_twice():
    ops = list(_kernel(LayerNormConfig(1000, 128)).walk())
    loads = [op for op in ops if isinstance(op, memref.LoadOp)]
    # 4 columns of X, gamma and beta per lane; 4 stores of Y
    assert len(loads) == 12 and sum(isinstance(op, memref.StoreOp) for op in ops) == 4
    # two warp sums (mean, then the variance about it) of five butterfly steps each
    assert sum(isinstance(op, tl.ShuffleOp) for op in ops) == 10
    assert sum(isinstance(op, math.RsqrtOp) for op in ops) == 1


def test_ptx_is_valid_and_uses_rsqrt_approx():
    ptx = compile_kernel(LayerNormConfig(1000, 256), "sm_90").ptx
    assert ptx.count("rsqrt.approx.f32") == 1 and ptx.count("shfl.sync.bfly") == 10
    validate_ptx(ptx, "sm_90")


@pytest.mark.parametrize("kwargs, message", [
    (dict(rows=8, cols=100), "multiple of 32"),
    (dict(rows=0, cols=128), "rows positive"),
    (dict(rows=8, cols=128, eps=0.0), "eps must be positive"),
])
def test_config_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LayerNormConfig(**kwargs)


def test_reference_matches_torchs_definition():
    rng = np.random.default_rng(0)
    x, gamma, beta = rng.standard_normal((5, 64)), rng.standard_normal(64), rng.standard_normal(64)
    y = reference_layer_norm(x, gamma, beta, eps=1e-5)
    normed = (y - beta) / gamma
    assert np.allclose(normed.mean(axis=1), 0, atol=1e-9)
    assert np.allclose((normed ** 2).mean(axis=1), x.var(axis=1) / (x.var(axis=1) + 1e-5))


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", [LayerNormConfig(1003, 128), LayerNormConfig(517, 512, eps=1e-3)],
                         ids=lambda c: f"{c.rows}x{c.cols}")
def test_gpu_layer_norm_matches_the_reference(cfg, gpu_device):
    from tilesync.harness.runner import LayerNormRunner
    from tilesync.runtime.buffers import DeviceBuffer
    from tilesync.runtime.launch import synchronize

    rng = np.random.default_rng(cfg.cols)
    x = (3 * rng.standard_normal((cfg.rows, cfg.cols)) + 1).astype(np.float16)
    gamma = rng.standard_normal(cfg.cols).astype(np.float16)
    beta = rng.standard_normal(cfg.cols).astype(np.float16)
    y = DeviceBuffer.empty((cfg.rows, cfg.cols), np.float16)
    y.fill_bytes(0xFF)  # NaN: a row never written shows up
    LayerNormRunner(cfg).launch(*(DeviceBuffer.from_numpy(a) for a in (x, gamma, beta)), y)
    synchronize()
    got = y.to_numpy().astype(np.float64)
    ref = reference_layer_norm(x, gamma, beta, cfg.eps)
    assert np.isfinite(got).all(), f"{np.count_nonzero(~np.isfinite(got))} not written"
    assert np.linalg.norm(got - ref) / np.linalg.norm(ref) < 2e-3

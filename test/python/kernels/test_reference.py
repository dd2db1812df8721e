"""kernels/reference.py: the host's float64 references, dropout's keep mask, host data."""

from __future__ import annotations

import numpy as np

from tilesync.kernels.config import gemm_config, softmax_config
from tilesync.kernels.reference import (
    dropout_mask,
    host_array,
    host_values,
    reference_conv2d,
    reference_gemm,
    reference_softmax,
    swiglu_weights,
)


def test_reference_epilogues():
    cfg = gemm_config(8, 8, 8, epilogue="bias_gelu")
    a, b, bias = np.eye(8), np.eye(8), np.arange(8.0)
    out = reference_gemm(cfg, a, b, bias)
    x = np.eye(8) + np.arange(8.0)[None, :]
    expected = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(out, expected)


def test_reference_relu_epilogue():
    cfg = gemm_config(8, 8, 8, epilogue="bias_relu")
    a, b, bias = np.eye(8), np.eye(8), np.arange(8.0) - 4
    out = reference_gemm(cfg, a, b, bias)
    np.testing.assert_allclose(out, np.maximum(np.eye(8) + bias[None, :], 0.0))


def test_swiglu_weights_and_reference():
    rng = np.random.default_rng(3)
    a, gate, up = (rng.standard_normal(s) for s in ((5, 32), (32, 24), (32, 24)))
    cfg = gemm_config(5, 48, 32, epilogue="swiglu")
    out = reference_gemm(cfg, a, swiglu_weights(gate, up))
    x, y = a @ gate, a @ up
    np.testing.assert_allclose(out, x / (1 + np.exp(-x)) * y, rtol=1e-12)
    assert cfg.out_cols == 24


def test_conv_reference_matches_loops():
    rng = np.random.default_rng(5)
    x, w = rng.standard_normal((2, 4, 5, 8)), rng.standard_normal((3, 3, 3, 8))
    ref = reference_conv2d(x, w)
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    for n, p, q, k in [(0, 0, 0, 0), (1, 3, 4, 2), (0, 2, 1, 1), (1, 0, 4, 0)]:
        expected = sum(padded[n, p + r, q + s] @ w[k, r, s] for r in range(3) for s in range(3))
        assert abs(ref[n, p, q, k] - expected) < 1e-12


def test_dropout_mask_rate_and_determinism():
    for keep in (0.5, 0.9):
        mask = dropout_mask(1234, 512, 2048, keep)
        assert abs(mask.mean() - keep) < 0.01 * keep
        assert np.array_equal(mask, dropout_mask(1234, 512, 2048, keep))
        other = dropout_mask(1235, 512, 2048, keep)
        # independent masks disagree on a fraction 2 p (1 - p)
        assert abs((mask != other).mean() - 2 * keep * (1 - keep)) < 0.01
        # rows and columns are not correlated: per-row and per-column rates stay near p
        assert np.abs(mask.mean(axis=1) - keep).max() < 0.06
        assert np.abs(mask.mean(axis=0) - keep).max() < 0.15
    assert dropout_mask(1, 4, 4, 1.0).all()


def test_bf16_host_round_trip():
    x = np.array([1.0, -2.5, 3.140625, 65280.0], np.float32)
    assert np.array_equal(host_values(host_array(x, "bf16"), "bf16"), x.astype(np.float64))


def test_softmax_reference_rows_sum_to_one_and_dropout_scales_the_kept():
    x = np.random.default_rng(7).standard_normal((16, 64))
    plain = reference_softmax(softmax_config(16, 64), x)
    np.testing.assert_allclose(plain.sum(axis=1), 1.0, rtol=1e-12)
    dropped = reference_softmax(softmax_config(16, 64, dropout=0.5), x, seed=3)
    mask = dropout_mask(3, 16, 64, 0.5)
    np.testing.assert_allclose(dropped, np.where(mask, plain / 0.5, 0.0), rtol=1e-12)
    scaled = reference_softmax(softmax_config(16, 64, scale=0.125), x)
    np.testing.assert_allclose(scaled, reference_softmax(softmax_config(16, 64), x / 8),
                               rtol=1e-12)
    assert not np.allclose(scaled, plain)


def test_causal_softmax_reference_is_the_softmax_of_each_query_s_prefix():
    x = np.random.default_rng(8).standard_normal((64, 32))  # two sequences of 32 queries
    causal = reference_softmax(softmax_config(64, 32, scale=0.5, causal=True), x)
    for r in range(64):
        i = r % 32
        prefix = np.exp(0.5 * (x[r, :i + 1] - x[r, :i + 1].max()))
        np.testing.assert_allclose(causal[r, :i + 1], prefix / prefix.sum(), rtol=1e-12)
        assert (causal[r, i + 1:] == 0).all()

"""The generated kernels' arithmetic on the host: float64 references (numpy; the GEMM and the
epilogues also on torch tensors, in fp32), dropout's keep mask, and host data in the kernels'
layouts.

    reference_gemm(cfg, a, b, bias=None, seed=None)     apply_epilogue(cfg, out, bias, seed)
    reference_conv2d(x, w, bias=None, epilogue=None)    reference_softmax(cfg, x, seed=None)
    dropout_mask(seed, rows, cols, keep)                 swiglu_weights(gate, up)
    host_array(values, dtype) / host_values(array, dtype)   (f16, or bf16 as raw bits)
"""

from __future__ import annotations

import numpy as np

from tilesync.kernels.config import (
    DROPOUT_HASH_MULTIPLIERS,
    GELU_C,
    GELU_K,
    GemmConfig,
    SoftmaxConfig,
    dropout_threshold,
    gemm_config,
)


def reference_gemm(cfg: GemmConfig, a, b, bias=None, seed: int | None = None):
    """The GEMM and its epilogue on the operands' values: float64 for numpy arrays (or lists),
    fp32 on their device for torch tensors. b holds B's bytes as the kernel reads them, in any
    shape: K x N for b_layout "row", else N x K."""
    if isinstance(a, np.ndarray) or not hasattr(a, "float"):
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        bias = None if bias is None else np.asarray(bias, np.float64)
    else:  # torch
        a, b, bias = a.float(), b.float(), None if bias is None else bias.float()
    k = a.shape[1]
    b = b.reshape(k, -1) if cfg.b_layout == "row" else b.reshape(-1, k).T
    return apply_epilogue(cfg, a @ b, bias, seed)


def apply_epilogue(cfg: GemmConfig, out, bias=None, seed: int | None = None):
    """The epilogue (and dropout) of `cfg` applied to the M x N product (numpy float64, or
    a torch tensor: the same arithmetic runs on either)."""
    if cfg.epilogue == "swiglu":
        m, n = out.shape
        pairs = out.reshape(m, n // 16, 2, 8)
        gate, up = pairs[:, :, 0, :].reshape(m, n // 2), pairs[:, :, 1, :].reshape(m, n // 2)
        out = gate / (1.0 + _exp(-gate)) * up
    if cfg.has_bias:
        out = out + bias[None, :]
    if cfg.epilogue in ("gelu", "bias_gelu"):
        out = 0.5 * out * (1.0 + _tanh(GELU_C * (out + GELU_K * out**3)))
    if cfg.epilogue in ("relu", "bias_relu"):
        out = out * (out > 0)  # numpy and torch alike
    if cfg.dropout is not None:
        if seed is None:
            raise ValueError("the reference of a dropout GEMM needs seed=")
        mask = dropout_mask(seed, out.shape[0], out.shape[1], cfg.dropout)
        if not isinstance(out, np.ndarray):  # torch
            import torch

            mask = torch.from_numpy(mask).to(out.device)
        out = out * mask / cfg.dropout
    return out


def _exp(x):
    return np.exp(x) if isinstance(x, np.ndarray) else x.exp()


def _tanh(x):
    return np.tanh(x) if isinstance(x, np.ndarray) else x.tanh()


def reference_conv2d(x, w, bias=None, epilogue: str | None = None):
    """float64 numpy: x N x H x W x C, w K x 3 x 3 x C -> N x H x W x K (padding 1)."""
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    n, h, wd, c = x.shape
    padded = np.zeros((n, h + 2, wd + 2, c))
    padded[:, 1:-1, 1:-1, :] = x
    out = np.zeros((n, h, wd, w.shape[0]))
    for r in range(3):
        for s in range(3):
            window = padded[:, r:r + h, s:s + wd, :].reshape(-1, c)
            out += (window @ w[:, r, s, :].T).reshape(out.shape)
    cfg = gemm_config(8, 8, 8, epilogue=epilogue)
    flat = apply_epilogue(cfg, out.reshape(-1, out.shape[-1]),
                          None if bias is None else np.asarray(bias, np.float64))
    return flat.reshape(out.shape)


def reference_softmax(cfg: SoftmaxConfig, x, seed: int | None = None):
    """float64 numpy softmax of x · cfg.scale over rows (causal: row r's columns past query
    r mod cols excluded), then the kernel's dropout mask."""
    x = np.asarray(x, np.float64) * cfg.scale
    if cfg.causal:
        query = np.arange(cfg.rows)[:, None] % cfg.cols
        x = np.where(np.arange(cfg.cols)[None, :] <= query, x, -np.inf)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    y = e / e.sum(axis=1, keepdims=True)
    if cfg.dropout is not None:
        if seed is None:
            raise ValueError("the reference of a dropout softmax needs seed=")
        y = y * dropout_mask(seed, cfg.rows, cfg.cols, cfg.dropout) / cfg.dropout
    return y


def reference_layer_norm(x, gamma, beta, eps: float = 1e-5):
    """float64 numpy layer norm over rows (biased variance), then gamma and beta."""
    x = np.asarray(x, np.float64)
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * np.asarray(gamma, np.float64) + \
        np.asarray(beta, np.float64)


def swiglu_weights(gate, up):
    """W1 for epilogue="swiglu" from gate and up (K x F each, row-major B): 8-column blocks
    interleaved, W1[:, 16 j + t] = gate[:, 8 j + t] and W1[:, 16 j + 8 + t] = up[:, 8 j + t],
    so the accumulator tiles ni, ni + 1 of a warp hold gate and up of the same 8 columns."""
    gate, up = np.asarray(gate), np.asarray(up)
    k, f = gate.shape
    if up.shape != gate.shape or f % 8:
        raise ValueError(f"gate and up must both be K x F with F % 8 == 0, got {gate.shape} "
                         f"and {up.shape}")
    return np.stack([gate.reshape(k, f // 8, 8), up.reshape(k, f // 8, 8)], axis=2) \
        .reshape(k, 2 * f)


def _mix32(x):
    """The generator's _u32_mix on uint32 arrays."""
    m1, m2 = DROPOUT_HASH_MULTIPLIERS
    x = np.asarray(x, np.uint32)
    with np.errstate(over="ignore"):
        x = x ^ (x >> np.uint32(16))
        x = (x * np.uint32(m1)).astype(np.uint32)
        x = x ^ (x >> np.uint32(15))
        x = (x * np.uint32(m2)).astype(np.uint32)
        return x ^ (x >> np.uint32(16))


def dropout_mask(seed: int, rows: int, cols: int, keep: float):
    """The kernel's keep mask (bool rows x cols) for `seed`: the same hash, in numpy."""
    r = np.arange(rows, dtype=np.uint32)[:, None]
    c = np.arange(cols, dtype=np.uint32)[None, :]
    h = _mix32(c ^ _mix32(r ^ _mix32(np.uint32(seed & 0xFFFFFFFF))))
    if keep >= 1.0:
        return np.ones((rows, cols), bool)
    return h < np.uint32(dropout_threshold(keep))


def host_array(values, dtype: str):
    """float values as the kernel's element type: float16, or bf16 as raw uint16 bits (RNE)."""
    if dtype == "f16":
        return np.asarray(values, np.float32).astype(np.float16)
    bits = np.asarray(values, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return bits.astype(np.uint16)


def host_values(array, dtype: str):
    """The float64 values of a host_array (or of the kernel's output)."""
    if dtype == "f16":
        return np.asarray(array).astype(np.float64)
    return (np.asarray(array, np.uint16).astype(np.uint32) << 16).view(np.float32) \
        .astype(np.float64)


__all__ = [
    "apply_epilogue",
    "dropout_mask",
    "host_array",
    "host_values",
    "reference_conv2d",
    "reference_gemm",
    "reference_layer_norm",
    "reference_softmax",
    "swiglu_weights",
]

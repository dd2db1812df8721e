"""Conv2D (3x3, stride 1, padding 1, NHWC fp16) as an implicit GEMM on the tile-dialect GEMM.

    conv2d_config(N, H, W, C, K, ...) -> ConvConfig
    conv2d_module(cfg) -> builtin.module          (gemm_module with an im2col A operand)
    compile_conv2d(cfg, target) / Conv2dRunner / reference_conv2d / compile_ptx_many

The GEMM view: M = N*H*W output pixels, N = K filters, K = 9*C (r, s, c with c fastest).
  A[m, k] = x[n, p + r - 1, q + s - 1, c]   (m = (n, p, q), k = (r, s, c)), never materialized:
            each 16-byte cp.async chunk (8 channels; C % 8 == 0 keeps it inside one (r, s))
            computes its source index from (m, k); the halo (h or w outside 0 .. H-1 / W-1,
            negative indices included: the mask compares unsigned) and pixels past N*H*W are
            zero-filled by the masked cp.async (src-size 0) and read nothing.
  B[k, n] = w[n, r, s, c]: the KRSC filter is the GEMM's N x K column-major B as it is.
  C[m, n] = y[n_img, p, q, k_filter]: NHWC output, the GEMM's row-major C.
The generator's multistage pipeline, swizzles, epilogues (bias, gelu, ...) and split-K apply.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith
from xdsl.dialects.builtin import MemRefType, ModuleOp

from tilesync.kernels import gemm as g


@dataclass(frozen=True)
class ConvConfig:
    N: int
    H: int
    W: int
    C: int
    K: int
    tile: tuple[int, int, int] = (128, 128, 32)
    warps: tuple[int, int] = (2, 2)
    stages: int = 3
    split_k: int = 1
    epilogue: str | None = None
    name: str = "conv2d"
    R: int = 3
    S: int = 3
    mma: str = "sync"
    """The GEMM's multiply: mma.sync, or wgmma (sm_90a; see GemmConfig.mma)."""

    def __post_init__(self) -> None:
        if min(self.N, self.H, self.W, self.C, self.K) <= 0:
            raise ValueError(f"conv sizes must be positive, got {self}")
        if self.C % 8:
            raise ValueError(f"C must be a multiple of 8 (16-byte channel chunks), got {self.C}")
        if (self.R, self.S) != (3, 3):
            raise ValueError("only 3x3 filters (stride 1, padding 1) are generated")
        if self.epilogue == "swiglu":
            raise ValueError("swiglu is a GEMM epilogue; conv2d takes none, bias, gelu")
        _ = self.gemm  # validates the GEMM view

    @property
    def gemm(self) -> g.GemmConfig:
        return g.gemm_config(self.N * self.H * self.W, self.K, self.R * self.S * self.C,
                             tile=self.tile, warps=self.warps, stages=self.stages,
                             b_layout="col", epilogue=self.epilogue, name=self.name,
                             split_k=self.split_k, mma=self.mma)

    @property
    def grid(self) -> tuple[int, int, int]:
        return self.gemm.grid

    @property
    def block(self) -> tuple[int, int, int]:
        return self.gemm.block

    @property
    def flops(self) -> int:
        return self.gemm.flops

    @property
    def input_shape(self) -> tuple[int, int, int, int]:
        return (self.N, self.H, self.W, self.C)

    @property
    def filter_shape(self) -> tuple[int, int, int, int]:
        return (self.K, self.R, self.S, self.C)

    @property
    def output_shape(self) -> tuple[int, int, int, int]:
        return (self.N, self.H, self.W, self.K)

    def compile(self, target: str = "sm_90"):
        return compile_conv2d(self, target)


def conv2d_config(N: int, H: int, W: int, C: int, K: int, tile=(128, 128, 32), warps=(2, 2),
                  stages: int = 3, split_k: int = 1, epilogue: str | None = None,
                  name: str = "conv2d", mma: str = "sync") -> ConvConfig:
    return ConvConfig(N, H, W, C, K, tuple(tile), tuple(warps), stages, split_k, epilogue,
                      name, mma=mma)


def conv2d_module(cfg: ConvConfig) -> ModuleOp:
    """The kernel: parameters x (N x H x W x C), w (K x 9C, the KRSC filter), y (NHW x K)
    [, bias][, workspace, counters] as pointers."""
    gcfg = cfg.gemm
    x_type = MemRefType(gcfg.element_type, list(cfg.input_shape))
    return g.gemm_module(0, 0, 0, config=gcfg, a_type=x_type, a_source=im2col_source(cfg))


def im2col_source(cfg: ConvConfig):
    """The A addressing of the implicit GEMM: (m, k) -> ([n, h, w, c], masked=True)."""
    hw = cfg.H * cfg.W

    def im2col(body: g._Body, m, k) -> tuple[list, bool]:
        n = body.divui(m, hw)
        pq = body.remui(m, hw)
        p = body.divui(pq, cfg.W)
        q = body.remui(pq, cfg.W)
        rs = body.divui(k, cfg.C)
        c = body.remui(k, cfg.C)
        r = body.divui(rs, cfg.S)
        s = body.remui(rs, cfg.S)
        one = body.idx(1)
        h = body.v(arith.SubiOp(body.addi(p, r), one))  # -1 in the top halo row: masked
        w = body.v(arith.SubiOp(body.addi(q, s), one))
        return [n, h, w, c], True

    return im2col


def compile_conv2d(cfg: ConvConfig, target: str = "sm_90", validate: bool = False):
    import tilesync

    if cfg.gemm.target is not None and target == "sm_90":
        target = cfg.gemm.target
    return tilesync.compile(conv2d_module(cfg), pipeline=g.gemm_pipeline(), target=target,
                            validate=validate)


compile_ptx_many = g.compile_ptx_many


def reference_conv2d(x, w, bias=None, epilogue: str | None = None):
    """float64 numpy: x N x H x W x C, w K x 3 x 3 x C -> N x H x W x K (padding 1)."""
    import numpy as np

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
    cfg = g.gemm_config(8, 8, 8, epilogue=epilogue)
    flat = g.apply_epilogue(cfg, out.reshape(-1, out.shape[-1]),
                            None if bias is None else np.asarray(bias, np.float64))
    return flat.reshape(out.shape)


class Conv2dRunner:
    """The conv kernel loaded on the current GPU (y = conv(x, w) [+ bias])."""

    def __init__(self, cfg: ConvConfig, ptx: str | None = None):
        self.cfg = cfg
        if ptx is None:
            from tilesync.runtime.device import get_device

            ptx = compile_conv2d(cfg, get_device().arch).ptx
        self.gemm = g.GemmRunner(cfg.gemm, ptx=ptx)
        self.kernel = self.gemm.kernel

    def launch(self, x, w, y, bias=None, stream=None) -> None:
        self.gemm.launch(x, w, y, bias, stream=stream)


__all__ = [
    "Conv2dRunner",
    "ConvConfig",
    "compile_conv2d",
    "compile_ptx_many",
    "conv2d_config",
    "conv2d_module",
    "im2col_source",
    "reference_conv2d",
]

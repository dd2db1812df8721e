"""Conv2D (3x3, stride 1, padding 1, NHWC fp16) as an implicit GEMM on the tile-dialect GEMM.

    conv2d_module(cfg: ConvConfig) -> builtin.module   (gemm_module with an im2col A operand)

The configuration is kernels/config.py's ConvConfig (conv2d_config(N, H, W, C, K, ...)).

The GEMM view: M = N*H*W output pixels, N = K filters, K = 9*C (r, s, c with c fastest).
  A[m, k] = x[n, p + r - 1, q + s - 1, c]   (m = (n, p, q), k = (r, s, c)), never materialized:
            each 16-byte cp.async chunk (8 channels; C % 8 == 0 keeps it inside one (r, s))
            computes its source index from (m, k); the halo (h or w outside 0 .. H-1 / W-1,
            negative indices included: the mask compares unsigned) and pixels past N*H*W are
            zero-filled by the masked cp.async (src-size 0) and read nothing.
  B[k, n] = w[n, r, s, c]: the KRSC filter is the GEMM's N x K column-major B as it is.
  C[m, n] = y[n_img, p, q, k_filter]: NHWC output, the GEMM's row-major C.
The generator's multistage pipeline, swizzles, epilogues (bias, gelu, ...) and split-K apply.
With `pipeline="tma_ws"` the kernel is the warp-specialized GEMM (kernels/gemm_tma.py) whose
producer copies A's k-tiles with im2col TMA loads: the copy engine gathers the tile's pixels at
the filter tap and zero-fills the halo.
"""

from __future__ import annotations

from xdsl.dialects import arith
from xdsl.dialects.builtin import MemRefType, ModuleOp

from tilesync.kernels.builder import BlockBuilder
from tilesync.kernels.config import ConvConfig
from tilesync.kernels.gemm import ASource, gemm_module


def conv2d_module(cfg: ConvConfig) -> ModuleOp:
    """The kernel: parameters x (N x H x W x C), w (K x 9C, the KRSC filter), y (NHW x K)
    [, bias][, workspace, counters] as pointers."""
    gcfg = cfg.gemm
    if gcfg.warp_specialized:  # A through its im2col tensor map (GemmConfig.im2col)
        from tilesync.kernels.gemm_tma import tma_ws_module

        return tma_ws_module(gcfg)
    x_type = MemRefType(gcfg.element_type, list(cfg.input_shape))
    return gemm_module(0, 0, 0, config=gcfg, a_type=x_type, a_source=im2col_source(cfg))


def im2col_source(cfg: ConvConfig) -> ASource:
    """The A addressing of the implicit GEMM: (m, k) -> ([n, h, w, c], masked=True)."""
    hw = cfg.H * cfg.W

    def im2col(body: BlockBuilder, m, k, origin) -> tuple[list, bool]:
        n = body.divui(m, hw)
        pq = body.remui(m, hw)
        p = body.divui(pq, cfg.W)
        q = body.remui(pq, cfg.W)
        rs = body.divui(k, cfg.C)
        c = body.remui(k, cfg.C)
        r = body.divui(rs, cfg.S)
        s = body.remui(rs, cfg.S)
        one = body.idx(1)
        h = body.emit(arith.SubiOp(body.addi(p, r), one))  # -1 in the top halo row: masked
        w = body.emit(arith.SubiOp(body.addi(q, s), one))
        return [n, h, w, c], True

    return im2col


__all__ = ["conv2d_module", "im2col_source"]

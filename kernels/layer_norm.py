"""Layer norm over the rows of an fp16 matrix: one warp per row.

    layer_norm_module(cfg: LayerNormConfig) -> builtin.module
    affine = load_affine(b, gamma, beta, cols, lane)
    emit_layer_norm_rows(b, src, src_rows, dst, dst_rows, affine, lane, eps)

Y[r, :] = (X[r, :] - mean) · rsqrt(var + eps) · gamma + beta with fp32 math and the biased
variance (torch's layer_norm): lane l of the row's warp loads columns l, l + 32, ... (each load
instruction of the warp reads 64 contiguous bytes), and the mean and then the variance about
it are warp sums (`warp_allreduce`); `rsqrt` is rsqrt.approx.f32. The row emitter is shared by
the bulk kernel (block b's warps take rows b · warps ..) and a pipeline stage that normalizes
the rows of a queue entry (kernels/mlp_pipeline.py), each lane loading its columns of gamma
and beta once, before its rows.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith, math, memref
from xdsl.dialects.builtin import Float16Type, MemRefType, ModuleOp
from xdsl.ir import SSAValue

from tilesync.kernels.builder import BlockBuilder, warp_allreduce, warp_per_row_module
from tilesync.kernels.config import LayerNormConfig

Affine = tuple[list[SSAValue], list[SSAValue]]
"""A lane's gamma and beta (f32), at its columns lane, lane + 32, ..."""


def load_affine(b: BlockBuilder, gamma: SSAValue, beta: SSAValue, cols: int,
                lane: SSAValue) -> Affine:
    if cols % 32:
        raise ValueError(f"a warp normalizes rows of a multiple of 32 columns, got {cols}")
    columns = [b.addi(lane, 32 * i) for i in range(cols // 32)]
    return [b.load_f32(gamma, [c]) for c in columns], [b.load_f32(beta, [c]) for c in columns]


def emit_layer_norm_rows(b: BlockBuilder, src: SSAValue, src_rows: Sequence[SSAValue],
                         dst: SSAValue, dst_rows: Sequence[SSAValue], affine: Affine,
                         lane: SSAValue, eps: float) -> None:
    """Rows `src_rows` of `src` normalized into rows `dst_rows` of `dst` by the warp of
    `lane`, every row's loads issued before the first row's sums (a warp with several rows
    waits for their memory once, not once a row)."""
    f16 = Float16Type()
    gammas, betas = affine
    columns = [b.addi(lane, 32 * i) for i in range(len(gammas))]
    inv_cols = b.f32(1.0 / (32 * len(gammas)))
    eps_value = b.f32(eps)

    def row_sums(rows: list[list[SSAValue]]) -> list[SSAValue]:
        totals = []
        for values in rows:
            total = values[0]
            for v in values[1:]:
                total = b.emit(arith.AddfOp(total, v))
            totals.append(total)
        return [b.emit(arith.MulfOp(warp_allreduce(b, t, arith.AddfOp), inv_cols))
                for t in totals]

    xs = [[b.load_f32(src, [row, c]) for c in columns] for row in src_rows]
    means = row_sums(xs)
    centered = [[b.emit(arith.SubfOp(x, mean)) for x in row] for row, mean in zip(xs, means)]
    variances = row_sums([[b.emit(arith.MulfOp(d, d)) for d in row] for row in centered])
    for row, var, dst_row in zip(centered, variances, dst_rows, strict=True):
        rstd = b.emit(math.RsqrtOp(b.emit(arith.AddfOp(var, eps_value))))
        for d, c, g, shift in zip(row, columns, gammas, betas, strict=True):
            scaled = b.emit(arith.MulfOp(b.emit(arith.MulfOp(d, rstd)), g))
            y = b.emit(arith.AddfOp(scaled, shift))
            b.insert(memref.StoreOp.get(b.emit(arith.TruncFOp(y, f16)), dst, [dst_row, c]))


def layer_norm_module(cfg: LayerNormConfig) -> ModuleOp:
    """The bulk kernel: (X, gamma, beta, Y), block b normalizing rows b · warps .."""
    f16 = Float16Type()
    matrix, vector = MemRefType(f16, [cfg.rows, cfg.cols]), MemRefType(f16, [cfg.cols])

    def row(rb: BlockBuilder, args, row, lane) -> None:
        affine = load_affine(rb, args["gamma"], args["beta"], cfg.cols, lane)
        emit_layer_norm_rows(rb, args["X"], [row], args["Y"], [row], affine, lane, cfg.eps)

    return warp_per_row_module(cfg.name, [("X", matrix), ("gamma", vector), ("beta", vector),
                                          ("Y", matrix)], cfg.rows, cfg.warps, row)


__all__ = ["Affine", "emit_layer_norm_rows", "layer_norm_module", "load_affine"]

"""A Linear to one output over the rows of an fp16 matrix (NeRF's density head): a warp a row.

    row_dot_module(cfg: RowDotConfig) -> builtin.module
    weights = load_row_weights(b, w, cols, lane)
    emit_row_dots(b, src, src_rows, weights, bias, dst, dst_rows, lane)

Y[r] = X[r, :] · w + bias with fp32 products and sums: lane l of the row's warp takes columns
l, l + 32, ... (each load instruction of the warp reads 64 contiguous bytes, as the layer norm's
rows do), the row's sum is a warp sum (`warp_allreduce`), and lane 0 stores it. The row emitter
is shared by the bulk kernel and a pipeline stage that takes the dot of each row of the queue
entry it multiplies (kernels/mlp_pipeline.py), each lane loading its columns of w once.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import Float16Type, MemRefType, ModuleOp
from xdsl.ir import Block, Region, SSAValue

from tilesync.kernels.builder import BlockBuilder, warp_allreduce, warp_per_row_module
from tilesync.kernels.config import RowDotConfig

ROWS_AT_ONCE = 8
"""Rows whose loads a warp issues before their sums: 8 rows of 256 columns are 64 loads a lane
in flight, as many as the layer norm's 16 rows of 128."""


def load_row_weights(b: BlockBuilder, w: SSAValue, cols: int, lane: SSAValue
                     ) -> list[SSAValue]:
    """The lane's columns lane, lane + 32, ... of w (f32)."""
    if cols % 32:
        raise ValueError(f"a warp takes the dot of rows of a multiple of 32 columns, got {cols}")
    return [b.load_f32(w, [b.addi(lane, 32 * i)]) for i in range(cols // 32)]


def emit_row_dots(b: BlockBuilder, src: SSAValue, src_rows: Sequence[SSAValue],
                  weights: list[SSAValue], bias: SSAValue, dst: SSAValue,
                  dst_rows: Sequence[SSAValue], lane: SSAValue) -> None:
    """dst[dst_rows[i]] = src[src_rows[i], :] · w + bias (`weights`: the lane's columns of w,
    `bias` f32) by the warp of `lane`, ROWS_AT_ONCE rows' loads before their sums."""
    f16 = Float16Type()
    columns = [b.addi(lane, 32 * i) for i in range(len(weights))]
    pairs = list(zip(src_rows, dst_rows, strict=True))
    for start in range(0, len(pairs), ROWS_AT_ONCE):
        batch = pairs[start:start + ROWS_AT_ONCE]
        xs = [[b.load_f32(src, [row, c]) for c in columns] for row, _ in batch]
        for values, (_, dst_row) in zip(xs, batch, strict=True):
            total = b.mulf(values[0], weights[0])
            for x, w in zip(values[1:], weights[1:], strict=True):
                total = b.addf(total, b.mulf(x, w))
            total = b.addf(warp_allreduce(b, total, arith.AddfOp), bias)
            store = Block()
            sb = BlockBuilder(store)
            sb.insert(memref.StoreOp.get(sb.emit(arith.TruncFOp(total, f16)), dst, [dst_row]))
            sb.insert(scf.YieldOp())
            b.insert(scf.IfOp(b.emit(arith.CmpiOp(lane, b.idx(0), "eq")), [], Region(store)))


def row_dot_module(cfg: RowDotConfig) -> ModuleOp:
    """The bulk kernel: (X, w, bias, Y), block b taking rows b · warps .."""
    f16 = Float16Type()

    def row(rb: BlockBuilder, args, row, lane) -> None:
        emit_row_dots(rb, args["X"], [row], load_row_weights(rb, args["w"], cfg.cols, lane),
                      rb.load_f32(args["bias"], [rb.idx(0)]), args["Y"], [row], lane)

    return warp_per_row_module(cfg.name, [("X", MemRefType(f16, [cfg.rows, cfg.cols])),
                                          ("w", MemRefType(f16, [cfg.cols])),
                                          ("bias", MemRefType(f16, [1])),
                                          ("Y", MemRefType(f16, [cfg.rows]))],
                               cfg.rows, cfg.warps, row)


__all__ = ["ROWS_AT_ONCE", "emit_row_dots", "load_row_weights", "row_dot_module"]

"""Fused softmax (+ dropout) over the rows of an fp16 matrix: one warp per row.

    softmax_module(cfg: SoftmaxConfig) -> builtin.module

The configuration is kernels/config.py's SoftmaxConfig (softmax_config(rows, cols, dropout,
scale=...)).

Y[r, :] = dropout(softmax(X[r, :] · scale)) with fp32 math: lane l of the row's warp loads
columns l, l + 32, ... (each load instruction of the warp reads 64 contiguous bytes), takes the
row maximum and the sum of exp((x - max) · scale) (scale > 0, 1 unless set: attention's
1/sqrt(d)) with `tile.shuffle bfly` butterflies (shfl.sync.bfly.b32, 5 steps each), scales by
1 / sum, applies the GEMM epilogue's dropout hash of (seed, row, col)
(keep probability p, kept values scaled by 1/p), and stores fp16. `exp` is ex2.approx.ftz.
Blocks of `warps` warps take consecutive rows; rows past the end are skipped (warp-uniform).
cols must be a multiple of 32 (512 .. 2048 here: 16 .. 64 values per lane in registers).
`causal` (attention's mask): row r is query r mod cols of its sequence, and its columns past
that query are excluded (x = -inf before the maximum, so their exp and Y are 0; every row keeps
column 0) and not read (their lanes load the query's column).
With `sync_hooks` block b is `sync.tile` (b, 0) of a (blocks, 1) grid, so the cuSync passes can
make it wait for the rows it reads and post the rows it writes.
"""

from __future__ import annotations

from math import inf as math_inf

from xdsl.dialects import arith, gpu, math, memref, scf
from xdsl.dialects.builtin import Float16Type, MemRefType, ModuleOp, StringAttr, i32
from xdsl.ir import Block, Region

from tilesync.dialects import sync
from tilesync.kernels.builder import BlockBuilder, warp_allreduce
from tilesync.kernels.config import SoftmaxConfig
from tilesync.kernels.gemm import dropout_op


def softmax_module(cfg: SoftmaxConfig) -> ModuleOp:
    f16 = Float16Type()
    x_type = MemRefType(f16, [cfg.rows, cfg.cols])
    inputs = [x_type, x_type] + ([i32] if cfg.dropout is not None else [])
    kernel = gpu.FuncOp(cfg.name, (inputs, []), kernel=True, known_block_size=list(cfg.block))
    entry = kernel.body.block
    X, Y = entry.args[:2]
    X.name_hint, Y.name_hint = "X", "Y"
    seed = entry.args[2] if cfg.dropout is not None else None
    if seed is not None:
        seed.name_hint = "seed"
    b = BlockBuilder(entry)
    tid = b.emit(gpu.ThreadIdOp(gpu.DimensionAttr(gpu.DimensionEnum.X)))
    if cfg.sync_hooks:
        bid, tile_y = b.insert(sync.TileOp(rank=2)).results
        # outside the row guard: a wait ends with a barrier every thread of the block reaches
        b.insert(sync.LoadPointOp(0, [bid, tile_y]))
    else:
        bid = b.emit(gpu.BlockIdOp(gpu.DimensionAttr(gpu.DimensionEnum.X)))
    lane = b.remui(tid, 32)
    row = b.addi(b.muli(bid, cfg.warps), b.divui(tid, 32))

    body_block = Block()
    rb = BlockBuilder(body_block)
    per_lane = cfg.cols // 32
    cols = [rb.addi(lane, 32 * i) for i in range(per_lane)]
    if not cfg.causal:
        xs = [rb.load_f32(X, [row, c]) for c in cols]
    else:  # keys past the row's query weigh exp(-inf) = 0; their lanes read the query's
        # column instead (a line the row reads anyway), so S past the diagonal, which q · kᵀ
        # may not have written, costs no memory traffic
        query = rb.remui(row, cfg.cols)
        excluded = rb.f32(-math_inf)
        xs = []
        for c in cols:
            kept = rb.emit(arith.CmpiOp(c, query, "ule"))
            x = rb.load_f32(X, [row, rb.emit(arith.MinUIOp(c, query))])
            xs.append(rb.emit(arith.SelectOp(kept, x, excluded)))

    m = xs[0]
    for x in xs[1:]:
        m = rb.emit(arith.MaxnumfOp(m, x))
    m = warp_allreduce(rb, m, arith.MaxnumfOp)
    # max(x · s) = max(x) · s for s > 0; scale 1 emits exactly the unscaled kernel
    scale = rb.f32(cfg.scale) if cfg.scale != 1.0 else None

    def scaled_exp(x):
        shifted = rb.emit(arith.SubfOp(x, m))
        if scale is not None:
            shifted = rb.emit(arith.MulfOp(shifted, scale))
        return rb.emit(math.ExpOp(shifted))

    es = [scaled_exp(x) for x in xs]
    total = es[0]
    for e in es[1:]:
        total = rb.emit(arith.AddfOp(total, e))
    total = warp_allreduce(rb, total, arith.AddfOp)
    inv = rb.emit(arith.DivfOp(rb.f32(1.0), total))
    for e, c in zip(es, cols, strict=True):
        y = rb.emit(arith.MulfOp(e, inv))
        if cfg.dropout is not None:
            assert seed is not None
            y = dropout_op(rb, cfg.dropout, y, row, c, seed)
        rb.insert(memref.StoreOp.get(rb.emit(arith.TruncFOp(y, f16)), Y, [row, c]))
    rb.insert(scf.YieldOp())
    b.insert(scf.IfOp(b.ult(row, cfg.rows), [], Region(body_block)))
    if cfg.sync_hooks:
        b.insert(sync.StorePointOp([bid, tile_y]))
    b.insert(gpu.ReturnOp([]))
    module = gpu.ModuleOp(StringAttr(f"{cfg.name}_module"), Region(Block([kernel])))  # type: ignore[arg-type]
    return ModuleOp([module])


__all__ = ["softmax_module"]

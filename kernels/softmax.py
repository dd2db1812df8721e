"""Fused softmax (+ dropout) over the rows of an fp16 matrix: one warp per row.

    softmax_config(rows, cols, dropout=None) -> SoftmaxConfig
    softmax_module(cfg) -> builtin.module       compile_softmax / SoftmaxRunner / reference

Y[r, :] = dropout(softmax(X[r, :])) with fp32 math: lane l of the row's warp loads columns
l, l + 32, ... (each load instruction of the warp reads 64 contiguous bytes), takes the row
maximum and the sum of exp(x - max) with `tile.shuffle bfly` butterflies (shfl.sync.bfly.b32,
5 steps each), scales by 1 / sum, applies the GEMM epilogue's dropout hash of (seed, row, col)
(keep probability p, kept values scaled by 1/p), and stores fp16. `exp` is ex2.approx.ftz.
Blocks of `warps` warps take consecutive rows; rows past the end are skipped (warp-uniform).
cols must be a multiple of 32 (512 .. 2048 here: 16 .. 64 values per lane in registers).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, gpu, math, memref, scf
from xdsl.dialects.builtin import Float16Type, MemRefType, ModuleOp, StringAttr, f32, i32
from xdsl.ir import Block, Region

from tilesync.dialects import tile as tl
from tilesync.kernels import gemm as g


@dataclass(frozen=True)
class SoftmaxConfig:
    rows: int
    cols: int
    dropout: float | None = None
    warps: int = 4
    name: str = "softmax"

    def __post_init__(self) -> None:
        if self.rows <= 0 or self.cols <= 0 or self.cols % 32 or self.cols > 4096:
            raise ValueError(f"cols must be a multiple of 32 up to 4096 and rows positive, got "
                             f"{self.rows} x {self.cols}")
        if self.dropout is not None and not 0.0 < self.dropout <= 1.0:
            raise ValueError(f"dropout keep probability must be in (0, 1], got {self.dropout}")

    @property
    def block(self) -> tuple[int, int, int]:
        return (32 * self.warps, 1, 1)

    @property
    def grid(self) -> tuple[int, int, int]:
        return (-(-self.rows // self.warps), 1, 1)

    @property
    def signature(self) -> tuple[str, ...]:
        return ("ptr", "ptr") + (("i32",) if self.dropout is not None else ())

    @property
    def bytes(self) -> int:
        return 2 * 2 * self.rows * self.cols

    def compile(self, target: str = "sm_90"):
        return compile_softmax(self, target)


def softmax_config(rows: int, cols: int, dropout: float | None = None, warps: int = 4,
                   name: str = "softmax") -> SoftmaxConfig:
    return SoftmaxConfig(rows, cols, dropout, warps, name)


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
    b = g._Body(entry)
    tid = b.v(gpu.ThreadIdOp(gpu.DimensionAttr(gpu.DimensionEnum.X)))
    bid = b.v(gpu.BlockIdOp(gpu.DimensionAttr(gpu.DimensionEnum.X)))
    lane = b.remui(tid, 32)
    row = b.addi(b.muli(bid, cfg.warps), b.divui(tid, 32))

    body_block = Block()
    rb = g._Body(body_block)
    per_lane = cfg.cols // 32
    cols = [rb.addi(lane, 32 * i) for i in range(per_lane)]
    xs = [rb.v(arith.ExtFOp(rb.v(memref.LoadOp.get(X, [row, c])), f32)) for c in cols]

    def warp_reduce(value, combine):
        for offset in (16, 8, 4, 2, 1):
            other = rb.v(tl.ShuffleOp("bfly", value, offset))
            value = rb.v(combine(value, other))
        return value

    m = xs[0]
    for x in xs[1:]:
        m = rb.v(arith.MaxnumfOp(m, x))
    m = warp_reduce(m, arith.MaxnumfOp)
    es = [rb.v(math.ExpOp(rb.v(arith.SubfOp(x, m)))) for x in xs]
    total = es[0]
    for e in es[1:]:
        total = rb.v(arith.AddfOp(total, e))
    total = warp_reduce(total, arith.AddfOp)
    inv = rb.v(arith.DivfOp(rb.f32(1.0), total))
    for e, c in zip(es, cols, strict=True):
        y = rb.v(arith.MulfOp(e, inv))
        if cfg.dropout is not None:
            assert seed is not None
            y = g.dropout_op(rb, cfg.dropout, y, row, c, seed)
        rb.add(memref.StoreOp.get(rb.v(arith.TruncFOp(y, f16)), Y, [row, c]))
    rb.add(scf.YieldOp())
    b.add(scf.IfOp(b.ult(row, cfg.rows), [], Region(body_block)))
    b.add(gpu.ReturnOp([]))
    module = gpu.ModuleOp(StringAttr(f"{cfg.name}_module"), Region(Block([kernel])))  # type: ignore[arg-type]
    return ModuleOp([module])


def compile_softmax(cfg: SoftmaxConfig, target: str = "sm_90", validate: bool = False):
    import tilesync

    return tilesync.compile(softmax_module(cfg), pipeline=g.gemm_pipeline(), target=target,
                            validate=validate)


def reference(cfg: SoftmaxConfig, x, seed: int | None = None):
    """float64 numpy softmax over rows, then the kernel's dropout mask."""
    import numpy as np

    x = np.asarray(x, np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    y = e / e.sum(axis=1, keepdims=True)
    if cfg.dropout is not None:
        if seed is None:
            raise ValueError("the reference of a dropout softmax needs seed=")
        y = y * g.dropout_mask(seed, cfg.rows, cfg.cols, cfg.dropout) / cfg.dropout
    return y


class SoftmaxRunner:
    def __init__(self, cfg: SoftmaxConfig, ptx: str | None = None):
        from tilesync.runtime.device import get_device
        from tilesync.runtime.module import load_ptx

        self.cfg = cfg
        if ptx is None:
            ptx = compile_softmax(cfg, get_device().arch).ptx
        self.module = load_ptx(ptx, cfg.name)
        self.kernel = self.module.function(cfg.name, cfg.signature)

    def launch(self, x, y, seed: int | None = None, stream=None) -> None:
        from tilesync.runtime.launch import launch

        args = [x, y] + ([int(seed if seed is not None else 0)] if self.cfg.dropout else [])
        launch(self.kernel, self.cfg.grid, self.cfg.block, args, stream=stream)


__all__ = ["SoftmaxConfig", "SoftmaxRunner", "compile_softmax", "reference", "softmax_config",
           "softmax_module"]

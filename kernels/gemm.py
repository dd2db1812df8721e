"""A tensor-core GEMM generated through the tile dialect: C = epilogue(A @ B).

    gemm_module(M, N, K, ...) -> builtin.module   (built with xDSL's IR classes, no text)
    gemm_kernel(M, N, K, ...) -> str               (the same module printed as MLIR)
    gemm_config(M, N, K, ...) -> GemmConfig        (grid, block, shared memory, signature)

Block (x, y) computes the BM x BN tile (x, y) of C (x along M) with WM x WN warps (each a
(BM/WM) x (BN/WN) warp tile of m16n8k16 mma.sync, fp32 accumulators in registers). The K loop
is a `stages`-deep cp.async pipeline into XOR-swizzled shared memory (CUTLASS's sm80 multistage
order):

    prologue: copy k-tiles 0 .. S-2 into stages 0 .. S-2, one commit group each
    for kt in 0 .. KT-1:
        cp.async.wait_group S-2; bar.sync          (k-tile kt is in stage kt % S for everyone,
                                                   and stage (kt-1) % S is no longer read)
        if kt + S - 1 < KT: copy k-tile kt+S-1 into stage (kt+S-1) % S;  commit
        for each k16 step: ldmatrix A (x4) and B (x4, .trans for a row-major B); mma.sync
    store the accumulators through the epilogue (none, bias, gelu, bias_gelu)

With `mma="wgmma"` (sm_90a) the warps form BM/64 warpgroups, each multiplying its 64 rows by
the whole BN-wide tile with `wgmma.mma_async` straight from shared memory (K-major 128-byte
swizzled rows, BK = 64, B column-major). One wgmma group stays in flight while the next
k-tile's copies are issued, so the copies run S-2 k-tiles ahead:

    for kt in 0 .. KT-1:
        cp.async.wait_group S-3; fence.proxy.async; bar.sync
        if kt + S - 2 < KT: copy k-tile kt+S-2 into stage (kt+S-2) % S (read by the group of
                            kt-2, finished: at most one group is pending);  commit
        wgmma.fence; 4 x wgmma m64nBNk16; wgmma.commit_group; wgmma.wait_group 1
    wgmma.wait_group 0; store as above (the accumulators have mma.sync's m16n8 layout)

Stages beyond 48 KiB of shared memory live in dynamic shared memory (the launch passes
`dynamic_shared_bytes`).

Layouts: A is M x K row-major; B is K x N row-major (`b_layout="row"`) or N x K row-major
(`"col"`, i.e. B column-major as a K x N matrix); C (and the result of the epilogue) is M x N
row-major of the input type; bias has N elements. Kernel parameters: A, B, C[, bias] as
pointers. M, N and K are compiled in. Edges (M, N, K not multiples of the tile) are handled by
zero-filling cp.async (`masked`) and predicated stores; K (and N for a row-major B) must be a
multiple of 8 so every 16-byte row chunk is aligned, as cuBLAS-style kernels require.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from xdsl.dialects import arith, gpu, math, memref, scf
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    UnitAttr,
    f32,
    i32,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from tilesync.contract import (
    DYNAMIC_SHARED_ATTR,
    DYNAMIC_SHARED_BASE_ALIGNMENT,
    SM_90,
    STATIC_SHARED_LIMIT,
)
from tilesync.dialects import sync
from tilesync.dialects import tile as tl

EPILOGUES = (None, "bias", "gelu", "bias_gelu", "swiglu")
DTYPES = {"f16": Float16Type, "bf16": BFloat16Type}
# Dynamic shared memory a block may opt in to on sm_90 (sm_80: 163 KiB, checked at launch).
MAX_SHARED_PER_BLOCK = SM_90.max_shared_per_block

_GELU_C = 0.7978845608028654  # sqrt(2 / pi)
_GELU_K = 0.044715


@dataclass(frozen=True)
class GemmConfig:
    M: int
    N: int
    K: int
    tile: tuple[int, int, int] = (128, 128, 32)
    warps: tuple[int, int] = (2, 2)
    stages: int = 3
    dtype: str = "f16"
    b_layout: str = "row"
    epilogue: str | None = None
    name: str = "gemm"
    sync_hooks: bool = False
    """Take the tile from `sync.tile` and mark loads/stores with `sync.load_point operand 0|1
    [x, y] step k` (before k-tile k's copies) and `sync.store_point [x, y]` (after the tile is
    stored), for the cuSync passes to fill. Without, the tile is the block id (same mapping).
    With split_k > 1 the store point sits in the branch of the slice that finishes the tile
    (the last arrival on the tile's counter): only it has the final values to publish."""
    split_k: int = 1
    """Slices of the K loop (grid z). Each slice reduces k_tiles / split_k k-tiles and adds its
    fp32 partial tile into a workspace (`red.add.f32`; the workspace is zero at the first launch
    and left zero by every launch); a per-tile arrival counter picks the last slice, which takes
    the sums (atomic exchange with 0), applies the epilogue and stores C."""
    dropout: float | None = None
    """Keep probability p of a dropout after the epilogue: element (r, c) is kept iff
    dropout_hash(seed, r, c) < p * 2^32 and then scaled by 1/p; `seed` is a kernel argument."""
    dynamic_shared: bool = False
    """Put the stages in dynamic shared memory even when they fit the 48 KiB of static shared
    memory (leaving that to other static shared data, e.g. an ordered sync.tile's slot)."""
    mma: str = "sync"
    """`sync`: warps multiply with mma.sync m16n8k16 from ldmatrix fragments (sm_80+).
    `wgmma`: warpgroups multiply with wgmma m64nBNk16 straight from shared memory (sm_90a):
    warps = (BM / 16, 1) (warpgroup g computes rows 64 g .. 64 g + 63 of the tile), BK = 64
    (128-byte rows, the 128-byte swizzle wgmma reads), B column-major (K-major)."""
    wgmma_in_flight: int = 1
    """wgmma groups left running while the next k-tile's copies are issued (0 or 1); with 1 the
    copies run stages - 2 k-tiles ahead instead of stages - 1."""

    def __post_init__(self) -> None:
        bm, bn, bk = self.tile
        wm, wn = self.warps
        if min(self.M, self.N, self.K) <= 0:
            raise ValueError(f"M, N, K must be positive, got {self.M}, {self.N}, {self.K}")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {self.dtype!r}")
        if self.b_layout not in ("row", "col"):
            raise ValueError(f"b_layout must be 'row' or 'col', got {self.b_layout!r}")
        if self.epilogue not in EPILOGUES:
            raise ValueError(f"epilogue must be one of {EPILOGUES}, got {self.epilogue!r}")
        if self.epilogue == "swiglu" and (self.N % 16 or bn % (16 * wn)):
            raise ValueError("swiglu pairs 8-column gate/up blocks: N and the warp tile's "
                             f"width must be multiples of 16, got N={self.N} tile={self.tile}")
        if self.dropout is not None and not 0.0 < self.dropout <= 1.0:
            raise ValueError(f"dropout keep probability must be in (0, 1], got {self.dropout}")
        if self.split_k < 1 or self.k_tiles % self.split_k:
            raise ValueError(
                f"split_k={self.split_k} must divide the {self.k_tiles} k-tiles of K={self.K} "
                f"(BK={bk})"
            )
        if self.K % 8 or (self.b_layout == "row" and self.N % 8):
            raise ValueError(
                "K (and N for a row-major B) must be a multiple of 8: cp.async copies aligned "
                f"16-byte chunks; got M={self.M} N={self.N} K={self.K} b_layout={self.b_layout}"
            )
        if bm % (16 * wm) or bn % (16 * wn) or bm < 16:
            raise ValueError(
                f"tile {self.tile} does not split into {wm}x{wn} warp tiles of 16x16 multiples"
            )
        if bk % 16 or bk * 2 not in (32, 64, 128, 256):
            raise ValueError(f"BK must be 16, 32, 64 or 128, got {bk}")
        if self.b_layout == "row" and bn * 2 not in (32, 64, 128, 256, 512):
            # shared B rows are BN long: the swizzle needs a power of two of 16-byte chunks
            raise ValueError(f"BN must be a power of two from 16 to 256 for a row-major B, "
                             f"got {bn}")
        if self.stages < 2:
            raise ValueError(f"stages must be at least 2, got {self.stages}")
        if self.prefetch > 8:
            raise ValueError(f"{self.stages} stages keep {self.prefetch} k-tiles in flight; "
                             "cp.async.wait_group counts at most 7 pending groups (8 in flight)")
        if self.mma not in ("sync", "wgmma"):
            raise ValueError(f"mma must be 'sync' or 'wgmma', got {self.mma!r}")
        if self.mma == "wgmma":
            if bk * 2 != 128 or self.b_layout != "col" or bm % 64 or self.warps != (bm // 16, 1):
                raise ValueError(
                    "wgmma reads K-major 128-byte rows: it needs BK = 64, b_layout='col', BM a "
                    f"multiple of 64 and warps = (BM / 16, 1); got tile={self.tile} "
                    f"warps={self.warps} b_layout={self.b_layout!r}"
                )
            if bn % 8 or bn > 256 or self.wgmma_in_flight not in (0, 1):
                raise ValueError(f"wgmma needs BN a multiple of 8 up to 256 and "
                                 f"wgmma_in_flight 0 or 1, got {self.tile}, "
                                 f"{self.wgmma_in_flight}")
            if self.stages < 2 + self.wgmma_in_flight:
                raise ValueError(f"wgmma with {self.wgmma_in_flight} group in flight needs "
                                 f"at least {2 + self.wgmma_in_flight} stages")
        if self.shared_bytes + self.stage_alignment > MAX_SHARED_PER_BLOCK:
            raise ValueError(
                f"{self.shared_bytes} bytes of shared memory for {self.stages} stages of "
                f"{self.tile}: more than the {MAX_SHARED_PER_BLOCK} a block can have; use "
                "fewer stages or a smaller tile"
            )

    @property
    def prefetch(self) -> int:
        """k-tiles the copies run ahead of the multiply."""
        in_flight = self.wgmma_in_flight if self.mma == "wgmma" else 0
        return self.stages - 1 - in_flight

    @property
    def target(self) -> str | None:
        """The PTX target the kernel needs beyond the device's own (wgmma: sm_90a)."""
        return "sm_90a" if self.mma == "wgmma" else None

    @property
    def threads(self) -> int:
        return 32 * self.warps[0] * self.warps[1]

    @property
    def block(self) -> tuple[int, int, int]:
        return (self.threads, 1, 1)

    @property
    def grid(self) -> tuple[int, int, int]:
        bm, bn, _ = self.tile
        # x: tile row (M), y: tile column, z: split-K slice
        return (-(-self.M // bm), -(-self.N // bn), self.split_k)

    @property
    def out_cols(self) -> int:
        """Columns of C: N, or N / 2 for swiglu (gate and up columns combine)."""
        return self.N // 2 if self.epilogue == "swiglu" else self.N

    @property
    def params(self) -> tuple[str, ...]:
        """Kernel parameters in order: A, B, C[, bias][, seed][, workspace, counters]."""
        names = ["A", "B", "C"]
        if self.has_bias:
            names.append("bias")
        if self.dropout is not None:
            names.append("seed")
        if self.split_k > 1:
            names += ["workspace", "counters"]
        return tuple(names)

    @property
    def k_tiles(self) -> int:
        return -(-self.K // self.tile[2])

    @property
    def shared_bytes(self) -> int:
        bm, bn, bk = self.tile
        return self.stages * (bm * bk + bk * bn) * 2

    @property
    def dynamic_shared_bytes(self) -> int:
        """Shared memory passed at launch: the stages live in dynamic shared memory when they
        do not fit the 48 KiB of static shared memory, else 0 (static)."""
        dynamic = self.dynamic_shared or self.shared_bytes > STATIC_SHARED_LIMIT
        if not dynamic:
            return 0
        # the dynamic array is only 16-byte aligned: room to round its start up
        return self.shared_bytes + self.stage_alignment - DYNAMIC_SHARED_BASE_ALIGNMENT

    @property
    def stage_alignment(self) -> int:
        """Alignment of the stage buffers: wgmma's swizzle atoms are 8 rows x 128 bytes from a
        1024-byte aligned base; cp.async/ldmatrix need 16 bytes (128 keeps rows on lines)."""
        return 1024 if self.mma == "wgmma" else 128

    @property
    def kernel_name(self) -> str:
        return self.name

    @property
    def signature(self) -> tuple[str, ...]:
        return tuple("i32" if p == "seed" else "ptr" for p in self.params)

    @property
    def workspace_shape(self) -> tuple[int, int]:
        """fp32 partial sums of split-K (zero before the first launch)."""
        return (self.M, self.N)

    @property
    def counters_shape(self) -> tuple[int, int]:
        """i32 arrival counters of split-K, one per output tile (zero before the first launch)."""
        return self.grid[:2]

    @property
    def has_bias(self) -> bool:
        return self.epilogue in ("bias", "bias_gelu")

    @property
    def flops(self) -> int:
        return 2 * self.M * self.N * self.K

    @cached_property
    def element_type(self) -> Attribute:
        return DTYPES[self.dtype]()


def gemm_config(M: int, N: int, K: int, tile=(128, 128, 32), warps=(2, 2), stages: int = 3,
                dtype: str = "f16", b_layout: str = "row", epilogue: str | None = None,
                name: str = "gemm", sync_hooks: bool = False, split_k: int = 1,
                dropout: float | None = None, dynamic_shared: bool = False,
                mma: str = "sync", wgmma_in_flight: int = 1) -> GemmConfig:
    return GemmConfig(M, N, K, tuple(tile), tuple(warps), stages, dtype, b_layout, epilogue,
                      name, sync_hooks, split_k, dropout, dynamic_shared, mma, wgmma_in_flight)


# --------------------------------------------------------------------------------------------
# A small IR builder: ops appended to a block, values returned
# --------------------------------------------------------------------------------------------


class _Body:
    def __init__(self, block: Block):
        self.block = block
        self._consts: dict[int, SSAValue] = {}

    def add(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def v(self, op: Operation) -> SSAValue:
        return self.add(op).results[0]

    def idx(self, value: int) -> SSAValue:
        """An index constant (one per value and block)."""
        if value not in self._consts:
            self._consts[value] = self.v(arith.ConstantOp(IntegerAttr(value, IndexType())))
        return self._consts[value]

    def f32(self, value: float) -> SSAValue:
        return self.v(arith.ConstantOp(FloatAttr(value, f32)))

    def _int(self, kind, lhs: SSAValue | int, rhs: SSAValue | int) -> SSAValue:
        lhs = self.idx(lhs) if isinstance(lhs, int) else lhs
        rhs = self.idx(rhs) if isinstance(rhs, int) else rhs
        return self.v(kind(lhs, rhs))

    def addi(self, lhs, rhs):
        if isinstance(rhs, int) and rhs == 0:
            return lhs
        return self._int(arith.AddiOp, lhs, rhs)

    def muli(self, lhs, rhs):
        if isinstance(rhs, int) and rhs == 1:
            return lhs
        return self._int(arith.MuliOp, lhs, rhs)

    def divui(self, lhs, rhs):
        return self._int(arith.DivUIOp, lhs, rhs)

    def remui(self, lhs, rhs):
        return self._int(arith.RemUIOp, lhs, rhs)

    def ult(self, lhs, rhs) -> SSAValue:
        rhs = self.idx(rhs) if isinstance(rhs, int) else rhs
        return self.v(arith.CmpiOp(lhs, rhs, "ult"))


def _frag(role: str, element: Attribute) -> tl.FragType:
    return tl.FragType(role, element, "m16n8k16")


# --------------------------------------------------------------------------------------------
# The generator
# --------------------------------------------------------------------------------------------


# Dropout's counter-based hash (also in numpy: dropout_mask), on u32 with wrapping products.
_HASH_M1, _HASH_M2 = 0x7FEB352D, 0x846CA68B  # "lowbias32" (Chris Wellons' hash prospector)


def _u32_mix(b: _Body, x: SSAValue) -> SSAValue:
    def c(v: int) -> SSAValue:
        return b.v(arith.ConstantOp(IntegerAttr(v - (1 << 32) if v >= 1 << 31 else v, i32)))

    x = b.v(arith.XOrIOp(x, b.v(arith.ShRUIOp(x, c(16)))))
    x = b.v(arith.MuliOp(x, c(_HASH_M1)))
    x = b.v(arith.XOrIOp(x, b.v(arith.ShRUIOp(x, c(15)))))
    x = b.v(arith.MuliOp(x, c(_HASH_M2)))
    return b.v(arith.XOrIOp(x, b.v(arith.ShRUIOp(x, c(16)))))


def dropout_threshold(keep: float) -> int:
    """Elements with hash < threshold are kept (u32; p = 1 keeps everything)."""
    return min(round(keep * 2**32), 2**32 - 1) if keep < 1.0 else 2**32 - 1


def dropout_op(b: _Body, keep_prob: float, value: SSAValue, row: SSAValue, col: SSAValue,
               seed: SSAValue) -> SSAValue:
    """keep ? value / p : 0 with keep = mix(col ^ mix(row ^ mix(seed))) < p 2^32 (row, col:
    index; seed: i32), the ops appended to `b`."""
    r32 = b.v(arith.IndexCastOp(row, i32))
    c32 = b.v(arith.IndexCastOp(col, i32))
    h = _u32_mix(b, b.v(arith.XOrIOp(r32, _u32_mix(b, seed))))
    h = _u32_mix(b, b.v(arith.XOrIOp(c32, h)))
    if keep_prob >= 1.0:
        return value
    t = dropout_threshold(keep_prob)
    threshold = b.v(arith.ConstantOp(IntegerAttr(t - (1 << 32) if t >= 1 << 31 else t, i32)))
    keep = b.v(arith.CmpiOp(h, threshold, "ult"))
    scaled = b.v(arith.MulfOp(value, b.f32(1.0 / keep_prob)))
    return b.v(arith.SelectOp(keep, scaled, b.f32(0.0)))


def _epilogue_region(cfg: GemmConfig, bias: SSAValue | None,
                     seed: SSAValue | None = None) -> Region | None:
    if cfg.epilogue is None and cfg.dropout is None:
        return None
    swiglu = cfg.epilogue == "swiglu"
    block = tl.epilogue_block(2 if swiglu else 1)
    b = _Body(block)
    *values, row, col = block.args
    value = values[0]
    if swiglu:
        # silu(gate) * up = gate / (1 + exp(-gate)) * up
        gate, up = values
        e = b.v(math.ExpOp(b.v(arith.NegfOp(gate))))
        silu = b.v(arith.DivfOp(gate, b.v(arith.AddfOp(e, b.f32(1.0)))))
        value = b.v(arith.MulfOp(silu, up))
    if cfg.has_bias:
        assert bias is not None
        loaded = b.v(memref.LoadOp.get(bias, [col]))
        value = b.v(arith.AddfOp(value, b.v(arith.ExtFOp(loaded, f32))))
    if cfg.epilogue in ("gelu", "bias_gelu"):
        # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))  (GPT-2/3's tanh approximation)
        x = value
        x3 = b.v(arith.MulfOp(b.v(arith.MulfOp(x, x)), x))
        inner = b.v(arith.AddfOp(x, b.v(arith.MulfOp(x3, b.f32(_GELU_K)))))
        t = b.v(math.TanhOp(b.v(arith.MulfOp(inner, b.f32(_GELU_C)))))
        half_x = b.v(arith.MulfOp(x, b.f32(0.5)))
        value = b.v(arith.AddfOp(half_x, b.v(arith.MulfOp(half_x, t))))
    if cfg.dropout is not None:
        assert seed is not None
        value = dropout_op(b, cfg.dropout, value, row, col, seed)
    b.add(tl.YieldOp(value))
    return Region(block)


def _shared_global(name: str, type_: MemRefType, dynamic: bool = False,
                   alignment: int = 128) -> memref.GlobalOp:
    op = memref.GlobalOp.get(StringAttr(name), type_, UnitAttr(), alignment=alignment)
    if dynamic:
        op.attributes[DYNAMIC_SHARED_ATTR] = UnitAttr()
    return op


ASource = Callable[[_Body, SSAValue, SSAValue], tuple[list[SSAValue], bool]]
"""(body, row of A (global m), column of A (global k)) -> (source indices, masked)."""


def gemm_module(M: int, N: int, K: int, tile=(128, 128, 32), warps=(2, 2),
                stages: int = 3, dtype: str = "f16", b_layout: str = "row",
                epilogue: str | None = None, name: str = "gemm", sync_hooks: bool = False, *,
                config: GemmConfig | None = None, a_type: MemRefType | None = None,
                a_source: ASource | None = None) -> ModuleOp:
    """The GEMM as a builtin.module holding one gpu.module with one kernel.

    `a_type` / `a_source` replace the A operand and how a 16-byte chunk of the logical M x K
    A is addressed in it (conv2d's implicit im2col)."""
    cfg = config or gemm_config(M, N, K, tile, warps, stages, dtype, b_layout, epilogue, name,
                                sync_hooks)
    elem = cfg.element_type
    bm, bn, bk = cfg.tile
    wm_count, wn_count = cfg.warps
    wtm, wtn = bm // wm_count, bn // wn_count  # warp tile
    mi_count, ni_count = wtm // 16, wtn // 8
    S = cfg.stages
    split = cfg.split_k
    per_slice = cfg.k_tiles // split
    swiglu = cfg.epilogue == "swiglu"

    b_logical = [cfg.K, cfg.N] if cfg.b_layout == "row" else [cfg.N, cfg.K]
    logical_a = MemRefType(elem, [cfg.M, cfg.K])
    logical_b = MemRefType(elem, b_logical)
    c_type = MemRefType(elem, [cfg.M, cfg.out_cols])
    inputs: list[Attribute] = [a_type or logical_a, logical_b, c_type]
    if cfg.has_bias:
        inputs.append(MemRefType(elem, [cfg.out_cols]))
    if cfg.dropout is not None:
        inputs.append(i32)
    if split > 1:
        inputs.append(MemRefType(f32, list(cfg.workspace_shape)))
        inputs.append(MemRefType(i32, list(cfg.counters_shape)))
    sa_type = MemRefType(elem, [S, bm, bk], memory_space=IntegerAttr(3, 64))
    sb_shape = [S, bk, bn] if cfg.b_layout == "row" else [S, bn, bk]
    sb_type = MemRefType(elem, sb_shape, memory_space=IntegerAttr(3, 64))
    swizzle_a = tl.swizzle_for_row(bk)
    swizzle_b = tl.swizzle_for_row(sb_shape[-1])
    dynamic = cfg.dynamic_shared_bytes > 0
    wgmma = cfg.mma == "wgmma"
    # wgmma's swizzle atoms are 8 rows x 128 bytes from a 1024-byte aligned base
    align = cfg.stage_alignment

    kernel = gpu.FuncOp(cfg.kernel_name, (inputs, []), kernel=True,
                        known_block_size=list(cfg.block))
    entry = kernel.body.block
    args = dict(zip(cfg.params, entry.args, strict=True))
    for hint, arg in args.items():
        arg.name_hint = hint
    A, B, C = args["A"], args["B"], args["C"]
    bias, seed = args.get("bias"), args.get("seed")
    b = _Body(entry)

    tid = b.v(gpu.ThreadIdOp(gpu.DimensionAttr(gpu.DimensionEnum.X)))
    if cfg.sync_hooks:
        tile_x, tile_y = b.add(sync.TileOp(rank=2)).results
    else:
        tile_x = b.v(gpu.BlockIdOp(gpu.DimensionAttr(gpu.DimensionEnum.X)))
        tile_y = b.v(gpu.BlockIdOp(gpu.DimensionAttr(gpu.DimensionEnum.Y)))
    m0 = b.muli(tile_x, bm)
    n0 = b.muli(tile_y, bn)
    k_begin = None
    if split > 1:
        slice_z = b.v(gpu.BlockIdOp(gpu.DimensionAttr(gpu.DimensionEnum.Z)))
        k_begin = b.muli(slice_z, per_slice)
    warp = b.divui(tid, 32)
    warp_m = b.muli(b.divui(warp, wn_count), wtm)
    warp_n = b.muli(b.remui(warp, wn_count), wtn)
    sa = b.v(memref.GetGlobalOp("smem_a", sa_type))
    sb = b.v(memref.GetGlobalOp("smem_b", sb_type))

    mask_a = cfg.M % bm != 0 or cfg.K % bk != 0
    mask_b = cfg.N % bn != 0 or cfg.K % bk != 0
    mask_c = cfg.M % bm != 0 or cfg.N % bn != 0

    def default_a(body: _Body, row: SSAValue, col: SSAValue) -> tuple[list[SSAValue], bool]:
        return [row, col], mask_a

    source_a = a_source or default_a

    def copy_chunks(body: _Body, elems: int, per_row_elems: int, emit) -> None:
        """Thread t copies 16-byte chunks t, t + threads, ... of a tile (guarded when the
        chunks do not divide among the threads)."""
        chunks = elems // 8
        per_row = per_row_elems // 8
        for i in range(-(-chunks // cfg.threads)):
            chunk = body.addi(tid, i * cfg.threads)
            if (i + 1) * cfg.threads <= chunks:
                emit(body, body.divui(chunk, per_row), body.muli(body.remui(chunk, per_row), 8))
                continue
            guarded = Block()
            gb = _Body(guarded)
            emit(gb, gb.divui(chunk, per_row), gb.muli(gb.remui(chunk, per_row), 8))
            gb.add(scf.YieldOp())
            body.add(scf.IfOp(body.ult(chunk, chunks), [], Region(guarded)))

    def load_tile(body: _Body, k_tile: SSAValue, stage: SSAValue) -> None:
        k0 = body.muli(k_tile, bk)
        if cfg.sync_hooks:
            body.add(sync.LoadPointOp(0, [tile_x, tile_y], k_tile))

        def copy_a(cb: _Body, row: SSAValue, col: SSAValue) -> None:
            indices, masked = source_a(cb, cb.addi(m0, row), cb.addi(k0, col))
            cb.add(tl.CpAsyncOp(sa, [stage, row, col], A, indices, masked=masked,
                                swizzle=swizzle_a))

        copy_chunks(body, bm * bk, bk, copy_a)  # A: BM rows of BK elements
        if cfg.sync_hooks:
            body.add(sync.LoadPointOp(1, [tile_x, tile_y], k_tile))

        def copy_b(cb: _Body, row: SSAValue, col: SSAValue) -> None:
            if cfg.b_layout == "row":  # smem k x n
                src = [cb.addi(k0, row), cb.addi(n0, col)]
            else:  # smem n x k
                src = [cb.addi(n0, row), cb.addi(k0, col)]
            cb.add(tl.CpAsyncOp(sb, [stage, row, col], B, src, masked=mask_b,
                                swizzle=swizzle_b))

        copy_chunks(body, bk * bn, sb_shape[2], copy_b)

    def global_k(body: _Body, local: SSAValue | int) -> SSAValue:
        local_v = body.idx(local) if isinstance(local, int) else local
        return local_v if k_begin is None else body.addi(k_begin, local_v)

    # Prologue: k-tiles 0 .. P-1 (those that exist), one commit group per stage regardless.
    P = cfg.prefetch
    for s in range(P):
        if s < per_slice:
            load_tile(b, global_k(b, s), b.idx(s))
        b.add(tl.CpAsyncCommitOp())

    acc_type = _frag("acc", f32)
    zero = b.v(tl.FillOp(b.f32(0.0), acc_type))
    accs = [zero] * (mi_count * ni_count)

    loop_body = Block(arg_types=[IndexType()] + [acc_type] * len(accs))
    loop = scf.ForOp(b.idx(0), b.idx(per_slice), b.idx(1), accs, Region(loop_body))
    b.add(loop)
    lb = _Body(loop_body)
    kt, *carried = loop_body.args
    lb.add(tl.CpAsyncWaitOp(P - 1))
    if wgmma:  # wgmma reads shared memory through the async proxy
        lb.add(tl.FenceProxyAsyncOp())
    lb.add(gpu.BarrierOp())
    next_k = lb.addi(kt, P)
    prefetch = Block()
    pb = _Body(prefetch)
    load_tile(pb, global_k(pb, next_k), pb.remui(next_k, S))
    pb.add(scf.YieldOp())
    lb.add(scf.IfOp(lb.ult(next_k, per_slice), [], Region(prefetch)))
    lb.add(tl.CpAsyncCommitOp())
    stage = lb.remui(kt, S)

    a_frag, b_frag = _frag("a", elem), _frag("b", elem)
    results = list(carried)
    for kk in range(0 if wgmma else bk // 16):
        a_frags = [
            lb.v(tl.LdMatrixOp(sa, [stage, lb.addi(warp_m, mi * 16), lb.idx(kk * 16)],
                                 [a_frag], swizzle=swizzle_a))
            for mi in range(mi_count)
        ]
        b_frags: list[SSAValue] = []
        for nj in range(ni_count // 2):
            n_off = lb.addi(warp_n, nj * 16)
            if cfg.b_layout == "row":
                indices, trans = [stage, lb.idx(kk * 16), n_off], True
            else:
                indices, trans = [stage, n_off, lb.idx(kk * 16)], False
            pair = lb.add(tl.LdMatrixOp(sb, indices, [b_frag, b_frag], trans=trans,
                                          swizzle=swizzle_b))
            b_frags.extend(pair.results)
        for mi in range(mi_count):
            for ni in range(ni_count):
                k = mi * ni_count + ni
                results[k] = lb.v(tl.MmaOp(a_frags[mi], b_frags[ni], results[k]))
    if wgmma:
        # Warpgroup g: rows 64 g .. of the tile, all BN columns, one wgmma per k16 step.
        group_m = lb.muli(lb.divui(warp, 4), 64)
        lb.add(tl.WgmmaFenceOp())
        for kk in range(bk // 16):
            k_off = lb.idx(kk * 16)
            results = lb.add(tl.WgmmaOp(sa, [stage, group_m, k_off], sb,
                                        [stage, lb.idx(0), k_off], results)).results
        lb.add(tl.WgmmaCommitOp())
        lb.add(tl.WgmmaWaitOp(cfg.wgmma_in_flight))
    lb.add(scf.YieldOp(*results))
    if wgmma and cfg.wgmma_in_flight:
        b.add(tl.WgmmaWaitOp(0))

    def store_tiles(body: _Body, tiles: list[SSAValue]) -> None:
        for mi in range(mi_count):
            row = body.addi(body.addi(m0, warp_m), mi * 16)
            if swiglu:  # accumulators ni, ni + 1: gate and up of output columns col .. col+7
                for ni in range(0, ni_count, 2):
                    col = body.addi(body.addi(body.divui(n0, 2), body.divui(warp_n, 2)), ni * 4)
                    pair = [tiles[mi * ni_count + ni], tiles[mi * ni_count + ni + 1]]
                    body.add(tl.StoreAccOp(pair, C, [row, col], masked=mask_c,
                                           epilogue=_epilogue_region(cfg, bias, seed)))
                continue
            for ni in range(ni_count):
                col = body.addi(body.addi(n0, warp_n), ni * 8)
                body.add(tl.StoreAccOp(tiles[mi * ni_count + ni], C, [row, col],
                                       masked=mask_c,
                                       epilogue=_epilogue_region(cfg, bias, seed)))
        if cfg.sync_hooks:
            body.add(sync.StorePointOp([tile_x, tile_y]))

    if split == 1:
        store_tiles(b, list(loop.results))
    else:
        # Split-K: add this slice's partial tile into the workspace, arrive on the tile's
        # counter; the last slice to arrive takes the sums, runs the epilogue, stores C, and
        # (with sync hooks) posts the tile: the store point is in its branch only.
        workspace, counters = args["workspace"], args["counters"]
        positions = []
        for mi in range(mi_count):
            row = b.addi(b.addi(m0, warp_m), mi * 16)
            for ni in range(ni_count):
                col = b.addi(b.addi(n0, warp_n), ni * 8)
                positions.append((row, col))
                b.add(tl.StoreAccOp(loop.results[mi * ni_count + ni], workspace, [row, col],
                                    masked=mask_c, reduce=True))
        last = b.v(tl.ArriveOp(counters, [tile_x, tile_y], split))
        final = Block()
        fb = _Body(final)
        sums = [fb.v(tl.TakeAccOp(workspace, [row, col], masked=mask_c))
                for row, col in positions]
        store_tiles(fb, sums)
        fb.add(scf.YieldOp())
        b.add(scf.IfOp(last, [], Region(final)))
    b.add(gpu.ReturnOp([]))

    gpu_module = gpu.ModuleOp(StringAttr(f"{cfg.name}_module"),  # type: ignore[arg-type]
                              Region(Block([_shared_global("smem_a", sa_type, dynamic, align),
                                            _shared_global("smem_b", sb_type, dynamic, align),
                                            kernel])))
    return ModuleOp([gpu_module])


def gemm_kernel(M: int, N: int, K: int, tile=(128, 128, 32), warps=(2, 2), stages: int = 3,
                dtype: str = "f16", b_layout: str = "row", epilogue: str | None = None,
                name: str = "gemm", sync_hooks: bool = False) -> str:
    """MLIR text of a gpu.module with one GEMM kernel (see the module docstring)."""
    return str(gemm_module(M, N, K, tile, warps, stages, dtype, b_layout, epilogue, name,
                           sync_hooks))


# --------------------------------------------------------------------------------------------
# Compiling and running (the runtime is imported only here)
# --------------------------------------------------------------------------------------------


def gemm_pipeline() -> tuple[str, ...]:
    """KERNEL_TO_LLVM with convert-tile-to-nvvm right after convert-sync-to-nvvm."""
    from tilesync.lowering.pipeline import KERNEL_TO_LLVM

    passes = list(KERNEL_TO_LLVM)
    if "convert-tile-to-nvvm" not in passes:
        passes.insert(passes.index("convert-sync-to-nvvm") + 1, "convert-tile-to-nvvm")
    return tuple(passes)


def compile_gemm(cfg: GemmConfig, target: str = "sm_90", validate: bool = False,
                 keep_ir: bool = False):
    """tilesync.compile of the generated module -> CompiledProgram (PTX in `.ptx`)."""
    import tilesync

    if cfg.target is not None and target == "sm_90":
        target = cfg.target
    return tilesync.compile(gemm_module(0, 0, 0, config=cfg), pipeline=gemm_pipeline(),
                            target=target, validate=validate, keep_ir=keep_ir)


def reference(cfg: GemmConfig, a, b, bias=None, seed: int | None = None):
    """The float64 numpy result of the GEMM and its epilogue (a, b as given to the kernel)."""
    import numpy as np

    a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
    out = a64 @ (b64 if cfg.b_layout == "row" else b64.T)
    return apply_epilogue(cfg, out, bias, seed)


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
        out = 0.5 * out * (1.0 + _tanh(_GELU_C * (out + _GELU_K * out**3)))
    if cfg.dropout is not None:
        if seed is None:
            raise ValueError("the reference of a dropout GEMM needs seed=")
        import numpy as np

        mask = dropout_mask(seed, out.shape[0], out.shape[1], cfg.dropout)
        if not isinstance(out, np.ndarray):  # torch
            import torch

            mask = torch.from_numpy(mask).to(out.device)
        out = out * mask / cfg.dropout
    return out


def _exp(x):
    import numpy as np

    return np.exp(x) if isinstance(x, np.ndarray) else x.exp()


def _tanh(x):
    import numpy as np

    return np.tanh(x) if isinstance(x, np.ndarray) else x.tanh()


class GemmRunner:
    """The compiled kernel loaded on the current GPU, launched on device buffers.

    `ptx` skips the compile (e.g. PTX compiled in a process pool). Split-K configs own their
    fp32 workspace and counters, zeroed once here: every launch leaves them zero again."""

    def __init__(self, cfg: GemmConfig, ptx: str | None = None):
        from tilesync.runtime.device import get_device
        from tilesync.runtime.module import load_ptx

        self.cfg = cfg
        self.program = None
        if ptx is None:
            self.program = compile_gemm(cfg, get_device().arch)
            ptx = self.program.ptx
        self.ptx = ptx
        self.module = load_ptx(ptx, cfg.name)
        self.kernel = self.module.function(cfg.kernel_name, cfg.signature)
        self.workspace = self.counters = None
        if cfg.split_k > 1:
            import numpy as np

            from tilesync.runtime.buffers import DeviceBuffer

            self.workspace = DeviceBuffer.zeros(cfg.workspace_shape, np.float32)
            self.counters = DeviceBuffer.zeros(cfg.counters_shape, np.int32)

    def launch(self, a, b, c, bias=None, stream=None, seed: int | None = None) -> None:
        from tilesync.runtime.launch import launch

        args = [a, b, c]
        if self.cfg.has_bias:
            args.append(bias)
        if self.cfg.dropout is not None:
            if seed is None:
                raise ValueError("a dropout GEMM needs seed=")
            args.append(int(seed))
        if self.cfg.split_k > 1:
            args += [self.workspace, self.counters]
        launch(self.kernel, self.cfg.grid, self.cfg.block, args, stream=stream,
               shared_mem=self.cfg.dynamic_shared_bytes)


def compile_ptx_many(configs, target: str = "sm_90", processes: int | None = None
                     ) -> list[str]:
    """PTX of many configs, compiled in a process pool (generation and lowering are pure
    Python, one core each); falls back to one process where a pool cannot start."""
    configs = list(configs)
    if len(configs) <= 1 or processes == 1:
        return [_ptx_of(c, target) for c in configs]
    import concurrent.futures
    import multiprocessing
    import os

    workers = processes or min(len(configs), max(1, (os.cpu_count() or 2) - 1), 16)
    try:
        context = multiprocessing.get_context("fork")
        with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
            return list(pool.map(_ptx_of, configs, [target] * len(configs)))
    except (OSError, RuntimeError, concurrent.futures.process.BrokenProcessPool):
        return [_ptx_of(c, target) for c in configs]


def _ptx_of(cfg, target: str) -> str:
    """PTX of a GemmConfig, or of any config with a `compile(target)` (conv2d's)."""
    if isinstance(cfg, GemmConfig):
        return compile_gemm(cfg, target).ptx
    return cfg.compile(target).ptx


def swiglu_weights(gate, up):
    """W1 for epilogue="swiglu" from gate and up (K x F each, row-major B): 8-column blocks
    interleaved, W1[:, 16 j + t] = gate[:, 8 j + t] and W1[:, 16 j + 8 + t] = up[:, 8 j + t],
    so the accumulator tiles ni, ni + 1 of a warp hold gate and up of the same 8 columns."""
    import numpy as np

    gate, up = np.asarray(gate), np.asarray(up)
    k, f = gate.shape
    if up.shape != gate.shape or f % 8:
        raise ValueError(f"gate and up must both be K x F with F % 8 == 0, got {gate.shape} "
                         f"and {up.shape}")
    return np.stack([gate.reshape(k, f // 8, 8), up.reshape(k, f // 8, 8)], axis=2) \
        .reshape(k, 2 * f)


def _mix32(x):
    import numpy as np

    x = np.asarray(x, np.uint32)
    with np.errstate(over="ignore"):
        x = x ^ (x >> np.uint32(16))
        x = (x * np.uint32(_HASH_M1)).astype(np.uint32)
        x = x ^ (x >> np.uint32(15))
        x = (x * np.uint32(_HASH_M2)).astype(np.uint32)
        return x ^ (x >> np.uint32(16))


def dropout_mask(seed: int, rows: int, cols: int, keep: float):
    """The kernel's keep mask (bool rows x cols) for `seed`: the same hash, in numpy."""
    import numpy as np

    r = np.arange(rows, dtype=np.uint32)[:, None]
    c = np.arange(cols, dtype=np.uint32)[None, :]
    h = _mix32(c ^ _mix32(r ^ _mix32(np.uint32(seed & 0xFFFFFFFF))))
    if keep >= 1.0:
        return np.ones((rows, cols), bool)
    return h < np.uint32(dropout_threshold(keep))


def host_array(values, dtype: str):
    """float values as the kernel's element type: float16, or bf16 as raw uint16 bits (RNE)."""
    import numpy as np

    if dtype == "f16":
        return np.asarray(values, np.float32).astype(np.float16)
    bits = np.asarray(values, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return bits.astype(np.uint16)


def host_values(array, dtype: str):
    """The float64 values of a host_array (or of the kernel's output)."""
    import numpy as np

    if dtype == "f16":
        return np.asarray(array).astype(np.float64)
    return (np.asarray(array, np.uint16).astype(np.uint32) << 16).view(np.float32) \
        .astype(np.float64)


def time_gemm(cfg: GemmConfig, warmup: int = 10, reps: int = 50, seed: int = 0) -> dict:
    """Time the kernel on random data: median ms and TFLOP/s (2 M N K flops per launch)."""
    import numpy as np

    from tilesync.runtime.buffers import DeviceBuffer
    from tilesync.runtime.timing import time_region

    runner = GemmRunner(cfg)
    rng = np.random.default_rng(seed)
    b_shape = (cfg.K, cfg.N) if cfg.b_layout == "row" else (cfg.N, cfg.K)

    def random(shape):
        return DeviceBuffer.from_numpy(host_array(rng.standard_normal(shape), cfg.dtype))

    a, b = random((cfg.M, cfg.K)), random(b_shape)
    c = DeviceBuffer.empty((cfg.M, cfg.N), np.float16 if cfg.dtype == "f16" else np.uint16)
    bias = random(cfg.N) if cfg.has_bias else None
    timing = time_region(lambda: runner.launch(a, b, c, bias), warmup=warmup, reps=reps)
    median_s = timing.median_ms * 1e-3
    return {"config": cfg, "median_ms": timing.median_ms, "tflops": cfg.flops / median_s / 1e12,
            "registers": runner.kernel.num_regs, "timing": timing}


__all__ = [
    "EPILOGUES",
    "GemmConfig",
    "GemmRunner",
    "apply_epilogue",
    "compile_gemm",
    "compile_ptx_many",
    "dropout_mask",
    "dropout_threshold",
    "gemm_config",
    "gemm_kernel",
    "gemm_module",
    "gemm_pipeline",
    "host_array",
    "host_values",
    "reference",
    "swiglu_weights",
    "time_gemm",
]

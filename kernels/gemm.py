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

Layouts: A is M x K row-major; B is K x N row-major (`b_layout="row"`) or N x K row-major
(`"col"`, i.e. B column-major as a K x N matrix); C (and the result of the epilogue) is M x N
row-major of the input type; bias has N elements. Kernel parameters: A, B, C[, bias] as
pointers. M, N and K are compiled in. Edges (M, N, K not multiples of the tile) are handled by
zero-filling cp.async (`masked`) and predicated stores; K (and N for a row-major B) must be a
multiple of 8 so every 16-byte row chunk is aligned, as cuBLAS-style kernels require.
"""

from __future__ import annotations

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
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from tilesync.dialects import sync
from tilesync.dialects import tile as tl

EPILOGUES = (None, "bias", "gelu", "bias_gelu")
DTYPES = {"f16": Float16Type, "bf16": BFloat16Type}
STATIC_SHARED_LIMIT = 48 * 1024
"""Static shared memory per block; more needs dynamic shared memory (not lowered yet)."""

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
    stored), for the cuSync passes to fill. Without, the tile is the block id (same mapping)."""

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
        if self.K % 8 or (self.b_layout == "row" and self.N % 8):
            raise ValueError(
                "K (and N for a row-major B) must be a multiple of 8: cp.async copies aligned "
                f"16-byte chunks; got M={self.M} N={self.N} K={self.K} b_layout={self.b_layout}"
            )
        if bm % (16 * wm) or bn % (16 * wn):
            raise ValueError(
                f"tile {self.tile} does not split into {wm}x{wn} warp tiles of 16x16 multiples"
            )
        if bk % 16 or bk * 2 not in (32, 64, 128, 256):
            raise ValueError(f"BK must be 16, 32, 64 or 128, got {bk}")
        if bn * 2 not in (32, 64, 128, 256, 512):
            raise ValueError(f"BN must be a power of two from 16 to 256, got {bn}")
        if self.stages < 2:
            raise ValueError(f"stages must be at least 2, got {self.stages}")
        for what, elems in (("A", bm * bk), ("B", bk * bn)):
            if (elems // 8) % self.threads:
                raise ValueError(
                    f"the {what} tile's {elems // 8} 16-byte chunks do not divide among "
                    f"{self.threads} threads"
                )
        if self.shared_bytes > STATIC_SHARED_LIMIT:
            raise ValueError(
                f"{self.shared_bytes} bytes of shared memory for {self.stages} stages of "
                f"{self.tile}: more than the {STATIC_SHARED_LIMIT} static bytes (dynamic "
                "shared memory is not lowered yet); use fewer stages or a smaller tile"
            )

    @property
    def threads(self) -> int:
        return 32 * self.warps[0] * self.warps[1]

    @property
    def block(self) -> tuple[int, int, int]:
        return (self.threads, 1, 1)

    @property
    def grid(self) -> tuple[int, int, int]:
        bm, bn, _ = self.tile
        return (-(-self.M // bm), -(-self.N // bn), 1)  # x: tile row (M), y: tile column

    @property
    def k_tiles(self) -> int:
        return -(-self.K // self.tile[2])

    @property
    def shared_bytes(self) -> int:
        bm, bn, bk = self.tile
        return self.stages * (bm * bk + bk * bn) * 2

    @property
    def kernel_name(self) -> str:
        return self.name

    @property
    def signature(self) -> tuple[str, ...]:
        return ("ptr",) * (4 if self.has_bias else 3)

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
                name: str = "gemm", sync_hooks: bool = False) -> GemmConfig:
    return GemmConfig(M, N, K, tuple(tile), tuple(warps), stages, dtype, b_layout, epilogue,
                      name, sync_hooks)


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


def _epilogue_region(cfg: GemmConfig, bias: SSAValue | None) -> Region | None:
    if cfg.epilogue is None:
        return None
    block = tl.epilogue_block()
    b = _Body(block)
    value, _row, col = block.args
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
    b.add(tl.YieldOp(value))
    return Region(block)


def _shared_global(name: str, type_: MemRefType) -> memref.GlobalOp:
    return memref.GlobalOp.get(StringAttr(name), type_, UnitAttr(), alignment=128)


def gemm_module(M: int, N: int, K: int, tile=(128, 128, 32), warps=(2, 2),
                stages: int = 3, dtype: str = "f16", b_layout: str = "row",
                epilogue: str | None = None, name: str = "gemm", sync_hooks: bool = False, *,
                config: GemmConfig | None = None) -> ModuleOp:
    """The GEMM as a builtin.module holding one gpu.module with one kernel."""
    cfg = config or gemm_config(M, N, K, tile, warps, stages, dtype, b_layout, epilogue, name,
                                sync_hooks)
    elem = cfg.element_type
    bm, bn, bk = cfg.tile
    wm_count, wn_count = cfg.warps
    wtm, wtn = bm // wm_count, bn // wn_count  # warp tile
    mi_count, ni_count = wtm // 16, wtn // 8
    S = cfg.stages

    a_type = MemRefType(elem, [cfg.M, cfg.K])
    b_type = MemRefType(elem, [cfg.K, cfg.N] if cfg.b_layout == "row" else [cfg.N, cfg.K])
    c_type = MemRefType(elem, [cfg.M, cfg.N])
    inputs: list[Attribute] = [a_type, b_type, c_type]
    if cfg.has_bias:
        inputs.append(MemRefType(elem, [cfg.N]))
    sa_type = MemRefType(elem, [S, bm, bk], memory_space=IntegerAttr(3, 64))
    sb_shape = [S, bk, bn] if cfg.b_layout == "row" else [S, bn, bk]
    sb_type = MemRefType(elem, sb_shape, memory_space=IntegerAttr(3, 64))
    swizzle_a = tl.swizzle_for_row(bk)
    swizzle_b = tl.swizzle_for_row(sb_shape[-1])

    kernel = gpu.FuncOp(cfg.kernel_name, (inputs, []), kernel=True,
                        known_block_size=list(cfg.block))
    entry = kernel.body.block
    A, B, C = entry.args[:3]
    bias = entry.args[3] if cfg.has_bias else None
    for arg, hint in zip(entry.args, ("A", "B", "C", "bias"), strict=False):
        arg.name_hint = hint
    b = _Body(entry)

    tid = b.v(gpu.ThreadIdOp(gpu.DimensionAttr(gpu.DimensionEnum.X)))
    if cfg.sync_hooks:
        tile_x, tile_y = b.add(sync.TileOp(rank=2)).results
    else:
        tile_x = b.v(gpu.BlockIdOp(gpu.DimensionAttr(gpu.DimensionEnum.X)))
        tile_y = b.v(gpu.BlockIdOp(gpu.DimensionAttr(gpu.DimensionEnum.Y)))
    m0 = b.muli(tile_x, bm)
    n0 = b.muli(tile_y, bn)
    warp = b.divui(tid, 32)
    warp_m = b.muli(b.divui(warp, wn_count), wtm)
    warp_n = b.muli(b.remui(warp, wn_count), wtn)
    sa = b.v(memref.GetGlobalOp("smem_a", sa_type))
    sb = b.v(memref.GetGlobalOp("smem_b", sb_type))

    mask_a = cfg.M % bm != 0 or cfg.K % bk != 0
    mask_b = cfg.N % bn != 0 or cfg.K % bk != 0
    mask_c = cfg.M % bm != 0 or cfg.N % bn != 0

    def load_tile(body: _Body, k_tile: SSAValue, stage: SSAValue) -> None:
        k0 = body.muli(k_tile, bk)
        if cfg.sync_hooks:
            body.add(sync.LoadPointOp(0, [tile_x, tile_y], k_tile))
        # A: BM rows of BK elements; thread t copies chunks t, t + threads, ...
        per_row = bk // 8
        for i in range(bm * bk // 8 // cfg.threads):
            chunk = body.addi(tid, i * cfg.threads)
            row = body.divui(chunk, per_row)
            col = body.muli(body.remui(chunk, per_row), 8)
            body.add(tl.CpAsyncOp(sa, [stage, row, col], A,
                                    [body.addi(m0, row), body.addi(k0, col)],
                                    masked=mask_a, swizzle=swizzle_a))
        if cfg.sync_hooks:
            body.add(sync.LoadPointOp(1, [tile_x, tile_y], k_tile))
        per_row = sb_shape[2] // 8
        for i in range(bk * bn // 8 // cfg.threads):
            chunk = body.addi(tid, i * cfg.threads)
            row = body.divui(chunk, per_row)
            col = body.muli(body.remui(chunk, per_row), 8)
            if cfg.b_layout == "row":  # smem k x n
                src = [body.addi(k0, row), body.addi(n0, col)]
            else:  # smem n x k
                src = [body.addi(n0, row), body.addi(k0, col)]
            body.add(tl.CpAsyncOp(sb, [stage, row, col], B, src, masked=mask_b,
                                    swizzle=swizzle_b))

    # Prologue: k-tiles 0 .. S-2 (those that exist), one commit group per stage regardless.
    for s in range(S - 1):
        if s < cfg.k_tiles:
            load_tile(b, b.idx(s), b.idx(s))
        b.add(tl.CpAsyncCommitOp())

    acc_type = _frag("acc", f32)
    zero = b.v(tl.FillOp(b.f32(0.0), acc_type))
    accs = [zero] * (mi_count * ni_count)

    loop_body = Block(arg_types=[IndexType()] + [acc_type] * len(accs))
    loop = scf.ForOp(b.idx(0), b.idx(cfg.k_tiles), b.idx(1), accs, Region(loop_body))
    b.add(loop)
    lb = _Body(loop_body)
    kt, *carried = loop_body.args
    lb.add(tl.CpAsyncWaitOp(S - 2))
    lb.add(gpu.BarrierOp())
    next_k = lb.addi(kt, S - 1)
    prefetch = Block()
    pb = _Body(prefetch)
    load_tile(pb, next_k, pb.remui(next_k, S))
    pb.add(scf.YieldOp())
    lb.add(scf.IfOp(lb.ult(next_k, cfg.k_tiles), [], Region(prefetch)))
    lb.add(tl.CpAsyncCommitOp())
    stage = lb.remui(kt, S)

    a_frag, b_frag = _frag("a", elem), _frag("b", elem)
    results = list(carried)
    for kk in range(bk // 16):
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
    lb.add(scf.YieldOp(*results))

    for mi in range(mi_count):
        row = b.addi(b.addi(m0, warp_m), mi * 16)
        for ni in range(ni_count):
            col = b.addi(b.addi(n0, warp_n), ni * 8)
            b.add(tl.StoreAccOp(loop.results[mi * ni_count + ni], C, [row, col],
                                  masked=mask_c, epilogue=_epilogue_region(cfg, bias)))
    if cfg.sync_hooks:
        b.add(sync.StorePointOp([tile_x, tile_y]))
    b.add(gpu.ReturnOp([]))

    gpu_module = gpu.ModuleOp(StringAttr(f"{cfg.name}_module"),  # type: ignore[arg-type]
                              Region(Block([_shared_global("smem_a", sa_type),
                                            _shared_global("smem_b", sb_type), kernel])))
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

    return tilesync.compile(gemm_module(0, 0, 0, config=cfg), pipeline=gemm_pipeline(),
                            target=target, validate=validate, keep_ir=keep_ir)


def reference(cfg: GemmConfig, a, b, bias=None):
    """The float64 numpy result of the GEMM and its epilogue (a, b as given to the kernel)."""
    import numpy as np

    a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
    out = a64 @ (b64 if cfg.b_layout == "row" else b64.T)
    if cfg.has_bias:
        out = out + np.asarray(bias, np.float64)[None, :]
    if cfg.epilogue in ("gelu", "bias_gelu"):
        out = 0.5 * out * (1.0 + np.tanh(_GELU_C * (out + _GELU_K * out**3)))
    return out


class GemmRunner:
    """The compiled kernel loaded on the current GPU, launched on device buffers."""

    def __init__(self, cfg: GemmConfig):
        from tilesync.runtime.device import get_device
        from tilesync.runtime.module import load_ptx

        self.cfg = cfg
        self.program = compile_gemm(cfg, get_device().arch)
        self.module = load_ptx(self.program.ptx, cfg.name)
        self.kernel = self.module.function(cfg.kernel_name, cfg.signature)

    def launch(self, a, b, c, bias=None, stream=None) -> None:
        from tilesync.runtime.launch import launch

        args = [a, b, c] + ([bias] if self.cfg.has_bias else [])
        launch(self.kernel, self.cfg.grid, self.cfg.block, args, stream=stream)


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
    "compile_gemm",
    "gemm_config",
    "gemm_kernel",
    "gemm_module",
    "gemm_pipeline",
    "host_array",
    "host_values",
    "reference",
    "time_gemm",
]

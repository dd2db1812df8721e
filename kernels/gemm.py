"""A tensor-core GEMM generated through the tile dialect: C = epilogue(A @ B).

    gemm_module(M, N, K, ..., config=None) -> builtin.module   (xDSL's IR classes, no text)
    gemm_kernel(M, N, K, ...) -> str           (the same module printed as MLIR)

The configuration (grid, block, shared memory, parameters) is kernels/config.py's GemmConfig;
compile_kernel (harness/compile.py) lowers the module to PTX.

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
    store the accumulators through the epilogue (none, bias, gelu, bias_gelu, relu, bias_relu)

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

With `staged_store` (wgmma) the store goes through shared memory instead: bar.sync; the
fragments through the epilogue into A's ring, now free (BN / 64 boxes of BM x 64 columns, the
128-byte swizzle); bar.sync; each thread copies 16-byte chunks of whole rows to C
(`tile.copy_out`); bar.sync. A warp then writes 512 consecutive bytes per store, where a
fragment store writes 4 bytes into each of eight lines.

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

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.dialects import arith, gpu, math, memref, scf
from xdsl.dialects.builtin import (
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    UnitAttr,
    f32,
    i32,
)
from xdsl.ir import Attribute, Block, Region, SSAValue

from tilesync.contract import CLUSTER_DIMS_ATTR, DYNAMIC_SHARED_ATTR
from tilesync.dialects import sync
from tilesync.dialects import tile as tl
from tilesync.kernels.builder import BlockBuilder, block_tile
from tilesync.kernels.config import (
    DROPOUT_HASH_MULTIPLIERS,
    GELU_C,
    GELU_K,
    GemmConfig,
    dropout_threshold,
    gemm_config,
)


def _frag(role: str, element: Attribute) -> tl.FragType:
    return tl.FragType(role, element, "m16n8k16")


def _u32_mix(b: BlockBuilder, x: SSAValue) -> SSAValue:
    """Dropout's "lowbias32" mix of an i32, with wrapping products (numpy: reference.py)."""
    def c(v: int) -> SSAValue:
        return b.emit(arith.ConstantOp(IntegerAttr(v - (1 << 32) if v >= 1 << 31 else v, i32)))

    m1, m2 = DROPOUT_HASH_MULTIPLIERS
    x = b.emit(arith.XOrIOp(x, b.emit(arith.ShRUIOp(x, c(16)))))
    x = b.emit(arith.MuliOp(x, c(m1)))
    x = b.emit(arith.XOrIOp(x, b.emit(arith.ShRUIOp(x, c(15)))))
    x = b.emit(arith.MuliOp(x, c(m2)))
    return b.emit(arith.XOrIOp(x, b.emit(arith.ShRUIOp(x, c(16)))))


def dropout_op(b: BlockBuilder, keep_prob: float, value: SSAValue, row: SSAValue, col: SSAValue,
               seed: SSAValue) -> SSAValue:
    """keep ? value / p : 0 with keep = mix(col ^ mix(row ^ mix(seed))) < p 2^32 (row, col:
    index; seed: i32), the ops appended to `b`."""
    r32 = b.emit(arith.IndexCastOp(row, i32))
    c32 = b.emit(arith.IndexCastOp(col, i32))
    h = _u32_mix(b, b.emit(arith.XOrIOp(r32, _u32_mix(b, seed))))
    h = _u32_mix(b, b.emit(arith.XOrIOp(c32, h)))
    if keep_prob >= 1.0:
        return value
    t = dropout_threshold(keep_prob)
    threshold = b.emit(arith.ConstantOp(IntegerAttr(t - (1 << 32) if t >= 1 << 31 else t, i32)))
    keep = b.emit(arith.CmpiOp(h, threshold, "ult"))
    scaled = b.emit(arith.MulfOp(value, b.f32(1.0 / keep_prob)))
    return b.emit(arith.SelectOp(keep, scaled, b.f32(0.0)))


def _epilogue_region(cfg: GemmConfig, bias: SSAValue | None,
                     seed: SSAValue | None = None) -> Region | None:
    if cfg.epilogue is None and cfg.dropout is None:
        return None
    swiglu = cfg.epilogue == "swiglu"
    block = tl.epilogue_block(2 if swiglu else 1)
    b = BlockBuilder(block)
    *values, row, col = block.args
    value = values[0]
    if swiglu:
        # silu(gate) * up = gate / (1 + exp(-gate)) * up
        gate, up = values
        e = b.emit(math.ExpOp(b.emit(arith.NegfOp(gate))))
        # The warp-specialized kernel divides approximately (div.approx.f32, like ex2.approx):
        # IEEE division is a subroutine call in SASS, which makes ptxas serialize wgmma.
        fast = arith.FastMathFlagsAttr(["afn"]) if cfg.warp_specialized else None
        silu = b.emit(arith.DivfOp(gate, b.emit(arith.AddfOp(e, b.f32(1.0))), fast))
        value = b.emit(arith.MulfOp(silu, up))
    if cfg.has_bias:
        assert bias is not None
        loaded = b.emit(memref.LoadOp.get(bias, [col]))
        value = b.emit(arith.AddfOp(value, b.emit(arith.ExtFOp(loaded, f32))))
    if cfg.epilogue in ("gelu", "bias_gelu"):
        # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))  (GPT-2/3's tanh approximation)
        x = value
        x3 = b.emit(arith.MulfOp(b.emit(arith.MulfOp(x, x)), x))
        inner = b.emit(arith.AddfOp(x, b.emit(arith.MulfOp(x3, b.f32(GELU_K)))))
        t = b.emit(math.TanhOp(b.emit(arith.MulfOp(inner, b.f32(GELU_C)))))
        half_x = b.emit(arith.MulfOp(x, b.f32(0.5)))
        value = b.emit(arith.AddfOp(half_x, b.emit(arith.MulfOp(half_x, t))))
    if cfg.epilogue in ("relu", "bias_relu"):
        value = b.emit(arith.MaxnumfOp(value, b.f32(0.0)))
    if cfg.dropout is not None:
        assert seed is not None
        value = dropout_op(b, cfg.dropout, value, row, col, seed)
    b.insert(tl.YieldOp(value))
    return Region(block)


def shared_global(name: str, type_: MemRefType, dynamic: bool = False,
                   alignment: int = 128) -> memref.GlobalOp:
    op = memref.GlobalOp.get(StringAttr(name), type_, UnitAttr(), alignment=alignment)
    if dynamic:
        op.attributes[DYNAMIC_SHARED_ATTR] = UnitAttr()
    return op


Staging = Callable[[BlockBuilder, SSAValue, int], list[SSAValue]]
"""(body, row in the tile, column of the output tile) -> indices of that place in a staging
buffer in shared memory."""


def staged_column(b: BlockBuilder, col: int, width: int, lane_rows: SSAValue) -> SSAValue:
    """The column of a staging box `width` 16-bit elements wide (its rows of 2 width bytes in
    the copy engine's swizzle of that many bytes) where the lanes' accumulator columns
    col .. col + 7 go. The swizzle XORs the 16-byte chunk col / 8 with bits of the byte
    offset's 128-byte line, row / (8 / chunks a row) mod chunks a row. A fragment starts on a
    row that is a multiple of 8, so those bits of a lane's rows (lane / 4 and 8 below) come
    from `lane_rows`, lane / 4 mod 8, the same for all its fragments: the swizzle costs one
    XOR a chunk, not one a store."""
    chunks = width // 8
    if chunks == 1:  # 16-byte rows: no swizzle
        return b.idx(col)
    line_bits = b.andi(b.divui(lane_rows, 8 // chunks), chunks - 1)
    return b.muli(b.xori(col // 8, line_bits), 8)


def _store_accumulators(body: BlockBuilder, cfg: GemmConfig, tiles: list[SSAValue],
                        C: SSAValue, origin: tuple[SSAValue, SSAValue],
                        warp_origin: tuple[SSAValue, SSAValue], counts: tuple[int, int],
                        masked: bool, bias: SSAValue | None, seed: SSAValue | None,
                        staging: tuple[SSAValue, Staging] | None = None) -> None:
    """Store a warp's mi x ni accumulators of 16 x 8 at (tile origin + warp origin) of C
    through the epilogue; swiglu pairs accumulators ni, ni + 1 (gate and up of output columns
    col .. col + 7). With `staging` (buffer, place) they go to the buffer instead, at
    `place` of their position in the tile (warp_n is 0 there), the epilogue still seeing
    their position in C."""
    m0, n0 = origin
    warp_m, warp_n = warp_origin
    mi_count, ni_count = counts
    swiglu = cfg.epilogue == "swiglu"
    # Every store's epilogue is the same region: the first store's is built, the others are
    # its copies (a clone skips the constructors' checks).
    first: Region | None = None
    for mi in range(mi_count):
        row = body.addi(body.addi(m0, warp_m), mi * 16)
        for ni in range(0, ni_count, 2 if swiglu else 1):
            if swiglu:
                out_col = ni * 4
                col = body.addi(body.addi(body.divui(n0, 2), body.divui(warp_n, 2)), out_col)
                accs = [tiles[mi * ni_count + ni], tiles[mi * ni_count + ni + 1]]
            else:
                out_col = ni * 8
                col = body.addi(body.addi(n0, warp_n), out_col)
                accs = [tiles[mi * ni_count + ni]]
            if first is None:
                epilogue = first = _epilogue_region(cfg, bias, seed)
            else:
                epilogue = first.clone()
            if staging is None:
                body.insert(tl.StoreAccOp(accs, C, [row, col], masked=masked, epilogue=epilogue))
                continue
            buffer, place = staging
            indices = place(body, body.addi(warp_m, mi * 16), out_col)
            body.insert(tl.StoreAccOp(accs, buffer, indices, epilogue=epilogue, at=[row, col]))


TileOrigin = tuple[SSAValue, SSAValue]
"""The first row and column (m0, n0) of the tile of C a block computes."""
ASource = Callable[[BlockBuilder, SSAValue, SSAValue, TileOrigin], tuple[list[SSAValue], bool]]
"""(body, row of A (global m), column of A (global k), the tile's origin in C) -> (source
indices, masked); for B the row and column of its logical layout (the origin still C's: an
operand of batches, attention's heads, is addressed by the batch of the tile's place)."""


def column_slice(offset: int) -> ASource:
    """An operand read as columns offset .. of a wider row-major matrix (its memref type the
    wider one). Masked: rows past the end read zeros; the slice's own width must cover whole
    k-tiles, since columns past it are the next slice's, not zeros."""
    def source(body: BlockBuilder, row: SSAValue, col: SSAValue, origin: TileOrigin
               ) -> tuple[list[SSAValue], bool]:
        return [row, body.addi(col, offset)], True

    return source


@dataclass(frozen=True)
class TileOperands:
    """The memory a tile reads and writes: A, B, C (any memrefs `a_source` / `b_source` /
    the store can address), the epilogue's bias and seed, split-K's workspace and counters
    (or, cfg.split_cluster, the BM x BN f32 buffer in shared memory where the slices meet),
    and A's first columns when A is a concatenation (cfg.a_head)."""

    A: SSAValue
    B: SSAValue
    C: SSAValue
    bias: SSAValue | None = None
    seed: SSAValue | None = None
    workspace: SSAValue | None = None
    counters: SSAValue | None = None
    A_head: SSAValue | None = None
    partial: SSAValue | None = None


@dataclass(frozen=True)
class TilePlace:
    """Where the tile is: the thread and its warp's origin in the tile, the tile's origin in
    A's rows (`m0`) and C's columns (`n0`), C's row origin when it differs from A's (a tile
    read from one buffer and stored into another), the coordinates its sync hooks name,
    split-K's slice (grid z), its first k-tile and, where the slices differ by a k-tile
    (`split_k_range`), its k-tiles, and A_head's row origin when it differs from A's (A from
    a queue entry, A_head from the input's rows)."""

    tid: SSAValue
    warp: SSAValue
    warp_m: SSAValue
    warp_n: SSAValue
    m0: SSAValue
    n0: SSAValue
    tile: tuple[SSAValue, SSAValue]
    k_begin: SSAValue | None = None
    c_m0: SSAValue | None = None
    head_m0: SSAValue | None = None
    k_slice: SSAValue | None = None
    k_count: SSAValue | None = None


def split_k_range(b: BlockBuilder, cfg: GemmConfig, k_slice: SSAValue
                  ) -> tuple[SSAValue, SSAValue | None]:
    """Slice `k_slice`'s first k-tile and, where split_k does not divide the k-tiles, its
    count (None: k_tiles / split_k, the same for every slice): k-tiles z K / s up to
    (z + 1) K / s, rounded down, so that the slices differ by one at most."""
    k_tiles, split = cfg.k_tiles, cfg.split_k
    if k_tiles % split == 0:
        return b.muli(k_slice, k_tiles // split), None
    k_begin = b.divui(b.muli(k_slice, k_tiles), split)
    k_end = b.divui(b.muli(b.addi(k_slice, 1), k_tiles), split)
    return k_begin, b.emit(arith.SubiOp(k_end, k_begin))


def named_args(kernel: gpu.FuncOp, names) -> dict[str, SSAValue]:
    """The kernel's arguments by parameter name (also their SSA name hints in printed IR)."""
    args = dict(zip(names, kernel.body.block.args, strict=True))
    for hint, arg in args.items():
        arg.name_hint = hint
    return args


def stage_buffer_types(cfg: GemmConfig) -> tuple[MemRefType, MemRefType]:
    """The shared-memory stage rings of A (S x BM x BK) and B (S x BK x BN, or S x BN x BK
    for a column-major B)."""
    bm, bn, bk = cfg.tile
    S = cfg.stages
    sb_shape = [S, bk, bn] if cfg.b_layout == "row" else [S, bn, bk]
    return (MemRefType(cfg.element_type, [S, bm, bk], memory_space=IntegerAttr(3, 64)),
            MemRefType(cfg.element_type, sb_shape, memory_space=IntegerAttr(3, 64)))


def stage_buffers(cfg: GemmConfig, types: tuple[MemRefType, MemRefType] | None = None
                  ) -> list[memref.GlobalOp]:
    """The module-level globals `smem_a` and `smem_b` holding the stage rings (dynamic shared
    memory past 48 KiB; wgmma's swizzle atoms want a 1024-byte aligned base); `types` replaces
    `stage_buffer_types(cfg)` (a stage whose weights stay resident holds every k-tile)."""
    dynamic = cfg.dynamic_shared_bytes > 0
    sa_type, sb_type = types or stage_buffer_types(cfg)
    return [shared_global("smem_a", sa_type, dynamic, cfg.stage_alignment),
            shared_global("smem_b", sb_type, dynamic, cfg.stage_alignment)]


def last_position(b: BlockBuilder, m0: SSAValue, tokens: int, bm: int) -> SSAValue:
    """The position in its sequence of a tile's last row (rows are sequences of `tokens`,
    BM-row tiles within one): (m0 mod tokens) + BM - 1, a triangular operand's last key."""
    return b.addi(b.remui(m0, tokens), bm - 1)


def emit_tile(b: BlockBuilder, cfg: GemmConfig, ops: TileOperands, place: TilePlace,
              sa: SSAValue, sb: SSAValue, a_source: ASource | None = None,
              b_source: ASource | None = None, resident_b: bool = False,
              after_mainloop: Callable[[BlockBuilder], None] | None = None,
              ring: Sequence[SSAValue] = (),
              barrier: Callable[[BlockBuilder], None] | None = None,
              resident_at: tuple[int, int] = (0, 0), a_in_ring: bool = False,
              keep_in_ring: bool = False, store_point: bool = True) -> None:
    """One BM x BN tile of C = epilogue(A @ B) at `place`: the cp.async (or wgmma) k-loop
    through the stage buffers `sa` / `sb`, then the epilogue's stores (split-K: through the
    workspace, the last slice storing). Emitted at the end of `b`'s block.

    `resident_b` (wgmma): `sb` already holds all of B's k-tiles (`load_resident_b`), indexed
    by k-tile: the loop copies only A (a stage that multiplies every tile by the same weights
    loads them once). `after_mainloop` emits what goes between the k-loop and the stores,
    once every copy of the operands has landed but while the last wgmmas may still read the
    shared rings (a queue stage gives back its input entry and waits for its output entry
    there, overlapping the multiply's tail: on an H100 the NeRF trunk's pipeline took 0.72
    instead of 0.75 ms at 2^18 rows).

    Several tiles at once in one block (each by its own group of cfg.threads threads,
    `place.tid` counting within the group): `ring` gives the leading indices of the group's
    own A ring in `sa` (B, resident, is shared), and `barrier` emits the group's barrier in
    place of the block's `gpu.barrier`.

    Layers one after another in a block (a pipeline stage of several layers): `resident_at`
    is where B's k-tiles start in `sb` (k-tile slot, row: `load_resident_b`'s); with
    `keep_in_ring` the staged store leaves the tile in A's ring, k-tile j of the next
    layer's A in stage j, and no C is written; with `a_in_ring` A's k-tiles are already
    there (nothing is copied)."""
    if resident_b and (cfg.mma != "wgmma" or cfg.split_k > 1):
        raise ValueError("resident B is read by wgmma, without split-K")
    if (a_in_ring and not (resident_b and cfg.k_tiles <= cfg.stages)) or \
            (keep_in_ring and not (resident_b and cfg.staged_store)):
        raise ValueError("a tile read from A's ring has no more k-tiles than the ring's "
                         "stages, one kept there is staged, and both multiply resident B")
    bm, bn, bk = cfg.tile
    wm_count, wn_count = cfg.warps
    wtm, wtn = bm // wm_count, bn // wn_count
    mi_count, ni_count = wtm // 16, wtn // 8
    S = cfg.stages
    split = cfg.split_k
    per_slice = cfg.k_tiles // split
    sb_shape = [S, bk, bn] if cfg.b_layout == "row" else [S, bn, bk]
    swizzle_a = tl.swizzle_for_row(bk)
    swizzle_b = tl.swizzle_for_row(sb_shape[-1])
    wgmma = cfg.mma == "wgmma"
    elem = cfg.element_type
    A, B, C, bias, seed = ops.A, ops.B, ops.C, ops.bias, ops.seed
    tid, warp, warp_m, warp_n = place.tid, place.warp, place.warp_m, place.warp_n
    m0, n0, k_begin = place.m0, place.n0, place.k_begin
    tile_x, tile_y = place.tile
    c_m0 = m0 if place.c_m0 is None else place.c_m0
    head_m0 = m0 if place.head_m0 is None else place.head_m0
    head_tiles = cfg.a_head // bk
    if head_tiles and (ops.A_head is None or a_source is not None):
        raise ValueError("a_head reads A_head and A by their own rows and columns: pass "
                         "ops.A_head, and no a_source")
    ring = list(ring)

    def sync_threads(body: BlockBuilder) -> None:
        if barrier is None:
            body.insert(gpu.BarrierOp())
        else:
            barrier(body)

    mask_a = cfg.M % bm != 0 or cfg.K % bk != 0
    mask_b = cfg.N % bn != 0 or cfg.K % bk != 0
    mask_c = cfg.M % bm != 0 or cfg.N % bn != 0

    def default_a(body: BlockBuilder, row: SSAValue, col: SSAValue, origin: TileOrigin
                  ) -> tuple[list[SSAValue], bool]:
        return [row, col], mask_a

    source_a = a_source or default_a

    def copy_chunks(body: BlockBuilder, elems: int, per_row_elems: int, emit) -> None:
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
            gb = BlockBuilder(guarded)
            emit(gb, gb.divui(chunk, per_row), gb.muli(gb.remui(chunk, per_row), 8))
            gb.insert(scf.YieldOp())
            body.insert(scf.IfOp(body.ult(chunk, chunks), [], Region(guarded)))

    def load_tile(body: BlockBuilder, k_tile: SSAValue, stage: SSAValue) -> None:
        k0 = body.muli(k_tile, bk)
        if cfg.sync_hooks:
            body.insert(sync.LoadPointOp(0, [tile_x, tile_y], k_tile))

        def copy_a_from(src: SSAValue, m_origin: SSAValue, k_origin: SSAValue):
            def copy(cb: BlockBuilder, row: SSAValue, col: SSAValue) -> None:
                indices, masked = source_a(cb, cb.addi(m_origin, row), cb.addi(k_origin, col),
                                           (m0, n0))
                cb.insert(tl.CpAsyncOp(sa, [*ring, stage, row, col], src, indices,
                                       masked=masked, swizzle=swizzle_a))
            return copy

        if a_in_ring:  # the previous layer's staged store left A's k-tiles in the ring
            pass
        elif not head_tiles:  # A: BM rows of BK elements
            copy_chunks(body, bm * bk, bk, copy_a_from(A, m0, k0))
        else:  # k-tiles below head_tiles from A_head, the rest from A's column k0 - a_head
            head, rest = Block(), Block()
            hb, rb = BlockBuilder(head), BlockBuilder(rest)
            copy_chunks(hb, bm * bk, bk, copy_a_from(ops.A_head, head_m0, k0))
            copy_chunks(rb, bm * bk, bk, copy_a_from(A, m0, rb.subi(k0, cfg.a_head)))
            hb.insert(scf.YieldOp())
            rb.insert(scf.YieldOp())
            body.insert(scf.IfOp(body.ult(k_tile, head_tiles), [], Region(head), Region(rest)))
        if cfg.sync_hooks:
            body.insert(sync.LoadPointOp(1, [tile_x, tile_y], k_tile))

        def copy_b(cb: BlockBuilder, row: SSAValue, col: SSAValue) -> None:
            if cfg.b_layout == "row":  # smem k x n
                src, masked = [cb.addi(k0, row), cb.addi(n0, col)], mask_b
            else:  # smem n x k
                src, masked = [cb.addi(n0, row), cb.addi(k0, col)], mask_b
            if b_source is not None:
                src, masked = b_source(cb, *src, (m0, n0))
            cb.insert(tl.CpAsyncOp(sb, [stage, row, col], B, src, masked=masked,
                                   swizzle=swizzle_b))

        if not resident_b:
            copy_chunks(body, bk * bn, sb_shape[2], copy_b)

    def global_k(body: BlockBuilder, local: SSAValue | int) -> SSAValue:
        local_v = body.idx(local) if isinstance(local, int) else local
        return local_v if k_begin is None else body.addi(k_begin, local_v)

    # The tile's k-tiles: all, or with a triangular A those up to its last row's position.
    k_count: SSAValue | int = per_slice if place.k_count is None else place.k_count
    if cfg.triangular_a:
        last = last_position(b, m0, cfg.triangular_a, bm)
        k_count = b.emit(arith.MinUIOp(b.idx(per_slice), b.addi(b.divui(last, bk), 1)))

    # Prologue: k-tiles 0 .. P-1 (those that exist), one commit group per stage regardless.
    P = cfg.prefetch
    for s in range(P):
        if isinstance(k_count, int):
            if s < k_count:
                load_tile(b, global_k(b, s), b.idx(s))
        else:
            first = Block()
            fb = BlockBuilder(first)
            load_tile(fb, global_k(fb, s), fb.idx(s))
            fb.insert(scf.YieldOp())
            b.insert(scf.IfOp(b.ult(b.idx(s), k_count), [], Region(first)))
        b.insert(tl.CpAsyncCommitOp())

    acc_type = _frag("acc", f32)
    zero = b.emit(tl.FillOp(b.f32(0.0), acc_type))
    accs = [zero] * (mi_count * ni_count)

    loop_body = Block(arg_types=[IndexType()] + [acc_type] * len(accs))
    loop = scf.ForOp(b.idx(0), b.idx(k_count) if isinstance(k_count, int) else k_count,
                     b.idx(1), accs, Region(loop_body))
    b.insert(loop)
    lb = BlockBuilder(loop_body)
    kt, *carried = loop_body.args
    lb.insert(tl.CpAsyncWaitOp(P - 1))
    if wgmma:  # wgmma reads shared memory through the async proxy
        lb.insert(tl.FenceProxyAsyncOp())
    sync_threads(lb)
    next_k = lb.addi(kt, P)
    prefetch = Block()
    pb = BlockBuilder(prefetch)
    load_tile(pb, global_k(pb, next_k), pb.remui(next_k, S))
    pb.insert(scf.YieldOp())
    lb.insert(scf.IfOp(lb.ult(next_k, k_count), [], Region(prefetch)))
    lb.insert(tl.CpAsyncCommitOp())
    stage = lb.remui(kt, S)

    a_frag, b_frag = _frag("a", elem), _frag("b", elem)
    results = list(carried)
    for kk in range(0 if wgmma else bk // 16):
        a_frags = [
            lb.emit(tl.LdMatrixOp(sa, [*ring, stage, lb.addi(warp_m, mi * 16), lb.idx(kk * 16)],
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
            pair = lb.insert(tl.LdMatrixOp(sb, indices, [b_frag, b_frag], trans=trans,
                                          swizzle=swizzle_b))
            b_frags.extend(pair.results)
        for mi in range(mi_count):
            for ni in range(ni_count):
                k = mi * ni_count + ni
                results[k] = lb.emit(tl.MmaOp(a_frags[mi], b_frags[ni], results[k]))
    if wgmma:
        # Warpgroup g: rows 64 g .. of the tile, all BN columns, one wgmma per k16 step.
        group_m = lb.muli(lb.divui(warp, 4), 64)
        lb.insert(tl.WgmmaFenceOp())
        for kk in range(bk // 16):
            k_off = lb.idx(kk * 16)
            b_at = [lb.addi(kt, resident_at[0]), lb.idx(resident_at[1])] if resident_b \
                else [stage, lb.idx(0)]
            results = lb.insert(tl.WgmmaOp(sa, [*ring, stage, group_m, k_off], sb,
                                           [*b_at, k_off], results)).results
        lb.insert(tl.WgmmaCommitOp())
        lb.insert(tl.WgmmaWaitOp(cfg.wgmma_in_flight))
    lb.insert(scf.YieldOp(*results))
    if after_mainloop is not None:  # every copy landed; the last wgmmas may still run
        after_mainloop(b)
    if wgmma and cfg.wgmma_in_flight:
        b.insert(tl.WgmmaWaitOp(0))

    def store_staged(body: BlockBuilder, tiles: list[SSAValue]) -> None:
        """cfg.staged_store: the tile through the epilogue into A's ring (columns 64 j ..
        in stage j, 128-byte swizzle), then whole rows out in 16-byte chunks. Barriers on
        both sides: no thread writes the ring while a wgmma may still read it, and none
        copies a k-tile into it (the next tile) before every row has left."""
        sync_threads(body)
        lane_rows = body.remui(body.divui(tid, 4), 8)  # (lane / 4) mod 8: a fragment row's

        def place(pb: BlockBuilder, row: SSAValue, col: int) -> list[SSAValue]:
            return [*ring, pb.idx(col // bk), row, staged_column(pb, col % bk, bk, lane_rows)]

        _store_accumulators(body, cfg, tiles, sa, (c_m0, n0), (warp_m, warp_n),
                            (mi_count, ni_count), False, bias, seed, (sa, place))
        sync_threads(body)
        if keep_in_ring:  # the next layer's A; its k-loop fences it for wgmma
            return

        def copy_out(cb: BlockBuilder, row: SSAValue, col: SSAValue) -> None:
            cb.insert(tl.CopyOutOp(C, [cb.addi(c_m0, row), cb.addi(n0, col)], sa,
                                   [*ring, cb.divui(col, bk), row, cb.remui(col, bk)],
                                   masked=mask_c, swizzle=swizzle_a))

        copy_chunks(body, bm * bn, bn, copy_out)
        sync_threads(body)

    def store_tiles(body: BlockBuilder, tiles: list[SSAValue]) -> None:
        if cfg.staged_store:
            store_staged(body, tiles)
        else:
            _store_accumulators(body, cfg, tiles, C, (c_m0, n0), (warp_m, warp_n),
                                (mi_count, ni_count), mask_c, bias, seed)
        if cfg.sync_hooks and store_point:
            body.insert(sync.StorePointOp([tile_x, tile_y]))

    if split == 1:
        store_tiles(b, list(loop.results))
    elif cfg.split_cluster:
        def store_unit(body: BlockBuilder, unit_tiles: list[SSAValue], mi: int, ni: int
                       ) -> None:
            _store_accumulators(body, cfg, unit_tiles, C, (c_m0, n0),
                                (body.addi(warp_m, mi * 16), body.addi(warp_n, ni * 8)),
                                (1, len(unit_tiles)), mask_c, bias, seed)

        _reduce_in_cluster(b, ops.partial, split, place,
                           list(loop.results), (mi_count, ni_count),
                           2 if cfg.epilogue == "swiglu" else 1, store_unit)
    else:
        # Split-K: add this slice's partial tile into the workspace, arrive on the tile's
        # counter; the last slice to arrive takes the sums, runs the epilogue, stores C, and
        # (with sync hooks) posts the tile: the store point is in its branch only.
        workspace, counters = ops.workspace, ops.counters
        positions = []
        for mi in range(mi_count):
            row = b.addi(b.addi(c_m0, warp_m), mi * 16)
            for ni in range(ni_count):
                col = b.addi(b.addi(n0, warp_n), ni * 8)
                positions.append((row, col))
                b.insert(tl.StoreAccOp(loop.results[mi * ni_count + ni], workspace, [row, col],
                                       masked=mask_c, reduce=True))
        last = b.emit(tl.ArriveOp(counters, [tile_x, tile_y], split))
        final = Block()
        fb = BlockBuilder(final)
        sums = [fb.emit(tl.TakeAccOp(workspace, [row, col], masked=mask_c))
                for row, col in positions]
        store_tiles(fb, sums)
        fb.insert(scf.YieldOp())
        b.insert(scf.IfOp(last, [], Region(final)))


def _reduce_in_cluster(b: BlockBuilder, partial: SSAValue | None, split: int,
                       place: TilePlace, accs: list[SSAValue],
                       counts: tuple[int, int], unit: int,
                       store_unit: Callable[[BlockBuilder, list[SSAValue], int, int], None]
                       ) -> None:
    """Split-K slices that are the CTAs of one cluster (slice z is CTA z) finish the tile
    together: a warp's store units (a 16 x 8 fragment, two for swiglu's gate and up) go round
    robin to the slices, unit u to slice u mod split. Each slice stores the units it does not
    finish into its own `partial` buffer, the cluster meets at a barrier, each slice reads
    the units it finishes from its peers' buffers through the cluster's shared memory, adds
    them to its own accumulators and stores them through the epilogue (`store_unit(body,
    accumulators, mi, ni)`), and the cluster meets again (no CTA leaves while its buffer may
    still be read). On an H200 (batch-8 7x7 conv, split 2) the peers adding into one slice's
    buffer instead (`red.shared::cluster`) took 26.8 us, one slice finishing the whole tile
    16.6 us (about 2 us more a further peer), the workspace's global `red.add`s 18.3 us, and
    this 16.2 us."""
    if partial is None or place.k_slice is None:
        raise ValueError("split_cluster reduces through ops.partial, by the slice's k_slice")
    slice_ = place.k_slice  # this CTA's rank in the cluster
    mi_count, ni_count = counts
    units = [(mi, ni) for mi in range(mi_count) for ni in range(0, ni_count, unit)]
    owned = [[u for i, u in enumerate(units) if i % split == owner] for owner in range(split)]

    def fragments(mi: int, ni: int) -> list[tuple[SSAValue, SSAValue, SSAValue]]:
        """(accumulator, row, column in the tile) of the unit's fragments."""
        return [(accs[mi * ni_count + n], b.addi(place.warp_m, mi * 16),
                 b.addi(place.warp_n, n * 8)) for n in range(ni, ni + unit)]

    def is_slice(owner: int, predicate: str) -> SSAValue:
        return b.emit(arith.CmpiOp(slice_, b.idx(owner), predicate))

    for owner, mine in enumerate(owned):  # the units another slice finishes: to the buffer
        if mine:
            b.when(is_slice(owner, "ne"), lambda body, mine=mine: [
                body.insert(tl.StoreAccOp(acc, partial, [row, col]))
                for mi, ni in mine for acc, row, col in fragments(mi, ni)])
    b.insert(tl.ClusterBarrierOp())

    def finish(body: BlockBuilder, owner: int, mine: list[tuple[int, int]]) -> None:
        # every peer's loads first, then the sums: an add waiting on one load would hold the
        # loads behind it, a round trip through the cluster each
        peers = [body.idx(peer) for peer in range(split) if peer != owner]
        parts = [[[body.emit(tl.TakeAccOp(partial, [row, col], cta=peer)) for peer in peers]
                  for _, row, col in fragments(mi, ni)] for mi, ni in mine]
        for (mi, ni), unit_parts in zip(mine, parts, strict=True):
            sums = []
            for (acc, _, _), loaded in zip(fragments(mi, ni), unit_parts, strict=True):
                for fragment in loaded:
                    acc = body.emit(tl.AddAccOp(acc, fragment))
                sums.append(acc)
            store_unit(body, sums, mi, ni)

    for owner, mine in enumerate(owned):
        if mine:
            b.when(is_slice(owner, "eq"), lambda body, owner=owner, mine=mine:
                 finish(body, owner, mine))
    b.insert(tl.ClusterBarrierOp())


def load_resident_b(b: BlockBuilder, cfg: GemmConfig, B: SSAValue, sb: SSAValue,
                    tid: SSAValue, threads: int | None = None,
                    at: tuple[int, int] = (0, 0)) -> None:
    """Copy all of B (N x K, K-major) into `sb` (k-tiles x BN x BK, wgmma's swizzle) and wait
    for it: every thread's copies landed, visible to the async proxy wgmma reads through.
    `threads`: the block's threads, when more than the tile's (several tiles at once); `at`:
    the k-tile slot and row of `sb` where B starts (several layers' weights side by side;
    rows a multiple of 8, whole swizzle atoms)."""
    if at[1] % 8:
        raise ValueError(f"B's rows start at a whole 8-row swizzle atom, got row {at[1]}")
    bn, bk = cfg.tile[1], cfg.tile[2]
    swizzle = tl.swizzle_for_row(bk)
    chunks = cfg.k_tiles * bn * bk // 8
    per_row = bk // 8
    threads = threads or cfg.threads
    # A loop, not one copy per round: the load runs once per CTA, and unrolled it was a third
    # of an MLP stack stage's IR (compile time), for no measurable gain.
    body = Block(arg_types=[IndexType()])
    lb = BlockBuilder(body)
    chunk = lb.addi(tid, lb.muli(body.args[0], threads))
    guarded = Block()
    gb = BlockBuilder(guarded)
    row_chunk = gb.divui(chunk, per_row)  # over k-tiles x BN rows
    k_tile, row = gb.divui(row_chunk, bn), gb.remui(row_chunk, bn)
    col = gb.muli(gb.remui(chunk, per_row), 8)
    gb.insert(tl.CpAsyncOp(sb, [gb.addi(k_tile, at[0]), gb.addi(row, at[1]), col], B,
                           [row, gb.addi(gb.muli(k_tile, bk), col)], swizzle=swizzle))
    gb.insert(scf.YieldOp())
    lb.insert(scf.IfOp(lb.ult(chunk, chunks), [], Region(guarded)))
    lb.insert(scf.YieldOp())
    b.insert(scf.ForOp(b.idx(0), b.idx(-(-chunks // threads)), b.idx(1), [], Region(body)))
    b.insert(tl.CpAsyncCommitOp())
    b.insert(tl.CpAsyncWaitOp(0))
    b.insert(tl.FenceProxyAsyncOp())
    b.insert(gpu.BarrierOp())


def gemm_module(M: int, N: int, K: int, tile=(128, 128, 32), warps=(2, 2),
                stages: int = 3, dtype: str = "f16", b_layout: str = "row",
                epilogue: str | None = None, name: str = "gemm", sync_hooks: bool = False, *,
                config: GemmConfig | None = None, a_type: MemRefType | None = None,
                a_source: ASource | None = None, b_type: MemRefType | None = None,
                b_source: ASource | None = None) -> ModuleOp:
    """The GEMM as a builtin.module holding one gpu.module with one kernel.

    `a_type` / `a_source` replace the A operand and how a 16-byte chunk of the logical M x K
    A is addressed in it (conv2d's implicit im2col); `b_type` / `b_source` do the same for B
    (its logical layout: K x N for `b_layout="row"`, N x K for `"col"`), e.g. attention's K and
    V read in place as column slices of the QKV GEMM's output (`column_slice`)."""
    cfg = config or gemm_config(M, N, K, tile, warps, stages, dtype, b_layout, epilogue, name,
                                sync_hooks)
    if cfg.warp_specialized:
        from tilesync.kernels.gemm_tma import tma_ws_module

        return tma_ws_module(cfg)
    elem = cfg.element_type
    bm, bn, _ = cfg.tile
    wm_count, wn_count = cfg.warps
    wtm, wtn = bm // wm_count, bn // wn_count  # warp tile
    split = cfg.split_k

    b_logical = [cfg.K, cfg.N] if cfg.b_layout == "row" else [cfg.N, cfg.K]
    logical_a = MemRefType(elem, [cfg.M, cfg.K - cfg.a_head])
    logical_b = MemRefType(elem, b_logical)
    c_type = MemRefType(elem, [cfg.M, cfg.out_cols])
    inputs: list[Attribute] = [a_type or logical_a, b_type or logical_b, c_type]
    if cfg.a_head:
        inputs.append(MemRefType(elem, [cfg.M, cfg.a_head]))
    if cfg.has_bias:
        inputs.append(MemRefType(elem, [cfg.out_cols]))
    if cfg.dropout is not None:
        inputs.append(i32)
    if cfg.split_workspace:
        inputs.append(MemRefType(f32, list(cfg.workspace_shape)))
        inputs.append(MemRefType(i32, list(cfg.counters_shape)))
    sa_type, sb_type = stage_buffer_types(cfg)
    partial_type = MemRefType(f32, [bm, bn], memory_space=IntegerAttr(3, 64))

    kernel = gpu.FuncOp(cfg.kernel_name, (inputs, []), kernel=True,
                        known_block_size=list(cfg.block))
    if cfg.split_cluster:
        kernel.attributes[CLUSTER_DIMS_ATTR] = DenseArrayBase.from_list(i32,
                                                                       list(cfg.cluster_dims))
    entry = kernel.body.block
    args = named_args(kernel, cfg.params)
    A, B, C = args["A"], args["B"], args["C"]
    bias, seed = args.get("bias"), args.get("seed")
    b = BlockBuilder(entry)

    tid = b.emit(gpu.ThreadIdOp(gpu.DimensionAttr(gpu.DimensionEnum.X)))
    tile_x, tile_y = block_tile(b, cfg.sync_hooks)
    m0 = b.muli(tile_x, bm)
    n0 = b.muli(tile_y, bn)
    k_begin = slice_z = k_count = None
    if split > 1:
        slice_z = b.emit(gpu.BlockIdOp(gpu.DimensionAttr(gpu.DimensionEnum.Z)))
        k_begin, k_count = split_k_range(b, cfg, slice_z)
    warp = b.divui(tid, 32)
    warp_m = b.muli(b.divui(warp, wn_count), wtm)
    warp_n = b.muli(b.remui(warp, wn_count), wtn)
    sa = b.emit(memref.GetGlobalOp("smem_a", sa_type))
    sb = b.emit(memref.GetGlobalOp("smem_b", sb_type))
    partial = b.emit(memref.GetGlobalOp("smem_partial", partial_type)) \
        if cfg.split_cluster else None

    operands = TileOperands(A, B, C, bias, seed, args.get("workspace"), args.get("counters"),
                            args.get("A_head"), partial)
    place = TilePlace(tid, warp, warp_m, warp_n, m0, n0, (tile_x, tile_y), k_begin,
                      k_slice=slice_z, k_count=k_count)
    if cfg.triangular_c:  # a tile wholly above the diagonal: nothing to compute, still posted
        below = Block()
        bb = BlockBuilder(below)
        emit_tile(bb, cfg, operands, place, sa, sb, a_source, b_source, store_point=False)
        bb.insert(scf.YieldOp())
        last = last_position(b, m0, cfg.triangular_c, bm)
        b.insert(scf.IfOp(b.emit(arith.CmpiOp(n0, last, "ule")), [], Region(below)))
        if cfg.sync_hooks:
            b.insert(sync.StorePointOp([tile_x, tile_y]))
    else:
        emit_tile(b, cfg, operands, place, sa, sb, a_source, b_source)
    b.insert(gpu.ReturnOp([]))

    buffers = stage_buffers(cfg)
    if cfg.split_cluster:
        buffers.append(shared_global("smem_partial", partial_type,
                                      cfg.dynamic_shared_bytes > 0, 16))
    gpu_module = gpu.ModuleOp(StringAttr(f"{cfg.name}_module"),  # type: ignore[arg-type]
                              Region(Block([*buffers, kernel])))
    return ModuleOp([gpu_module])


def gemm_kernel(M: int, N: int, K: int, tile=(128, 128, 32), warps=(2, 2), stages: int = 3,
                dtype: str = "f16", b_layout: str = "row", epilogue: str | None = None,
                name: str = "gemm", sync_hooks: bool = False) -> str:
    """MLIR text of a gpu.module with one GEMM kernel (see the module docstring)."""
    return str(gemm_module(M, N, K, tile, warps, stages, dtype, b_layout, epilogue, name,
                           sync_hooks))


__all__ = ["ASource", "TileOperands", "TileOrigin", "TilePlace", "column_slice", "dropout_op",
           "emit_tile", "gemm_kernel", "gemm_module", "load_resident_b", "named_args",
           "stage_buffers"]

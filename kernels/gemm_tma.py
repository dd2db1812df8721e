"""The warp-specialized, persistent wgmma GEMM (sm_90a): `GemmConfig(pipeline="tma_ws")`.

    tma_ws_module(cfg) -> builtin.module   (gemm_module dispatches here for tma_ws configs)

C = epilogue(A @ B^T-as-stored), A M x K and B N x K row-major (K-major operands, as wgmma
reads them), C M x N row-major. A and B reach the kernel as TMA tensor maps
(`!tile.tensor_map`: boxes of BM x 64 and BN x 64 elements, 128-byte swizzle); C, bias and
seed as for the cp.async pipeline.

The block is BM / 64 consumer warpgroups followed by a producer warp (or, with
`producer_warps=4`, a producer warpgroup that hands registers to the consumers with
setmaxnreg); a tall tile (BM = 256, `GemmConfig.tall`) has two consumer warpgroups of 128 rows,
each two wgmma of 64 rows a k16 step on the same B buffer, and stores its two 64-row bands one
after the other. Shared memory holds a ring of `stages` buffers (a BM x 64 tile of A and a BN x 64
tile of B each, in the 128-byte swizzled layout the copy engine writes and wgmma reads) with two
transaction barriers per buffer: `full` (one arrival, the producer's, plus the bytes of both
copies) and `empty` (one arrival per consumer warpgroup). A ring position `it`, the count of
k-steps modulo 2 stages, names the buffer, it mod stages, and the phase, it >= stages (kept
modulo 2 stages so that neither needs a division in the k-loop); both roles count the same
k-steps in the same order, so no other state is shared:

    producer (one thread):                  consumer warpgroup g:
    for each tile of this block:            for each tile of this block:
      for kt in 0 .. KT-1:                    acc = 0
        wait empty[s] (parity phase ^ 1)      for kt in 0 .. KT-1:
        arrive full[s], expect the bytes        wait full[s] (parity phase)
        TMA A[m0, 64 kt] -> a[s]                wgmma.fence; 4 x wgmma m64nBNk16 (rows 64 g..)
        TMA B[n0, 64 kt] -> b[s]                commit; wait (in flight: 1 or 0 groups)
                                                one thread: arrive empty[the finished buffer]
                                              store the accumulators through the epilogue

A block takes tiles blockIdx.x, blockIdx.x + gridDim.x, ... (a persistent grid of at most one
block per SM); tile t is (tm, tn) in grouped order: groups of `raster_group` tile rows, M
fastest inside a group, so the blocks running at once share B's columns (and A's rows) in L2.
The producer runs ahead into the next tile while the consumers store this one. Edges: the copy
engine zero-fills boxes outside A and B (M, N and K need not be multiples of the tile), and the
stores are masked.

With `tma_store=True` (C a tensor map too) the consumers do not store from registers: they
write the tile through the epilogue into a staging buffer in shared memory (per warpgroup, its
64 rows as boxes of 64, 32, 16 or 8 columns in the copy engine's swizzle of that row width), fence
the async proxy, meet at a named barrier, and each warpgroup's leader copies its boxes out with
TMA stores in one bulk group. The next tile's multiply starts while the copies drain; the
leader waits for them to have read the buffer only before it is written again (and before the
block exits).

With `cluster_m=2`, a cluster's two blocks take vertically adjacent tiles (the same columns of
B): each copies half of B's tile and multicasts it to both, and a consumer frees a buffer in
both blocks (its `empty` barrier counts the consumers of the cluster).

Sync hooks (`sync_hooks=True`): the producer thread marks each k-tile's copy of A (operand
0) and of B (operand 1) with `sync.load_point ... step kt single_thread async_proxy` right
before it, after the buffer's `full` barrier expects both copies' bytes (its waits spin in that
thread and fence the async proxy before the copy; sync-reorder-loads may issue B's copy ahead
of A's hook where only A is produced: R), and the consumer warpgroups
mark each stored tile with `sync.store_point [tm, tn] threads <consumer threads>` (a named
barrier of the consumers, then one of them posts). With the TMA-store epilogue the store
point is `async_proxy`: each leader first waits for its copies' writes (complete, and ordered
before the generic proxy's release), so a posted tile is in global memory. Without
dependencies the hooks vanish.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects import arith, gpu, memref, scf
from xdsl.dialects.builtin import (
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
    f32,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Region, SSAValue

from tilesync.analysis.occupancy import register_cap
from tilesync.contract import (
    CLUSTER_DIMS_ATTR,
    IM2COL_CORNERS,
    MIN_BLOCKS_PER_SM_ATTR,
    PINGPONG_STAGING_NAMED_BARRIERS,
    STAGING_NAMED_BARRIER,
)
from tilesync.dialects import sync
from tilesync.dialects import tile as tl
from tilesync.kernels.builder import BlockBuilder
from tilesync.kernels.config import (
    IM2COL_FILTER,
    GemmConfig,
    tensor_map_swizzle,
)
from tilesync.kernels.gemm import (
    _frag,
    _store_accumulators,
    named_args,
    shared_global,
    staged_column,
)

PRODUCER_REGISTERS = 40
"""setmaxnreg of a producer warpgroup: it only computes addresses and issues copies."""


def consumer_registers(cfg: GemmConfig) -> int:
    """setmaxnreg of the consumer warpgroups: what the producer's 40 leave of the block's
    registers (its threads times the registers ptxas allots each with cfg.blocks_per_sm blocks
    on an SM, `register_cap`). Asking for more than the block holds waits forever: 4 consumer
    warpgroups asked for 112 of the SM's 65536 where their 640-thread block holds 96 a
    thread."""
    pool = register_cap(cfg.threads, blocks=cfg.blocks_per_sm) * cfg.threads
    free = pool - PRODUCER_REGISTERS * 32 * cfg.producer_warps
    return min(256, free // cfg.consumer_threads // 8 * 8)


def _dim(b: BlockBuilder, kind: type, dim: gpu.DimensionEnum = gpu.DimensionEnum.X) -> SSAValue:
    return b.emit(kind(gpu.DimensionAttr(dim)))


def _if(b: BlockBuilder, cond: SSAValue, then, otherwise=None) -> None:
    """`scf.if cond` whose branches `then(body)` / `otherwise(body)` build (no results)."""
    regions = []
    for build in (then, otherwise):
        if build is None:
            continue
        block = Block()
        build(BlockBuilder(block))
        block.add_op(scf.YieldOp())
        regions.append(Region(block))
    b.insert(scf.IfOp(cond, [], *regions))


def _if_values(b: BlockBuilder, cond: SSAValue, types: list[Attribute], then,
               otherwise) -> list[SSAValue]:
    """`scf.if cond -> (types)` whose branches `then(body)` / `otherwise(body)` build and
    return the values they yield; its results."""
    regions = []
    for build in (then, otherwise):
        block = Block()
        block.add_op(scf.YieldOp(*build(BlockBuilder(block))))
        regions.append(Region(block))
    return list(b.insert(scf.IfOp(cond, types, *regions)).results)


def _select(b: BlockBuilder, cond: SSAValue, then: SSAValue, otherwise: SSAValue) -> SSAValue:
    return b.emit(arith.SelectOp(cond, then, otherwise))


def _ring_stage(b: BlockBuilder, pos: SSAValue, stages: int) -> SSAValue:
    """The buffer of ring position `pos` (in [0, 2 stages)): pos mod stages, by a compare
    rather than a division (stages need not be a power of two)."""
    second_lap = b.emit(arith.CmpiOp(pos, b.idx(stages), "uge"))
    return _select(b, second_lap, b.subi(pos, stages), pos)


def _ring_parity(b: BlockBuilder, pos: SSAValue, stages: int, flip: bool) -> SSAValue:
    """The phase of ring position `pos` as an i1 (pos >= stages), inverted for the
    producer's wait on `empty`."""
    return b.emit(arith.CmpiOp(pos, b.idx(stages), "ult" if flip else "uge"))


def _ring_next(b: BlockBuilder, pos: SSAValue, stages: int) -> SSAValue:
    """The position after `pos`: (pos + 1) mod 2 stages."""
    after = b.addi(pos, 1)
    wraps = b.emit(arith.CmpiOp(after, b.idx(2 * stages), "eq"))
    return _select(b, wraps, b.idx(0), after)


def _previous_stage(b: BlockBuilder, stage: SSAValue, stages: int) -> SSAValue:
    """The buffer before `stage` in the ring."""
    first = b.emit(arith.CmpiOp(stage, b.idx(0), "eq"))
    return _select(b, first, b.idx(stages - 1), b.subi(stage, 1))


def _im2col_window(b: BlockBuilder, cfg: GemmConfig, m0: SSAValue) -> list[SSAValue]:
    """The im2col window position (n, h, w) of the tile's first output pixel m0: its image
    and its pixel moved by the window's lower corners (IM2COL_CORNERS)."""
    _, height, width, _ = cfg.im2col
    (lower_h, lower_w), _ = IM2COL_CORNERS
    n = b.divui(m0, height * width)
    pixel = b.remui(m0, height * width)
    return [n, b.addi(b.divui(pixel, width), lower_h), b.addi(b.remui(pixel, width), lower_w)]


def _im2col_step(b: BlockBuilder, cfg: GemmConfig, window: list[SSAValue], kt: SSAValue
                 ) -> tuple[list[SSAValue], list[SSAValue]]:
    """k-tile kt of the implicit GEMM (K as (r, s, c), c fastest): the coordinates (n, h, w,
    channel) and the filter offsets (r, s) of its im2col copy."""
    channel_tiles = cfg.im2col[3] // cfg.tile[2]
    tap = b.divui(kt, channel_tiles)
    channel = b.muli(b.remui(kt, channel_tiles), cfg.tile[2])
    taps_in_a_row = IM2COL_FILTER[1]
    return [*window, channel], [b.divui(tap, taps_in_a_row), b.remui(tap, taps_in_a_row)]


def _tile_coords(b: BlockBuilder, cfg: GemmConfig, t: SSAValue,
                 rank: SSAValue | None) -> tuple[SSAValue, SSAValue]:
    """(tm, tn) of this block's tile of linear cluster tile t, in grouped order (M fastest
    inside a group of tile rows); a cluster's blocks take its rows cluster_m tm + rank."""
    tiles_m = -(-cfg.tile_grid[0] // cfg.cluster_m)
    tiles_n = cfg.tile_grid[1]
    group = min(cfg.raster_group, tiles_m)
    per_group = group * tiles_n
    first_m = b.muli(b.divui(t, per_group), group)
    within = b.remui(t, per_group)
    if tiles_m % group == 0:  # every group is full: constant divisors
        tm, tn = b.addi(first_m, b.remui(within, group)), b.divui(within, group)
    else:
        rows = b.emit(arith.MinUIOp(b.emit(arith.SubiOp(b.idx(tiles_m), first_m)),
                                    b.idx(group)))
        tm, tn = b.addi(first_m, b.remui(within, rows)), b.divui(within, rows)
    if rank is not None:
        tm = b.addi(b.muli(tm, cfg.cluster_m), rank)
    return tm, tn


@dataclass(frozen=True)
class Segment:
    """k-steps [k_begin, k_end) of output tile (tm, tn) (its k-tiles, but where `rotation`
    maps them), linear tile `t` of the persistent order (None for a block's one tile).
    `whole`: an i1, true where the segment is the whole tile, or None where it is statically
    whole (every segment but stream-K's)."""

    t: SSAValue | None
    tm: SSAValue
    tn: SSAValue
    k_begin: SSAValue
    k_end: SSAValue
    whole: SSAValue | None = None
    slot: SSAValue | None = None
    """stream-K: the workspace slot of the block's partial tile for this segment (2 x for
    its first segment, 2 x + 1 for its last: only those two can be short of a tile)."""
    rotation: SSAValue | None = None
    """stream-K: the tile's steps [k_begin, k_end) load k-tiles rotated back by this many
    (`_tile_rotation`, `loaded_k_tiles`); only the producer's copies depend on it."""

    def loaded_k_tiles(self, b: BlockBuilder, k_tiles: int) -> tuple[SSAValue, SSAValue]:
        """The k-tiles [first, end) the segment's steps load (its steps themselves where the
        tile is not rotated): a rotated segment does not wrap around the last k-tile."""
        if self.rotation is None:
            return self.k_begin, self.k_end
        first = b.remui(b.emit(arith.SubiOp(b.addi(self.k_begin, k_tiles), self.rotation)),
                        k_tiles)
        return first, b.addi(first, b.emit(arith.SubiOp(self.k_end, self.k_begin)))


def _work_loop(b: BlockBuilder, cfg: GemmConfig, body, rank: SSAValue | None,
               tile: tuple[SSAValue, SSAValue] | None) -> None:
    """The block's work: `body(builder, segment, it) -> it after the segment`, the ring
    position `it` carried from 0. Persistent: for t = cluster; t < cluster tiles; t += clusters (a
    cluster being one block without clusters; a cluster's blocks are consecutive in x), tile t
    in grouped order, whole; with stream-K only the tiles before the shared ones, then the
    block's run of the shared tiles' k-steps (`_stream_k_loop`). Otherwise the block's one
    `tile`."""
    k_tiles = cfg.k_tiles
    if not cfg.persistent:
        assert tile is not None
        body(b, Segment(None, *tile, b.idx(0), b.idx(k_tiles)), b.idx(0))
        return
    first = _dim(b, gpu.BlockIdOp)
    step = _dim(b, gpu.GridDimOp)
    if cfg.cluster_m > 1:
        first, step = b.divui(first, cfg.cluster_m), b.divui(step, cfg.cluster_m)
    block = Block(arg_types=[IndexType(), IndexType()])
    t, it = block.args
    lb = BlockBuilder(block)
    whole = Segment(t, *_tile_coords(lb, cfg, t, rank), lb.idx(0), lb.idx(k_tiles))
    lb.insert(scf.YieldOp(body(lb, whole, it)))
    dp_tiles = cfg.cluster_tiles - cfg.stream_k_tiles
    loop = b.insert(scf.ForOp(first, b.idx(dp_tiles), step, [b.idx(0)], Region(block)))
    if cfg.stream_k_tiles:
        _stream_k_loop(b, cfg, body, dp_tiles, loop.results[0])


def _stream_k_split(cfg: GemmConfig) -> tuple[int, int]:
    """(per, extra): every block takes `per` of the shared tiles' k-steps, the first `extra`
    one more."""
    return divmod(cfg.stream_k_tiles * cfg.k_tiles, cfg.sms)


def _run_start(b: BlockBuilder, cfg: GemmConfig, block: SSAValue) -> SSAValue:
    """The first shared k-step of `block`'s run (of the next block's: where it ends)."""
    per, extra = _stream_k_split(cfg)
    return b.addi(b.muli(block, per), b.emit(arith.MinUIOp(block, b.idx(extra))))


def _run_owner(b: BlockBuilder, cfg: GemmConfig, step: SSAValue) -> SSAValue:
    """The block whose run holds shared k-step `step`."""
    per, extra = _stream_k_split(cfg)
    longer = extra * (per + 1)  # the steps of the first `extra` blocks
    among_longer = b.divui(step, per + 1)
    if per == 0:  # only the first `extra` blocks have steps
        return among_longer
    past = b.emit(arith.SubiOp(b.emit(arith.MaxUIOp(step, b.idx(longer))), b.idx(longer)))
    among_rest = b.addi(b.divui(past, per), extra)
    is_longer = b.emit(arith.CmpiOp(step, b.idx(longer), "ult"))
    return _select(b, is_longer, among_longer, among_rest)


def _tile_rotation(b: BlockBuilder, cfg: GemmConfig, shared: SSAValue) -> SSAValue:
    """The k-tile at which shared tile `shared`'s steps are taken from: the tile-relative step
    of the first run that starts inside it (0 where none does, or one starts at its first
    step). Its step j reads k-tile (j - rotation) mod k_tiles, so every run's first segment
    reads k-tiles 0, 1, ... like a whole tile and the blocks of a shared round read A's and
    B's k-tiles at about the same time, as the data-parallel rounds do, sharing them in L2;
    no segment wraps around the tile's last k-tile."""
    k_tiles = cfg.k_tiles
    first = b.muli(shared, k_tiles)
    owner = _run_owner(b, cfg, first)
    next_start = _run_start(b, cfg, b.addi(owner, 1))
    began_before = b.emit(arith.CmpiOp(_run_start(b, cfg, owner), first, "ult"))
    starts_inside = b.emit(arith.CmpiOp(next_start, b.addi(first, k_tiles), "ult"))
    inside = b.emit(arith.AndIOp(began_before, starts_inside))
    return _select(b, inside, b.emit(arith.SubiOp(next_start, first)), b.idx(0))


def _stream_k_loop(b: BlockBuilder, cfg: GemmConfig, body, dp_tiles: int,
                   it: SSAValue) -> None:
    """Block x's run [start, end) of the shared tiles' k-steps (numbered tile by tile from
    the first shared tile, dp_tiles; x per + min(x, extra) onwards, `extra` the remainder of
    the even split), as segments of at most one tile each: a loop of as many
    steps as a run can cross tiles, each step taking the next segment while the run lasts."""
    k_tiles = cfg.k_tiles
    per, extra = _stream_k_split(cfg)
    x = _dim(b, gpu.BlockIdOp)
    start, end = _run_start(b, cfg, x), _run_start(b, cfg, b.addi(x, 1))
    most = per + (1 if extra else 0)
    segments = -(-most // k_tiles) + 1  # a run of `most` k-steps crosses at most this many

    block = Block(arg_types=[IndexType(), IndexType(), IndexType()])
    step_index, i, it_in = block.args
    sb = BlockBuilder(block)
    active = sb.emit(arith.CmpiOp(i, end, "ult"))

    then = Block()
    tb = BlockBuilder(then)
    local = tb.remui(i, k_tiles)
    count = tb.emit(arith.MinUIOp(tb.emit(arith.SubiOp(tb.idx(k_tiles), local)),
                                  tb.emit(arith.SubiOp(end, i))))
    shared = tb.divui(i, k_tiles)
    t = tb.addi(shared, dp_tiles)
    whole = tb.emit(arith.CmpiOp(count, tb.idx(k_tiles), "eq"))
    slot = tb.addi(tb.muli(x, 2), tb.emit(arith.MinUIOp(step_index, tb.idx(1))))
    segment = Segment(t, *_tile_coords(tb, cfg, t, None), local, tb.addi(local, count),
                      whole, slot, _tile_rotation(tb, cfg, shared))
    it_out = body(tb, segment, it_in)
    tb.insert(scf.YieldOp(tb.addi(i, count), it_out))
    otherwise = Block()
    otherwise.add_op(scf.YieldOp(i, it_in))
    step = sb.insert(scf.IfOp(active, [IndexType(), IndexType()], Region(then),
                              Region(otherwise)))
    sb.insert(scf.YieldOp(*step.results))
    b.insert(scf.ForOp(b.idx(0), b.idx(segments), b.idx(1), [start, it], Region(block)))


def tma_ws_module(cfg: GemmConfig) -> ModuleOp:
    """The warp-specialized GEMM of `cfg` as a builtin.module with one gpu.module."""
    assert cfg.warp_specialized
    elem = cfg.element_type
    bm, bn, bk = cfg.tile
    stages = cfg.stages
    bands = bm // 64  # the tile's 64-row bands: a staging slab each
    acc_count = bn // 8
    acc_type = _frag("acc", f32)
    shared = IntegerAttr(3, 64)
    maps = {name: tl.TensorMapType(box, elem, tensor_map_swizzle(box),
                                   im2col=cfg.im2col if name == "A" else None)
            for name, box in cfg.tensor_map_boxes.items()}
    c_param = maps["C"] if cfg.tma_store else MemRefType(elem, [cfg.M, cfg.out_cols])
    inputs: list[Attribute] = [maps["A"], maps["B"], c_param]
    if cfg.has_bias:
        inputs.append(MemRefType(elem, [cfg.out_cols]))
    if cfg.dropout is not None:
        inputs.append(i32)
    if cfg.stream_k_tiles:
        inputs += [MemRefType(f32, list(cfg.workspace_shape)),
                   MemRefType(i32, list(cfg.counters_shape))]
    sa_type = MemRefType(elem, [stages, bm, bk], memory_space=shared)
    # B N x K: BN rows of BK; K x N (b_layout='row', N-major): BN / 64 boxes of BK rows of 64
    n_major = cfg.b_layout == "row"
    b_atoms = bn // tl.WGMMA_N_ATOM
    sb_type = MemRefType(elem, [stages, b_atoms, bk, tl.WGMMA_N_ATOM] if n_major
                         else [stages, bn, bk], memory_space=shared)
    bars_type = MemRefType(i64, [stages], memory_space=shared)
    box_rows, box_cols = cfg.staging_box if cfg.tma_store else (0, 1)
    # the staging buffer: per 64-row band of the tile, its rows as boxes of box_cols columns
    # (all the tile's, or cfg.staging_boxes of them a round)
    sc_type = MemRefType(elem, [bands, cfg.staging_cols // box_cols, box_rows, box_cols],
                         memory_space=shared)
    stage_bytes = (bm + bn) * bk * 2

    kernel = gpu.FuncOp(cfg.kernel_name, (inputs, []), kernel=True,
                        known_block_size=list(cfg.block))
    # One block per SM (a persistent grid's): the register cap setmaxnreg needs, and 224
    # registers a thread for a producer warp beside two consumer warpgroups; one tile a block,
    # as many as cfg.blocks_per_sm.
    kernel.attributes[MIN_BLOCKS_PER_SM_ATTR] = IntegerAttr(cfg.blocks_per_sm, i32)
    cluster = cfg.cluster_m
    if cfg.cluster_dims is not None:
        kernel.attributes[CLUSTER_DIMS_ATTR] = DenseArrayBase.from_list(i32,
                                                                       list(cfg.cluster_dims))
    entry = kernel.body.block
    args = named_args(kernel, cfg.params)
    a_map, b_map, C = args["A"], args["B"], args["C"]
    bias, seed = args.get("bias"), args.get("seed")
    workspace, counters = args.get("workspace"), args.get("counters")
    b = BlockBuilder(entry)

    tid = _dim(b, gpu.ThreadIdOp)
    rank = b.remui(_dim(b, gpu.BlockIdOp), cluster) if cluster > 1 else None
    tile = None  # one tile a block: the block's (or, with hooks, sync.tile's, for the passes)
    if not cfg.persistent:
        tile = tuple(b.insert(sync.TileOp(rank=2)).results) if cfg.sync_hooks else \
            (_dim(b, gpu.BlockIdOp), _dim(b, gpu.BlockIdOp, gpu.DimensionEnum.Y))
    sa = b.emit(memref.GetGlobalOp("smem_a", sa_type))
    sb = b.emit(memref.GetGlobalOp("smem_b", sb_type))
    full = b.emit(memref.GetGlobalOp("full_bars", bars_type))
    empty = b.emit(memref.GetGlobalOp("empty_bars", bars_type))
    sc = b.emit(memref.GetGlobalOp("smem_c", sc_type)) if cfg.tma_store else None
    turns_type = MemRefType(i64, [2], memory_space=shared)
    turns = b.emit(memref.GetGlobalOp("turn_bars", turns_type)) if cfg.pingpong else None

    def init(ib: BlockBuilder) -> None:
        ib.insert(tl.PrefetchTensorMapOp(a_map))
        ib.insert(tl.PrefetchTensorMapOp(b_map))
        if cfg.tma_store:
            ib.insert(tl.PrefetchTensorMapOp(C))
        for s in range(stages):
            ib.insert(tl.MBarrierInitOp(full, [ib.idx(s)], 1))
            # every consumer warpgroup of the cluster frees the buffer its copies fill (in a
            # ping-pong, the one warpgroup whose tile the buffer holds)
            readers = 1 if cfg.pingpong else cfg.consumer_groups
            ib.insert(tl.MBarrierInitOp(empty, [ib.idx(s)], readers * cluster))
        if turns is not None:  # each ping-pong warpgroup's turn: the other's leader arrives
            for g in range(2):
                ib.insert(tl.MBarrierInitOp(turns, [ib.idx(g)], 1))

    _if(b, b.emit(arith.CmpiOp(tid, b.idx(0), "eq")), init)
    b.insert(tl.ClusterBarrierOp() if cluster > 1 else gpu.BarrierOp())
    tiles_m = cfg.tile_grid[0]
    phantom = cluster > 1 and tiles_m % cluster != 0  # the last cluster's extra tile row

    def producer(pb: BlockBuilder) -> None:
        if cfg.reallocates_registers:
            pb.insert(tl.SetMaxNRegOp("dec", PRODUCER_REGISTERS))

        def issue(ib: BlockBuilder) -> None:
            def one_tile(tb: BlockBuilder, segment: Segment, it: SSAValue) -> SSAValue:
                tm, tn = segment.tm, segment.tn
                if phantom:  # past the last row: load a real one (its stores are masked)
                    tm = tb.emit(arith.MinUIOp(tm, tb.idx(tiles_m - 1)))
                m0, n0 = tb.muli(tm, bm), tb.muli(tn, bn)
                k_first, k_end = segment.loaded_k_tiles(tb, cfg.k_tiles)
                # a cluster's blocks each load bn / cluster rows of B's tile, for all of them
                b_row = None if rank is None else tb.muli(rank, bn // cluster)
                window = _im2col_window(tb, cfg, m0) if cfg.im2col else None
                block = Block(arg_types=[IndexType(), IndexType()])
                kt, k_it = block.args
                kb = BlockBuilder(block)
                if cfg.l2_prefetch:  # ahead of the ring: it waits for no free buffer
                    ahead = kb.addi(kt, kb.idx(cfg.l2_prefetch))
                    b_first = n0 if b_row is None else kb.addi(n0, b_row)
                    _if(kb, kb.emit(arith.CmpiOp(ahead, k_end, "ult")),
                        lambda fb: fb.insert(tl.TmaPrefetchOp(
                            b_map, [b_first, fb.muli(ahead, bk)])))
                stage = _ring_stage(kb, k_it, stages)
                kb.insert(tl.MBarrierWaitOp(empty, [stage],
                                            _ring_parity(kb, k_it, stages, True)))
                kb.insert(tl.MBarrierArriveOp(full, [stage], stage_bytes))
                k0 = kb.muli(kt, bk)
                zero = kb.idx(0)

                def load_point(operand: int) -> None:
                    # each operand's copy after its own hook (its waits, from this one thread,
                    # through the async proxy): sync-reorder-loads may then issue the copy of
                    # an operand no stage produces before the wait for one that is (R)
                    if cfg.sync_hooks:
                        kb.insert(sync.LoadPointOp(operand, [tm, tn], kt, single_thread=True,
                                                   async_proxy=True))

                load_point(0)
                if window is None:
                    kb.insert(tl.TmaLoadOp(a_map, [m0, k0], sa, [stage, zero, zero], full,
                                           [stage]))
                else:
                    coords, offsets = _im2col_step(kb, cfg, window, kt)
                    kb.insert(tl.TmaLoadOp(a_map, coords, sa, [stage, zero, zero], full,
                                           [stage], im2col=offsets))
                load_point(1)
                if n_major:  # one box of BK rows a 64 columns of the tile
                    for atom in range(b_atoms):
                        kb.insert(tl.TmaLoadOp(b_map, [k0, kb.addi(n0, kb.idx(
                            atom * tl.WGMMA_N_ATOM))], sb, [stage, kb.idx(atom), zero, zero],
                            full, [stage]))
                elif b_row is None:
                    kb.insert(tl.TmaLoadOp(b_map, [n0, k0], sb, [stage, zero, zero], full,
                                           [stage]))
                else:
                    kb.insert(tl.TmaLoadOp(b_map, [kb.addi(n0, b_row), k0], sb,
                                           [stage, b_row, zero], full, [stage],
                                           multicast=(1 << cluster) - 1))
                kb.insert(scf.YieldOp(_ring_next(kb, k_it, stages)))
                loop = tb.insert(scf.ForOp(k_first, k_end, tb.idx(1), [it], Region(block)))
                return loop.results[0]

            _work_loop(ib, cfg, one_tile, rank, tile)

        _if(pb, pb.emit(arith.CmpiOp(tid, pb.idx(cfg.consumer_threads), "eq")), issue)

    def release(rb: BlockBuilder, buffer: SSAValue, leader: SSAValue) -> None:
        """The warpgroup's leader frees `buffer` (in every block of the cluster: their copies
        fill it in each)."""
        def arrive(ab: BlockBuilder) -> None:
            if cluster == 1:
                ab.insert(tl.MBarrierArriveOp(empty, [buffer]))
                return
            for cta in range(cluster):  # both blocks' copies fill this buffer
                ab.insert(tl.MBarrierArriveOp(empty, [buffer], cta=ab.idx(cta)))

        _if(rb, leader, arrive)

    def k_loop(tb: BlockBuilder, rows: list[SSAValue | int], k_begin: SSAValue,
               k_end: SSAValue, it: SSAValue, zero_acc: SSAValue, leader: SSAValue
               ) -> tuple[SSAValue, list[SSAValue]]:
        """A warpgroup's k-steps [k_begin, k_end) from ring position `it`: wait for the
        buffer, a wgmma of 64 rows (at each offset of `rows` in the tile) a k16 step, free the
        buffer the k-step before used (or this one, nothing in flight). Returns the position
        after them and the accumulators, rows after rows; the last group may still be in
        flight (`drain` finishes it)."""
        in_flight = cfg.wgmma_in_flight
        count = len(rows)
        block = Block(arg_types=[IndexType(), IndexType()] + [acc_type] * acc_count * count)
        kt, k_it, *accs = block.args
        kb = BlockBuilder(block)
        stage = _ring_stage(kb, k_it, stages)
        kb.insert(tl.MBarrierWaitOp(full, [stage], _ring_parity(kb, k_it, stages, False),
                                    wgmma_in_flight=in_flight > 0))
        kb.insert(tl.WgmmaFenceOp())
        results = [list(accs[r * acc_count:(r + 1) * acc_count]) for r in range(count)]
        zero = kb.idx(0)
        for kk in range(bk // 16):
            k_off = kb.idx(kk * 16)
            for r, row in enumerate(rows):
                row_at = kb.idx(row) if isinstance(row, int) else row
                # N-major B: the k16 step's rows of every atom (the descriptor strides them)
                b_at = [stage, zero, k_off, zero] if n_major else [stage, zero, k_off]
                results[r] = list(kb.insert(tl.WgmmaOp(sa, [stage, row_at, k_off], sb, b_at,
                                                       results[r], trans_b=n_major)).results)
        kb.insert(tl.WgmmaCommitOp())
        kb.insert(tl.WgmmaWaitOp(in_flight))
        if in_flight:  # the previous k-step's group is done: its buffer is free
            _if(kb, kb.emit(arith.CmpiOp(kt, k_begin, "ugt")),
                lambda rb: release(rb, _previous_stage(rb, stage, stages), leader))
        else:
            release(kb, stage, leader)
        kb.insert(scf.YieldOp(_ring_next(kb, k_it, stages), *[a for r in results for a in r]))
        loop = tb.insert(scf.ForOp(k_begin, k_end, tb.idx(1),
                                   [it, *([zero_acc] * acc_count * count)], Region(block)))
        it_after, *tiles = loop.results
        return it_after, list(tiles)

    def drain(tb: BlockBuilder, it_after: SSAValue, leader: SSAValue) -> None:
        """After a k-loop with a group in flight: finish it and free its buffer."""
        if cfg.wgmma_in_flight:
            tb.insert(tl.WgmmaWaitOp(0))
            release(tb, _previous_stage(tb, _ring_stage(tb, it_after, stages), stages), leader)

    def consumer(cb: BlockBuilder) -> None:
        if cfg.reallocates_registers:
            cb.insert(tl.SetMaxNRegOp("inc", consumer_registers(cfg)))
        group_rows = bm // cfg.consumer_groups  # 64, or a tall tile's 128
        group_m = cb.muli(cb.divui(tid, 128), group_rows)
        if cfg.tall:
            warp_m = cb.addi(group_m, cb.muli(cb.remui(cb.divui(tid, 32), 4), 16))
        else:  # warp w's 16 rows from 16 w
            warp_m = cb.muli(cb.divui(tid, 32), 16)
        group_leader = cb.emit(arith.CmpiOp(cb.remui(tid, 128), cb.idx(0), "eq"))
        zero_acc = cb.emit(tl.FillOp(cb.f32(0.0), acc_type))
        mask_c = cfg.M % bm != 0 or cfg.N % bn != 0 or phantom
        group_bands = range(group_rows // 64)

        def one_tile(tb: BlockBuilder, segment: Segment, it: SSAValue) -> SSAValue:
            tm, tn = segment.tm, segment.tn
            it_after, tiles = k_loop(tb, [tb.addi(group_m, 64 * h) if h else group_m
                                          for h in group_bands],
                                     segment.k_begin, segment.k_end, it, zero_acc,
                                     group_leader)
            drain(tb, it_after, group_leader)
            origin = (tb.muli(tm, bm), tb.muli(tn, bn))

            def store(sb: BlockBuilder, tiles: list[SSAValue]) -> None:
                for h in group_bands:  # the warpgroup's 64-row bands, one after the other
                    band_tiles = tiles[h * acc_count:(h + 1) * acc_count]
                    band_m = sb.addi(warp_m, 64 * h) if h else warp_m
                    if cfg.tma_store:
                        _store_through_staging(sb, band_tiles, origin, band_m, group_leader)
                    else:
                        _store_accumulators(sb, cfg, band_tiles, C, origin,
                                            (band_m, sb.idx(0)), (1, acc_count), mask_c,
                                            bias, seed)
                if cfg.sync_hooks:  # the consumer warpgroups stored the tile, not the producer
                    sb.insert(sync.StorePointOp([tm, tn], threads=cfg.consumer_threads,
                                                async_proxy=cfg.tma_store))

            if segment.whole is None:
                store(tb, list(tiles))
                return it_after
            # One epilogue for both kinds of segment: a short segment that completes its tile
            # stores the sums through the same code as a whole one.
            done, *final = _if_values(
                tb, segment.whole, [i1, *([acc_type] * acc_count)],
                lambda wb: [wb.emit(arith.ConstantOp(IntegerAttr(1, i1))), *tiles],
                lambda pb: _add_partial(pb, segment, list(tiles), warp_m))
            _if(tb, done, lambda sb: store(sb, final))
            return it_after

        _work_loop(cb, cfg, one_tile, rank, tile)
        if cfg.tma_store:  # the block's shared memory outlives the last copies' reads
            _if(cb, group_leader, lambda lb: lb.insert(tl.TmaStoreWaitOp(0)))

    def pingpong_consumer(cb: BlockBuilder) -> None:
        """Warpgroup g of two takes the block's tiles g, g + 2, ... of its walk, each whole
        (BM / 64 wgmma of 64 rows a k-step). The producer fills the ring with every tile's
        k-steps in walk order, so the warpgroup's tile starts KT ring positions (KT: the
        k-tiles of a tile) after the other's: it skips them past each of its tiles.

        The warpgroups multiply in turns: each waits on its turn barrier before a tile's
        k-loop (but warpgroup 0 before its first) and, once through it, its leader arrives on
        the other's (where the other has a next tile). Then the tensor cores run one tile at
        a time while the other warpgroup stores, and a warpgroup waits on its k-steps' `full`
        barriers only once every earlier k-step's copy has completed: a parity names one
        phase only while the barrier is at most one phase away, and a warpgroup's first
        k-step of a tile is KT k-steps past its previous one."""
        if cfg.reallocates_registers:
            cb.insert(tl.SetMaxNRegOp("inc", consumer_registers(cfg)))
        halves = bm // 64
        group = cb.divui(tid, 128)
        warp_m = cb.muli(cb.remui(cb.divui(tid, 32), 4), 16)
        group_leader = cb.emit(arith.CmpiOp(cb.remui(tid, 128), cb.idx(0), "eq"))
        zero_acc = cb.emit(tl.FillOp(cb.f32(0.0), acc_type))
        mask_c = cfg.M % bm != 0 or cfg.N % bn != 0 or phantom
        k_tiles = cfg.k_tiles
        skip = k_tiles % (2 * stages)  # the other warpgroup's tile, in ring positions

        def past_other(pb: BlockBuilder, pos: SSAValue) -> SSAValue:
            moved = pb.addi(pos, skip)
            wraps = pb.emit(arith.CmpiOp(moved, pb.idx(2 * stages), "uge"))
            return _select(pb, wraps, pb.emit(arith.SubiOp(moved, pb.idx(2 * stages))), moved)

        assert turns is not None
        # the walk of the block's cluster (one block without clusters), as _work_loop's
        blocks = _dim(cb, gpu.GridDimOp)
        own = _dim(cb, gpu.BlockIdOp)
        if cluster > 1:
            blocks, own = cb.divui(blocks, cluster), cb.divui(own, cluster)
        first = cb.addi(own, cb.muli(group, blocks))
        stride = cb.muli(blocks, 2)
        it_first = _select(cb, cb.emit(arith.CmpiOp(group, cb.idx(0), "eq")), cb.idx(0),
                           cb.idx(skip))
        other = cb.emit(arith.SubiOp(cb.idx(1), group))

        walk = Block(arg_types=[IndexType(), IndexType(), IndexType()])
        t, it, turn = walk.args  # turn: the turns this warpgroup has had, plus its index
        tb = BlockBuilder(walk)
        tm, tn = _tile_coords(tb, cfg, t, rank)

        def wait_turn(wb: BlockBuilder) -> None:
            parity = wb.emit(arith.CmpiOp(wb.remui(turn, 2), wb.idx(0), "eq"))
            wb.insert(tl.MBarrierWaitOp(turns, [group], parity))

        _if(tb, tb.emit(arith.CmpiOp(turn, tb.idx(0), "ne")), wait_turn)
        it_after, tiles = k_loop(tb, [64 * h for h in range(halves)], tb.idx(0),
                                 tb.idx(k_tiles), it, zero_acc, group_leader)
        others_next = tb.emit(arith.CmpiOp(tb.addi(t, blocks), tb.idx(cfg.cluster_tiles),
                                           "ult"))
        _if(tb, tb.emit(arith.AndIOp(others_next, group_leader)),
            lambda ab: ab.insert(tl.MBarrierArriveOp(turns, [other])))
        drain(tb, it_after, group_leader)
        origin = (tb.muli(tm, bm), tb.muli(tn, bn))
        for h in range(halves):
            half_tiles = list(tiles[h * acc_count:(h + 1) * acc_count])
            half_m = tb.addi(warp_m, 64 * h)
            if cfg.tma_store:
                _store_through_staging(tb, half_tiles, origin, half_m, group_leader, half=h)
            else:
                _store_accumulators(tb, cfg, half_tiles, C, origin, (half_m, tb.idx(0)),
                                    (1, acc_count), mask_c, bias, seed)
        tb.insert(scf.YieldOp(past_other(tb, it_after), tb.addi(turn, 1)))
        cb.insert(scf.ForOp(first, cb.idx(cfg.cluster_tiles), stride, [it_first, group],
                            Region(walk)))
        if cfg.tma_store:  # the block's shared memory outlives the last copies' reads
            _if(cb, group_leader, lambda lb: lb.insert(tl.TmaStoreWaitOp(0)))

    def _add_partial(pb: BlockBuilder, segment: Segment, tiles: list[SSAValue],
                     warp_m: SSAValue) -> list[SSAValue]:
        """A stream-K segment short of its tile: store its partial sums into the block's slot
        of the workspace and count its k-tiles on the tile's counter; the segment that
        completes the count adds the other segments' partials (`_other_partials`):
        [completes, the sums (else its own partial)]."""
        assert segment.t is not None and segment.slot is not None
        assert workspace is not None and counters is not None
        shared = pb.emit(arith.SubiOp(segment.t, pb.idx(cfg.cluster_tiles
                                                        - cfg.stream_k_tiles)))
        zero = pb.idx(0)
        for acc, block in zip(tiles, _partial_blocks(pb, segment.slot, warp_m), strict=True):
            pb.insert(tl.StoreAccOp(acc, workspace, [block, zero, zero], packed=True))
        count = pb.emit(arith.SubiOp(segment.k_end, segment.k_begin))
        last = pb.emit(tl.ArriveOp(counters, [shared], cfg.k_tiles, amount=count,
                                   threads=cfg.consumer_threads))
        sums = _if_values(pb, last, [acc_type] * acc_count,
                          lambda lb: _other_partials(lb, shared, tiles, warp_m),
                          lambda _: tiles)
        return [last, *sums]

    def _partial_blocks(pb: BlockBuilder, slot: SSAValue, warp_m: SSAValue) -> list[SSAValue]:
        """The workspace blocks (cfg.workspace_shape's first index) of the warp's fragments of
        slot `slot`'s partial tile: BM / 16 rows of BN / 8 blocks each, a warp's 16 rows one."""
        rows = pb.divui(pb.addi(pb.muli(slot, bm), warp_m), 16)
        first = pb.muli(rows, acc_count)
        return [pb.addi(first, j) for j in range(acc_count)]

    def _other_partials(lb: BlockBuilder, shared: SSAValue, tiles: list[SSAValue],
                        warp_m: SSAValue) -> list[SSAValue]:
        """`tiles` plus the partials of the shared tile's other segments: those of the blocks
        whose runs hold its k-steps, each in the slot of its first segment where its run
        starts inside the tile, else of its last."""
        first_step = lb.muli(shared, cfg.k_tiles)
        x = _dim(lb, gpu.BlockIdOp)
        first = _run_owner(lb, cfg, first_step)
        after = lb.addi(_run_owner(lb, cfg, lb.addi(first_step, cfg.k_tiles - 1)), 1)
        block = Block(arg_types=[IndexType()] + [acc_type] * acc_count)
        y, *partial = block.args
        yb = BlockBuilder(block)

        def add(ab: BlockBuilder) -> list[SSAValue]:
            began_before = ab.emit(arith.CmpiOp(_run_start(ab, cfg, y), first_step, "ult"))
            slot = ab.addi(ab.muli(y, 2), _select(ab, began_before, ab.idx(1), ab.idx(0)))
            zero = ab.idx(0)
            return [ab.emit(tl.AddAccOp(acc, ab.emit(tl.TakeAccOp(
                        workspace, [block, zero, zero], keep=True, packed=True))))
                    for acc, block in zip(partial, _partial_blocks(ab, slot, warp_m),
                                          strict=True)]

        mine = yb.emit(arith.CmpiOp(y, x, "eq"))
        yb.insert(scf.YieldOp(*_if_values(yb, mine, [acc_type] * acc_count,
                                          lambda _: partial, add)))
        loop = lb.insert(scf.ForOp(first, after, lb.idx(1), tiles, Region(block)))
        return list(loop.results)

    def _store_through_staging(tb: BlockBuilder, tiles: list[SSAValue],
                               origin: tuple[SSAValue, SSAValue], warp_m: SSAValue,
                               group_leader: SSAValue, half: int | None = None) -> None:
        """The TMA-store epilogue, in rounds of the boxes the staging buffer holds (one round
        without cfg.staging_boxes): the warpgroup's leader waits until its previous copies
        have read the buffer, the consumers write the round's columns through the epilogue,
        make the writes visible to the copy engine, and the leader copies each of the round's
        boxes out (one bulk group). In a ping-pong (`half`: which 64 rows of its tile the
        warpgroup stores) the warpgroup alone meets at its own barrier, and its rows of the
        tile are those of the half, not those of its place among the warpgroups."""
        assert sc is not None
        round_cols = cfg.staging_cols  # output columns a round
        # accumulator fragments (8 columns each) a round: swiglu pairs gate and up
        per_round = round_cols // 8 * (2 if cfg.epilogue == "swiglu" else 1)
        # the slab and lane / 4 mod 8, after the first wait: a 64-row band of the tile a slab
        # (a ping-pong warpgroup's own slab, for each half of its tile in turn)
        lanes: list[SSAValue] = []

        def place(pb: BlockBuilder, row: SSAValue, col: int) -> list[SSAValue]:
            slab, lane_rows = lanes
            return [slab, pb.idx(col // box_cols), pb.remui(row, box_rows),
                    staged_column(pb, col % box_cols, box_cols, lane_rows)]

        def meet(mb: BlockBuilder) -> None:
            if half is None:
                mb.insert(tl.NamedBarrierOp(STAGING_NAMED_BARRIER, cfg.consumer_threads))
                return
            first_id, second_id = PINGPONG_STAGING_NAMED_BARRIERS
            own = _select(mb, mb.emit(arith.CmpiOp(mb.divui(tid, 128), mb.idx(0), "eq")),
                          mb.idx(first_id), mb.idx(second_id))
            mb.insert(tl.NamedBarrierOp(mb.emit(arith.IndexCastOp(own, i32)), 128))

        for first in range(0, cfg.out_tile_cols, round_cols):
            _if(tb, group_leader, lambda lb: lb.insert(tl.TmaStoreWaitOp(0)))
            meet(tb)
            if not lanes:
                slab_of = tb.divui(warp_m, box_rows) if cfg.tall else tb.divui(tid, 128)
                lanes += [slab_of, tb.remui(tb.divui(tid, 4), 8)]
            slab = lanes[0]
            start = first // round_cols * per_round
            warp_n = tb.idx(first * (2 if cfg.epilogue == "swiglu" else 1))
            _store_accumulators(tb, cfg, tiles[start:start + per_round], sc, origin,
                                (warp_m, warp_n), (1, per_round), False, bias, seed,
                                (sc, place))
            tb.insert(tl.FenceProxyAsyncOp())
            meet(tb)

            def copy_out(lb: BlockBuilder, first: int = first, slab: SSAValue = slab) -> None:
                m0, n0 = origin
                row = lb.addi(m0, lb.muli(slab, box_rows) if half is None else half * 64)
                col0 = lb.divui(n0, 2) if cfg.epilogue == "swiglu" else n0
                zero = lb.idx(0)
                for j in range(round_cols // box_cols):
                    lb.insert(tl.TmaStoreOp(sc, [slab, lb.idx(j), zero, zero], C,
                                            [row, lb.addi(col0, first + j * box_cols)]))
                lb.insert(tl.TmaStoreCommitOp())

            _if(tb, group_leader, copy_out)

    is_consumer = b.emit(arith.CmpiOp(tid, b.idx(cfg.consumer_threads), "ult"))
    _if(b, is_consumer, pingpong_consumer if cfg.pingpong else consumer, producer)
    if cluster > 1:  # no block leaves while its peer may still copy into it or arrive on it
        b.insert(tl.ClusterBarrierOp())
    b.insert(gpu.ReturnOp([]))

    align = cfg.stage_alignment
    globals_ = [shared_global("smem_a", sa_type, True, align),
                shared_global("smem_b", sb_type, True, align),
                *([shared_global("smem_c", sc_type, True, align)] if cfg.tma_store else []),
                shared_global("full_bars", bars_type, False, 8),
                shared_global("empty_bars", bars_type, False, 8),
                *([shared_global("turn_bars", turns_type, False, 8)] if cfg.pingpong else [])]
    gpu_module = gpu.ModuleOp(StringAttr(f"{cfg.name}_module"),  # type: ignore[arg-type]
                              Region(Block([*globals_, kernel])))
    return ModuleOp([gpu_module])


__all__ = ["consumer_registers", "tma_ws_module"]

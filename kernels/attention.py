"""Fused attention through the tile dialect: FlashAttention-2's forward pass, on mma.sync or on
sm_90a's wgmma.

    attention_module(cfg: AttentionConfig) -> builtin.module

The configuration is kernels/config.py's AttentionConfig (attention_config(tokens, head_width,
heads=, sequences=, causal=, scale=, mma=)): q, k, v read in place from the QKV projection's
output and O written with the heads side by side, as graph-to-stages' attention chain lays
them out.

Block (x, y) takes query rows x · BM .. (of B·T; BM divides T, so one sequence's) of head y.
Its q block is copied into shared memory once; the keys come BN at a time through a
`stages`-deep cp.async ring of k and v blocks (the GEMM's multistage order: block j + S - 1 is
copied while block j is used). Per key block, each warp (16 query rows) computes:

    S = q · kᵀ          BN / 8 accumulator tiles of 16 x 8
    m' = max(m, rowmax S); alpha = exp((m - m') · scale)
    P = exp((S - m') · scale); l = l · alpha + rowsum P; O = O · alpha
    O += P · v          P's accumulator tiles become A fragments in registers
                        (`tile.acc_to_a`): P never leaves the registers

and at the end O / l goes out through `tile.store_acc`. A row's maximum and sum are kept per
lane (a lane holds two rows' columns 2 (lane % 4) ..): the maximum is combined over the row's
four lanes each block (two butterfly shuffles), the sum once at the end (alpha is the same on
all four). exp is ex2.approx.ftz; m starts at -inf, so the first alpha is 0.

`mma="sync"`: warp w has rows 16 w .., its q fragments loaded once with ldmatrix and held;
k's B fragments by ldmatrix (k is N x K), v's by ldmatrix.trans. `mma="wgmma"`: warpgroup g
has rows 64 g .. and multiplies straight from shared memory: q · kᵀ as one m64nBNk16 wgmma a
k16 step (q and k in 64-column boxes of 128-byte swizzled rows, K-major), P · v with P from
registers (`tile.wgmma_reg_a`) and v read N-major (`trans_b`), one m64n64k16 a 64-column box
of O a k16 step.

With `causal` a block reads the key blocks through the one holding its last query; from the
block holding its first query on (those crossing the diagonal) keys past a row's query are -inf
before the maximum. One loop does both: on an H200 the same steps as a second, masked loop
after the first gave wrong O with wgmma (head width 64, 128-query blocks), in PTX that orders
every wgmma operand before its fence and reads no result before its wait.

The kernel's arguments are Q, K, V (QKV three times: q, k and v are read as operands of their
own) and O. With `sync_hooks` the block is `sync.tile` (x, y) and has `sync.load_point`s before
its copies of q (operand 0), of key block j's k (operand 1, step j) and of its v (operand 2,
step j), and a `sync.store_point` after O's stores: the cuSync passes make it wait for the QKV
tiles it reads and post the O tile it wrote.
"""

from __future__ import annotations

from math import inf as math_inf

from xdsl.dialects import arith, gpu, math, memref, scf
from xdsl.dialects.builtin import (
    Float32Type,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Block, Region, SSAValue

from tilesync.dialects import sync
from tilesync.dialects import tile as tl
from tilesync.kernels.builder import BlockBuilder, block_tile, warp_allreduce
from tilesync.kernels.config import COMBINE_WARPS, AttentionConfig, CombineConfig
from tilesync.kernels.gemm import named_args, shared_global

SHARED = IntegerAttr(tl.SHARED_SPACE, 64)
BOX = tl.WGMMA_ROW_BYTES // 2  # wgmma's operands: boxes of 64 16-bit columns, a swizzled row
ROW_LANES = 4  # the lanes that hold one row of an accumulator tile (2 columns each)


def attention_module(cfg: AttentionConfig) -> ModuleOp:
    f32 = Float32Type()
    elem = cfg.element_type
    bm, bn, d, S = cfg.block_m, cfg.block_n, cfg.head_width, cfg.stages
    width, tokens = cfg.width, cfg.tokens
    wgmma = cfg.mma == "wgmma"
    cached, splits = cfg.cached, cfg.splits
    qkv_type = MemRefType(elem, [cfg.rows, 3 * width])
    # after a cache O is B x T x C: a padding row of a sequence's last block is outside it;
    # split, each split's O is its own, fp32, merged by attention_combine_module
    o_type = MemRefType(elem, [cfg.sequences, tokens, width] if cached else [cfg.rows, width])
    if splits > 1:
        o_type = parts_type(cfg)
    cache_type = MemRefType(elem, [cfg.sequences * cfg.heads * cached, d])
    if wgmma:  # 64-column boxes: [box, row, column]
        sq_type = MemRefType(elem, [d // BOX, bm, BOX], memory_space=SHARED)
        ring_type = MemRefType(elem, [S, d // BOX, bn, BOX], memory_space=SHARED)
        swizzle = tl.swizzle_for_row(BOX)
    else:
        sq_type = MemRefType(elem, [bm, d], memory_space=SHARED)
        ring_type = MemRefType(elem, [S, bn, d], memory_space=SHARED)
        swizzle = tl.swizzle_for_row(d)
    acc, a_frag, b_frag = (tl.FragType("acc", f32), tl.FragType("a", elem),
                           tl.FragType("b", elem))

    # q, k and v are QKV read three times: one argument each, so each has its load points
    caches = [cache_type] * 2 if cached else []
    stats = [parts_type(cfg)] if splits > 1 else []
    kernel = gpu.FuncOp(cfg.name, ([qkv_type] * 3 + [o_type] + caches + stats, []),
                        kernel=True, known_block_size=list(cfg.block))
    args = named_args(kernel, ("Q", "K", "V", "O", "K_cache", "V_cache", "Stats")[
        :4 + len(caches) + len(stats)])
    O = args["O"]
    b = BlockBuilder(kernel.body.block)
    tid = b.emit(gpu.ThreadIdOp(gpu.DimensionAttr(gpu.DimensionEnum.X)))
    tile_x, tile_y = block_tile(b, cfg.sync_hooks)
    tile = [tile_x, tile_y]
    warp, lane = b.divui(tid, 32), b.remui(tid, 32)
    split: SSAValue | None = None
    if cached:  # a sequence's blocks, the last padded (split: each query block's splits)
        per_sequence = cfg.query_blocks * splits
        sequence, block = b.divui(tile_x, per_sequence), b.remui(tile_x, per_sequence)
        if splits > 1:
            split, block = b.remui(block, splits), b.divui(block, splits)
        first = b.muli(sequence, tokens)  # its sequence's first row
        position = b.muli(block, bm)  # its first query's
        q0 = b.addi(first, position)  # the block's first row of B·T
        last_row = b.addi(first, tokens - 1)  # padding rows read the last token
        cache_row0 = b.muli(b.addi(b.muli(sequence, cfg.heads), tile_y), cached)
    else:
        q0 = b.muli(tile_x, bm)  # the block's first row of B·T
        first = b.muli(b.divui(q0, tokens), tokens)  # its sequence's first row
        position = b.subi(q0, first)  # its first query's position in the sequence
        last_row = None
    head_col = b.muli(tile_y, d)
    # the warp's 16 rows of the block (wgmma: warpgroup g's rows 64 g .., warp w % 4 of them)
    warp_row = b.muli(warp, 16)
    group_row = b.muli(b.divui(warp, 4), 64)
    sq = b.emit(memref.GetGlobalOp("smem_q", sq_type))
    sk = b.emit(memref.GetGlobalOp("smem_k", ring_type))
    sv = b.emit(memref.GetGlobalOp("smem_v", ring_type))

    def copy_rows(body: BlockBuilder, src: SSAValue, dst: SSAValue, lead: list[SSAValue],
                  row0: SSAValue, col0: SSAValue, rows: int, last: SSAValue | None = None
                  ) -> None:
        """rows x D of QKV or a cache (`src`: the argument read) from (row0, col0) into dst,
        16 bytes a thread; rows past `last` read it (padding)."""
        per_row = d // 8
        threads = cfg.block[0]
        for i in range(rows * per_row // threads):
            chunk = body.addi(tid, i * threads)
            r, c = body.divui(chunk, per_row), body.muli(body.remui(chunk, per_row), 8)
            at = [body.divui(c, BOX), r, body.remui(c, BOX)] if wgmma else [r, c]
            row = body.addi(row0, r)
            if last is not None:
                row = body.emit(arith.MinUIOp(row, last))
            body.insert(tl.CpAsyncOp(dst, [*lead, *at], src, [row, body.addi(col0, c)],
                                     swizzle=swizzle))

    def load_new_keys(body: BlockBuilder, step: SSAValue, stage: SSAValue) -> None:
        """Key block `step` of the tokens in QKV (after a cache: of the new tokens)."""
        row0 = body.addi(first, body.muli(step, bn))
        if cfg.sync_hooks:
            body.insert(sync.LoadPointOp(1, tile, step))
        copy_rows(body, args["K"], sk, [stage], row0, body.addi(head_col, width), bn, last_row)
        if cfg.sync_hooks:
            body.insert(sync.LoadPointOp(2, tile, step))
        copy_rows(body, args["V"], sv, [stage], row0, body.addi(head_col, 2 * width), bn,
                  last_row)

    def load_cached_keys(body: BlockBuilder, j: SSAValue, stage: SSAValue) -> None:
        """Key block j of the cache: an input, no load point."""
        row0 = body.addi(cache_row0, body.muli(j, bn))
        copy_rows(body, args["K_cache"], sk, [stage], row0, body.idx(0), bn)
        copy_rows(body, args["V_cache"], sv, [stage], row0, body.idx(0), bn)

    def load_keys(body: BlockBuilder, j: SSAValue, stage: SSAValue) -> None:
        if not cached:
            load_new_keys(body, j, stage)
            return
        from_cache = body.ult(j, cached // bn)
        body.when(from_cache, lambda cb: load_cached_keys(cb, j, stage))
        from_qkv = body.emit(arith.CmpiOp(j, body.idx(cached // bn), "uge"))
        body.when(from_qkv, lambda nb: load_new_keys(nb, nb.subi(j, cached // bn), stage))

    # Key blocks: all of the sequence's; causal: through the one holding the block's last
    # query, those from the one holding its first query on masked. After a cache: the cached
    # ones, then the new tokens' through the last key a query of the block sees (T: the
    # block's last query's or, a partly padded block, the last token's), those masked.
    blocks: SSAValue | int = tokens // bn
    if cached:
        last_query = tokens - 1
        if cfg.causal:
            last_query = b.emit(arith.MinUIOp(b.addi(position, bm - 1), b.idx(tokens - 1)))
        blocks = (cached + last_query) // bn + 1 if isinstance(last_query, int) else \
            b.addi(b.divui(b.addi(last_query, cached), bn), 1)
        unmasked = b.idx(cached // bn)
    elif cfg.causal:
        blocks = b.divui(b.addi(position, bm + bn - 1), bn)
        unmasked = b.divui(position, bn)
    # Split: this block's key blocks from `start` (the loop counts from 0, the key block is
    # start + i); every split takes at least one (AttentionConfig checks).
    start: SSAValue | None = None
    if split is not None:
        start = b.muli(split, cfg.keys_per_split)
        blocks = b.emit(arith.MinUIOp(b.idx(cfg.keys_per_split),
                                      b.subi(b.idx(cfg.key_blocks), start)))

    def key_of(kb: BlockBuilder, i: SSAValue) -> SSAValue:
        """The key block (of the sequence's keys) of loop step i."""
        return i if start is None else kb.addi(start, i)

    # prologue: q (its own commit group), then key blocks 0 .. S - 2
    if cfg.sync_hooks:
        b.insert(sync.LoadPointOp(0, tile))
    copy_rows(b, args["Q"], sq, [], q0, head_col, bm, last_row)
    b.insert(tl.CpAsyncCommitOp())
    for s in range(S - 1):
        if isinstance(blocks, int):
            if s < blocks:
                load_keys(b, b.idx(s), b.idx(s))
        else:
            b.when(b.ult(b.idx(s), blocks),
                   lambda gb, s=s: load_keys(gb, key_of(gb, gb.idx(s)), gb.idx(s)))
        b.insert(tl.CpAsyncCommitOp())
    q_frags: list[SSAValue] = []
    if not wgmma:  # held in registers for the whole kernel
        b.insert(tl.CpAsyncWaitOp(S - 1))  # q's group
        b.insert(gpu.BarrierOp())
        q_frags = [b.emit(tl.LdMatrixOp(sq, [warp_row, b.idx(kk * 16)], [a_frag],
                                        swizzle=swizzle)) for kk in range(d // 16)]

    scale = b.f32(cfg.scale)
    minus_inf = b.f32(-math_inf)
    zero_value = b.f32(0.0)
    zero = b.emit(tl.FillOp(zero_value, acc))
    # per lane: O's D/8 tiles, then m and l of its two rows (lane / 4 and 8 below)
    carried = [zero] * (d // 8) + [minus_inf, minus_inf, b.f32(0.0), b.f32(0.0)]

    def scores(lb: BlockBuilder, stage: SSAValue) -> list[SSAValue]:
        """S = q · kᵀ of the stage's key block: the warp's BN / 8 accumulator tiles."""
        s_tiles = [zero] * (bn // 8)
        if wgmma:  # zeroed registers of their own, written before the fence
            s_tiles = list(lb.insert(tl.WgmmaFenceOp(
                [lb.emit(tl.FillOp(zero_value, acc)) for _ in s_tiles])).results)
            for kk in range(d // 16):
                box, k_off = lb.idx(kk * 16 // BOX), lb.idx(kk * 16 % BOX)
                s_tiles = list(lb.insert(tl.WgmmaOp(sq, [box, group_row, k_off], sk,
                                                    [stage, box, lb.idx(0), k_off],
                                                    s_tiles)).results)
            lb.insert(tl.WgmmaCommitOp())
            lb.insert(tl.WgmmaWaitOp(0))
            return s_tiles
        for kk in range(d // 16):
            for nj in range(bn // 16):
                pair = lb.insert(tl.LdMatrixOp(sk, [stage, lb.idx(nj * 16), lb.idx(kk * 16)],
                                               [b_frag, b_frag], swizzle=swizzle)).results
                for h in range(2):
                    s_tiles[2 * nj + h] = lb.emit(tl.MmaOp(q_frags[kk], pair[h],
                                                           s_tiles[2 * nj + h]))
        return s_tiles

    def context(lb: BlockBuilder, stage: SSAValue, p_tiles: list[SSAValue],
                o_tiles: list[SSAValue]) -> list[SSAValue]:
        """O += P · v of the stage's key block."""
        o_tiles = list(o_tiles)
        p_frags = [lb.emit(tl.AccToAOp(p_tiles[2 * kk], p_tiles[2 * kk + 1], elem))
                   for kk in range(bn // 16)]
        if wgmma:  # P and the rescaled O: registers written here, ordered before the fence
            fenced = lb.insert(tl.WgmmaFenceOp([*p_frags, *o_tiles])).results
            p_frags, o_tiles = list(fenced[:len(p_frags)]), list(fenced[len(p_frags):])
            per_box = BOX // 8
            for kk in range(bn // 16):
                for box in range(d // BOX):
                    part = slice(box * per_box, (box + 1) * per_box)
                    o_tiles[part] = lb.insert(tl.WgmmaRegAOp(
                        p_frags[kk], sv, [stage, lb.idx(box), lb.idx(kk * 16), lb.idx(0)],
                        o_tiles[part], trans_b=True)).results
            lb.insert(tl.WgmmaCommitOp())
            lb.insert(tl.WgmmaWaitOp(0))  # the stage is copied into again next block
            return o_tiles
        for kk in range(bn // 16):
            for nj in range(d // 16):
                pair = lb.insert(tl.LdMatrixOp(sv, [stage, lb.idx(kk * 16), lb.idx(nj * 16)],
                                               [b_frag, b_frag], trans=True,
                                               swizzle=swizzle)).results
                for h in range(2):
                    o_tiles[2 * nj + h] = lb.emit(tl.MmaOp(p_frags[kk], pair[h],
                                                           o_tiles[2 * nj + h]))
        return o_tiles

    def key_block(lb: BlockBuilder, i: SSAValue, state: list[SSAValue]) -> list[SSAValue]:
        """One key block's step (loop step i); `state` is O's tiles, m_lo, m_hi, l_lo,
        l_hi."""
        o_tiles, (m_lo, m_hi, l_lo, l_hi) = state[:-4], state[-4:]
        lb.insert(tl.CpAsyncWaitOp(S - 2))
        if wgmma:  # wgmma reads shared memory through the async proxy
            lb.insert(tl.FenceProxyAsyncOp())
        lb.insert(gpu.BarrierOp())  # block i landed for all; stage (i - 1) % S is free
        ahead = lb.addi(i, S - 1)
        lb.when(lb.ult(ahead, blocks),
                lambda pb: load_keys(pb, key_of(pb, ahead), pb.remui(ahead, S)))
        lb.insert(tl.CpAsyncCommitOp())
        stage = lb.remui(i, S)
        j = key_of(lb, i)

        values = [list(lb.insert(tl.UnpackAccOp(t)).results) for t in scores(lb, stage)]
        if cfg.causal or cached:  # key j·BN + 8 n + 2 (lane % 4) + c against the row's
            # last key, from the block holding the first query on (before it, T: every key
            # kept); after a cache S' + the query (causal) or S' + T - 1, from the first new
            # block on (padding keys past the last token masked)
            query = lb.addi(position, lb.addi(warp_row, lb.divui(lane, 4)))
            crossing = lb.emit(arith.CmpiOp(j, unmasked, "uge"))
            queries = (query, lb.addi(query, 8))
            if cached:
                queries = tuple(lb.addi(lb.emit(arith.MinUIOp(q, lb.idx(tokens - 1))), cached)
                                if cfg.causal else lb.idx(cached + tokens - 1)
                                for q in queries)
            rows = tuple(lb.emit(arith.SelectOp(crossing, row, lb.idx(cached + tokens)))
                         for row in queries)
            key0 = lb.addi(lb.muli(j, bn), lb.muli(lb.remui(lane, 4), 2))
            for n, tile_values in enumerate(values):
                for k in range(4):
                    key = lb.addi(key0, 8 * n + k % 2)
                    kept = lb.emit(arith.CmpiOp(key, rows[k // 2], "ule"))
                    tile_values[k] = lb.emit(arith.SelectOp(kept, tile_values[k], minus_inf))
        new_m = []
        for half, m in ((0, m_lo), (1, m_hi)):
            for tile_values in values:
                for k in (2 * half, 2 * half + 1):
                    m = lb.emit(arith.MaxnumfOp(m, tile_values[k]))
            new_m.append(warp_allreduce(lb, m, arith.MaxnumfOp, ROW_LANES))

        def exp_scaled(x: SSAValue, m: SSAValue) -> SSAValue:
            return lb.emit(math.ExpOp(lb.mulf(lb.emit(arith.SubfOp(x, m)), scale)))

        alphas = [exp_scaled(old, new) for old, new in zip((m_lo, m_hi), new_m, strict=True)]
        sums = [lb.mulf(l_lo, alphas[0]), lb.mulf(l_hi, alphas[1])]
        p_tiles = []
        for tile_values in values:
            p = [exp_scaled(v, new_m[k // 2]) for k, v in enumerate(tile_values)]
            for k, v in enumerate(p):
                sums[k // 2] = lb.addf(sums[k // 2], v)
            p_tiles.append(lb.emit(tl.PackAccOp(p)))
        rescaled = []
        for t in o_tiles:
            c = lb.insert(tl.UnpackAccOp(t)).results
            rescaled.append(lb.emit(tl.PackAccOp([lb.mulf(c[k], alphas[k // 2])
                                                  for k in range(4)])))
        return [*context(lb, stage, p_tiles, rescaled), *new_m, *sums]

    body = Block(arg_types=[IndexType()] + [v.type for v in carried])
    loop = scf.ForOp(b.idx(0), b.idx(blocks) if isinstance(blocks, int) else blocks, b.idx(1),
                     carried, Region(body))
    b.insert(loop)
    lb = BlockBuilder(body)
    lb.insert(scf.YieldOp(*key_block(lb, body.args[0], list(body.args[1:]))))
    state = list(loop.results)

    o_tiles, (m_lo, m_hi, l_lo, l_hi) = state[:-4], state[-4:]
    one = b.f32(1.0)
    totals: list[SSAValue] = []  # each row's sum over its lanes, then its inverse
    inverse: list[SSAValue] = []
    for partial in (l_lo, l_hi):
        totals.append(warp_allreduce(b, partial, arith.AddfOp, ROW_LANES))
        inverse.append(b.emit(arith.DivfOp(one, totals[-1])))
    # after a cache O is B x T x C and the store masked: padding rows lie past T
    at = [sequence, b.addi(position, warp_row)] if cached else [b.addi(q0, warp_row)]
    if split is not None:  # this split's O, and its rows' maxima and sums for the merge:
        # the block's rows x · BM .. of both (its T rows written)
        block_row = b.muli(tile_x, bm)
        at = [b.addi(block_row, warp_row)]
        row_lo = b.addi(warp_row, b.divui(lane, ROW_LANES))
        for row, m, total in ((row_lo, m_lo, totals[0]), (b.addi(row_lo, 8), m_hi, totals[1])):
            def store_stats(sb: BlockBuilder, row=row, m=m, total=total) -> None:
                for k, value in enumerate((m, total)):
                    sb.insert(memref.StoreOp.get(value, args["Stats"], [
                        sb.addi(block_row, row), sb.addi(head_col, k)]))
            b.when(b.emit(arith.AndIOp(b.emit(arith.CmpiOp(b.remui(lane, ROW_LANES), b.idx(0),
                                                          "eq")),
                                       b.ult(row, tokens))), store_stats)
    for n, t in enumerate(o_tiles):
        c = b.insert(tl.UnpackAccOp(t)).results
        scaled = b.emit(tl.PackAccOp([b.mulf(c[k], inverse[k // 2]) for k in range(4)]))
        b.insert(tl.StoreAccOp(scaled, O, [*at, b.addi(head_col, 8 * n)],
                               masked=bool(cached) and split is None))
    if cfg.sync_hooks:
        b.insert(sync.StorePointOp(tile))
    b.insert(gpu.ReturnOp([]))
    alignment = cfg.stage_alignment
    buffers = [shared_global(name, type_, True, alignment)
               for name, type_ in (("smem_q", sq_type), ("smem_k", ring_type),
                                   ("smem_v", ring_type))]
    module = gpu.ModuleOp(StringAttr(f"{cfg.name}_module"),  # type: ignore[arg-type]
                          Region(Block([*buffers, kernel])))
    return ModuleOp([module])


def parts_type(cfg: AttentionConfig) -> MemRefType:
    """A split attention's partial O and its Stats ([parts_rows, C], fp32: block x's rows at
    x · block_m, its T written; Stats: a row's score maximum, unscaled, at its head's first
    column, its sum of exp((s - maximum) · scale) at the next)."""
    return MemRefType(Float32Type(), [cfg.parts_rows, cfg.width])


def attention_combine_module(merge: CombineConfig) -> ModuleOp:
    """The merge of a split attention's partial results (`merge.attention.splits` > 1, the
    merge's `CombineConfig`): block (b, h) of a
    (B, H) grid takes sequence b's T new tokens of head h, a warp a token at a time, each lane
    D / 32 of its columns:

        M = max_p m_p;  w_p = l_p · exp((m_p - M) · scale);  O = sum_p w_p O_p / sum_p w_p

    from O_p (each split's O, normalized by its own sum) and Stats (m_p, l_p), both fp32
    (`parts_type`); O is written [B·T, C] in the attention's element type. With `sync_hooks`
    the block is `sync.tile` (b, h), has a `sync.load_point` before its reads of the partial
    O (operand 0) and of Stats (operand 1) and a `sync.store_point` after its stores."""
    cfg, name = merge.attention, merge.name
    p_, t_, d, width = cfg.splits, cfg.tokens, cfg.head_width, cfg.width
    o_type = MemRefType(cfg.element_type, [cfg.rows, width])
    kernel = gpu.FuncOp(name, ([parts_type(cfg)] * 2 + [o_type], []), kernel=True,
                        known_block_size=list(merge.block))
    args = named_args(kernel, ("Parts", "Stats", "O"))
    b = BlockBuilder(kernel.body.block)
    tid = b.emit(gpu.ThreadIdOp(gpu.DimensionAttr(gpu.DimensionEnum.X)))
    sequence, head = block_tile(b, cfg.sync_hooks)
    tile = [sequence, head]
    warp, lane = b.divui(tid, 32), b.remui(tid, 32)
    if cfg.sync_hooks:
        b.insert(sync.LoadPointOp(0, tile))
        b.insert(sync.LoadPointOp(1, tile))
    scale = b.f32(cfg.scale)
    body = Block(arg_types=[IndexType()])
    loop = scf.ForOp(warp, b.idx(t_), b.idx(COMBINE_WARPS), [], Region(body))
    b.insert(loop)
    rb = BlockBuilder(body)
    token = body.args[0]

    head_col = rb.muli(head, d)

    def part_row(p: int) -> SSAValue:
        """Split p's row of this token (its block's rows from (b · P + p) · BM)."""
        return rb.addi(rb.muli(rb.addi(rb.muli(sequence, p_), p), cfg.block_m), token)

    def stat(p: int, k: int) -> SSAValue:
        return rb.emit(memref.LoadOp.get(args["Stats"], [part_row(p), rb.addi(head_col, k)]))

    maxima, sums = [stat(p, 0) for p in range(p_)], [stat(p, 1) for p in range(p_)]
    top = maxima[0]
    for m in maxima[1:]:
        top = rb.emit(arith.MaxnumfOp(top, m))
    weights = [rb.mulf(total, rb.emit(math.ExpOp(rb.mulf(rb.emit(arith.SubfOp(m, top)),
                                                           scale))))
               for m, total in zip(maxima, sums, strict=True)]
    weight = weights[0]
    for w in weights[1:]:
        weight = rb.addf(weight, w)
    inverse = rb.emit(arith.DivfOp(rb.f32(1.0), weight))
    row = rb.addi(rb.muli(sequence, t_), token)
    for k in range(d // 32):
        column = rb.addi(head_col, rb.addi(lane, 32 * k))
        merged = None
        for p, w in enumerate(weights):
            part = rb.emit(memref.LoadOp.get(args["Parts"], [part_row(p), column]))
            term = rb.mulf(w, part)
            merged = term if merged is None else rb.addf(merged, term)
        value = rb.emit(arith.TruncFOp(rb.mulf(merged, inverse), cfg.element_type))
        rb.insert(memref.StoreOp.get(value, args["O"], [row, column]))
    rb.insert(scf.YieldOp())
    if cfg.sync_hooks:
        b.insert(sync.StorePointOp(tile))
    b.insert(gpu.ReturnOp([]))
    module = gpu.ModuleOp(StringAttr(f"{name}_module"),  # type: ignore[arg-type]
                          Region(Block([kernel])))
    return ModuleOp([module])


__all__ = ["attention_combine_module", "attention_module", "parts_type"]

"""Which warp-specialized GEMM configurations to try for a shape: the wave model proposes.

    propose_tma_configs(M, N, K, dtype="f16", epilogue=None, sms=132, limit=5,
                        cluster_limit=1) -> [GemmConfig]
    predicted_seconds(cfg, sms=132) -> float

A persistent grid runs ⌈tiles / SMs⌉ rounds of tiles (analysis.wave_model.StageWaves with one
block per SM; clusters of two take tile pairs): the last, partial round leaves SMs idle. Tiles
whose width is not a power of two change the count (N = 6144 in BN = 96 columns is 64 tile
columns: 128 tiles of 128 x 96 fill 128 of 132 SMs where 128 x 128 tiles fill 96), at the
price of less work per byte moved. A tile takes the longer of its multiply-adds at the SM's
tensor rate (discounted for narrow tiles: wgmma of a small N does less per issue) and its
operand bytes at the SM's share of L2 bandwidth (a cluster of two reads half of B's tile each:
the multicast); the whole GEMM takes at least the time to read its operands and write C once.
On an H100 the mainloop of 128 x 256 and 128 x 128 tiles ran at 56-61 GB/s of operands per SM,
the L2 bound (bench/tma_sweep.py). The measured ranking is the autotuner's
(harness/autotune.py): this model only keeps the candidates few.
"""

from __future__ import annotations

import dataclasses
import math

from tilesync.analysis.occupancy import blocks_per_sm
from tilesync.analysis.wave_model import StageWaves
from tilesync.contract import SM_90
from tilesync.kernels.config import (
    H100_SMS,
    MAX_SHARED_PER_BLOCK,
    WARPGROUP_ROWS,
    ConvConfig,
    GemmConfig,
    conv2d_config,
    gemm_config,
    output_columns,
    tma_ws_config,
    tma_ws_warps,
)

BK = 64
TILE_ROWS = (128, 64)
TILE_COLUMNS = tuple(range(64, 257, 16))
MAX_STAGES = 8
SM_TENSOR_FLOPS = 989e12 / H100_SMS  # dense f16/bf16 per SM (H100 SXM datasheet)
DEVICE_BYTES_PER_S = 3.0e12  # a measured H100 device-to-device copy (bytes read + written)
# the stages' alignment padding and their full/empty barriers (GemmConfig.static_shared_bytes)
BARRIER_BYTES = 1024 + 2 * 8 * MAX_STAGES
SM_L2_BYTES_PER_S = 58e9  # operand bytes an SM drew from L2 in the mainloop (H100, measured)
SM_STORE_BYTES_PER_S = 17e9
"""C bytes an SM stores from registers while its tensor cores wait (H100: 128 x 256 tiles of
GEMM 8192^3 took 3.9 us a tile longer than with the TMA-store epilogue, bench/tma_sweep.py)."""


def stages_for(bm: int, bn: int, staging_cols: int = 0, blocks: int = 1) -> int:
    """As many k-tile buffers as shared memory holds (at most MAX_STAGES) beside a TMA-store
    epilogue's staging buffer of bm x staging_cols: a block's, or with `blocks` a share of the
    SM's that leaves room for that many blocks (GemmConfig.blocks_per_sm)."""
    per_stage = (bm + bn) * BK * 2
    share = MAX_SHARED_PER_BLOCK if blocks == 1 else \
        SM_90.shared_per_sm // blocks - SM_90.reserved_shared_per_block
    free = share - BARRIER_BYTES - bm * staging_cols * 2
    return max(2, min(MAX_STAGES, free // per_stage))


def tile_efficiency(bm: int, bn: int) -> float:
    """The fraction of the tensor rate a tile sustains (1 for the largest tiles): wgmma issues
    of a narrower N and one consumer warpgroup (BM = 64) leave more of the SM idle."""
    return (1.0 - 16.0 / bn) * (0.85 if bm == 64 else 1.0)


def predicted_seconds(cfg: GemmConfig, sms: int = H100_SMS) -> float:
    bm, bn, _ = cfg.tile
    c = cfg.cluster_m
    rounds = StageWaves(cfg.cluster_tiles, 1, sms // c).wave_count
    compute = 2 * bm * bn * cfg.K / (SM_TENSOR_FLOPS * tile_efficiency(bm, bn))
    operands = (bm + bn / c) * cfg.K * 2 / SM_L2_BYTES_PER_S
    # stored from registers, the tile's C holds the tensor cores; a TMA store overlaps the next
    exposed_store = 0.0 if cfg.tma_store else bm * cfg.out_tile_cols * 2 / SM_STORE_BYTES_PER_S
    floor = 2 * (cfg.M * cfg.K + cfg.N * cfg.K + cfg.M * cfg.out_cols) / DEVICE_BYTES_PER_S
    return max(rounds * (max(compute, operands) + exposed_store), floor)


def propose_tma_configs(M: int, N: int, K: int, dtype: str = "f16",
                        epilogue: str | None = None, sms: int = H100_SMS,
                        limit: int = 5, cluster_limit: int = 1,
                        twins: int = 0, stream_k: int = 0,
                        pingpong: int = 0, n_major: int = 0, tall: int = 0
                        ) -> list[GemmConfig]:
    """The `limit` tile shapes the model predicts fastest without clusters and the
    `cluster_limit` fastest in clusters of two (ties: larger tiles first), then the
    `deeper_twin` of the first `twins` where a smaller staging buffer buys a stage, then the
    `stream_k_twins` of the first `stream_k` proposals and of as many deeper twins, then the
    first `pingpong` of the model's ranking that have a `pingpong_twin` (their tiles are
    narrower than the widest proposals) and as many as `cluster_limit` allows of its ranking
    in clusters, as ping-pongs, then the `n_major_twin` (B read K x N) of the first `n_major`
    proposals that have one and the deeper twins of as many of those as `twins` allows, then
    the `tall` 256-row tiles (`tall_twin`s of the 128-row ones) the model ranks first and
    the K x N twin of the first that has one (where `n_major`). On an
    H100 the device's fastest was among
    the model's first five on every bench shape, and clusters won none since the TMA-store
    epilogue (bench/tma_sweep.py): they stay, fewer."""
    ranked = _ranked(M, N, K, dtype, epilogue, sms, 1)
    clustered = _ranked(M, N, K, dtype, epilogue, sms, 2)
    proposals = [*ranked[:limit], *clustered[:cluster_limit]]
    deeper = list(filter(None, map(deeper_twin, proposals[:min(limit, twins)])))
    shared = [twin for cfg in [*proposals[:min(limit, stream_k)], *deeper[:stream_k]]
              for twin in stream_k_twins(cfg)]
    alternating = [twin for twin in map(pingpong_twin, ranked) if twin is not None]
    in_clusters = [twin for twin in map(pingpong_twin, clustered) if twin is not None]
    transposed = [twin for twin in map(n_major_twin, proposals) if twin is not None][:n_major]
    transposed_deeper = list(filter(None, map(deeper_twin, transposed[:twins])))
    talls = sorted((predicted_seconds(twin, sms), -twin.tile[1], i, twin)
                   for i, twin in enumerate(map(tall_twin, ranked)) if twin is not None)
    tall_picks = [entry[-1] for entry in talls[:tall]]
    transposed_tall = next(filter(None, map(n_major_twin, tall_picks)), None)
    if n_major and transposed_tall is not None:
        tall_picks.append(transposed_tall)
    return [*proposals, *deeper, *shared, *alternating[:pingpong],
            *in_clusters[:min(cluster_limit, pingpong)], *transposed, *transposed_deeper,
            *tall_picks]


def tall_twin(cfg: GemmConfig) -> GemmConfig | None:
    """`cfg`'s 128-row tile as a tall one of 256 rows (two warpgroups of 128: B's tile feeds
    twice the rows, half as many tiles), with the most of its stages that fit beside a
    staging buffer of the whole tile or of one box a round; None where GemmConfig refuses a
    tall tile (wider than PINGPONG_MAX_COLUMNS, a producer warp, clusters, stream-K, ...) or
    M has fewer than two tiles of 256 rows."""
    bm, bn, bk = cfg.tile
    tall = 2 * WARPGROUP_ROWS
    if not cfg.warp_specialized or bm != WARPGROUP_ROWS or cfg.M < 2 * tall:
        return None
    for stages in range(cfg.stages, 1, -1):
        for staging_boxes in (0, 1) if cfg.tma_store else (0,):
            try:
                return dataclasses.replace(cfg, tile=(tall, bn, bk), warps=tma_ws_warps(tall),
                                           stages=stages, staging_boxes=staging_boxes)
            except ValueError:
                continue
    return None


def pingpong_twin(cfg: GemmConfig) -> GemmConfig | None:
    """`cfg` with its two consumer warpgroups taking alternate whole tiles (GemmConfig.pingpong),
    or None where it cannot: a tile of other than 128 rows or wider than
    PINGPONG_MAX_COLUMNS, stream-K, a tile or fewer a block (nothing to alternate), or a
    producer warp (a warpgroup's BN accumulators a thread need the registers setmaxnreg moves
    from a producer warpgroup: 128 x 176 spilled 2.4 KB under a producer warp's 168)."""
    if not cfg.warp_specialized or cfg.producer_warps != 4 or \
            cfg.cluster_tiles <= cfg.sms // cfg.cluster_m:
        return None
    try:  # the rest is GemmConfig's to refuse (_check_pingpong)
        return dataclasses.replace(cfg, pingpong=True)
    except ValueError:
        return None


def n_major_twin(cfg: GemmConfig) -> GemmConfig | None:
    """`cfg` reading B as K x N (b_layout='row': its k-tile in 64-column boxes, the wgmmas
    transposed), or None where it cannot (GemmConfig refuses: BN not a multiple of 64, a
    cluster, an L2 prefetch, im2col). Why: on an H100 cuBLAS ran GPT-3's fc2 at M = 256 in
    0.0676 ms with B K x N against 0.0753 as N x K (LLaMA's fc2 0.0325 / 0.0354)."""
    if not cfg.warp_specialized or cfg.b_layout == "row":
        return None
    try:
        return dataclasses.replace(cfg, b_layout="row")
    except ValueError:
        return None


def stream_k_twins(cfg: GemmConfig) -> list[GemmConfig]:
    """`cfg` with its last, partial round of tiles shared out by k-tiles over every SM
    (stream-K), and with that round and the full one before it shared (longer segments:
    fewer partial tiles a block adds into the workspace); none where the rounds are full or
    the config cannot take stream-K (clusters, tall tiles, ping-pong). On an H100 (bench
    kernels, 8e2484a) a twin won only GEMM 8192^3 (68 shared tiles of 2048: 1.3975 against
    1.4039 ms fp16, 1.3496 against 1.3528 bf16); elsewhere it lost (5d8c6a8: LLaMA's fc1 at
    M = 1024 in 128 x 176 tiles 0.172 against 0.128 ms, at 2048 in 128 x 256 0.264 against
    0.260): the blocks of a shared tile read its k-steps at different times, so L2 no longer
    serves one tile's A and B to the next (ncu, M = 1024: 311 MB read from DRAM against 129,
    25.8% of the warp stall samples waiting for a TMA stage against 5.2% in the data-parallel
    loop). Rotating each shared tile's k-steps (gemm_tma._tile_rotation) recovers part of it
    (H100, bench/results/stream-k-rotation-ab-*: GEMM 4096^3's 116 shared tiles 211.8 -> 189.8
    us against 179.2 data-parallel, GPT-3's fc2 at M = 2048 455 -> 403 against 394), not all:
    the twins still lose there. Nor do wide tiles all shared where the grid is under a round
    (bench/results/small-m-stream-k-probe-*, H100: the MLP GEMMs at M = 256-512 in 128 x 128-256
    tiles, 0.73-0.83 of cuBLAS against 0.98-1.04 for the tuned data-parallel tiles)."""
    if not cfg.warp_specialized or not cfg.persistent or cfg.cluster_m != 1:
        return []
    partial = cfg.tiles % cfg.sms
    if partial == 0:
        return []
    shares = [partial] + ([partial + cfg.sms] if cfg.tiles > cfg.sms else [])
    twins = []
    for tiles in shares:
        try:
            twins.append(dataclasses.replace(cfg, stream_k_tiles=tiles))
        except ValueError:  # a tile stream-K cannot take (tall, ping-pong)
            return []
    return twins


STREAMING_ROWS = 16
"""Up to this many rows (decoding's projections) a GEMM's time is its weights' bytes: it
takes `streaming_config`'s 16-row tiles, not a 64-row warpgroup tile that leaves SMs idle
(GPT-3's QKV, N = 4608 in 64-column tiles: 72 of 132 SMs streaming)."""
STREAMING_WIDTHS = (64, 48, 32, 16)
STREAMING_K_TILE = 128
STREAMING_STAGES = 8
STREAMING_FILL = 0.7
"""The share of the SMs a streaming GEMM's tiles must reach, or a narrower tile is taken."""


def streaming_config(M: int, N: int, K: int, dtype: str = "f16", epilogue: str | None = None,
                     name: str = "gemm", sync_hooks: bool = False, sms: int = H100_SMS
                     ) -> GemmConfig:
    """A GEMM of at most STREAMING_ROWS rows: 16-row mma.sync tiles of 128-wide k-tiles, B
    read as N x K (nn.Linear's weights); the widest of STREAMING_WIDTHS (a warp per 16
    columns) whose tiles put a block on STREAMING_FILL of the SMs, with as many stages (up to
    STREAMING_STAGES and K's k-tiles) as leave room for every tile to be resident in one
    round. Its K is not split: a split tile's last slice posts it, which sync-verify cannot
    count. On an H200 (decoding's projections at 1 and 4 rows) this took GPT-3's QKV (4608 x
    12288) from 61.9 us on the 64-row TMA tile to 30.4 (cuBLAS 34.7), LLaMA's (3072 x 8192)
    from 33.3 to 19.2 (cuBLAS 19.5; split-K 8 would take 17.1)."""
    if M > STREAMING_ROWS:
        raise ValueError(f"a streaming GEMM has at most {STREAMING_ROWS} rows, got {M}")
    bn = next((w for w in STREAMING_WIDTHS if math.ceil(N / w) >= STREAMING_FILL * sms),
              STREAMING_WIDTHS[-1])
    per_sm = math.ceil(math.ceil(N / bn) / sms)  # blocks an SM holds for one round of tiles
    for stages in range(max(2, min(STREAMING_STAGES, math.ceil(K / STREAMING_K_TILE))), 1, -1):
        cfg = gemm_config(M, N, K, (16, bn, STREAMING_K_TILE), (1, bn // 16), stages, dtype,
                          "col", epilogue, name, sync_hooks, sms=sms)
        shared = cfg.dynamic_shared_bytes or cfg.shared_bytes
        if blocks_per_sm(cfg.threads, shared_bytes=shared).blocks_per_sm >= per_sm:
            break
    return cfg


BENCH_TWINS = 3
"""The proposals `tilesync bench kernels` also times the `deeper_twin` of (the rounds of a
staged epilogue passed the GPU check of every bench shape, test_gemm_tma.py, on an H200). The
MLP programs take their GEMMs' twins by kernels/mlp.py's DEEPER_STAGING."""


BENCH_STREAM_K = 1
"""The proposals (and deeper twins) whose `stream_k_twins` `tilesync bench kernels` also times:
the first (stream_k_twins: they win only where the shared round is a small part of many);
their twins of wide tiles keep the TMA-store epilogue, no longer one register-store config
for several."""

BENCH_TALL = 2
"""The proposals (and K x N twins) whose `tall_twin` `tilesync bench kernels` also times."""

BENCH_N_MAJOR = 3
"""The proposals whose `n_major_twin` `tilesync bench kernels` also times, on the same bytes
as B K x N (cuBLAS is timed in both layouts there, the faster compared). On an H100
(bench/tma_sweep.py --b-kxn, 7d65c3d) the twin of the first or second proposal was the fastest
candidate of every fc2 GEMM at M = 256-1024: GPT-3's at M = 256 0.953 of cuBLAS against 0.916,
LLaMA's 1.020 against 0.971."""

BENCH_PINGPONG = 3
"""The ping-pongs `tilesync bench kernels` also times: `pingpong_twin`s of the wave model's
first tiles that have one, and of its first in clusters (propose_tma_configs)."""


def deeper_twin(cfg: GemmConfig) -> GemmConfig | None:
    """`cfg` with a TMA-store staging buffer of fewer boxes (the most that still frees shared
    memory for one more stage) and that stage, or None where no smaller buffer buys one. On an
    H200 a stage more was worth 5-15% (128 x 192: 68.8 -> 58.8 us at 3 -> 4 stages, 128 x 176:
    269 -> 253 us at 4 -> 5), and the staging buffer of a 128 x 256 tile took a stage's room."""
    if not cfg.tma_store or cfg.staging_boxes or cfg.stages >= MAX_STAGES:
        return None
    bm, bn, _ = cfg.tile
    box_cols = cfg.staging_box[1]
    boxes = cfg.out_tile_cols // box_cols
    for kept in sorted((k for k in range(1, boxes) if boxes % k == 0), reverse=True):
        stages = stages_for(bm, bn, kept * box_cols)
        if stages > cfg.stages:
            return dataclasses.replace(cfg, stages=stages, staging_boxes=kept)
    return None


def _ranked(M: int, N: int, K: int, dtype: str, epilogue: str | None, sms: int,
            cluster: int) -> list[GemmConfig]:
    ranked = []
    for bm in TILE_ROWS:
        for bn in TILE_COLUMNS:
            if bn > max(64, 16 * math.ceil(N / 16)) or (bm == 64 and M > 1024):
                continue  # a tile wider than N, or one warpgroup where two have work
            if cluster > 1 and M <= bm:
                continue  # one tile row: nobody to share B with
            cfg = _tile_config(M, N, K, (bm, bn), dtype, epilogue, sms, cluster)
            if cfg is not None:
                ranked.append((predicted_seconds(cfg, sms), -bm * bn, cfg))
    ranked.sort(key=lambda entry: entry[:2])
    return [entry[-1] for entry in ranked]


def _tile_config(M: int, N: int, K: int, tile: tuple[int, int], dtype: str,
                 epilogue: str | None, sms: int, cluster: int) -> GemmConfig | None:
    """The tile's kernel: the TMA-store epilogue and a producer warpgroup that gives the
    consumers its registers (on an H100 both together won on every bench shape where the output
    tile's width allowed them, bench/tma_sweep.py), else stores from registers; None where the
    tile does not fit the shape."""
    bm, bn = tile
    for staged in (True, False):
        try:
            cfg = tma_ws_config(M, N, K, tile=(bm, bn, BK), dtype=dtype, epilogue=epilogue,
                                sms=sms, cluster_m=cluster, tma_store=staged,
                                producer_warps=4 if staged else 1,
                                stages=stages_for(bm, bn, output_columns(bn, epilogue)
                                                  if staged else 0))
        except ValueError:
            continue
        return cfg
    return None


CONV_TILES = (((64, 64, BK), (4, 1)), ((64, 128, BK), (4, 1)), ((128, 64, BK), (8, 1)),
              ((128, 128, BK), (8, 1)))
CONV_SPLITS = (1, 2, 3, 4, 6, 8)
CONV_MAX_STAGES = 6
MIN_K_TILES_PER_SPLIT = 2


CONV_TMA_PROPOSALS = 4
"""The TMA GEMM proposals (propose_tma_configs of the implicit GEMM) a conv without sync hooks
also takes, as im2col kernels."""
CONV_TMA_NARROW = (64, 128)
"""The widths of the one-warpgroup (64-row) TMA conv tiles a conv also takes: the GEMM model
proposes 64-row tiles only up to M = 1024, and a batch-8 14 x 14 layer (1568 pixels) gets 52
tiles of 128 rows on 132 SMs."""


def conv_candidates(N: int, H: int, W: int, C: int, K: int, epilogue: str | None = None,
                    sync_hooks: bool = False, sms: int = H100_SMS) -> list[ConvConfig]:
    """Every wgmma conv tile of CONV_TILES no wider than K, with as many stages as fit (at
    most CONV_MAX_STAGES), and each split-K factor that leaves every split
    MIN_K_TILES_PER_SPLIT k-tiles (none with sync hooks: a split tile posts once), its
    slices reducing through the workspace and, a second candidate, in a cluster (with fewer
    stages where the tile's f32 buffer needs their room); then, where C is a multiple of 64
    and there are no hooks, the first CONV_TMA_PROPOSALS tiles the TMA GEMM model proposes
    for the implicit GEMM and the 64-row tiles of CONV_TMA_NARROW, as warp-specialized kernels
    copying A in im2col mode."""
    out = []
    if not sync_hooks and C % BK == 0:
        proposed = propose_tma_configs(N * H * W, K, 9 * C, "f16", epilogue, sms,
                                       limit=CONV_TMA_PROPOSALS, cluster_limit=0)
        narrow = [_tile_config(N * H * W, K, 9 * C, (64, bn), "f16", epilogue, sms, 1)
                  for bn in CONV_TMA_NARROW if bn <= max(64, K)]
        for gemm in [*proposed, *(g for g in narrow if g is not None and g not in proposed)]:
            bm = gemm.tile[0]
            try:
                out.append(conv2d_config(N, H, W, C, K, tile=gemm.tile, warps=(bm // 16, 1),
                                         stages=gemm.stages, epilogue=epilogue, mma="wgmma",
                                         pipeline="tma_ws", tma_store=gemm.tma_store))
            except ValueError:
                continue
    for tile, warps in CONV_TILES:
        if tile[1] > max(64, K):
            continue
        k_tiles = 9 * C // tile[2]
        for split in (1,) if sync_hooks else CONV_SPLITS:
            if k_tiles % split or k_tiles // split < MIN_K_TILES_PER_SPLIT:
                continue
            for in_cluster in (False, True) if split > 1 else (False,):
                # the cluster's f32 tile takes the room of a 2 BN-wide 16-bit staging buffer
                partial_cols = 2 * tile[1] if in_cluster else 0
                stages = min(CONV_MAX_STAGES, stages_for(tile[0], tile[1], partial_cols))
                try:
                    out.append(conv2d_config(N, H, W, C, K, tile=tile, warps=warps,
                                             stages=stages, split_k=split, epilogue=epilogue,
                                             mma="wgmma", sync_hooks=sync_hooks,
                                             split_cluster=in_cluster))
                except ValueError:
                    continue
    return out


__all__ = ["BENCH_N_MAJOR", "BENCH_PINGPONG", "BENCH_STREAM_K", "BENCH_TALL",
           "conv_candidates", "n_major_twin", "pingpong_twin", "predicted_seconds",
           "propose_tma_configs", "stages_for", "stream_k_twins", "tall_twin",
           "tile_efficiency"]

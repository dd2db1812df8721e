"""The MLP of a transformer layer as a stage program: two tensor-core GEMMs synchronized tile
by tile (cuSync's headline workload).

    gpt3  (8-way tensor parallel): H[M, 6144] = GeLU(X[M, 12288] · W1[12288, 6144])
                                   Y[M, 12288] = H · W2[6144, 12288]
    llama (LLaMA-65B, 8-way TP):   H[M, 2816] = SwiGLU(X[M, 8192] · W1[8192, 2·2816])
                                   Y[M, 8192] = H · W2[2816, 8192]
                                   (W1 holds gate|up in 8-column blocks: reference.swiglu_weights)

    mlp_spec(model, M, cfg1=None, cfg2=None, mma="wgmma") -> MlpSpec
                                              (configs, grids, the dependency)
    mlp_stage_module(model, M, cfg1=None, cfg2=None) -> builtin.module

The module holds the two generated kernels (kernels/gemm.py with sync hooks), each in its own
gpu.module (`gemm1_module`, `gemm2_module`: their shared-memory globals keep their names),
one `sync.stage` per GEMM with the generated kernel's grid and block, the dependency of GEMM2's
operand 0 (H) on GEMM1's tiles, and the launches (GEMM1 first, on a high-priority stream):

    sync.dependency @gemm1 -> @gemm2 operand 0
        tiles (d0, d1)[s0] -> (d0, s0 floordiv R) forall s0 in [0, K2 / BK2)

GEMM2's k-step s (bound to the load point's `step`) reads H columns [s·BK2, (s+1)·BK2),
written by GEMM1 tile column (s·BK2) floordiv BH1, where BH1 = BN1 output columns of H per
GEMM1 tile (BN1 / 2 for SwiGLU: gate and up combine); so R = BH1 / BK2. Where BK2 does not
divide BH1, a k-step reads the tile columns of its first and last H column. GEMM2's BM is a
multiple of GEMM1's: its tile row d0 covers GEMM1 tile rows Q d0 .. Q d0 + Q - 1, Q = BM2 / BM1
(with Q > 1 the map gains `d0 * Q + s1 ... forall s1 in [0, Q)`).

The passes then generate RowSync for GEMM1 (a GEMM2 tile reads its whole row of H; with
`sync-select-policy{policy=tile}`, TileSync with a wait per k-step), the waits and posts, and
the forward-progress guarantee (PDL or the wait-kernel).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.ir import Operation
from xdsl.ir.affine import AffineExpr, AffineMap

from tilesync.contract import STATIC_SHARED_LIMIT
from tilesync.dialects import sync
from tilesync.kernels.choice import (
    BK,
    TILE_COLUMNS,
    TILE_ROWS,
    deeper_twin,
    n_major_twin,
    predicted_seconds,
    propose_tma_configs,
    stages_for,
    tall_twin,
)
from tilesync.kernels.config import GemmConfig, gemm_config, output_columns, tma_ws_config
from tilesync.kernels.gemm import gemm_module

MODELS: dict[str, dict] = {
    # K1 (model width / input), N1 (GEMM1 columns), H (hidden width = K2), epilogue
    "gpt3": {"K1": 12288, "N1": 6144, "H": 6144, "epilogue": "gelu"},
    "llama": {"K1": 8192, "N1": 5632, "H": 2816, "epilogue": "swiglu"},
}
PRODUCER, CONSUMER = "gemm1", "gemm2"

# Configs (tile, warps, stages) per model and M, from the kernels bench on an H200
# (the mma.sync run of commit ac02bec, kernels-bench-nvidia-h200.log in git history), with
# BM = 128 on both GEMMs (rows must match).
_BEST: dict[tuple[str, int], tuple[tuple, tuple]] = {
    ("gpt3", 256): (((128, 64, 32), (2, 2), 4), ((128, 64, 32), (2, 2), 4)),
    ("gpt3", 512): (((128, 64, 32), (2, 2), 4), ((128, 64, 32), (2, 2), 4)),
    ("gpt3", 1024): (((128, 64, 32), (2, 2), 4), ((128, 128, 32), (2, 2), 3)),
    ("gpt3", 2048): (((128, 128, 32), (2, 2), 3), ((128, 128, 32), (2, 2), 3)),
    ("llama", 256): (((128, 64, 32), (2, 2), 4), ((128, 64, 32), (2, 2), 4)),
    ("llama", 512): (((128, 64, 32), (2, 2), 4), ((128, 128, 32), (2, 2), 3)),
    ("llama", 1024): (((128, 64, 32), (2, 2), 4), ((128, 128, 32), (2, 2), 3)),
    ("llama", 2048): (((128, 64, 32), (2, 2), 4), ((128, 128, 32), (2, 2), 3)),
}
_SMALL = ((64, 128, 32), (1, 4), 4)  # M <= 64 (no split-K: a split tile posts once)
_DEFAULT = ((128, 64, 32), (2, 2), 4)

# wgmma (sm_90a) configs from the kernels bench on an H100
# (bench/results/kernels-bench-nvidia-h100-80gb-hbm3.log): one warpgroup for M <= 64, two
# (BM = 128) above; GEMM1's BN keeps R = BH1 / BK2 whole for SwiGLU (BH1 = BN1 / 2).
_WGMMA_SMALL = (((64, 128, 64), (4, 1), 6), ((64, 64, 64), (4, 1), 8))
_WGMMA_MID = (((128, 256, 64), (8, 1), 4), ((128, 128, 64), (8, 1), 6))  # M = 128 .. 512
_WGMMA_LARGE = (((128, 256, 64), (8, 1), 4), ((128, 256, 64), (8, 1), 4))  # M >= 1024
# The warp-specialized TMA kernels (mma="tma"; kernels/gemm_tma.py), from the kernels bench
# (bench/results/kernels-bench-nvidia-h100-80gb-hbm3.log): GEMM1 stores H with TMA copies.
# Each GEMM takes its autotuned tile where the MLP allows it; LLaMA's GEMM1 128 x 176 writes 88
# columns of H, so a 64-column k-step of GEMM2 may read two of its tiles (`dependency`).
# At M = 256 GEMM1 takes BM = 64 under GEMM2's 128. (BM1, BN1, BM2, BN2) by the largest batch
# each serves. LLaMA from M = 512: the fastest of every candidate of bench/mlp_sweep.py with
# the deeper staging on an H200 (bench/results/mlp-sweep-full-nvidia-h200.json: 1.113 of
# cuBLAS in a graph at 512, where 128 x 176 | 128 x 128 gave 1.006; 1.047 at 2048, where
# 128 x 256 | 128 x 256 gave 1.027); the other rows' tiles were the fastest there (GPT-3 at
# 2048: 0.967, 128 x 256 | 128 x 256 0.969). At M = 64 one 64-row warpgroup a GEMM and narrow
# tiles, so that the memory-bound GEMMs run more tiles than SMs: the fastest in the sweep of
# every small pair (bench/results/mlp-sweep-64-nvidia-h200.json: RowSync+PDL 1.073 of cuBLAS
# in a graph for GPT-3, 1.119 for LLaMA, where the wgmma MLP took 0.47 and 0.57).
_TMA_TILES = {"gpt3": ((64, (64, 64, 64, 96)), (256, (64, 192, 128, 192)),
                       (512, (128, 192, 128, 192)), (2048, (128, 192, 128, 256))),
              "llama": ((64, (64, 64, 64, 64)), (256, (64, 176, 128, 128)),
                        (2048, (128, 176, 128, 256)))}
MMAS = ("wgmma", "sync", "tma")
TMA_MIN_ROWS = 64
"""From this many rows an MLP runs on the warp-specialized TMA kernels (kernels/gemm_tma.py:
TMA loads, a TMA-store epilogue), below on the wgmma ones: the bench's `tma:` modes, the
torch front end's graph-to-stages. At M = 64 the TMA GEMMs of LLaMA's SwiGLU layer ran in 30 us
where the wgmma ones took 42 (bench/results/kernels-bench-nvidia-h200.log)."""
DEEPER_STAGING = True
"""The TMA MLP's GEMMs stage their output in fewer boxes where that buys a stage
(deeper_staging). On an H200 (bench/mlp_sweep.py --table --deeper, the best of stream sync and
RowSync+PDL over cuBLAS in a CUDA graph) it took GPT-3 at M = 256, 512, 1024, 2048 from 1.043,
0.984, 0.956, 0.995 to 1.060, 1.018, 0.994, 1.057 and LLaMA at 1024 from 1.067 to 1.078; LLaMA
at 2048 went from 1.027 to 1.022 (at 256 and 512 its tiles have no twin)."""

W2_K_BY_N = True
"""The TMA MLP's GEMM2 reads W2 as K x N (hidden x N2, the layout the bench's cuBLAS rows
multiply) where its tile allows. On an H100 (bench/mlp_sweep.py --table --deeper --w2-kxn,
7d65c3d; RowSync+PDL over cuBLAS in a CUDA graph) it took GPT-3 at M = 256, 512, 1024 from
1.028, 1.022, 1.013 to 1.053, 1.027, 1.017 and LLaMA from 1.142, 1.106, 1.073 to 1.155, 1.113,
1.075. graph-to-stages keeps nn.Linear's N x K: a K x N copy would double the weights."""

W1_K_BY_N = True
"""The TMA MLP's GEMM1 reads W1 as K x N (K1 x N1) where its tile allows, as GEMM2 reads W2.
On an H100 (`tilesync bench kernels`, 4997617) GPT-3's fc1 (GeLU) ran 64 x 64 tiles at M = 64
in 0.0546 ms reading B K x N against 0.0596 N x K, 64 x 192 at M = 256 in 0.0623 against
0.0680; LLaMA's fc1 (SwiGLU) 64 x 64 at M = 64 0.0351 against 0.0375."""


@dataclass(frozen=True)
class MlpSpec:
    model: str
    M: int
    cfg1: GemmConfig  # X · W1 (+ GeLU / SwiGLU) -> H
    cfg2: GemmConfig  # H · W2 -> Y

    def __post_init__(self):
        bm1, bm2 = self.cfg1.tile[0], self.cfg2.tile[0]
        # the row dependency's condition: GEMMs without hooks (persistent_spec) have none
        hooked = self.cfg1.sync_hooks or self.cfg2.sync_hooks
        if hooked and not rows_cover_whole_tiles(self.M, bm1, bm2):
            raise ValueError(f"GEMM2's row tiles must cover whole GEMM1 row tiles inside its "
                             f"grid (BM2 a multiple of BM1, GEMM1's row tiles a multiple of "
                             f"BM2 / BM1), got BM1 {bm1}, BM2 {bm2} at M = {self.M}")

    @property
    def hidden(self) -> int:
        return self.cfg1.out_cols

    @property
    def ratio(self) -> int | None:
        """R: GEMM2 k-steps per GEMM1 tile column (H columns per GEMM1 tile / BK2); None when
        BK2 does not divide them (a k-step may then read two GEMM1 tile columns)."""
        per_tile, bk2 = self.cfg1.out_tile_cols, self.cfg2.tile[2]
        return None if per_tile % bk2 else per_tile // bk2

    @property
    def k_steps(self) -> int:
        return self.cfg2.k_tiles

    @property
    def flops(self) -> int:
        return self.cfg1.flops + self.cfg2.flops

    @property
    def label(self) -> str:
        return f"{_label(self.cfg1)} | {_label(self.cfg2)}"

    @property
    def target(self) -> str | None:
        """The PTX target the kernels need beyond the device's own (wgmma: sm_90a)."""
        return self.cfg1.target or self.cfg2.target


def _label(cfg: GemmConfig) -> str:
    bm, bn, bk = cfg.tile
    if cfg.warp_specialized:
        return f"tma {bm}x{bn}x{bk} s{cfg.stages} p{cfg.producer_warps}" + \
            (" tma-store" if cfg.tma_store else "") + (" B-KxN" if cfg.b_layout == "row" else "")
    label = f"{bm}x{bn}x{bk} w{cfg.warps[0]}x{cfg.warps[1]} s{cfg.stages}"
    return ("wgmma " if cfg.mma == "wgmma" else "") + label


def k_step_reads_two_tiles_at_most(per_tile: int, bk2: int) -> bool:
    """Whether every k-step of GEMM2 (columns [s BK2, s BK2 + BK2) of H) lies in at most two
    GEMM1 tiles of `per_tile` columns, as `dependency` takes it (its first and its last): a
    k-step starts at most per_tile - gcd(BK2, per_tile) columns into a tile."""
    return bk2 - math.gcd(bk2, per_tile) <= per_tile


def rows_cover_whole_tiles(M: int, bm1: int, bm2: int) -> bool:
    """Whether each GEMM2 row tile covers whole GEMM1 row tiles inside GEMM1's grid: BM2 a
    multiple of BM1, and GEMM1's ceil(M / BM1) row tiles a multiple of Q = BM2 / BM1.
    `dependency` reads rows Q d0 + s1, s1 < Q, a range it cannot clip at the last tile: at M = 64
    with BM1 = 64, BM2 = 128 the consumer waited on GEMM1 row tile 1 of a grid of one."""
    return bm2 % bm1 == 0 and -(-M // bm1) % (bm2 // bm1) == 0


def tma_tiles(M: int, k1: int, n1: int, hidden: int, n2: int, epilogue1: str | None,
              epilogue2: str | None = None, dtype: str = "f16"
              ) -> tuple[tuple[int, int], tuple[int, int]]:
    """((BM1, BN1), (BM2, BN2)) of an MLP on the TMA kernels: the measured table where the
    shapes are a MODELS entry's, else the wave model's first proposals (kernels/choice.py)
    that the stage program can take: GEMM2's BM a multiple of GEMM1's, and GEMM1's tile at
    least one of GEMM2's k-steps of H wide or a whole number of them."""
    for model, shape in MODELS.items():
        if (shape["K1"], shape["N1"], shape["H"], shape["epilogue"]) == (n2, n1, hidden,
                                                                        epilogue1):
            bm1, bn1, bm2, bn2 = next((tiles for most, tiles in _TMA_TILES[model]
                                       if M <= most), _TMA_TILES[model][-1][1])
            if rows_cover_whole_tiles(M, bm1, bm2):
                return (bm1, bn1), (bm2, bn2)
    every = len(TILE_ROWS) * len(TILE_COLUMNS)
    seconds = [c for c in propose_tma_configs(M, n2, hidden, dtype, epilogue2, limit=every,
                                              cluster_limit=0) if c.tma_store]
    firsts = [c for c in propose_tma_configs(M, n1, k1, dtype, epilogue1, limit=every,
                                             cluster_limit=0)
              if c.tma_store and k_step_reads_two_tiles_at_most(c.out_tile_cols, BK)]
    for second in seconds:
        first = next((c for c in firsts
                      if rows_cover_whole_tiles(M, c.tile[0], second.tile[0])), None)
        if first is not None:
            return first.tile[:2], second.tile[:2]
    raise ValueError(f"no TMA tile of GEMM1 ({M} x {n1} x {k1}) covers whole row tiles of "
                     f"GEMM2's ({M} x {n2} x {hidden})")


def tma_tile_configs(tiles: tuple[int, int, int, int], epilogue1: str | None
                     ) -> tuple[tuple, tuple]:
    """((tile, warps, stages) of GEMM1, of GEMM2) of the TMA MLP on tiles (BM1, BN1, BM2, BN2):
    BK 64, a consumer warpgroup per 64 rows, as many stages as fit beside the staging buffer
    (GEMM1's holds its output columns: half of BN1 for SwiGLU)."""
    bm1, bn1, bm2, bn2 = tiles
    out1 = output_columns(bn1, epilogue1)
    return (((bm1, bn1, BK), (bm1 // 16, 1), stages_for(bm1, bn1, out1)),
            ((bm2, bn2, BK), (bm2 // 16, 1), stages_for(bm2, bn2, bn2)))


def default_configs(model: str, M: int, mma: str = "wgmma") -> tuple[tuple, tuple]:
    """((tile, warps, stages) of GEMM1, of GEMM2) for `model` at batch M."""
    if mma == "tma":
        if M < TMA_MIN_ROWS:
            raise ValueError(f"the TMA MLP takes M >= {TMA_MIN_ROWS}, got {M}")
        return tma_tile_configs(next((tiles for most, tiles in _TMA_TILES[model] if M <= most),
                                     _TMA_TILES[model][-1][1]), MODELS[model]["epilogue"])
    if mma == "wgmma":
        return _WGMMA_SMALL if M <= 64 else _WGMMA_MID if M <= 512 else _WGMMA_LARGE
    if (model, M) in _BEST:
        return _BEST[(model, M)]
    return (_SMALL, _SMALL) if M <= 64 else (_DEFAULT, _DEFAULT)


def mlp_spec(model: str, M: int, cfg1: tuple | GemmConfig | None = None,
             cfg2: tuple | GemmConfig | None = None, dtype: str = "f16",
             mma: str = "wgmma", deeper: bool = DEEPER_STAGING,
             w2_layout: str | None = None, w1_layout: str | None = None) -> MlpSpec:
    """The two GEMM configs (sync hooks on) of `model` at batch M and their consistency checks.

    cfg1 / cfg2: a GemmConfig, a (tile, warps, stages) triple, or None for default_configs.
    `mma`: "wgmma" (sm_90a, the default: the weights are then N x K, as nn.Linear keeps them),
    "tma" (the warp-specialized TMA kernels with the TMA-store epilogue, sm_90a; operands as
    for wgmma, passed as tensor maps: `tensor_map_boxes`) or "sync" (mma.sync, sm_80+; the
    weights K x N). `w2_layout` "row": the TMA GEMM2 reads W2 as K x N (hidden x N2, as
    `h @ w2` keeps it; its BN a multiple of WGMMA_N_ATOM), "col" as N x K; None: "row" for
    the TMA GEMM2 where W2_K_BY_N and its tile allow (kernels/choice.py: n_major_twin).
    `w1_layout` likewise for W1 (K1 x N1) and the TMA GEMM1 (W1_K_BY_N)."""
    if model not in MODELS:
        raise ValueError(f"model must be one of {sorted(MODELS)}, got {model!r}")
    if mma not in MMAS:
        raise ValueError(f"mma must be one of {MMAS}, got {mma!r}")
    shape = MODELS[model]
    d1, d2 = default_configs(model, M, mma)
    b_layout = "row" if mma == "sync" else "col"
    for name, layout in (("w1_layout", w1_layout), ("w2_layout", w2_layout)):
        if layout not in ("row", "col", None) or (layout == "row" and mma != "tma"):
            raise ValueError(f"{name} must be None, 'col' or 'row' (mma='tma' only); got "
                             f"{name}={layout!r}, mma={mma!r}")

    def make(given, default, n, k, epilogue, name, layout="col") -> GemmConfig:
        staging = 0
        if isinstance(given, GemmConfig):
            given, staging = (given.tile, given.warps, given.stages), given.staging_boxes
        tile, warps, stages = given if given is not None else default
        if mma == "tma":
            return tma_ws_config(M, n, k, tile, stages, dtype=dtype, epilogue=epilogue,
                                 name=name, sync_hooks=True, producer_warps=4, tma_store=True,
                                 staging_boxes=staging, b_layout=layout)
        return gemm_config(M, n, k, tile, warps, stages, dtype=dtype, epilogue=epilogue,
                           name=name, sync_hooks=True, mma=mma, b_layout=b_layout)

    c1 = make(cfg1, d1, shape["N1"], shape["K1"], shape["epilogue"], PRODUCER,
              w1_layout or "col")
    c2 = make(cfg2, d2, shape["K1"], shape["H"], None, CONSUMER, w2_layout or "col")
    if w1_layout is None and mma == "tma" and W1_K_BY_N:
        c1 = n_major_twin(c1) or c1
    if w2_layout is None and mma == "tma" and W2_K_BY_N:
        c2 = n_major_twin(c2) or c2
    if mma == "tma":
        c1, c2 = deeper_staging((c1, c2), deeper)
    spec = MlpSpec(model, M, c1, c2)
    per_tile, bk2 = c1.out_tile_cols, c2.tile[2]
    if not k_step_reads_two_tiles_at_most(per_tile, bk2) or spec.hidden % bk2:
        raise ValueError(f"GEMM1's tile writes {per_tile} columns of H; GEMM2's BK {bk2} must "
                         f"divide H's {spec.hidden} columns and no k-step may read more than "
                         f"two GEMM1 tiles")
    return spec


def deeper_staging(configs: tuple[GemmConfig, ...], deeper: bool = DEEPER_STAGING
                   ) -> tuple[GemmConfig, ...]:
    """`configs`, with `deeper` each TMA-store GEMM as its `deeper_twin` where a staging
    buffer of fewer boxes buys it a stage (kernels/choice.py): the TMA MLP's GEMMs, the
    bench's and graph-to-stages' alike."""
    return tuple(deeper_twin(c) or c for c in configs) if deeper else configs


TILE_SLOT_BYTES = 4
"""Static shared memory an ordered `sync.tile` adds (the word through which thread 0 hands the
counter's tile to its block: lowering/sync_to_nvvm.py)."""


def fit_ordered(spec: MlpSpec) -> MlpSpec:
    """`spec` with the stages of each GEMM in dynamic shared memory where its static shared
    memory leaves no room for an ordered sync.tile's slot under the 48 KB static limit
    (128x64x32 s4 and 128x128x32 s3 use exactly 48 KB); `spec` itself when both fit."""
    def fit(cfg: GemmConfig) -> GemmConfig:
        if cfg.dynamic_shared_bytes or cfg.shared_bytes + TILE_SLOT_BYTES <= STATIC_SHARED_LIMIT:
            return cfg
        return replace(cfg, dynamic_shared=True)

    c1, c2 = fit(spec.cfg1), fit(spec.cfg2)
    return spec if (c1, c2) == (spec.cfg1, spec.cfg2) else replace(spec, cfg1=c1, cfg2=c2)


def dependency(spec: MlpSpec) -> sync.DependencyOp:
    """GEMM2 tile (d0, d1), k-step s0 reads H tile (d0, s0 floordiv R); with Q = BM2 / BM1 > 1
    the H tiles (Q d0 + s1, ...), s1 in [0, Q). Where BK2 does not divide GEMM1's BH1 columns
    of H, k-step s0 reads columns [s0 BK2, s0 BK2 + BK2) of H: the tiles of its first and last
    column, (s0 BK2 + s2 (BK2 - 1)) floordiv BH1 for s2 in [0, 2) (mlp_spec takes only widths
    whose k-steps read at most two: k_step_reads_two_tiles_at_most)."""
    d0, s0 = AffineExpr.dimension(0), AffineExpr.symbol(0)
    symbols: list[tuple[int, int]] = [(0, spec.k_steps)]
    rows = spec.cfg2.tile[0] // spec.cfg1.tile[0]
    row = d0
    if rows > 1:
        row = d0 * rows + AffineExpr.symbol(len(symbols))
        symbols.append((0, rows))
    clipped = False
    if spec.ratio is None:
        bk2, per_tile = spec.cfg2.tile[2], spec.cfg1.out_tile_cols
        span = AffineExpr.symbol(len(symbols))
        if k_step_reads_two_tiles_at_most(per_tile, bk2):
            symbols.append((0, 2))
            column = (s0 * bk2 + span * (bk2 - 1)) // per_tile
        else:  # a k-step wider than GEMM1's tiles (16-row streaming GEMMs): each it covers
            tiles = max((s * bk2 + bk2 - 1) // per_tile - s * bk2 // per_tile + 1
                        for s in range(spec.k_steps))
            symbols.append((0, tiles))
            column = s0 * bk2 // per_tile + span
            clipped = any(s * bk2 // per_tile + tiles > spec.cfg1.tile_grid[1]
                          for s in range(spec.k_steps))
    else:
        column = s0 if spec.ratio == 1 else s0 // spec.ratio
    return sync.DependencyOp(PRODUCER, CONSUMER, 0, AffineMap(2, len(symbols), (row, column)),
                             symbols, clipped=clipped)


def output_tile(cfg: GemmConfig) -> tuple[int, int, int]:
    """The stage's `tile`: the rows and columns of C one block writes (SwiGLU combines gate and
    up columns, so BN / 2 of H), then BK. sync-verify maps a consumer's loads of C onto the
    producer tiles that wrote them with it."""
    bm, _, bk = cfg.tile
    return (bm, cfg.out_tile_cols, bk)


def _stage(cfg: GemmConfig) -> sync.StageOp:
    grid = cfg.grid[:2]  # split_k is 1, a TMA kernel with hooks not persistent: a block a tile
    return sync.StageOp(cfg.name, [f"{cfg.name}_module", cfg.name], grid, cfg.block,
                        output_tile(cfg))


def _taken(module: ModuleOp) -> list[Operation]:
    """The ops of a module just generated, detached to go into another (not cloned: nothing
    else holds the generated module)."""
    ops = list(module.ops)
    for op in ops:
        op.detach()
    return ops


def mlp_stage_module(model: str = "gpt3", M: int = 256, cfg1=None, cfg2=None,
                     dtype: str = "f16", *, spec: MlpSpec | None = None,
                     mma: str = "wgmma") -> ModuleOp:
    """builtin.module {gpu.module @gemm1_module, gpu.module @gemm2_module, the stages, the
    dependency, launches: GEMM1 on stream 0 at high priority, GEMM2 on stream 1}.

    Kernel arguments: gemm1 (X, W1, H), gemm2 (H, W2, Y); the sync passes append theirs."""
    spec = spec or mlp_spec(model, M, cfg1, cfg2, dtype, mma)
    ops = []
    for cfg in (spec.cfg1, spec.cfg2):
        if cfg.split_k != 1:
            raise ValueError("stage programs of split-K GEMMs are not supported here")
        ops += _taken(gemm_module(0, 0, 0, config=cfg))
    ops += [_stage(spec.cfg1), _stage(spec.cfg2), dependency(spec),
            sync.LaunchOp(PRODUCER, stream=0, priority=-1),
            sync.LaunchOp(CONSUMER, stream=1)]
    module = ModuleOp(ops)
    module.attributes["gpu.container_module"] = UnitAttr()
    return module


def persistent_spec(spec: MlpSpec, tall: bool = True) -> MlpSpec:
    """`spec`'s warp-specialized TMA GEMMs without sync hooks, so persistent: at most one block
    an SM walking the tiles in grouped order (the kernels `bench kernels` times alone), which
    only stream order can synchronize (a block's tiles are not one tile). With `tall`, a GEMM
    whose tile has a `tall_twin` the wave model predicts faster runs that (no sync hooks to
    refuse it): LLaMA's fc1 from M = 1024 in 256 x 176 tiles (bench kernels, 8e2484a: 0.1257
    and 0.2457 ms at M = 1024 and 2048 against 0.1282 and 0.2538 for 128 x 176)."""
    if not (spec.cfg1.warp_specialized and spec.cfg2.warp_specialized):
        raise ValueError("persistent GEMMs are the warp-specialized TMA ones (mma='tma')")

    def persistent(cfg: GemmConfig) -> GemmConfig:
        cfg = replace(cfg, sync_hooks=False, persistent=True)
        twin = tall_twin(cfg) if tall else None
        if twin is not None and predicted_seconds(twin, cfg.sms) < predicted_seconds(cfg,
                                                                                    cfg.sms):
            return twin
        return cfg

    return replace(spec, cfg1=persistent(spec.cfg1), cfg2=persistent(spec.cfg2))


def mlp_persistent_module(spec: MlpSpec) -> ModuleOp:
    """The two persistent GEMMs of `persistent_spec(spec)` as a stage program without a
    dependency: each stage's grid is its kernel's persistent grid, GEMM1 then GEMM2 on stream 0
    (stream order is their only synchronization)."""
    spec = persistent_spec(spec)
    ops = []
    for cfg in (spec.cfg1, spec.cfg2):
        ops += _taken(gemm_module(0, 0, 0, config=cfg))
    ops += [sync.StageOp(cfg.name, [f"{cfg.name}_module", cfg.name], cfg.grid[:2], cfg.block,
                         output_tile(cfg)) for cfg in (spec.cfg1, spec.cfg2)]
    ops += [sync.LaunchOp(PRODUCER, stream=0), sync.LaunchOp(CONSUMER, stream=0)]
    module = ModuleOp(ops)
    module.attributes["gpu.container_module"] = UnitAttr()
    return module


__all__ = [
    "DEEPER_STAGING",
    "MODELS",
    "TMA_MIN_ROWS",
    "MlpSpec",
    "deeper_staging",
    "default_configs",
    "dependency",
    "fit_ordered",
    "mlp_persistent_module",
    "mlp_spec",
    "mlp_stage_module",
    "output_tile",
    "persistent_spec",
    "tma_tiles",
]

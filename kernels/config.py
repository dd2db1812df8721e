"""Configurations of the generated kernels: what each kernel computes, its validation, and the
sizes derived from it (grid, block, shared memory, parameters).

    gemm_config(M, N, K, ...) -> GemmConfig       (kernels/gemm.py generates it)
    conv2d_config(N, H, W, C, K, ...) -> ConvConfig  (3x3 conv as an implicit GEMM: conv2d.py)
    softmax_config(rows, cols, ...) -> SoftmaxConfig (softmax.py)

The epilogue constants (GeLU's tanh approximation, dropout's hash and threshold) are part of
what a configuration means: the generators emit them and the host references compute them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from functools import cached_property

from xdsl.dialects.builtin import BFloat16Type, Float16Type
from xdsl.ir import Attribute

from tilesync.contract import (
    DYNAMIC_SHARED_BASE_ALIGNMENT,
    MAX_CLUSTER_BLOCKS,
    SM_90,
    STATIC_SHARED_LIMIT,
    TENSOR_MAP,
)
from tilesync.dialects.tile import PACKED_BLOCK, WGMMA_N_ATOM

EPILOGUES = (None, "bias", "gelu", "bias_gelu", "swiglu", "relu", "bias_relu")
PIPELINES = ("cp_async", "tma_ws")
STAGING_ROWS = 64  # a TMA-store epilogue's box: the rows of one consumer warpgroup
IM2COL_FILTER = (3, 3)  # GemmConfig.im2col's filter (R, S): stride 1, padding 1
STAGING_COLUMNS = (64, 32, 16, 8)
"""Widths of a TMA-store epilogue's box, widest first: 128, 64, 32 or 16 bytes of 16-bit
elements, each the row of its swizzle (128-, 64-, 32-byte; 16-byte rows need none: a warp's
eight rows are 128 consecutive bytes), so a warp's stores of its rows hit distinct banks."""
MAX_L2_PREFETCH = 8  # GemmConfig.l2_prefetch: k-tiles ahead of the one loaded
TMA_WS_ROWS = (64, 128, 256)
"""BM of a warp-specialized TMA GEMM: one or two consumer warpgroups of 64 rows, or (BM 256, a
`tall` tile) two of 128 rows, each two wgmma of 64 rows a k16 step, B's tile shared by all 256
rows. (Four warpgroups of 64 rows compiled, but on an H100 their setmaxnreg asked 112 registers
a thread where the 640-thread block holds 96 and the kernel hung; under 96 registers a 256 x 176
tile does not compile, ptxas C7602.)"""
WARPGROUP_ROWS = 128
"""The most rows of a tile one consumer warpgroup multiplies (a ping-pong's, a tall tile's)."""
PINGPONG_MAX_COLUMNS = 176
"""The widest tile a warpgroup multiplies 128 rows of (a ping-pong's, a tall tile's): its
128 x BN fp32 accumulators are BN registers a thread, under the 232 that setmaxnreg gives a
consumer beside a producer warpgroup (ptxas: 128 x 192 spilled 12 bytes with a bias + GeLU
epilogue, 128 x 176 nothing with SwiGLU)."""


def tma_ws_warps(bm: int) -> tuple[int, int]:
    """The consumer warps of a warp-specialized tile of BM rows: a warpgroup a 64-row band up
    to two, two of 128 rows for a tall tile."""
    return (min(bm, WARPGROUP_ROWS) // 16, 1)
H100_SMS = 132  # H100 SXM and H200: the persistent grid's default size
DTYPES = {"f16": Float16Type, "bf16": BFloat16Type}


def dtype_name(element: Attribute) -> str:
    """The DTYPES name of an element type; ValueError for any other."""
    for name, kind in DTYPES.items():
        if isinstance(element, kind):
            return name
    raise ValueError(f"the generated kernels take f16 or bf16, not {element}")

# Dynamic shared memory a block may opt in to on sm_90 (sm_80: 163 KiB, checked at launch).
MAX_SHARED_PER_BLOCK = SM_90.max_shared_per_block
MAX_TMA_BLOCKS_PER_SM = 4
"""The most blocks of a one-tile-a-block TMA kernel `GemmConfig.blocks_per_sm` asks for: at 4,
a block of a consumer warpgroup and a producer warp has 96 registers a thread."""

# GeLU: 0.5 x (1 + tanh(GELU_C (x + GELU_K x^3)))  (GPT-2/3's tanh approximation)
GELU_C = 0.7978845608028654  # sqrt(2 / pi)
GELU_K = 0.044715

# Dropout keeps element (r, c) iff mix(c ^ mix(r ^ mix(seed))) < dropout_threshold(p), mix the
# "lowbias32" hash (Chris Wellons' hash prospector) on u32 with wrapping products.
DROPOUT_HASH_MULTIPLIERS = (0x7FEB352D, 0x846CA68B)


def _repr_showing_set(config: object, later_fields: frozenset[str]) -> str:
    """The dataclass repr where fields added later show only where they differ from their
    defaults: every earlier configuration keeps its name, which keys the compile cache and
    the PTX digest records (so a field that changes the kernel must show when set)."""
    shown = []
    for f in fields(config):  # type: ignore[arg-type]
        value = getattr(config, f.name)
        if f.name in later_fields and value == f.default:
            continue
        shown.append(f"{f.name}={value!r}")
    return f"{type(config).__qualname__}({', '.join(shown)})"


def output_columns(columns: int, epilogue: str | None) -> int:
    """Columns of C that `columns` GEMM columns give: SwiGLU combines gate and up in pairs."""
    return columns // 2 if epilogue == "swiglu" else columns


def tensor_map_swizzle(box: tuple[int, int]) -> int:
    """The swizzle (bytes) of a TMA box of 16-bit elements: its row, at most 128 bytes (A's and
    B's rows of BK = 64 are the 128-byte swizzle wgmma reads), none for rows of 16 bytes (the
    narrowest swizzle spans 32)."""
    row = box[1] * 2
    return min(128, row) if row >= 32 else 0


def dropout_threshold(keep: float) -> int:
    """Elements with hash < threshold are kept (u32; p = 1 keeps everything)."""
    return min(round(keep * 2**32), 2**32 - 1) if keep < 1.0 else 2**32 - 1


class SharedMemoryExceeded(ValueError):
    """A kernel's stage rings exceed a block's shared memory (fewer stages may fit)."""


@dataclass(frozen=True, repr=False)
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
    """Slices of the K loop (grid z). Slice z reduces k-tiles z k_tiles / split_k up to (z + 1)
    k_tiles / split_k (rounded down: where split_k does not divide them the slices differ by
    one k-tile at most; on an H100 3 slices of LLaMA's 88 fc1 column tiles, two blocks on
    every SM, took 35.6 us at M = 1 against 34.4 unsplit, on 88 SMs) and adds its
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
    pipeline: str = "cp_async"
    """`cp_async`: every thread copies its 16-byte chunks and multiplies (one block per tile).
    `tma_ws` (wgmma, sm_90a): warp specialization in a persistent grid. A producer warp (or
    warpgroup, `producer_warps=4`) loads k-tiles with TMA (`tile.tma_load` of A's and B's
    tensor maps) into a ring of `stages` buffers, each with a full and an empty transaction
    barrier; the BM / 64 consumer warpgroups wait for full, multiply with wgmma and release
    the buffer; each block takes tiles blockIdx.x, + gridDim.x, ... of the tiles in grouped
    order (`raster_group` tile rows per group: blocks running together share B's columns in
    L2) and stores each tile through the epilogue."""
    raster_group: int = 8
    """tma_ws: tile rows per group of the persistent order (M-fastest inside a group)."""
    sms: int = H100_SMS
    """tma_ws: blocks of the persistent grid (at most one per tile); one block per SM."""
    producer_warps: int = 1
    """tma_ws: 1, a producer warp after the consumer warpgroups (the register cap of one block
    per SM suffices), or 4, a producer warpgroup that gives registers to the consumers
    (`setmaxnreg`)."""
    cluster_m: int = 1
    """tma_ws: 2 runs clusters of two blocks on vertically adjacent tiles (same B columns):
    each block loads half of the B tile and multicasts it to both, halving the B bytes read
    from L2; a buffer is free once the consumers of both blocks released it."""
    tma_store: bool = False
    """tma_ws: each consumer warpgroup writes its rows of the tile through the epilogue into a
    staging buffer in shared memory (64 x 64 boxes in the 128-byte swizzle) and one of its
    threads copies the boxes out with TMA stores (C as a tensor map); the warpgroup goes on to
    its next tile while the copies drain, waiting for them only before it writes the buffer
    again. Needs the output tile's width a multiple of 16 (the narrowest box)."""
    persistent: bool = True
    """tma_ws: a persistent grid (at most one block per SM walks the tiles in grouped order),
    or, False, one block per tile on the tile grid (tile (x, y) is block (x, y), or sync.tile's
    with hooks): the form a stage program launches, since the cuSync passes and sync-verify
    follow a block's tile, not a persistent block's walk. Sync hooks need it."""
    staged_store: bool = False
    """cp_async with wgmma: the tile leaves through shared memory. After the multiply the
    accumulators go through the epilogue into A's stage ring (BN / 64 boxes of BM x 64 in the
    128-byte swizzle, so a warp's fragment stores hit distinct banks) and every thread copies
    16-byte chunks of whole rows out (`tile.copy_out`): a warp stores 512 consecutive bytes,
    where the accumulators' own stores put 4 bytes in each of eight lines. Needs split_k=1, no
    swiglu, BN a multiple of 64 with stages >= BN / 64 (the ring holds the tile), N a
    multiple of 8."""
    a_head: int = 0
    """cp_async: A is the concatenation [A_head | A] along K (NeRF's skip, `cat([x, h])`):
    the first `a_head` of the K columns come from the parameter A_head (M x a_head), the rest
    from A (M x (K - a_head)); whole k-tiles of each, so a k-tile copies from one of the two."""
    staging_boxes: int = 0
    """tma_store: the boxes of a warpgroup's rows its staging buffer holds (0: the whole
    output tile's). Fewer leave shared memory to another stage; the tile then leaves in rounds
    of that many boxes, each round's writes waiting for the copies of the round before to
    have read the buffer."""
    split_cluster: bool = False
    """Split-K without a workspace: the split_k slices of a tile run as one cluster of
    (1, 1, split_k) CTAs (grid z), and the partial tiles meet through shared memory. Each
    slice but the first stores its fp32 tile into a BM x BN buffer of its own shared memory,
    the cluster meets at a barrier, slice 0 reads the others' buffers (`ld.shared::cluster`),
    adds them to its accumulators, applies the epilogue and stores C, and the cluster meets
    again. No global atomics, counters or workspace: the reduction stays on the SMs, where the
    workspace's `red.add`s queue at L2 (batch-8 convs: each extra split cost 2-6 us)."""
    stream_k_tiles: int = 0
    """tma_ws, persistent: the last `stream_k_tiles` tiles of the grouped order are shared out
    by k-tiles (stream-K): their T x KT k-steps split evenly over all `sms` blocks, block b
    taking the contiguous run of k-steps from b per + min(b, extra) after its whole tiles of
    the rest (blockIdx.x, + sms, ...). A run crosses tile boundaries, so only its first and
    last segments can be short of a tile; such a segment stores its fp32 partial tile into a
    workspace slot of its block's (plain stores: the `red.add`s of split-K's workspace made
    LLaMA's fc2 at M = 256 2.3x slower on an H200) and counts its k-tiles on the tile's
    counter; the segment whose count completes the tile adds the others' partials, runs the
    epilogue and stores it (no block waits for another). A shared tile's k-steps are rotated
    to start where the first run inside it starts (kernels.gemm_tma._tile_rotation), so the
    blocks of the shared round read the same k-tiles of A and B at about the same time.
    Fills a last, partial round of tiles: a grid of fewer tiles than SMs, or a tile count
    that is not a multiple of them."""
    im2col: tuple[int, int, int, int] | None = None
    """tma_ws: A is the implicit GEMM's view of an N x H x W x C input (this shape) under a
    3 x 3 filter, stride 1, padding 1 (M = N H W output pixels, K = 9 C as (r, s, c), c
    fastest): A's map is an im2col map (contract.IM2COL_CORNERS), and k-tile kt copies the tile's
    BM pixels' channels 64 (kt mod C/64).. at the filter tap kt div (C/64), the padding
    zero-filled by the copy engine. Needs C a multiple of 64 (a k-tile inside one tap)."""
    pingpong: bool = False
    """tma_ws, persistent, BM = 128: the two consumer warpgroups take alternate tiles of the
    block's walk, each multiplying a whole BM x BN tile (BM / 64 wgmma of 64 rows a k-step),
    instead of a 64-row half of every tile. The ring hands them their tiles' k-steps in turn,
    so one multiplies while the other runs its epilogue: the tensor cores do not wait for the
    stores (cuBLAS's Hopper kernel for LLaMA's fc1 at M = 2048 is a 2-warpgroup ping-pong of
    this tile). A warpgroup holds BM / 64 x BN / 2 accumulator registers a thread, so BN is at
    most PINGPONG_MAX_COLUMNS; no sync hooks, stream-K or im2col."""

    blocks_per_sm: int = 1
    """tma_ws, one tile a block (persistent=False): blocks of the kernel an SM must hold at
    once. ptxas caps a thread's registers to fit them (its minimum CTAs per SM) and the stages
    must leave each its share of the SM's shared memory: one block's ring fill and epilogue
    then overlap another's k-steps, which one block a tile leaves idle (a conv tile has 9 to
    36 k-steps). A persistent kernel is one block per SM."""

    triangular_a: int = 0
    """T > 0: A is lower triangular in blocks of T rows, A[m, k] = 0 for k > m mod T (a causal
    softmax's P over sequences of T keys): a tile's k-loop ends at the k-tile of its last
    row's position, (m0 mod T) + BM - 1, and reads nothing past it. One tile, cp.async."""

    triangular_c: int = 0
    """T > 0: C is read at or below the diagonal of each block of T rows only, C[m, n] with
    n <= m mod T (a causal softmax's scores, whose kernel excludes the rest): a tile wholly
    above it (n0 > (m0 mod T) + BM - 1) computes and stores nothing, and still posts (its
    store point). One tile a block, cp.async, one slice of K."""

    l2_prefetch: int = 0
    """tma_ws: D > 0: with each k-tile it loads, the producer asks for B's box D k-tiles
    further on to be brought into L2 (`tile.tma_prefetch`, no shared memory): more of the
    weights' bytes in flight from DRAM than the ring's stages hold. At most MAX_L2_PREFETCH;
    none past the tile's k-tiles. Measured slower everywhere it was tried, so nothing proposes
    it: on an H100 (9c9cd15) four mid-M MLP GEMMs took 1.2-1.7x as long with D = 2, 4 or 8
    (GPT-3's fc2 at M = 256: 63.5 us to 88.5-90.0; in clusters of two 65.3 to 72.9),
    bench/results/kernels-l2-prefetch-nvidia-h100-80gb-hbm3.json."""

    def __repr__(self) -> str:
        return _repr_showing_set(self, _LATER_GEMM_FIELDS)

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
        if not 1 <= self.split_k <= self.k_tiles:
            raise ValueError(
                f"split_k={self.split_k} must be 1 to the {self.k_tiles} k-tiles of K={self.K} "
                f"(BK={bk}): every slice takes at least one"
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
        if self.b_layout == "row" and self.pipeline != "tma_ws" and \
                bn * 2 not in (32, 64, 128, 256, 512):
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
            n_major = self.b_layout == "row" and self.pipeline == "tma_ws"
            warps = tma_ws_warps(bm) if self.pipeline == "tma_ws" else (bm // 16, 1)
            if bk * 2 != 128 or (self.b_layout != "col" and not n_major) or bm % 64 \
                    or self.warps != warps:
                raise ValueError(
                    "wgmma reads K-major 128-byte rows: it needs BK = 64, b_layout='col' "
                    "(or 'row' with pipeline='tma_ws'), BM a multiple of 64 and warps = "
                    f"(BM / 16, 1) (tma_ws: at most two warpgroups, tma_ws_warps), here "
                    f"{warps}; got tile={self.tile} warps={self.warps} "
                    f"b_layout={self.b_layout!r}"
                )
            if bn % 8 or bn > 256 or self.wgmma_in_flight not in (0, 1):
                raise ValueError(f"wgmma needs BN a multiple of 8 up to 256 and "
                                 f"wgmma_in_flight 0 or 1, got {self.tile}, "
                                 f"{self.wgmma_in_flight}")
            if self.stages < 2 + self.wgmma_in_flight and not self.warp_specialized:
                raise ValueError(f"wgmma with {self.wgmma_in_flight} group in flight needs "
                                 f"at least {2 + self.wgmma_in_flight} stages")
        if self.pipeline not in PIPELINES:
            raise ValueError(f"pipeline must be one of {PIPELINES}, got {self.pipeline!r}")
        if self.pipeline == "tma_ws":
            self._check_tma_ws()
        elif self.blocks_per_sm != 1:
            raise ValueError("blocks_per_sm is the tma_ws pipeline's (cp_async kernels' blocks "
                             "per SM follow their registers and shared memory)")
        elif self.l2_prefetch:
            raise ValueError("l2_prefetch is the tma_ws pipeline's (its producer's TMA)")
        if self.staged_store:
            self._check_staged_store()
        if self.a_head:
            self._check_a_head()
        if self.split_cluster:
            self._check_split_cluster()
        if self.triangular_a and (self.split_k > 1 or self.pipeline != "cp_async" or
                                  self.triangular_a < 0 or self.K != self.triangular_a):
            raise ValueError(f"triangular_a={self.triangular_a}: A's K is the {self.K} keys of "
                             "one sequence, on the cp_async pipeline, one slice of K")
        if self.triangular_c and (self.split_k > 1 or self.pipeline != "cp_async" or
                                  self.triangular_c < 0 or self.N != self.triangular_c):
            raise ValueError(f"triangular_c={self.triangular_c}: C's N is the {self.N} keys of "
                             "one sequence, on the cp_async pipeline, one slice of K")
        if self.shared_bytes + self.stage_alignment + self.static_shared_bytes > \
                MAX_SHARED_PER_BLOCK:
            raise SharedMemoryExceeded(
                f"{self.shared_bytes} bytes of shared memory for {self.stages} stages of "
                f"{self.tile}: more than the {MAX_SHARED_PER_BLOCK} a block can have; use "
                "fewer stages or a smaller tile"
            )

    def _check_staged_store(self) -> None:
        bn = self.tile[1]
        if self.pipeline != "cp_async" or self.mma != "wgmma":
            raise ValueError("staged_store stages a wgmma tile of the cp_async pipeline (tma_ws "
                             "has tma_store)")
        if self.split_k != 1 or self.epilogue == "swiglu":
            raise ValueError("staged_store takes split_k=1 and no swiglu")
        if bn % 64 or self.stages < bn // 64 or self.N % 8:
            raise ValueError(f"staged_store holds the tile in A's ring as boxes of 64 columns: "
                             f"it needs BN a multiple of 64, at least BN / 64 stages and N a "
                             f"multiple of 8, got tile={self.tile} stages={self.stages} "
                             f"N={self.N}")

    def _check_a_head(self) -> None:
        bk = self.tile[2]
        if self.pipeline != "cp_async" or self.split_k != 1:
            raise ValueError("a_head concatenates A in the cp_async pipeline, without split-K")
        if not 0 < self.a_head < self.K or self.a_head % bk:
            raise ValueError(f"a_head must be whole k-tiles (BK={bk}) short of K={self.K}, "
                             f"got {self.a_head}")

    def _check_split_cluster(self) -> None:
        if not 2 <= self.split_k <= MAX_CLUSTER_BLOCKS:  # (tma_ws takes no split-K)
            raise ValueError(f"split_cluster reduces the 2 to {MAX_CLUSTER_BLOCKS} slices of a "
                             f"tile in one cluster, got split_k={self.split_k}")
        if self.sync_hooks:
            raise ValueError("split_cluster takes no sync hooks (sync-verify follows a "
                             "workspace split, whose last slice posts)")

    def _check_tma_ws(self) -> None:
        bm, bn, _ = self.tile
        if self.mma != "wgmma":
            raise ValueError("pipeline='tma_ws' multiplies with wgmma: set mma='wgmma'")
        if bm not in TMA_WS_ROWS or bn % 16:
            raise ValueError(f"tma_ws takes BM in {TMA_WS_ROWS} and BN a multiple of 16, got "
                             f"{self.tile}")
        if self.tall and (bn > PINGPONG_MAX_COLUMNS or self.producer_warps != 4
                          or not self.persistent or self.sync_hooks or self.stream_k_tiles
                          or self.pingpong or self.cluster_m != 1 or self.im2col):
            raise ValueError(f"a tall tma_ws tile ({bm} rows: two warpgroups of "
                             f"{WARPGROUP_ROWS}) is at most {PINGPONG_MAX_COLUMNS} wide, with a "
                             f"producer warpgroup (setmaxnreg), in the persistent grid, without "
                             f"sync hooks, stream-K, ping-pong, clusters or im2col; got "
                             f"tile={self.tile}")
        if self.split_k != 1:
            raise ValueError("tma_ws takes split_k=1")
        if self.b_layout == "row" and (bn % 64 or self.cluster_m != 1 or self.l2_prefetch
                                       or self.im2col):
            raise ValueError(f"tma_ws with B N-major (b_layout='row') loads B in boxes of 64 "
                             f"columns: it needs BN a multiple of 64, cluster_m=1, no "
                             f"l2_prefetch and no im2col; got tile={self.tile} "
                             f"cluster_m={self.cluster_m} l2_prefetch={self.l2_prefetch}")
        if self.sync_hooks and self.persistent:
            raise ValueError("tma_ws with sync hooks takes persistent=False (one tile a block: "
                             "sync-verify follows a block's tile, not a persistent walk)")
        if not self.persistent and self.cluster_m != 1:
            raise ValueError("tma_ws with persistent=False takes cluster_m=1")
        if self.blocks_per_sm != 1:
            self._check_blocks_per_sm()
        if self.cluster_m not in (1, 2) or (self.cluster_m > 1 and self.sync_hooks):
            raise ValueError(f"tma_ws takes cluster_m 1 or 2 (2 without sync hooks), got "
                             f"{self.cluster_m}")
        boxes = self.out_tile_cols // self.staging_box[1] if self.tma_store else 0
        if self.staging_boxes and not (self.tma_store and boxes % self.staging_boxes == 0
                                       and self.staging_boxes < boxes):
            raise ValueError(f"staging_boxes stages a divisor of the output tile's "
                             f"{boxes} boxes (fewer than all) of a tma_store tile, got "
                             f"{self.staging_boxes}")
        if self.tma_store and self.out_tile_cols % STAGING_COLUMNS[-1]:
            raise ValueError(f"tma_store needs the output tile's width ({self.out_tile_cols}) a "
                             f"multiple of {STAGING_COLUMNS[-1]}")
        if self.stream_k_tiles:
            self._check_stream_k()
        if self.im2col is not None:
            self._check_im2col()
        if self.pingpong:
            self._check_pingpong()
        if not 0 <= self.l2_prefetch <= MAX_L2_PREFETCH:
            raise ValueError(f"l2_prefetch is 0 to {MAX_L2_PREFETCH} k-tiles ahead, got "
                             f"{self.l2_prefetch}")
        if self.producer_warps not in (1, 4) or self.raster_group < 1 or self.sms < 1:
            raise ValueError(f"tma_ws needs producer_warps 1 or 4, raster_group >= 1 and "
                             f"sms >= 1, got {self.producer_warps}, {self.raster_group}, "
                             f"{self.sms}")

    def _check_blocks_per_sm(self) -> None:
        if self.persistent or not 1 <= self.blocks_per_sm <= MAX_TMA_BLOCKS_PER_SM:
            raise ValueError(f"blocks_per_sm 1 to {MAX_TMA_BLOCKS_PER_SM} is for tma_ws with "
                             f"one tile a block (persistent=False), got {self.blocks_per_sm}"
                             f"{' persistent' if self.persistent else ''}")
        per_block = self.shared_bytes + self.static_shared_bytes + \
            SM_90.reserved_shared_per_block
        if per_block * self.blocks_per_sm > SM_90.shared_per_sm:
            raise SharedMemoryExceeded(
                f"{self.blocks_per_sm} blocks of {per_block} bytes of shared memory each "
                f"exceed an SM's {SM_90.shared_per_sm} (fewer stages may fit)")

    def _check_im2col(self) -> None:
        n, h, w, c = self.im2col
        if min(n, h, w, c) <= 0 or c % self.tile[2]:
            raise ValueError(f"im2col needs a positive N x H x W x C input with C a multiple "
                             f"of {self.tile[2]} (a k-tile inside one filter tap), got "
                             f"{self.im2col}")
        taps = IM2COL_FILTER[0] * IM2COL_FILTER[1]
        if (self.M, self.K) != (n * h * w, taps * c):
            raise ValueError(f"im2col of a {self.im2col} input is an implicit GEMM of M = "
                             f"{n * h * w} pixels and K = {taps * c}, got M={self.M} "
                             f"K={self.K}")

    def _check_pingpong(self) -> None:
        bm, bn, _ = self.tile
        if bm != 128 or bn > PINGPONG_MAX_COLUMNS:
            raise ValueError(f"pingpong takes 128-row tiles (two warpgroups, one a tile) at most "
                             f"{PINGPONG_MAX_COLUMNS} wide (each holds its tile's "
                             f"accumulators), got {self.tile}")
        if not self.persistent or self.sync_hooks or self.stream_k_tiles or \
                self.im2col is not None:
            raise ValueError("pingpong runs in the persistent grid without sync hooks, "
                             "stream-K or im2col")

    def _check_stream_k(self) -> None:
        if not 0 < self.stream_k_tiles <= self.tiles:
            raise ValueError(f"stream_k_tiles shares out 1 to {self.tiles} tiles (all of this "
                             f"shape's), got {self.stream_k_tiles}")
        if not self.persistent or self.sync_hooks or self.cluster_m != 1:
            raise ValueError("stream-K runs in the persistent grid without sync hooks or "
                             "clusters (a tile's last segment, not its block, stores it)")

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
    def warp_specialized(self) -> bool:
        return self.pipeline == "tma_ws"

    @property
    def reallocates_registers(self) -> bool:
        """Whether the kernel moves registers between its warpgroups (`setmaxnreg`): a
        producer warpgroup beside the consumers. Its blocks then hold what ptxas allots under
        its launch bounds (`register_cap`), whatever the code uses."""
        return self.warp_specialized and self.producer_warps == 4

    @property
    def tall(self) -> bool:
        """A warp-specialized tile of more rows than one warpgroup multiplies (TMA_WS_ROWS):
        two consumer warpgroups of WARPGROUP_ROWS each."""
        return self.warp_specialized and self.tile[0] > WARPGROUP_ROWS

    @property
    def consumer_groups(self) -> int:
        """Consumer warpgroups."""
        return self.consumer_threads // 128

    @property
    def consumer_threads(self) -> int:
        """Threads that multiply (and store): all of them but a tma_ws producer's."""
        return 32 * self.warps[0] * self.warps[1]

    @property
    def threads(self) -> int:
        producer = 32 * self.producer_warps if self.warp_specialized else 0
        return self.consumer_threads + producer

    @property
    def block(self) -> tuple[int, int, int]:
        return (self.threads, 1, 1)

    @property
    def tile_grid(self) -> tuple[int, int]:
        """Output tiles along M and N."""
        bm, bn, _ = self.tile
        return (-(-self.M // bm), -(-self.N // bn))

    @property
    def tiles(self) -> int:
        m, n = self.tile_grid
        return m * n

    @property
    def cluster_tiles(self) -> int:
        """tma_ws: the units of the persistent order, a cluster's tiles (cluster_m rows)."""
        m, n = self.tile_grid
        return -(-m // self.cluster_m) * n

    @property
    def grid(self) -> tuple[int, int, int]:
        if self.stream_k_tiles:  # every SM takes a share of the stream-K tiles
            return (self.sms, 1, 1)
        if self.warp_specialized and self.persistent:  # one block per SM, at most one a tile
            c = self.cluster_m
            return (min(c * self.cluster_tiles, self.sms // c * c), 1, 1)
        # x: tile row (M), y: tile column, z: split-K slice
        return (*self.tile_grid, self.split_k)

    @property
    def out_cols(self) -> int:
        """Columns of C: N, or N / 2 for swiglu (gate and up columns combine)."""
        return output_columns(self.N, self.epilogue)

    @property
    def out_tile_cols(self) -> int:
        """Columns of C one tile writes: BN, or BN / 2 for swiglu."""
        return output_columns(self.tile[1], self.epilogue)

    @property
    def params(self) -> tuple[str, ...]:
        """Kernel parameters in order: A, B, C[, A_head][, bias][, seed][, workspace,
        counters]."""
        names = ["A", "B", "C"]
        if self.a_head:
            names.append("A_head")
        if self.has_bias:
            names.append("bias")
        if self.dropout is not None:
            names.append("seed")
        if self.split_workspace:
            names += ["workspace", "counters"]
        return tuple(names)

    @property
    def split_workspace(self) -> bool:
        """Split-K through a global workspace and counters (not in a cluster), or stream-K."""
        return (self.split_k > 1 and not self.split_cluster) or self.stream_k_tiles > 0

    @property
    def cluster_dims(self) -> tuple[int, int, int] | None:
        """CTAs per cluster (x, y, z), or None without clusters."""
        if self.split_cluster:
            return (1, 1, self.split_k)
        if self.cluster_m > 1:
            return (self.cluster_m, 1, 1)
        return None

    @property
    def k_tiles(self) -> int:
        return -(-self.K // self.tile[2])

    @property
    def shared_bytes(self) -> int:
        bm, bn, bk = self.tile
        staging = bm * self.staging_cols if self.tma_store else 0
        partial = 2 * bm * bn if self.split_cluster else 0  # f32, in 2-byte units
        return (self.stages * (bm * bk + bk * bn) + staging + partial) * 2

    @property
    def static_shared_bytes(self) -> int:
        """Shared memory beside the stages: a warp-specialized kernel's full and empty
        mbarriers, one 8-byte barrier each per stage, and a ping-pong's two turn barriers (the
        launch fails when it and the dynamic array together pass the block's limit)."""
        if not self.warp_specialized:
            return 0
        return 2 * 8 * self.stages + (2 * 8 if self.pingpong else 0)  # ping-pong: turns

    @property
    def dynamic_shared_bytes(self) -> int:
        """Shared memory passed at launch: the stages live in dynamic shared memory when they
        do not fit the 48 KiB of static shared memory, else 0 (static)."""
        dynamic = self.dynamic_shared or self.shared_bytes > STATIC_SHARED_LIMIT or \
            self.warp_specialized
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
        maps = tuple(self.tensor_map_boxes)
        return tuple("i32" if p == "seed" else TENSOR_MAP if p in maps else "ptr"
                     for p in self.params)

    @property
    def tensor_map_boxes(self) -> dict[str, tuple[int, int]]:
        """tma_ws: the TMA box of A (BM rows of BK), of B (BN rows of BK where B is N x K; BK
        rows of 64 columns where it is K x N, b_layout='row', BN / 64 boxes a k-tile) and,
        with tma_store, of C (a warpgroup's 64 rows, 64 columns)."""
        if not self.warp_specialized:
            return {}
        bm, bn, bk = self.tile
        b_box = (bk, WGMMA_N_ATOM) if self.b_layout == "row" else (bn // self.cluster_m, bk)
        boxes = {"A": (bm, bk), "B": b_box}  # a cluster splits B's box
        if self.tma_store:
            boxes["C"] = self.staging_box
        return boxes

    @property
    def tensor_map_shapes(self) -> dict[str, tuple[int, int]]:
        """tma_ws: the tensor each map of `tensor_map_boxes` describes (B N x K, or K x N
        with b_layout='row'; with im2col, A's is the N x H x W x C input)."""
        b_shape = (self.K, self.N) if self.b_layout == "row" else (self.N, self.K)
        shapes = {"A": self.im2col or (self.M, self.K), "B": b_shape,
                  "C": (self.M, self.out_cols)}
        return {name: shapes[name] for name in self.tensor_map_boxes}

    @property
    def staging_cols(self) -> int:
        """tma_store: the output columns the staging buffer holds at once."""
        if not self.staging_boxes:
            return self.out_tile_cols
        return self.staging_boxes * self.staging_box[1]

    @property
    def staging_box(self) -> tuple[int, int]:
        """tma_store: the box of C a warpgroup copies out, the widest that divides the tile."""
        cols = next(w for w in STAGING_COLUMNS if self.out_tile_cols % w == 0)
        return (STAGING_ROWS, cols)

    @property
    def workspace_shape(self) -> tuple[int, ...]:
        """fp32 partial sums of split-K (zero before the first launch): C's shape; stream-K's
        are two BM x BN slots per block (its first and last segments' partial tiles), one
        after the other, each as the (16, 8) blocks of its accumulator fragments (BM / 16
        rows of BN / 8; `tile.store_acc ... packed`: each warp store one 128-byte line)."""
        if self.stream_k_tiles:
            bm, bn, _ = self.tile
            return (2 * self.sms * (bm // 16) * (bn // 8), *PACKED_BLOCK)
        return (self.M, self.N)

    @property
    def counters_shape(self) -> tuple[int, ...]:
        """i32 arrival counters of split-K, one per output tile (zero before the first
        launch); stream-K's, one per shared tile."""
        if self.stream_k_tiles:
            return (self.stream_k_tiles,)
        return self.tile_grid

    @property
    def has_bias(self) -> bool:
        return self.epilogue in ("bias", "bias_gelu", "bias_relu")

    @property
    def flops(self) -> int:
        return 2 * self.M * self.N * self.K

    @cached_property
    def element_type(self) -> Attribute:
        return DTYPES[self.dtype]()


_LATER_GEMM_FIELDS = frozenset({"pipeline", "raster_group", "sms", "producer_warps",
                                "cluster_m", "tma_store", "persistent", "staged_store",
                                "a_head", "split_cluster", "staging_boxes",
                                "stream_k_tiles", "im2col", "pingpong", "blocks_per_sm",
                                "triangular_a", "triangular_c", "l2_prefetch"})
_HOOK_FIELDS = frozenset({"sync_hooks"})
_SOFTMAX_FIELDS = _HOOK_FIELDS | {"scale", "causal"}
_CONV_LATER_FIELDS = _HOOK_FIELDS | {"split_cluster", "pipeline", "tma_store", "blocks_per_sm"}


def gemm_config(M: int, N: int, K: int, tile=(128, 128, 32), warps=(2, 2), stages: int = 3,
                dtype: str = "f16", b_layout: str = "row", epilogue: str | None = None,
                name: str = "gemm", sync_hooks: bool = False, split_k: int = 1,
                dropout: float | None = None, dynamic_shared: bool = False,
                mma: str = "sync", wgmma_in_flight: int = 1, pipeline: str = "cp_async",
                raster_group: int = 8, sms: int = H100_SMS, producer_warps: int = 1,
                cluster_m: int = 1, tma_store: bool = False,
                persistent: bool = True, staged_store: bool = False,
                a_head: int = 0, split_cluster: bool = False,
                staging_boxes: int = 0, stream_k_tiles: int = 0,
                im2col: tuple[int, int, int, int] | None = None,
                pingpong: bool = False, blocks_per_sm: int = 1,
                triangular_a: int = 0, triangular_c: int = 0,
                l2_prefetch: int = 0) -> GemmConfig:
    return GemmConfig(M, N, K, tuple(tile), tuple(warps), stages, dtype, b_layout, epilogue,
                      name, sync_hooks, split_k, dropout, dynamic_shared, mma, wgmma_in_flight,
                      pipeline, raster_group, sms, producer_warps, cluster_m, tma_store,
                      persistent, staged_store, a_head, staging_boxes, split_cluster,
                      stream_k_tiles, None if im2col is None else tuple(im2col), pingpong,
                      blocks_per_sm, triangular_a, triangular_c, l2_prefetch)


def tma_ws_config(M: int, N: int, K: int, tile=(128, 256, 64), stages: int = 4,
                  dtype: str = "f16", epilogue: str | None = None, name: str = "gemm",
                  sync_hooks: bool = False, dropout: float | None = None,
                  wgmma_in_flight: int = 1, raster_group: int = 8, sms: int = H100_SMS,
                  producer_warps: int = 1, cluster_m: int = 1,
                  tma_store: bool = False, persistent: bool | None = None,
                  staging_boxes: int = 0, stream_k_tiles: int = 0,
                  im2col: tuple[int, int, int, int] | None = None,
                  pingpong: bool = False, blocks_per_sm: int = 1,
                  l2_prefetch: int = 0, b_layout: str = "col") -> GemmConfig:
    """A warp-specialized TMA GEMM (B as N x K, or K x N with b_layout='row'): consumer warps
    (BM / 16, 1); persistent unless it has sync hooks."""
    if persistent is None:
        persistent = not sync_hooks
    return gemm_config(M, N, K, tile, tma_ws_warps(tile[0]), stages, dtype, b_layout, epilogue,
                       name, sync_hooks, 1, dropout, True, "wgmma", wgmma_in_flight, "tma_ws",
                       raster_group, sms, producer_warps, cluster_m, tma_store, persistent,
                       staging_boxes=staging_boxes, stream_k_tiles=stream_k_tiles,
                       im2col=im2col, pingpong=pingpong, blocks_per_sm=blocks_per_sm,
                       l2_prefetch=l2_prefetch)



@dataclass(frozen=True, repr=False)
class ConvConfig:
    N: int
    H: int
    W: int
    C: int
    K: int
    tile: tuple[int, int, int] = (128, 128, 32)
    warps: tuple[int, int] = (2, 2)
    stages: int = 3
    split_k: int = 1
    epilogue: str | None = None
    name: str = "conv2d"
    R: int = 3
    S: int = 3
    mma: str = "sync"
    """The GEMM's multiply: mma.sync, or wgmma (sm_90a; see GemmConfig.mma)."""
    sync_hooks: bool = False
    """GemmConfig.sync_hooks (in the repr only when set)."""
    split_cluster: bool = False
    """GemmConfig.split_cluster: the split_k slices reduce in a cluster (in the repr only when
    set)."""
    pipeline: str = "cp_async"
    """GemmConfig.pipeline: `tma_ws` is the warp-specialized persistent GEMM with A copied by
    TMA in im2col mode (GemmConfig.im2col; wgmma, C a multiple of 64; a producer warpgroup with
    the TMA-store epilogue, else a producer warp, as the GEMM proposals pair them)."""
    tma_store: bool = False
    """tma_ws: GemmConfig.tma_store."""
    blocks_per_sm: int = 1
    """tma_ws with sync hooks (one tile a block): GemmConfig.blocks_per_sm."""

    def __repr__(self) -> str:
        return _repr_showing_set(self, _CONV_LATER_FIELDS)

    def __post_init__(self) -> None:
        if min(self.N, self.H, self.W, self.C, self.K) <= 0:
            raise ValueError(f"conv sizes must be positive, got {self}")
        if self.C % 8:
            raise ValueError(f"C must be a multiple of 8 (16-byte channel chunks), got {self.C}")
        if (self.R, self.S) != (3, 3):
            raise ValueError("only 3x3 filters (stride 1, padding 1) are generated")
        if self.epilogue == "swiglu":
            raise ValueError("swiglu is a GEMM epilogue; conv2d takes none, bias, gelu, relu")
        _ = self.gemm  # validates the GEMM view

    @property
    def gemm(self) -> GemmConfig:
        if self.pipeline == "tma_ws":
            if self.mma != "wgmma" or self.split_k != 1 or self.split_cluster or \
                    self.warps != tma_ws_warps(self.tile[0]):
                raise ValueError(f"a tma_ws conv multiplies with wgmma (warps (BM / 16, 1)) "
                                 f"and takes no split-K, got {self}")
            return tma_ws_config(self.N * self.H * self.W, self.K, self.R * self.S * self.C,
                                 tile=self.tile, stages=self.stages, epilogue=self.epilogue,
                                 name=self.name, sync_hooks=self.sync_hooks,
                                 producer_warps=4 if self.tma_store else 1,
                                 tma_store=self.tma_store, im2col=self.input_shape,
                                 blocks_per_sm=self.blocks_per_sm)
        if self.tma_store:
            raise ValueError("tma_store is the tma_ws pipeline's epilogue")
        return gemm_config(self.N * self.H * self.W, self.K, self.R * self.S * self.C,
                           tile=self.tile, warps=self.warps, stages=self.stages,
                           b_layout="col", epilogue=self.epilogue, name=self.name,
                           sync_hooks=self.sync_hooks, split_k=self.split_k, mma=self.mma,
                           split_cluster=self.split_cluster)

    @property
    def target(self) -> str | None:
        """The PTX target the kernel needs beyond the device's own (wgmma: sm_90a)."""
        return self.gemm.target

    @property
    def grid(self) -> tuple[int, int, int]:
        return self.gemm.grid

    @property
    def block(self) -> tuple[int, int, int]:
        return self.gemm.block

    @property
    def flops(self) -> int:
        return self.gemm.flops

    @property
    def input_shape(self) -> tuple[int, int, int, int]:
        return (self.N, self.H, self.W, self.C)

    @property
    def filter_shape(self) -> tuple[int, int, int, int]:
        return (self.K, self.R, self.S, self.C)

    @property
    def output_shape(self) -> tuple[int, int, int, int]:
        return (self.N, self.H, self.W, self.K)


def conv2d_config(N: int, H: int, W: int, C: int, K: int, tile=(128, 128, 32), warps=(2, 2),
                  stages: int = 3, split_k: int = 1, epilogue: str | None = None,
                  name: str = "conv2d", mma: str = "sync", sync_hooks: bool = False,
                  split_cluster: bool = False, pipeline: str = "cp_async",
                  tma_store: bool = False, blocks_per_sm: int = 1) -> ConvConfig:
    return ConvConfig(N, H, W, C, K, tuple(tile), tuple(warps), stages, split_k, epilogue,
                      name, mma=mma, sync_hooks=sync_hooks, split_cluster=split_cluster,
                      pipeline=pipeline, tma_store=tma_store, blocks_per_sm=blocks_per_sm)


class _WarpPerRow:
    """A kernel of rows of a rows x cols fp16 matrix, one warp a row, `warps` rows a block."""

    rows: int
    cols: int
    warps: int

    def _check_rows(self) -> None:
        if self.rows <= 0 or self.cols <= 0 or self.cols % 32 or self.cols > 4096:
            raise ValueError(f"cols must be a multiple of 32 up to 4096 and rows positive, got "
                             f"{self.rows} x {self.cols}")

    @property
    def target(self) -> str | None:
        """The PTX target the kernel needs beyond the device's own: none."""
        return None

    @property
    def block(self) -> tuple[int, int, int]:
        return (32 * self.warps, 1, 1)

    @property
    def grid(self) -> tuple[int, int, int]:
        return (-(-self.rows // self.warps), 1, 1)


@dataclass(frozen=True, repr=False)
class SoftmaxConfig(_WarpPerRow):
    rows: int
    cols: int
    dropout: float | None = None
    warps: int = 4
    name: str = "softmax"
    sync_hooks: bool = False
    """Block b's rows as `sync.tile` (b, 0), a `sync.load_point operand 0` before its loads
    and a `sync.store_point` after its stores, for the cuSync passes (in the repr only when
    set)."""
    scale: float = 1.0
    """softmax(X · scale) (attention's 1/sqrt(d)): exp((x - max) · scale), which needs scale
    positive (in the repr only when not 1)."""
    causal: bool = False
    """Attention's causal mask: rows are queries of sequences of `cols` tokens (row r is
    query r mod cols), and the columns (keys) past a row's query are excluded: 0 in Y (in the
    repr only when set)."""

    def __repr__(self) -> str:
        return _repr_showing_set(self, _SOFTMAX_FIELDS)

    def __post_init__(self) -> None:
        self._check_rows()
        if self.causal and self.rows % self.cols:
            raise ValueError(f"a causal softmax's rows are whole sequences of {self.cols} "
                             f"queries, got {self.rows} rows")
        if not (math.isfinite(self.scale) and self.scale > 0):
            raise ValueError(f"scale must be positive and finite, got {self.scale}")
        if self.dropout is not None and not 0.0 < self.dropout <= 1.0:
            raise ValueError(f"dropout keep probability must be in (0, 1], got {self.dropout}")

    @property
    def tile(self) -> tuple[int, int]:
        """The rows and columns of Y one block writes."""
        return (self.warps, self.cols)

    @property
    def signature(self) -> tuple[str, ...]:
        return ("ptr", "ptr") + (("i32",) if self.dropout is not None else ())

    @property
    def bytes(self) -> int:
        return 2 * 2 * self.rows * self.cols


@dataclass(frozen=True)
class LayerNormConfig(_WarpPerRow):
    """Y = (X - mean) / sqrt(var + eps) · gamma + beta over each row of an fp16 X (biased
    variance, as torch's layer_norm): one warp per row, `warps` rows a block."""

    rows: int
    cols: int
    eps: float = 1e-5
    warps: int = 8
    name: str = "layer_norm"

    def __post_init__(self) -> None:
        self._check_rows()
        if not (math.isfinite(self.eps) and self.eps > 0):
            raise ValueError(f"eps must be positive and finite, got {self.eps}")

    @property
    def signature(self) -> tuple[str, ...]:
        return ("ptr",) * 4  # X, gamma, beta, Y


@dataclass(frozen=True)
class RowDotConfig(_WarpPerRow):
    """Y[r] = X[r, :] · w + bias over each row of an fp16 X: a Linear to one output (NeRF's
    density head), one warp per row, `warps` rows a block."""

    rows: int
    cols: int
    warps: int = 8
    name: str = "row_dot"

    def __post_init__(self) -> None:
        self._check_rows()

    @property
    def signature(self) -> tuple[str, ...]:
        return ("ptr",) * 4  # X, w, bias, Y


@dataclass(frozen=True)
class AttentionConfig:
    """Fused attention (FlashAttention-2's forward): O = softmax(q · kᵀ · scale) · v for every
    head of every sequence in one kernel, S and P never leaving registers
    (kernels/attention.py).

    q, k and v are read in place from the QKV projection's output, [B·T, 3C] (C = H·D: q of
    head h at columns h·D, k at C + h·D, v at 2C + h·D; sequence b at rows b·T ..), and O is
    written [B·T, C], head h at columns h·D: the layouts of graph-to-stages' attention chain,
    whose q · kᵀ, softmax and P · v kernels this one replaces. Block (x, y) computes the
    `block_m` query rows x · block_m .. of head y (a warp 16 of them), taking the keys
    `block_n` at a time through a `stages`-deep cp.async ring; with `causal` a query sees the
    keys up to its own position in its sequence. `mma`: "sync" (mma.sync) or "wgmma"
    (sm_90a: a warpgroup per 64 query rows)."""

    tokens: int
    head_width: int
    heads: int = 1
    sequences: int = 1
    causal: bool = False
    scale: float = 1.0
    block_m: int = 64
    block_n: int = 64
    stages: int = 2
    dtype: str = "f16"
    mma: str = "sync"
    name: str = "attention"
    sync_hooks: bool = False
    """Block (x, y) as `sync.tile` (x, y) of a (B·T / block_m, H) grid, a
    `sync.load_point` before its q (operand 0), each key block's k (1, step j) and v (2,
    step j), and a `sync.store_point` after its stores of O."""
    cached: int = 0
    """S': the keys and values of each sequence's earlier tokens, kept in a cache (decoding
    with a KV cache: `tokens` are the new ones, any count, attending to the S' cached keys
    and to the new ones; causal: each new token to those up to its own position S' + i). The
    caches are two more arguments, [B·H·S', D] each (sequence b's head h at rows (b·H + h)·S'
    .., torch's B x H x S' x D), read from key block 0 on; then the new tokens' k and v
    in place from QKV, a key block (and the load points' step) counting from S' / block_n. A
    sequence's new tokens take ceil(T / block_m) blocks, the last one's rows past T padding
    (read as the last token, not stored: O is B x T x C). A multiple of block_n."""
    splits: int = 1
    """After a cache, not causal, a sequence's new tokens one block: the key blocks of a
    (sequence, head) split over this many blocks (flash-decoding: a decode step's few blocks
    would leave most SMs idle). Block (b · splits + p, h) takes `keys_per_split` key blocks
    from p · keys_per_split and writes its rows' O normalized by its own sum, fp32, to O and
    each row's score maximum and sum to a last argument, Stats (both [parts_rows, C]);
    `attention_combine_module` merges the splits into O. Every split takes at least one key
    block."""

    def __post_init__(self) -> None:
        if self.head_width not in (64, 128):
            raise ValueError(f"the head width must be 64 or 128, got {self.head_width}")
        if self.block_m not in (64, 128) or self.block_n not in (64, 128):
            raise ValueError(f"a block takes 64 or 128 queries and 64 or 128 keys at a time, "
                             f"got {self.block_m} x {self.block_n}")
        if self.cached < 0 or self.cached % self.block_n:
            raise ValueError(f"{self.cached} cached tokens: a multiple of the block's "
                             f"{self.block_n} keys")
        if self.tokens <= 0 or (not self.cached and (self.tokens % self.block_m
                                                     or self.tokens % self.block_n)):
            raise ValueError(f"{self.tokens} tokens: a multiple of the block's "
                             f"{self.block_m} queries and {self.block_n} keys (any count "
                             "after a KV cache)")
        if self.splits < 1 or (self.splits > 1 and (
                not self.cached or self.causal or self.tokens > self.block_m)):
            raise ValueError(f"{self.splits} splits of the keys: after a KV cache, not causal, "
                             f"and a sequence's {self.tokens} new tokens one block of "
                             f"{self.block_m}")
        if (self.splits - 1) * self.keys_per_split >= self.key_blocks:
            raise ValueError(f"{self.splits} splits of {self.key_blocks} key blocks, "
                             f"{self.keys_per_split} a split: the last would take none")
        if self.heads <= 0 or self.sequences <= 0 or not 2 <= self.stages <= 4:
            raise ValueError(f"heads and sequences positive and 2-4 stages, got "
                             f"{self.heads}, {self.sequences}, {self.stages}")
        if not (math.isfinite(self.scale) and self.scale > 0):
            raise ValueError(f"scale must be positive and finite, got {self.scale}")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {self.dtype}")
        if self.mma not in ("sync", "wgmma"):
            raise ValueError(f"mma must be 'sync' or 'wgmma', got {self.mma!r}")
        if self.dynamic_shared_bytes > MAX_SHARED_PER_BLOCK:
            raise SharedMemoryExceeded(f"{self.dynamic_shared_bytes} bytes of shared memory a "
                                       f"block with its alignment (at most "
                                       f"{MAX_SHARED_PER_BLOCK})")

    @property
    def element_type(self) -> Attribute:
        return DTYPES[self.dtype]()

    @property
    def width(self) -> int:
        """C = H·D."""
        return self.heads * self.head_width

    @property
    def rows(self) -> int:
        """B·T: the rows of QKV and O."""
        return self.sequences * self.tokens

    @property
    def warps(self) -> int:
        return self.block_m // 16

    @property
    def block(self) -> tuple[int, int, int]:
        return (32 * self.warps, 1, 1)

    @property
    def query_blocks(self) -> int:
        """The blocks of one sequence's queries (after a cache the last may be partly
        padding)."""
        return -(-self.tokens // self.block_m)

    @property
    def key_blocks(self) -> int:
        """The key blocks of a sequence's last query (not causal: of every query)."""
        return (self.cached + self.tokens - 1) // self.block_n + 1

    @property
    def keys_per_split(self) -> int:
        return -(-self.key_blocks // self.splits)

    @property
    def grid(self) -> tuple[int, int, int]:
        return (self.sequences * self.query_blocks * self.splits, self.heads, 1)

    @property
    def combine(self) -> CombineConfig:
        """The merge of this attention's splits (its launch, for the stage program and the
        cost model)."""
        return CombineConfig(self)

    @property
    def tile(self) -> tuple[int, int]:
        """The rows and columns of its output one block writes: of O, B·T rows (after a
        cache a sequence's T new tokens where they are one block: its rows of O are T, not
        block_m); split, of the splits' partial O and Stats, block_m rows a block
        (`parts_rows`)."""
        if self.cached and self.splits == 1:
            return (min(self.tokens, self.block_m), self.head_width)
        return (self.block_m, self.head_width)

    @property
    def parts_rows(self) -> int:
        """Split: the rows of the partial O and of Stats (each [parts_rows, C], fp32), block_m
        a block (its T rows, the rest unwritten), so that a block's region of them is its
        tile's, block (x, h) at rows x · block_m, columns h · D; Stats holds a row's score
        maximum (unscaled) at the head's column h · D and its sum at h · D + 1."""
        return self.sequences * self.splits * self.block_m

    @property
    def shared_bytes(self) -> int:
        """q's block and the ring of k and v blocks, 16-bit elements."""
        return 2 * self.head_width * (self.block_m + 2 * self.stages * self.block_n)

    @property
    def stage_alignment(self) -> int:
        """wgmma's swizzle atoms are 8 rows x 128 bytes from a 1024-byte aligned base."""
        return 1024 if self.mma == "wgmma" else 128

    @property
    def dynamic_shared_bytes(self) -> int:
        """All of it dynamic, with room to align its start."""
        return self.shared_bytes + self.stage_alignment - DYNAMIC_SHARED_BASE_ALIGNMENT

    @property
    def target(self) -> str | None:
        """wgmma: sm_90a."""
        return "sm_90a" if self.mma == "wgmma" else None

    @property
    def signature(self) -> tuple[str, ...]:
        """Q, K, V (QKV three times: one argument per operand read) and O; after them, with a
        cache, K_cache and V_cache, and with splits Stats."""
        return ("ptr",) * ((6 if self.cached else 4) + (self.splits > 1))

    @property
    def reallocates_registers(self) -> bool:
        """No setmaxnreg: the registers nvJitLink reports are what a block holds."""
        return False

    @property
    def flops(self) -> int:
        """Multiply-adds of q · kᵀ and P · v that the result needs, two flops each (causal:
        the pairs of a query and a key at or before it; every query sees the cached keys)."""
        t = self.tokens
        pairs = t * (t + 1) // 2 if self.causal else t * t
        pairs += t * self.cached
        return 2 * 2 * pairs * self.sequences * self.heads * self.head_width


COMBINE_WARPS = 4
"""attention_combine_module's warps a block: a new token each at a time."""


@dataclass(frozen=True)
class CombineConfig:
    """The launch of a split attention's merge (kernels/attention.py,
    attention_combine_module): block (b, h) of sequence b's T new tokens of head h, which
    reads each split's partial O row and Stats (fp32) and writes O (fp16)."""

    attention: AttentionConfig
    name: str = "combine"

    @property
    def grid(self) -> tuple[int, int, int]:
        """A block a (sequence, head), its T rows."""
        return (self.attention.sequences, self.attention.heads, 1)

    @property
    def block(self) -> tuple[int, int, int]:
        return (32 * COMBINE_WARPS, 1, 1)

    signature = ("ptr",) * 3  # the partial O, Stats, O
    target = None  # no wgmma: any sm_80+

    @property
    def tile(self) -> tuple[int, int]:
        """The rows and columns of O a block writes."""
        return (self.attention.tokens, self.attention.head_width)

    shared_bytes = 0
    reallocates_registers = False
    flops = 0

    @property
    def bytes(self) -> int:
        """Read: each split's rows of the partial O and two Stats columns (fp32); written: O."""
        att = self.attention
        rows = att.sequences * att.tokens * att.heads
        return rows * (4 * att.splits * (att.head_width + 2) + 2 * att.head_width)


def attention_config(tokens: int, head_width: int, heads: int = 1, sequences: int = 1,
                     causal: bool = False, scale: float = 1.0, **kw) -> AttentionConfig:
    return AttentionConfig(tokens, head_width, heads, sequences, causal, scale, **kw)


def softmax_config(rows: int, cols: int, dropout: float | None = None, warps: int = 4,
                   name: str = "softmax", sync_hooks: bool = False,
                   scale: float = 1.0, causal: bool = False) -> SoftmaxConfig:
    return SoftmaxConfig(rows, cols, dropout, warps, name, sync_hooks, scale, causal)


__all__ = [
    "COMBINE_WARPS",
    "DROPOUT_HASH_MULTIPLIERS",
    "DTYPES",
    "EPILOGUES",
    "GELU_C",
    "GELU_K",
    "H100_SMS",
    "MAX_SHARED_PER_BLOCK",
    "PIPELINES",
    "AttentionConfig",
    "CombineConfig",
    "ConvConfig",
    "GemmConfig",
    "LayerNormConfig",
    "RowDotConfig",
    "SharedMemoryExceeded",
    "SoftmaxConfig",
    "attention_config",
    "conv2d_config",
    "dropout_threshold",
    "gemm_config",
    "softmax_config",
    "tma_ws_config",
]

"""The warp-specialized, persistent TMA GEMM (`pipeline="tma_ws"`): configuration checks, the
generated IR's structure, PTX that nvJitLink accepts without spills, and (on a GPU) results
against numpy float64 on fresh random inputs with a poisoned output, edges and epilogues
included, launched twice (the barriers start over each launch)."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import time

import numpy as np
import pytest
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import IntegerAttr, f32

from tilesync.dialects import tile as tl
from tilesync.harness.compile import compile_kernel
from tilesync.kernels.config import GemmConfig, tma_ws_config
from tilesync.kernels.gemm import gemm_module
from tilesync.kernels.gemm_tma import consumer_registers
from tilesync.kernels.reference import apply_epilogue, host_array, host_values, reference_gemm
from tilesync.lowering.ptx import validate_ptx
from tilesync.runtime.module import needs_driver_jit

MAIN = tma_ws_config(4096, 4096, 4096)  # 128x256x64, 4 stages, two consumer warpgroups

CONFIGS = [
    MAIN,
    tma_ws_config(4096, 4096, 4096, dtype="bf16", tile=(128, 128, 64), stages=6),
    tma_ws_config(1000, 1000, 1000, tile=(128, 128, 64), epilogue="gelu"),  # every edge
    tma_ws_config(256, 6144, 12288, tile=(128, 96, 64), stages=6),  # BN not a power of two
    tma_ws_config(256, 5632, 8192, tile=(64, 176, 64), stages=6, epilogue="swiglu"),
    tma_ws_config(300, 520, 264, tile=(128, 112, 64), epilogue="bias_gelu", dtype="bf16",
                  wgmma_in_flight=0),
    tma_ws_config(4096, 4096, 4096, producer_warps=4),
    tma_ws_config(4096, 4096, 4096, cluster_m=2),  # B multicast to a cluster of two
    tma_ws_config(300, 520, 264, tile=(128, 112, 64), epilogue="gelu", cluster_m=2),  # odd rows
    # the TMA-store epilogue: a staging buffer in shared memory, C as a tensor map
    tma_ws_config(4096, 4096, 4096, stages=3, tma_store=True),
    tma_ws_config(1000, 1000, 1000, tile=(128, 128, 64), epilogue="bias_gelu", dtype="bf16",
                  tma_store=True),  # every edge: the copy engine clips the boxes
    tma_ws_config(300, 2048, 264, tile=(128, 256, 64), stages=3, epilogue="swiglu",
                  tma_store=True),  # 128 output columns a tile
    tma_ws_config(1000, 520, 264, tile=(64, 192, 64), stages=4, tma_store=True, cluster_m=2),
    tma_ws_config(4096, 4096, 4096, stages=3, tma_store=True, producer_warps=4, cluster_m=2),
    # boxes of 32 columns (64-byte swizzle) and of 16 (32-byte swizzle)
    tma_ws_config(1000, 5632, 264, tile=(128, 192, 64), stages=4, epilogue="swiglu",
                  tma_store=True),
    tma_ws_config(300, 520, 264, tile=(128, 112, 64), epilogue="bias", dtype="bf16",
                  tma_store=True, producer_warps=4),
    # boxes of 8 columns (16-byte rows, no swizzle): SwiGLU's 88 of a 176-wide tile
    tma_ws_config(1000, 5632, 264, tile=(128, 176, 64), stages=4, epilogue="swiglu",
                  tma_store=True, producer_warps=4),
    # a staging buffer of fewer boxes than the tile's, a stage more: the tile leaves in rounds
    tma_ws_config(1000, 1000, 1000, tile=(128, 256, 64), stages=4, epilogue="bias_gelu",
                  tma_store=True, producer_warps=4, staging_boxes=2),
    tma_ws_config(1000, 5632, 264, tile=(128, 176, 64), stages=5, epilogue="swiglu",
                  tma_store=True, producer_warps=4, staging_boxes=1),
    tma_ws_config(300, 4096, 264, tile=(128, 240, 64), stages=4, tma_store=True,
                  producer_warps=4, cluster_m=2, staging_boxes=5),
    # stream-K: fewer tiles than SMs, all shared out by k-tiles (LLaMA's fc2 at M = 256)
    tma_ws_config(256, 8192, 2816, tile=(128, 144, 64), stages=6, tma_store=True,
                  producer_warps=4, staging_boxes=3, stream_k_tiles=114),
    # every edge, every tile shared, from registers
    tma_ws_config(1000, 1000, 1000, tile=(128, 128, 64), epilogue="gelu", stream_k_tiles=64),
    # the last partial round and the full one before it shared; whole tiles before them
    tma_ws_config(4096, 4096, 4096, producer_warps=4, stream_k_tiles=512 % 132 + 132),
    # fewer k-steps than SMs (5 a tile): a block has one k-step or none
    tma_ws_config(300, 2048, 264, tile=(128, 128, 64), stages=4, epilogue="swiglu",
                  tma_store=True, stream_k_tiles=8),
    tma_ws_config(300, 520, 264, tile=(128, 112, 64), epilogue="bias_gelu", dtype="bf16",
                  wgmma_in_flight=0, stream_k_tiles=3),
    # ping-pong: the warpgroups take alternate whole tiles (4 tiles a block here)
    tma_ws_config(4096, 4096, 4096, tile=(128, 176, 64), stages=4, tma_store=True,
                  producer_warps=4, pingpong=True),
    # every edge, 5 k-tiles a tile (the other warpgroup's tile is an odd ring skip), SwiGLU
    tma_ws_config(1000, 5632, 264, tile=(128, 176, 64), stages=5, epilogue="swiglu",
                  tma_store=True, producer_warps=4, pingpong=True),
    # a staging buffer of one box: each 64-row half of a tile leaves in five rounds
    tma_ws_config(1000, 1000, 1000, tile=(128, 160, 64), stages=4, epilogue="bias_gelu",
                  tma_store=True, producer_warps=4, staging_boxes=1, pingpong=True),
    # stores from registers, masked at the edges; a tile's k-steps fill the ring exactly (8 =
    # 2 x 4 stages: no skip), and none in flight
    tma_ws_config(1000, 1000, 512, tile=(128, 128, 64), stages=4, epilogue="bias_gelu",
                  dtype="bf16", producer_warps=4, wgmma_in_flight=0, pingpong=True),
    # in clusters of two (B multicast), an odd count of tile rows (a phantom row)
    tma_ws_config(1000, 5632, 264, tile=(128, 176, 64), stages=5, epilogue="swiglu",
                  tma_store=True, producer_warps=4, pingpong=True, cluster_m=2),
    # B prefetched into L2 ahead of the ring: past K's end (2 k-tiles, 4 ahead), in clusters
    tma_ws_config(256, 12288, 6144, tile=(128, 192, 64), tma_store=True, producer_warps=4,
                  l2_prefetch=4),
    tma_ws_config(300, 520, 136, tile=(128, 112, 64), cluster_m=2, l2_prefetch=4,
                  epilogue="gelu"),
    # B N-major (K x N, b_layout='row'): boxes of 64 columns, wgmma's transposed B
    tma_ws_config(256, 12288, 6144, tile=(128, 192, 64), tma_store=True, b_layout="row"),
    tma_ws_config(300, 520, 264, tile=(128, 128, 64), epilogue="bias_gelu", dtype="bf16",
                  b_layout="row"),  # every edge: the copy engine zero-fills the boxes
    tma_ws_config(1000, 5632, 264, tile=(128, 128, 64), stages=5, epilogue="swiglu",
                  tma_store=True, producer_warps=4, b_layout="row"),
    tma_ws_config(256, 8192, 2816, tile=(128, 128, 64), stages=5, tma_store=True,
                  producer_warps=4, stream_k_tiles=64, b_layout="row"),
    # its deeper twin: the output staged one 64-column box at a time, a fifth stage
    tma_ws_config(256, 12288, 6144, tile=(128, 192, 64), stages=5, tma_store=True,
                  producer_warps=4, staging_boxes=1, b_layout="row"),
]


def _id(cfg: GemmConfig) -> str:
    bm, bn, _ = cfg.tile
    return (f"{cfg.M}x{cfg.N}x{cfg.K}-{bm}x{bn}-s{cfg.stages}-{cfg.dtype}-"
            f"{cfg.epilogue or 'plain'}-f{cfg.wgmma_in_flight}-p{cfg.producer_warps}"
            f"-c{cfg.cluster_m}" + ("-tma-store" if cfg.tma_store else "")
            + (f"-staging{cfg.staging_boxes}" if cfg.staging_boxes else "")
            + (f"-streamk{cfg.stream_k_tiles}" if cfg.stream_k_tiles else "")
            + ("-pingpong" if cfg.pingpong else "")
            + (f"-l2prefetch{cfg.l2_prefetch}" if cfg.l2_prefetch else "")
            + ("-nmajor" if cfg.b_layout == "row" else ""))


_compiled: dict[GemmConfig, str] = {}


def _ptx(cfg: GemmConfig) -> str:
    if cfg not in _compiled:
        _compiled[cfg] = compile_kernel(cfg).ptx
    return _compiled[cfg]


def test_tma_ws_config_shape():
    assert MAIN.block == (288, 1, 1)  # 8 consumer warps + the producer warp
    assert MAIN.grid == (132, 1, 1) and MAIN.tiles == 512
    assert MAIN.signature == ("tmap", "tmap", "ptr")
    assert MAIN.tensor_map_boxes == {"A": (128, 64), "B": (256, 64)}
    assert MAIN.target == "sm_90a"
    small = tma_ws_config(256, 512, 128)
    assert small.grid == (4, 1, 1)  # never more blocks than tiles
    assert tma_ws_config(4096, 4096, 4096, producer_warps=4).block == (384, 1, 1)
    assert consumer_registers(tma_ws_config(4096, 4096, 4096, producer_warps=4)) == 232
    assert consumer_registers(tma_ws_config(256, 512, 128, tile=(64, 128, 64),
                                            producer_warps=4)) == 256


def test_consumer_registers_fit_the_block():
    """setmaxnreg's consumers ask for at most what the block holds beside the producer's 40:
    its threads times what ptxas allots each under one block per SM (register_cap). Four
    consumer warpgroups (640 threads, 96 registers each) asked for 112 and waited forever."""
    from tilesync.analysis.occupancy import register_cap
    from tilesync.kernels.gemm_tma import PRODUCER_REGISTERS

    assert [register_cap(t) for t in (256, 384, 544, 640)] == [256, 168, 96, 96]
    from types import SimpleNamespace

    # BM = 256 (refused by the config until it runs on a GPU): the block's shape alone
    four = SimpleNamespace(threads=640, consumer_threads=512, producer_warps=4, blocks_per_sm=1)
    assert consumer_registers(four) == 104
    # two blocks of one tile on an SM (a hooked conv's): each holds half the registers
    two = tma_ws_config(4096, 4096, 576, tile=(64, 128, 64), stages=3, producer_warps=4,
                        sync_hooks=True, tma_store=True, blocks_per_sm=2)
    assert register_cap(256, blocks=2) == 128 and consumer_registers(two) == 216
    for cfg in (four, two, tma_ws_config(4096, 4096, 4096, producer_warps=4)):
        asked = consumer_registers(cfg) * cfg.consumer_threads + PRODUCER_REGISTERS * 128
        assert asked <= register_cap(cfg.threads, blocks=cfg.blocks_per_sm) * cfg.threads


def test_earlier_configs_keep_their_names():
    """The TMA fields print only when set: every earlier config keeps its repr (its cache key
    and its PTX digest record)."""
    from tilesync.kernels.config import gemm_config

    old = gemm_config(4096, 4096, 4096, tile=(128, 256, 64), warps=(8, 1), stages=4,
                      b_layout="col", mma="wgmma")
    assert "pipeline" not in repr(old) and "sms" not in repr(old)
    assert repr(old).endswith("mma='wgmma', wgmma_in_flight=1)")
    assert "pipeline='tma_ws'" in repr(MAIN)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(mma="sync", pipeline="tma_ws"), "multiplies with wgmma"),
        (dict(tile=(384, 64, 64), stages=3), r"BM in \(64, 128, 256\)"),
        (dict(tile=(256, 128, 64)), "a tall tma_ws tile"),  # a producer warp: no setmaxnreg
        (dict(tile=(256, 192, 64), producer_warps=4), "at most 176 wide"),
        (dict(tile=(256, 128, 64), producer_warps=4, stream_k_tiles=8), "a tall tma_ws tile"),
        (dict(tile=(256, 128, 64), producer_warps=4, cluster_m=2), "a tall tma_ws tile"),
        (dict(producer_warps=2), "producer_warps 1 or 4"),
        (dict(raster_group=0), "raster_group >= 1"),
        (dict(stages=9), "shared memory"),
        (dict(tile=(64, 128, 64), pingpong=True), "pingpong takes 128-row tiles"),
        (dict(tile=(128, 192, 64), pingpong=True), "at most 176 wide"),
        (dict(pingpong=True, stream_k_tiles=8, tile=(128, 128, 64)), "without sync hooks"),
        (dict(pingpong=True, persistent=False, tile=(128, 128, 64)), "in the persistent grid"),
        (dict(l2_prefetch=9), "l2_prefetch is 0 to 8"),
        (dict(l2_prefetch=-1), "l2_prefetch is 0 to 8"),
        (dict(b_layout="row", tile=(128, 96, 64)), "BN a multiple of 64"),
        (dict(b_layout="row", cluster_m=2), "cluster_m=1"),
        (dict(b_layout="row", l2_prefetch=2), "no l2_prefetch"),
    ],
)
def test_tma_ws_config_errors(kwargs, message):
    from tilesync.kernels.config import gemm_config, tma_ws_warps

    base = dict(tile=(128, 256, 64), warps=(8, 1), stages=4, b_layout="col", mma="wgmma",
                pipeline="tma_ws")
    base.update(kwargs)
    if "tile" in kwargs and "warps" not in kwargs:
        base["warps"] = tma_ws_warps(kwargs["tile"][0])
    with pytest.raises(ValueError, match=message):
        gemm_config(4096, 4096, 4096, **base)


def test_generated_roles():
    module = gemm_module(0, 0, 0, config=MAIN)
    ops = list(module.walk())
    names = [op.name for op in ops]
    assert names.count("tile.tma_load") == 2  # A and B, issued by the producer thread
    assert names.count("tile.mbarrier_init") == 2 * MAIN.stages
    assert names.count("tile.mbarrier_wait") == 2  # producer on empty, consumers on full
    assert names.count("tile.wgmma") == 4  # the k16 steps of a 64-wide k-tile
    assert "tile.cp_async" not in names and "tile.setmaxnreg" not in names
    expects = [op for op in ops if isinstance(op, tl.MBarrierArriveOp)
               and op.expect_tx is not None]
    assert [op.expect_tx.value.data for op in expects] == [(128 + 256) * 64 * 2]
    kernel = next(op for op in ops if op.name == "gpu.func")
    assert [str(t) for t in kernel.function_type.inputs.data[:2]] == [
        "!tile.tensor_map<128x64xf16, swizzle 128>", "!tile.tensor_map<256x64xf16, swizzle 128>"]
    warpgroup = gemm_module(0, 0, 0, config=tma_ws_config(4096, 4096, 4096, producer_warps=4))
    regs = [op.registers.value.data for op in warpgroup.walk()
            if isinstance(op, tl.SetMaxNRegOp)]
    assert regs == [232, 40]  # consumers take what the producer warpgroup gives up


def test_pingpong_kernel_structure():
    """A ping-pong warpgroup multiplies a whole 128-row tile (two wgmma of 64 rows a k16
    step), frees each buffer alone (empty counts one arrival), takes the tensor cores in
    turns (two turn barriers, waited before a tile's k-loop and arrived on by one thread
    after it), and meets around its staging buffer on a barrier of its own (128 threads, the
    id by warpgroup)."""
    cfg = next(c for c in CONFIGS if c.pingpong and c.epilogue == "swiglu")
    ops = list(gemm_module(0, 0, 0, config=cfg).walk())
    counts = [op.count.value.data for op in ops if isinstance(op, tl.MBarrierInitOp)]
    assert counts == [1, 1] * cfg.stages + [1, 1]  # full, empty per stage; the turns
    assert [op.name for op in ops].count("tile.wgmma") == 8
    k_loop = next(op for op in ops if op.name == "scf.for" and any(
        isinstance(o, tl.WgmmaOp) for o in op.body.block.ops))
    walk = k_loop.parent_op()
    assert walk.name == "scf.for" and len(walk.body.block.args) == 3  # tile, ring, turn
    before = walk.body.block.ops
    waits = [op for op in before if op.name == "scf.if" and any(
        isinstance(o, tl.MBarrierWaitOp) for o in op.walk())]
    arrivals = [op for op in before if op.name == "scf.if" and any(
        isinstance(o, tl.MBarrierArriveOp) and o.expect_tx is None for o in op.walk())]
    position = list(before).index
    assert len(waits) == 1 and position(waits[0]) < position(k_loop)
    assert any(position(k_loop) < position(op) for op in arrivals)
    staging = [op for op in ops if isinstance(op, tl.NamedBarrierOp)]
    assert staging and all(op.dynamic_id is not None and op.threads.value.data == 128
                           for op in staging)
    assert consumer_registers(cfg) == 232


TALL = tma_ws_config(2048, 5632, 8192, tile=(256, 176, 64), stages=4, staging_boxes=1,
                     epilogue="swiglu", tma_store=True, producer_warps=4)


def test_tall_kernel_structure():
    """A tall tile: two consumer warpgroups of 128 rows (warps (8, 1)), each two wgmma of 64
    rows a k16 step on the same B buffer; a buffer is freed by both (empty counts two
    arrivals); the staging buffer has a slab a 64-row band (four), each warpgroup storing its
    two bands one after the other on the consumers' barrier (256 threads)."""
    assert TALL.tall and TALL.warps == (8, 1) and TALL.consumer_groups == 2
    assert TALL.tiles == 8 * 32 and TALL.threads == 384
    ops = list(gemm_module(0, 0, 0, config=TALL).walk())
    counts = [op.count.value.data for op in ops if isinstance(op, tl.MBarrierInitOp)]
    assert counts == [1, 2] * TALL.stages  # full: the producer; empty: both warpgroups
    k_loop = next(op for op in ops if op.name == "scf.for" and any(
        isinstance(o, tl.WgmmaOp) for o in op.body.block.ops))
    wgmmas = [o for o in k_loop.body.block.ops if isinstance(o, tl.WgmmaOp)]
    assert len(wgmmas) == 2 * 4 and len({o.b for o in wgmmas}) == 1
    assert len({o.a_indices[1] for o in wgmmas}) == 2  # the warpgroup's two 64-row bands
    slabs = next(op for op in ops if isinstance(op, memref.GlobalOp)
                 and op.sym_name.data == "smem_c").type
    assert slabs.get_shape()[0] == 4
    staging = [op for op in ops if isinstance(op, tl.NamedBarrierOp)]
    assert staging and all(op.threads.value.data == 256 for op in staging)
    assert consumer_registers(TALL) == 232
    boxes = TALL.out_tile_cols // TALL.staging_box[1]  # a round a box: each band's rounds
    assert len([op for op in ops if isinstance(op, tl.TmaStoreOp)]) == 2 * boxes


def test_tall_twins():
    """`tall_twin`: a 128-row tile as 256 rows, with the most of its stages that fit; none
    for tiles wider than 176, a producer warp, clusters or fewer than two 256-row tiles of M.
    The bench proposes the model's first tall tiles after the rest."""
    from tilesync.kernels.choice import propose_tma_configs, tall_twin

    staged = tma_ws_config(2048, 5632, 8192, tile=(128, 176, 64), stages=5, tma_store=True,
                           producer_warps=4, epilogue="swiglu")
    twin = tall_twin(staged)
    assert twin is not None and twin.tile == (256, 176, 64) and twin.warps == (8, 1)
    assert (twin.stages, twin.staging_boxes) == (4, 1)
    assert tall_twin(dataclasses.replace(staged, tile=(128, 192, 64), stages=4)) is None
    assert tall_twin(dataclasses.replace(staged, producer_warps=1)) is None
    assert tall_twin(tma_ws_config(256, 5632, 8192, tile=(128, 176, 64), stages=4,
                                   tma_store=True, producer_warps=4)) is None
    plain = propose_tma_configs(2048, 5632, 8192, epilogue="swiglu", limit=5)
    tall = propose_tma_configs(2048, 5632, 8192, epilogue="swiglu", limit=5, tall=2,
                               n_major=1)
    talls = [c for c in tall if c.tall]
    # 176 has no K x N twin (64-column boxes of B): the 128-wide one's
    assert [(c.tile[1], c.b_layout) for c in talls] == [(176, "col"), (128, "col"),
                                                         (128, "row")]
    assert talls[2] == dataclasses.replace(talls[1], b_layout="row")
    assert tall[:len(plain)] == plain and not any(c.tall for c in plain)


def test_pingpong_twins():
    """The bench's ping-pong twins: of 128-row tiles at most 176 wide with a producer
    warpgroup, where a block has more than one tile."""
    from tilesync.kernels.choice import pingpong_twin, propose_tma_configs

    staged = tma_ws_config(2048, 5632, 8192, tile=(128, 176, 64), stages=4, tma_store=True,
                           producer_warps=4, epilogue="swiglu")
    assert pingpong_twin(staged) == dataclasses.replace(staged, pingpong=True)
    assert pingpong_twin(dataclasses.replace(staged, tile=(128, 256, 64), stages=4)) is None
    assert pingpong_twin(dataclasses.replace(staged, producer_warps=1)) is None
    assert pingpong_twin(tma_ws_config(256, 5632, 8192, tile=(128, 176, 64), stages=4,
                                       tma_store=True, producer_warps=4)) is None  # 64 tiles
    proposals = propose_tma_configs(2048, 5632, 8192, epilogue="swiglu", limit=5, twins=3,
                                    pingpong=3)
    twins = [c for c in proposals if c.pingpong]
    assert [c.cluster_m for c in twins] == [1, 1, 1, 2]  # and the first in clusters of two
    assert twins[0].tile == (128, 176, 64)  # LLaMA's fc1 at M = 2048 as cuBLAS tiles it
    assert all(c.tile[0] == 128 and c.tile[1] <= 176 and c.producer_warps == 4
               for c in twins)
    assert not any(c.pingpong for c in propose_tma_configs(2048, 5632, 8192, limit=5))


def test_k_loops_divide_nothing():
    """Both roles' k-loops name the buffer and the phase from a ring position kept modulo
    2 stages (compares and selects), so a stage count that is not a power of two (5) costs
    no division in the loop; the position wraps at 2 stages."""
    cfg = tma_ws_config(2048, 5632, 8192, tile=(128, 176, 64), stages=5, producer_warps=4,
                        epilogue="swiglu", tma_store=True)
    loops = [op for op in gemm_module(0, 0, 0, config=cfg).walk() if op.name == "scf.for"
             and any(isinstance(o, tl.MBarrierWaitOp) for o in op.body.block.ops)]
    assert len(loops) == 2  # the producer's and the consumers'
    for loop in loops:
        names = [op.name for op in loop.body.walk()]
        assert not {"arith.divui", "arith.remui"} & set(names), names
        constants = {op.value.value.data for op in loop.body.walk()
                     if op.name == "arith.constant" and isinstance(op.value, IntegerAttr)}
        assert {cfg.stages, 2 * cfg.stages} <= constants


def test_n_major_b_loads_boxes_of_64_columns():
    """B as K x N: the producer loads a k-tile of B as BN / 64 boxes of 64 columns into their
    own atoms of the ring, and every wgmma reads B transposed from the first atom."""
    cfg = tma_ws_config(256, 12288, 6144, tile=(128, 192, 64), b_layout="row")
    assert cfg.tensor_map_boxes["B"] == (64, 64) and cfg.tensor_map_shapes["B"] == (6144, 12288)
    ops = list(gemm_module(0, 0, 0, config=cfg).walk())
    b_loads = [op for op in ops if isinstance(op, tl.TmaLoadOp)][1:]
    assert len(b_loads) == 3
    atoms = [op.dst_indices[1].owner.value.value.data for op in b_loads]  # sb[s, atom, 0, 0]
    assert atoms == [0, 1, 2]
    assert b_loads[0].dst.type.get_shape() == (4, 3, 64, 64)
    wgmmas = [op for op in ops if isinstance(op, tl.WgmmaOp)]
    assert wgmmas and all(op.trans_b is not None and op.n == 192 for op in wgmmas)
    assert not any(isinstance(op, tl.WgmmaOp) and op.trans_b is not None
                   for op in gemm_module(0, 0, 0, config=MAIN).walk())
    assert "p, 1, 1, 0, 1;" in _ptx(cfg)


def test_cluster_of_two_multicasts_b():
    cfg = tma_ws_config(4096, 4096, 4096, cluster_m=2)
    assert cfg.tensor_map_boxes["B"] == (128, 64)  # each block loads half of B's tile
    assert cfg.grid == (132, 1, 1) and cfg.cluster_tiles == 256
    assert tma_ws_config(300, 520, 264, tile=(128, 112, 64), cluster_m=2).grid == (20, 1, 1)
    ops = list(gemm_module(0, 0, 0, config=cfg).walk())
    kernel = next(op for op in ops if op.name == "gpu.func")
    assert list(kernel.attributes["tilesync.cluster_dims"].get_values()) == [2, 1, 1]
    loads = [op for op in ops if isinstance(op, tl.TmaLoadOp)]
    assert [op.multicast is None for op in loads] == [True, False]  # A own, B to both
    assert loads[1].multicast.value.data == 0b11
    remote = [op for op in ops if isinstance(op, tl.MBarrierArriveOp) and op.cta is not None]
    # a consumer frees the buffer in both blocks (in the k-loop and after it)
    assert sorted(op.cta.owner.value.value.data for op in remote) == [0, 0, 1, 1]
    counts = {op.count.value.data for op in ops if isinstance(op, tl.MBarrierInitOp)}
    assert counts == {1, 4}  # full: the producer; empty: 2 warpgroups x 2 blocks
    assert sum(isinstance(op, tl.ClusterBarrierOp) for op in ops) == 2  # after init, at exit
    with pytest.raises(ValueError, match="cluster_m 1 or 2"):
        tma_ws_config(4096, 4096, 4096, cluster_m=4)


@pytest.mark.parametrize("cluster", [1, 2])
def test_l2_prefetch_runs_ahead_of_the_ring(cluster):
    """The producer prefetches B's box (its block's half in a cluster) l2_prefetch k-tiles
    ahead, before it waits for a free buffer, and none past the tile's last k-tile."""
    cfg = tma_ws_config(256, 12288, 6144, tile=(128, 192, 64), cluster_m=cluster,
                        l2_prefetch=4)
    ops = list(gemm_module(0, 0, 0, config=cfg).walk())
    (prefetch,) = [op for op in ops if isinstance(op, tl.TmaPrefetchOp)]
    b_load = next(op for op in ops if isinstance(op, tl.TmaLoadOp)
                  and op.tensor_map is prefetch.tensor_map)
    rows = [op.coords[0] for op in (b_load, prefetch)]  # the same rows of B as the load
    if cluster == 1:
        assert rows[0] is rows[1]
    else:  # n0 + the block's half: a sum of the same two values
        assert {*rows[0].owner.operands} == {*rows[1].owner.operands}
    guard = prefetch.parent_op()
    assert isinstance(guard, scf.IfOp)
    compare = guard.cond.owner
    assert compare.predicate.value.data == arith.CMPI_COMPARISON_OPERATIONS.index("ult")
    loop = guard.parent_op()
    assert isinstance(loop, scf.ForOp) and compare.rhs is loop.ub
    ahead = compare.lhs.owner
    assert ahead.lhs is loop.body.block.args[0] and ahead.rhs.owner.value.value.data == 4
    body = list(loop.body.block.ops)
    first_wait = next(op for op in body if isinstance(op, tl.MBarrierWaitOp))
    assert body.index(guard) < body.index(first_wait)
    assert "cp.async.bulk.prefetch.tensor.2d.L2.global.tile" in _ptx(cfg)
    assert not any(isinstance(op, tl.TmaPrefetchOp)
                   for op in gemm_module(0, 0, 0, config=MAIN).walk())


@pytest.mark.parametrize("cfg", CONFIGS, ids=_id)
def test_compiles_to_valid_ptx_without_spills(cfg):
    ptx = _ptx(cfg)
    bn = cfg.tile[1]
    kind = cfg.dtype
    assert f"wgmma.mma_async.sync.aligned.m64n{bn}k16.f32.{kind}.{kind}" in ptx
    assert "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes" \
        in ptx
    assert "mbarrier.try_wait.parity.shared::cta.b64" in ptx
    assert ".param .align 64 .b8 gemm_param_0[128]" in ptx
    assert f".maxntid {cfg.threads}, 1, 1" in ptx and \
        f".minnctapersm {cfg.blocks_per_sm}" in ptx
    if cfg.cluster_m > 1:
        assert ".reqnctapercluster 2, 1, 1" in ptx and ".multicast::cluster" in ptx
    assert "ldmatrix" not in ptx and "cp.async.cg" not in ptx
    info = validate_ptx(ptx, "sm_90a")
    cap = 65536 // cfg.threads // 8 * 8
    assert info.registers["gemm"] <= min(255, cap)
    if cfg.pingpong:
        # nvJitLink compiles relocatable code, where ptxas drops setmaxnreg (C7504) and a
        # warpgroup's BN accumulators spill; the runtime loads it through the driver's
        # whole-program JIT, which keeps it (test_pingpong_spills_nothing_as_a_whole_program)
        assert needs_driver_jit(ptx) and "C7504" in info.info_log
        return
    assert info.spill_free(cfg.kernel_name), info.info_log
    assert "serializ" not in info.info_log  # ptxas keeps the wgmmas asynchronous


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not installed")
@pytest.mark.parametrize("cfg", [c for c in CONFIGS if c.pingpong], ids=_id)
def test_pingpong_spills_nothing_as_a_whole_program(cfg, tmp_path):
    """Compiled as the driver's JIT compiles it (one whole program, setmaxnreg kept), a
    ping-pong kernel keeps each warpgroup's accumulators in registers and its wgmmas
    asynchronous."""
    path = tmp_path / "gemm.ptx"
    path.write_text(_ptx(cfg))
    out = subprocess.run(["ptxas", "-arch=sm_90a", "-v", str(path), "-o",
                          str(tmp_path / "gemm.cubin")], capture_output=True, text=True,
                         check=True)
    log = out.stderr
    assert "0 bytes spill stores, 0 bytes spill loads" in log, log
    assert "C7504" not in log and "serializ" not in log, log


def test_stream_k_config():
    """Stream-K shares the last tiles by k-tiles over every SM: the grid is the SMs the shares
    were cut for even with fewer tiles; the workspace holds two BM x BN fp32 slots per block (as
    the (16, 8) blocks of their fragments) and the counters one per shared tile; the kernel
    takes them after C."""
    cfg = next(c for c in CONFIGS if c.stream_k_tiles == 114)
    assert cfg.tiles == 114 and cfg.grid == (132, 1, 1)
    assert cfg.params == ("A", "B", "C", "workspace", "counters") and cfg.split_workspace
    assert cfg.workspace_shape == (2 * 132 * (128 // 16) * (144 // 8), 16, 8)
    assert cfg.counters_shape == (114,)
    assert "stream_k_tiles=114" in repr(cfg) and "stream_k" not in repr(MAIN)
    for kwargs, message in [(dict(stream_k_tiles=513), "1 to 512 tiles"),
                            (dict(stream_k_tiles=4, cluster_m=2), "without sync hooks or "
                                                                 "clusters"),
                            (dict(stream_k_tiles=4, sync_hooks=True, persistent=False),
                             "without sync hooks")]:
        with pytest.raises(ValueError, match=message):
            tma_ws_config(4096, 4096, 4096, **kwargs)


def test_stream_k_kernel_structure():
    """Whole tiles before the shared ones; then each block's run of k-steps in segments, a
    segment short of its tile storing its 8-column fragments into its block's workspace slot
    (plain stores, no red.add), arriving on the tile's counter by its k-tile count (of the
    tile's 44) with the consumer threads only, and where it completes the tile adding the
    other segments' partials (plain relaxed loads that leave them) before it stores."""
    cfg = next(c for c in CONFIGS if c.stream_k_tiles == 114)
    ops = list(gemm_module(0, 0, 0, config=cfg).walk())
    arrivals = [op for op in ops if isinstance(op, tl.ArriveOp)]
    assert len(arrivals) == 1
    (arrive,) = arrivals
    assert arrive.expected.value.data == cfg.k_tiles == 44
    assert arrive.threads.value.data == cfg.consumer_threads == 256
    assert arrive.amount is not None
    partials = [op for op in ops if isinstance(op, tl.StoreAccOp)
                and op.dst.type.element_type == f32]
    takes = [op for op in ops if isinstance(op, tl.TakeAccOp)]
    assert len(partials) == len(takes) == 144 // 8
    assert not any(op.reduce for op in partials) and all(op.keep for op in takes)
    assert sum(isinstance(op, tl.AddAccOp) for op in ops) == 144 // 8
    # both roles walk the same segments: one k-loop each for the whole tiles and the shared
    loops = [op for op in ops if op.name == "scf.for"
             and any(isinstance(o, tl.MBarrierWaitOp) for o in op.body.block.ops)]
    assert len(loops) == 4


def test_stream_k_twins():
    from tilesync.kernels.choice import propose_tma_configs, stream_k_twins

    full = tma_ws_config(4096, 4096, 4096, tile=(128, 128, 64), stages=6)  # 1024 = 7.76 x 132
    assert [c.stream_k_tiles for c in stream_k_twins(full)] == [100, 232]
    staged = tma_ws_config(4096, 4096, 4096, tma_store=True, producer_warps=4, stages=3)
    assert {(c.tma_store, c.stages) for c in stream_k_twins(staged)} == {(True, 3)}
    few = tma_ws_config(256, 8192, 2816, tile=(128, 144, 64), stages=6)  # 114 tiles
    assert [c.stream_k_tiles for c in stream_k_twins(few)] == [114]
    exact = tma_ws_config(1024, 4224, 512, tile=(128, 256, 64))  # 8 x 16.5 -> 136 tiles
    assert stream_k_twins(dataclasses.replace(exact, sms=136)) == []
    assert stream_k_twins(tma_ws_config(4096, 4096, 4096, cluster_m=2)) == []
    # LLaMA's fc1 at M = 1024 in tall tiles (bench kernels' choice): none, not a ValueError
    tall = tma_ws_config(1024, 5632, 8192, tile=(256, 176, 64), producer_warps=4, stages=4,
                         tma_store=True, staging_boxes=1)
    assert tall.tiles % tall.sms and stream_k_twins(tall) == []
    plain = propose_tma_configs(256, 8192, 2816, limit=2)
    shared = propose_tma_configs(256, 8192, 2816, limit=2, stream_k=2)
    assert shared[:len(plain)] == plain
    assert shared[len(plain):] == [t for c in plain for t in stream_k_twins(c)]


def test_staging_rounds_ptx():
    """A 128 x 256 tile staged two boxes of 64 columns at a time: two rounds a tile, each
    waiting for the copies before to have read the buffer, then storing its two boxes in a
    bulk group of its own; the buffer is half the tile's, room for a fourth stage."""
    cfg = next(c for c in CONFIGS if c.staging_boxes == 2)
    whole = dataclasses.replace(cfg, staging_boxes=0, stages=3)
    assert cfg.staging_cols == 128 and whole.staging_cols == 256
    assert whole.shared_bytes - cfg.shared_bytes == 128 * 128 * 2 - (128 + 256) * 64 * 2
    ptx, one_round = _ptx(cfg), _ptx(whole)
    store = "cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group"
    assert ptx.count(store) == one_round.count(store) == 4  # a warpgroup's boxes a tile
    assert ptx.count("cp.async.bulk.commit_group") == 2 * one_round.count(
        "cp.async.bulk.commit_group")
    read_waits = "cp.async.bulk.wait_group.read 0"
    assert ptx.count(read_waits) == one_round.count(read_waits) + 1


def test_compile_time_of_one_config():
    compile_kernel(tma_ws_config(512, 512, 512))  # warm imports and LLVM's target
    start = time.process_time()
    compile_kernel(MAIN)
    seconds = time.process_time() - start
    print(f"\n{_id(MAIN)}: generate + lower + PTX in {seconds:.2f} s CPU")
    assert seconds < 10  # generous for shared CI machines; the report has the measured value


# --------------------------------------------------------------------------------------------
# On a GPU
# --------------------------------------------------------------------------------------------

GPU_CONFIGS = [
    *CONFIGS,
    tma_ws_config(8192, 8192, 8192, dtype="bf16"),
    tma_ws_config(1, 6144, 12288, tile=(128, 96, 64), epilogue="gelu"),  # one row of A
    tma_ws_config(17, 200, 136, tile=(64, 64, 64), stages=3, epilogue="bias"),
    tma_ws_config(2048, 8192, 2816, tile=(128, 192, 64), stages=4, raster_group=5),
    tma_ws_config(130, 264, 72, tile=(128, 64, 64), stages=2, dtype="bf16"),
    tma_ws_config(8192, 8192, 8192, dtype="bf16", cluster_m=2),
    tma_ws_config(256, 6144, 12288, tile=(128, 96, 64), stages=6, cluster_m=2, epilogue="gelu"),
    # ping-pong: LLaMA's fc1 at M = 2048 as cuBLAS tiles it; many short tiles a block
    tma_ws_config(2048, 5632, 8192, tile=(128, 176, 64), stages=5, epilogue="swiglu",
                  tma_store=True, producer_warps=4, pingpong=True),
    tma_ws_config(2048, 8192, 2816, tile=(128, 128, 64), stages=6, tma_store=True,
                  producer_warps=4, pingpong=True, dtype="bf16"),
    tma_ws_config(1000, 2048, 128, tile=(128, 128, 64), stages=6, tma_store=True,
                  producer_warps=4, pingpong=True),  # 2 k-tiles a tile, fewer than the stages
    tma_ws_config(2048, 5632, 8192, tile=(128, 176, 64), stages=5, epilogue="swiglu",
                  tma_store=True, producer_warps=4, pingpong=True, cluster_m=2),
    # tall tiles: two warpgroups of 128 rows; edges in M and N, B K x N, bf16, no TMA store
    TALL,
    tma_ws_config(1000, 1000, 520, tile=(256, 128, 64), stages=3, epilogue="gelu",
                  tma_store=True, producer_warps=4),
    tma_ws_config(4096, 4096, 4096, tile=(256, 128, 64), stages=4, staging_boxes=1,
                  tma_store=True, producer_warps=4, b_layout="row", dtype="bf16"),
    tma_ws_config(600, 700, 192, tile=(256, 160, 64), stages=3, epilogue="bias",
                  producer_warps=4),
]


def run_and_check(cfg: GemmConfig, seed: int = 0, launches: int = 2) -> float:
    """Relative error of the kernel against float64 on fresh random inputs; the output is
    poisoned before each launch, so an element never written fails."""
    from tilesync.harness.runner import GemmRunner
    from tilesync.runtime.buffers import DeviceBuffer
    from tilesync.runtime.launch import synchronize

    runner = GemmRunner(cfg)
    if cfg.pingpong or cfg.tall:  # the driver's JIT keeps setmaxnreg; nothing spilled
        assert runner.module.source == "driver-jit"
        assert runner.kernel.local_size_bytes == 0, runner.module.info_log
    error = 0.0
    for launch in range(launches):
        rng = np.random.default_rng(seed + launch)
        # A scaled by 1/sqrt(K): products of order 1, so no SwiGLU product overflows f16
        a = host_array(rng.standard_normal((cfg.M, cfg.K)) / np.sqrt(cfg.K), cfg.dtype)
        b_shape = (cfg.K, cfg.N) if cfg.b_layout == "row" else (cfg.N, cfg.K)
        b = host_array(rng.standard_normal(b_shape), cfg.dtype)
        bias = host_array(rng.standard_normal(cfg.out_cols), cfg.dtype) if cfg.has_bias \
            else None
        out = DeviceBuffer.empty((cfg.M, cfg.out_cols), a.dtype)
        out.fill_bytes(0xFF)  # NaN in f16 and bf16
        args = [DeviceBuffer.from_numpy(a), DeviceBuffer.from_numpy(b), out]
        if bias is not None:
            args.append(DeviceBuffer.from_numpy(bias))
        runner.launch(*args)
        synchronize()
        got = host_values(out.to_numpy(), cfg.dtype)
        assert np.isfinite(got).all(), \
            f"{np.count_nonzero(~np.isfinite(got))} elements not written ({_id(cfg)})"
        ref = reference_gemm(cfg, host_values(a, cfg.dtype), host_values(b, cfg.dtype),
                             None if bias is None else host_values(bias, cfg.dtype))
        error = max(error, float(np.linalg.norm(got - ref) / np.linalg.norm(ref)))
    limit = 1e-2 if cfg.dtype == "bf16" else 3e-3
    assert error < limit, f"relative error {error:.3g} for {_id(cfg)}"
    return error


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", GPU_CONFIGS, ids=_id)
def test_gpu_tma_ws_gemm(cfg):
    from tilesync.runtime.device import get_device

    if get_device().arch != "sm_90":
        pytest.skip("TMA and wgmma need an sm_90 GPU")
    run_and_check(cfg)


def _bench_shape_configs() -> list[GemmConfig]:
    """The wave model's first TMA proposal, with and without clusters, and its deeper
    staging twin, of every shape of `tilesync bench kernels` (GEMM 4096^3 and 8192^3 in fp16
    and bf16, the MLP GEMMs at M = 1 .. 2048 with their epilogues; the stream-K form is
    checked on the GPU_CONFIGS that take it, edges and uneven splits included)."""
    from tilesync.bench.kernels import workloads
    from tilesync.kernels.choice import propose_tma_configs

    configs: list[GemmConfig] = []
    for w in workloads(quick=False):
        for cfg in propose_tma_configs(w.M, w.N, w.K, w.dtype, w.epilogue, limit=1, twins=1):
            if cfg not in configs:
                configs.append(cfg)
    return configs


@pytest.mark.gpu
def test_gpu_every_bench_shape_against_float64():
    """Fresh random inputs, a poisoned output, a float64 reference (torch on the GPU where it
    is there, else numpy) for every bench shape's proposals."""
    from tilesync.harness.compile import compile_ptx_many
    from tilesync.harness.runner import GemmRunner
    from tilesync.runtime.buffers import DeviceBuffer
    from tilesync.runtime.device import get_device
    from tilesync.runtime.launch import synchronize

    if get_device().arch != "sm_90":
        pytest.skip("TMA and wgmma need an sm_90 GPU")
    try:
        import torch
    except ImportError:
        torch = None
    configs = _bench_shape_configs()
    ptx = compile_ptx_many(configs, "sm_90")
    failures = []
    for i, (cfg, text) in enumerate(zip(configs, ptx, strict=True)):
        rng = np.random.default_rng(100 + i)
        a = host_array(rng.standard_normal((cfg.M, cfg.K)) / np.sqrt(cfg.K), cfg.dtype)
        b_shape = (cfg.K, cfg.N) if cfg.b_layout == "row" else (cfg.N, cfg.K)
        b = host_array(rng.standard_normal(b_shape), cfg.dtype)
        out = DeviceBuffer.empty((cfg.M, cfg.out_cols), a.dtype)
        out.fill_bytes(0xFF)
        # every buffer and the runner stay alive until the kernel is done
        args = [DeviceBuffer.from_numpy(a), DeviceBuffer.from_numpy(b), out]
        runner = GemmRunner(cfg, ptx=text)
        print(f"{i}: {_id(cfg)}", flush=True)  # a device fault names its config
        runner.launch(*args)
        synchronize()
        got = host_values(out.to_numpy(), cfg.dtype)
        a64, b64 = host_values(a, cfg.dtype), host_values(b, cfg.dtype)
        if torch is not None:
            prod = (torch.from_numpy(a64).cuda() @ torch.from_numpy(b64).cuda().T).cpu().numpy()
        else:
            prod = a64 @ b64.T
        ref = apply_epilogue(cfg, prod)
        error = float(np.linalg.norm(got - ref) / np.linalg.norm(ref)) \
            if np.isfinite(got).all() else float("inf")
        if not error < (1e-2 if cfg.dtype == "bf16" else 3e-3):
            failures.append(f"{_id(cfg)}: {error:.3g}")
    assert not failures, failures

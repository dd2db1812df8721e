"""The issue's workloads on the tile-dialect kernels: GPT-3 / LLaMA MLP GEMMs (M = 1 .. 2048),
SwiGLU on the combined gate|up GEMM, split-K, dropout, and 3x3 conv2d by implicit GEMM.

CPU: a few configs compiled to PTX that nvJitLink accepts (instructions of each feature present,
no spills), the im2col addressing interpreted on concrete indices (the references and the
dropout mask: test_reference.py; the configurations' checks: test_config.py).
GPU (`-m gpu`): every bench candidate config of every workload shape against torch on the GPU
(fp32 accumulate of the same fp16 inputs) or numpy float64 for the small ones without torch.
Tolerance (fp16 in, fp32 accumulate, fp16 out): ||C - ref|| / ||ref|| < 1e-2; the output is
poisoned with NaN (0xFFFF) before the launch, so an element never written fails the test.
All GPU configs are compiled once, in a process pool (fixture `compiled`).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from tilesync.harness.compile import compile_kernel, compile_ptx_many
from tilesync.harness.runner import Conv2dRunner, GemmRunner, SoftmaxRunner
from tilesync.kernels.builder import BlockBuilder
from tilesync.kernels.config import (
    DROPOUT_HASH_MULTIPLIERS,
    ConvConfig,
    GemmConfig,
    conv2d_config,
    gemm_config,
    softmax_config,
)
from tilesync.kernels.conv2d import im2col_source
from tilesync.kernels.reference import (
    apply_epilogue,
    dropout_mask,
    reference_conv2d,
    reference_gemm,
    reference_softmax,
)
from tilesync.lowering.ptx import validate_ptx

TOL = 1e-2

# --------------------------------------------------------------------------------------------
# CPU: PTX of the new features
# --------------------------------------------------------------------------------------------

# One config exercising split-K, swiglu, dropout, a 16-row tile (fewer A chunks than threads).
FEATURES = gemm_config(33, 256, 512, tile=(16, 128, 32), warps=(1, 4), stages=4, split_k=4,
                         epilogue="swiglu", dropout=0.75)
CONV = conv2d_config(1, 7, 7, 64, 64, tile=(64, 64, 32), stages=4, split_k=2)
_ptx_cache: dict = {}


def _ptx(cfg) -> str:
    if cfg not in _ptx_cache:
        _ptx_cache[cfg] = compile_kernel(cfg).ptx
    return _ptx_cache[cfg]


def _no_spills(ptx: str, name: str) -> dict:
    info = validate_ptx(ptx, "sm_90")
    assert info.spill_free(name), info.info_log
    assert info.registers[name] <= 255
    assert "llvm." not in ptx
    return info.registers


def test_split_k_swiglu_dropout_ptx():
    cfg = FEATURES
    ptx = _ptx(cfg)
    _no_spills(ptx, "gemm")
    assert cfg.signature == ("ptr", "ptr", "ptr", "i32", "ptr", "ptr")
    assert cfg.params == ("A", "B", "C", "seed", "workspace", "counters")
    assert cfg.grid == (3, 2, 4) and cfg.out_cols == 128
    assert re.search(r"\.entry gemm\(\s*\.param \.u64 [^,]+,\s*\.param \.u64 [^,]+,\s*"
                     r"\.param \.u64 [^,]+,\s*\.param \.u32", ptx)
    # K slice from ctaid.z; partial sums added in L2; the last arrival takes them (and zeroes).
    assert "%ctaid.z" in ptx
    wm, wn = cfg.warps
    accs = (cfg.tile[0] // wm // 16) * (cfg.tile[1] // wn // 8)
    assert ptx.count("red.relaxed.gpu.global.add.f32") == 4 * accs
    assert ptx.count("atom.relaxed.gpu.global.exch.b32") == 4 * accs
    # Arrival: fence, atomic add on the counter, reset by the last, a barrier that ORs.
    assert ptx.count("atom.relaxed.gpu.global.add.u32") == 1
    assert ptx.count("fence.acq_rel.gpu") == 2
    assert ptx.count("st.relaxed.gpu.global.u32") == 1
    assert ptx.count("bar.red.or.pred") == 1
    # swiglu: exp of -gate (ex2.approx), one f16 pair per two accumulators' elements
    assert "ex2.approx.ftz.f32" in ptx
    assert ptx.count("cvt.rn.f16x2.f32") == 2 * accs // 2
    # dropout: the hash's multiplier constants (as signed 32-bit immediates)
    m1, m2 = DROPOUT_HASH_MULTIPLIERS
    assert str(m1) in ptx and str(m2 - (1 << 32)) in ptx
    # 16-row A tile: 64 chunks for 128 threads, a guarded zero-filling copy (M = 33 masked)
    assert "cp.async.cg.shared.global" in ptx


def test_split_in_cluster_ptx():
    """Slices of a tile as one (1, 1, split) cluster that finish it together: a slice stores
    the fragments others finish into its own shared buffer, and after a cluster barrier reads
    the fragments it finishes from every peer's (a warp's 8 fragments round robin: each
    element read once, by its finishing slice, from each of the split - 1 others); a second
    barrier keeps the peers until then. No atomics, counters or workspace."""
    clustered = [conv for conv in CONV_EXTRA if conv.split_cluster]
    assert [conv.split_k for conv in clustered] == [2, 3]
    for conv in clustered:  # splits 2 and 3: a batch-8 7x7 conv, 64x64 wgmma tiles
        cfg = conv.gemm
        ptx = _ptx(conv)
        info = validate_ptx(ptx, "sm_90a")
        assert info.spill_free(cfg.kernel_name), info.info_log
        assert cfg.params == ("A", "B", "C") and "%ctaid.z" in ptx
        assert f".reqnctapercluster 1, 1, {cfg.split_k}" in ptx
        elements = (cfg.tile[1] // 8) * 4  # a warp's 16 x BN of fragments, four each
        assert ptx.count("ld.shared::cluster.f32") == (cfg.split_k - 1) * elements
        assert ptx.count("barrier.cluster.arrive") == ptx.count("barrier.cluster.wait") == 2
        assert not re.search(r"\b(atom|red)\.", ptx)


def test_conv2d_ptx():
    ptx = _ptx(CONV)
    _no_spills(ptx, "conv2d")
    assert CONV.gemm.M == 49 and CONV.gemm.K == 576 and CONV.gemm.b_layout == "col"
    # Every A copy zero-fills (halo); the filter copies too since M edges mask... B is exact.
    copies = re.findall(r"cp\.async\.cg\.shared\.global \[[^]]+\], \[[^]]+\], 16(, %r\d+)?;",
                        ptx)
    assert copies and any(copies)
    mma = "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
    assert ptx.count(mma) == (64 // 2 // 16) * (64 // 2 // 8) * 2


TMA_CONV = conv2d_config(3, 9, 11, 128, 64, tile=(128, 64, 64), warps=(8, 1), stages=5,
                         mma="wgmma", pipeline="tma_ws", epilogue="bias")


def test_tma_conv_copies_a_by_im2col():
    """The warp-specialized conv: A's map is the input's im2col map, and the producer's one A
    copy a k-tile is a 4-d im2col load (channel, w, h, n) at the tap's offsets (s, r); B and
    the multiply are the TMA GEMM's."""
    gemm = TMA_CONV.gemm
    assert gemm.warp_specialized and gemm.im2col == (3, 9, 11, 128)
    assert gemm.tensor_map_shapes == {"A": (3, 9, 11, 128), "B": (64, 9 * 128)}
    assert gemm.tensor_map_boxes["A"] == (128, 64)
    assert gemm.signature == ("tmap", "tmap", "ptr", "ptr")
    ptx = _ptx(TMA_CONV)
    loads = re.findall(r"cp\.async\.bulk\.tensor\.(\dd)\.shared::cluster\.global\.(\w+)\."
                       r"mbarrier::complete_tx::bytes \[[^]]+\], \[[^]]+, \{([^}]+)\}\], "
                       r"\[[^]]+\](, \{[^}]+\})?;", ptx)
    assert sorted((dims, mode, bool(offsets)) for dims, mode, _, offsets in loads) == \
        [("2d", "tile", False), ("4d", "im2col", True)]
    assert "cp.async.cg" not in ptx and "wgmma.mma_async" in ptx
    info = validate_ptx(ptx, "sm_90a")
    assert info.spill_free("conv2d"), info.info_log


def test_tma_conv_refuses_what_im2col_cannot_copy():
    with pytest.raises(ValueError, match="multiple of 64"):
        conv2d_config(1, 8, 8, 96, 64, tile=(64, 64, 64), warps=(4, 1), mma="wgmma",
                      pipeline="tma_ws")
    with pytest.raises(ValueError, match="no split-K"):
        conv2d_config(1, 8, 8, 64, 64, tile=(64, 64, 64), warps=(4, 1), mma="wgmma",
                      pipeline="tma_ws", split_k=2)
    with pytest.raises(ValueError, match="tma_store is the tma_ws"):
        conv2d_config(1, 8, 8, 64, 64, tile=(64, 64, 64), warps=(4, 1), mma="wgmma",
                      tma_store=True)
    with pytest.raises(ValueError, match="implicit GEMM of M = 64"):
        gemm_config(65, 64, 576, tile=(64, 64, 64), warps=(4, 1), b_layout="col",
                    mma="wgmma", pipeline="tma_ws", im2col=(1, 8, 8, 64))


def test_conv_candidates_take_tma_tiles_where_im2col_can_copy():
    from tilesync.kernels.choice import CONV_TMA_NARROW, CONV_TMA_PROPOSALS, conv_candidates

    def tma(cs):
        return [c for c in cs if c.pipeline == "tma_ws"]

    found = tma(conv_candidates(8, 14, 14, 256, 256))
    assert len(found) == CONV_TMA_PROPOSALS + len(CONV_TMA_NARROW)
    assert {c.tile[1] for c in found if c.tile[0] == 64} == set(CONV_TMA_NARROW)
    assert all(c.gemm.im2col == (8, 14, 14, 256) and c.split_k == 1 for c in found)
    assert not tma(conv_candidates(8, 14, 14, 256, 256, sync_hooks=True))
    assert not tma(conv_candidates(2, 5, 6, 16, 24))  # C = 16: no 64-channel k-tile


def test_softmax_ptx():
    cfg = softmax_config(1000, 1024, dropout=0.9)
    ptx = _ptx(cfg)
    _no_spills(ptx, "softmax")
    assert cfg.grid == (250, 1, 1) and cfg.signature == ("ptr", "ptr", "i32")
    per_lane = 1024 // 32
    assert ptx.count("shfl.sync.bfly.b32") == 10  # 5 butterfly steps for max, 5 for the sum
    assert ptx.count("ex2.approx.ftz.f32") == per_lane
    assert len(re.findall(r"ld\.global(\.nc)?\.b16", ptx)) == per_lane
    assert len(re.findall(r"st\.global\.b16", ptx)) == per_lane
    assert str(DROPOUT_HASH_MULTIPLIERS[0]) in ptx  # dropout hash


def _interpret_im2col(cfg: ConvConfig, points):
    """Evaluate the generator's im2col ops (index arithmetic) on concrete (m, k)."""
    import operator

    from xdsl.dialects import arith
    from xdsl.dialects.builtin import IndexType
    from xdsl.ir import Block

    index = IndexType()
    block = Block(arg_types=[index, index, index])  # m, k, the tile's m0 (not read)
    body = BlockBuilder(block)
    indices, masked = im2col_source(cfg)(body, *block.args)
    binary = {arith.AddiOp: operator.add, arith.SubiOp: operator.sub,
              arith.MuliOp: operator.mul, arith.DivUIOp: operator.floordiv,
              arith.RemUIOp: operator.mod}
    results = []
    for m, k in points:
        env = {block.args[0]: m, block.args[1]: k}
        for op in block.ops:
            if isinstance(op, arith.ConstantOp):
                env[op.result] = op.value.value.data
            else:
                assert type(op) in binary, op.name  # nothing else in the address arithmetic
                lhs, rhs = env[op.operands[0]], env[op.operands[1]]
                if isinstance(op, arith.DivUIOp | arith.RemUIOp):
                    assert lhs >= 0 and rhs > 0  # unsigned ops only ever see m, k >= 0
                env[op.results[0]] = binary[type(op)](lhs, rhs)
        results.append([env[i] for i in indices])
    return masked, results


def test_im2col_addresses():
    cfg = conv2d_config(2, 5, 6, 16, 8, tile=(64, 64, 32), stages=2)
    rng = np.random.default_rng(0)
    points = [(int(m), int(k)) for m, k in zip(rng.integers(0, 2 * 5 * 6 + 40, 200),
                                                rng.integers(0, 9 * 16, 200), strict=True)]
    points += [(0, 0), (5, 8 * 16)]  # top-left halo; last column's right neighbour
    masked, results = _interpret_im2col(cfg, points)
    assert masked
    for (m, k), got in zip(points, results, strict=True):
        n, p, q = m // 30, (m % 30) // 6, m % 6
        r, s, c = k // 48, (k % 48) // 16, k % 16
        assert tuple(got) == (n, p + r - 1, q + s - 1, c)
    # The masked copy reads nothing where any index is outside (unsigned compare): the halo.
    (_, got), = zip(points[-2:-1], results[-2:-1], strict=True)
    assert tuple(got) == (0, -1, -1, 0)


def test_bench_candidates_are_valid_and_quick_is_small():
    from tilesync.bench import kernels as bk

    quick = {c for w in bk.workloads(True) for c in bk.tuning_candidates(w, True)}
    full = {c for w in bk.workloads(False) for c in bk.tuning_candidates(w, False)}
    # the full bench compiles every candidate once (15 s for 329 on an H100 host's 16 CPUs;
    # split-K in a cluster added 20, the deeper staging twins 50, the stream-K twins of the
    # full bench 90: 504 in 25 s on an H200 host; its ping-pongs 90 more: 594 in 30 s; the
    # 48-wide weight-streaming tiles at M <= 16, 16 more; the first proposals reading B K x N
    # and their deeper twins, 81 more; one stream-K proposal instead of two, whose wide twins
    # keep the TMA store, and the tall 256-row tiles: 706)
    assert quick <= full and len(quick) <= 80 and len(full) <= 720
    n_major = [c for c in full if c.warp_specialized and c.b_layout == "row"]
    assert {(c.N, c.K) for c in n_major if c.M == 256} >= {(12288, 6144), (8192, 2816)}
    for w in bk.workloads(False):
        configs = bk.tuning_candidates(w, False)
        assert any(c.warp_specialized for c in configs), w
        assert bool(bk.legacy_candidates(w, False)) == (w.dtype == "f16" and w.M != 8192)
        for cfg in configs:
            assert (cfg.M, cfg.N, cfg.K, cfg.epilogue, cfg.dtype) == \
                (w.M, w.N, w.K, w.epilogue, w.dtype)
    assert len(bk.conv_workloads(False)) == 8 and len(bk.conv_workloads(True)) == 4


# --------------------------------------------------------------------------------------------
# GPU
# --------------------------------------------------------------------------------------------

MLP_BATCHES = (1, 16, 64, 256, 512, 1024, 2048)


def _gpu_gemm_configs() -> list:
    from tilesync.bench import kernels as bk

    configs = []
    for w in bk.workloads(False):
        if not w.name.startswith("gemm"):  # test_gemm.py and test_gemm_tma.py check those
            configs += bk.legacy_candidates(w, False)[:2]  # the cp.async / wgmma ones
    return configs


EXTRA = [
    gemm_config(512, 1024, 256, dropout=0.9),
    gemm_config(100, 512, 256, tile=(64, 128, 32), warps=(1, 4), stages=4, split_k=4,
                  epilogue="swiglu", dropout=0.8),
    gemm_config(300, 520, 512, split_k=4, epilogue="bias_gelu"),
    # split-K slices reducing in a cluster: mma.sync and wgmma tiles, M and N edges masked
    gemm_config(300, 520, 512, split_k=4, epilogue="bias_gelu", split_cluster=True),
    gemm_config(100, 512, 256, tile=(64, 128, 32), warps=(1, 4), stages=4, split_k=4,
                epilogue="swiglu", split_cluster=True),
    gemm_config(200, 192, 1024, tile=(64, 64, 64), warps=(4, 1), stages=4, b_layout="col",
                mma="wgmma", split_k=8, epilogue="relu", split_cluster=True),
]

STREAMING_48 = [
    # the bench's 48-wide weight-streaming tiles (B as N x K) on its shapes at M = 16, and one
    # row of a SwiGLU (rows masked) on a small one
    gemm_config(16, 6144, 12288, tile=(16, 48, 128), warps=(1, 3), stages=8, b_layout="col",
                epilogue="gelu"),
    gemm_config(16, 5632, 8192, tile=(16, 48, 128), warps=(1, 3), stages=8, b_layout="col",
                epilogue="swiglu"),
    gemm_config(16, 12288, 6144, tile=(64, 48, 64), warps=(4, 1), stages=8, b_layout="col",
                mma="wgmma"),
    gemm_config(16, 5632, 8192, tile=(64, 48, 64), warps=(4, 1), stages=8, b_layout="col",
                mma="wgmma", epilogue="swiglu"),
    gemm_config(1, 480, 512, tile=(16, 48, 128), warps=(1, 3), stages=8, b_layout="col",
                epilogue="swiglu"),
]


@pytest.fixture(scope="module")
def compiled():
    """PTX of every GPU config (GEMMs and convs), compiled in parallel once."""
    from tilesync.bench import kernels as bk
    from tilesync.runtime.device import get_device

    configs = _gpu_gemm_configs() + EXTRA + STREAMING_48 + bk.conv_workloads(False) + \
        CONV_EXTRA + SOFTMAX
    ptx = compile_ptx_many(configs, get_device().arch)
    return dict(zip(configs, ptx, strict=True))


def _torch():
    try:
        import torch

        return torch if torch.cuda.is_available() else None
    except Exception:
        return None


def _rel_error(got, ref) -> float:
    return float(np.linalg.norm(got - ref) / np.linalg.norm(ref))


class _Weights:
    """One weight matrix per (N, K) reused across batches; inputs per M."""

    def __init__(self):
        self.cache: dict = {}

    def get(self, key, make):
        if key not in self.cache:
            self.cache[key] = make()
        return self.cache[key]


_weights = _Weights()


def _check_gemm(cfg: GemmConfig, ptx: str, seed: int | None = None, runs: int = 1):
    """Launch `runs` times into a NaN-poisoned C; compare with torch (GPU) or numpy."""
    from tilesync.runtime.buffers import DeviceBuffer
    from tilesync.runtime.launch import synchronize

    torch = _torch()
    if torch is None and cfg.M * cfg.N * cfg.K > 256 * 12288 * 6144:
        pytest.skip("no torch: numpy float64 only for M <= 256")
    runner = GemmRunner(cfg, ptx=ptx)
    rng = np.random.default_rng(cfg.M)
    scale = 1.0 / np.sqrt(cfg.K)
    bias = None
    if torch is not None:
        gen = torch.Generator(device="cuda").manual_seed(cfg.N * 7 + cfg.K)
        b = _weights.get(("t", cfg.K, cfg.N), lambda: (torch.randn(
            (cfg.K, cfg.N), generator=gen, device="cuda") * scale).half())
        b_arg = b if cfg.b_layout == "row" else _weights.get(
            ("tc", cfg.K, cfg.N), lambda: b.t().contiguous())  # N x K for wgmma configs
        a = torch.randn((cfg.M, cfg.K), generator=gen, device="cuda").half()
        if cfg.has_bias:
            bias = torch.randn(cfg.out_cols, generator=gen, device="cuda").half()
        c = torch.empty((cfg.M, cfg.out_cols), device="cuda", dtype=torch.float16)
        ref = apply_epilogue(cfg, torch.matmul(a.double(), b.double()),
                               None if bias is None else bias.double(), seed)
        first = None
        for run in range(runs):  # errors on the GPU: no 200 MB copies for the big shapes
            c.fill_(float("nan"))
            runner.launch(a, b_arg, c, bias, seed=seed)
            synchronize()
            got = c.double()
            bad = int((~torch.isfinite(got)).sum())
            assert bad == 0, f"{bad} elements not written (run {run})"
            error = float(torch.linalg.norm(got - ref) / torch.linalg.norm(ref))
            assert error < TOL, f"relative error {error:.3g} for {cfg} (run {run})"
            if first is None:
                first = got
            else:
                _same_again(cfg, got.cpu().numpy(), first.cpu().numpy())
        if first.numel() > 1 << 22:  # big: nothing to inspect on the host
            return None, None
        return first.cpu().numpy(), ref.cpu().numpy()
    else:
        b = _weights.get(("n", cfg.K, cfg.N), lambda: (rng.standard_normal(
            (cfg.K, cfg.N), np.float32) * scale).astype(np.float16))
        a = rng.standard_normal((cfg.M, cfg.K), np.float32).astype(np.float16)
        if cfg.has_bias:
            bias = rng.standard_normal(cfg.out_cols, np.float32).astype(np.float16)
        c = DeviceBuffer.empty((cfg.M, cfg.out_cols), np.float16)
        b_arg = b if cfg.b_layout == "row" else np.ascontiguousarray(b.T)
        da, db = DeviceBuffer.from_numpy(a), DeviceBuffer.from_numpy(b_arg)
        dbias = DeviceBuffer.from_numpy(bias) if bias is not None else None
        outs = []
        for _ in range(runs):
            c.fill_bytes(0xFF)
            runner.launch(da, db, c, dbias, seed=seed)
            synchronize()
            outs.append(c.to_numpy().astype(np.float64))
        ref = reference_gemm(cfg, a.astype(np.float64), b_arg.astype(np.float64),
                          None if bias is None else bias.astype(np.float64), seed)
    for got in outs:
        assert np.isfinite(got).all(), f"{np.count_nonzero(~np.isfinite(got))} not written"
        error = _rel_error(got, ref)
        assert error < TOL, f"relative error {error:.3g} for {cfg}"
    for got in outs[1:]:
        _same_again(cfg, got, outs[0])
    return outs[0], ref


def _same_again(cfg: GemmConfig, got, first) -> None:
    """A second launch gives the same C: exactly without split-K; with it, the fp32 atomics
    add in another order (a few fp16 roundings may differ), but a workspace or counter left
    dirty by the first launch would double the result or skip the epilogue."""
    if cfg.split_k == 1:
        assert np.array_equal(got, first)
    else:
        assert _rel_error(got, first) < 1e-3


def _label(cfg) -> str:
    if isinstance(cfg, ConvConfig):
        return (f"conv-n{cfg.N}-{cfg.H}x{cfg.W}-c{cfg.C}-k{cfg.K}-splitk{cfg.split_k}"
                + ("-cluster" if cfg.split_cluster else ""))
    bm, bn, bk = cfg.tile
    return (f"{cfg.M}x{cfg.N}x{cfg.K}-{cfg.epilogue or 'plain'}-{bm}x{bn}x{bk}-s{cfg.stages}"
            f"-splitk{cfg.split_k}" + (f"-drop{cfg.dropout}" if cfg.dropout else "")
            + ("-wgmma" if cfg.mma == "wgmma" else "")
            + ("-cluster" if cfg.split_cluster else ""))


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", _gpu_gemm_configs(), ids=_label)
def test_gpu_mlp_gemm(cfg, compiled):
    _check_gemm(cfg, compiled[cfg], runs=2 if cfg.split_k > 1 else 1)


def test_gpu_workload_shapes_cover_the_issue():
    shapes = {(c.M, c.N, c.K, c.epilogue) for c in _gpu_gemm_configs()}
    for m in MLP_BATCHES:
        for n, k, epilogue in ((6144, 12288, "gelu"), (12288, 6144, None),
                               (5632, 8192, "swiglu"), (8192, 2816, None)):
            assert (m, n, k, epilogue) in shapes


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", EXTRA[1:], ids=_label)
def test_gpu_split_k_epilogues(cfg, compiled):
    _check_gemm(cfg, compiled[cfg], seed=77 if cfg.dropout else None, runs=3)


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", STREAMING_48, ids=_label)
def test_gpu_weight_streaming_48_wide(cfg, compiled):
    _check_gemm(cfg, compiled[cfg], runs=2)


def test_the_48_wide_tiles_are_the_benchs():
    from tilesync.bench import kernels as bk

    full = {c for w in bk.workloads(False) for c in bk.tuning_candidates(w, False)}
    assert set(STREAMING_48[:-1]) <= full


@pytest.mark.gpu
def test_gpu_dropout_mask_is_the_hash(compiled):
    cfg = EXTRA[0]
    ptx = compiled[cfg]
    got, ref = _check_gemm(cfg, ptx, seed=2024, runs=2)  # same seed twice: same output
    mask = dropout_mask(2024, cfg.M, cfg.N, cfg.dropout)
    assert (got[~mask] == 0).all()  # dropped: exactly zero
    assert (got[mask & (np.abs(ref) > 1e-3)] != 0).all()  # kept (and not tiny): nonzero
    assert abs((got != 0).mean() - cfg.dropout) < 0.01 * cfg.dropout
    other, _ = _check_gemm(cfg, ptx, seed=2025)
    assert ((got != 0) != (other != 0)).mean() > 0.1  # another seed, another mask


# -- conv2d ----------------------------------------------------------------------------------

CONV_EXTRA = [conv2d_config(2, 5, 6, 16, 24, tile=(64, 64, 32), stages=2),
              conv2d_config(1, 9, 9, 32, 64, tile=(64, 64, 32), stages=4,
                               epilogue="bias"),
              # ResNet's batch-8 7x7 layer: 392 rows (a masked tile row), split in clusters
              *(conv2d_config(8, 7, 7, 512, 512, tile=(64, 64, 64), warps=(4, 1), stages=6,
                              split_k=split, mma="wgmma", split_cluster=True)
                for split in (2, 3)),
              # im2col TMA: a 5 x 6 image (every pixel a halo's neighbour, 60 of 64 rows),
              # tiles across images (99 pixels each) with a tail of 41 and a bias, and a
              # ResNet layer with the TMA-store epilogue
              conv2d_config(2, 5, 6, 64, 80, tile=(64, 80, 64), warps=(4, 1), stages=4,
                            mma="wgmma", pipeline="tma_ws"),
              TMA_CONV,
              conv2d_config(8, 14, 14, 256, 256, tile=(128, 128, 64), warps=(8, 1), stages=5,
                            mma="wgmma", pipeline="tma_ws", tma_store=True)]


def _check_conv(cfg: ConvConfig, ptx: str):
    from tilesync.runtime.buffers import DeviceBuffer
    from tilesync.runtime.launch import synchronize

    runner = Conv2dRunner(cfg, ptx=ptx)
    rng = np.random.default_rng(cfg.C + cfg.H)
    x = rng.standard_normal(cfg.input_shape, np.float32).astype(np.float16)
    w = (rng.standard_normal(cfg.filter_shape, np.float32) / np.sqrt(9 * cfg.C)) \
        .astype(np.float16)
    bias = rng.standard_normal(cfg.K, np.float32).astype(np.float16) \
        if cfg.epilogue == "bias" else None
    y = DeviceBuffer.empty(cfg.output_shape, np.float16)
    y.fill_bytes(0xFF)
    runner.launch(DeviceBuffer.from_numpy(x), DeviceBuffer.from_numpy(w), y,
                  None if bias is None else DeviceBuffer.from_numpy(bias))
    synchronize()
    got = y.to_numpy().astype(np.float64)
    torch = _torch()
    if torch is not None:
        F = torch.nn.functional
        xt = torch.from_numpy(x).cuda().double().permute(0, 3, 1, 2)
        wt = torch.from_numpy(w).cuda().double().permute(0, 3, 1, 2)
        ref = F.conv2d(xt, wt, padding=1).permute(0, 2, 3, 1).cpu().numpy()
        if bias is not None:
            ref = ref + bias.astype(np.float64)
    else:
        ref = reference_conv2d(x, w, bias, cfg.epilogue)
    assert np.isfinite(got).all(), f"{np.count_nonzero(~np.isfinite(got))} not written"
    error = _rel_error(got, ref)
    assert error < TOL, f"relative error {error:.3g} for {cfg}"


def _conv_configs():
    from tilesync.bench import kernels as bk

    return bk.conv_workloads(False) + CONV_EXTRA


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", _conv_configs(), ids=_label)
def test_gpu_conv2d(cfg, compiled):
    _check_conv(cfg, compiled[cfg])


# -- softmax ---------------------------------------------------------------------------------

SOFTMAX = [softmax_config(1000, c, dropout=d) for c in (512, 1024, 2048) for d in (None, 0.9)] \
    + [softmax_config(1000, 1024, scale=0.125),  # attention's 1/sqrt(64)
       softmax_config(1024, 512, scale=0.125, causal=True)]  # two sequences' causal scores


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", SOFTMAX, ids=lambda c: f"{c.rows}x{c.cols}-drop{c.dropout}"
                         + (f"-scale{c.scale}" if c.scale != 1 else "")
                         + ("-causal" if c.causal else ""))
def test_gpu_softmax(cfg, compiled):
    from tilesync.runtime.buffers import DeviceBuffer
    from tilesync.runtime.launch import synchronize

    runner = SoftmaxRunner(cfg, ptx=compiled[cfg])
    rng = np.random.default_rng(cfg.cols)
    x = (3 * rng.standard_normal((cfg.rows, cfg.cols), np.float32)).astype(np.float16)
    y = DeviceBuffer.empty((cfg.rows, cfg.cols), np.float16)
    y.fill_bytes(0xFF)
    runner.launch(DeviceBuffer.from_numpy(x), y, seed=99)
    synchronize()
    got = y.to_numpy().astype(np.float64)
    ref = reference_softmax(cfg, x.astype(np.float64), seed=99)
    assert np.isfinite(got).all()
    assert _rel_error(got, ref) < TOL
    if cfg.causal:  # row r weighs keys 0 .. r mod cols only: exact zeros past them
        query = np.arange(cfg.rows)[:, None] % cfg.cols
        assert (got[np.arange(cfg.cols)[None, :] > query] == 0).all()
    if cfg.dropout is None:
        np.testing.assert_allclose(got.sum(axis=1), 1.0, atol=1e-2)
    else:
        mask = dropout_mask(99, cfg.rows, cfg.cols, cfg.dropout)
        assert (got[~mask] == 0).all()
        assert (got[mask & (ref > 1e-4)] != 0).all()


def test_a_copy_of_one_gemms_bytes_rotates_past_l2(monkeypatch):
    """copy_bandwidth with `l2`: buffer pairs taken in turn, enough that each repetition
    misses L2 (_copies_for); without it the 1 GiB copy's one pair. GB/s counts both sides."""
    from tilesync.bench import kernels as bk
    from tilesync.runtime import timing

    class Buffer:
        def __init__(self):
            self.sources = []

        def copy_(self, src):
            self.sources.append(src)

    class FakeTorch:
        uint8 = "uint8"

        made: list = []

        @staticmethod
        def empty(n, dtype, device):
            FakeTorch.made.append(Buffer())
            return FakeTorch.made[-1]

    def fake_time(fn, stream=None, warmup=10, reps=50, hold_ns_per_rep=0, hold=None):
        for _ in range(warmup + reps):
            fn()
        return timing.Timing.from_samples([0.01] * reps, warmup)

    monkeypatch.setattr(timing, "time_region", fake_time)
    nbytes, l2 = 10 << 20, 60 << 20
    pairs = bk._copies_for(2 * nbytes, l2)
    sized = bk.copy_bandwidth(FakeTorch, 2, 16, nbytes, l2)
    assert pairs > 1 and sized["rotating_copies"] == pairs == len(FakeTorch.made) // 2
    sources, destinations = FakeTorch.made[0::2], FakeTorch.made[1::2]
    for src, dst in zip(sources, destinations, strict=True):  # every pair, in turn
        assert dst.sources and set(map(id, dst.sources)) == {id(src)}
    assert sized["gbps"] == pytest.approx(2 * nbytes / 1e-5 / 1e9)
    assert bk.copy_bandwidth(FakeTorch, 2, 16, 1 << 30)["rotating_copies"] == 1


def test_kernels_table_formats_a_result():
    """The table of a synthetic result (the shapes kernel_benchmarks produces), with and
    without torch numbers, a failed config and a failed shape."""
    from tilesync.bench import kernels as bk

    timing = {"median_ms": 0.1, "p10_ms": 0.09, "p90_ms": 0.12, "reps": 30, "warmup": 5}
    w = bk.Workload("gpt3_fc1", 16, 6144, 12288, "gelu")
    ours = {"config": "16x128x32 w1x4 s4 splitk8", "registers": 90, **timing,
            **bk._rates(w, 0.1, 4000.0, 2000.0)}
    assert 0 < ours["fraction_of_copy_bw"] < 1 and ours["gbps"] == pytest.approx(
        w.bytes / 1e-4 / 1e9)
    assert ours["fraction_of_sized_copy_bw"] == pytest.approx(2 * ours["fraction_of_copy_bw"])
    lib = {"gemm": timing, "tflops": 1.0, "gbps": 1.0}
    result = {
        "reps": 30, "warmup": 5, "library": "torch 2.x", "library_note": "cuBLAS",
        "copy": {"gbps": 4000.0, "how": "torch", "bytes": 1 << 30},
        "configs_compiled": 3, "compile_seconds": 1.0, "seconds": 10.0,
        "gemm": [
            {**w.__dict__, "ours": ours, "configs": [ours, {"config": "x", "error": "boom"}],
             "library": lib, "ratio": 1.0},
            {"name": "gemm4096", "M": 4096, "N": 4096, "K": 4096,
             "configs": [{"error": "RuntimeError: no"}]},
        ],
        "conv": [{"N": 8, "H": 56, "W": 56, "C": 64, "K": 64, "config": "c", **timing,
                  "tflops": 5.0, "library": {**timing, "tflops": 6.0}, "ratio": 0.8},
                 {"N": 1, "H": 7, "W": 7, "C": 512, "K": 512, "config": "c", "error": "e"}],
        "softmax": [{"rows": 16384, "cols": 1024, "dropout": 0.9, **timing, "gbps": 600.0,
                     "fraction_of_copy_bw": 0.15}],
    }
    result["gemm"][0].update(flops=w.flops, bytes=w.bytes)
    bk.add_floors(result)  # the floor: the library's 1 TFLOP/s or the bytes at 4000 GB/s
    assert result["rates"] == {"peak_tflops": 1.0, "copy_gbps": 4000.0}
    floor = result["gemm"][0]["floor_ms"]
    assert floor == pytest.approx(max(w.flops / 1e12, w.bytes / 4e12) * 1e3)
    table = bk.kernels_table(result)
    assert "gpt3_fc1" in table and "also x: boom" in table and "FAILED: RuntimeError" in table
    assert "conv3x3" in table and "softmax" in table and "1.00" in table
    assert "floor = the longer of the flops at 1 TFLOP/s" in table
    assert f"{floor:>8.4f} {0.1 / floor:>6.2f}" in table
    copy_cells = f"{100 * ours['fraction_of_copy_bw']:>5.0f}% " \
        f"{100 * ours['fraction_of_sized_copy_bw']:>5.0f}%"
    assert copy_cells in table and "%size = ours over a copy of the same bytes" in table
    del result["gemm"][0]["library"], result["gemm"][0]["ratio"], result["rates"]
    assert "gpt3_fc1" in bk.kernels_table(result) and bk.run_rates(result) is None


def test_kernel_benchmarks_runs_end_to_end_on_a_fake_device(monkeypatch, tmp_path):
    """kernel_benchmarks' control flow and result keys, with the device, compiler, runners and
    timer replaced by fakes (no torch: our numbers only, and the result says why)."""
    import types

    from tilesync.bench import kernels as bk
    from tilesync.harness import compile as kernel_compile
    from tilesync.harness import runner
    from tilesync.harness.timing import hold_stream
    from tilesync.runtime import buffers, device, timing

    fake_device = types.SimpleNamespace(arch="sm_90", l2_cache_bytes=60 << 20)
    monkeypatch.setattr(device, "get_device", lambda: fake_device)
    monkeypatch.setattr(kernel_compile, "compile_ptx_many",
                        lambda cfgs, arch: ["ptx"] * len(cfgs))

    class FakeRunner:
        def __init__(self, cfg, ptx=None):
            assert ptx == "ptx"
            self.cfg = cfg
            self.kernel = types.SimpleNamespace(num_regs=128)

        def launch(self, *args, **kwargs):
            pass

    monkeypatch.setattr(runner, "GemmRunner", FakeRunner)
    monkeypatch.setattr(runner, "Conv2dRunner", FakeRunner)
    monkeypatch.setattr(runner, "SoftmaxRunner", FakeRunner)

    class FakeBuffer:
        def __init__(self, shape, dtype=None):
            self.shape = shape

        @classmethod
        def from_numpy(cls, array):
            return cls(array.shape)

        empty = classmethod(lambda cls, shape, dtype=None: cls(shape))

    monkeypatch.setattr(buffers, "DeviceBuffer", FakeBuffer)
    calls = []

    def fake_time(fn, stream=None, warmup=10, reps=50, hold_ns_per_rep=0, hold=None):
        assert hold_ns_per_rep == bk.HOLD_NS_PER_REP  # no host launch gaps in the samples
        assert hold is hold_stream
        for _ in range(2):
            fn()
        calls.append(1)
        return timing.Timing.from_samples([0.1, 0.11, 0.09], warmup)

    monkeypatch.setattr(timing, "time_region", fake_time)
    # the fake kernels write nothing: the autotuner's check of each candidate's output passes
    from tilesync.harness import autotune

    monkeypatch.setattr(autotune._Output, "error", lambda self, run, reference: run() or 0.0)
    launched = []

    def fake_together(forms, warmup, reps):  # each row's forms (here each fn itself) in turns
        assert set(forms) == {"ours"}  # no library forms without torch
        for fn in forms.values():
            fn(0)
            launched.append(1)
        return {name: timing.Timing.from_samples([0.1, 0.11, 0.09], warmup) for name in forms}

    monkeypatch.setattr(bk, "_rotating_form", lambda fn, copies, checked=None: fn)
    monkeypatch.setattr(bk, "_time_together", fake_together)
    monkeypatch.setattr(bk, "copy_bandwidth", lambda *a, **k: {
        "bytes": 1 << 30, "how": "fake", "gbps": 4000.0, "median_ms": 0.5})
    monkeypatch.setattr(bk._Torch, "__init__", lambda self: setattr(self, "torch", None)
                        or setattr(self, "why", "torch is not importable (test)"))
    monkeypatch.setattr(bk._Operands, "__init__", _fake_operands)

    result = bk.kernel_benchmarks(quick=True, warmup=1, reps=3, tuning_cache=tmp_path)
    assert result["library"] is None and "not importable" in result["library_note"]
    assert list((tmp_path / "autotune").iterdir())  # the fake choices stay out of the repo
    names = {(r["name"], r["M"]) for r in result["gemm"]}
    assert ("gemm4096", 4096) in names and ("llama_fc1", 16) in names
    assert len(launched) == len(result["gemm"]) + len(result["conv"]) + len(result["softmax"])
    for r in result["gemm"]:
        assert r["ours"] is not None, r
        assert r["choice"]["config"] == r["ours"]["config"] and not r["choice"]["cached"]
        assert "ratio" not in r  # no library numbers without torch
        assert ("gbps" in r["ours"]) == (r["M"] <= bk.STREAMING_M)
    assert all("error" not in c for c in result["conv"]) and len(result["conv"]) == 4
    assert all("error" not in s for s in result["softmax"])
    table = bk.kernels_table(result)
    assert "llama_fc2" in table and "conv3x3" in table and "softmax" in table


def _fake_operands(self, w, copies, torch_mod, seed=0):
    self.copies, self.torch = copies, None
    self.a = [None] * copies
    self.b = [None] * copies
    self.c = self.full = None


def test_the_library_record_takes_cublas_faster_layout():
    """_library_record: `gemm` is the faster of cuBLAS reading the bytes of B as K x N and as
    N x K (timed in turns with ours), each layout's timing and the eager epilogue beside it."""
    from tilesync.bench import kernels as bk
    from tilesync.runtime.timing import Timing

    w = next(w for w in bk.workloads(True) if w.epilogue == "swiglu")
    timed = {"gemm_nn": Timing.from_samples([0.20, 0.21, 0.22], 1),
             "gemm_nt": Timing.from_samples([0.18, 0.19, 0.30], 1),
             "gemm_plus_epilogue": Timing.from_samples([0.25], 1), "ours": "ignored"}
    record = bk._library_record(w, timed)
    assert record["layout"] == "A @ B^T (B N x K)" and record["gemm"]["median_ms"] == 0.19
    assert record["gemm_nn"]["median_ms"] == 0.21
    assert record["gemm_plus_epilogue"]["median_ms"] == 0.25
    timed["gemm_nn"] = Timing.from_samples([0.15], 1)
    assert bk._library_record(w, timed)["layout"] == "A @ B (B K x N)"

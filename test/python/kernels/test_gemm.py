"""The tile-dialect GEMM: generation, lowering to validated PTX, fragment layouts, and (on a GPU)
results against numpy float64 and throughput.

CPU-only tests compile every config for sm_80 and sm_90 and have nvJitLink (and ptxas where
installed) assemble the PTX; the fragment-layout tests replay the lowering's ldmatrix lane table
against the PTX ISA's definitions of ldmatrix and the mma.m16n8k16 fragments.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import time

import numpy as np
import pytest
from xdsl.dialects import scf

from tilesync.dialects import tile as tl
from tilesync.harness.compile import compile_kernel
from tilesync.kernels.config import GemmConfig, gemm_config
from tilesync.kernels.gemm import gemm_kernel, gemm_module
from tilesync.kernels.reference import host_array, host_values, reference_gemm
from tilesync.lowering import tile_to_nvvm
from tilesync.lowering.ptx import validate_ptx

MAIN = gemm_config(4096, 4096, 4096)  # 128x128x32 tile, 2x2 warps, 3 stages, f16, row-major B

CONFIGS = [
    MAIN,
    gemm_config(128, 128, 128),
    gemm_config(100, 200, 72),  # every edge masked, K not a multiple of BK
    gemm_config(64, 6144, 12288, epilogue="bias_gelu"),
    gemm_config(256, 256, 64, b_layout="col", epilogue="bias"),
    gemm_config(100, 200, 72, b_layout="col", dtype="bf16", epilogue="gelu"),
    gemm_config(256, 256, 256, tile=(64, 64, 32), warps=(2, 2), stages=4),
    gemm_config(256, 256, 256, tile=(128, 64, 64), warps=(2, 2), stages=2),
]


def _id(cfg: GemmConfig) -> str:
    bm, bn, bk = cfg.tile
    return (f"{cfg.M}x{cfg.N}x{cfg.K}-{bm}x{bn}x{bk}-s{cfg.stages}-{cfg.dtype}-B{cfg.b_layout}"
            f"-{cfg.epilogue or 'plain'}" + ("-dyn" if cfg.dynamic_shared else ""))


_compiled: dict[tuple[GemmConfig, str], str] = {}


def _ptx(cfg: GemmConfig, arch: str) -> str:
    key = (cfg, arch)
    if key not in _compiled:
        _compiled[key] = compile_kernel(cfg, arch).ptx
    return _compiled[key]


# --------------------------------------------------------------------------------------------
# PTX of every configuration
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("cfg", CONFIGS, ids=_id)
def test_compiles_to_valid_ptx(cfg: GemmConfig, arch: str):
    ptx = _ptx(cfg, arch)
    info = validate_ptx(ptx, arch)  # raises on PTX that nvJitLink rejects
    assert info.registers.get(cfg.kernel_name, 0) > 0
    assert info.spill_free(cfg.kernel_name), info.info_log
    assert re.search(rf"\.entry\s+{cfg.kernel_name}\(", ptx)
    assert "llvm." not in ptx
    bm, bn, bk = cfg.tile
    wm, wn = cfg.warps
    mma_per_k_tile = (bm // wm // 16) * (bn // wn // 8) * (bk // 16)
    # The k loop body holds one k-tile's mma.sync, fully unrolled (and nothing more).
    mma = "mma.sync.aligned.m16n8k16.row.col.f32." + ("f16.f16" if cfg.dtype == "f16"
                                                      else "bf16.bf16") + ".f32"
    assert ptx.count(mma) == mma_per_k_tile
    ldmatrix_a = "ldmatrix.sync.aligned.m8n8.x4.shared.b16"
    ldmatrix_b = "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" if cfg.b_layout == "row" \
        else ldmatrix_a
    a_loads = (bm // wm // 16) * (bk // 16)
    b_loads = (bn // wn // 16) * (bk // 16)
    if cfg.b_layout == "row":
        assert ptx.count(ldmatrix_a) == a_loads
        assert ptx.count(ldmatrix_b) == b_loads
    else:
        assert ptx.count(ldmatrix_a) == a_loads + b_loads
    assert "cp.async.commit_group" in ptx
    assert re.search(rf"cp\.async\.wait_group\s+{cfg.stages - 2};", ptx)
    masked = cfg.M % bm or cfg.N % bn or cfg.K % bk
    copies = re.findall(r"cp\.async\.cg\.shared\.global \[[^]]+\], \[[^]]+\], 16(, %r\d+)?;",
                        ptx)
    assert copies
    # Zero-filling copies (src-size operand) exactly where some edge is masked.
    assert any(extra for extra in copies) == bool(masked)
    assert "bar.sync" in ptx
    if cfg.epilogue in ("gelu", "bias_gelu"):
        assert "tanh.approx.f32" in ptx
    assert ("cvt.rn.f16x2.f32" if cfg.dtype == "f16" else "cvt.rn.bf16x2.f32") in ptx


def test_main_config_shared_memory_and_launch_shape():
    assert MAIN.threads == 128 and MAIN.block == (128, 1, 1)
    assert MAIN.grid == (32, 32, 1)
    assert MAIN.shared_bytes == 3 * (128 * 32 + 32 * 128) * 2 == 48 * 1024
    ptx = _ptx(MAIN, "sm_90")
    sizes = [int(n) for n in re.findall(r"\.shared \.align \d+ \.b8 \w+\[(\d+)\]", ptx)]
    assert sorted(sizes) == [24576, 24576]


@pytest.mark.parametrize("forced", [False, True])
def test_stages_beyond_48k_live_in_dynamic_shared_memory(forced):
    """5 stages of 128x128x32 (80 KiB), or 48 KiB on request: one extern array, no static
    stage buffers, and the launch size in the config and in the compiled signature."""
    cfg = (gemm_config(256, 256, 256, stages=3, dynamic_shared=True) if forced
           else gemm_config(256, 256, 256, stages=5))
    # + room to align the stages to 128 bytes from the array's guaranteed 16
    assert cfg.shared_bytes == cfg.stages * 16384
    assert cfg.dynamic_shared_bytes == cfg.shared_bytes + 112
    program = compile_kernel(cfg, "sm_90")
    assert program.kernels["gemm"].dynamic_shared_bytes == cfg.dynamic_shared_bytes
    assert ".extern .shared .align 16 .b8 __tilesync_dynamic_shared[];" in program.ptx
    assert not re.findall(r"\.shared \.align \d+ \.b8 \w+\[\d+\]", program.ptx)
    assert MAIN.dynamic_shared_bytes == 0 and _ptx(MAIN, "sm_90").count(".extern") == 0


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not installed")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_main_config_ptxas_no_spills(tmp_path, arch):
    path = tmp_path / "gemm.ptx"
    path.write_text(_ptx(MAIN, arch))
    out = subprocess.run(["ptxas", f"-arch={arch}", "-v", str(path), "-o",
                          str(tmp_path / "gemm.cubin")], capture_output=True, text=True,
                         check=True)
    log = out.stdout + out.stderr
    assert "0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in log, log
    registers = int(re.search(r"Used (\d+) registers", log).group(1))
    assert registers <= 255
    assert "49152 bytes smem" in log


def test_generation_and_compile_time():
    """Generate + lower + PTX for the main config (the number goes into the report)."""
    compile_kernel(gemm_config(256, 256, 64), "sm_90")  # warm the caches (imports, LLVM target)
    start = time.process_time()
    module = gemm_module(0, 0, 0, config=MAIN)
    generated = time.process_time()
    from tilesync import compile as ts_compile

    program = ts_compile(module, target="sm_90", keep_ir=False)
    done = time.process_time()
    assert program.ptx
    print(f"\ngenerate {generated - start:.3f} s, compile {done - generated:.3f} s (CPU time); "
          f"per pass: { {k: round(v, 3) for k, v in program.pass_seconds.items()} }")
    # no bound on the time itself (tools/compile_time.py measures it): this one only catches a
    # blow-up by orders of magnitude, which a loaded CI machine cannot produce
    assert done - start < 20


# --------------------------------------------------------------------------------------------
# Generator
# --------------------------------------------------------------------------------------------


def test_gemm_kernel_text_round_trips():
    from tilesync.api import parse

    text = gemm_kernel(100, 200, 72, epilogue="bias")
    module = parse(text)  # verifies
    assert str(module) == text
    assert "tile.mma" in text and "tile.ldmatrix" in text and "tile.cp_async" in text
    assert "tile.store_acc" in text and "masked" in text
    assert "gpu.func @gemm(%A: memref<100x72xf16>, %B: memref<72x200xf16>, " \
           "%C: memref<100x200xf16>, %bias: memref<200xf16>) kernel" in text


def test_sync_hooks():
    """With sync_hooks the tile comes from sync.tile and every k-tile's copies of A and B are
    preceded by their load points (prologue and prefetch), the stores followed by a store point;
    without stages to fill them, the pipeline drops them."""
    cfg = gemm_config(256, 512, 128, sync_hooks=True)
    text = gemm_kernel(256, 512, 128, sync_hooks=True)
    lines = [line.strip() for line in text.splitlines()]
    tile_line = next(line for line in lines if "sync.tile" in line)
    x, y = re.match(r"(%\w+), (%\w+) = sync.tile : index, index", tile_line).groups()
    points = [line for line in lines if line.startswith("sync.load_point")]
    # stages - 1 prologue k-tiles plus the prefetch in the loop, for operand 0 and operand 1.
    assert len(points) == 2 * cfg.stages
    assert all(re.fullmatch(rf"sync.load_point operand [01] \[{x}, {y}\] step %\w+", p)
               for p in points)
    assert [line for line in lines if line.startswith("sync.store_point")] == \
        [f"sync.store_point [{x}, {y}]"]
    store_point = lines.index(f"sync.store_point [{x}, {y}]")
    assert all(i < store_point for i, line in enumerate(lines) if "tile.store_acc" in line)
    assert "gpu.block_id" not in text
    assert "gemm" in compile_kernel(cfg, "sm_90").ptx  # hooks without stages lower to nothing
    assert "sync." not in gemm_kernel(256, 512, 128)


def test_unmasked_when_shapes_divide():
    text = gemm_kernel(256, 256, 64)
    assert " masked" not in text


# --------------------------------------------------------------------------------------------
# Swizzles
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("row_elems, expected", [(16, (1, 3, 3)), (32, (2, 3, 3)),
                                                 (64, (3, 3, 3)), (128, (3, 3, 4))])
def test_swizzle_for_row(row_elems, expected):
    s = tl.swizzle_for_row(row_elems)
    assert (s.bits.data, s.base.data, s.shift.data) == expected
    rows = 64
    offsets = [s.apply(r * row_elems + c) for r in range(rows) for c in range(row_elems)]
    assert sorted(offsets) == list(range(rows * row_elems))  # a bijection on the tile
    for r in range(rows):
        for c in range(0, row_elems, 8):  # 16-byte chunks stay whole and 16-byte aligned
            chunk = [s.apply(r * row_elems + c + e) for e in range(8)]
            assert chunk == list(range(chunk[0], chunk[0] + 8)) and chunk[0] % 8 == 0
    # ldmatrix: 8 consecutive rows at one chunk column hit 8 distinct 16-byte bank groups.
    for r0 in range(0, rows, 8):
        for c in range(0, row_elems, 8):
            groups = {(s.apply((r0 + i) * row_elems + c) // 8) % 8 for i in range(8)}
            assert len(groups) == 8


# --------------------------------------------------------------------------------------------
# Fragment layouts: the lowering's ldmatrix lane table against the PTX ISA
# --------------------------------------------------------------------------------------------


def _lane_address(lane: int, pattern: tuple[int, int, int, int]) -> tuple[int, int]:
    ra, rb, ca, cb = pattern
    q0, q1 = (lane >> 3) & 1, (lane >> 4) & 1
    return (lane & 7) + 8 * (ra * q0 + rb * q1), 8 * (ca * q0 + cb * q1)


def _ldmatrix(mem: np.ndarray, i: int, j: int, count: int, trans: bool, pattern) -> np.ndarray:
    """PTX ldmatrix: lanes 8q..8q+7 give the rows of matrix q; returns [lane, reg, half]."""
    rows = []
    for q in range(count):
        rows.append([_lane_address(8 * q + r, pattern) for r in range(8)])
    out = np.zeros((32, count, 2))
    for t in range(32):
        for q in range(count):
            for h in range(2):
                if not trans:  # thread t: row t/4, columns 2 (t%4) + h of the 8x8 matrix
                    r, c = t // 4, 2 * (t % 4) + h
                else:  # .trans: row 2 (t%4) + h, column t/4
                    r, c = 2 * (t % 4) + h, t // 4
                row, col = rows[q][r]
                out[t, q, h] = mem[i + row, j + col + c]
    return out


def _a_element(t: int, reg: int, half: int) -> tuple[int, int]:
    """PTX ISA, mma.m16n8k16 .f16/.bf16: (row, col) of A held by thread t in a_reg.half."""
    g, tig = t // 4, t % 4
    return g + 8 * (reg % 2), 2 * tig + half + 8 * (reg // 2)


def _b_element(t: int, reg: int, half: int) -> tuple[int, int]:
    """(k, n) of B held by thread t in b_reg.half."""
    g, tig = t // 4, t % 4
    return 2 * tig + half + 8 * reg, g


@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix_a_fragment_layout(trans):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((16, 16))
    mem = np.zeros((40, 48))
    i, j = 8, 16  # the block's origin in a larger shared tile
    mem[i:i + 16, j:j + 16] = a.T if trans else a  # trans: memory holds A^T (k x m)
    regs = _ldmatrix(mem, i, j, 4, trans, tile_to_nvvm._LANE_PATTERNS[("a", 1, trans)])
    for t in range(32):
        for reg in range(4):
            for half in range(2):
                assert regs[t, reg, half] == a[_a_element(t, reg, half)]


@pytest.mark.parametrize("trans", [False, True])
@pytest.mark.parametrize("count", [1, 2])
def test_ldmatrix_b_fragment_layout(trans, count):
    rng = np.random.default_rng(1)
    n = 8 * count
    b = rng.standard_normal((16, n))  # k x n
    mem = np.zeros((48, 48))
    i, j = 16, 8
    stored = b if trans else b.T  # trans: memory k x n (N contiguous); else n x k
    mem[i:i + stored.shape[0], j:j + stored.shape[1]] = stored
    regs = _ldmatrix(mem, i, j, 2 * count, trans, tile_to_nvvm._LANE_PATTERNS[("b", count, trans)])
    for frag in range(count):  # fragment f covers n in [8 f, 8 f + 8)
        for t in range(32):
            for reg in range(2):
                for half in range(2):
                    k, col = _b_element(t, reg, half)
                    assert regs[t, 2 * frag + reg, half] == b[k, 8 * frag + col]


def test_mma_of_loaded_fragments_is_the_product():
    """ldmatrix (as lowered) + the PTX mma semantics + store_acc's lane map give A @ B."""
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((16, 16)), rng.standard_normal((16, 16))
    a_regs = _ldmatrix(a, 0, 0, 4, False, tile_to_nvvm._LANE_PATTERNS[("a", 1, False)])
    b_regs = _ldmatrix(b, 0, 0, 4, True, tile_to_nvvm._LANE_PATTERNS[("b", 2, True)])
    c = np.zeros((16, 16))
    for frag in range(2):  # two m16n8k16 products side by side
        a_full, b_full = np.zeros((16, 16)), np.zeros((16, 8))
        for t in range(32):
            for reg in range(4):
                for half in range(2):
                    a_full[_a_element(t, reg, half)] = a_regs[t, reg, half]
            for reg in range(2):
                for half in range(2):
                    b_full[_b_element(t, reg, half)] = b_regs[t, 2 * frag + reg, half]
        d = a_full @ b_full
        for t in range(32):  # store_acc: c_e at row t/4 + 8 (e/2), column 2 (t%4) + e%2
            for e in range(4):
                row, col = t // 4 + 8 * (e // 2), 2 * (t % 4) + e % 2
                c[row, 8 * frag + col] = d[row, col]
    np.testing.assert_allclose(c, a @ b, rtol=1e-12)


# --------------------------------------------------------------------------------------------
# On a GPU
# --------------------------------------------------------------------------------------------

GPU_SHAPES = [(128, 128, 128), (4096, 4096, 4096), (64, 6144, 12288), (100, 200, 72)]


def _run_and_check(cfg: GemmConfig, seed: int = 0) -> float:
    from tilesync.harness.runner import GemmRunner
    from tilesync.runtime.buffers import DeviceBuffer
    from tilesync.runtime.launch import synchronize

    rng = np.random.default_rng(seed)
    b_shape = (cfg.K, cfg.N) if cfg.b_layout == "row" else (cfg.N, cfg.K)
    a = host_array(rng.standard_normal((cfg.M, cfg.K)), cfg.dtype)
    b = host_array(rng.standard_normal(b_shape), cfg.dtype)
    bias = host_array(rng.standard_normal(cfg.N), cfg.dtype) if cfg.has_bias else None
    runner = GemmRunner(cfg)
    out = DeviceBuffer.empty((cfg.M, cfg.out_cols), a.dtype)
    out.fill_bytes(0xFF)  # NaN in f16 and bf16: an element never written shows up
    head = cfg.a_head  # A given as its first columns and the rest, concatenated by the kernel
    args = [DeviceBuffer.from_numpy(np.ascontiguousarray(a[:, head:])),
            DeviceBuffer.from_numpy(b), out]
    if bias is not None:
        args.append(DeviceBuffer.from_numpy(bias))
    runner.launch(*args, a_head=DeviceBuffer.from_numpy(np.ascontiguousarray(a[:, :head]))
                  if head else None)
    synchronize()
    got = host_values(out.to_numpy(), cfg.dtype)
    ref = reference_gemm(cfg, host_values(a, cfg.dtype), host_values(b, cfg.dtype),
                         None if bias is None else host_values(bias, cfg.dtype))
    assert np.isfinite(got).all(), f"{np.count_nonzero(~np.isfinite(got))} elements not written"
    error = np.linalg.norm(got - ref) / np.linalg.norm(ref)
    assert error < 1e-2, f"relative error {error:.3g} for {_id(cfg)}"
    return error


@pytest.mark.gpu
@pytest.mark.parametrize("shape", GPU_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_gpu_gemm_matches_numpy(shape):
    _run_and_check(gemm_config(*shape))


@pytest.mark.gpu
@pytest.mark.parametrize(
    "cfg",
    [
        gemm_config(100, 200, 72, b_layout="col"),
        gemm_config(512, 384, 256, b_layout="col", epilogue="bias"),
        gemm_config(100, 200, 72, epilogue="bias_gelu"),
        gemm_config(256, 6144, 1024, epilogue="gelu"),
        gemm_config(100, 200, 72, dtype="bf16"),
        gemm_config(512, 384, 264, dtype="bf16", b_layout="col", epilogue="bias_gelu"),
        gemm_config(300, 520, 200, tile=(64, 64, 32), stages=4),
        gemm_config(300, 520, 200, tile=(128, 64, 64), stages=2),
        gemm_config(256, 512, 256, tile=(128, 256, 32), warps=(2, 4), stages=2),
        gemm_config(300, 520, 264, tile=(128, 128, 32), stages=6),  # 96 KiB dynamic
        gemm_config(100, 200, 72, tile=(64, 48, 32), warps=(1, 3), b_layout="col"),
        gemm_config(256, 256, 256, stages=3, dynamic_shared=True),
        # split-K into slices of 3, 3 and 4 k-tiles (the last one masked), the sums through
        # the workspace or the cluster; a weight-streaming tile with swiglu
        gemm_config(5, 320, 600, tile=(16, 64, 64), warps=(1, 4), stages=4, b_layout="col",
                    epilogue="swiglu", split_k=3),
        gemm_config(5, 320, 600, tile=(16, 64, 64), warps=(1, 4), stages=4, b_layout="col",
                    epilogue="swiglu", split_k=3, split_cluster=True),
        gemm_config(100, 200, 448, tile=(64, 64, 32), stages=4, split_k=5, epilogue="bias"),
    ],
    ids=_id,
)
def test_gpu_gemm_variants(cfg):
    _run_and_check(cfg)


WGMMA_CONFIGS = [
    gemm_config(256, 512, 256, tile=(128, 256, 64), warps=(8, 1), stages=3, b_layout="col",
                mma="wgmma"),
    gemm_config(300, 520, 200, tile=(128, 128, 64), warps=(8, 1), stages=4, b_layout="col",
                mma="wgmma", wgmma_in_flight=0),  # masked edges on every side
    gemm_config(200, 264, 136, tile=(64, 128, 64), warps=(4, 1), stages=3, b_layout="col",
                mma="wgmma", dtype="bf16", epilogue="bias_gelu"),
    gemm_config(256, 256, 512, tile=(128, 64, 64), warps=(8, 1), stages=4, b_layout="col",
                mma="wgmma", split_k=2),
    gemm_config(64, 352, 640, tile=(64, 64, 64), warps=(4, 1), stages=6, b_layout="col",
                mma="wgmma", epilogue="swiglu", split_k=3, split_cluster=True),  # 3, 3, 4
    gemm_config(128, 512, 256, tile=(128, 256, 64), warps=(8, 1), stages=3, b_layout="col",
                mma="wgmma", epilogue="swiglu"),
    gemm_config(64, 480, 1024, tile=(64, 48, 64), warps=(4, 1), stages=8, b_layout="col",
                mma="wgmma", epilogue="swiglu"),  # BN not a power of two: 10 column tiles
    # the tile leaves through A's ring in 16-byte chunks of rows (tile.copy_out)
    gemm_config(256, 512, 256, tile=(128, 256, 64), warps=(8, 1), stages=4, b_layout="col",
                mma="wgmma", dtype="bf16", epilogue="bias_relu", staged_store=True),
    gemm_config(300, 520, 200, tile=(128, 128, 64), warps=(8, 1), stages=4, b_layout="col",
                mma="wgmma", epilogue="bias_gelu", staged_store=True),  # masked edges
    gemm_config(200, 136, 128, tile=(64, 64, 64), warps=(4, 1), stages=3, b_layout="col",
                mma="wgmma", wgmma_in_flight=0, staged_store=True),  # one box, masked
    # A concatenated along K from two buffers (NeRF's skip): one k-tile of A_head, then A
    gemm_config(256, 256, 320, tile=(128, 256, 64), warps=(8, 1), stages=4, b_layout="col",
                mma="wgmma", epilogue="bias_relu", staged_store=True, a_head=64),
    gemm_config(200, 136, 200, tile=(64, 64, 64), warps=(4, 1), stages=3, b_layout="col",
                mma="wgmma", wgmma_in_flight=0, a_head=128),  # A's last k-tile masked
]


@pytest.mark.parametrize("cfg", WGMMA_CONFIGS, ids=_id)
def test_wgmma_configs_compile_for_sm90a(cfg):
    program = compile_kernel(cfg, "sm_90")  # the config asks for sm_90a itself
    assert program.target == "sm_90a"
    assert program.kernels["gemm"].dynamic_shared_bytes == cfg.dynamic_shared_bytes
    ptx = program.ptx
    bn = cfg.tile[1]
    kind = cfg.dtype
    # one wgmma per k16 step of a 64-wide k-tile (LLVM may unroll short K loops); no
    # ldmatrix / mma.sync left
    count = ptx.count(f"wgmma.mma_async.sync.aligned.m64n{bn}k16.f32.{kind}.{kind}")
    assert count > 0 and count % 4 == 0
    assert "mma.sync" not in ptx and "ldmatrix" not in ptx
    assert "fence.proxy.async.shared::cta;" in ptx
    assert f"wgmma.wait_group.sync.aligned {cfg.wgmma_in_flight};" in ptx
    info = validate_ptx(ptx, "sm_90a")
    assert info.registers["gemm"] <= 255


def test_staged_store_leaves_through_the_ring_in_whole_chunks():
    """The fragments go to A's ring (shared memory), and only tile.copy_out writes C: one
    16-byte chunk per thread and copy, whole rows, between block barriers."""
    from xdsl.dialects import gpu

    cfg = gemm_config(256, 512, 256, tile=(128, 256, 64), warps=(8, 1), stages=4,
                      b_layout="col", mma="wgmma", epilogue="bias_relu", staged_store=True)
    module = gemm_module(0, 0, 0, config=cfg)
    kernel = next(op for op in module.walk() if isinstance(op, gpu.FuncOp))
    stores = [op for op in kernel.walk() if isinstance(op, tl.StoreAccOp)]
    copies = [op for op in kernel.walk() if isinstance(op, tl.CopyOutOp)]
    assert stores and all(tl.memory_space(op.dst.type) == 3 for op in stores)
    assert {op.dst for op in stores} == {op.src for op in copies}
    # 128 x 256 halves in 16-byte chunks over 256 threads: 16 copies each, none masked
    assert len(copies) == 128 * 256 // 8 // cfg.threads
    assert all(op.masked is None and op.swizzle is not None for op in copies)
    ops = list(kernel.walk())
    barriers = [ops.index(op) for op in ops if isinstance(op, gpu.BarrierOp)]
    first_store, last_copy = ops.index(stores[0]), ops.index(copies[-1])
    assert any(i < first_store for i in barriers) and any(i > last_copy for i in barriers)
    assert any(ops.index(stores[-1]) < i < ops.index(copies[0]) for i in barriers)
    assert "staged_store=True" in repr(cfg)
    assert "staged_store" not in repr(dataclasses.replace(cfg, staged_store=False))


def test_a_head_k_tiles_copy_from_the_head_then_from_a():
    """With a_head, every copy of A is under one scf.if on the k-tile: the head's first
    columns from A_head, the rest from A at column k0 - a_head; A's type is the rest's."""
    from xdsl.dialects import gpu

    cfg = gemm_config(256, 256, 320, tile=(128, 256, 64), warps=(8, 1), stages=4,
                      b_layout="col", mma="wgmma", a_head=64)
    assert cfg.params == ("A", "B", "C", "A_head")
    kernel = next(op for op in gemm_module(0, 0, 0, config=cfg).walk()
                  if isinstance(op, gpu.FuncOp))
    a, _, _, head = kernel.body.block.args
    assert a.type.get_shape() == (256, 256) and head.type.get_shape() == (256, 64)
    copies = [op for op in kernel.walk() if isinstance(op, tl.CpAsyncOp)
              and op.src in (a, head)]
    for op in copies:
        branch = op.parent_op()
        while not isinstance(branch, scf.IfOp):
            branch = branch.parent_op()
        which = branch.true_region if op.src is head else branch.false_region
        assert op.parent_region() is which or which.is_ancestor(op), op
    per_tile = 128 * 64 // 8 // cfg.threads
    prologue_and_loop = cfg.prefetch + 1
    assert sum(op.src is head for op in copies) == per_tile * prologue_and_loop
    assert sum(op.src is a for op in copies) == per_tile * prologue_and_loop
    assert "a_head=64" in repr(cfg)
    assert "a_head" not in repr(dataclasses.replace(cfg, a_head=0))


@pytest.mark.skipif(shutil.which("ptxas") is None, reason="ptxas is not installed")
def test_wgmma_main_config_is_not_serialized(tmp_path):
    """ptxas serializes wgmma (and says so) when accumulators are touched while in flight."""
    cfg = gemm_config(4096, 4096, 4096, tile=(128, 256, 64), warps=(8, 1), stages=4,
                      b_layout="col", mma="wgmma")
    path = tmp_path / "gemm.ptx"
    path.write_text(compile_kernel(cfg, "sm_90a").ptx)
    out = subprocess.run(["ptxas", "-arch=sm_90a", "-v", str(path), "-o",
                          str(tmp_path / "gemm.cubin")], capture_output=True, text=True,
                         check=True)
    log = out.stdout + out.stderr
    assert "serialized" not in log and "0 bytes spill stores" in log, log


@pytest.mark.gpu
@pytest.mark.parametrize("cfg", WGMMA_CONFIGS, ids=_id)
def test_gpu_wgmma_gemm(cfg):
    from tilesync.runtime.device import get_device

    if get_device().arch != "sm_90":
        pytest.skip("wgmma needs an sm_90 GPU")
    _run_and_check(cfg)


@pytest.mark.gpu
def test_gpu_gemm_throughput():
    from tilesync.harness.runner import time_gemm

    result = time_gemm(MAIN, warmup=5, reps=20)
    print(f"\n{_id(MAIN)}: {result['median_ms']:.3f} ms, {result['tflops']:.1f} TFLOP/s, "
          f"{result['registers']} registers")
    assert result["tflops"] > 0


def test_a_tile_kept_in_or_read_from_the_ring_is_refused_where_the_ring_cannot_hold_it():
    """emit_tile's layers-in-a-stage forms: A read from the ring needs its k-tiles in the ring's
    stages and resident B; a tile kept there needs the staged store; B's rows start at whole
    8-row swizzle atoms (checked before any IR is emitted)."""
    from tilesync.kernels.gemm import emit_tile, load_resident_b

    # K = 256 (4 k-tiles) through 3 stages; a 128-wide wgmma tile, staged
    cfg = gemm_config(64, 128, 256, (64, 128, 64), (4, 1), 3, "f16", "col", "bias",
                      dynamic_shared=True, mma="wgmma", staged_store=False)
    with pytest.raises(ValueError, match="no more k-tiles than the ring's stages"):
        emit_tile(None, cfg, None, None, None, None, resident_b=True, a_in_ring=True)
    with pytest.raises(ValueError, match="one kept there is staged"):
        emit_tile(None, cfg, None, None, None, None, resident_b=True, keep_in_ring=True)
    with pytest.raises(ValueError, match="whole 8-row swizzle atom, got row 4"):
        load_resident_b(None, cfg, None, None, None, at=(0, 4))

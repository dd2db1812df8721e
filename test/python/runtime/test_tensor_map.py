"""TMA tensor maps: the `tmap` parameter kind (by value, 128 bytes), its packing and the host
checks of cuTensorMapEncodeTiled's arguments; on a GPU, a box copied global -> shared ->
global through a TMA load (completing on an mbarrier) and a TMA store, edges included."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from cuda.bindings import driver

import tilesync
from tilesync.contract import PARAM_KINDS, TENSOR_MAP
from tilesync.runtime.launch import check_signature, pack_args
from tilesync.runtime.module import ptx_entry_params
from tilesync.runtime.tensor_map import tensor_map_error

COPY_BOX = """
gpu.module @tma {
  "memref.global"() {sym_name = "bars", sym_visibility = "private", type = memref<1xi64, 3>, initial_value, alignment = 8 : i64} : () -> ()
  "memref.global"() {sym_name = "box", sym_visibility = "private", type = memref<64x64xf16, 3>, initial_value, alignment = 1024 : i64} : () -> ()
  gpu.func @copy_box(%src: !tile.tensor_map<64x64xf16, swizzle 128>,
                     %dst: !tile.tensor_map<64x64xf16, swizzle 128>, %row: i32, %col: i32) kernel
      attributes {gpu.known_block_size = array<i32: 32, 1, 1>} {
    %c0 = arith.constant 0 : index
    %false = arith.constant false
    %r = arith.index_cast %row : i32 to index
    %c = arith.index_cast %col : i32 to index
    %bars = memref.get_global @bars : memref<1xi64, 3>
    %box = memref.get_global @box : memref<64x64xf16, 3>
    %tid = gpu.thread_id x
    %leader = arith.cmpi eq, %tid, %c0 : index
    scf.if %leader {
      tile.prefetch_tensor_map %src : !tile.tensor_map<64x64xf16, swizzle 128>
      tile.mbarrier_init %bars[%c0] count 1 : memref<1xi64, 3>
      scf.yield
    }
    gpu.barrier
    scf.if %leader {
      tile.mbarrier_arrive %bars[%c0] expect_tx 8192 : memref<1xi64, 3>
      tile.tma_load %src[%r, %c], %box[%c0, %c0], %bars[%c0] : !tile.tensor_map<64x64xf16, swizzle 128>, memref<64x64xf16, 3>, memref<1xi64, 3>
      scf.yield
    }
    tile.mbarrier_wait %bars[%c0], %false : memref<1xi64, 3>
    scf.if %leader {
      tile.tma_store %box[%c0, %c0], %dst[%r, %c] : memref<64x64xf16, 3>, !tile.tensor_map<64x64xf16, swizzle 128>
      tile.tma_store_commit
      tile.tma_store_wait 0
      scf.yield
    }
    gpu.return
  }
}
"""  # noqa: E501


def test_tensor_map_is_a_128_byte_blob_passed_by_value():
    kind = PARAM_KINDS[TENSOR_MAP]
    assert (kind.size, kind.align, kind.is_float, kind.int_range) == (128, 64, False, None)


def test_a_kernel_with_tensor_maps_has_tmap_parameters_that_match_its_ptx():
    program = tilesync.compile(COPY_BOX, target="sm_90a", validate=True)
    signature = program.kernels["copy_box"].params
    assert signature == ("tmap", "tmap", "i32", "i32")
    ptx = program.ptx
    assert ".param .align 64 .b8 copy_box_param_0[128]" in ptx
    assert "cvta.param.u64" in ptx  # read in place (grid constant), not copied to local memory
    assert ".local" not in ptx
    check_signature(signature, ptx_entry_params(ptx)["copy_box"], "copy_box")


def test_pack_args_passes_a_tensor_map_by_address():
    tensor_map = driver.CUtensorMap()
    values, types = pack_args(["tmap", "i32"], [tensor_map, 3])
    assert values[0] is tensor_map and types == (None, ctypes.c_int32)
    with pytest.raises(TypeError, match=r"argument 0 \(tmap\): a tensor map parameter takes a "
                                        r"CUtensorMap, got int"):
        pack_args(["tmap"], [0x1000])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((0x1000, "f8", (64, 64), (64, 64), 128), "dtype must be one of"),
        ((0x1001, "f16", (64, 64), (64, 64), 128), "not 16-byte aligned"),
        ((0x1000, "f16", (64, 60), (64, 56), 128), "rows of 60 f16 are 120 bytes"),
        ((0x1000, "f16", (64, 128), (64, 128), 128), "at most|up to the 128-byte swizzle"),
        ((0x1000, "f16", (512, 64), (512, 64), 128), "box in 1..256"),
        ((0x1000, "f16", (64, 64), (64,), 128), "the same rank"),
        ((0x1000, "f16", (64, 64), (64, 64), 48), "swizzle must be one of"),
    ],
)
def test_tensor_map_arguments_are_checked_before_the_driver(args, message):
    error = tensor_map_error(*args)
    assert error is not None and any(m in error for m in message.split("|"))
    assert tensor_map_error(0x1000, "bf16", (100, 72), (64, 64), 128) is None


@pytest.mark.gpu
@pytest.mark.parametrize(("row", "col"), [(0, 0), (64, 8), (150, 40)])
def test_tma_load_and_store_copy_a_box_with_edges(row, col):
    from tilesync.runtime import DeviceBuffer, launch, load_ptx, synchronize
    from tilesync.runtime.tensor_map import encode_tiled

    rows, cols = 200, 72  # the box at (150, 40) hangs over both edges
    rng = np.random.default_rng(row + col)
    host = rng.standard_normal((rows, cols)).astype(np.float16)
    src = DeviceBuffer.from_numpy(host)
    poison = np.full((rows, cols), np.nan, np.float16)
    dst = DeviceBuffer.from_numpy(poison)
    program = tilesync.compile(COPY_BOX, target="sm_90a")
    kernel = load_ptx(program.ptx, "tma").function("copy_box", program.kernels["copy_box"].params)
    maps = [encode_tiled(b.ptr, "f16", (rows, cols), (64, 64), 128) for b in (src, dst)]
    launch(kernel, 1, 32, [*maps, row, col])
    synchronize()
    out = dst.to_numpy()
    inside = np.zeros((rows, cols), bool)
    inside[row:row + 64, col:col + 64] = True
    np.testing.assert_array_equal(out[inside], host[inside])
    assert np.isnan(out[~inside].astype(np.float32)).all()  # nothing outside the tensor's box


def test_encode_passes_innermost_first_dimensions_as_driver_integers(monkeypatch):
    """cuda-bindings takes cuuint64_t / cuuint32_t lists (plain ints are refused)."""
    from tilesync.runtime import tensor_map as tm

    seen = {}

    def fake_encode(dtype, rank, address, dims, strides, box, element_strides, *rest):
        seen.update(rank=rank, address=address, dims=dims, strides=strides, box=box,
                    element_strides=element_strides, swizzle=rest[1])
        return driver.CUresult.CUDA_SUCCESS, driver.CUtensorMap()

    monkeypatch.setattr(driver, "cuTensorMapEncodeTiled", fake_encode)
    tm.encode_tiled(0x1000, "f16", (200, 72), (64, 64), 128)
    assert seen["rank"] == 2 and seen["address"] == 0x1000
    assert all(isinstance(d, driver.cuuint64_t) for d in seen["dims"] + seen["strides"])
    assert all(isinstance(b, driver.cuuint32_t) for b in seen["box"] + seen["element_strides"])
    assert [int(d) for d in seen["dims"]] == [72, 200]  # innermost first
    assert [int(s) for s in seen["strides"]] == [144]  # bytes from one row to the next
    assert [int(b) for b in seen["box"]] == [64, 64]
    assert seen["swizzle"] == driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B


def test_encode_im2col_passes_the_window_and_the_pixels_channels_box(monkeypatch):
    """An implicit GEMM's A: the N x H x W x C input innermost first, the window corners
    innermost first (W, H), channels per pixel and pixels per copy from the box (pixels,
    channels); a cache asked for corners encodes an im2col map, not a tiled one."""
    from tilesync.runtime import tensor_map as tm

    seen = {}

    def fake_encode(dtype, rank, address, dims, strides, lower, upper, channels, pixels,
                    element_strides, *rest):
        seen.update(rank=rank, dims=dims, strides=strides, lower=lower, upper=upper,
                    channels=channels, pixels=pixels, swizzle=rest[1])
        return driver.CUresult.CUDA_SUCCESS, driver.CUtensorMap()

    monkeypatch.setattr(driver, "cuTensorMapEncodeIm2col", fake_encode)
    monkeypatch.setattr(tm, "encode_tiled", lambda *args: pytest.fail("a tiled map"))
    tm.TensorMapCache().get(0x1000, "f16", (8, 14, 12, 256), (128, 64), 128,
                            ((-1, -2), (-3, -4)))
    assert seen["rank"] == 4 and [int(d) for d in seen["dims"]] == [256, 12, 14, 8]
    assert [int(s) for s in seen["strides"]] == [512, 512 * 12, 512 * 12 * 14]
    assert seen["lower"] == [-2, -1] and seen["upper"] == [-4, -3]
    assert (seen["channels"], seen["pixels"]) == (64, 128)
    assert seen["swizzle"] == driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B
    with pytest.raises(ValueError, match="corner offset per spatial dimension"):
        tm.encode_im2col(0x1000, "f16", (8, 14, 12, 256), (128, 64), ((-1,), (-1,)))
    with pytest.raises(ValueError, match="up to the 128-byte swizzle"):
        tm.encode_im2col(0x1000, "f16", (8, 14, 12, 256), (128, 128), ((-1, -1), (-1, -1)))


def test_setmaxnreg_ptx_is_left_to_the_driver_jit():
    from tilesync.runtime.module import needs_driver_jit

    assert needs_driver_jit("\tsetmaxnreg.inc.sync.aligned.u32 232;\n")
    assert not needs_driver_jit("\tbar.sync 0;\n")


def test_a_bounded_cache_encodes_each_map_once_and_drops_the_least_recently_used(monkeypatch):
    from tilesync.runtime import tensor_map as tm

    encoded = []
    monkeypatch.setattr(tm, "encode_tiled",
                        lambda address, *rest: encoded.append(address) or ("map", address))
    cache = tm.TensorMapCache(limit=2)
    assert cache.get(0x100, "f16", (128, 64), (64, 64)) == ("map", 0x100)
    cache.get(0x200, "f16", (128, 64), (64, 64))
    cache.get(0x100, "f16", (128, 64), (64, 64))  # a hit: 0x100 is now the most recent
    cache.get(0x300, "f16", (128, 64), (64, 64))  # evicts 0x200
    assert len(cache) == 2 and encoded == [0x100, 0x200, 0x300]
    cache.get(0x100, "f16", (128, 64), (64, 64))
    cache.get(0x200, "f16", (128, 64), (64, 64))
    assert encoded == [0x100, 0x200, 0x300, 0x200]
    cache.get(0x100, "f16", (128, 64), (64, 32))  # another box: another map
    assert encoded[-1] == 0x100 and len(cache) == 2


def test_a_map_over_an_array_smaller_than_its_tensor_is_refused(monkeypatch):
    """gemm_tensor_maps encodes the config's tensor shapes: a smaller array would let the
    copies read or write past it, so it is refused before any map is encoded."""
    from tilesync.harness.runner import gemm_tensor_maps
    from tilesync.kernels.config import conv2d_config
    from tilesync.runtime import tensor_map as tm

    class Array:  # a device array of `nbytes` at 0x1000
        def __init__(self, nbytes):
            self.__cuda_array_interface__ = {"shape": (nbytes // 2,), "typestr": "<f2",
                                             "data": (0x1000, False), "version": 3}

    monkeypatch.setattr(tm, "encode_im2col", lambda *args: "im2col map")
    monkeypatch.setattr(tm, "encode_tiled", lambda *args: "tiled map")
    cfg = conv2d_config(1, 8, 8, 64, 64, tile=(64, 64, 64), warps=(4, 1), mma="wgmma",
                        pipeline="tma_ws").gemm
    x, w = 1 * 8 * 8 * 64 * 2, 64 * 9 * 64 * 2
    assert gemm_tensor_maps(cfg, [Array(x), Array(w)]) == ["im2col map", "tiled map"]
    with pytest.raises(ValueError, match="A of conv2d is a 1x8x8x64 f16 tensor"):
        gemm_tensor_maps(cfg, [Array(x - 128), Array(w)])

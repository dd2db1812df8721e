"""Runtime tests that need no GPU: detection, errors, argument packing, the cubin cache,
nvJitLink compilation, semaphore epochs and timing statistics. They run on GPU hosts too."""

from __future__ import annotations

import ctypes
import json
import os
import struct
from pathlib import Path

import numpy as np
import pytest
from cuda.bindings import driver

from tilesync.runtime import device as device_module
from tilesync.runtime import module as module_module
from tilesync.runtime.buffers import (
    _is_c_contiguous,
    as_device_pointer,
    device_pointer_and_size,
    dlpack_tensor_info,
)
from tilesync.runtime.errors import NoGPUError, TilesyncRuntimeError, check
from tilesync.runtime.launch import PARAM_KINDS, check_signature, dim3, pack_args, stream_handle
from tilesync.runtime.module import (
    CubinCache,
    cache_key,
    compile_arch,
    compile_ptx,
    default_cache_dir,
    ptx_entry_params,
    ptx_target,
    write_atomic,
)
from tilesync.runtime.semaphores import INT32_MAX, SemaphoreArray, SemaphoreOverflowError
from tilesync.runtime.timing import Timing

INPUTS = Path(__file__).parent / "Inputs"
KERNELS_PTX = (INPUTS / "runtime_kernels.ptx").read_text()
PDL_PTX = (INPUTS / "pdl_kernels.ptx").read_text()


@pytest.fixture
def fresh_probe(monkeypatch):
    """Re-run GPU detection under the test's patches, and forget its result afterwards."""
    device_module._probe.cache_clear()
    yield monkeypatch
    monkeypatch.undo()
    device_module._probe.cache_clear()


# -- detection and errors -----------------------------------------------------------------------


def test_gpu_available_returns_flag_and_reason():
    available, reason = device_module.gpu_available()
    assert isinstance(available, bool)
    assert isinstance(reason, str) and reason


def test_gpu_available_false_when_disabled_by_env(fresh_probe):
    fresh_probe.setenv(device_module.DISABLE_GPU_ENV, "1")
    assert device_module.gpu_available() == (False, "TILESYNC_DISABLE_GPU is set")


def test_gpu_available_catches_missing_driver_library(fresh_probe):
    # What cuda.pathfinder does at first use on a machine without the driver.
    class DynamicLibNotFoundError(Exception):
        pass

    def no_driver(flags):
        raise DynamicLibNotFoundError('"cuda" is an NVIDIA driver library')

    fresh_probe.delenv(device_module.DISABLE_GPU_ENV, raising=False)
    fresh_probe.setattr(driver, "cuInit", no_driver)
    available, reason = device_module.gpu_available()
    assert available is False
    assert "no NVIDIA driver" in reason
    assert "DynamicLibNotFoundError" in reason and "driver library" in reason


def test_gpu_available_reports_zero_devices(fresh_probe):
    fresh_probe.delenv(device_module.DISABLE_GPU_ENV, raising=False)
    fresh_probe.setattr(driver, "cuInit", lambda flags: (driver.CUresult.CUDA_SUCCESS,))
    fresh_probe.setattr(driver, "cuDeviceGetCount", lambda: (driver.CUresult.CUDA_SUCCESS, 0))
    assert device_module.gpu_available() == (
        False,
        "the NVIDIA driver is loaded but reports no CUDA device",
    )


def test_device_without_gpu_raises_no_gpu_error_with_reason(fresh_probe):
    fresh_probe.setenv(device_module.DISABLE_GPU_ENV, "1")
    with pytest.raises(NoGPUError) as info:
        device_module.Device(0)
    assert str(info.value) == "no usable NVIDIA GPU: TILESYNC_DISABLE_GPU is set"
    assert info.value.reason == "TILESYNC_DISABLE_GPU is set"
    assert isinstance(info.value, TilesyncRuntimeError)


def test_check_unwraps_outputs():
    success = driver.CUresult.CUDA_SUCCESS
    assert check((success,)) is None
    assert check((success, 42)) == 42
    assert check((success, 1, 2)) == (1, 2)


def test_check_names_error_and_call():
    with pytest.raises(TilesyncRuntimeError) as info:
        check((driver.CUresult.CUDA_ERROR_INVALID_VALUE, None), "cuMemAlloc(16)")
    assert info.value.error_name == "CUDA_ERROR_INVALID_VALUE"
    assert info.value.call == "cuMemAlloc(16)"
    assert "cuMemAlloc(16) failed: CUDA_ERROR_INVALID_VALUE" in str(info.value)
    assert "trap" not in str(info.value)
    assert not info.value.is_device_fault


@pytest.mark.parametrize(
    "result",
    [driver.CUresult.CUDA_ERROR_LAUNCH_FAILED, driver.CUresult.CUDA_ERROR_ILLEGAL_INSTRUCTION],
)
def test_check_says_device_trap_for_kernel_faults(result):
    with pytest.raises(TilesyncRuntimeError) as info:
        check((result,), "cuStreamSynchronize")
    message = str(info.value)
    assert info.value.error_name == result.name
    assert info.value.is_device_fault
    assert "device-side trap" in message and "spin-wait" in message
    assert "mbarrier wait" in message
    assert message.startswith(f"cuStreamSynchronize failed: {result.name}")


def test_a_timed_out_mbarrier_wait_is_described_by_its_barrier_and_parity():
    """What the host reads back from the record of a debug build's mbarrier wait: the barrier
    array's tag resolved among the program's symbols, the index and the parity."""
    import tilesync
    from tilesync.contract import DEBUG_RECORD, DEBUG_RECORD_FIELDS, SPIN_SITE_MBARRIER, kernel_tag
    from tilesync.runtime.program import describe_timeout, module_symbols

    text = (INPUTS / "mbarrier_stuck.mlir").read_text()
    program = tilesync.compile(text, target="sm_90a", debug=True)
    assert program.kernels["stuck"].sync_args == (DEBUG_RECORD,)
    symbols = module_symbols(program.module)
    assert "full_bars" in symbols and "stuck" in symbols
    record = dict.fromkeys(DEBUG_RECORD_FIELDS, 0) | {
        "claimed": 1, "complete": 1, "kernel_tag": kernel_tag("stuck"),
        "param": kernel_tag("full_bars"),
        "index": 3, "expected": 1, "block_x": 5, "site": SPIN_SITE_MBARRIER}
    words = [record[name] for name in DEBUG_RECORD_FIELDS]
    text, kernel, block = describe_timeout(words, program.kernels, {"stuck": "stage @s"}, "epoch 2",
                                           lambda: symbols)
    assert (kernel, block) == ("stuck", (5, 0, 0))
    assert text == ("spin-wait timed out in stage @s kernel stuck, block (5, 0, 0): mbarrier "
                    "full_bars[3] never completed its phase of parity 1 (epoch 2)")
    unnamed = describe_timeout(words, program.kernels, {}, "epoch 2")
    assert unnamed is not None and f"mbarrier #{kernel_tag('full_bars')}[3]" in unnamed[0]


# -- argument packing ---------------------------------------------------------------------------


class FakeCudaArray:
    """Stands in for a torch.cuda tensor or CuPy array."""

    def __init__(self, ptr, shape, typestr="<f4", strides=None):
        self.__cuda_array_interface__ = {
            "shape": shape,
            "typestr": typestr,
            "data": (ptr, False),
            "strides": strides,
            "version": 3,
        }


def test_pack_args_builds_values_and_ctypes():
    values, types = pack_args(
        ["ptr", "ptr", "f32", "f64", "i64", "i32"],
        [0x7F0000001000, FakeCudaArray(0x7F0000002000, (4, 8)), 2.5, 0.25, 1 << 40, -7],
    )
    assert types == (None, None, ctypes.c_float, ctypes.c_double, ctypes.c_longlong, ctypes.c_int32)
    assert isinstance(values[0], driver.CUdeviceptr) and int(values[0]) == 0x7F0000001000
    assert int(values[1]) == 0x7F0000002000
    assert values[2:] == (2.5, 0.25, 1 << 40, -7)
    assert all(type(v) in (int, float) for v in values[2:])


def test_pack_args_accepts_numpy_scalars():
    values, _ = pack_args(["i32", "u32", "f32"], [np.int64(5), np.uint32(7), np.float32(1.5)])
    assert values == (5, 7, 1.5)
    assert [type(v) for v in values] == [int, int, float]


def test_packed_args_are_accepted_by_cuda_bindings():
    helper = getattr(driver, "_HelperKernelParams", None)
    if helper is None:
        pytest.skip("cuda.bindings has no _HelperKernelParams to check against")
    signature = list(PARAM_KINDS)
    args = [0x1000 if kind == "ptr" else driver.CUtensorMap() if kind == "tmap"
            else 1 if kind[0] in "iu" else 1.0 for kind in signature]
    helper(pack_args(signature, args))  # raises TypeError on a value/ctype it can't pack
    # Why pointers are wrapped: with ctype None cuda-bindings rejects a bare int.
    with pytest.raises(TypeError):
        helper(((0x1000,), (None,)))


@pytest.mark.parametrize(
    ("kind", "value", "error"),
    [
        ("i32", 1 << 31, OverflowError),
        ("i32", -(1 << 31) - 1, OverflowError),
        ("u32", -1, OverflowError),
        ("i8", 128, OverflowError),
        ("i64", 1 << 63, OverflowError),
        ("i32", 1.0, TypeError),
        ("i32", "3", TypeError),
        ("ptr", -1, ValueError),
        ("ptr", 1.5, TypeError),
        ("f32", "x", ValueError),
    ],
)
def test_pack_args_rejects_values_that_would_be_corrupted(kind, value, error):
    with pytest.raises(error, match=rf"argument 1 \({kind}\)"):
        pack_args(["i32", kind], [0, value])


def test_pack_args_checks_count_and_kinds():
    with pytest.raises(ValueError, match="2 argument"):
        pack_args(["ptr"], [0, 1])
    with pytest.raises(ValueError, match="unknown parameter kind 'half'"):
        pack_args(["half"], [1.0])


def test_signature_is_checked_against_ptx_params():
    params = ptx_entry_params(KERNELS_PTX)
    check_signature(["ptr", "ptr", "f32", "f64", "i64", "i32"], params["axpb"], "axpb")
    with pytest.raises(ValueError, match="does not match its PTX parameters"):
        check_signature(["ptr", "i64"], params["add_one"], "add_one")
    with pytest.raises(ValueError, match="does not match"):
        check_signature(["ptr"], params["add_one"], "add_one")
    with pytest.raises(ValueError, match="unknown parameter kind"):
        check_signature(["ptr", "int"], params["add_one"], "add_one")


def test_dim3_pads_and_validates():
    assert dim3(7, "grid") == (7, 1, 1)
    assert dim3((2, 3), "grid") == (2, 3, 1)
    assert dim3([2, 3, 4], "block") == (2, 3, 4)
    with pytest.raises(ValueError):
        dim3((0, 1), "grid")
    with pytest.raises(ValueError):
        dim3((1, 1, 1, 1), "grid")


def test_stream_handle_conversions():
    class ProtocolStream:
        def __cuda_stream__(self):
            return (0, 0x1234)

    class TorchLikeStream:
        cuda_stream = 0x5678

    assert int(stream_handle(None)) == 0
    assert int(stream_handle(0x42)) == 0x42
    assert int(stream_handle(ProtocolStream())) == 0x1234
    assert int(stream_handle(TorchLikeStream())) == 0x5678
    handle = driver.CUstream(0x99)
    assert stream_handle(handle) is handle
    with pytest.raises(TypeError):
        stream_handle("stream")


# -- foreign arrays -----------------------------------------------------------------------------


def test_device_pointer_from_cuda_array_interface():
    array = FakeCudaArray(0xABC000, (3, 4), "<f2")
    assert device_pointer_and_size(array) == (0xABC000, 3 * 4 * 2)
    assert as_device_pointer(0xDEAD00) == 0xDEAD00
    assert as_device_pointer(driver.CUdeviceptr(0x1200)) == 0x1200


def test_device_pointer_rejects_non_contiguous_arrays():
    transposed = FakeCudaArray(0xABC000, (4, 3), "<f4", strides=(4, 16))
    with pytest.raises(ValueError, match="not C-contiguous"):
        as_device_pointer(transposed)
    # Explicit strides that are the contiguous ones are fine.
    assert as_device_pointer(FakeCudaArray(0x100, (4, 3), "<f4", strides=(12, 4))) == 0x100


def test_contiguity_ignores_strides_of_unit_dimensions():
    assert _is_c_contiguous((1, 8), (999, 4), 4)  # torch gives size-1 dims arbitrary strides
    assert not _is_c_contiguous((2, 8), (64, 4), 4)


def test_dlpack_reading_matches_numpy():
    array = np.arange(24, dtype=np.float32).reshape(4, 6)[1:]
    info = dlpack_tensor_info(array)
    assert info["device_type"] == 1  # kDLCPU
    assert info["data"] == array.ctypes.data
    assert info["shape"] == (3, 6)
    assert info["itemsize"] == 4
    assert info["strides"] in (None, (6, 1))
    strided = dlpack_tensor_info(np.zeros((4, 6), np.int16)[:, ::2])
    assert strided["strides"] == (6, 2) and strided["itemsize"] == 2


def test_host_arrays_are_not_device_pointers():
    with pytest.raises(ValueError, match="not on a CUDA device"):
        as_device_pointer(np.zeros(4, np.float32))
    with pytest.raises(TypeError, match="cannot use list"):
        as_device_pointer([1, 2])
    with pytest.raises(TypeError):
        as_device_pointer(True)


# -- PTX inspection and the cubin cache ---------------------------------------------------------


def test_ptx_entry_params_reads_committed_ptx():
    params = ptx_entry_params(KERNELS_PTX)
    assert params["add_one"] == [8, 4]
    assert params["axpb"] == [8, 8, 4, 8, 8, 4]
    assert params["bump_counter"] == []
    assert ptx_entry_params(PDL_PTX) == {"pdl_primary": [8, 4], "pdl_secondary": [8, 4]}


def test_ptx_entry_params_handles_aligned_byte_arrays():
    ptx = ".visible .entry k(\n\t.param .align 8 .b8 k_param_0[16],\n\t.param .f32 k_param_1\n)\n{}"
    assert ptx_entry_params(ptx) == {"k": [16, 4]}


def test_compile_arch_follows_arch_specific_targets():
    assert ptx_target(KERNELS_PTX) == "sm_80"
    assert compile_arch(KERNELS_PTX, "sm_90") == "sm_90"
    arch_specific = KERNELS_PTX.replace(".target sm_80", ".target sm_90a")
    assert compile_arch(arch_specific, "sm_90") == "sm_90a"
    # sm_90a PTX on another device is left for the compiler to reject.
    assert compile_arch(arch_specific, "sm_100") == "sm_100"


def test_cache_key_depends_on_every_input():
    base = cache_key("ptx", "sm_90", 13000, "nvjitlink-13.5")
    assert base == cache_key("ptx", "sm_90", 13000, "nvjitlink-13.5")
    assert len(base) == 64 and int(base, 16) >= 0
    variants = {
        cache_key("ptx2", "sm_90", 13000, "nvjitlink-13.5"),
        cache_key("ptx", "sm_90a", 13000, "nvjitlink-13.5"),
        cache_key("ptx", "sm_90", 13010, "nvjitlink-13.5"),
        cache_key("ptx", "sm_90", 13000, "nvjitlink-13.6"),
    }
    assert base not in variants and len(variants) == 4
    # Parts are separated: moving a character across a boundary changes the key.
    assert cache_key("ab", "c", 1) != cache_key("a", "bc", 1)


def test_default_cache_dir_follows_env(monkeypatch, tmp_path):
    monkeypatch.setenv(module_module.CACHE_DIR_ENV, str(tmp_path / "cubins"))
    assert default_cache_dir() == tmp_path / "cubins"
    monkeypatch.delenv(module_module.CACHE_DIR_ENV)
    assert default_cache_dir() == Path.home() / ".cache" / "tilesync"


def _elf(body: bytes) -> bytes:
    """A 64-bit ELF image: a header, `body`, one 64-byte section header at the end."""
    header = bytearray(64)
    header[:6] = b"\x7fELF\x02\x01"
    struct.pack_into("<QQ", header, 0x20, 0, 64 + len(body))  # no program headers
    struct.pack_into("<HHHH", header, 0x36, 56, 0, 64, 1)
    return bytes(header) + body + bytes(64)


def test_cubin_cache_round_trip_with_fake_cubin(tmp_path):
    cache = CubinCache(tmp_path / "nested" / "cache")
    key = cache_key("fake ptx", "sm_90", 13000)
    assert cache.load(key) is None
    fake_cubin = _elf(bytes(range(256)) * 4)
    path = cache.store(key, fake_cubin)
    assert path == tmp_path / "nested" / "cache" / f"{key}.cubin"
    assert cache.load(key) == fake_cubin
    assert os.listdir(path.parent) == [path.name]  # no temporary file left behind


def test_cubin_cache_treats_corrupt_file_as_miss(tmp_path):
    cache = CubinCache(tmp_path)
    key = cache_key("ptx", "sm_90", 1)
    cache.path_for(key).write_bytes(b"truncated")
    assert cache.load(key) is None
    whole = _elf(b"code" * 100)
    cache.path_for(key).write_bytes(whole[:-1])  # an ELF cut short: its section table is not
    assert cache.load(key) is None              # all there
    cache.path_for(key).write_bytes(whole)
    assert cache.load(key) == whole


def test_cubin_cache_entry_that_cannot_be_read_is_a_miss(tmp_path):
    cache = CubinCache(tmp_path)
    key = cache_key("ptx", "sm_90", 1)
    cache.path_for(key).mkdir()  # a directory where the cubin should be
    assert cache.load(key) is None
    (tmp_path / "file").write_bytes(b"x")
    assert CubinCache(tmp_path / "file").load(key) is None  # the cache "directory" is a file


def test_write_atomic_replaces_whole_file(tmp_path):
    target = tmp_path / "a.cubin"
    write_atomic(target, b"old")
    write_atomic(target, b"new contents")
    assert target.read_bytes() == b"new contents"
    assert sorted(os.listdir(tmp_path)) == ["a.cubin"]


def test_write_atomic_keeps_old_file_when_interrupted(tmp_path, monkeypatch):
    target = tmp_path / "a.cubin"
    write_atomic(target, b"old")

    def interrupted(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(module_module.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(target, b"new")
    assert target.read_bytes() == b"old"
    assert sorted(os.listdir(tmp_path)) == ["a.cubin"]  # the temporary file was removed


def test_jit_log_buffers_are_passed_by_address():
    # cuModuleLoadDataEx gets log buffers through this helper; the driver writes into them.
    helper = getattr(driver, "_HelperCUjit_option", None)
    if helper is None:
        pytest.skip("cuda.bindings has no _HelperCUjit_option to check against")
    log = bytearray(64)
    option = helper(driver.CUjit_option.CU_JIT_ERROR_LOG_BUFFER, log)
    assert option.cptr == ctypes.addressof((ctypes.c_char * 64).from_buffer(log))


# -- nvJitLink (works without a GPU) ------------------------------------------------------------


def _require_nvjitlink():
    try:
        from cuda.bindings import nvjitlink

        nvjitlink.version()
    except Exception as exc:
        pytest.skip(f"nvJitLink unavailable: {exc}")


def test_compile_ptx_produces_cubin_and_register_report():
    _require_nvjitlink()
    compiled = compile_ptx(KERNELS_PTX, "sm_90", "runtime_kernels")
    assert module_module.is_whole_elf(compiled.cubin)  # what the cubin cache takes
    assert compiled.arch == "sm_90"
    assert "Compiling entry function 'add_one' for 'sm_90'" in compiled.info_log
    assert "registers" in compiled.info_log


def test_compile_ptx_error_carries_ptxas_log():
    _require_nvjitlink()
    bad = KERNELS_PTX.replace("add.f32", "bogus.f32", 1)
    assert bad != KERNELS_PTX
    with pytest.raises(TilesyncRuntimeError) as info:
        compile_ptx(bad, "sm_90", "bad_kernels")
    message = str(info.value)
    assert "compiling PTX 'bad_kernels' for sm_90 failed" in message
    assert "bogus" in message  # from ptxas' error log
    assert info.value.call == "nvJitLinkComplete"


def test_compile_ptx_unknown_arch_is_compiler_unavailable():
    # load_ptx falls back to the driver's JIT on this error (a GPU newer than nvJitLink).
    _require_nvjitlink()
    with pytest.raises(module_module.CompilerUnavailableError) as info:
        compile_ptx(KERNELS_PTX, "sm_9999")
    assert info.value.call == "nvJitLinkCreate"
    assert "sm_9999" in str(info.value)


def test_device_buffer_without_gpu_raises_cleanly(fresh_probe):
    from tilesync.runtime.buffers import DeviceBuffer

    fresh_probe.setenv(device_module.DISABLE_GPU_ENV, "1")
    fresh_probe.setattr(device_module, "_device", None)
    with pytest.raises(NoGPUError):
        DeviceBuffer((4,), np.float32)


def test_compile_ptx_pdl_kernels_need_sm90():
    _require_nvjitlink()
    assert compile_ptx(PDL_PTX, "sm_90").cubin.startswith(b"\x7fELF")
    with pytest.raises(TilesyncRuntimeError):
        compile_ptx(PDL_PTX, "sm_80")  # griddepcontrol does not exist before Hopper


# -- semaphores ---------------------------------------------------------------------------------


class MockBuffer:
    """Records memsets instead of touching a device."""

    def __init__(self, count):
        self.values = np.full(count, -1, np.int32)  # garbage until the semaphores zero it
        self.ptr = 0x5000
        self.memsets = []

    def fill_bytes(self, value):
        self.memsets.append(value)
        self.values[:] = np.frombuffer(bytes([value]) * 4, np.int32)[0]

    def to_numpy(self):
        return self.values.copy()


def test_semaphores_are_zeroed_and_count_epochs():
    buffer = MockBuffer(6)
    semaphores = SemaphoreArray(6, max_posts=4, buffer=buffer)
    assert buffer.memsets == [0]
    assert semaphores.to_numpy().tolist() == [0] * 6
    assert semaphores.ptr == 0x5000
    assert semaphores.epoch == 0
    assert [semaphores.next_epoch() for _ in range(3)] == [1, 2, 3]
    assert semaphores.expected(4) == 12
    assert semaphores.expected(1, epoch=2) == 2
    assert buffer.memsets == [0]  # no memset between launches
    with pytest.raises(ValueError):
        semaphores.expected(5)


def test_semaphore_epoch_guard_stops_before_int32_overflow():
    semaphores = SemaphoreArray(2, max_posts=3, buffer=MockBuffer(2))
    assert semaphores.max_epoch == INT32_MAX // 3
    semaphores.epoch = semaphores.max_epoch - 1
    last = semaphores.next_epoch()
    assert last * 3 <= INT32_MAX
    with pytest.raises(SemaphoreOverflowError, match="reset"):
        semaphores.next_epoch()
    assert semaphores.epoch == last  # unchanged by the refused call
    assert (last + 1) * 3 > INT32_MAX


def test_semaphore_reset_memsets_and_restarts_epochs():
    buffer = MockBuffer(3)
    semaphores = SemaphoreArray(3, max_posts=1 << 30, buffer=buffer)
    assert semaphores.next_epoch() == 1
    with pytest.raises(SemaphoreOverflowError):
        semaphores.next_epoch()  # 2 × 2^30 = 2^31 > INT32_MAX
    buffer.values[:] = 7
    semaphores.reset()
    assert buffer.memsets == [0, 0]
    assert semaphores.to_numpy().tolist() == [0, 0, 0]
    assert semaphores.next_epoch() == 1


def test_semaphore_array_is_a_pointer_argument():
    semaphores = SemaphoreArray(5, buffer=MockBuffer(5))
    assert as_device_pointer(semaphores) == 0x5000
    assert device_pointer_and_size(semaphores) == (0x5000, 20)
    values, types = pack_args(["ptr"], [semaphores])
    assert int(values[0]) == 0x5000 and types == (None,)


def test_semaphore_arguments_are_validated():
    with pytest.raises(ValueError):
        SemaphoreArray(0, buffer=MockBuffer(1))
    with pytest.raises(ValueError):
        SemaphoreArray(1, max_posts=0, buffer=MockBuffer(1))


# -- timing -------------------------------------------------------------------------------------


def test_timing_statistics():
    samples = [float(v) for v in range(1, 11)]
    timing = Timing.from_samples(samples, warmup=3)
    assert timing.reps == 10 and timing.warmup == 3
    assert timing.median_ms == 5.5
    assert timing.mean_ms == 5.5
    assert timing.min_ms == 1.0 and timing.max_ms == 10.0
    assert timing.stdev_ms == pytest.approx(3.0276503540974917)
    assert timing.p10_ms == pytest.approx(1.9)
    assert timing.p90_ms == pytest.approx(9.1)
    data = timing.to_dict()
    assert data["samples_ms"] == samples
    assert data["median_ms"] == 5.5 and data["warmup"] == 3 and data["reps"] == 10
    assert json.loads(json.dumps(data)) == data


def test_timing_single_sample_and_empty():
    timing = Timing.from_samples([0.25], warmup=0)
    assert timing.stdev_ms == 0.0 and timing.p10_ms == 0.25 and timing.median_ms == 0.25
    with pytest.raises(ValueError):
        Timing.from_samples([], warmup=0)


def test_precompiled_ptx_is_stored_under_the_key_load_ptx_looks_up(tmp_path, monkeypatch):
    ptx = ".version 8.0\n.target sm_90a\n.address_size 64\n"
    compiled = []

    def fake_compile(text, arch, name_hint="tilesync", fast=False):
        compiled.append(arch if not fast else f"{arch} fast")
        return module_module.CompiledCubin(_elf(b"cubin for " + arch.encode()), arch, "")

    monkeypatch.setattr(module_module, "compile_ptx", fake_compile)
    monkeypatch.setattr(module_module, "nvjitlink_version", lambda: "nvjitlink-13.0")
    monkeypatch.setattr(driver, "cuDriverGetVersion",
                        lambda: (driver.CUresult.CUDA_SUCCESS, 13000))
    monkeypatch.delenv(module_module.DISK_CACHE_ENV, raising=False)
    assert not module_module.is_precompiled(ptx, "sm_90a", tmp_path)
    assert module_module.precompile_ptx(ptx, "sm_90a", tmp_path)
    assert module_module.is_precompiled(ptx, "sm_90a", tmp_path)
    assert not module_module.is_precompiled(ptx, "sm_90a", tmp_path, fast=True)
    # what _load_uncached computes on an sm_90 device of that driver
    key = cache_key(ptx, module_module.compile_arch(ptx, "sm_90"), 13000, "nvjitlink-13.0")
    assert CubinCache(tmp_path).load(key) == _elf(b"cubin for sm_90a") and compiled == ["sm_90a"]
    assert module_module.precompile_ptx(ptx, "sm_90a", tmp_path) and compiled == ["sm_90a"]
    # ptxas's fast compile is another cubin, under its own key
    assert module_module.precompile_ptx(ptx, "sm_90a", tmp_path, fast=True)
    fast_key = cache_key(ptx, module_module.compile_arch(ptx, "sm_90"), 13000,
                         f"nvjitlink-13.0 {module_module.PTXAS_FAST_COMPILE}")
    assert CubinCache(tmp_path).load(fast_key) is not None and fast_key != key
    assert compiled == ["sm_90a", "sm_90a fast"]
    assert not module_module.precompile_ptx(ptx, "compute_90", tmp_path)  # not a device arch
    monkeypatch.setattr(driver, "cuDriverGetVersion",
                        lambda: (driver.CUresult.CUDA_ERROR_NO_DEVICE, 0))
    assert not module_module.precompile_ptx(ptx.replace("sm_90a", "sm_90"), "sm_90", tmp_path)


def test_a_run_forks_its_other_streams_after_the_epoch_bump(monkeypatch):
    """With the epoch in device memory, the streams a run forks wait for an event recorded
    after the kernel that bumps the epoch: their kernels and wait-kernels compare against this
    run's epoch, never the last one's (they waited on the run's start event before)."""
    from tilesync.analysis.stage_graph import Launch
    from tilesync.runtime import program as program_module

    log: list[tuple] = []

    class FakeEvent:
        count = 0

        def __init__(self):
            FakeEvent.count += 1
            self.id = FakeEvent.count

        def record(self, stream):
            log.append(("record", stream, self.id))
            return self

    class FakeStream:
        def __init__(self, name):
            self.name = name

        def wait_event(self, event):
            log.append(("wait", self.name, event.id))

    monkeypatch.setattr(program_module, "Event", FakeEvent)
    monkeypatch.setattr(program_module, "launch",
                        lambda kernel, grid, block, args, stream, **_: log.append(
                            ("launch", kernel, stream)))
    class Order:
        def begin(self, stream):
            log.append(("after last run", stream.name))

        def end(self, stream, event):
            log.append(("run ended", stream.name, event.id))

    run = program_module.StageProgram.__new__(program_module.StageProgram)
    run.epoch, run.stages, run._order = 0, {}, Order()
    run._checked_arguments = lambda args: {}
    run.steps = [Launch("p", stream=0), Launch("c", stream=1)]
    run.kernels = {program_module.NEXT_EPOCH_KERNEL: "bump"}  # so device_epoch holds
    run._epoch_word = lambda: "epoch word"
    main, other = FakeStream("main"), FakeStream("other")
    run._plan_streams = lambda: (main, [other])
    run._stream = lambda index, priority: other if index else main
    run._launch_step = lambda step, args, stream: log.append(("launch", step.stage, stream))
    end = run.run({})
    assert log[0] == ("after last run", "main") and log[-1] == ("run ended", "main", end.id)
    bump = log.index(("launch", "bump", main))
    (fork,) = [entry for entry in log if entry[:2] == ("wait", "other")]
    recorded = log.index(("record", main, fork[2]))
    assert recorded > bump  # the fork is recorded after the bump on the main stream
    assert log.index(("launch", "c", other)) > log.index(fork)
    assert run.last_start.id < fork[2]  # the run's timing still starts before the bump


def test_a_launch_others_join_is_one_grid_of_all_their_blocks(monkeypatch):
    """cuSync in one launch: the launch of @p that @c joins launches the kernel made of both
    (sync-fuse-launches) once, a one-dimensional grid of both stages' blocks (of the larger
    block's threads), with @p's then
    @c's own arguments and the kernel's roles bound as @p's (its ticket counter is @p's);
    @c's own launch launches nothing."""
    from tilesync.analysis.stage_graph import Launch
    from tilesync.contract import EPOCH, TILE_COUNTER, KernelSignature, Role
    from tilesync.runtime import program as program_module

    launched: list[tuple] = []
    monkeypatch.setattr(program_module, "launch",
                        lambda kernel, grid, block, args, stream, **options: launched.append(
                            (kernel, grid, block, args, stream, options)))
    run = program_module.StageProgram.__new__(program_module.StageProgram)
    sems = Role.semaphores("p")
    run.stages = {"p": program_module.Stage("p", "kp", (2, 3, 1), (128, 1, 1), 6, 1),
                  "c": program_module.Stage("c", "kc", (4, 1, 1), (256, 1, 1), 4, 1)}
    run.signatures = {
        "kp": KernelSignature("m", "kp", ("ptr", "ptr", "i32"), sync_args=(sems, EPOCH)),
        "kc": KernelSignature("m2", "kc", ("ptr", "ptr", "i32"), sync_args=(sems, EPOCH)),
        "p_launch": KernelSignature("m3", "p_launch", ("ptr", "ptr", "ptr", "i32", "ptr"),
                                    sync_args=(sems, EPOCH, TILE_COUNTER),
                                    dynamic_shared_bytes=4096)}
    run.kernels = {"kp": "kp", "kc": "kc", "p_launch": "fused"}
    run.one_launches = {"p": program_module.OneLaunch("p_launch", ("p", "c"))}
    run._bind = lambda role, stage: f"{role}@{stage}"
    run.steps = [Launch("p", pdl=True), Launch("c", fused=True)]
    users = run._checked_arguments({"p": [0x100], "c": [0x200]})
    for step in run.steps:
        run._launch_step(step, users, "stream")
    assert launched == [("fused", (10, 1, 1), (256, 1, 1),  # the larger stage's blocks
                         [0x100, 0x200, "sems:@p@p", "epoch@p", "tile_counter@p"], "stream",
                         {"pdl": True, "shared_mem": 4096})]
    with pytest.raises(ValueError, match="stage @c: kernel kc takes 1 argument"):
        run._checked_arguments({"p": [0x100], "c": []})


def test_a_timed_out_wait_in_one_launch_names_its_stages():
    """A spin that times out in the kernel of a launch several stages joined: the report names
    the launch's stages (its block is a ticket of the launch, not a stage's tile)."""
    from tilesync.contract import DEBUG_RECORD_FIELDS, EPOCH, KernelSignature, Role, kernel_tag
    from tilesync.runtime import program as program_module

    record = dict.fromkeys(DEBUG_RECORD_FIELDS, 0) | {
        "claimed": 1, "complete": 1, "kernel_tag": kernel_tag("p_launch"), "param": 2,
        "index": 1, "expected": 4, "seen": 3, "block_x": 7}

    class Record:
        def read(self):
            return [record[name] for name in DEBUG_RECORD_FIELDS]

    run = program_module.StageProgram.__new__(program_module.StageProgram)
    run._debug_record = Record()
    run.epoch = 6  # runs enqueued after the one that timed out
    run.stages = {"p": program_module.Stage("p", "kp", (2, 3, 1), (128, 1, 1), 6, 1),
                  "c": program_module.Stage("c", "kc", (4, 1, 1), (128, 1, 1), 4, 1)}
    run.signatures = {"p_launch": KernelSignature(
        "m", "p_launch", ("ptr", "ptr", "ptr", "i32"), sync_args=(Role.semaphores("p"), EPOCH))}
    run.one_launches = {"p": program_module.OneLaunch("p_launch", ("p", "c"))}
    text, kernel, block = run.timed_out_wait()
    assert (kernel, block) == ("p_launch", (7, 0, 0))
    assert text.startswith("spin-wait timed out in stage @p, @c (one launch) kernel p_launch, "
                           "block (7, 0, 0): semaphore sems:@p (parameter 2)[1] expected >= 4, "
                           "saw 3 (epoch 4)")


def test_epochs_and_wait_targets_past_int32_are_passed_modulo_2_32():
    """Runs never end: the epoch and a wait-kernel's target (epoch x producer blocks) grow past
    2^31 and are passed as the device counts them, modulo 2^32 (the waits compare modulo 2^32,
    SyncBuilder.short_of), instead of refusing the launch or asking for a reset."""
    from tilesync.contract import EPOCH, WAIT_TARGET
    from tilesync.runtime import program as program_module
    from tilesync.runtime.launch import pack_args

    run = program_module.StageProgram.__new__(program_module.StageProgram)
    run.stages = {"p": program_module.Stage("p", "kp", (384, 1, 1), (128, 1, 1), 48, 1)}
    run.epoch = 5_592_406  # x 384 blocks = 2,147,483,904: past INT32_MAX
    target = run._bind(WAIT_TARGET, "p")
    assert target == 2_147_483_904 - 2**32 and pack_args(["i32"], [target])
    run.epoch = 2**32 + 7
    assert run._bind(EPOCH, "p") == 7
    assert [program_module.as_i32(n) for n in (2**31 - 1, 2**31, 2**32 - 1, 2**32)] == \
        [2**31 - 1, -2**31, -1, 0]

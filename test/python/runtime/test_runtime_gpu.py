"""Runtime tests on a real GPU (marked gpu: skipped where none is present).

Kernels come from Inputs/*.cu compiled with `nvcc -ptx`; results are compared exactly with numpy
on random data, outputs poisoned first so a kernel that writes nothing cannot pass. Device-side
traps run in a subprocess, because a trap leaves the CUDA context unusable.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import numpy as np
import pytest
from cuda.bindings import driver

from tilesync.runtime import (
    DeviceBuffer,
    Event,
    SemaphoreArray,
    Stream,
    TilesyncRuntimeError,
    as_device_pointer,
    check,
    clear_memory_cache,
    elapsed_ms,
    from_numpy,
    get_device,
    launch,
    load_ptx,
    max_coresident_blocks,
    occupancy,
    priority_range,
    stream_wait_event,
    synchronize,
    time_region,
    zeros,
)
from tilesync.runtime.errors import DEVICE_FAULT_ERRORS

pytestmark = pytest.mark.gpu

INPUTS = Path(__file__).parent / "Inputs"
KERNELS_PTX = (INPUTS / "runtime_kernels.ptx").read_text()
PDL_PTX = (INPUTS / "pdl_kernels.ptx").read_text()
BLOCK = 256
POISON = 0xFF  # every float byte 0xFF is a NaN


def unique(ptx: str) -> str:
    """The same PTX under a new text, so no in-process, disk or driver JIT cache has it."""
    return f"{ptx}\n// {uuid.uuid4()}\n"


def blocks_for(n: int) -> int:
    return (n + BLOCK - 1) // BLOCK


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    cache_dir = tmp_path_factory.mktemp("cubins")
    return load_ptx(KERNELS_PTX, "runtime_kernels", cache_dir=cache_dir)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def poisoned(shape, dtype=np.float32) -> DeviceBuffer:
    buffer = DeviceBuffer.empty(shape, dtype)
    buffer.fill_bytes(POISON)
    return buffer


# -- device ---------------------------------------------------------------------------------------


def test_device_properties():
    device = get_device()
    assert device is get_device()
    assert device.name
    assert device.compute_capability >= (7, 0)
    assert device.arch == f"sm_{device.compute_capability[0]}{device.compute_capability[1]}"
    assert device.sm_count > 0
    assert device.max_threads_per_block == 1024
    assert (
        device.max_shared_memory_per_block_optin >= device.max_shared_memory_per_block >= 48 * 1024
    )
    assert device.l2_cache_bytes > 0
    assert device.total_memory_bytes > 1 << 30
    assert device.driver_version >= 12000
    info = device.to_dict()
    assert info["name"] == device.name and info["sm_count"] == device.sm_count


# -- modules --------------------------------------------------------------------------------------


def test_add_one_exact_on_random_data(kernels, rng):
    n = 100_003  # not a multiple of the block: the tail must be guarded
    host = rng.standard_normal(n).astype(np.float32)
    x = from_numpy(host)
    add_one = kernels.function("add_one", ["ptr", "i32"])
    launch(add_one, blocks_for(n), BLOCK, [x, n])
    synchronize()
    np.testing.assert_array_equal(x.to_numpy(), host + np.float32(1))


def test_every_argument_kind_reaches_the_kernel(kernels, rng):
    n = 5_000
    x_host = rng.standard_normal(n).astype(np.float32)
    x = from_numpy(x_host)
    out = poisoned(n + 64)  # 64 extra elements the kernel must not touch
    a, b, offset = 1.75, 0.1, -3
    axpb = kernels.function("axpb", ["ptr", "ptr", "f32", "f64", "i64", "i32"])
    launch(axpb, blocks_for(n), BLOCK, [out, x, a, b, n, offset])
    synchronize()
    result = out.to_numpy()
    product = (x_host * np.float32(a)).astype(np.float64)
    expected = (product + b).astype(np.float32) + np.float32(offset)
    np.testing.assert_array_equal(result[:n], expected)
    assert result[n:].view(np.uint32).tolist() == [0xFFFFFFFF] * 64


def test_kernel_attributes_and_info_log():
    module = load_ptx(unique(KERNELS_PTX), "runtime_kernels_jit", disk_cache=False)
    assert module.source == "driver-jit"
    assert "registers" in module.info_log.lower()  # CU_JIT_LOG_VERBOSE reports them
    add_one = module.function("add_one")
    assert 0 < add_one.num_regs <= 255
    assert add_one.shared_size_bytes == 0
    assert add_one.local_size_bytes == 0
    assert add_one.max_threads_per_block == 1024
    assert add_one.attributes()["num_regs"] == add_one.num_regs


def test_compiled_module_reports_registers_of_its_kernels(tmp_path):
    module = load_ptx(unique(KERNELS_PTX), "runtime_kernels_nvjitlink", cache_dir=tmp_path)
    assert module.source == "compiled"
    add_one = module.function("add_one")
    assert f"{add_one.num_regs} registers" in module.info_log.lower()


def test_bad_ptx_error_carries_jit_error_log(tmp_path):
    bad = unique(KERNELS_PTX.replace("add.f32", "bogus.f32", 1))
    with pytest.raises(TilesyncRuntimeError) as info:
        load_ptx(bad, "bad_driver_jit", disk_cache=False)
    assert info.value.error_name == "CUDA_ERROR_INVALID_PTX"
    assert "JIT error log" in str(info.value) and "bogus" in str(info.value)
    with pytest.raises(TilesyncRuntimeError) as info:
        load_ptx(bad, "bad_nvjitlink", cache_dir=tmp_path)
    assert "bogus" in str(info.value)
    assert list(tmp_path.iterdir()) == []  # nothing cached for a failed compile


def test_unknown_kernel_and_wrong_signature(kernels):
    with pytest.raises(TilesyncRuntimeError, match=r"kernels in module 'runtime_kernels'.*add_one"):
        kernels.function("no_such_kernel")
    with pytest.raises(ValueError, match="does not match its PTX parameters"):
        kernels.function("add_one", ["ptr", "i64"])


def test_disk_cache_hit_in_fresh_cache_dir(tmp_path, rng):
    ptx = unique(KERNELS_PTX)
    cache_dir = tmp_path / "fresh"
    first = load_ptx(ptx, "cached", cache_dir=cache_dir)
    assert first.source == "compiled"
    assert first.cubin_path is not None and first.cubin_path.parent == cache_dir
    assert first.cubin_path.read_bytes().startswith(b"\x7fELF")
    assert load_ptx(ptx, "cached", cache_dir=cache_dir) is first  # in-process cache
    clear_memory_cache()
    second = load_ptx(ptx, "cached", cache_dir=cache_dir)
    assert second is not first
    assert second.source == "disk-cache"
    assert second.cubin_path == first.cubin_path
    assert [p.name for p in cache_dir.iterdir()] == [first.cubin_path.name]
    # The module loaded from disk runs.
    host = rng.standard_normal(1000).astype(np.float32)
    x = from_numpy(host)
    launch(second.function("add_one", ["ptr", "i32"]), blocks_for(1000), BLOCK, [x, 1000])
    synchronize()
    np.testing.assert_array_equal(x.to_numpy(), host + np.float32(1))


def test_module_global(kernels):
    counter = kernels.global_ptr("launch_counter")
    assert counter.nbytes == 4 and counter.ptr != 0
    check(driver.cuMemsetD8(counter.ptr, 0, 4), "cuMemsetD8")  # the module may be reused
    bump = kernels.function("bump_counter", [])
    for _ in range(5):
        launch(bump, 3, 32, [])
    synchronize()
    value = np.zeros(1, np.int32)
    check(driver.cuMemcpyDtoH(value.ctypes.data, counter.ptr, 4), "cuMemcpyDtoH")
    assert value[0] == 15  # one increment per block per launch


# -- device-side traps (subprocess: a trap poisons the context) -----------------------------------

TRAP_SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np
    from tilesync.runtime import TilesyncRuntimeError, launch, load_ptx, synchronize, zeros

    ptx_path, kernel_name = sys.argv[1], sys.argv[2]
    module = load_ptx(open(ptx_path).read(), "trap", disk_cache=False)
    flag = zeros(1, np.int32)  # never set: the spin-wait gives up
    if kernel_name == "spin_wait_or_trap":
        launch(module.function(kernel_name, ["ptr", "i32"]), 1, 32, [flag, 1000])
    else:
        launch(module.function(kernel_name, ["ptr"]), 1, 32, [0])
    try:
        synchronize()
    except TilesyncRuntimeError as exc:
        print("ERROR_NAME", exc.error_name)
        print("MESSAGE", exc)
        sys.exit(0)
    print("NO ERROR")
    sys.exit(1)
    """
)


@pytest.mark.parametrize("kernel_name", ["spin_wait_or_trap", "trap_now"])
def test_device_trap_raises_named_error(kernel_name, tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", TRAP_SCRIPT, str(INPUTS / "runtime_kernels.ptx"), kernel_name],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines() if " " in line)
    assert lines["ERROR_NAME"] in DEVICE_FAULT_ERRORS
    assert lines["ERROR_NAME"] in lines["MESSAGE"]
    assert "device-side trap" in lines["MESSAGE"]
    assert "cuCtxSynchronize" in lines["MESSAGE"]


# -- buffers --------------------------------------------------------------------------------------


def test_buffer_zeros_fill_and_device_copy(rng):
    buffer = zeros((3, 5), np.int32)
    assert buffer.shape == (3, 5) and buffer.nbytes == 60 and buffer.ptr != 0
    assert buffer.to_numpy().tolist() == [[0] * 5] * 3
    buffer.fill_bytes(1)
    assert (buffer.to_numpy() == 0x01010101).all()
    host = rng.integers(-1000, 1000, (3, 5)).astype(np.int32)
    copy = poisoned((3, 5), np.int32)
    copy.copy_from(from_numpy(host))
    np.testing.assert_array_equal(copy.to_numpy(), host)
    with pytest.raises(ValueError, match="size mismatch"):
        copy.copy_from(np.zeros(4, np.int32))
    empty = DeviceBuffer.empty(0)
    assert empty.to_numpy().shape == (0,)


def test_writes_have_landed_when_they_return():
    """A 1 GiB memset or pageable copy takes far longer than the driver call that enqueues
    it; our runs' non-blocking streams are not ordered after the legacy stream, so the
    buffer's writes must be finished (the legacy stream idle) when they return."""
    big = DeviceBuffer.empty(1 << 30, np.uint8)
    host = np.full(1 << 30, 7, np.uint8)
    for write in (lambda: big.fill_bytes(0xFF), lambda: big.copy_from(host),
                  lambda: big.copy_from(from_numpy(host))):
        write()
        assert driver.cuStreamQuery(driver.CUstream(0))[0] == \
            driver.CUresult.CUDA_SUCCESS


def test_cuda_array_interface_describes_buffer():
    buffer = zeros((4, 2), np.float16)
    interface = buffer.__cuda_array_interface__
    assert interface["version"] == 3
    assert interface["data"] == (buffer.ptr, False)
    assert interface["shape"] == (4, 2) and interface["typestr"] == "<f2"
    assert as_device_pointer(buffer) == buffer.ptr


def test_torch_round_trip(kernels, rng):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    host = rng.standard_normal(4096).astype(np.float32)
    buffer = from_numpy(host)
    view = torch.as_tensor(buffer, device="cuda")  # through __cuda_array_interface__
    assert view.data_ptr() == buffer.ptr
    np.testing.assert_array_equal(view.cpu().numpy(), host)

    tensor = torch.from_numpy(host).cuda()
    assert as_device_pointer(tensor) == tensor.data_ptr()
    add_one = kernels.function("add_one", ["ptr", "i32"])
    launch(add_one, blocks_for(4096), BLOCK, [tensor, 4096])
    synchronize()
    np.testing.assert_array_equal(tensor.cpu().numpy(), host + np.float32(1))

    class OnlyDLPack:
        def __init__(self, wrapped):
            self.wrapped = wrapped

        def __dlpack__(self, **kwargs):
            return self.wrapped.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.wrapped.__dlpack_device__()

    offset_view = tensor[8:]
    assert as_device_pointer(OnlyDLPack(offset_view)) == offset_view.data_ptr()
    with pytest.raises(ValueError, match="not C-contiguous"):
        as_device_pointer(tensor.view(64, 64).t())


def test_cupy_round_trip(rng):
    cupy = pytest.importorskip("cupy")
    host = rng.standard_normal(1024).astype(np.float32)
    buffer = from_numpy(host)
    view = cupy.asarray(buffer)
    assert view.data.ptr == buffer.ptr
    np.testing.assert_array_equal(cupy.asnumpy(view), host)
    array = cupy.asarray(host)
    assert as_device_pointer(array) == array.data.ptr


# -- streams, events, launches --------------------------------------------------------------------


def test_stream_priorities(kernels, rng):
    least, greatest = priority_range()
    assert greatest <= least
    assert Stream().priority == least
    high = Stream(greatest)
    assert high.priority == greatest
    with pytest.raises(ValueError, match="outside the device's range"):
        Stream(least + 1)
    host = rng.standard_normal(2048).astype(np.float32)
    x = from_numpy(host)
    launch(kernels.function("add_one", ["ptr", "i32"]), blocks_for(2048), BLOCK, [x, 2048], high)
    high.synchronize()
    np.testing.assert_array_equal(x.to_numpy(), host + np.float32(1))


def test_event_orders_two_streams(kernels, rng):
    n = 1 << 20
    host = rng.standard_normal(n).astype(np.float32)
    x = from_numpy(host)
    add_one = kernels.function("add_one", ["ptr", "i32"])
    first, second = Stream(), Stream()
    for _ in range(3):
        launch(add_one, blocks_for(n), BLOCK, [x, n], first)
    done = Event(timing=False).record(first)
    stream_wait_event(second, done)
    launch(add_one, blocks_for(n), BLOCK, [x, n], second)
    second.synchronize()
    expected = host.copy()
    for _ in range(4):
        expected += np.float32(1)
    np.testing.assert_array_equal(x.to_numpy(), expected)


def test_pdl_launch_is_correct(tmp_path):
    device = get_device()
    if device.compute_capability < (9, 0):
        pytest.skip("programmatic dependent launch needs sm_90")
    module = load_ptx(PDL_PTX, "pdl_kernels", cache_dir=tmp_path)
    primary = module.function("pdl_primary", ["ptr", "i32"])
    secondary = module.function("pdl_secondary", ["ptr", "i32"])
    n = 1 << 22
    host = np.random.default_rng(7).standard_normal(n).astype(np.float32)
    x = from_numpy(host)
    stream = Stream()
    expected = host.copy()
    for _ in range(3):
        launch(primary, blocks_for(n), BLOCK, [x, n], stream)
        launch(secondary, blocks_for(n), BLOCK, [x, n], stream, pdl=True)
        expected = (expected + np.float32(1)) * np.float32(2)
    stream.synchronize()
    np.testing.assert_array_equal(x.to_numpy(), expected)


def test_dynamic_shared_memory_above_48k(kernels, rng):
    device = get_device()
    smem = 100 * 1024
    if device.max_shared_memory_per_block_optin < smem:
        pytest.skip(f"{device.name} allows only {device.max_shared_memory_per_block_optin} B")
    n = 10_000
    host = rng.standard_normal(n).astype(np.float32)
    x = from_numpy(host)
    kernel = kernels.function("smem_plus_one", ["ptr", "i32", "i32"])
    launch(kernel, blocks_for(n), BLOCK, [x, n, smem // 4], shared_mem=smem)
    synchronize()
    np.testing.assert_array_equal(x.to_numpy(), host + np.float32(1))
    assert kernel.max_dynamic_shared_size_bytes >= smem


def test_occupancy_and_cooperative_launch(kernels, rng):
    device = get_device()
    add_one = kernels.function("add_one", ["ptr", "i32"])
    per_sm = occupancy(add_one, BLOCK, 0)
    assert 1 <= per_sm <= 2048 // BLOCK
    grid = max_coresident_blocks(add_one, BLOCK)
    assert grid == per_sm * device.sm_count
    if not device.cooperative_launch:
        pytest.skip("device does not support cooperative launches")
    n = grid * BLOCK
    host = rng.standard_normal(n).astype(np.float32)
    x = from_numpy(host)
    launch(add_one, grid, BLOCK, [x, n], cooperative=True)
    synchronize()
    np.testing.assert_array_equal(x.to_numpy(), host + np.float32(1))
    with pytest.raises(TilesyncRuntimeError) as info:
        launch(add_one, grid + 1, BLOCK, [x, n], cooperative=True)
    assert info.value.error_name == "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE"
    synchronize()  # the refused launch left the context usable


def test_events_time_a_kernel(kernels, rng):
    n = 1 << 24
    x = zeros(n)
    add_one = kernels.function("add_one", ["ptr", "i32"])
    stream = Stream()
    start, end = Event(), Event()
    start.record(stream)
    launch(add_one, blocks_for(n), BLOCK, [x, n], stream)
    end.record(stream)
    assert elapsed_ms(start, end) > 0
    assert end.query()

    calls = []

    def region():
        calls.append(1)
        launch(add_one, blocks_for(n), BLOCK, [x, n], stream)

    timing = time_region(region, stream, warmup=2, reps=5)
    assert len(calls) == 7 and timing.reps == 5 and timing.warmup == 2
    assert len(timing.samples_ms) == 5 and timing.min_ms > 0
    assert timing.min_ms <= timing.median_ms <= timing.max_ms
    assert (x.to_numpy() == np.float32(8)).all()  # 1 + 2 warm-up + 5 timed launches


# -- semaphores -----------------------------------------------------------------------------------


def test_semaphores_zeroed_and_relaunch_safe(kernels):
    count, posts = 1000, 3
    semaphores = SemaphoreArray(count, max_posts=posts)
    assert semaphores.to_numpy().tolist() == [0] * count
    post_all = kernels.function("post_all", ["ptr", "i32", "i32"])
    check_ready = kernels.function("check_ready", ["ptr", "i32", "ptr", "i32"])
    ready = DeviceBuffer.empty(count, np.int32)
    stream = Stream()
    for launch_number in (1, 2, 3):
        epoch = semaphores.next_epoch()
        assert epoch == launch_number
        launch(post_all, blocks_for(count), BLOCK, [semaphores, count, posts], stream)
        stream.synchronize()
        assert semaphores.to_numpy().tolist() == [epoch * posts] * count
        # This epoch's waits succeed without a memset in between; the next epoch's do not yet.
        for expected, answer in (
            (semaphores.expected(posts), 1),
            (semaphores.expected(posts) + 1, 0),
        ):
            ready.fill_bytes(POISON)
            launch(
                check_ready, blocks_for(count), BLOCK, [semaphores, expected, ready, count], stream
            )
            stream.synchronize()
            assert ready.to_numpy().tolist() == [answer] * count
    semaphores.reset()
    assert semaphores.epoch == 0
    assert semaphores.to_numpy().tolist() == [0] * count


HALF_SCALARS = """
gpu.module @halves {
  gpu.func @store_halves(%h: memref<4xf16>, %x: f16, %b: memref<4xbf16>, %y: bf16) kernel {
    %i = gpu.thread_id x
    memref.store %x, %h[%i] : memref<4xf16>
    memref.store %y, %b[%i] : memref<4xbf16>
    gpu.return
  }
}
"""


def test_half_precision_scalar_parameters_launch():
    """f16 and bf16 scalars: the kinds the compiler reports are ones the runtime packs."""
    import tilesync

    program = tilesync.compile(HALF_SCALARS)
    sig = program.kernels["store_halves"]
    assert sig.params == ("ptr", "f16", "ptr", "bf16")
    kernel = load_ptx(program.ptx, "halves").function(sig.name, sig.params)
    h, b = poisoned(4, np.float16), poisoned(4, np.uint16)
    launch(kernel, 1, 4, [h, -1.5, b, 3.25])
    synchronize()
    assert h.to_numpy().tolist() == [-1.5] * 4
    bf16 = b.to_numpy().astype(np.uint32) << 16
    assert bf16.view(np.float32).tolist() == [3.25] * 4

"""PreparedLaunch without a GPU: the `void**` array it hands the driver holds, at each
parameter, the bytes of the value that pack_args would pack, and a Kernel keeps one prepared
launch per configuration. (The launches themselves run in the GPU tests.)"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from cuda.bindings import driver

from tilesync.contract import PARAM_KINDS
from tilesync.runtime.buffers import DeviceBuffer
from tilesync.runtime.launch import LAUNCHES_KEPT, PreparedLaunch, prepared
from tilesync.runtime.module import Kernel


def _kernel(signature, name="k"):
    return Kernel(driver.CUfunction(), name, None, tuple(signature))  # type: ignore[arg-type]


def _read(launch: PreparedLaunch, position: int, ctype) -> object:
    """The value the driver reads for parameter `position`, as `ctype`."""
    address = ctypes.c_void_p.from_address(launch.params + position * ctypes.sizeof(
        ctypes.c_void_p)).value
    return ctype.from_address(address).value


def test_each_parameter_holds_the_bytes_of_its_value():
    signature = ["ptr", "ptr", "i32", "u32", "i64", "f32", "f64", "f16", "bf16", "i8"]
    launch = PreparedLaunch(_kernel(signature), (3, 2), 128)
    tensor_like = type("FakeCudaArray", (), {"__cuda_array_interface__": {
        "shape": (4,), "typestr": "<f4", "data": (0x7F00_0000_2000, False), "strides": None,
        "version": 3}})()
    launch.fill([0x7F00_0000_1000, tensor_like, -7, 7, 1 << 40, 2.5, 0.25, 1.0, 1.0, -3])
    assert _read(launch, 0, ctypes.c_uint64) == 0x7F00_0000_1000
    assert _read(launch, 1, ctypes.c_uint64) == 0x7F00_0000_2000
    assert _read(launch, 2, ctypes.c_int32) == -7
    assert _read(launch, 3, ctypes.c_uint32) == 7
    assert _read(launch, 4, ctypes.c_int64) == 1 << 40
    assert _read(launch, 5, ctypes.c_float) == 2.5
    assert _read(launch, 6, ctypes.c_double) == 0.25
    assert _read(launch, 7, ctypes.c_uint16) == int(np.float16(1.0).view(np.uint16))  # 0x3C00
    assert _read(launch, 8, ctypes.c_uint16) == 0x3F80  # bf16 1.0
    assert _read(launch, 9, ctypes.c_int8) == -3
    launch.fill([0x10, 0x20, 1, 2, 3, 4.0, 5.0, 0.5, 2.0, 0])  # a second call overwrites
    assert [_read(launch, i, ctypes.c_uint64) for i in (0, 1)] == [0x10, 0x20]
    assert _read(launch, 2, ctypes.c_int32) == 1
    assert _read(launch, 8, ctypes.c_uint16) == 0x4000  # bf16 2.0


def test_a_tensor_map_parameter_points_at_the_map_itself():
    launch = PreparedLaunch(_kernel(["tmap", "ptr"]), 1, 32)
    first, second = driver.CUtensorMap(), driver.CUtensorMap()
    launch.fill([first, 0x1000])
    pointer = ctypes.c_void_p.from_address(launch.params).value
    assert pointer == first.getPtr()  # the driver copies its 128 bytes at the launch
    launch.fill([second, 0x1000])
    assert ctypes.c_void_p.from_address(launch.params).value == second.getPtr()
    with pytest.raises(TypeError, match=r"argument 0 \(tmap\)"):
        launch.fill([0x1000, 0x1000])


def test_a_device_buffer_is_passed_by_its_address():
    buffer = DeviceBuffer.__new__(DeviceBuffer)  # no allocation: only its address is read
    buffer._handle, buffer.ptr, buffer.nbytes = None, 0x7F00_0000_4000, 16  # nothing to free
    launch = PreparedLaunch(_kernel(["ptr"]), 1, 1)
    launch.fill([buffer])
    assert _read(launch, 0, ctypes.c_uint64) == 0x7F00_0000_4000


@pytest.mark.parametrize(("kind", "value", "error"), [
    ("i32", 1 << 31, OverflowError), ("u32", -1, OverflowError), ("i8", 128, OverflowError),
    ("i32", 1.0, TypeError), ("ptr", -1, ValueError), ("ptr", True, TypeError),
])
def test_a_value_that_would_be_corrupted_is_refused(kind, value, error):
    launch = PreparedLaunch(_kernel(["ptr", kind]), 1, 1)
    with pytest.raises(error, match=rf"argument 1 \({kind}\)"):
        launch.fill([0x1000, value])


def test_the_argument_count_and_the_configuration_are_checked():
    launch = PreparedLaunch(_kernel(["ptr", "i32"]), 1, 1)
    with pytest.raises(ValueError, match="1 argument"):
        launch.fill([0x1000])
    with pytest.raises(ValueError, match="grid dimensions must be positive"):
        PreparedLaunch(_kernel(["ptr"]), (0, 1), 1)
    with pytest.raises(ValueError, match="negative shared memory"):
        PreparedLaunch(_kernel(["ptr"]), 1, 1, shared_mem=-1)
    with pytest.raises(ValueError, match="no signature"):
        PreparedLaunch(Kernel(driver.CUfunction(), "bare", None), 1, 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown parameter kind"):
        PreparedLaunch(_kernel(["ptr"]), 1, 1, signature=["pointer"])


def test_every_parameter_kind_has_a_slot():
    launch = PreparedLaunch(_kernel(list(PARAM_KINDS)), 1, 1)
    args = [0x1000 if k == "ptr" else driver.CUtensorMap() if k == "tmap" else
            1 if k[0] in "iu" else 1.0 for k in PARAM_KINDS]
    launch.fill(args)
    helper = getattr(driver, "_HelperKernelParams", None)
    if helper is not None:
        helper(launch.params)  # cuda-bindings takes the array's address as it is


def test_a_kernel_keeps_one_prepared_launch_per_configuration():
    kernel = _kernel(["ptr"])
    first = prepared(kernel, (4, 1), 128, pdl=True)
    assert prepared(kernel, [4, 1], 128, pdl=True) is first  # a list grid: the same key
    assert prepared(kernel, (4, 1), 128) is not first
    assert prepared(kernel, (4, 1), 128, pdl=True, cooperative=True) is not first
    for grid in range(1, LAUNCHES_KEPT + 2):
        prepared(kernel, grid, 1)
    assert len(kernel.launches) == LAUNCHES_KEPT  # the oldest dropped first
    assert prepared(kernel, (4, 1), 128, pdl=True) is not first
    bare = driver.CUfunction()  # no place to keep one: built for each launch
    assert prepared(bare, 1, 1, signature=["ptr"]) is not prepared(bare, 1, 1,
                                                                   signature=["ptr"])

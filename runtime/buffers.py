"""Device memory: DeviceBuffer, and device pointers out of foreign arrays (torch, CuPy).

Writes here (copies in, fills) have finished when they return: they go through the legacy
default stream, which our runs' non-blocking streams do not wait for, and a memset or a
pageable host-to-device copy may still be in flight when the driver call returns. So a buffer
filled with `from_numpy` or `fill_bytes` is ready for any stream; `to_numpy` returns final data
once the kernels writing it have been synchronized (and no kernel may still use a buffer that
is being written).
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from tilesync.runtime.device import get_device
from tilesync.runtime.errors import check

Shape = tuple[int, ...]


def _finish_legacy_stream() -> None:
    """Wait for the legacy default stream: the memsets and copies issued on it may return
    before they land, and non-blocking streams (every run's) are not ordered after them."""
    from cuda.bindings import driver

    check(driver.cuStreamSynchronize(driver.CUstream(0)), "cuStreamSynchronize")


def _normalize_shape(shape: int | Sequence[int]) -> Shape:
    dims = (shape,) if isinstance(shape, int | np.integer) else tuple(shape)
    dims = tuple(int(d) for d in dims)
    if any(d < 0 for d in dims):
        raise ValueError(f"negative dimension in shape {dims}")
    return dims


class DeviceBuffer:
    """A cuMemAlloc'ed array: `ptr` (int), `nbytes`, `dtype`, `shape`. Freed on close()/GC."""

    def __init__(self, shape: int | Sequence[int], dtype: Any = np.float32):
        from cuda.bindings import driver

        self._handle: Any = None  # set first: __del__ runs even if allocation fails
        self.ptr = 0
        self.shape: Shape = _normalize_shape(shape)
        self.dtype = np.dtype(dtype)
        self.nbytes = math.prod(self.shape) * self.dtype.itemsize
        self._device = get_device()
        # cuMemAlloc of 0 bytes fails; an empty buffer keeps ptr 0 and is never dereferenced.
        if self.nbytes > 0:
            self._handle = check(driver.cuMemAlloc(self.nbytes), f"cuMemAlloc({self.nbytes})")
        self.ptr = int(self._handle) if self._handle is not None else 0

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def empty(cls, shape: int | Sequence[int], dtype: Any = np.float32) -> DeviceBuffer:
        return cls(shape, dtype)

    @classmethod
    def zeros(cls, shape: int | Sequence[int], dtype: Any = np.float32) -> DeviceBuffer:
        buffer = cls(shape, dtype)
        buffer.fill_bytes(0)
        return buffer

    @classmethod
    def from_numpy(cls, array: np.ndarray) -> DeviceBuffer:
        host = np.ascontiguousarray(array)
        buffer = cls(host.shape, host.dtype)
        buffer.copy_from(host)
        return buffer

    # -- data movement -----------------------------------------------------------------------

    def copy_from(self, source: Any) -> None:
        """Copy a numpy array (host → device) or another device array (device → device)."""
        from cuda.bindings import driver

        if isinstance(source, np.ndarray):
            host = np.ascontiguousarray(source)
            self._check_same_size(host.nbytes, "numpy array")
            if self.nbytes:
                # Pass the host address as an int: cuda-bindings would read a 0-d array's
                # value as an address.
                check(driver.cuMemcpyHtoD(self.ptr, host.ctypes.data, self.nbytes), "cuMemcpyHtoD")
                _finish_legacy_stream()
            return
        source_ptr, source_nbytes = device_pointer_and_size(source)
        self._check_same_size(source_nbytes, type(source).__name__)
        if self.nbytes:
            check(driver.cuMemcpyDtoD(self.ptr, source_ptr, self.nbytes), "cuMemcpyDtoD")
            _finish_legacy_stream()

    def to_numpy(self) -> np.ndarray:
        from cuda.bindings import driver

        host = np.empty(self.shape, self.dtype)
        if self.nbytes:
            check(driver.cuMemcpyDtoH(host.ctypes.data, self.ptr, self.nbytes), "cuMemcpyDtoH")
        return host

    def fill_bytes(self, value: int) -> None:
        """Set every byte to `value` (cuMemsetD8, waited for): 0 zeroes, 0xFF poisons floats
        with NaN."""
        from cuda.bindings import driver

        if not 0 <= value <= 0xFF:
            raise ValueError(f"byte value out of range: {value}")
        if self.nbytes:
            check(driver.cuMemsetD8(self.ptr, value, self.nbytes), "cuMemsetD8")
            _finish_legacy_stream()

    def _check_same_size(self, nbytes: int, what: str) -> None:
        if nbytes != self.nbytes:
            raise ValueError(f"size mismatch: buffer has {self.nbytes} bytes, {what} {nbytes}")

    # -- interop -----------------------------------------------------------------------------

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self.ptr, False),
            "strides": None,  # C-contiguous
            "version": 3,
            # Copies here are synchronous; ordering against kernels is the caller's streams'.
            "stream": None,
        }

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def close(self) -> None:
        """Free the memory now (also done when the buffer is garbage collected)."""
        handle, self._handle = getattr(self, "_handle", None), None
        if handle is None:
            return
        from cuda.bindings import driver

        self.ptr = 0
        try:
            driver.cuMemFree(handle)
        except Exception:  # interpreter shutdown: the driver may be gone already
            pass

    def __del__(self) -> None:
        try:
            self.close()
        except ImportError:  # interpreter shutdown: nothing can be imported any more
            pass

    def __repr__(self) -> str:
        return f"DeviceBuffer(shape={self.shape}, dtype={self.dtype}, ptr=0x{self.ptr:x})"


def empty(shape: int | Sequence[int], dtype: Any = np.float32) -> DeviceBuffer:
    return DeviceBuffer.empty(shape, dtype)


def zeros(shape: int | Sequence[int], dtype: Any = np.float32) -> DeviceBuffer:
    return DeviceBuffer.zeros(shape, dtype)


def from_numpy(array: np.ndarray) -> DeviceBuffer:
    return DeviceBuffer.from_numpy(array)


# ---------------------------------------------------------------------------------------------
# Foreign arrays


def _contiguous_strides(shape: Sequence[int], itemsize: int) -> tuple[int, ...]:
    strides = []
    step = itemsize
    for dim in reversed(shape):
        strides.append(step)
        step *= max(int(dim), 1)
    return tuple(reversed(strides))


def _is_c_contiguous(shape: Sequence[int], strides: Sequence[int] | None, itemsize: int) -> bool:
    if strides is None:
        return True
    # Dimensions of extent 1 may carry any stride (torch does that).
    expected = _contiguous_strides(shape, itemsize)
    return all(d == 1 or s == e for d, s, e in zip(shape, strides, expected))


def _from_cuda_array_interface(interface: dict[str, Any]) -> tuple[int, int]:
    shape = tuple(interface["shape"])
    itemsize = np.dtype(interface["typestr"]).itemsize
    if not _is_c_contiguous(shape, interface.get("strides"), itemsize):
        raise ValueError(
            f"array is not C-contiguous (shape {shape}, strides {interface.get('strides')}); "
            "make a contiguous copy first"
        )
    ptr = int(interface["data"][0] or 0)
    return ptr, math.prod(shape) * itemsize


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi)
)

# DLPack device types whose memory a CUDA kernel can address.
DLPACK_CUDA_DEVICES = {2: "CUDA", 3: "CUDA host (pinned)", 13: "CUDA managed"}


def dlpack_tensor_info(obj: Any) -> dict[str, Any]:
    """Read the DLTensor behind `obj.__dlpack__()` (unversioned capsule) without consuming it.

    Returns device_type, device_id, data (with byte_offset applied), shape, strides (in
    elements, or None), itemsize. The capsule's deleter runs when it is collected; the memory
    stays owned by `obj`.
    """
    capsule = obj.__dlpack__()
    address = _capsule_pointer(capsule, b"dltensor")
    # DLManagedTensor starts with its DLTensor.
    tensor = _DLTensor.from_address(address)
    ndim = tensor.ndim
    shape = tuple(tensor.shape[i] for i in range(ndim))
    strides = tuple(tensor.strides[i] for i in range(ndim)) if tensor.strides else None
    info = {
        "device_type": tensor.device.device_type,
        "device_id": tensor.device.device_id,
        "data": (tensor.data or 0) + tensor.byte_offset,
        "shape": shape,
        "strides": strides,
        "itemsize": tensor.dtype.bits * tensor.dtype.lanes // 8,
    }
    del capsule  # runs the producer's deleter (its reference to the data)
    return info


def _from_dlpack(obj: Any) -> tuple[int, int]:
    info = dlpack_tensor_info(obj)
    if info["device_type"] not in DLPACK_CUDA_DEVICES:
        raise ValueError(
            f"{type(obj).__name__} lives on DLPack device type {info['device_type']}, "
            "not on a CUDA device"
        )
    shape, itemsize = info["shape"], info["itemsize"]
    strides = info["strides"]
    byte_strides = None if strides is None else tuple(s * itemsize for s in strides)
    if not _is_c_contiguous(shape, byte_strides, itemsize):
        raise ValueError(f"array is not C-contiguous (shape {shape}, strides {strides})")
    return info["data"], math.prod(shape) * itemsize


def device_pointer_and_size(obj: Any) -> tuple[int, int | None]:
    """(device address, size in bytes or None if unknown) of a device array or address."""
    if isinstance(obj, DeviceBuffer):
        return obj.ptr, obj.nbytes
    if isinstance(obj, bool):
        raise TypeError("a bool is not a device pointer")
    if isinstance(obj, int | np.integer):
        if obj < 0:
            raise ValueError(f"negative device pointer {obj}")
        return int(obj), None
    interface = getattr(obj, "__cuda_array_interface__", None)
    if interface is not None:
        return _from_cuda_array_interface(interface)
    if hasattr(obj, "__dlpack__"):
        return _from_dlpack(obj)
    # cuda.bindings' CUdeviceptr converts to int.
    if type(obj).__name__ == "CUdeviceptr":
        return int(obj), None
    raise TypeError(
        f"cannot use {type(obj).__name__} as a device pointer: expected a DeviceBuffer, an int, "
        "or an array with __cuda_array_interface__ or __dlpack__ (torch.cuda tensor, CuPy array)"
    )


def as_device_pointer(obj: Any) -> int:
    """The device address of a DeviceBuffer, an int, or a contiguous foreign CUDA array."""
    return device_pointer_and_size(obj)[0]


__all__ = [
    "DeviceBuffer",
    "HostMappedBuffer",
    "as_device_pointer",
    "device_pointer_and_size",
    "dlpack_tensor_info",
    "empty",
    "from_numpy",
    "zeros",
]


class HostMappedBuffer:
    """Pinned host memory the device writes through a mapped pointer (cuMemHostAlloc DEVICEMAP).

    It stays readable from the host after a device-side trap, when device memory no longer is:
    spin-wait timeouts record what they waited for here before trapping.
    """

    def __init__(self, count: int, dtype: Any = np.int32):
        from cuda.bindings import driver

        get_device()
        self.dtype = np.dtype(dtype)
        self.count = count
        self.nbytes = count * self.dtype.itemsize
        self._host = 0
        flags = driver.CU_MEMHOSTALLOC_DEVICEMAP | driver.CU_MEMHOSTALLOC_PORTABLE
        self._host = int(check(driver.cuMemHostAlloc(self.nbytes, flags), "cuMemHostAlloc"))
        ctypes.memset(self._host, 0, self.nbytes)
        self.ptr = int(check(driver.cuMemHostGetDevicePointer(self._host, 0),
                             "cuMemHostGetDevicePointer"))

    def read(self) -> np.ndarray:
        raw = (ctypes.c_char * self.nbytes).from_address(self._host)
        return np.frombuffer(bytes(raw), dtype=self.dtype).copy()

    def clear(self) -> None:
        ctypes.memset(self._host, 0, self.nbytes)

    def close(self) -> None:
        if self._host:
            from cuda.bindings import driver

            driver.cuMemFreeHost(self._host)
            self._host = 0

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: the context may already be gone
            pass

"""Kernel launches: argument packing, plain launches, PDL and cooperative launches.

Nothing here synchronizes: errors raised inside a kernel (a trap from a timed-out spin-wait)
surface at the next `synchronize`, which names the CUDA error and says a device-side trap or
fault happened.
"""

from __future__ import annotations

import ctypes
import operator
import threading
from collections.abc import Sequence
from typing import Any

from tilesync.contract import PARAM_KINDS, STATIC_SHARED_LIMIT, TENSOR_MAP
from tilesync.runtime.buffers import as_device_pointer
from tilesync.runtime.errors import TilesyncRuntimeError, check

# How each parameter kind of the contract travels to cuLaunchKernel: its ctypes type (None: a
# cuda-bindings object passed by its address, a device pointer's 8 bytes or a tensor map's
# 128). Half-precision floats travel as their 16 bits.
_CTYPES: dict[str, Any] = {
    "ptr": None, "i8": ctypes.c_int8, "i16": ctypes.c_int16, "i32": ctypes.c_int32,
    "u32": ctypes.c_uint32, "i64": ctypes.c_longlong, "u64": ctypes.c_ulonglong,
    "f16": ctypes.c_uint16, "bf16": ctypes.c_uint16, "f32": ctypes.c_float,
    "f64": ctypes.c_double, TENSOR_MAP: None,
}
assert set(_CTYPES) == set(PARAM_KINDS), "every parameter kind needs a ctypes type"


def _half_bits(kind: str, value: float) -> int:
    """The 16 bits of `value` as f16 or bf16 (round to nearest even)."""
    import numpy as np

    if kind == "f16":
        return int(np.asarray(value, np.float16).view(np.uint16))
    bits = int(np.asarray(value, np.float32).view(np.uint32))
    if (bits & 0x7F800000) == 0x7F800000 and bits & 0x007FFFFF:  # NaN stays a quiet NaN
        return (bits >> 16) | 0x0040
    return (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 & 0xFFFF


Dim3 = tuple[int, int, int]


def check_signature(
    signature: Sequence[str], param_bytes: Sequence[int] | None, kernel_name: str
) -> None:
    """Raise ValueError if a kind is unknown or the sizes disagree with the PTX's `.param`s."""
    unknown = [kind for kind in signature if kind not in PARAM_KINDS]
    if unknown:
        raise ValueError(f"unknown parameter kind(s) {unknown}; known: {sorted(PARAM_KINDS)}")
    if param_bytes is None:
        return
    sizes = [PARAM_KINDS[kind].size for kind in signature]
    if sizes != list(param_bytes):
        raise ValueError(
            f"signature {list(signature)} of '{kernel_name}' does not match its PTX parameters "
            f"(sizes {sizes} vs {list(param_bytes)} bytes)"
        )


def checked_argument(kind: str, value: Any, position: int) -> Any:
    """One argument as its parameter holds it: a device address (int), a CUtensorMap, a
    half's 16 bits, a range-checked integer or a float. Raises naming the argument."""
    from cuda.bindings import driver

    if kind not in PARAM_KINDS:
        raise ValueError(f"unknown parameter kind {kind!r}; known: {sorted(PARAM_KINDS)}")
    bounds = PARAM_KINDS[kind].int_range
    try:
        if kind == "ptr":
            return as_device_pointer(value)
        if kind == TENSOR_MAP:
            if not isinstance(value, driver.CUtensorMap):
                raise TypeError(f"a tensor map parameter takes a CUtensorMap, got "
                                f"{type(value).__name__}")
            return value
        if kind in ("f16", "bf16"):
            return _half_bits(kind, float(value))
        if bounds is not None:
            if isinstance(value, float):
                raise TypeError(f"a float for integer kind {kind}")
            integer = operator.index(value)
            low, high = bounds
            if not low <= integer <= high:
                raise OverflowError(f"{integer} does not fit in {kind}")
            return integer
        return float(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise type(exc)(f"argument {position} ({kind}): {exc}") from exc


def pack_args(
    signature: Sequence[str], args: Sequence[Any]
) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """Build the `((values...), (ctypes...))` that cuLaunchKernel takes.

    A 'ptr' becomes a CUdeviceptr with ctype None (cuda-bindings passes its address); it accepts
    a DeviceBuffer, an int, or a torch/CuPy array. A 'tmap' is a CUtensorMap
    (runtime/tensor_map.py), whose 128 bytes the launch copies. Integers are range-checked, so
    a value that would wrap raises instead of corrupting an index on the device.
    """
    from cuda.bindings import driver

    if len(signature) != len(args):
        raise ValueError(f"{len(args)} argument(s) for a signature of {len(signature)}")
    values = [checked_argument(kind, value, position)
              for position, (kind, value) in enumerate(zip(signature, args))]
    values = [driver.CUdeviceptr(v) if kind == "ptr" else v
              for kind, v in zip(signature, values)]
    return tuple(values), tuple(_CTYPES[kind] for kind in signature)


def dim3(value: int | Sequence[int], what: str) -> Dim3:
    dims = (value,) if isinstance(value, int) else tuple(value)
    if not 1 <= len(dims) <= 3:
        raise ValueError(f"{what} needs 1 to 3 dimensions, got {dims}")
    dims = tuple(int(d) for d in dims) + (1,) * (3 - len(dims))
    if any(d <= 0 for d in dims):
        raise ValueError(f"{what} dimensions must be positive, got {dims}")
    return dims  # type: ignore[return-value]


def stream_handle(stream: Any) -> Any:
    """A CUstream out of None (legacy default stream), a tilesync Stream, a CUstream, an int,
    or a foreign stream (`__cuda_stream__` protocol, torch's `cuda_stream`, CuPy's `ptr`)."""
    from cuda.bindings import driver

    if stream is None:
        return driver.CUstream(0)
    if isinstance(stream, driver.CUstream):
        return stream
    handle = getattr(stream, "handle", None)
    if isinstance(handle, driver.CUstream):
        return handle
    if hasattr(stream, "__cuda_stream__"):
        return driver.CUstream(int(stream.__cuda_stream__()[1]))
    for attribute in ("cuda_stream", "ptr"):
        raw = getattr(stream, attribute, None)
        if isinstance(raw, int):
            return driver.CUstream(raw)
    if isinstance(stream, int):
        return driver.CUstream(stream)
    raise TypeError(f"cannot use {type(stream).__name__} as a CUDA stream")


def _launch_attributes(pdl: bool, cooperative: bool,
                       l2_window: tuple[int, int, float] | None = None) -> list[Any]:
    from cuda.bindings import driver

    attributes = []
    if l2_window is not None:
        base, nbytes, hit_ratio = l2_window
        attribute = driver.CUlaunchAttribute()
        attribute.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW
        window = attribute.value.accessPolicyWindow
        window.base_ptr = base
        window.num_bytes = nbytes
        window.hitRatio = hit_ratio
        window.hitProp = driver.CUaccessProperty.CU_ACCESS_PROPERTY_PERSISTING
        window.missProp = driver.CUaccessProperty.CU_ACCESS_PROPERTY_STREAMING
        attributes.append(attribute)
    if pdl:
        attribute = driver.CUlaunchAttribute()
        attribute.id = (
            driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
        )
        attribute.value.programmaticStreamSerializationAllowed = 1
        attributes.append(attribute)
    if cooperative:
        attribute = driver.CUlaunchAttribute()
        attribute.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_COOPERATIVE
        attribute.value.cooperative = 1
        attributes.append(attribute)
    return attributes


def checked_user_args(stage: str, sig: Any, args: Any) -> list[Any]:
    """A stage's own kernel arguments from `args` (stage name -> arguments), checked against
    its kernel's parameters (a KernelSignature's user_params)."""
    user = list(args.get(stage, ()))
    if len(user) != len(sig.user_params):
        raise ValueError(f"stage @{stage}: kernel {sig.name} takes {len(sig.user_params)} "
                         f"argument(s) ({', '.join(sig.user_params)}), got {len(user)}")
    return user


class PreparedLaunch:
    """A launch of one kernel with a fixed configuration, built once and issued many times.

    The grid, block, dynamic shared memory and launch attributes (PDL, cooperative, an L2
    access-policy window) go into one CUlaunchConfig; the parameters live in ctypes slots whose
    addresses form the `void**` array the driver reads (a tensor map's entry points at its
    CUtensorMap). A call writes the argument values into the slots, sets the stream and issues
    one cuLaunchKernelEx: no per-launch Python objects beyond the arguments, which is what a
    piece called from a model's forward pays on every call. The driver copies the parameters
    when the launch is enqueued, so the slots are free again when the call returns; a lock
    keeps two threads from filling them at once.
    """

    def __init__(self, kernel: Any, grid: int | Sequence[int], block: int | Sequence[int],
                 signature: Sequence[str] | None = None, shared_mem: int = 0, pdl: bool = False,
                 cooperative: bool = False,
                 l2_window: tuple[int, int, float] | None = None) -> None:
        from cuda.bindings import driver

        kinds = tuple(signature) if signature is not None else getattr(kernel, "signature",
                                                                        None)
        if kinds is None:
            raise ValueError(
                f"no signature for kernel '{getattr(kernel, 'name', kernel)}': pass "
                "signature=[...] or Module.function(name, signature=[...])"
            )
        name = getattr(kernel, "name", "kernel")
        check_signature(kinds, getattr(kernel, "param_bytes", None) if signature is not None
                        else None, name)
        grid_dims, block_dims = dim3(grid, "grid"), dim3(block, "block")
        if shared_mem < 0:
            raise ValueError(f"negative shared memory size {shared_mem}")
        ensure = getattr(kernel, "ensure_dynamic_shared_memory", None)
        if shared_mem > 0 and ensure is not None:
            ensure(shared_mem)  # static + dynamic beyond 48 KiB needs the kernel's opt-in
        elif shared_mem > STATIC_SHARED_LIMIT:
            raise ValueError("more than 48 KiB of dynamic shared memory needs a tilesync Kernel")
        self.kinds = kinds
        self._function = getattr(kernel, "handle", kernel)
        self._slots = [None if kind == TENSOR_MAP else _SLOT_TYPES[kind]() for kind in kinds]
        self._addresses = (ctypes.c_void_p * max(1, len(kinds)))(
            *[None if slot is None else ctypes.addressof(slot) for slot in self._slots])
        self._params = ctypes.addressof(self._addresses)
        self._held: list[Any] = [None] * len(kinds)  # the tensor maps the array points into
        self._attributes = _launch_attributes(pdl, cooperative, l2_window)
        config = driver.CUlaunchConfig()
        config.gridDimX, config.gridDimY, config.gridDimZ = grid_dims
        config.blockDimX, config.blockDimY, config.blockDimZ = block_dims
        config.sharedMemBytes = shared_mem
        config.attrs = self._attributes
        config.numAttrs = len(self._attributes)
        self._config = config
        self._stream: Any = object()  # what config.hStream was last set from
        self._lock = threading.Lock()
        self.where = (f"cuLaunchKernelEx (launch of '{name}' grid={grid_dims} "
                      f"block={block_dims} shared_mem={shared_mem}, pdl={pdl}, "
                      f"cooperative={cooperative}, l2_window={l2_window is not None})")

    @property
    def params(self) -> int:
        """The address of the `void**` parameter array the driver reads."""
        return self._params

    def fill(self, args: Sequence[Any]) -> None:
        """Write `args`, one value per parameter (as pack_args takes them), into the slots."""
        kinds = self.kinds
        if len(args) != len(kinds):
            raise ValueError(f"{len(args)} argument(s) for a signature of {len(kinds)}")
        for position, (kind, slot, value) in enumerate(zip(kinds, self._slots, args)):
            if kind == "ptr" and type(value) is int and value >= 0:
                slot.value = value  # a torch tensor's data_ptr(): the common case
            elif slot is not None:
                slot.value = checked_argument(kind, value, position)
            else:
                self._held[position] = checked_argument(kind, value, position)
                self._addresses[position] = value.getPtr()

    def __call__(self, args: Sequence[Any], stream: Any = None) -> None:
        """Enqueue the kernel on `stream` (as stream_handle takes it) with `args`."""
        from cuda.bindings import driver

        with self._lock:
            self.fill(args)
            same = stream is self._stream or (type(stream) is int and stream == self._stream)
            if not same:
                self._config.hStream = stream_handle(stream)
                self._stream = stream
            check(driver.cuLaunchKernelEx(self._config, self._function, self._params, 0),
                  self.where)


_SLOT_TYPES: dict[str, Any] = {**_CTYPES, "ptr": ctypes.c_uint64, "f16": ctypes.c_uint16,
                               "bf16": ctypes.c_uint16}
"""The ctypes slot a PreparedLaunch keeps each parameter kind in (a tensor map: none, its
CUtensorMap's own bytes)."""

LAUNCHES_KEPT = 64
"""Prepared launches a Kernel keeps, one per configuration it was launched with."""


def prepared(kernel: Any, grid: int | Sequence[int], block: int | Sequence[int],
             signature: Sequence[str] | None = None, shared_mem: int = 0, pdl: bool = False,
             cooperative: bool = False,
             l2_window: tuple[int, int, float] | None = None) -> PreparedLaunch:
    """The PreparedLaunch of `kernel` in this configuration: kept on a tilesync Kernel (its
    `launches`, at most LAUNCHES_KEPT, the oldest dropped first), built anew for a bare
    CUfunction."""
    key = (grid if isinstance(grid, int) else tuple(grid),
           block if isinstance(block, int) else tuple(block),
           None if signature is None else tuple(signature), shared_mem, pdl, cooperative,
           l2_window)
    kept = getattr(kernel, "launches", None)
    found = None if kept is None else kept.get(key)
    if found is None:
        found = PreparedLaunch(kernel, grid, block, signature, shared_mem, pdl, cooperative,
                               l2_window)
        if kept is not None:
            if len(kept) >= LAUNCHES_KEPT:
                del kept[next(iter(kept))]
            kept[key] = found
    return found


def launch(
    kernel: Any,
    grid: int | Sequence[int],
    block: int | Sequence[int],
    args: Sequence[Any],
    stream: Any = None,
    shared_mem: int = 0,
    pdl: bool = False,
    cooperative: bool = False,
    signature: Sequence[str] | None = None,
    l2_window: tuple[int, int, float] | None = None,
) -> None:
    """Launch `kernel` (a Kernel from Module.function) asynchronously on `stream`.

    `signature` (or `kernel.signature`) lists the parameter kinds (tilesync.contract.PARAM_KINDS:
    ptr, i8, i16, i32, u32, i64, u64, f16, bf16, f32, f64, tmap). pdl=True lets the kernel start
    while the previous kernel on the stream still runs (it must `griddepcontrol.wait` before
    reading that kernel's output); cooperative=True guarantees all blocks are co-resident (or
    fails with COOPERATIVE_LAUNCH_TOO_LARGE). `l2_window` = (base, bytes, hit ratio): an
    access-policy window that keeps that memory persisting in L2 (dataflow queues). The
    launch is prepared once per configuration (`prepared`).
    """
    prepared(kernel, grid, block, signature, shared_mem, pdl, cooperative, l2_window)(
        args, stream)


def synchronize(stream: Any = None) -> None:
    """Wait for `stream` (or the whole device if None). A device-side trap, such as a
    spin-wait timeout, raises TilesyncRuntimeError naming the CUDA error."""
    from cuda.bindings import driver

    if stream is None:
        from tilesync.runtime.device import synchronize as device_synchronize

        device_synchronize()
        return
    check(driver.cuStreamSynchronize(stream_handle(stream)), "cuStreamSynchronize")


__all__ = [
    "PARAM_KINDS",
    "PreparedLaunch",
    "TilesyncRuntimeError",
    "check_signature",
    "checked_argument",
    "checked_user_args",
    "dim3",
    "launch",
    "pack_args",
    "prepared",
    "stream_handle",
    "synchronize",
]

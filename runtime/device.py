"""GPU detection, the device and its primary context, and the occupancy query."""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass, field
from typing import Any

from tilesync.contract import env_flag
from tilesync.runtime.errors import NoGPUError, TilesyncRuntimeError, check

# Set to 1 to make tilesync behave as if no GPU were present (CPU-only test runs on GPU hosts).
DISABLE_GPU_ENV = "TILESYNC_DISABLE_GPU"


@functools.lru_cache(maxsize=1)
def _probe() -> tuple[bool, str]:
    if env_flag(DISABLE_GPU_ENV):
        return False, f"{DISABLE_GPU_ENV} is set"
    try:
        from cuda.bindings import driver
    except Exception as exc:  # cuda-bindings not installed or broken
        return False, f"cuda.bindings.driver cannot be imported: {exc}"
    try:
        # Without a driver, cuda.pathfinder raises DynamicLibNotFoundError here.
        (result,) = driver.cuInit(0)
        if result != driver.CUresult.CUDA_SUCCESS:
            return False, f"cuInit failed: {getattr(result, 'name', result)}"
        result, count = driver.cuDeviceGetCount()
        if result != driver.CUresult.CUDA_SUCCESS:
            return False, f"cuDeviceGetCount failed: {getattr(result, 'name', result)}"
        if count == 0:
            return False, "the NVIDIA driver is loaded but reports no CUDA device"
        result, name = driver.cuDeviceGetName(256, driver.CUdevice(0))
        label = name.split(b"\0", 1)[0].decode(errors="replace") if result == 0 else "device 0"
        return True, f"{count} CUDA device(s), device 0: {label}"
    except Exception as exc:
        return False, f"no NVIDIA driver: {type(exc).__name__}: {exc}"


def gpu_available() -> tuple[bool, str]:
    """(True, description) if a CUDA device can be used, else (False, reason). Never raises."""
    try:
        return _probe()
    except Exception as exc:  # pragma: no cover - _probe already catches everything
        return False, f"GPU detection failed: {exc}"


def require_gpu() -> None:
    available, reason = gpu_available()
    if not available:
        raise NoGPUError(reason)


def _attribute(device: Any, name: str) -> int | None:
    """A device attribute by enum name, or None where this driver/device does not report it."""
    from cuda.bindings import driver

    attrib = getattr(driver.CUdevice_attribute, name, None)
    if attrib is None:
        return None
    result, value = driver.cuDeviceGetAttribute(attrib, device)
    if result != driver.CUresult.CUDA_SUCCESS:
        return None
    return int(value)


@dataclass
class Device:
    """Device `ordinal` with its primary context retained and made current."""

    ordinal: int = 0
    name: str = field(init=False)
    compute_capability: tuple[int, int] = field(init=False)
    sm_count: int = field(init=False)
    max_threads_per_block: int = field(init=False)
    max_shared_memory_per_block: int = field(init=False)
    max_shared_memory_per_block_optin: int = field(init=False)
    l2_cache_bytes: int = field(init=False)
    total_memory_bytes: int = field(init=False)
    clock_rate_khz: int | None = field(init=False)
    memory_clock_rate_khz: int | None = field(init=False)
    cooperative_launch: bool = field(init=False)
    driver_version: int = field(init=False)

    def __post_init__(self) -> None:
        require_gpu()
        from cuda.bindings import driver

        check(driver.cuInit(0), "cuInit")
        self.handle = check(driver.cuDeviceGet(self.ordinal), "cuDeviceGet")
        self.context = check(
            driver.cuDevicePrimaryCtxRetain(self.handle), "cuDevicePrimaryCtxRetain"
        )
        self.make_current()
        raw_name = check(driver.cuDeviceGetName(256, self.handle), "cuDeviceGetName")
        self.name = raw_name.split(b"\0", 1)[0].decode(errors="replace")

        def attr(name: str) -> int | None:
            return _attribute(self.handle, f"CU_DEVICE_ATTRIBUTE_{name}")

        self.compute_capability = (
            attr("COMPUTE_CAPABILITY_MAJOR") or 0,
            attr("COMPUTE_CAPABILITY_MINOR") or 0,
        )
        self.sm_count = attr("MULTIPROCESSOR_COUNT") or 0
        self.max_threads_per_block = attr("MAX_THREADS_PER_BLOCK") or 0
        self.max_shared_memory_per_block = attr("MAX_SHARED_MEMORY_PER_BLOCK") or 0
        self.max_shared_memory_per_block_optin = (
            attr("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN") or self.max_shared_memory_per_block
        )
        self.l2_cache_bytes = attr("L2_CACHE_SIZE") or 0
        self.total_memory_bytes = int(
            check(driver.cuDeviceTotalMem(self.handle), "cuDeviceTotalMem")
        )
        # Clock rates are deprecated attributes in CUDA 13 and may be missing: None then.
        self.clock_rate_khz = attr("CLOCK_RATE")
        self.memory_clock_rate_khz = attr("MEMORY_CLOCK_RATE")
        self.cooperative_launch = bool(attr("COOPERATIVE_LAUNCH"))
        self.driver_version = int(check(driver.cuDriverGetVersion(), "cuDriverGetVersion"))

    def make_current(self) -> None:
        """Make the primary context current in the calling thread (contexts are per thread;
        torch and CuPy use the same primary context, so this does not fight them)."""
        from cuda.bindings import driver

        check(driver.cuCtxSetCurrent(self.context), "cuCtxSetCurrent")

    @property
    def arch(self) -> str:
        """The ptxas/nvJitLink target, e.g. 'sm_90'."""
        major, minor = self.compute_capability
        return f"sm_{major}{minor}"

    def synchronize(self) -> None:
        """Wait for all work in the context; device-side traps surface here."""
        from cuda.bindings import driver

        self.make_current()
        check(driver.cuCtxSynchronize(), "cuCtxSynchronize")

    def to_dict(self) -> dict[str, Any]:
        """What a benchmark report records about the machine."""
        return {
            "name": self.name,
            "ordinal": self.ordinal,
            "compute_capability": f"{self.compute_capability[0]}.{self.compute_capability[1]}",
            "sm_count": self.sm_count,
            "max_threads_per_block": self.max_threads_per_block,
            "max_shared_memory_per_block_optin": self.max_shared_memory_per_block_optin,
            "l2_cache_bytes": self.l2_cache_bytes,
            "total_memory_bytes": self.total_memory_bytes,
            "clock_rate_khz": self.clock_rate_khz,
            "memory_clock_rate_khz": self.memory_clock_rate_khz,
            "driver_version": self.driver_version,
        }


_device_lock = threading.Lock()
_device: Device | None = None


def get_device() -> Device:
    """The process-wide Device 0, created on first use; its context is current in this thread."""
    global _device
    with _device_lock:
        if _device is None:
            _device = Device(0)
    _device.make_current()
    return _device


def synchronize() -> None:
    """Wait for all work on the device; raises TilesyncRuntimeError on a device-side fault."""
    get_device().synchronize()


def occupancy(function: Any, block_threads: int, dynamic_smem: int = 0) -> int:
    """Blocks of `function` (a Kernel or CUfunction) that fit on one SM at once."""
    from cuda.bindings import driver

    get_device()
    handle = getattr(function, "handle", function)
    if block_threads <= 0:
        raise ValueError(f"block_threads must be positive, got {block_threads}")
    blocks = check(
        driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(handle, block_threads, dynamic_smem),
        "cuOccupancyMaxActiveBlocksPerMultiprocessor",
    )
    return int(blocks)


def max_coresident_blocks(function: Any, block_threads: int, dynamic_smem: int = 0) -> int:
    """SMs × blocks per SM: the largest grid whose blocks can all run at the same time."""
    return get_device().sm_count * occupancy(function, block_threads, dynamic_smem)


def max_active_clusters(function: Any, cluster_blocks: int, block_threads: int,
                        dynamic_smem: int = 0) -> int:
    """Clusters of `cluster_blocks` blocks of `function` (its cluster shape compiled in) that
    can run at once on the device: a persistent grid of clusters must not be larger, or its
    last clusters wait for a whole wave (clusters of two take the SM pairs of a TPC)."""
    from cuda.bindings import driver

    get_device()
    handle = getattr(function, "handle", function)
    config = driver.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = cluster_blocks, 1, 1
    config.blockDimX, config.blockDimY, config.blockDimZ = block_threads, 1, 1
    config.sharedMemBytes = dynamic_smem
    return int(check(driver.cuOccupancyMaxActiveClusters(handle, config),
                     "cuOccupancyMaxActiveClusters"))


__all__ = [
    "DISABLE_GPU_ENV",
    "Device",
    "TilesyncRuntimeError",
    "get_device",
    "gpu_available",
    "max_active_clusters",
    "max_coresident_blocks",
    "occupancy",
    "require_gpu",
    "synchronize",
]

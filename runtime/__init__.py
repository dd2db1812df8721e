"""tilesync's runtime on cuda-python's driver API: device, modules, buffers, streams, launches,
semaphores and timing. Importing it needs no GPU; using it raises NoGPUError without one."""

from tilesync.runtime.buffers import (
    DeviceBuffer,
    as_device_pointer,
    device_pointer_and_size,
    empty,
    from_numpy,
    zeros,
)
from tilesync.runtime.device import (
    Device,
    get_device,
    gpu_available,
    max_coresident_blocks,
    occupancy,
    require_gpu,
)
from tilesync.runtime.errors import NoGPUError, TilesyncRuntimeError, check
from tilesync.runtime.launch import PARAM_KINDS, launch, pack_args, synchronize
from tilesync.runtime.module import (
    CubinCache,
    DeviceGlobal,
    Kernel,
    Module,
    cache_key,
    clear_memory_cache,
    compile_ptx,
    load_ptx,
)
from tilesync.runtime.semaphores import SemaphoreArray, SemaphoreOverflowError
from tilesync.runtime.stream import Event, Stream, elapsed_ms, priority_range, stream_wait_event
from tilesync.runtime.timing import Timing, time_region

__all__ = [
    "PARAM_KINDS",
    "CubinCache",
    "Device",
    "DeviceBuffer",
    "DeviceGlobal",
    "Event",
    "Kernel",
    "Module",
    "NoGPUError",
    "SemaphoreArray",
    "SemaphoreOverflowError",
    "Stream",
    "TilesyncRuntimeError",
    "Timing",
    "as_device_pointer",
    "cache_key",
    "check",
    "clear_memory_cache",
    "compile_ptx",
    "device_pointer_and_size",
    "elapsed_ms",
    "empty",
    "from_numpy",
    "get_device",
    "gpu_available",
    "launch",
    "load_ptx",
    "max_coresident_blocks",
    "occupancy",
    "pack_args",
    "priority_range",
    "require_gpu",
    "stream_wait_event",
    "synchronize",
    "time_region",
    "zeros",
]

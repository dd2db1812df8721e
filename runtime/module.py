"""Load PTX into the device: nvJitLink → cubin (cached on disk), or the driver's JIT.

The first load of a few kernels through the driver's JIT costs ~100 ms (measured on an H200), so
compiled cubins are kept on disk, keyed by the PTX, the target and the driver version, and loaded
modules are kept in memory (the same PTX gives the same Module).
"""

from __future__ import annotations

import hashlib
import os
import re
import struct
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from tilesync.runtime.device import get_device
from tilesync.runtime.errors import TilesyncRuntimeError, check, describe_result, error_message

CACHE_DIR_ENV = "TILESYNC_CACHE_DIR"
# Set to 0 to skip nvJitLink and the disk cache and let the driver JIT the PTX at every load.
DISK_CACHE_ENV = "TILESYNC_DISK_CACHE"
JIT_LOG_BYTES = 1 << 16

# Load errors after which a cubin from a newer nvJitLink is retried as PTX through the driver.
_CUBIN_REJECTED = frozenset(
    {
        "CUDA_ERROR_NO_BINARY_FOR_GPU",
        "CUDA_ERROR_INVALID_IMAGE",
        "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
        "CUDA_ERROR_INVALID_SOURCE",
    }
)


# ---------------------------------------------------------------------------------------------
# PTX inspection


def ptx_target(ptx: str) -> str | None:
    """The first `.target` of a PTX text, e.g. 'sm_90a', or None."""
    match = re.search(r"^\s*\.target\s+([\w]+)", ptx, re.MULTILINE)
    return match.group(1) if match else None


_ENTRY = re.compile(r"\.entry\s+([\w$.]+)\s*\(([^)]*)\)", re.DOTALL)
_PARAM = re.compile(r"\.param\s+(?:\.align\s+\d+\s+)?\.(\w+)\s+[\w$.]+\s*(\[\s*\d+\s*\])?")
_PTX_TYPE_BYTES = {"8": 1, "16": 2, "32": 4, "64": 8}


def ptx_param_bytes(ptx_type: str, array: str | None = None) -> int:
    """Size in bytes of one `.param` of PTX type like 'u64' (or 'b8' with array '[16]')."""
    size = _PTX_TYPE_BYTES.get(ptx_type[1:], 0)
    if array:
        size *= int(array.strip("[] "))
    return size


def ptx_entry_params(ptx: str) -> dict[str, list[int]]:
    """Parameter sizes in bytes of every kernel (`.entry`) in a PTX text, in order."""
    entries: dict[str, list[int]] = {}
    for match in _ENTRY.finditer(ptx):
        params = [ptx_param_bytes(t, a or None) for t, a in _PARAM.findall(match.group(2))]
        entries[match.group(1)] = params
    return entries


def compile_arch(ptx: str, device_arch: str) -> str:
    """The nvJitLink -arch for `ptx` on a device of `device_arch` ('sm_90').

    Arch-specific PTX (`.target sm_90a`, using wgmma/setmaxnreg) must be compiled for exactly
    that arch; portable PTX is compiled for the device.
    """
    target = ptx_target(ptx)
    if target and target[-1] in "af" and target[:-1] == device_arch:
        return target
    return device_arch


# ---------------------------------------------------------------------------------------------
# Disk cache


def cache_key(ptx: str, arch: str, driver_version: int, compiler: str = "") -> str:
    """sha256 over everything that changes the cubin: PTX, target, driver and compiler versions."""
    digest = hashlib.sha256()
    for part in (ptx, arch, str(driver_version), compiler):
        digest.update(part.encode())
        digest.update(b"\0")  # separator: ("ab", "c") and ("a", "bc") must differ
    return digest.hexdigest()


def default_cache_dir() -> Path:
    configured = os.environ.get(CACHE_DIR_ENV)
    if configured:
        return Path(configured).expanduser()
    return Path("~/.cache/tilesync").expanduser()


def write_atomic(path: Path, data: bytes) -> None:
    """Write `data` so that readers see the old file or the whole new one, never a part.

    The temporary file lives in the same directory, so os.replace is a rename on one filesystem.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as tmp:
            tmp.write(data)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.replace(tmp_name, path)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        raise


def is_whole_elf(data: bytes) -> bool:
    """Whether `data` is a 64-bit little-endian ELF image whose section and program header
    tables lie inside it (a cubin cut short by a full disk or a crash fails that)."""
    if len(data) < 64 or not data.startswith(b"\x7fELF\x02\x01"):
        return False
    phoff, shoff = struct.unpack_from("<QQ", data, 0x20)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", data, 0x36)
    return phoff + phentsize * phnum <= len(data) and shoff + shentsize * shnum <= len(data) \
        and shnum > 0


class CubinCache:
    """Compiled cubins on disk: `<directory>/<key>.cubin`."""

    def __init__(self, directory: Path | str | None = None):
        self.directory = Path(directory) if directory is not None else default_cache_dir()

    def path_for(self, key: str) -> Path:
        return self.directory / f"{key}.cubin"

    def load(self, key: str) -> bytes | None:
        try:
            data = self.path_for(key).read_bytes()
        except OSError:  # absent, a directory, unreadable: a miss (the cubin is compiled)
            return None
        # A truncated or foreign file is a miss, not an error: it gets rewritten.
        return data if is_whole_elf(data) else None

    def store(self, key: str, cubin: bytes) -> Path:
        path = self.path_for(key)
        write_atomic(path, cubin)
        return path


# ---------------------------------------------------------------------------------------------
# Compilation with nvJitLink (no GPU needed)


@dataclass
class CompiledCubin:
    cubin: bytes
    arch: str
    info_log: str


def nvjitlink_version() -> str:
    from cuda.bindings import nvjitlink

    major, minor = nvjitlink.version()
    return f"nvjitlink-{major}.{minor}"


def _nvjitlink_log(nvjitlink: Any, handle: int, kind: str) -> str:
    size = getattr(nvjitlink, f"get_{kind}_log_size")(handle)
    if size <= 1:
        return ""
    buffer = bytearray(size)
    getattr(nvjitlink, f"get_{kind}_log")(handle, buffer)
    return bytes(buffer).split(b"\0", 1)[0].decode(errors="replace")


class CompilerUnavailableError(TilesyncRuntimeError):
    """nvJitLink cannot be used here (library missing, or it does not know the arch)."""


PTXAS_FAST_COMPILE = "--Ofast-compile=min"
"""ptxas's lightest fast-compile level, for the code `fast=True` loads or precompiles: it skips
some of ptxas's most expensive optimizations."""


def _compiler(fast: bool) -> str:
    """What compiles a cubin, for its cache key: nvJitLink's version and ptxas's options."""
    return nvjitlink_version() + (f" {PTXAS_FAST_COMPILE}" if fast else "")


def compile_ptx(ptx: str, arch: str, name_hint: str = "tilesync",
                fast: bool = False) -> CompiledCubin:
    """PTX → cubin for `arch` ('sm_90') with nvJitLink (`fast`: ptxas at PTXAS_FAST_COMPILE);
    raises with ptxas' error log."""
    try:
        from cuda.bindings import nvjitlink

        options = [f"-arch={arch}", "-verbose",
                   *([f"-Xptxas={PTXAS_FAST_COMPILE}"] if fast else [])]
        handle = nvjitlink.create(len(options), options)
    except Exception as exc:  # missing libnvJitLink, or ERROR_UNRECOGNIZED_ARCH
        raise CompilerUnavailableError(
            f"nvJitLink cannot compile for {arch}: {type(exc).__name__}: {exc}",
            error_name=str(exc),
            call="nvJitLinkCreate",
        ) from exc
    try:
        data = ptx.encode()
        try:
            nvjitlink.add_data(handle, nvjitlink.InputType.PTX, data, len(data), name_hint)
            nvjitlink.complete(handle)
        except nvjitlink.nvJitLinkError as exc:
            log = _nvjitlink_log(nvjitlink, handle, "error")
            raise TilesyncRuntimeError(
                f"compiling PTX '{name_hint}' for {arch} failed ({exc}):\n{log}",
                error_name=str(exc),
                call="nvJitLinkComplete",
            ) from exc
        size = nvjitlink.get_linked_cubin_size(handle)
        cubin = bytearray(size)
        nvjitlink.get_linked_cubin(handle, cubin)
        return CompiledCubin(bytes(cubin), arch, _nvjitlink_log(nvjitlink, handle, "info"))
    finally:
        nvjitlink.destroy(handle)


def precompile_ptx(ptx: str, target: str, cache_dir: Path | str | None = None,
                   fast: bool = False) -> bool:
    """Compile `ptx` with nvJitLink into the disk cache, under the key `load_ptx` looks up on
    a device of the compile `target`'s arch ('sm_90a': an sm_90 device), without a device
    context: in a compile worker, so that the process that loads the PTX finds its cubin
    (ptxas took 11 s of each of an MLP stack's pipelines there, one after the other). False
    where it cannot (the cache off, PTX the driver must JIT, no driver to give its version, no
    nvJitLink): load_ptx compiles then."""
    try:
        found = _precompiled(ptx, target, cache_dir, fast)
        if found is None:
            return False
        cache, key, arch = found
        if cache.load(key) is None:
            cache.store(key, compile_ptx(ptx, arch, fast=fast).cubin)
        return True
    except Exception:  # a missing driver or nvJitLink: the loading process compiles
        return False


def is_precompiled(ptx: str, target: str, cache_dir: Path | str | None = None,
                   fast: bool = False) -> bool:
    """Whether `precompile_ptx` (or a load) left the cubin of `ptx` in the disk cache."""
    try:
        found = _precompiled(ptx, target, cache_dir, fast)
    except Exception:  # no driver to give its version, no nvJitLink
        return False
    return found is not None and found[0].load(found[1]) is not None


def _precompiled(ptx: str, target: str, cache_dir: Path | str | None,
                 fast: bool) -> tuple[CubinCache, str, str] | None:
    """(the cache, the key load_ptx looks `ptx` up by on a device of `target`'s arch, the arch
    nvJitLink compiles for), or None where no cubin is kept for it."""
    if not disk_cache_enabled() or needs_driver_jit(ptx):
        return None
    from cuda.bindings import driver

    result, driver_version = driver.cuDriverGetVersion()
    family = re.fullmatch(r"(sm_\d+)[af]?", target)
    if result != driver.CUresult.CUDA_SUCCESS or family is None:
        return None
    arch = compile_arch(ptx, family.group(1))
    cache = CubinCache(cache_dir)
    return cache, cache_key(ptx, arch, int(driver_version), _compiler(fast)), arch


# ---------------------------------------------------------------------------------------------
# Loading through the driver


def _cstring(buffer: bytearray) -> str:
    return bytes(buffer).split(b"\0", 1)[0].decode(errors="replace").strip()


def _driver_load(image: bytes, name_hint: str) -> tuple[Any, str]:
    """cuModuleLoadDataEx with JIT log buffers; returns (CUmodule, info log)."""
    from cuda.bindings import driver

    info_log = bytearray(JIT_LOG_BYTES)
    error_log = bytearray(JIT_LOG_BYTES)
    option = driver.CUjit_option
    options = [
        option.CU_JIT_INFO_LOG_BUFFER,
        option.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
        option.CU_JIT_ERROR_LOG_BUFFER,
        option.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
        option.CU_JIT_LOG_VERBOSE,
    ]
    values = [info_log, JIT_LOG_BYTES, error_log, JIT_LOG_BYTES, 1]
    result, handle = driver.cuModuleLoadDataEx(image, len(options), options, values)
    if result != driver.CUresult.CUDA_SUCCESS:
        name, description = describe_result(result)
        message = error_message(f"cuModuleLoadDataEx('{name_hint}')", name, description)
        log = _cstring(error_log)
        if log:
            message += f"\nJIT error log:\n{log}"
        raise TilesyncRuntimeError(message, name, "cuModuleLoadDataEx")
    return handle, _cstring(info_log)


class DeviceGlobal(NamedTuple):
    """A `.global` variable of a module: its device address and size."""

    ptr: int
    nbytes: int


@dataclass
class Kernel:
    """A kernel of a loaded module. `signature` lists parameter kinds for `launch`."""

    handle: Any
    name: str
    module: Module
    signature: tuple[str, ...] | None = None
    param_bytes: list[int] | None = None
    _dynamic_smem_limit: int | None = field(default=None, repr=False)
    launches: dict[tuple, Any] = field(default_factory=dict, repr=False, compare=False)
    """The PreparedLaunch of each configuration this kernel was launched with (launch.py)."""

    def attribute(self, name: str) -> int:
        """cuFuncGetAttribute by short name, e.g. 'NUM_REGS'."""
        from cuda.bindings import driver

        attrib = getattr(driver.CUfunction_attribute, f"CU_FUNC_ATTRIBUTE_{name}")
        return int(check(driver.cuFuncGetAttribute(attrib, self.handle), "cuFuncGetAttribute"))

    @property
    def num_regs(self) -> int:
        return self.attribute("NUM_REGS")

    @property
    def shared_size_bytes(self) -> int:
        """Static shared memory per block."""
        return self.attribute("SHARED_SIZE_BYTES")

    @property
    def local_size_bytes(self) -> int:
        return self.attribute("LOCAL_SIZE_BYTES")

    @property
    def max_threads_per_block(self) -> int:
        return self.attribute("MAX_THREADS_PER_BLOCK")

    @property
    def max_dynamic_shared_size_bytes(self) -> int:
        return self.attribute("MAX_DYNAMIC_SHARED_SIZE_BYTES")

    @property
    def binary_version(self) -> int:
        return self.attribute("BINARY_VERSION")

    def ensure_dynamic_shared_memory(self, nbytes: int) -> None:
        """Opt in to `nbytes` of dynamic shared memory where the default does not allow it: by
        default, static plus dynamic shared memory may not exceed 48 KiB."""
        if self._dynamic_smem_limit is None:
            self._dynamic_smem_limit = self.max_dynamic_shared_size_bytes
        if nbytes <= self._dynamic_smem_limit:
            return
        from cuda.bindings import driver

        check(
            driver.cuFuncSetAttribute(
                self.handle,
                driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                nbytes,
            ),
            f"cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES={nbytes}) for '{self.name}'",
        )
        self._dynamic_smem_limit = nbytes

    def attributes(self) -> dict[str, int]:
        return {
            "num_regs": self.num_regs,
            "shared_size_bytes": self.shared_size_bytes,
            "local_size_bytes": self.local_size_bytes,
            "max_threads_per_block": self.max_threads_per_block,
        }


class Module:
    """A loaded module. `source` says how it got there: 'compiled' (nvJitLink, then stored in
    the disk cache), 'disk-cache' (cubin read from disk) or 'driver-jit' (PTX JIT'ed by the
    driver). `info_log` is the compiler's verbose log (registers, spills)."""

    def __init__(
        self,
        handle: Any,
        name: str,
        ptx: str,
        source: str,
        info_log: str = "",
        cubin_path: Path | None = None,
    ):
        self.handle = handle
        self.name = name
        self.ptx = ptx
        self.source = source
        self.info_log = info_log
        self.cubin_path = cubin_path
        self.entry_params = ptx_entry_params(ptx)
        # Why a disk-cached load fell back to the driver's JIT, if it did.
        self.fallback_reason: str | None = None
        self._kernels: dict[str, Kernel] = {}

    def function(self, name: str, signature: list[str] | tuple[str, ...] | None = None) -> Kernel:
        """The kernel `name`; `signature` (e.g. ["ptr", "i32"]) is checked against the PTX."""
        from cuda.bindings import driver

        kernel = self._kernels.get(name)
        if kernel is None:
            result, handle = driver.cuModuleGetFunction(self.handle, name.encode())
            if result != driver.CUresult.CUDA_SUCCESS:
                err_name, description = describe_result(result)
                known = ", ".join(sorted(self.entry_params)) or "none"
                raise TilesyncRuntimeError(
                    error_message(f"cuModuleGetFunction('{name}')", err_name, description)
                    + f"; kernels in module '{self.name}': {known}",
                    err_name,
                    "cuModuleGetFunction",
                )
            kernel = Kernel(handle, name, self, param_bytes=self.entry_params.get(name))
            self._kernels[name] = kernel
        if signature is not None:
            from tilesync.runtime.launch import check_signature

            check_signature(tuple(signature), kernel.param_bytes, name)
            kernel.signature = tuple(signature)
        return kernel

    def global_ptr(self, name: str) -> DeviceGlobal:
        from cuda.bindings import driver

        ptr, nbytes = check(
            driver.cuModuleGetGlobal(self.handle, name.encode()), f"cuModuleGetGlobal('{name}')"
        )
        return DeviceGlobal(int(ptr), int(nbytes))

    def __repr__(self) -> str:
        return f"Module({self.name!r}, source={self.source!r}, kernels={list(self.entry_params)})"


_memory_cache: dict[tuple[str, int], Module] = {}
_memory_cache_lock = threading.Lock()


def clear_memory_cache() -> None:
    """Forget loaded modules (they stay loaded while referenced); the next load goes to disk."""
    with _memory_cache_lock:
        _memory_cache.clear()


def disk_cache_enabled() -> bool:
    from tilesync.contract import env_flag

    return env_flag(DISK_CACHE_ENV, default=True)


def needs_driver_jit(ptx: str) -> bool:
    """Whether only the driver's JIT compiles `ptx` faithfully: nvJitLink compiles PTX as an
    extensible whole program, where ptxas drops `setmaxnreg` (warning C7504); the driver keeps
    it (seen on an H100, driver 580)."""
    return "setmaxnreg." in ptx


def load_ptx(
    ptx: str,
    name_hint: str = "tilesync",
    *,
    disk_cache: bool | None = None,
    cache_dir: Path | str | None = None,
    fast: bool = False,
) -> Module:
    """Load PTX into device 0's context, from the in-process cache, the disk cache, or compiled.

    disk_cache=None follows TILESYNC_DISK_CACHE (on by default): compile with nvJitLink and keep
    the cubin; False lets the driver JIT the PTX, as does PTX that `needs_driver_jit`. Errors
    carry the compiler's error log. The same PTX text gives the same Module for the life of the
    process, however it was loaded. `fast`: ptxas at PTXAS_FAST_COMPILE (its own cubin).
    """
    device = get_device()
    use_disk = disk_cache_enabled() if disk_cache is None else disk_cache
    use_disk = use_disk and not needs_driver_jit(ptx)
    memory_key = (hashlib.sha256(ptx.encode()).hexdigest(), device.ordinal, fast)
    with _memory_cache_lock:
        module = _memory_cache.get(memory_key)
        if module is not None:
            return module
        module = _load_uncached(ptx, name_hint, device, use_disk, cache_dir, fast)
        _memory_cache[memory_key] = module
        return module


def _load_uncached(
    ptx: str, name_hint: str, device: Any, use_disk: bool, cache_dir: Path | str | None,
    fast: bool = False,
) -> Module:
    if not use_disk:
        handle, info_log = _driver_load(ptx.encode() + b"\0", name_hint)
        return Module(handle, name_hint, ptx, "driver-jit", info_log)

    arch = compile_arch(ptx, device.arch)
    cache = CubinCache(cache_dir)
    key = cache_key(ptx, arch, device.driver_version, _compiler(fast))
    cubin = cache.load(key)
    source, info_log = "disk-cache", ""
    if cubin is None:
        try:
            compiled = compile_ptx(ptx, arch, name_hint, fast)
        except CompilerUnavailableError as exc:
            handle, load_log = _driver_load(ptx.encode() + b"\0", name_hint)
            module = Module(handle, name_hint, ptx, "driver-jit", load_log)
            module.fallback_reason = str(exc)
            return module
        cubin, info_log, source = compiled.cubin, compiled.info_log, "compiled"
        try:
            cache.store(key, cubin)
        except OSError:
            pass  # a read-only or full cache directory must not stop the program
    try:
        handle, load_log = _driver_load(cubin, name_hint)
    except TilesyncRuntimeError as exc:
        if exc.error_name not in _CUBIN_REJECTED:
            raise
        # The driver is older than nvJitLink: let it JIT the PTX itself.
        handle, load_log = _driver_load(ptx.encode() + b"\0", name_hint)
        module = Module(handle, name_hint, ptx, "driver-jit", load_log)
        module.fallback_reason = f"the driver rejected nvJitLink's cubin: {exc}"
        return module
    log = "\n".join(part for part in (info_log, load_log) if part)
    return Module(handle, name_hint, ptx, source, log, cache.path_for(key))


__all__ = [
    "CACHE_DIR_ENV",
    "DISK_CACHE_ENV",
    "CompiledCubin",
    "CompilerUnavailableError",
    "CubinCache",
    "DeviceGlobal",
    "Kernel",
    "Module",
    "cache_key",
    "clear_memory_cache",
    "compile_arch",
    "compile_ptx",
    "default_cache_dir",
    "load_ptx",
    "needs_driver_jit",
    "precompile_ptx",
    "ptx_entry_params",
    "ptx_target",
    "write_atomic",
]

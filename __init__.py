"""tilesync: dependent GPU kernels synchronized tile by tile (cuSync, Kitsune) on xDSL.

Every error tilesync raises for its user is a `TilesyncError`:

    TilesyncError
    ├── CompileError          bad input, pipeline or option; IR a pass refuses ("file:line:col")
    │   └── VerifyError       sync-verify cannot prove the synchronization or forward progress
    └── TilesyncRuntimeError  a CUDA driver call failed (`kernel`, `block` where known)
        ├── NoGPUError        no usable driver or device
        ├── NoProgressOnDeviceError  a forward-progress proof this device's counts break
        └── DeviceFaultError  a kernel stopped on the device; the context is unusable
            └── SpinTimeoutError  a spin-wait timed out (debug builds say which and where)
"""

from tilesync.contract import (
    CompiledProgram,
    CompileError,
    DeviceFaultError,
    KernelSignature,
    NoGPUError,
    NoProgressOnDeviceError,
    SourceLocation,
    SpinTimeoutError,
    TilesyncError,
    TilesyncRuntimeError,
    VerifyError,
)

__version__ = "0.1.0"

__all__ = ["CompileError", "CompiledProgram", "DeviceFaultError", "KernelSignature",
           "NoGPUError", "NoProgressOnDeviceError", "SourceLocation", "SpinTimeoutError",
           "TilesyncError", "TilesyncRuntimeError", "VerifyError", "compile"]


def compile(module_or_text, pipeline=None, target="sm_90", **options):
    """Compile MLIR text, a .mlir path or a ModuleOp to PTX; see tilesync.api.compile."""
    from tilesync.api import compile as _compile

    return _compile(module_or_text, pipeline=pipeline, target=target, **options)

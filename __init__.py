"""tilesync: dependent GPU kernels synchronized tile by tile (cuSync, Kitsune) on xDSL."""

from tilesync.contract import (
    CompiledProgram,
    CompileError,
    KernelSignature,
    NoGPUError,
    SpinTimeoutError,
    TilesyncError,
    TilesyncRuntimeError,
)

__version__ = "0.1.0"

__all__ = ["CompileError", "CompiledProgram", "KernelSignature", "NoGPUError",
           "SpinTimeoutError", "TilesyncError", "TilesyncRuntimeError", "compile"]


def compile(module_or_text, pipeline=None, target="sm_90", **options):
    """Compile MLIR text or a ModuleOp to PTX; see tilesync.api.compile."""
    from tilesync.api import compile as _compile

    return _compile(module_or_text, pipeline=pipeline, target=target, **options)

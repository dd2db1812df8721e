"""The one wrapper every driver call goes through, and how a failed call reads (the error
classes themselves are in tilesync.contract)."""

from __future__ import annotations

from typing import Any

from tilesync.contract import (
    DEVICE_FAULT_ERRORS,
    DeviceFaultError,
    NoGPUError,
    SpinTimeoutError,
    TilesyncRuntimeError,
)

__all__ = ["DEVICE_FAULT_ERRORS", "DeviceFaultError", "NoGPUError", "SpinTimeoutError",
           "TilesyncRuntimeError", "check", "describe_result", "error_message"]


def describe_result(result: Any) -> tuple[str, str]:
    """(name, description) of a CUresult; falls back to the enum's repr if the driver can't."""
    from cuda.bindings import driver

    name = getattr(result, "name", None) or f"CUresult({int(result)})"
    description = ""
    try:
        err, name_bytes = driver.cuGetErrorName(result)
        if err == driver.CUresult.CUDA_SUCCESS and name_bytes:
            name = name_bytes.decode()
        err, text_bytes = driver.cuGetErrorString(result)
        if err == driver.CUresult.CUDA_SUCCESS and text_bytes:
            description = text_bytes.decode()
    except Exception:  # the lookup itself needs the driver library
        pass
    return name, description


def error_message(call: str, name: str, description: str) -> str:
    message = f"{call} failed: {name}"
    if description:
        message += f" ({description})"
    if name in DEVICE_FAULT_ERRORS:
        message += (
            ". A kernel stopped on the device: a device-side trap or fault happened "
            "(for example a tilesync spin-wait or mbarrier wait that timed out and called "
            "trap, or an out-of-bounds access; a debug build, tilesync.compile(debug=True), "
            "run by a StageProgram names the wait). The CUDA context is now unusable; restart "
            "the process."
        )
    return message


def check(result_tuple: Any, call: str = "CUDA driver call") -> Any:
    """Unwrap a cuda-bindings return value `(CUresult, *outputs)`.

    Returns None, the single output, or a tuple of outputs; raises TilesyncRuntimeError with the
    error's name, its description and `call` otherwise (DeviceFaultError when a kernel stopped
    on the device).
    """
    from cuda.bindings import driver

    if isinstance(result_tuple, tuple):
        result, outputs = result_tuple[0], result_tuple[1:]
    else:
        result, outputs = result_tuple, ()
    if result != driver.CUresult.CUDA_SUCCESS:
        name, description = describe_result(result)
        error = DeviceFaultError if name in DEVICE_FAULT_ERRORS else TilesyncRuntimeError
        raise error(error_message(call, name, description), name, call)
    if not outputs:
        return None
    if len(outputs) == 1:
        return outputs[0]
    return outputs

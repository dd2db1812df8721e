"""Errors of the tilesync runtime and the one wrapper every driver call goes through."""

from __future__ import annotations

from typing import Any

# Errors after which the context is unusable: the kernel stopped on the device (a `trap`, an
# illegal address or instruction). tilesync's debug spin-waits call `trap` when they time out.
DEVICE_FAULT_ERRORS = frozenset(
    {
        "CUDA_ERROR_LAUNCH_FAILED",
        "CUDA_ERROR_ILLEGAL_INSTRUCTION",
        "CUDA_ERROR_ILLEGAL_ADDRESS",
        "CUDA_ERROR_MISALIGNED_ADDRESS",
        "CUDA_ERROR_INVALID_ADDRESS_SPACE",
        "CUDA_ERROR_INVALID_PC",
        "CUDA_ERROR_HARDWARE_STACK_ERROR",
        "CUDA_ERROR_ASSERT",
        "CUDA_ERROR_LAUNCH_TIMEOUT",
    }
)


class TilesyncRuntimeError(RuntimeError):
    """A CUDA driver call failed; `error_name` is the CUresult name, `call` the driver call."""

    def __init__(self, message: str, error_name: str | None = None, call: str | None = None):
        super().__init__(message)
        self.error_name = error_name
        self.call = call

    @property
    def is_device_fault(self) -> bool:
        return self.error_name in DEVICE_FAULT_ERRORS


class NoGPUError(TilesyncRuntimeError):
    """No usable NVIDIA driver or device; `reason` says which and why."""

    def __init__(self, reason: str):
        super().__init__(f"no usable NVIDIA GPU: {reason}")
        self.reason = reason


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
            "(for example a tilesync spin-wait that timed out and called trap, or an out-of-"
            "bounds access). The CUDA context is now unusable; restart the process."
        )
    return message


def check(result_tuple: Any, call: str = "CUDA driver call") -> Any:
    """Unwrap a cuda-bindings return value `(CUresult, *outputs)`.

    Returns None, the single output, or a tuple of outputs; raises TilesyncRuntimeError with the
    error's name, its description and `call` otherwise.
    """
    from cuda.bindings import driver

    if isinstance(result_tuple, tuple):
        result, outputs = result_tuple[0], result_tuple[1:]
    else:
        result, outputs = result_tuple, ()
    if result != driver.CUresult.CUDA_SUCCESS:
        name, description = describe_result(result)
        raise TilesyncRuntimeError(error_message(call, name, description), name, call)
    if not outputs:
        return None
    if len(outputs) == 1:
        return outputs[0]
    return outputs

"""TMA tensor maps: the `tmap` kernel parameters of `!tile.tensor_map`, encoded on the host.

    encode_tiled(address, dtype, shape, box, swizzle=128) -> driver.CUtensorMap
    encode_im2col(address, dtype, shape, box, corners, swizzle=128) -> the same, gathering an
                                    implicit GEMM's rows (pixels x channels)
    TensorMapCache(limit=None).get(address, dtype, shape, box, swizzle) -> the same, encoded
                                    once (the `limit` most recently used kept)

A tensor map describes a row-major tensor in device memory (`shape`, outermost first, of
`dtype` f16/bf16/f32 elements at `address`) and the box one bulk copy moves (`box`, outermost
first) with its shared-memory swizzle. The launch copies its 128 bytes into the parameter
space (`launch` packs a CUtensorMap given for a `tmap` parameter by address); the kernel reads
it in place. Out-of-bounds elements of a box read as zero and are not written.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from tilesync.runtime.errors import check

DTYPE_BYTES = {"f16": 2, "bf16": 2, "f32": 4}
SWIZZLES = (0, 32, 64, 128)
GLOBAL_ALIGNMENT = 16  # the tensor's address and every stride but the innermost's
MAX_BOX = 256
MAX_IM2COL_PIXELS = 1024  # an im2col copy's pixels (its box's rows)


def tensor_map_error(address: int, dtype: str, shape: Sequence[int], box: Sequence[int],
                     swizzle: int) -> str | None:
    """Why the driver would refuse these arguments (checked first for a clear message)."""
    if dtype not in DTYPE_BYTES:
        return f"dtype must be one of {', '.join(DTYPE_BYTES)}, got {dtype!r}"
    if not 1 <= len(shape) <= 5 or len(box) != len(shape):
        return f"shape and box need the same rank in 1..5, got {list(shape)} and {list(box)}"
    if any(d <= 0 for d in shape) or any(not 1 <= b <= MAX_BOX for b in box):
        return f"shape must be positive and box in 1..{MAX_BOX}, got {list(shape)}, {list(box)}"
    if swizzle not in SWIZZLES:
        return f"swizzle must be one of {SWIZZLES}, got {swizzle}"
    size = DTYPE_BYTES[dtype]
    if address % GLOBAL_ALIGNMENT:
        return f"the tensor's address {address:#x} is not {GLOBAL_ALIGNMENT}-byte aligned"
    if len(shape) > 1 and (shape[-1] * size) % GLOBAL_ALIGNMENT:
        return (f"rows of {shape[-1]} {dtype} are {shape[-1] * size} bytes: strides must be "
                f"multiples of {GLOBAL_ALIGNMENT}")
    inner = box[-1] * size
    if inner % 16 or (swizzle and inner > swizzle):
        return (f"the box's rows are {inner} bytes: a multiple of 16"
                + (f" up to the {swizzle}-byte swizzle" if swizzle else ""))
    return None


def encode_tiled(address: int, dtype: str, shape: Sequence[int], box: Sequence[int],
                 swizzle: int = 128) -> Any:
    """cuTensorMapEncodeTiled of a row-major tensor; ValueError for impossible arguments."""
    from cuda.bindings import driver

    error = tensor_map_error(address, dtype, shape, box, swizzle)
    if error is not None:
        raise ValueError(f"tensor map: {error}")
    dims, strides = _dims_and_strides(dtype, shape)
    u64, u32 = driver.cuuint64_t, driver.cuuint32_t  # the binding takes no plain ints here
    tensor_map = check(driver.cuTensorMapEncodeTiled(
        _data_type(driver, dtype), len(dims), address, [u64(d) for d in dims],
        [u64(s) for s in strides], [u32(int(b)) for b in reversed(box)], [u32(1)] * len(dims),
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE, _swizzle(driver, swizzle),
        driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
        f"cuTensorMapEncodeTiled({dtype}, shape={list(shape)}, box={list(box)})")
    return tensor_map


def encode_im2col(address: int, dtype: str, shape: Sequence[int], box: Sequence[int],
                  corners: tuple[Sequence[int], Sequence[int]], swizzle: int = 128) -> Any:
    """cuTensorMapEncodeIm2col of a row-major N x (spatial ...) x C tensor: a copy gathers
    `box` = (pixels, channels) from window positions inside the lower and upper `corners`
    (one offset per spatial dimension each, outermost first); ValueError for impossible
    arguments."""
    from cuda.bindings import driver

    lower, upper = (list(corner) for corner in corners)
    error = tensor_map_error(address, dtype, shape, [1] * (len(shape) - 1) + [box[1]],
                             swizzle)
    if error is None and not (3 <= len(shape) <= 5 and len(lower) == len(upper)
                              == len(shape) - 2 and 1 <= box[0] <= MAX_IM2COL_PIXELS):
        error = (f"an im2col map of an N x spatial x C tensor of rank 3 to 5 takes a corner "
                 f"offset per spatial dimension and 1..{MAX_IM2COL_PIXELS} pixels, got "
                 f"{list(shape)}, corners {lower} {upper}, box {list(box)}")
    if error is not None:
        raise ValueError(f"tensor map: {error}")
    dims, strides = _dims_and_strides(dtype, shape)
    u64, u32 = driver.cuuint64_t, driver.cuuint32_t
    return check(driver.cuTensorMapEncodeIm2col(
        _data_type(driver, dtype), len(dims), address, [u64(d) for d in dims],
        [u64(s) for s in strides], lower[::-1], upper[::-1], int(box[1]), int(box[0]),
        [u32(1)] * len(dims), driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        _swizzle(driver, swizzle),
        driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
        f"cuTensorMapEncodeIm2col({dtype}, shape={list(shape)}, box={list(box)})")


def _dims_and_strides(dtype: str, shape: Sequence[int]) -> tuple[list[int], list[int]]:
    """The driver's view of a row-major tensor: dimensions innermost first, and the byte
    strides of all but the innermost."""
    dims = [int(d) for d in reversed(shape)]
    strides = []
    stride = DTYPE_BYTES[dtype]
    for d in dims[:-1]:
        stride *= d
        strides.append(stride)
    return dims, strides


def _data_type(driver: Any, dtype: str) -> Any:
    kind = driver.CUtensorMapDataType
    return {"f16": kind.CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
            "bf16": kind.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
            "f32": kind.CU_TENSOR_MAP_DATA_TYPE_FLOAT32}[dtype]


def _swizzle(driver: Any, swizzle: int) -> Any:
    name = {0: "NONE", 32: "32B", 64: "64B", 128: "128B"}[swizzle]
    return getattr(driver.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{name}")


class TensorMapCache:
    """Tensor maps by their arguments: a launch on the same buffers encodes nothing. With a
    `limit`, the least recently used maps go first (a caller whose buffers come from an
    allocator sees ever new addresses)."""

    def __init__(self, limit: int | None = None) -> None:
        self._maps: OrderedDict[tuple, Any] = OrderedDict()
        self.limit = limit

    def get(self, address: int, dtype: str, shape: Sequence[int], box: Sequence[int],
            swizzle: int = 128, im2col_corners: tuple | None = None) -> Any:
        """The tiled map, or with `im2col_corners` the im2col one (`encode_im2col`)."""
        key = (address, dtype, tuple(shape), tuple(box), swizzle, im2col_corners)
        found = self._maps.get(key)
        if found is None:
            found = self._maps[key] = \
                encode_tiled(address, dtype, shape, box, swizzle) if im2col_corners is None \
                else encode_im2col(address, dtype, shape, box, im2col_corners, swizzle)
            if self.limit is not None and len(self._maps) > self.limit:
                self._maps.popitem(last=False)
        else:
            self._maps.move_to_end(key)
        return found

    def __len__(self) -> int:
        return len(self._maps)


__all__ = ["TensorMapCache", "encode_im2col", "encode_tiled", "tensor_map_error"]

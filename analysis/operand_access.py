"""Which elements of an operand an op touches: the ops that read or write a memref or a tensor
map element-wise, and the closed index box each touches per tile of an abstract run
(`kernel_eval.BatchRun`). sync-verify checks these boxes against the producer tiles that wrote
them; the simulator follows a compiled kernel's reads with them."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from xdsl.dialects import memref
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Operation, SSAValue

from tilesync.analysis.kernel_eval import BatchRun, Scalar, Unproven, exact
from tilesync.analysis.operand_regions import ravel, unravel
from tilesync.contract import IM2COL_CORNERS
from tilesync.dialects import tile as tl

FRAGMENT = (16, 8)  # rows and columns of a tile.store_acc / tile.take_acc fragment

NO_ELEMENT_OPS = (memref.DimOp, tl.PrefetchTensorMapOp, tl.TmaPrefetchOp)
"""Uses of an operand that touch none of its elements: a shape, a tensor map's descriptor."""

WRITE_OPS = (memref.StoreOp, tl.StoreAccOp, tl.CopyOutOp, tl.TmaStoreOp)
"""The ops that write an operand's elements (every other access reads)."""


def access(op: Operation, value: SSAValue, who: str
           ) -> tuple[Sequence[SSAValue], list[int], bool] | None:
    """(indices, extent per index, clipped to the shape) of `op`'s access to the memref
    `value`; None for an op that touches no element (memref.dim); Unproven for any other
    use, whose elements cannot be bounded."""
    if isinstance(op, NO_ELEMENT_OPS):
        return None
    if isinstance(op, memref.LoadOp | memref.StoreOp) and op.memref is value:
        return op.indices, [1] * len(op.indices), False
    if isinstance(op, tl.LoadL2Op) and op.src is value:
        return op.indices, [1] * len(op.indices), False
    if isinstance(op, tl.CpAsyncOp) and op.src is value:
        width = tl.CpAsyncOp.BYTES // tl.element_bytes(op.src.type.element_type)
        extents = [1] * len(op.src_indices)
        extents[-1] = width
        return op.src_indices, extents, op.masked is not None
    if isinstance(op, tl.CopyOutOp) and op.dst is value:
        width = tl.CopyOutOp.BYTES // tl.element_bytes(op.dst.type.element_type)
        extents = [1] * len(op.dst_indices)
        extents[-1] = width
        return op.dst_indices, extents, op.masked is not None
    if isinstance(op, tl.TakeAccOp) and op.src is value:
        return op.indices, [1] * (len(op.indices) - 2) + list(FRAGMENT), op.masked is not None
    if isinstance(op, tl.StoreAccOp) and op.dst is value:
        return op.indices, [1] * (len(op.indices) - 2) + list(FRAGMENT), op.masked is not None
    if reads_im2col(op, value):
        raise Unproven(op, "an im2col copy's pixels are no box at its coordinates: "
                           "access_box bounds them")
    if isinstance(op, tl.TmaLoadOp | tl.TmaStoreOp) and op.tensor_map is value:
        # the box at the coordinates; past the tensor the copy engine fills zeros / writes
        # nothing, elements of no producer tile
        box = value.type.shape  # type: ignore[union-attr]
        return op.coords, list(box), False
    prefix = f"{who}: " if who else ""
    raise Unproven(op, f"{prefix}'{op.name}' uses a produced operand in a way sync-verify "
                       f"cannot bound (which elements does it touch?); access it through "
                       f"memref.load/store or the tile dialect's copies")


def access_box(run: BatchRun, op: Operation, value: SSAValue, n: int, who: str
               ) -> tuple[list[Scalar], list[Scalar]] | None:
    """The closed box [lo, hi] per memref dimension `op` touches of `value` (operand `n`),
    per tile of the batch; None where it touches no element."""
    if reads_im2col(op, value):
        return im2col_box(run, op)  # type: ignore[arg-type]
    found = access(op, value, who)
    if found is None:
        return None
    indices, extents, clip = found
    prefix = f"{who}: " if who else ""
    shape = value.type.get_shape() if isinstance(value.type, MemRefType) else ()
    lo: list[Scalar] = []
    hi: list[Scalar] = []
    for position, (index, extent) in enumerate(zip(indices, extents)):
        bounds = run.value(index)
        if bounds is None:
            raise Unproven(op, f"{prefix}cannot bound index {position} of this '{op.name}' "
                               f"of operand {n}, so cannot tell which producer tiles it "
                               f"touches")
        low, high = bounds[0], bounds[1] + extent - 1
        if 0 < position < len(shape) and shape[position] < 0 and not clip:
            # a row of unknown length: any index of it may be another row's element
            raise Unproven(op, f"{prefix}'{op.name}' indexes dimension {position} of operand "
                               f"{n}, whose size is dynamic ({value.type}): past its end an "
                               f"index is another element of the buffer, so which tile "
                               f"wrote it cannot be told (give the dimension a static size)")
        if position < len(shape) and shape[position] >= 0:
            if clip:  # a masked access touches no element outside the shape (negative too)
                low, high = np.maximum(low, 0), np.minimum(high, shape[position] - 1)
            elif position > 0 and np.any((low <= high) & ((low < 0) |
                                                          (high >= shape[position]))):
                # row-major, an index past the end of a dimension after the first is another
                # element of the buffer (past the first's, no element of it): no tile map
                # places it
                span = [int(np.min(low)), int(np.max(high))]
                raise Unproven(op, f"{prefix}'{op.name}' may touch index {span} of dimension "
                                   f"{position} of operand {n}, outside its shape "
                                   f"{list(shape)}: past the end of a row that is another "
                                   f"element of the buffer, which sync-verify cannot place in "
                                   f"a tile (mask or guard the access to keep it inside)")
        lo.append(low)
        hi.append(high)
    return lo, hi


def reads_im2col(op: Operation, value: SSAValue) -> bool:
    """Whether `op` is an im2col copy from the map `value` (its reads: im2col_box)."""
    return isinstance(op, tl.TmaLoadOp) and bool(op.im2col) and op.tensor_map is value


def im2col_box(run: BatchRun, op: tl.TmaLoadOp) -> tuple[list[Scalar], list[Scalar]]:
    """The pixels an im2col copy reads, as a box of its N x spatial x C tensor (per tile of
    the batch). Its window positions are the tensor's pixels moved by IM2COL_CORNERS' lower
    corner, walked row-major from the coordinates for `pixels` positions, each read at the
    filter offsets: one row of them reads a stretch of one input row, several rows of one
    image read whole input rows, several images whole images; reads outside the tensor are
    padding (zero-filled, no producer's). Coordinates that are not exact, or a first
    position outside the tensor's pixels (but past its last image), widen to the whole
    tensor."""
    map_type = op.tensor_map.type
    assert isinstance(map_type, tl.TensorMapType)
    shape = map_type.im2col_tensor
    whole = ([0] * len(shape), [d - 1 for d in shape])
    pixels, channels = map_type.shape
    spatial = shape[1:-1]
    lower = IM2COL_CORNERS[0]
    coords = [run.value(c) for c in op.coords]
    offsets = [run.value(o) for o in op.im2col]
    if len(spatial) != len(lower) or any(v is None or not exact(v) for v in coords + offsets):
        return whole
    image, *window, channel = (v[0] for v in coords)  # type: ignore[index]
    taps = [v[0] for v in offsets]  # type: ignore[index]
    # the first and last position in the row-major walk over the tensor's pixels
    positions = [np.asarray(w - low) for w, low in zip(window, lower)]
    # a walk from outside the pixels may enter them anywhere (but one from past the last
    # image stays past it: it reads nothing)
    outside = np.asarray(image) < 0
    for position, size in zip(positions, spatial):
        outside = outside | (position < 0) | (position >= size)
    outside = outside & (np.asarray(image) < shape[0])
    first = ravel([np.asarray(image), *positions], shape[:-1])
    last = np.minimum(first + pixels - 1, math.prod(shape[:-1]) - 1)
    end = unravel(last, shape[:-1])
    same_image = end[0] == image
    same_row = same_image
    for d in range(len(spatial) - 1):  # every spatial dimension but the innermost agrees
        same_row = same_row & (end[1 + d] == positions[d])
    lo: list[Scalar] = [np.asarray(image)]
    hi: list[Scalar] = [np.where(first > last, image - 1, end[0])]  # past the end: nothing
    for d, size in enumerate(spatial):
        shift = lower[d] + taps[d]
        innermost = d == len(spatial) - 1
        # within one row: the positions' own range; within one image: this dimension's range
        # over the rows (outer ones) or the whole row (the innermost); across images: all of it
        own_lo = positions[d] + shift
        own_hi = end[1 + d] + shift
        lo.append(np.where(same_row if innermost else same_image, own_lo, shift))
        hi.append(np.where(same_row if innermost else same_image, own_hi, size - 1 + shift))
    lo.append(np.asarray(channel))
    hi.append(np.asarray(channel) + channels - 1)
    # the copy engine zero-fills what lies outside the tensor: no element is read there
    return ([np.where(outside, 0, np.maximum(low, 0)) for low in lo],
            [np.where(outside, size - 1, np.minimum(high, size - 1))
             for high, size in zip(hi, shape)])


"""Which elements of an operand an op touches: the ops that read or write a memref or a tensor
map element-wise, and the closed index box each touches per tile of an abstract run
(`kernel_eval.BatchRun`). sync-verify checks these boxes against the producer tiles that wrote
them; the simulator follows a compiled kernel's reads with them."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from xdsl.dialects import memref
from xdsl.dialects.builtin import MemRefType
from xdsl.ir import Operation, SSAValue

from tilesync.analysis.kernel_eval import BatchRun, Scalar, Unproven
from tilesync.dialects import tile as tl

FRAGMENT = (16, 8)  # rows and columns of a tile.store_acc / tile.take_acc fragment

NO_ELEMENT_OPS = (memref.DimOp, tl.PrefetchTensorMapOp)
"""Uses of an operand that touch none of its elements: a shape, a tensor map's descriptor."""


def access(op: Operation, value: SSAValue, who: str
           ) -> tuple[Sequence[SSAValue], list[int], bool] | None:
    """(indices, extent per index, clipped to the shape) of `op`'s access to the memref
    `value`; None for an op that touches no element (memref.dim); Unproven for any other
    use, whose elements cannot be bounded."""
    if isinstance(op, NO_ELEMENT_OPS):
        return None
    if isinstance(op, memref.LoadOp | memref.StoreOp) and op.memref is value:
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
        if clip and position < len(shape) and shape[position] >= 0:
            # a masked access touches no element outside the shape (negative indices included)
            low, high = np.maximum(low, 0), np.minimum(high, shape[position] - 1)
        lo.append(low)
        hi.append(high)
    return lo, hi

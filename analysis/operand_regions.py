"""Which producer tiles wrote the elements a consumer reads: the producer-tile → index-region
map of a produced operand.

A producer stage with grid (g0, g1, ...) and tile (t0, t1, ...) (the first `rank` entries of
its `tile`: the extents of the part of its output one tile writes) writes a logical array of
extents (g0·t0, g1·t1, ...); tile (i0, i1, ...) writes the box [i0·t0, (i0+1)·t0) ×
[i1·t1, (i1+1)·t1) × .... A consumer operand holds that array

* with the grid's rank: index d is logical dimension d;
* as a rank-1 memref: row-major, the last logical dimension fastest (element (r, c) of a
  2-D output at r·g1·t1 + c);
* with a higher rank (the producer's rows viewed as several dimensions, as an implicit-GEMM
  conv reads the NHW x K output of the conv before it as N x H x W x K, through a memref or
  an im2col map whose type has the tensor's shape): its leading dimensions collapse row-major
  into logical dimension 0 and the others are logical dimensions 1, 2, ... (element
  (n, h, w, c) at row (n·H + h)·W + w, column c).

A producer with an `output_map` (`sync.StageOp.output_placement`) places the logical array in
the buffer: buffer index j is logical dimension p_j plus offset c_j (a permutation: a batched
GEMM whose grid's z is the batch of a [B, M, N] output; an offset: one of several producers
writing disjoint columns of one buffer). Its consumers read the buffer with that rank.

Elements outside the logical array are written by no tile (padding, or another producer's
part): reading them needs no wait on this producer. Any other rank has no map (`layout_for`
says why).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import MemRefType

from tilesync.analysis.kernel_eval import INDEX_LIMIT
from tilesync.dialects import sync
from tilesync.dialects.tile import TensorMapType

Scalar = int | np.ndarray


@dataclass(frozen=True)
class OperandLayout:
    """Producer `producer`'s tiles (grid, tile) over an operand of rank `rank`."""

    producer: str
    grid: tuple[int, ...]
    tile: tuple[int, ...]
    rank: int
    shape: tuple[int, ...] = ()  # the operand's, where its leading dimensions collapse
    # per operand dimension (logical dimension, offset), from the producer's output_map
    placement: tuple[tuple[int, int], ...] = ()

    @property
    def extents(self) -> tuple[int, ...]:
        return tuple(g * t for g, t in zip(self.grid, self.tile))

    def logical_boxes(self, lo: Sequence[Scalar], hi: Sequence[Scalar]
                      ) -> list[tuple[list[Scalar], list[Scalar]]]:
        """The logical boxes (closed [lo, hi] per dimension, per tile of the batch) that the
        operand box [lo, hi] covers, possibly larger (never smaller)."""
        extents = self.extents
        if self.placement:
            box_lo: list[Scalar] = [0] * len(extents)
            box_hi: list[Scalar] = [0] * len(extents)
            for low, high, (dim, offset) in zip(lo, hi, self.placement):
                box_lo[dim], box_hi[dim] = low - offset, high - offset
            return [(box_lo, box_hi)]
        if self.rank == len(extents):
            return [(list(lo), list(hi))]
        if self.rank > len(extents):
            # the leading dimensions' row-major index is monotone in each: its range over the
            # box runs from the index of the box's low corner to that of its high corner
            lead = self.rank - len(extents) + 1
            first = ravel(lo[:lead], self.shape[:lead])
            last = ravel(hi[:lead], self.shape[:lead])
            empty: Scalar = False
            for low, high in zip(lo[:lead], hi[:lead]):
                empty = empty | (low > high)
            # an empty box: past the array's end, so that it meets no tile
            return [([np.where(empty, extents[0], first), *lo[lead:]],
                     [np.where(empty, -1, last), *hi[lead:]])]
        # rank 1, row-major: the leading coordinates where the ends agree are exact, the
        # first where they differ spans [lo, hi], the later ones their whole extent.
        first, last = np.maximum(lo[0], 0), np.minimum(hi[0], math.prod(extents) - 1)
        a, b = unravel(first, extents), unravel(last, extents)
        box_lo = []
        box_hi = []
        same: Scalar = True
        for d, extent in enumerate(extents):
            box_lo.append(np.where(same, a[d], 0))
            box_hi.append(np.where(same, b[d], extent - 1))
            same = same & (a[d] == b[d])
        empty = last < first
        return [([np.where(empty, 1, x) for x in box_lo],
                 [np.where(empty, 0, x) for x in box_hi])]

    def tiles(self, lo: Sequence[Scalar], hi: Sequence[Scalar]
              ) -> Iterator[tuple[tuple[Scalar, ...], Scalar]]:
        """Producer tiles whose region meets the operand box [lo, hi] (per tile of the batch):
        (coordinates, valid) pairs, `valid` saying for which tiles of the batch they count."""
        for box_lo, box_hi in self.logical_boxes(lo, hi):
            first: list[Scalar] = []
            last: list[Scalar] = []
            for low, high, extent, size in zip(box_lo, box_hi, self.extents, self.tile):
                first.append(np.maximum(low, 0) // size)
                last.append(np.minimum(high, extent - 1) // size)
            spans = [int(np.max(b - a)) + 1 if np.size(a) else 0
                     for a, b in zip(first, last)]
            if any(s <= 0 for s in spans):
                continue
            for offsets in itertools.product(*(range(s) for s in spans)):
                coords = tuple(a + o for a, o in zip(first, offsets))
                valid: Scalar = True
                for c, b in zip(coords, last):
                    valid = valid & (c <= b)
                yield coords, valid

    def contains(self, coords: Sequence[Scalar], lo: Sequence[Scalar], hi: Sequence[Scalar]
                 ) -> Scalar:
        """Whether the operand box [lo, hi] lies inside the region of tile `coords` (per tile
        of the batch; an empty box does)."""
        inside: Scalar = True
        if self.rank == 1 < len(self.extents):  # nothing past either end of the array
            inside = (lo[0] >= 0) & (hi[0] < math.prod(self.extents))
        elif self.rank > len(self.extents):  # nothing outside the collapsed dimensions
            for low, high, size in zip(lo, hi, self.shape[:self.rank - len(self.extents) + 1]):
                inside = inside & ((low > high) | ((low >= 0) & (high < size)))
        for box_lo, box_hi in self.logical_boxes(lo, hi):
            empty: Scalar = False
            for low, high in zip(box_lo, box_hi):
                empty = empty | (low > high)
            fits: Scalar = True
            for low, high, c, size in zip(box_lo, box_hi, coords, self.tile):
                fits = fits & (low >= c * size) & (high < (c + 1) * size)
            inside = inside & (empty | fits)
        return inside

    def region(self, tile: Sequence[int]) -> str:
        """The box producer tile `tile` writes, in words (the operand's indices where the
        producer places its output, else logical ones)."""
        spans = [(i * t, (i + 1) * t) for i, t in zip(tile, self.tile)]
        if self.placement:
            spans = [(spans[dim][0] + offset, spans[dim][1] + offset)
                     for dim, offset in self.placement]
        return " x ".join(f"[{a}, {b})" for a, b in spans)


def ravel(coords: Sequence[Scalar], shape: Sequence[int]) -> Scalar:
    """The row-major index of `coords` in an array of `shape` (per tile of a batch)."""
    index: Scalar = 0
    for c, extent in zip(coords, shape):
        index = index * extent + c
    return index


def unravel(index: Scalar, extents: Sequence[int]) -> list[Scalar]:
    """The coordinates of row-major `index` in an array of `extents`."""
    coords: list[Scalar] = []
    for extent in reversed(extents):
        coords.append(index % extent)
        index = index // extent
    return coords[::-1]


def layout_for(producer: sync.StageOp, operand_type: object) -> OperandLayout | str:
    """The layout of a consumer operand of `operand_type` written by `producer`, or why there
    is none."""
    name = producer.sym_name.data
    grid = producer.grid_shape
    if isinstance(operand_type, TensorMapType) and operand_type.is_im2col:
        rank = len(operand_type.im2col_tensor)  # the tensor's coordinates (operand_access)
    elif isinstance(operand_type, TensorMapType):  # coordinates of the tensor, outermost first
        rank = len(operand_type.shape)
    elif isinstance(operand_type, MemRefType):
        rank = operand_type.get_num_dims()
    else:
        return f"operand is {operand_type}, not a memref or a tensor map"
    tile = producer.tile_shape
    if len(tile) < len(grid):
        return (f"@{name} has a {len(grid)}-D grid but a {len(tile)}-D tile "
                f"{tuple(tile)}: no region per tile")
    placement = producer.output_placement
    if placement is not None:
        if rank != len(placement):
            return (f"its type {operand_type} has rank {rank} while @{name}'s output_map "
                    f"places its tiles in {len(placement)} dimensions")
        layout = OperandLayout(name, tuple(grid), tuple(tile[: len(grid)]), rank,
                               placement=placement)
        return _bounded(layout)
    if rank < len(grid) and rank != 1:
        return (f"its type {operand_type} has rank {rank} while @{name}'s tiles form a "
                f"{len(grid)}-D grid: no map from its indices to @{name}'s tiles (give it rank "
                f"1, or {len(grid)} or more: leading dimensions collapse into the first; a grid "
                f"dimension that splits the reduction rather than the output, split-K, is not "
                f"supported: one block writes and posts each output tile)")
    shape: tuple[int, ...] = ()
    if rank > len(grid):
        if isinstance(operand_type, TensorMapType) and operand_type.is_im2col:
            shape = operand_type.im2col_tensor
        elif not isinstance(operand_type, MemRefType):  # a tiled map's type has its box only
            return (f"{operand_type} has more dimensions than @{name}'s grid and its tensor's "
                    f"shape is not in its type: its leading dimensions cannot collapse into "
                    f"@{name}'s rows")
        else:
            shape = tuple(operand_type.get_shape())
        if min(shape) < 0:
            return (f"its type {operand_type} has dynamic dimensions: its leading dimensions "
                    f"cannot collapse into @{name}'s rows")
    return _bounded(OperandLayout(name, tuple(grid), tuple(tile[: len(grid)]), rank,
                                  shape if rank > len(grid) else ()))


def _bounded(layout: OperandLayout) -> OperandLayout | str:
    """`layout`, or why its indices cannot be bounded (int64 index arithmetic must not
    wrap)."""
    reach = math.prod(layout.extents) + sum(offset for _dim, offset in layout.placement)
    if reach > INDEX_LIMIT:
        return (f"@{layout.producer}'s tiles cover {math.prod(layout.extents)} elements, more "
                f"than the {INDEX_LIMIT} whose indices are bounded")
    return layout

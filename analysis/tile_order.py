"""Tile orders as permutations: the order in which a stage's blocks take its tiles.

A `#sync.order` is read as the list of tile ids (row-major linear ids, `grid.linear_id`) in
the order it hands tiles out:

* `row_major`: 0, 1, 2, ... (d0 slowest);
* `column_major`: d0 fastest (a whole column of rows, then the next column);
* `strided<s>`: row by row; within a row the columns s apart are taken consecutively
  (columns 0, s, 2s, ..., then 1, 1+s, ...), the producer order of StridedSync (attention:
  the Q, K, V column tiles of one head one after the other);
* `table<i0, i1, ...>`: an explicit permutation of the tile ids.

The sync-tile-order pass writes orders, the lowering uploads `table` orders, and the simulator
hands tiles out in the same order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.utils.exceptions import VerifyException

from tilesync.analysis.grid import Tile, grid_tiles, linear_id
from tilesync.dialects.sync import COLUMN_DIM, OrderAttr


def column_dim(grid: Sequence[int]) -> int:
    """The dimension a strided order and StridedSync stride along (d0 for a 1-D grid)."""
    return COLUMN_DIM if len(grid) > COLUMN_DIM else 0


def order_permutation(order: OrderAttr | None, grid: Sequence[int]) -> list[int]:
    """The tile ids of `grid` in the order `order` hands them out (None: row-major)."""
    kind = "row_major" if order is None else order.kind.data
    if kind == "row_major":
        return list(range(math.prod(grid)))
    if kind == "table":
        assert order is not None
        verify_order_on_grid(order, grid)
        return list(order.values)
    tiles = list(grid_tiles(grid))
    if kind == "column_major":
        ranked = sorted(tiles, key=lambda t: tuple(reversed(t)))
    elif kind == "strided":
        assert order is not None
        stride, column = order.values[0], column_dim(grid)

        def key(t: Tile) -> Tile:
            c = t[column]
            return (*t[:column], c % stride, c // stride, *t[column + 1 :])

        ranked = sorted(tiles, key=key)
    else:
        raise ValueError(f"unknown tile order '{kind}'")
    return [linear_id(t, grid) for t in ranked]


def order_tiles(order: OrderAttr | None, grid: Sequence[int]) -> list[Tile]:
    """The tiles of `grid` in the order `order` hands them out (None: row-major)."""
    tiles = list(grid_tiles(grid))
    return [tiles[tile_id] for tile_id in order_permutation(order, grid)]


def verify_order_on_grid(order: OrderAttr, grid: Sequence[int]) -> None:
    """A `table` order must list every tile id of the grid exactly once."""
    if order.kind.data != "table":
        return
    values, count = order.values, math.prod(grid)
    if len(values) != count:
        raise VerifyException(
            f"tile order table has {len(values)} entries but grid {tuple(grid)} has {count} tiles"
        )
    seen = [False] * count
    for position, value in enumerate(values):
        if not 0 <= value < count:
            raise VerifyException(
                f"tile order table entry {position} is {value}, outside the {count} tiles of "
                f"grid {tuple(grid)}"
            )
        if seen[value]:
            raise VerifyException(
                f"tile order table lists tile {value} twice: not a permutation of grid "
                f"{tuple(grid)}"
            )
        seen[value] = True


def named_order(permutation: Sequence[int], grid: Sequence[int]) -> OrderAttr:
    """`row_major`, `column_major` or `strided<s>` when `permutation` is one of them, else a
    table."""
    permutation = list(permutation)
    candidates = [OrderAttr("row_major"), OrderAttr("column_major")]
    if len(permutation) > 1:
        # strided<s> takes column s second (the columns of a row come first)
        second = list(grid_tiles(grid))[permutation[1]][column_dim(grid)]
        if 1 < second < grid[column_dim(grid)]:
            candidates.append(OrderAttr("strided", [second]))
    for attr in candidates:
        if permutation == order_permutation(attr, grid):
            return attr
    return OrderAttr("table", permutation)

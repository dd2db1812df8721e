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

from xdsl.dialects import gpu
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import VerifyException

from tilesync.analysis.grid import Tile, grid_tiles, linear_id
from tilesync.analysis.stage_graph import StageGraph
from tilesync.dialects.sync import COLUMN_DIM, ENUMERATION_LIMIT, OrderAttr, TileOp


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
        order.verify_on_grid(grid)
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


def kernel_order_error(module: ModuleOp) -> tuple[Operation, str] | None:
    """Where a stage's blocks would not take its tiles in the order the program states: the
    lowering hands a kernel's tiles out in its own `sync.tile` order, else in the order of the
    first stage launching it (`lowering.sync_to_nvvm.adopt_stage_orders`). That order must be
    a permutation of every such stage's grid and the stage's own order where it names one."""
    graph = StageGraph.of(module)
    adopted: dict[Operation, tuple[OrderAttr, str]] = {}
    for name, stage in graph.stages.items():
        kernel = SymbolTable.lookup_symbol(module, stage.kernel)
        if not isinstance(kernel, gpu.FuncOp):
            continue
        tiles = [t for t in kernel.walk() if isinstance(t, TileOp)]
        own = next((t.order for t in tiles if t.order is not None), None)
        unlike = next((t for t in tiles if t.order != own), None)
        if own is not None and unlike is not None:
            # lowered, an ordered sync.tile draws a ticket and an unordered one reads the
            # block's id: the block would store one tile and post another
            return unlike, (f"the sync.tile ops of {stage.kernel} do not name one order "
                            f"({own} and {unlike.order or 'none'}): a block takes one tile, so "
                            f"every sync.tile of a kernel that orders its tiles names that order")
        if own is not None:
            given, source = own, "its sync.tile order"
        elif kernel in adopted:
            given, first = adopted[kernel]
            source = f"the order of stage @{first}, which launches it too"
        else:
            if stage.order is not None and tiles:
                adopted[kernel] = (stage.order, name)
            continue
        where = next((t for t in tiles if t.order is not None), stage)
        try:
            given.verify_on_grid(stage.grid_shape)
        except VerifyException as error:
            return where, (f"stage @{name} takes its tiles in {source} ({stage.kernel}): "
                           f"{error}")
        # two spellings of one permutation are one order (compared on grids it may enumerate)
        if stage.order is not None and stage.order != given and not (
                math.prod(stage.grid_shape) <= ENUMERATION_LIMIT
                and order_permutation(stage.order, stage.grid_shape)
                == order_permutation(given, stage.grid_shape)):
            return where, (f"stage @{name} names tile order {stage.order} but its kernel "
                           f"{stage.kernel} hands tiles out in {source}, {given}")
    return None

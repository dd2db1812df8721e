"""Grids of tiles: every tile of a grid, and a tile's linear id.

A grid (e0, e1, ...) has one tile per point of [0, e0) × [0, e1) × ...; a tile's linear id is
its row-major index (last coordinate fastest), the numbering that policy maps, order tables
and the runtime share.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from tilesync.dialects.sync import box_points

Tile = tuple[int, ...]


def grid_tiles(grid: Sequence[int]) -> Iterator[Tile]:
    """Every tile of `grid` in row-major order (last coordinate fastest)."""
    return box_points([(0, extent) for extent in grid])


def linear_id(tile: Sequence[int], grid: Sequence[int]) -> int:
    """Row-major linear index of `tile` in `grid`."""
    index = 0
    for coordinate, extent in zip(tile, grid):
        index = index * extent + coordinate
    return index


def in_grid(tile: Sequence[int], grid: Sequence[int]) -> bool:
    """Whether `tile` has the grid's rank and lies inside it."""
    return len(tile) == len(grid) and all(0 <= c < e for c, e in zip(tile, grid))

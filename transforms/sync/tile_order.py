"""`sync-tile-order`: the order in which each stage takes its tiles (cuSync §III-C, §IV-A).

    tilesync-opt prog.mlir -p 'sync-tile-order{order=generated}'

Orders, as permutations (position in the order → linear tile id, the row-major index of the
tile in its grid, last coordinate fastest — the same linearization as policy maps):

* `row_major`: tile ids 0, 1, 2, ... (d0 slowest);
* `column_major`: d0 fastest (a whole column of rows, then the next column);
* `strided<s>`: row by row; within a row the columns s apart are taken consecutively
  (columns 0, s, 2s, ..., then 1, 1+s, ...), the producer order of StridedSync (attention:
  the Q, K, V column tiles of one head one after the other);
* `table<i0, i1, ...>`: an explicit permutation of the tile ids.

Option `order`:

* `row_major` / `column_major`: that order on every stage;
* `strided`: `strided<s>` on the producer of every dependency whose consumer tiles read
  producer columns a constant stride s > 1 apart (inferred from the dependency);
* `generated` (cuSyncGen): stages are visited producers first; a stage with no producer keeps
  its order (row_major if it has none, so that when its tiles complete is defined); a consumer
  gets the order in which its tiles become *ready*: a consumer tile is ready when the last
  producer tile it reads (by the sync.dependency ops) is done, producer tiles being done in
  their producer's order (with several producers, at the fraction (position+1)/tiles of each
  producer's order). Ties keep row-major order. So the producer tiles one consumer tile needs
  are consumed as soon as they are produced (GEMM→GEMM with RowSync: row-major; a consumer
  reading whole producer columns: column-major). The result is written as a named order when
  it equals row_major or column_major, else as `#sync.order<table<...>>`.

Every `table` order in the module (new or already there) is checked to be a permutation of its
stage's grid (`verify_order_on_grid`, also for other passes to call).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import pairwise, product

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from tilesync.dialects.locations import OpDiagnostic
from tilesync.dialects.sync import COLUMN_DIM, DependencyOp, OrderAttr, StageOp

PASS_NAME = "sync-tile-order"
ORDER_OPTIONS = ("row_major", "column_major", "strided", "generated")


# ---------------------------------------------------------------------------------------------
# Orders as permutations
# ---------------------------------------------------------------------------------------------


def linear_id(tile: Sequence[int], grid: Sequence[int]) -> int:
    """Row-major linear index of `tile` in `grid` (last coordinate fastest)."""
    index = 0
    for coordinate, extent in zip(tile, grid):
        index = index * extent + coordinate
    return index


def grid_tiles(grid: Sequence[int]) -> Iterable[tuple[int, ...]]:
    """Every tile of `grid` in row-major order."""
    return product(*(range(extent) for extent in grid))


def _column_dim(grid: Sequence[int]) -> int:
    return COLUMN_DIM if len(grid) > COLUMN_DIM else 0


def order_permutation(order: OrderAttr | None, grid: Sequence[int]) -> list[int]:
    """The tile ids of `grid` in the order `order` hands them out (None: row-major)."""
    kind = "row_major" if order is None else order.kind.data
    tiles = list(grid_tiles(grid))
    if kind == "row_major":
        return list(range(len(tiles)))
    if kind == "column_major":
        ranked = sorted(tiles, key=lambda t: tuple(reversed(t)))
    elif kind == "strided":
        assert order is not None
        stride, column = order.values[0], _column_dim(grid)

        def key(t: tuple[int, ...]) -> tuple[int, ...]:
            c = t[column]
            return (*t[:column], c % stride, c // stride, *t[column + 1 :])

        ranked = sorted(tiles, key=key)
    elif kind == "table":
        assert order is not None
        verify_order_on_grid(order, grid)
        return list(order.values)
    else:
        raise ValueError(f"unknown tile order '{kind}'")
    return [linear_id(t, grid) for t in ranked]


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
    """`row_major` or `column_major` when `permutation` is one of them, else a table."""
    for kind in ("row_major", "column_major"):
        attr = OrderAttr(kind)
        if list(permutation) == order_permutation(attr, grid):
            return attr
    return OrderAttr("table", list(permutation))


# ---------------------------------------------------------------------------------------------
# Deriving orders from dependencies
# ---------------------------------------------------------------------------------------------


def _stages_and_dependencies(
    module: ModuleOp,
) -> tuple[dict[str, StageOp], list[DependencyOp]]:
    stages: dict[str, StageOp] = {}
    deps: list[DependencyOp] = []
    for op in module.walk():
        if isinstance(op, StageOp):
            stages[op.sym_name.data] = op
        elif isinstance(op, DependencyOp):
            deps.append(op)
    for dep in deps:
        for ref in (dep.producer, dep.consumer):
            if ref.root_reference.data not in stages:
                raise OpDiagnostic(
                    f"{PASS_NAME}: sync.dependency names @{ref.root_reference.data}, "
                    f"which is not a sync.stage", dep
                )
    return stages, deps


def producers_first(stages: dict[str, StageOp], deps: Sequence[DependencyOp]) -> list[str]:
    """Stage names with every producer before its consumers (program order among equals);
    a diagnostic on a dependency cycle."""
    producers: dict[str, set[str]] = {name: set() for name in stages}
    for dep in deps:
        producers[dep.consumer.root_reference.data].add(dep.producer.root_reference.data)
    done: list[str] = []
    placed: set[str] = set()
    while len(done) < len(stages):
        ready = [n for n in stages if n not in placed and producers[n] <= placed]
        if not ready:
            cycle = sorted(n for n in stages if n not in placed)
            raise OpDiagnostic(
                f"{PASS_NAME}: the dependencies between stages "
                + ", ".join(f"@{n}" for n in cycle)
                + " form a cycle: no order finishes producers first", stages[cycle[0]]
            )
        done.extend(ready)
        placed.update(ready)
    return done


def generated_permutation(
    consumer: StageOp,
    deps: Sequence[DependencyOp],
    producer_orders: dict[str, Sequence[int]],
    producer_grids: dict[str, Sequence[int]],
) -> list[int]:
    """The consumer's tile ids sorted by when each becomes ready (see the module doc)."""
    done_at: dict[str, list[Fraction]] = {}
    for name, permutation in producer_orders.items():
        times = [Fraction(0)] * len(permutation)
        for position, tile_id in enumerate(permutation):
            times[tile_id] = Fraction(position + 1, len(permutation))
        done_at[name] = times
    grid = consumer.grid_shape
    ready: list[tuple[Fraction, int]] = []
    for tile in grid_tiles(grid):
        when = Fraction(0)
        for dep in deps:
            name = dep.producer.root_reference.data
            pgrid = producer_grids[name]
            for ptile in dep.producer_tiles(tile):
                when = max(when, done_at[name][linear_id(ptile, pgrid)])
        ready.append((when, linear_id(tile, grid)))
    ready.sort()
    return [tile_id for _, tile_id in ready]


def dependency_stride(dep: DependencyOp, producer_grid: Sequence[int]) -> int | None:
    """The stride s > 1 when every consumer tile reads producer columns s apart (at least two
    of them, evenly spaced), else None."""
    column = _column_dim(producer_grid)
    consumer = dep.consumer_stage()
    stride: int | None = None
    for tile in grid_tiles(consumer.grid_shape):
        columns = sorted({ptile[column] for ptile in dep.producer_tiles(tile)})
        if len(columns) < 2:
            return None
        gaps = {b - a for a, b in pairwise(columns)}
        if len(gaps) != 1:
            return None
        (gap,) = gaps
        if gap < 2 or (stride is not None and gap != stride):
            return None
        stride = gap
    return stride


# ---------------------------------------------------------------------------------------------
# The pass
# ---------------------------------------------------------------------------------------------


def verify_stage_orders(module: ModuleOp, pass_name: str = PASS_NAME) -> None:
    for op in module.walk():
        if isinstance(op, StageOp) and op.order is not None:
            try:
                verify_order_on_grid(op.order, op.grid_shape)
            except VerifyException as error:
                raise OpDiagnostic(f"{pass_name}: stage @{op.sym_name.data}: {error}",
                                   op) from None


@dataclass(frozen=True)
class TileOrderPass(ModulePass):
    """Set the `order` of sync.stage ops: a named order, or `generated` from dependencies."""

    name = "sync-tile-order"

    order: str = "generated"

    def __post_init__(self) -> None:
        if self.order not in ORDER_OPTIONS:
            raise ValueError(f"option 'order' is one of {', '.join(ORDER_OPTIONS)}, got "
                             f"'{self.order}'")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        verify_stage_orders(op)
        stages, deps = _stages_and_dependencies(op)
        if self.order in ("row_major", "column_major"):
            for stage in stages.values():
                stage.order = OrderAttr(self.order)
        elif self.order == "strided":
            self._apply_strided(stages, deps)
        else:
            self._apply_generated(stages, deps)
        verify_stage_orders(op)

    @staticmethod
    def _apply_strided(stages: dict[str, StageOp], deps: Sequence[DependencyOp]) -> None:
        strides: dict[str, int] = {}
        for dep in deps:
            producer = stages[dep.producer.root_reference.data]
            stride = dependency_stride(dep, producer.grid_shape)
            if stride is None:
                continue
            name = producer.sym_name.data
            if strides.setdefault(name, stride) != stride:
                raise OpDiagnostic(
                    f"{PASS_NAME}: stage @{name} is read with strides {strides[name]} and "
                    f"{stride} by different consumers: no single strided order fits", dep
                )
        if not strides:
            raise DiagnosticException(
                f"{PASS_NAME}: order=strided, but no sync.dependency reads producer columns "
                f"a constant stride (> 1) apart"
            )
        for name, stride in strides.items():
            stages[name].order = OrderAttr("strided", [stride])

    @staticmethod
    def _apply_generated(stages: dict[str, StageOp], deps: Sequence[DependencyOp]) -> None:
        permutations: dict[str, list[int]] = {}
        for name in producers_first(stages, deps):
            stage = stages[name]
            incoming = [d for d in deps if d.consumer.root_reference.data == name]
            if not incoming:
                if stage.order is None:
                    stage.order = OrderAttr("row_major")
                permutations[name] = order_permutation(stage.order, stage.grid_shape)
                continue
            producer_names = {d.producer.root_reference.data for d in incoming}
            permutation = generated_permutation(
                stage,
                incoming,
                {p: permutations[p] for p in producer_names},
                {p: stages[p].grid_shape for p in producer_names},
            )
            stage.order = named_order(permutation, stage.grid_shape)
            permutations[name] = permutation


__all__ = [
    "TileOrderPass",
    "dependency_stride",
    "generated_permutation",
    "grid_tiles",
    "linear_id",
    "named_order",
    "order_permutation",
    "producers_first",
    "verify_order_on_grid",
    "verify_stage_orders",
]

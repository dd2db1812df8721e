"""`sync-tile-order`: the order in which each stage takes its tiles (cuSync §III-C, §IV-A).

    tilesync-opt prog.mlir -p 'sync-tile-order{order=generated}'

Orders are read as permutations of the tile ids by `analysis.tile_order` (row_major,
column_major, strided<s>, table<...>).

Option `order`:

* `row_major` / `column_major`: that order on every stage;
* `strided`: `strided<s>` on the producer of every dependency whose consumer tiles read
  producer columns a constant stride s > 1 apart (inferred from the dependency);
* `generated` (cuSyncGen, cuSync 2024 §IV-A): stages are visited consumers first; a stage no
  other stage reads keeps its order (row_major if it has none); every other stage takes its
  tiles in the order its consumers first read them: "we schedule all producer tiles
  consecutively for each consumer tile", walking each consumer's tiles in that consumer's
  order, a consumer tile's producer tiles in the order its dependency lists them (its forall
  order), tiles no consumer reads last. With several consumers a tile is due at the earliest
  fraction (position+1)/tiles of any consumer's order that reads it. So a chain is ordered
  from its last kernel back to its first; GEMM→GEMM with RowSync stays row-major, and the
  QKV GEMM of attention, whose consumer tile reads columns c, c+s, c+2s, takes those three
  one after the other (its StridedSync tiles complete together).
* `ready`: the other way round: stages are visited producers first; a stage with no producer
  keeps its order (row_major if it has none); a consumer gets the order in which its tiles
  become *ready*: a consumer tile is ready when the last producer tile it reads is done,
  producer tiles being done in their producer's order (with several producers, at the
  fraction (position+1)/tiles of each producer's order). Ties keep row-major order. For a
  producer whose order is given (a library kernel's, or a hand-written strided one).

Either way the result is written as a named order when it equals row_major or column_major,
else as `#sync.order<table<...>>`.

A `table` order is a permutation of its stage's grid (`sync.stage`'s verifier,
`OrderAttr.verify_on_grid`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import pairwise

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from tilesync.analysis.grid import grid_tiles, linear_id
from tilesync.analysis.stage_graph import StageGraph
from tilesync.analysis.tile_order import (
    column_dim,
    named_order,
    order_permutation,
)
from tilesync.dialects.locations import OpDiagnostic
from tilesync.dialects.sync import ENUMERATION_LIMIT, DependencyOp, OrderAttr, StageOp

PASS_NAME = "sync-tile-order"
ORDER_OPTIONS = ("row_major", "column_major", "strided", "generated", "ready")


# ---------------------------------------------------------------------------------------------
# Deriving orders from dependencies
# ---------------------------------------------------------------------------------------------


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


def check_enumeration(dep: DependencyOp, order: str) -> None:
    """A diagnostic where deriving an order from `dep` would read more than ENUMERATION_LIMIT
    producer tiles (every consumer tile times its forall box): minutes of Python for a grid
    of 4096 x 4096 tiles reading whole rows, where a named order costs nothing."""
    consumer = dep.consumer_stage()
    reads = math.prod(consumer.grid_shape) * math.prod(hi - lo for lo, hi in dep.ranges)
    if reads > ENUMERATION_LIMIT:
        raise OpDiagnostic(f"{PASS_NAME}: order={order} would enumerate {reads} producer tiles "
                           f"read through this dependency ({math.prod(consumer.grid_shape)} "
                           f"consumer tiles x its forall box), more than the "
                           f"{ENUMERATION_LIMIT} it derives an order from: name an order "
                           "(row_major, column_major)", dep)


def consumers_first(stages: dict[str, StageOp], deps: Sequence[DependencyOp]) -> list[str]:
    """Stage names with every consumer before its producers; a diagnostic on a cycle."""
    return producers_first(stages, deps)[::-1]


def needed_permutation(
    producer: StageOp,
    deps: Sequence[DependencyOp],
    consumer_orders: dict[str, Sequence[int]],
    consumer_grids: dict[str, Sequence[int]],
) -> list[int]:
    """The producer's tile ids in the order its consumers first read them (`generated`)."""
    grid = producer.grid_shape
    due: dict[int, tuple[Fraction, int]] = {}
    for dep in deps:
        name = dep.consumer.root_reference.data
        order = consumer_orders[name]
        tiles = list(grid_tiles(consumer_grids[name]))
        for position, tile_id in enumerate(order):
            when = Fraction(position + 1, len(order))
            for sequence, ptile in enumerate(dep.producer_tiles(tiles[tile_id])):
                ptile_id = linear_id(ptile, grid)
                due[ptile_id] = min(due.get(ptile_id, (when, sequence)), (when, sequence))
    never = (Fraction(2), 0)  # read by no consumer: after every tile that is
    return sorted(range(math.prod(grid)), key=lambda t: (due.get(t, never), t))


def ready_permutation(
    consumer: StageOp,
    deps: Sequence[DependencyOp],
    producer_orders: dict[str, Sequence[int]],
    producer_grids: dict[str, Sequence[int]],
) -> list[int]:
    """The consumer's tile ids sorted by when each becomes ready (`ready`)."""
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
    column = column_dim(producer_grid)
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
        graph = StageGraph.of(op)
        stages, deps = graph.stages, graph.dependencies
        if self.order in ("row_major", "column_major"):
            for stage in stages.values():
                stage.order = OrderAttr(self.order)
        elif self.order == "strided":
            self._apply_strided(stages, deps)
        else:
            self._apply_derived(stages, deps, self.order)

    @staticmethod
    def _apply_strided(stages: dict[str, StageOp], deps: Sequence[DependencyOp]) -> None:
        strides: dict[str, int] = {}
        for dep in deps:
            check_enumeration(dep, "strided")
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
    def _apply_derived(stages: dict[str, StageOp], deps: Sequence[DependencyOp],
                       order: str) -> None:
        """`generated`: consumers first, each producer's order from its consumers'; `ready`:
        producers first, each consumer's from its producers'. A stage with none to derive
        from keeps its order (row_major if it has none)."""
        generated = order == "generated"
        visit = consumers_first if generated else producers_first
        derive = needed_permutation if generated else ready_permutation

        def this_end(dep: DependencyOp) -> str:
            return (dep.producer if generated else dep.consumer).root_reference.data

        def other_end(dep: DependencyOp) -> str:
            return (dep.consumer if generated else dep.producer).root_reference.data

        permutations: dict[str, list[int]] = {}
        for name in visit(stages, deps):
            stage = stages[name]
            edges = [d for d in deps if this_end(d) == name]
            if not edges:
                if stage.order is None:
                    stage.order = OrderAttr("row_major")
                permutations[name] = order_permutation(stage.order, stage.grid_shape)
                continue
            for dep in edges:
                check_enumeration(dep, order)
            others = {other_end(d) for d in edges}
            permutation = derive(stage, edges, {o: permutations[o] for o in others},
                                 {o: stages[o].grid_shape for o in others})
            stage.order = named_order(permutation, stage.grid_shape)
            permutations[name] = permutation


__all__ = [
    "TileOrderPass",
    "consumers_first",
    "dependency_stride",
    "needed_permutation",
    "producers_first",
    "ready_permutation",
]

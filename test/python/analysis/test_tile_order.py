"""The one tile-order permutation: what a `#sync.order` hands out, as tile ids and as tiles;
sync-tile-order writes orders with it and the simulator hands tiles out with it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from xdsl.utils.exceptions import VerifyException

from tilesync.analysis.grid import grid_tiles, in_grid, linear_id
from tilesync.analysis.simulator import program_from_ir
from tilesync.analysis.tile_order import (
    kernel_order_error,
    named_order,
    order_permutation,
    order_tiles,
)
from tilesync.api import lower, parse
from tilesync.dialects.sync import OrderAttr


def test_named_orders():
    assert order_permutation(None, (2, 3)) == [0, 1, 2, 3, 4, 5]
    assert order_permutation(OrderAttr("row_major"), (2, 3)) == [0, 1, 2, 3, 4, 5]
    assert order_permutation(OrderAttr("column_major"), (2, 3)) == [0, 3, 1, 4, 2, 5]
    assert order_tiles(OrderAttr("column_major"), (2, 2)) == [(0, 0), (1, 0), (0, 1), (1, 1)]


def test_strided_takes_columns_a_stride_apart_row_by_row():
    assert order_tiles(OrderAttr("strided", [3]), (1, 6)) == [
        (0, 0), (0, 3), (0, 1), (0, 4), (0, 2), (0, 5)
    ]
    assert order_permutation(OrderAttr("strided", [2]), (2, 4)) == [0, 2, 1, 3, 4, 6, 5, 7]
    # a 1-D grid strides along d0
    assert order_permutation(OrderAttr("strided", [2]), (4,)) == [0, 2, 1, 3]


def test_tables_must_be_permutations_of_the_grid():
    assert order_tiles(OrderAttr("table", [2, 0, 1]), (1, 3)) == [(0, 2), (0, 0), (0, 1)]
    with pytest.raises(VerifyException, match="lists tile 0 twice: not a permutation"):
        order_tiles(OrderAttr("table", [0, 0, 1]), (1, 3))
    with pytest.raises(VerifyException, match="has 2 entries but grid"):
        OrderAttr("table", [0, 1]).verify_on_grid((1, 3))
    with pytest.raises(VerifyException, match="outside the 3 tiles"):
        order_permutation(OrderAttr("table", [0, 1, 5]), (1, 3))


def test_named_order_recognises_row_and_column_major():
    assert named_order([0, 1, 2, 3], (2, 2)) == OrderAttr("row_major")
    assert named_order([0, 2, 1, 3], (2, 2)) == OrderAttr("column_major")
    assert named_order([3, 2, 1, 0], (2, 2)) == OrderAttr("table", [3, 2, 1, 0])


grids = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)
orders = st.one_of(
    st.sampled_from([None, OrderAttr("row_major"), OrderAttr("column_major")]),
    st.integers(2, 4).map(lambda s: OrderAttr("strided", [s])),
)


@given(grids, orders)
def test_every_order_is_a_permutation_and_tiles_agree_with_ids(grid, order):
    permutation = order_permutation(order, grid)
    tiles = order_tiles(order, grid)
    assert sorted(permutation) == list(range(len(list(grid_tiles(grid)))))
    assert [linear_id(t, grid) for t in tiles] == permutation
    assert all(in_grid(t, grid) for t in tiles)
    table = OrderAttr("table", permutation)
    assert order_tiles(table, grid) == tiles


STAGES = """
sync.stage @p {kernel = @k::@f, grid = array<i64: 3, 4>, block = array<i64: 64>, tile = array<i64: 64, 64>}
sync.stage @c {kernel = @k::@f, grid = array<i64: 3, 4>, block = array<i64: 64>, tile = array<i64: 64, 64>}
sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (s0, d1) forall s0 in [0, 3)
"""  # noqa: E501


def test_the_pass_and_the_simulator_hand_out_the_same_order():
    def stage(module, name):
        return next(op for op in module.walk() if getattr(op, "sym_name", None) is not None
                    and op.sym_name.data == name)

    # generated: the row-major consumer needs whole producer columns, one after the other
    module = parse(STAGES)
    lower(module, ["sync-tile-order{order=generated}"])
    producer = stage(module, "p")
    assert producer.order == OrderAttr("column_major")
    simulated = program_from_ir(module)
    assert simulated.stages[0].order == order_tiles(producer.order, (3, 4))
    assert simulated.stages[0].order[:3] == [(0, 0), (1, 0), (2, 0)]
    # ready: the row-major producer finishes its columns together with its last row
    module = parse(STAGES)
    lower(module, ["sync-tile-order{order=ready}"])
    consumer = stage(module, "c")
    assert consumer.order == OrderAttr("column_major")
    simulated = program_from_ir(module)
    assert simulated.stages[1].order == order_tiles(consumer.order, (3, 4))
    assert simulated.stages[1].order[:3] == [(0, 0), (1, 0), (2, 0)]


STAGE = ("sync.stage @{name} {{kernel = @k::@p, grid = array<i64: {grid}>, "
         "block = array<i64: 128, 1, 1>, tile = array<i64: 32, 32>{order}}}")
KERNEL = """
gpu.module @k {
  gpu.func @p(%a0: memref<?xf32>) kernel {
    %t0, %t1 = sync.tile ORDER: index, index
    gpu.return
  }
}
"""


@pytest.mark.parametrize("kernel_order, stage_order, error", [
    ("", "", None),  # no order anywhere: block ids
    # the first stage's order reaches the kernel both stages launch: no order of @p2's grid
    ("", ", order = #sync.order<table<5, 4, 3, 2, 1, 0>>",
     "stage @p2 takes its tiles in the order of stage @p, which launches it too (@k::@p): tile "
     "order table has 6 entries but grid (3, 3) has 9 tiles"),
    ("order #sync.order<table<0, 0, 0, 0, 0, 0>>", "",
     "stage @p takes its tiles in its sync.tile order (@k::@p): tile order table lists tile 0 "
     "twice"),
    ("order #sync.order<column_major>", ", order = #sync.order<table<0, 3, 1, 4, 2, 5>>",
     None),  # the same permutation on @p's grid; column-major fits @p2's too
    ("order #sync.order<column_major>", ", order = #sync.order<row_major>",
     "stage @p names tile order #sync.order<row_major> but its kernel @k::@p hands tiles out in "
     "its sync.tile order, #sync.order<column_major>"),
])
def test_a_kernel_hands_out_one_order_that_fits_every_stage_launching_it(
        kernel_order, stage_order, error):
    module = parse(KERNEL.replace("ORDER", kernel_order)
                   + STAGE.format(name="p", grid="2, 3", order=stage_order) + "\n"
                   + STAGE.format(name="p2", grid="3, 3", order=""))
    found = kernel_order_error(module)
    if error is None:
        assert found is None
    else:
        assert found is not None and found[1].startswith(error)

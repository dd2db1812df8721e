"""What a guard tells the abstract run about the value it compares (kernel_eval.guard_bounds)."""

import numpy as np
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import Block

from tilesync.analysis.kernel_eval import guard_bounds, point


def _guard(predicate: str, known: tuple[int, int], bound: int):
    block = Block(arg_types=[IndexType()])
    constant = arith.ConstantOp(IntegerAttr(bound, IndexType()))
    cmp = arith.CmpiOp(block.args[0], constant.result, predicate)
    block.add_ops([constant, cmp])
    values = {block.args[0]: (np.int64(known[0]), np.int64(known[1])),
              constant.result: point(np.int64(bound))}
    return cmp.result, block.args[0], values.get


def _bounds(found, subject):
    lo, hi = found[subject]
    return int(lo), int(hi)


def test_a_signed_guard_narrows_each_side():
    cond, x, value = _guard("slt", (-1, 8), 8)
    assert _bounds(guard_bounds(cond, True, value), x) == (-1, 7)
    assert _bounds(guard_bounds(cond, False, value), x) == (8, 8)


def test_an_unsigned_less_than_also_says_not_negative():
    cond, x, value = _guard("ult", (-1, 8), 8)
    assert _bounds(guard_bounds(cond, True, value), x) == (0, 7)
    # false: x >= 8 as unsigned, which a negative x also is: nothing to narrow
    assert guard_bounds(cond, False, value) == {}


def test_an_unsigned_greater_or_equal_narrows_only_a_value_known_not_negative():
    cond, x, value = _guard("uge", (-1, 8), 2)
    assert guard_bounds(cond, True, value) == {}
    cond, x, value = _guard("uge", (0, 8), 2)
    assert _bounds(guard_bounds(cond, True, value), x) == (2, 8)


def test_both_sides_of_a_conjunction_bound_the_true_side_only():
    block = Block(arg_types=[IndexType()])
    zero = arith.ConstantOp(IntegerAttr(0, IndexType()))
    eight = arith.ConstantOp(IntegerAttr(8, IndexType()))
    above = arith.CmpiOp(block.args[0], zero.result, "sge")
    below = arith.CmpiOp(block.args[0], eight.result, "slt")
    both = arith.AndIOp(above.result, below.result)
    block.add_ops([zero, eight, above, below, both])
    values = {block.args[0]: (np.int64(-1), np.int64(9)),
              zero.result: point(np.int64(0)), eight.result: point(np.int64(8))}
    x = block.args[0]
    assert _bounds(guard_bounds(both.result, True, values.get), x) == (0, 7)
    assert guard_bounds(both.result, False, values.get) == {}


def test_an_unsigned_comparison_with_a_negative_bound_narrows_nothing():
    # as unsigned, -1 is past every other value: x <u -1 holds for all x but -1
    cond, _, value = _guard("ult", (0, 6), -1)
    assert guard_bounds(cond, True, value) == {}
    cond, _, value = _guard("ugt", (0, 6), -1)
    assert guard_bounds(cond, False, value) == {}


def test_an_unsigned_comparison_is_decided_only_where_the_signs_tell():
    from tilesync.analysis.kernel_eval import compare

    ult = 6
    assert compare(ult, (-1, 6), point(8)) == (0, 1)  # -1 is not below 8 as unsigned
    assert compare(ult, (0, 6), point(8)) == (1, 1)
    assert compare(ult, (-3, -2), point(8))[1] == 0  # negatives are past 8
    assert compare(ult, (0, 6), point(-1))[0] == 1  # everything non-negative is below -1


def test_an_inequality_moves_only_an_end_equal_to_its_bound():
    cond, x, value = _guard("ne", (0, 7), 7)
    assert _bounds(guard_bounds(cond, True, value), x) == (0, 6)
    assert _bounds(guard_bounds(cond, False, value), x) == (7, 7)
    cond, x, value = _guard("ne", (0, 7), 0)
    assert _bounds(guard_bounds(cond, True, value), x) == (1, 7)
    # inside the range: a gap no range holds, nothing narrowed
    cond, _, value = _guard("ne", (0, 7), 3)
    assert guard_bounds(cond, True, value) == {}


def test_a_select_takes_each_side_only_where_its_condition_can_choose_it():
    from tilesync.analysis.kernel_eval import select

    # undecided: the hull; a side whose range is empty (narrowed away) drops out
    assert select((0, 1), (1, 7), point(7)) == (1, 7)
    assert select((0, 1), (np.int64(8), np.int64(7)), point(7)) == point(7)
    # decided per tile: tile 0 takes the first side, tile 1 the second
    lo, hi = select((np.array([1, 0]), np.array([1, 1])), (np.array([1, 5]), np.array([4, 8])),
                    point(7))
    assert list(lo) == [1, 5] and list(hi) == [4, 8]
    lo, hi = select((np.array([1, 0]), np.array([1, 0])), (np.array([1, 5]), np.array([4, 8])),
                    point(np.array([7, 7])))
    assert list(lo) == [1, 7] and list(hi) == [4, 7]


def test_both_sides_of_a_disjunction_bound_the_false_side_only():
    block = Block(arg_types=[IndexType()])
    zero = arith.ConstantOp(IntegerAttr(0, IndexType()))
    eight = arith.ConstantOp(IntegerAttr(8, IndexType()))
    below = arith.CmpiOp(block.args[0], zero.result, "slt")
    above = arith.CmpiOp(block.args[0], eight.result, "sge")
    either = arith.OrIOp(below.result, above.result)
    block.add_ops([zero, eight, below, above, either])
    values = {block.args[0]: (np.int64(-1), np.int64(9)),
              zero.result: point(np.int64(0)), eight.result: point(np.int64(8))}
    x = block.args[0]
    assert _bounds(guard_bounds(either.result, False, values.get), x) == (0, 7)
    assert guard_bounds(either.result, True, values.get) == {}

"""kernels/builder.py: BlockBuilder is xDSL's Builder at the end of a block, with index
constants made once per block and the identities addi(x, 0), muli(x, 1) folded."""

from __future__ import annotations

from xdsl.builder import Builder
from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType
from xdsl.ir import Block

from tilesync.kernels.builder import BlockBuilder


def test_ops_are_appended_in_order_with_one_constant_per_value():
    block = Block(arg_types=[IndexType(), IndexType()])
    x, y = block.args
    b = BlockBuilder(block)
    assert isinstance(b, Builder)
    s = b.addi(b.muli(x, 4), 4)
    assert b.addi(s, 0) is s and b.muli(s, 1) is s  # no ops for the identities
    q = b.divui(y, b.idx(4))
    r = b.remui(y, 3)
    lt = b.ult(r, 4)
    names = [op.name for op in block.ops]
    assert names == ["arith.constant", "arith.muli", "arith.addi", "arith.divui",
                     "arith.constant", "arith.remui", "arith.cmpi"]
    four = next(iter(block.ops)).results[0]
    assert [op.operands[1] for op in block.ops if op.operands][:3] == [four, four, four]
    assert lt.owner.operands[1] is four and q.owner.operands[1] is four
    assert isinstance(b.insert(arith.AddiOp(q, r)), arith.AddiOp)  # xDSL's insert
    assert block.last_op is not None and block.last_op.name == "arith.addi"


def test_constants_are_per_block():
    outer, inner = Block(), Block()
    a, b = BlockBuilder(outer), BlockBuilder(inner)
    assert a.idx(8) is a.idx(8)
    assert b.idx(8) is not a.idx(8) and b.idx(8).owner.parent is inner
    assert b.emit(arith.ConstantOp.from_int_and_width(1, 32)).owner.parent is inner

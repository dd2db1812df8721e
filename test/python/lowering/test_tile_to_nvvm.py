"""convert-tile-to-nvvm's emitter: repeated ops built from the template of the first of their
key must equal the op their constructor builds (same class, properties, attributes, types)."""

from __future__ import annotations

from xdsl.dialects import llvm
from xdsl.dialects.builtin import BFloat16Type, DenseArrayBase, IntAttr, f32, i32, i64
from xdsl.ir import Block

from tilesync.dialects import nvvm
from tilesync.lowering.tile_to_nvvm import _State


def _same(made, expected):
    assert type(made) is type(expected)
    assert made.properties == expected.properties
    assert made.attributes == expected.attributes
    assert made.result_types == expected.result_types
    assert tuple(made.operands) == tuple(expected.operands)


def test_templated_ops_equal_their_constructors():
    shared = llvm.LLVMPointerType(IntAttr(3))
    glob = llvm.LLVMPointerType(IntAttr(1))
    pair = llvm.LLVMStructType.from_type_list([i32, i32])
    block = Block(arg_types=[i32, i32, i64, shared, pair, glob, f32, nvvm.HALF2])
    a, b, wide, base, regs, dst, x, half2 = block.args
    state = _State()
    position = DenseArrayBase.from_list(i64, [1])
    h4, h2, c4 = [half2] * 4, [half2] * 2, [x] * 4
    for _ in range(2):  # the first builds the template, the second uses it
        for kind in (llvm.AddOp, llvm.MulOp, llvm.ShlOp, llvm.AndOp, llvm.OrOp, llvm.XOrOp,
                     llvm.LShrOp):
            _same(state.binary_op(kind, a, b), kind(a, b))
        for kind, value, to in ((llvm.TruncOp, wide, i32), (llvm.BitcastOp, a, nvvm.HALF2),
                                (llvm.FPTruncOp, x, BFloat16Type()), (llvm.ZExtOp, a, i64),
                                (llvm.PtrToIntOp, base, i64)):
            _same(state.cast_op(kind, value, to), kind(value, to))
        _same(state.like(("gep", shared, i32), (base, wide), (shared,),
                         lambda: llvm.GEPOp.from_mixed_indices(base, [wide], i32,
                                                               result_type=shared,
                                                               inbounds=True)),
              llvm.GEPOp.from_mixed_indices(base, [wide], i32, result_type=shared,
                                            inbounds=True))
        _same(state.like(("store", 4), (a, dst), (), lambda: llvm.StoreOp(a, dst, alignment=4)),
              llvm.StoreOp(a, dst, alignment=4))
        _same(state.extract_op(regs, 1, i32), llvm.ExtractValueOp(position, regs, i32))
        _same(state.insert_op(regs, a, 1), llvm.InsertValueOp(position, regs, a))
        # the nvvm ops of the tensor-core lowering
        _same(state.like(("ldmatrix", 4, True), (base,), (nvvm.ldmatrix_result_type(4),),
                         lambda: nvvm.LdMatrixOp(base, 4, True)), nvvm.LdMatrixOp(base, 4, True))
        _same(state.like(("mma", "f16"), (*h4, *h2, *c4), (nvvm.MMA_ACCUMULATOR,),
                         lambda: nvvm.MmaSyncOp("f16", h4, h2, c4)),
              nvvm.MmaSyncOp("f16", h4, h2, c4))
        _same(state.like("cp.async zero-fill", (base, dst, a), (),
                         lambda: nvvm.CpAsyncOp(base, dst, src_size=a)),
              nvvm.CpAsyncOp(base, dst, src_size=a))
        _same(state.like(("cvt.pack", "bf16"), (x, x), (i32,),
                         lambda: nvvm.CvtPackOp("bf16", x, x)), nvvm.CvtPackOp("bf16", x, x))
        _same(state.like(nvvm.TanhApproxOp, (x,), (f32,), lambda: nvvm.TanhApproxOp(x)),
              nvvm.TanhApproxOp(x))

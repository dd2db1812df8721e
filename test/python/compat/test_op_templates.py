"""An op built like the first of its key (`compat.op_templates`) is the op its constructor
builds: class, operands, result types, properties and attributes."""

from __future__ import annotations

import pytest
from xdsl.dialects import arith, llvm
from xdsl.dialects.builtin import (
    DenseArrayBase,
    IndexType,
    IntegerAttr,
    IntegerType,
    UnrealizedConversionCastOp,
    f32,
    i1,
    i32,
    i64,
)
from xdsl.ir import Block, Operation

from tilesync.compat.op_templates import OpTemplates, create
from tilesync.compat.rewrite_driver import xdsl_drivers
from tilesync.dialects import llvmx


def _same(built: Operation, reference: Operation) -> None:
    assert type(built) is type(reference)
    assert tuple(built.operands) == tuple(reference.operands)
    assert built.result_types == reference.result_types
    assert built.properties == reference.properties
    assert built.attributes == reference.attributes
    assert built.properties is not reference.properties  # each op its own dicts
    assert not built.regions and not built.successors
    built.verify()


BINARY_KINDS = [arith.AddiOp, arith.MuliOp, arith.DivUIOp, arith.RemUIOp, arith.XOrIOp,
                arith.MaxUIOp, llvm.AddOp, llvm.MulOp, llvm.AndOp, llvm.LShrOp, llvm.ShlOp,
                llvm.UDivOp, llvm.OrOp, llvm.XOrOp]


@pytest.mark.parametrize("kind", BINARY_KINDS)
@pytest.mark.parametrize("type_", [IndexType(), i32, i64])
def test_binary_ops_are_their_constructors_ops(kind, type_):
    if kind.name.startswith("llvm.") and isinstance(type_, IndexType):
        return
    templates = OpTemplates()
    block = Block(arg_types=[type_] * 4)
    a, b, c, d = block.args
    templates.binary(kind, a, b)  # the template
    _same(templates.binary(kind, c, d), kind(c, d))


@pytest.mark.parametrize("kind", [arith.AddfOp, arith.MulfOp, arith.MaxnumfOp])
def test_float_binary_ops_keep_their_default_fastmath(kind):
    templates = OpTemplates()
    a, b = Block(arg_types=[f32, f32]).args
    templates.binary(kind, a, b)
    _same(templates.binary(kind, b, a), kind(b, a))


def test_binary_ops_with_their_own_constructor_are_built_by_it():
    templates = OpTemplates()
    a, b = Block(arg_types=[f32, f32]).args
    _same(templates.binary(llvm.FAddOp, a, b), llvm.FAddOp(a, b))
    assert not templates._found  # llvm's float ops take their flags: no template


@pytest.mark.parametrize("kind,source,target", [
    (llvm.ZExtOp, i32, i64), (llvm.TruncOp, i64, i32), (llvm.SExtOp, i1, i32),
    (llvm.BitcastOp, i32, f32), (llvm.PtrToIntOp, llvm.LLVMPointerType(), i64),
    (llvmx.FPToSIOp, f32, i32)])
def test_casts_are_their_constructors_casts(kind, source, target):
    templates = OpTemplates()
    x, y = Block(arg_types=[source, source]).args
    templates.cast(kind, x, target)
    _same(templates.cast(kind, y, target), kind(y, target))
    other = IntegerType(16)
    if kind in (llvm.ZExtOp, llvm.SExtOp):
        return  # a narrower result is not an extension
    if kind is llvm.TruncOp:
        _same(templates.cast(kind, y, other), kind(y, other))  # another type: another key


@pytest.mark.parametrize("kind", [arith.ConstantOp, llvm.ConstantOp])
def test_integer_constants_are_their_constructors_constants(kind):
    templates = OpTemplates()
    for type_ in (IndexType(), i32, i64):
        for value in (0, 1, -1, 255):
            first = templates.int_constant(kind, value, type_)
            again = templates.int_constant(kind, value, type_)
            reference = arith.ConstantOp(IntegerAttr(value, type_)) if kind is \
                arith.ConstantOp else llvm.ConstantOp(IntegerAttr(value, type_), type_)
            _same(first, reference)
            _same(again, reference)
            assert again is not first


def test_xdsl_drivers_build_every_op_with_its_constructor(monkeypatch):
    templates = OpTemplates()
    a, b = Block(arg_types=[i32, i32]).args
    templates.binary(llvm.AddOp, a, b)
    built = []
    original = llvm.AddOp.__init__

    def counting(self, *args, **kwargs):
        built.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(llvm.AddOp, "__init__", counting)
    with xdsl_drivers():
        templates.build(llvm.AddOp, (a, b), (i32,), lambda: llvm.AddOp(a, b))
    assert len(built) == 1
    templates.build(llvm.AddOp, (a, b), (i32,), lambda: llvm.AddOp(a, b))
    assert len(built) == 1  # the template again


def _create_cases():
    struct = llvm.LLVMStructType.from_type_list([f32, f32])
    position = {"position": DenseArrayBase.from_list(i64, [1])}
    return [
        (llvm.ExtractValueOp, [struct], [f32], position),
        (llvm.UndefOp, [], [struct], None),
        (UnrealizedConversionCastOp, [i32], [i64], None),
        (arith.AddfOp, [f32, f32], [f32], None),  # fastmath: IRDL's default filled in
        (llvm.AddOp, [i32, i32], [i32], None),  # overflow flags: the same
    ]


@pytest.mark.parametrize("kind,operand_types,result_types,properties", _create_cases())
def test_create_builds_the_op_operation_create_builds(kind, operand_types, result_types,
                                                      properties):
    block = Block(arg_types=operand_types)
    built = create(kind, block.args, result_types, properties)
    reference = kind.create(operands=block.args, result_types=result_types,
                            properties=dict(properties or {}))
    _same(built, reference)
    reference.erase()
    assert [use.operation for value in block.args for use in value.uses] == \
        [built] * len(block.args)
    block.add_op(built)  # a fresh op: no parent, no neighbours
    assert built.parent is block and built.next_op is None and built.prev_op is None
    built.detach()
    built.erase()
    assert all(not value.uses for value in block.args)

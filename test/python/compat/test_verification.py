"""lowering.verification.verify reports what xDSL's op.verify() reports (it only skips the
IRDL checks of ops identical in class, types, properties and attributes to one already
checked)."""

from __future__ import annotations

import pytest
from xdsl.dialects import llvm
from xdsl.dialects.builtin import ModuleOp, i1
from xdsl.ir import Block, Region
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from tilesync.api import make_context
from tilesync.compat.verification import is_context_free, verify
from tilesync.kernels.config import gemm_config
from tilesync.kernels.gemm import gemm_module
from tilesync.lowering.pipeline import build_pipeline


def _lowered():
    module = gemm_module(0, 0, 0, config=gemm_config(256, 256, 64, tile=(64, 64, 32),
                                                     stages=2, epilogue="bias_gelu"))
    build_pipeline().apply(make_context(), module)
    return module


def _error(check, module) -> str:
    with pytest.raises((VerifyException, DiagnosticException)) as info:
        check(module)
    return str(info.value)


def test_valid_ir_verifies_and_ops_are_left_as_they_were():
    module = _lowered()
    verify(module)
    assert not any("verify_" in op.__dict__ for op in module.walk())
    generated = gemm_module(0, 0, 0, config=gemm_config(256, 256, 64, tile=(64, 64, 32)))
    verify(generated)


def test_an_invalid_op_among_identical_valid_ones_is_reported_as_xdsl_does():
    module = _lowered()
    adds = [op for op in module.walk() if isinstance(op, llvm.AddOp)]
    assert len(adds) > 3
    Rewriter.replace_value_with_new_type(adds[3].res, i1)
    assert _error(verify, module) == _error(lambda m: m.verify(), module)


def test_block_structure_is_checked_on_ops_whose_irdl_checks_are_skipped():
    """The last op of a block must be a terminator: checked even for an llvm.add whose
    twin was verified already."""
    module = _lowered()
    func = next(op for op in module.walk() if isinstance(op, llvm.FuncOp))
    block = func.body.blocks[-1]
    terminator = block.last_op
    assert terminator is not None and isinstance(terminator, llvm.ReturnOp)
    Rewriter.erase_op(terminator)
    last = block.last_op
    assert last is not None and is_context_free(type(last))
    message = _error(verify, module)
    assert message == _error(lambda m: m.verify(), module)
    assert "terminator" in message


def test_ops_with_context_dependent_checks_are_always_verified():
    assert is_context_free(llvm.AddOp) and is_context_free(llvm.GEPOp)
    assert not is_context_free(llvm.ReturnOp)  # compares with its function's type
    assert not is_context_free(llvm.FuncOp) and not is_context_free(llvm.BrOp)


def test_an_op_using_an_erased_value_is_reported_as_xdsl_does():
    module = _lowered()
    add = next(op for op in module.walk() if isinstance(op, llvm.AddOp) and op.res.uses)
    add.detach()
    add.erase(safe_erase=False)
    assert _error_any(verify, module) == _error_any(lambda m: m.verify(), module)


def test_an_empty_single_block_region_is_reported_as_xdsl_does():
    module = ModuleOp([llvm.FuncOp("f", llvm.LLVMFunctionType([]), body=Region(Block()))])
    message = _error(verify, module)
    assert message == _error(lambda m: m.verify(), module)
    assert "empty block" in message


def test_an_empty_block_among_several_is_reported_at_the_branch_to_it():
    """xDSL 0.74 lets an empty block through where its region has others; MLIR does not,
    and its lowering gave LLVM IR that LLVM refused."""
    from xdsl.dialects import cf

    from tilesync.compat.verification import BlockStructureError

    empty, entry = Block(), Block()
    branch = cf.BranchOp(empty)
    entry.add_op(branch)
    module = ModuleOp([llvm.FuncOp("f", llvm.LLVMFunctionType([]),
                                   body=Region([entry, empty]))])
    module.verify()  # the gap
    with pytest.raises(BlockStructureError) as info:
        verify(module)
    assert str(info.value) == ("block 2 of the 2 in 'llvm.func' @f is empty: every block of "
                               "a region of several blocks ends in a terminator")
    assert info.value.op is branch
    empty.add_op(llvm.ReturnOp.build(operands=[[]]))
    verify(module)


def _error_any(check, module) -> str:
    with pytest.raises(Exception) as info:
        check(module)
    return f"{type(info.value).__name__}: {info.value}"

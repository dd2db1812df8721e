"""The faster compile drivers change nothing in what the compiler emits.

`rewrite_driver.apply_patterns` (the lowering passes' pattern walks) and `lowering.cse` are
faster re-implementations of xDSL's PatternRewriteWalker + GreedyRewritePatternApplier and CSE;
`compile` verifies the lowered IR while LLVM emits the PTX. Each program below is compiled with
them and with xDSL's own drivers (`xdsl_drivers()`): the IR after every pass, the LLVM IR and
the PTX must be the same text.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass

import pytest
from xdsl.context import Context
from xdsl.dialects import llvm
from xdsl.dialects.builtin import ModuleOp, i1
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.transforms.common_subexpression_elimination import cse as xdsl_cse

import tilesync
from tilesync.api import CompileError, default_pipeline, make_context, parse
from tilesync.compat.cse import cse
from tilesync.compat.rewrite_driver import TypeDispatchApplier, xdsl_drivers
from tilesync.kernels.config import gemm_config
from tilesync.kernels.gemm import gemm_module
from tilesync.lowering.pipeline import KERNEL_TO_LLVM


def _gemm(**kw):
    return lambda: (gemm_module(0, 0, 0, config=gemm_config(**kw)), KERNEL_TO_LLVM)


def _softmax():
    from tilesync.kernels.config import softmax_config
    from tilesync.kernels.softmax import softmax_module

    return softmax_module(softmax_config(64, 1024, dropout=0.8)), None


def _mlp():
    from tilesync.bench import mlp as bench

    mode = "tile+order+pdl"
    return bench.stage_module("gpt3", 256, mode), default_pipeline(
        debug=True, timeout_ns=bench.TIMEOUT_NS, before=tuple(bench.mode_passes(mode)))


PROGRAMS = {
    "gemm_128x128_s3": _gemm(M=4096, N=4096, K=4096),
    "gemm_masked_bf16_col_bias_gelu": _gemm(M=1000, N=1000, K=1000, tile=(64, 64, 32),
                                            stages=2, dtype="bf16", b_layout="col",
                                            epilogue="bias_gelu"),
    "gemm_splitk_swiglu": _gemm(M=16, N=5632, K=8192, tile=(16, 128, 32), warps=(1, 4),
                                stages=4, split_k=8, epilogue="swiglu"),
    "softmax_dropout": _softmax,
    "mlp_stage_program": _mlp,
}
TARGETS = {"mlp_stage_program": "sm_90a"}  # its kernels multiply with wgmma


@pytest.mark.parametrize("name", PROGRAMS)
def test_fast_drivers_emit_what_xdsls_drivers_emit(name):
    module, pipeline = PROGRAMS[name]()
    target = TARGETS.get(name, "sm_90")
    reference_input = module.clone()
    with xdsl_drivers():
        reference = tilesync.compile(reference_input, pipeline=pipeline, keep_ir=True,
                                     target=target)
    program = tilesync.compile(module, pipeline=pipeline, keep_ir=True, target=target)
    assert list(program.ir_after) == list(reference.ir_after)
    for pass_name, text in reference.ir_after.items():
        assert program.ir_after[pass_name] == text, f"IR differs after {pass_name}"
    assert program.llvm_ir_by_module == reference.llvm_ir_by_module
    assert program.ptx_by_module == reference.ptx_by_module
    assert program.kernels == reference.kernels


CSE_INPUT = """
func.func @f(%p: memref<4xi32>, %c: i1) -> (i32, i32, i32, i32) {
  %one = arith.constant 1 : i32
  %also_one = arith.constant 1 : i32
  %i = arith.constant 0 : index
  %a = arith.addi %one, %also_one : i32
  %b = arith.addi %one, %also_one : i32
  %l1 = memref.load %p[%i] : memref<4xi32>
  %l2 = memref.load %p[%i] : memref<4xi32>
  memref.store %a, %p[%i] : memref<4xi32>
  %l3 = memref.load %p[%i] : memref<4xi32>
  %dead = arith.muli %a, %b : i32
  %r = scf.if %c -> (i32) {
    %inner = arith.addi %one, %also_one : i32
    %k = arith.constant 1 : i32
    %l4 = memref.load %p[%i] : memref<4xi32>
    %s = arith.addi %inner, %l4 : i32
    %s2 = arith.addi %s, %k : i32
    scf.yield %s2 : i32
  } else {
    %other = arith.addi %b, %l3 : i32
    scf.yield %other : i32
  }
  %sum = arith.addi %l1, %l2 : i32
  func.return %a, %b, %sum, %r : i32, i32, i32, i32
}
func.func @isolated() -> (i32, i32) {
  %n = arith.constant 1 : i32
  %m = arith.constant 1 : i32
  func.return %n, %m : i32, i32
}
"""


def test_cse_decides_as_xdsls_cse():
    """Duplicates, read-only ops with and without a write between, nested single-block
    regions, an isolated region, dead ops; and the GEMM kernel right before its CSE."""
    ours = parse(CSE_INPUT)
    theirs = ours.clone()
    cse(ours)
    xdsl_cse(theirs)
    assert str(ours) == str(theirs)
    assert str(ours).count("arith.addi") < CSE_INPUT.count("arith.addi")

    from tilesync.compat.rewrite_driver import apply_patterns
    from tilesync.lowering import tile_to_nvvm
    from tilesync.lowering.pipeline import build_pipeline

    kernel = gemm_module(0, 0, 0, config=gemm_config(1000, 1000, 1000, tile=(64, 64, 32),
                                                     stages=2, epilogue="bias_gelu"))
    build_pipeline(["convert-sync-to-nvvm"]).apply(make_context(), kernel)
    apply_patterns(kernel, tile_to_nvvm.tile_to_nvvm_patterns())
    tile_to_nvvm._retype_fragments(kernel)
    before = len(list(kernel.walk()))
    reference = kernel.clone()
    cse(kernel)
    xdsl_cse(reference)
    assert str(kernel) == str(reference)
    assert len(list(kernel.walk())) < before


def test_type_dispatch_skips_patterns_of_other_op_types():
    from xdsl.dialects import arith
    from xdsl.pattern_rewriter import RewritePattern

    from tilesync.lowering.arith_to_llvm import (
        ARITH_TO_LLVM_PATTERNS,
        CmpiLowering,
        ConstantLowering,
        IntegerBinaryOpLowering,
    )

    class AnyOp(RewritePattern):  # undecorated, no declared classes: tried on every op
        def match_and_rewrite(self, op, rewriter, /):
            pass

    applier = TypeDispatchApplier([*ARITH_TO_LLVM_PATTERNS, AnyOp()])
    on_llvm_add = applier.patterns_for(llvm.AddOp)
    assert len(on_llvm_add) == 1 and isinstance(on_llvm_add[0], AnyOp)
    on_constant = applier.patterns_for(arith.ConstantOp)
    assert isinstance(on_constant[0], ConstantLowering)  # @op_type_rewrite_pattern
    on_addi = applier.patterns_for(arith.AddiOp)  # declared by matches_op_class
    assert [type(p) for p in on_addi] == [IntegerBinaryOpLowering, AnyOp]
    assert not any(isinstance(p, CmpiLowering) for p in on_addi)


@dataclass(frozen=True)
class _BreakIRPass(ModulePass):
    """Test-only: gives the first llvm.add an i1 result (the verifier rejects it)."""

    name = "test-break-ir"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        add = next(o for o in op.walk() if isinstance(o, llvm.AddOp))
        Rewriter.replace_value_with_new_type(add.res, i1)


def test_invalid_lowered_ir_is_reported_before_llvm_errors(monkeypatch):
    """compile verifies the lowered IR while LLVM runs; a verification error still wins."""
    from tilesync import transforms

    passes = transforms.all_passes_with_xdsl()
    passes["test-break-ir"] = lambda: _BreakIRPass
    monkeypatch.setattr(transforms, "all_passes_with_xdsl", lambda: passes)
    module = gemm_module(0, 0, 0, config=gemm_config(128, 128, 64, tile=(64, 64, 32),
                                                     stages=2))
    assert gc.isenabled()
    with pytest.raises(CompileError, match="IR after test-break-ir does not verify"):
        tilesync.compile(module, pipeline=[*KERNEL_TO_LLVM, "test-break-ir"])
    assert gc.isenabled()  # compile pauses the collector and restores it, also on errors


def test_verify_each_compiles_the_same_ptx():
    make = PROGRAMS["gemm_masked_bf16_col_bias_gelu"]
    module, pipeline = make()
    checked = tilesync.compile(module, pipeline=pipeline, verify_each=True)
    module, pipeline = make()
    program = tilesync.compile(module, pipeline=pipeline)
    assert checked.ptx == program.ptx
    assert "verify" in program.pass_seconds and "verify" not in checked.pass_seconds

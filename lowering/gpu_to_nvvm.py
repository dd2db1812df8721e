"""`convert-gpu-to-nvvm`: gpu index and barrier ops to the nvvm dialect.

`gpu.thread_id/block_id/block_dim/grid_dim {x,y,z}` and `gpu.lane_id` become the matching
`nvvm.read.ptx.sreg.*` (i32) and a cast to `index`; `gpu.global_id d` becomes
`ctaid.d * ntid.d + tid.d` computed in `index`; `gpu.barrier` becomes `nvvm.barrier0`.

Upstream MLIR casts with `arith.index_castui`; xDSL 0.74 has no such op, so this uses
`arith.index_cast` (sign extension). That is the same value: every one of these registers is
below 2^31. gpu.func / gpu.module / gpu.return are left to convert-func-to-llvm.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, gpu
from xdsl.dialects.builtin import IndexType, ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)

from tilesync.compat.rewrite_driver import apply_patterns
from tilesync.dialects import nvvm

# gpu op -> PTX special register prefix (the dimension is appended: "tid" -> "tid.x").
_SREG_OF: dict[type[Operation], str] = {
    gpu.ThreadIdOp: "tid",
    gpu.BlockDimOp: "ntid",
    gpu.BlockIdOp: "ctaid",
    gpu.GridDimOp: "nctaid",
}


def _read_index(rewriter: PatternRewriter, sreg: str) -> SSAValue:
    """Insert `nvvm.read.ptx.sreg.<sreg>` and its cast to index before the matched op."""
    read = nvvm.read_sreg(sreg)
    cast = arith.IndexCastOp(read.res, IndexType())
    rewriter.insert([read, cast])
    return cast.result


class DimensionalSregLowering(RewritePattern):
    """thread_id / block_dim / block_id / grid_dim {x,y,z} -> sreg + index cast."""

    @staticmethod
    def matches_op_class(cls: type) -> bool:  # the ops it may rewrite (pattern driver)
        return cls in _SREG_OF

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        prefix = _SREG_OF.get(type(op))
        if prefix is None:
            return
        assert isinstance(op, gpu.ThreadIdOp | gpu.BlockDimOp | gpu.BlockIdOp | gpu.GridDimOp)
        value = _read_index(rewriter, f"{prefix}.{op.dimension.data.value}")
        rewriter.replace(op, [], [value])


class LaneIdLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: gpu.LaneIdOp, rewriter: PatternRewriter, /):
        rewriter.replace(op, [], [_read_index(rewriter, "laneid")])


class GlobalIdLowering(RewritePattern):
    """global_id d = block_id d * block_dim d + thread_id d (in index, as upstream)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: gpu.GlobalIdOp, rewriter: PatternRewriter, /):
        dim = op.dimension.data.value
        block_id = _read_index(rewriter, f"ctaid.{dim}")
        block_dim = _read_index(rewriter, f"ntid.{dim}")
        thread_id = _read_index(rewriter, f"tid.{dim}")
        mul = arith.MuliOp(block_id, block_dim)
        add = arith.AddiOp(mul.result, thread_id)
        rewriter.replace(op, [mul, add], [add.result])


class BarrierLowering(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: gpu.BarrierOp, rewriter: PatternRewriter, /):
        rewriter.replace(op, nvvm.Barrier0Op())


GPU_TO_NVVM_PATTERNS: tuple[RewritePattern, ...] = (
    DimensionalSregLowering(),
    LaneIdLowering(),
    GlobalIdLowering(),
    BarrierLowering(),
)


@dataclass(frozen=True)
class ConvertGPUToNVVMPass(ModulePass):
    """gpu.thread_id/block_id/block_dim/grid_dim/lane_id/global_id and gpu.barrier to nvvm."""

    name = "convert-gpu-to-nvvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        apply_patterns(op, GPU_TO_NVVM_PATTERNS)

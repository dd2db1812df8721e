"""The lowering pipeline from kernel-level IR to the llvm dialect, as a list of named passes.

Each step is a registered pass that runs alone with `tilesync-opt -p NAME`; this file only
orders them (in the spirit of Triton's compiler.py: the stages readable as a list).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass, PassPipeline

KERNEL_TO_LLVM: tuple[str, ...] = (
    "convert-sync-to-nvvm",      # sync.tile/wait/post → gpu ids, scf spin loops, nvvm atomics
    "convert-tile-to-nvvm",      # tensor-core tile ops → ldmatrix / mma.sync / cp.async
    "lower-affine",              # policy maps (affine.apply) → arith
    "convert-gpu-to-nvvm",       # thread/block ids, barriers → nvvm
    "lower-scf-to-cf",           # structured control flow (incl. spin loops) → cf
    "convert-nvvm-to-llvm",      # nvvm → intrinsics and inline PTX
    "convert-memref-to-llvm",    # bare pointers, GEP + load/store, shared-memory globals
    "convert-arith-to-llvm",
    "convert-index-to-llvm",
    "convert-cf-to-llvm",
    "convert-func-to-llvm",      # gpu.func → llvm.func (ptx_kernel, launch bounds)
    "reconcile-unrealized-casts",
)


def build_pipeline(names: tuple[str, ...] | list[str] | str = KERNEL_TO_LLVM,
                   callback=None) -> PassPipeline:
    """A PassPipeline from pass names or a `-p` style spec string (options allowed).

    xDSL's `lower-affine` and `reconcile-unrealized-casts` run as `FastLowerAffinePass` and
    `FastReconcileUnrealizedCastsPass` (the same rewrites, faster)."""
    from tilesync.tools.universe import all_passes_with_xdsl

    spec = names if isinstance(names, str) else ",".join(names)
    passes = all_passes_with_xdsl()
    passes["lower-affine"] = lambda: FastLowerAffinePass
    passes["reconcile-unrealized-casts"] = lambda: FastReconcileUnrealizedCastsPass
    return PassPipeline.parse_spec(passes, spec, callback)


@dataclass(frozen=True)
class FastLowerAffinePass(ModulePass):
    """xDSL's `lower-affine` (its patterns, its fixpoint walk, so the same IR) on the
    type-dispatching pattern driver; under `xdsl_drivers()` xDSL's pass itself runs."""

    name = "lower-affine"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from xdsl.transforms import lower_affine

        from tilesync.lowering.rewrite_driver import apply_patterns, using_xdsl_drivers

        if using_xdsl_drivers():
            lower_affine.LowerAffinePass().apply(ctx, op)
            return
        apply_patterns(op, [lower_affine.LowerAffineStore(), lower_affine.LowerAffineLoad(),
                            lower_affine.LowerAffineFor(), lower_affine.LowerAffineYield(),
                            lower_affine.LowerAffineApply()], recursive=True)


@dataclass(frozen=True)
class LowerToLLVMPass(ModulePass):
    """`tilesync-lower-to-llvm`: the whole KERNEL_TO_LLVM list as one pass."""

    name = "tilesync-lower-to-llvm"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        build_pipeline(KERNEL_TO_LLVM).apply(ctx, op)


@dataclass(frozen=True)
class FastReconcileUnrealizedCastsPass(ModulePass):
    """xDSL's `reconcile-unrealized-casts` (its pattern, warning on casts it cannot remove,
    its fixpoint walk without dead-code erasure: the same IR) on the type-dispatching
    driver; under `xdsl_drivers()` xDSL's pass itself runs."""

    name = "reconcile-unrealized-casts"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from xdsl.transforms import reconcile_unrealized_casts as reconcile

        from tilesync.lowering.rewrite_driver import apply_patterns, using_xdsl_drivers

        if using_xdsl_drivers():
            reconcile.ReconcileUnrealizedCastsPass().apply(ctx, op)
            return
        apply_patterns(op, reconcile.ReconcileUnrealizedCastsPattern(warn_on_failure=True),
                       recursive=True, dce=False)

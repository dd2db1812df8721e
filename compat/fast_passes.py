"""xDSL 0.74's `lower-affine` and `reconcile-unrealized-casts` walk every pattern over every op
with its generic driver; these run the same patterns on `rewrite_driver.apply_patterns`.

Each pass keeps xDSL's name, patterns and fixpoint walk, so it emits the same IR (the parity
test compiles whole programs both ways); under `rewrite_driver.xdsl_drivers()` xDSL's own pass
runs. `lowering.pipeline.build_pipeline` puts them in place of xDSL's.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from tilesync.compat.rewrite_driver import apply_patterns, using_xdsl_drivers


@dataclass(frozen=True)
class FastLowerAffinePass(ModulePass):
    """xDSL's `lower-affine` (its patterns, its fixpoint walk, so the same IR) on the
    type-dispatching pattern driver."""

    name = "lower-affine"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from xdsl.transforms import lower_affine

        if using_xdsl_drivers():
            lower_affine.LowerAffinePass().apply(ctx, op)
            return
        apply_patterns(op, [lower_affine.LowerAffineStore(), lower_affine.LowerAffineLoad(),
                            lower_affine.LowerAffineFor(), lower_affine.LowerAffineYield(),
                            lower_affine.LowerAffineApply()], recursive=True)


@dataclass(frozen=True)
class FastReconcileUnrealizedCastsPass(ModulePass):
    """xDSL's `reconcile-unrealized-casts` (its pattern, warning on casts it cannot remove,
    its fixpoint walk without dead-code erasure: the same IR) on the type-dispatching
    driver."""

    name = "reconcile-unrealized-casts"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from xdsl.transforms import reconcile_unrealized_casts as reconcile

        if using_xdsl_drivers():
            reconcile.ReconcileUnrealizedCastsPass().apply(ctx, op)
            return
        apply_patterns(op, reconcile.ReconcileUnrealizedCastsPattern(warn_on_failure=True),
                       recursive=True, dce=False)


FAST_PASSES: dict[str, type[ModulePass]] = {
    FastLowerAffinePass.name: FastLowerAffinePass,
    FastReconcileUnrealizedCastsPass.name: FastReconcileUnrealizedCastsPass,
}
"""xDSL pass name -> the faster pass that replaces it in tilesync's pipelines."""

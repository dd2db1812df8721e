"""xDSL 0.74's `lower-affine` and `reconcile-unrealized-casts` walk every pattern over every op
with its generic driver; these run the same patterns on `rewrite_driver.apply_patterns`.

Each pass keeps xDSL's name, patterns and fixpoint walk, so it emits the same IR (the parity
test compiles whole programs both ways); under `rewrite_driver.xdsl_drivers()` xDSL's own pass
runs. `lowering.pipeline.build_pipeline` puts them in place of xDSL's.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import affine
from xdsl.dialects.builtin import AffineMapAttr, ModuleOp
from xdsl.ir import Operation
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
    AffineSymExpr,
)
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from tilesync.compat.rewrite_driver import apply_patterns, using_xdsl_drivers, walk_ops


class OpRefusal(DiagnosticException):
    """A pass below dialects refusing `op`: `message` is one line; `api.compile_error` gives it
    the op's source location (compat cannot import dialects.locations)."""

    def __init__(self, message: str, op: Operation):
        self.message = message
        self.op = op
        super().__init__(message)


def floor_mod(expr: AffineExpr) -> AffineExpr:
    """`expr` with every `a mod b` spelled `a - (a floordiv b) * b`: MLIR's mod, which rounds
    toward minus infinity like floordiv (xDSL 0.74 lowers mod to arith.remsi, which truncates:
    (0 - 1) mod 4 became -1, not 3, and a wait read the semaphore before its array)."""
    if not isinstance(expr, AffineBinaryOpExpr):
        return expr
    lhs, rhs = floor_mod(expr.lhs), floor_mod(expr.rhs)
    if expr.kind != AffineBinaryOpKind.Mod:
        return AffineBinaryOpExpr(expr.kind, lhs, rhs)
    quotient = AffineBinaryOpExpr(AffineBinaryOpKind.FloorDiv, lhs, rhs)
    multiple = AffineBinaryOpExpr(AffineBinaryOpKind.Mul, quotient, rhs)
    negated = AffineBinaryOpExpr(AffineBinaryOpKind.Mul, multiple, AffineConstantExpr(-1))
    return AffineBinaryOpExpr(AffineBinaryOpKind.Add, lhs, negated)


def symbols_as_dims(expr: AffineExpr, num_dims: int) -> AffineExpr:
    """`expr` with symbol i read as dimension num_dims + i: xDSL 0.74 lowers an affine.load's
    or affine.store's map with its indices as dimensions only (`%m[%t - 5]` parses as
    ()[s0] -> (s0 - 5) and its lowering indexed an empty symbol list)."""
    if isinstance(expr, AffineSymExpr):
        return AffineDimExpr(num_dims + expr.position)
    if isinstance(expr, AffineBinaryOpExpr):
        return AffineBinaryOpExpr(expr.kind, symbols_as_dims(expr.lhs, num_dims),
                                  symbols_as_dims(expr.rhs, num_dims))
    return expr


_AFFINE_MAP_PROPERTIES = {affine.ApplyOp: ("map",), affine.LoadOp: ("map",),
                          affine.StoreOp: ("map",),
                          affine.ForOp: ("lowerBoundMap", "upperBoundMap")}


def _prepare_affine_maps(module: ModuleOp) -> None:
    """Rewrite the maps of the affine ops that lower-affine lowers into what xDSL's patterns
    lower right: mod as floordiv (floor_mod), a load's or store's symbols as dimensions
    (symbols_as_dims); refuse, located, the bounds they cannot lower."""
    for op in walk_ops(module):
        for name in _AFFINE_MAP_PROPERTIES.get(type(op), ()):
            attr = op.properties.get(name)
            if not isinstance(attr, AffineMapAttr) or attr.data is None:
                continue
            old = attr.data
            if isinstance(op, affine.ForOp):
                if old.num_dims or old.num_symbols or len(old.results) != 1:
                    raise OpRefusal(f"{FastLowerAffinePass.name}: affine.for bounds lower to "
                                    f"constants only, got {old}", op)
                continue
            results = tuple(floor_mod(e) for e in old.results)
            num_dims, num_symbols = old.num_dims, old.num_symbols
            if not isinstance(op, affine.ApplyOp):
                results = tuple(symbols_as_dims(e, num_dims) for e in results)
                num_dims, num_symbols = num_dims + num_symbols, 0
            new = AffineMap(num_dims, num_symbols, results)
            if new != old:
                op.properties[name] = AffineMapAttr(new)


@dataclass(frozen=True)
class FastLowerAffinePass(ModulePass):
    """xDSL's `lower-affine` (its patterns, its fixpoint walk, so the same IR) on the
    type-dispatching pattern driver, after `mod` is spelled with floordiv (floor_mod)."""

    name = "lower-affine"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from xdsl.transforms import lower_affine

        _prepare_affine_maps(op)
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

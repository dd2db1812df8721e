"""lower-affine (compat.fast_passes) computes what the affine map means: for random
expressions with mod, floordiv and ceildiv of positive constants, on negative operands too,
the lowered arith ops give the value xDSL's AffineMap.eval gives (MLIR's semantics: mod and
floordiv round toward minus infinity). A truncating remainder once lowered (d0 - 1) mod 4 to
-1 at d0 = 0, and a semaphore wait read before its array."""

from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects import affine, arith, func
from xdsl.dialects.builtin import AffineMapAttr, IndexType, IntegerAttr, ModuleOp
from xdsl.ir import Block, Region
from xdsl.ir.affine import AffineExpr, AffineMap

from tilesync.compat.fast_passes import FastLowerAffinePass
from tilesync.compat.rewrite_driver import xdsl_drivers

DIMS = 2
_leaf = st.one_of(st.integers(0, DIMS - 1).map(AffineExpr.dimension),
                  st.integers(-9, 9).map(AffineExpr.constant))


def _combine(children):
    divisor = st.integers(1, 8)
    return st.one_of(
        st.tuples(children, children).map(lambda p: p[0] + p[1]),
        st.tuples(children, st.integers(-4, 4)).map(lambda p: p[0] * p[1]),
        st.tuples(children, divisor).map(lambda p: p[0] % p[1]),
        st.tuples(children, divisor).map(lambda p: p[0] // p[1]),
        st.tuples(children, divisor).map(lambda p: p[0].ceil_div(p[1])),
    )


EXPRS = st.recursive(_leaf, _combine, max_leaves=6)


def _lowered(expr: AffineExpr):
    """The function `f(d0, d1) -> index` of `expr`, after lower-affine."""
    block = Block(arg_types=[IndexType()] * DIMS)
    apply = affine.ApplyOp(list(block.args), AffineMapAttr(AffineMap(DIMS, 0, (expr,))))
    block.add_ops([apply, func.ReturnOp(apply.result)])
    fn = func.FuncOp("f", ((IndexType(),) * DIMS, (IndexType(),)), Region(block))
    module = ModuleOp([fn])
    FastLowerAffinePass().apply(Context(), module)
    return fn


def _run(fn: func.FuncOp, args: list[int]) -> int:
    """Interpret the lowered arith ops (what lower-affine emits) on `args`."""
    block = fn.body.blocks.first
    env = dict(zip(block.args, args, strict=True))
    for op in block.ops:
        if isinstance(op, func.ReturnOp):
            return env[op.operands[0]]
        if isinstance(op, arith.ConstantOp):
            assert isinstance(op.value, IntegerAttr)
            env[op.result] = op.value.value.data
            continue
        a, b = (env[v] for v in op.operands)
        if isinstance(op, arith.AddiOp):
            env[op.result] = a + b
        elif isinstance(op, arith.SubiOp):
            env[op.result] = a - b
        elif isinstance(op, arith.MuliOp):
            env[op.result] = a * b
        elif isinstance(op, arith.FloorDivSIOp):
            env[op.result] = a // b
        elif isinstance(op, arith.CeilDivSIOp):
            env[op.result] = -(-a // b)
        elif isinstance(op, arith.RemSIOp):  # truncating, as LLVM's srem
            env[op.result] = a - b * int(a / b)
        else:
            raise AssertionError(f"lower-affine emitted {op.name}")
    raise AssertionError("no return")


@settings(max_examples=300, deadline=None)
@given(EXPRS, st.lists(st.integers(-20, 20), min_size=DIMS, max_size=DIMS))
def test_lowered_affine_expressions_keep_their_meaning(expr, values):
    want = AffineMap(DIMS, 0, (expr,)).eval(values, [])[0]
    assert _run(_lowered(expr), values) == want


def test_xdsl_drivers_lower_mod_the_same_way():
    expr = (AffineExpr.dimension(0) + AffineExpr.constant(-1)) % 4
    with xdsl_drivers():
        assert _run(_lowered(expr), [0, 0]) == 3
    assert _run(_lowered(expr), [0, 0]) == 3

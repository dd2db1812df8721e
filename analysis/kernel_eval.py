"""Abstract evaluation of a kernel for a batch of tiles at once: what sync-verify runs.

A `BatchRun` interprets a `gpu.func` for every tile of a batch together: `sync.tile` yields
the batch's tile coordinates (numpy arrays, one entry per tile), and every integer value is a
range [lo, hi] per tile (`Value`): exact where lo and hi are the same object, an interval where
the thread index, a loop run as one abstract iteration or a branch makes it vary. Integer and
index arithmetic of `arith` and `affine.apply` is evaluated exactly on exact values and by
interval arithmetic otherwise (an unsigned op only on operands known not to be negative, which
it reads as huge); `gpu.thread_id` ranges over the stage's block, `gpu.grid_dim`
and `gpu.block_dim` are the stage's extents.

Control flow follows the kernel: an `scf.for` whose body holds synchronization (`sync.wait`,
`sync.post`, `sync.load_point`; of those, the ones the run reacts to: `UNROLLED`) and whose
bounds are constants is unrolled; any other loop runs
once with its induction variable ranging over all its iterations; an `scf.if` with a known
condition takes its branch. When tiles of the batch disagree on a loop bound or a branch
condition, the run stops with `Divergent` and `run_batches` runs each group of agreeing tiles
again on its own, so every tile sees exactly the control flow it would alone: the result is
the per-tile interpretation, at the cost of one run per class of tiles that behave alike
(one run for a GEMM's whole grid). Regions that may not run (a branch with an unknown
condition, a loop body run abstractly, nested regions of other ops) run on a copy of the state
(`definite=False`): what they do is checked but not relied upon after them. A branch on the
thread index alone (`thread_id.x <pred> constant`, a warp-specialized kernel's roles) is decided
for every thread index: each side that some threads take is the block's, run on its own copy of
the state before the branch (its waits cover nothing after it: the other threads did not
wait; `leave_thread_side` lets a subclass keep them for a block barrier that follows), and the
waits and posts in it must name who runs them (`single_thread`; `threads N` for
exactly the block's first N threads); a probe, whose barrier needs the whole block, may not
be there at all.

Subclasses react to the synchronization ops through `on_wait`, `on_post`, `on_load_point` and
to other ops through `on_op` (sync-verify: coverage, counts and the load-region check).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any

import numpy as np
from xdsl.dialects import affine, arith, gpu, scf
from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType
from xdsl.ir import Block, Operation, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineSymExpr,
)

from tilesync.dialects import sync

Scalar = Any  # an int (the same for every tile) or an int64 array (one entry per tile)
Value = tuple[Scalar, Scalar] | None  # (lo, hi); exact when lo is hi; None: unknown

MAX_ITERATIONS = 1 << 16  # unrolled iterations of one loop before it runs abstractly
INDEX_LIMIT = 1 << 40  # beyond this an integer is not an index: forget it (no int64 overflow)
_DIMS = {gpu.DimensionEnum.X: 0, gpu.DimensionEnum.Y: 1, gpu.DimensionEnum.Z: 2}


class Unproven(Exception):
    """Abstract execution of a kernel cannot go on at `op` (reported as a refusal)."""

    def __init__(self, op: Operation, message: str):
        super().__init__(message)
        self.op = op


class StepBudget:
    """The abstract-execution steps (ops run, in any batch) left to one analysis: a program
    whose tiles all diverge, or whose loops around synchronization are long, is refused at the
    op where the budget runs out instead of running for minutes. `hint` says how to allow more."""

    def __init__(self, total: int, hint: str = ""):
        self.total = total
        self.left = total
        self.hint = hint

    def spend(self, op: Operation, steps: int = 1) -> None:
        self.left -= steps
        if self.left < 0:
            hint = f" ({self.hint})" if self.hint else ""
            raise Unproven(op, f"the proof takes more than {self.total} steps of abstract "
                               f"execution{hint}")


class Divergent(Exception):
    """Tiles of the batch take different paths at `op`: run each group (indices into the
    batch) on its own."""

    def __init__(self, op: Operation, groups: list[np.ndarray]):
        super().__init__(f"tiles diverge at {op.name}")
        self.op = op
        self.groups = groups


# ---------------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------------


def exact(value: Value) -> bool:
    return value is not None and value[0] is value[1]


def point(x: Scalar) -> Value:
    return (x, x)


def uniform(x: Scalar) -> int | None:
    """The one value of `x` over the batch, or None when tiles differ."""
    if isinstance(x, np.ndarray):
        if x.size == 0:
            return None
        first = int(x.flat[0])
        return first if bool((x == first).all()) else None
    return int(x)


def _tame(value: Value) -> Value:
    """Forget values too large to be indices (hashes, masks): no int64 overflow."""
    if value is None:
        return None
    lo, hi = value
    if type(lo) is int and type(hi) is int:
        return value if -INDEX_LIMIT <= lo and hi <= INDEX_LIMIT else None
    if np.any(np.abs(lo) > INDEX_LIMIT) or np.any(np.abs(hi) > INDEX_LIMIT):
        return None
    return value


def _settle(lo: Scalar, hi: Scalar) -> Value:
    """(lo, hi), made exact where the bounds agree for every tile."""
    if isinstance(lo, np.ndarray) or isinstance(hi, np.ndarray):
        if np.array_equal(lo, hi):
            return point(np.asarray(lo))
        return (lo, hi)
    return point(int(lo)) if lo == hi else (lo, hi)


def add(a: Value, b: Value) -> Value:
    if a is None or b is None:
        return None
    if exact(a) and exact(b):
        return point(a[0] + b[0])
    return (a[0] + b[0], a[1] + b[1])


def sub(a: Value, b: Value) -> Value:
    if a is None or b is None:
        return None
    if exact(a) and exact(b):
        return point(a[0] - b[0])
    return (a[0] - b[1], a[1] - b[0])


def _magnitude(x: Scalar) -> int:
    return int(np.max(np.abs(x))) if isinstance(x, np.ndarray) and x.size else abs(int(x))


def mul(a: Value, b: Value) -> Value:
    if a is None or b is None:
        return None
    # products beyond INDEX_LIMIT are forgotten before numpy could wrap (or refuse) them
    if max(map(_magnitude, a)) * max(map(_magnitude, b)) > INDEX_LIMIT:
        return None
    if exact(a) and exact(b):
        return _tame(point(a[0] * b[0]))
    corners = (a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])
    return _tame((np.minimum.reduce(np.broadcast_arrays(*corners)),
                  np.maximum.reduce(np.broadcast_arrays(*corners))))


def _positive_constant(b: Value) -> int | None:
    if not exact(b):
        return None
    c = uniform(b[0])  # type: ignore[index]
    return c if c is not None and c > 0 else None


def floordiv(a: Value, b: Value) -> Value:
    if a is None or b is None:
        return None
    c = _positive_constant(b)
    if c is not None:
        return point(a[0] // c) if exact(a) else (a[0] // c, a[1] // c)
    if exact(a) and exact(b) and bool(np.all(b[0] != 0)):
        return point(a[0] // b[0])
    return None


def ceildiv(a: Value, b: Value) -> Value:
    if a is None or b is None:
        return None
    c = _positive_constant(b)
    if c is not None:
        return point(-(-a[0] // c)) if exact(a) else (-(-a[0] // c), -(-a[1] // c))
    if exact(a) and exact(b) and bool(np.all(b[0] != 0)):
        return point(-(-a[0] // b[0]))
    return None


def truncdiv(a: Value, b: Value) -> Value:
    if a is None or b is None:
        return None
    if bool(np.all(a[0] >= 0)) and bool(np.all(b[0] > 0)):  # floored alike
        return floordiv(a, b)
    if exact(a) and exact(b) and bool(np.all(b[0] != 0)):
        q = np.abs(a[0]) // np.abs(b[0])
        return point(np.where((a[0] >= 0) == (b[0] > 0), q, -q))
    return None


def rem(a: Value, b: Value, truncated: bool = False) -> Value:
    """a mod b (floored; `truncated`: the sign of a, as arith.remsi)."""
    if a is None or b is None:
        return None
    if exact(a) and exact(b):
        if not bool(np.all(b[0] != 0)):
            return None
        return point(np.fmod(a[0], b[0]) if truncated else a[0] % b[0])
    c = _positive_constant(b)
    if c is None or not bool(np.all(a[0] >= 0)):
        return None
    lo, hi = a
    within = (hi - lo < c) & (lo % c <= hi % c)
    return (np.where(within, lo % c, 0), np.where(within, hi % c, c - 1))


def minimum(a: Value, b: Value) -> Value:
    if a is None or b is None:
        return None
    if exact(a) and exact(b):
        return point(np.minimum(a[0], b[0]))
    return (np.minimum(a[0], b[0]), np.minimum(a[1], b[1]))


def maximum(a: Value, b: Value) -> Value:
    if a is None or b is None:
        return None
    if exact(a) and exact(b):
        return point(np.maximum(a[0], b[0]))
    return (np.maximum(a[0], b[0]), np.maximum(a[1], b[1]))


def _bitwise(kind: str) -> Callable[[Value, Value], Value]:
    def evaluate(a: Value, b: Value) -> Value:
        if a is None or b is None:
            return None
        if exact(a) and exact(b):
            x, y = np.asarray(a[0]), np.asarray(b[0])
            r = x & y if kind == "and" else x | y if kind == "or" else x ^ y
            return _tame(point(r if r.ndim else int(r)))
        if kind == "and":  # masking a non-negative value keeps it within [0, mask]
            for v, m in ((a, b), (b, a)):
                c = _positive_constant(m)
                if c is not None and bool(np.all(v[0] >= 0)):
                    return (0, np.minimum(v[1], c))
        return None

    return evaluate


def _boolean(kind: str) -> Callable[[Value, Value], Value]:
    """`arith.andi` / `arith.ori` / `arith.xori` of two i1s (0 or 1), per tile: false where
    either side is false (and), true where either is true (or), though the other side is
    unknown there (a guard `tile_ok and lane_ok` is false for the tiles whose `tile_ok` is);
    xor where both sides are decided."""
    def evaluate(a: Value, b: Value) -> Value:
        if a is None and b is None:
            return None
        (alo, ahi), (blo, bhi) = a or (0, 1), b or (0, 1)
        alo, ahi, blo, bhi = (np.asarray(x) for x in (alo, ahi, blo, bhi))
        if kind == "and":
            lo, hi = np.minimum(alo, blo), np.minimum(ahi, bhi)
        elif kind == "or":
            lo, hi = np.maximum(alo, blo), np.maximum(ahi, bhi)
        else:
            decided = (alo == ahi) & (blo == bhi)
            lo, hi = np.where(decided, alo ^ blo, 0), np.where(decided, alo ^ blo, 1)
        return _settle(lo if lo.ndim else int(lo), hi if hi.ndim else int(hi))

    return evaluate


def shift_left(a: Value, b: Value) -> Value:
    c = _positive_constant(b)
    if c is None or c > 32:
        return None
    return mul(a, point(1 << c))


def shift_right(a: Value, b: Value) -> Value:
    c = _positive_constant(b)
    if a is None or c is None or c > 62 or not bool(np.all(a[0] >= 0)):
        return None
    return floordiv(a, point(1 << c))


_PREDICATES = {
    0: "eq", 1: "ne", 2: "lt", 3: "le", 4: "gt", 5: "ge", 6: "lt", 7: "le", 8: "gt", 9: "ge",
}


def compare(predicate: int, a: Value, b: Value) -> Value:
    """arith.cmpi: 1 or 0 per tile where decided, [0, 1] where the ranges overlap. An unsigned
    comparison is the signed one where both ranges lie on one side of 0 each (as unsigned a
    negative value is past every non-negative one, and negatives keep their order); where a
    range holds both signs it is not decided."""
    if a is None or b is None:
        return None
    if predicate >= 6:  # ult, ule, ugt, uge
        signed = compare(predicate - 4, a, b)
        assert signed is not None
        (alo, ahi), (blo, bhi) = a, b
        a_neg, b_neg = np.asarray(ahi) < 0, np.asarray(bhi) < 0  # `~` of a Python bool is -2
        one_sign = (a_neg | (alo >= 0)) & (b_neg | (blo >= 0))
        same = one_sign & (a_neg == b_neg)
        # one negative (huge as unsigned), the other not: the negative one is the greater
        a_greater = one_sign & a_neg & ~b_neg
        b_greater = one_sign & b_neg & ~a_neg
        kind = _PREDICATES[predicate]
        less = kind in ("lt", "le")  # a < b or a <= b: true where b is the greater
        decided_yes = b_greater if less else a_greater
        decided_no = a_greater if less else b_greater
        lo = np.where(same, signed[0], np.where(decided_yes, 1, 0))
        hi = np.where(same, signed[1], np.where(decided_no, 0, 1))
        return _settle(lo if lo.ndim else int(lo), hi if hi.ndim else int(hi))
    kind = _PREDICATES[predicate]
    if kind in ("gt", "ge"):
        a, b, kind = b, a, "lt" if kind == "gt" else "le"
    (alo, ahi), (blo, bhi) = a, b
    if kind == "lt":
        yes, no = ahi < blo, alo >= bhi
    elif kind == "le":
        yes, no = ahi <= blo, alo > bhi
    else:
        both = exact(a) and exact(b)
        yes = (alo == blo) if both else np.zeros(np.broadcast(alo, blo).shape, bool)
        no = (ahi < blo) | (alo > bhi) | ((alo != blo) if both else False)
        if kind == "ne":
            yes, no = no, yes
    lo = np.where(yes, 1, 0)
    hi = np.where(no, 0, 1)
    return _settle(lo if lo.ndim else int(lo), hi if hi.ndim else int(hi))


def _bit_width(t: object) -> int | None:
    """Bits of an integer or index type (index: 64); None for any other."""
    if isinstance(t, IntegerType):
        return t.width.data
    if isinstance(t, IndexType):
        return 64
    return None


_NEGATED = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt", "eq": "ne", "ne": "eq"}
_MIRRORED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}


def guard_bounds(cond: SSAValue, taken: bool, value: Callable[[SSAValue], Value]
                 ) -> dict[SSAValue, Value]:
    """The values `cond` bounds where it is `taken` (true, or false): for `arith.cmpi` of a
    value against an exact one, that value's range narrowed to the side that holds; for the
    true side of `arith.andi` and the false side of `arith.ori`, both conditions' narrowings.
    Unsigned comparisons narrow only where they mean what the signed one does (an unsigned
    `a < b` with b >= 0 also says a >= 0). Nothing for any other condition."""
    op = cond.owner
    if (isinstance(op, arith.AndIOp) and taken) or (isinstance(op, arith.OrIOp) and not taken):
        first = guard_bounds(op.lhs, taken, value)
        second = guard_bounds(op.rhs, taken, value)
        for v, bounds in second.items():
            if v in first and first[v] is not None and bounds is not None:
                bounds = (np.maximum(first[v][0], bounds[0]), np.minimum(first[v][1], bounds[1]))
            first[v] = bounds
        return first
    if not isinstance(op, arith.CmpiOp):
        return {}
    predicate = op.predicate.value.data
    kind = _PREDICATES[predicate]
    unsigned = predicate >= 6
    found: dict[SSAValue, Value] = {}
    for subject, other, relation in ((op.lhs, op.rhs, kind), (op.rhs, op.lhs, _MIRRORED[kind])):
        a, b = value(subject), value(other)
        if a is None or b is None or exact(a) or not exact(b):
            continue
        relation = relation if taken else _NEGATED[relation]
        bound = b[0]
        lo, hi = a
        if unsigned:
            # as unsigned a negative value is past every non-negative one: with b >= 0,
            # `a < b` also says a >= 0, and `a > b` says nothing of a value that may be
            # negative; a negative b is past most values, which no range here says
            if not np.all(np.asarray(bound) >= 0):
                continue
            if relation in ("lt", "le"):
                lo = np.maximum(lo, 0)
            elif relation in ("gt", "ge") and not np.all(np.asarray(lo) >= 0):
                continue
        if relation == "lt":
            hi = np.minimum(hi, bound - 1)
        elif relation == "le":
            hi = np.minimum(hi, bound)
        elif relation == "gt":
            lo = np.maximum(lo, bound + 1)
        elif relation == "ge":
            lo = np.maximum(lo, bound)
        elif relation == "eq":
            lo, hi = np.maximum(lo, bound), np.minimum(hi, bound)
        elif relation == "ne":
            # a range holds no gaps: only an end equal to the bound moves (a `x != n - 1`
            # guard on x in [0, n - 1] leaves [0, n - 2])
            if not (np.any(lo == bound) or np.any(hi == bound)):
                continue
            lo, hi = np.where(lo == bound, lo + 1, lo), np.where(hi == bound, hi - 1, hi)
        found[subject] = (lo, hi)
    return found


def _signed_i1(value: Value) -> Value:
    """An i1 (0 or 1 here) read as signed: true is -1."""
    if value is None:
        return None
    if exact(value):
        return point(-value[0])
    return (-value[1], -value[0])


def _within(value: Value, width: int | None) -> Value:
    """`value`, where its type of `width` bits holds it (i1: 0 or 1; iN: signed); else it
    wraps, unknown (index: _tame's bound)."""
    if value is None or width is None or width >= 64:
        return value
    least, most = (0, 1) if width == 1 else (-(1 << (width - 1)), (1 << (width - 1)) - 1)
    if bool(np.all(np.asarray(value[0]) >= least)) and bool(np.all(np.asarray(value[1]) <= most)):
        return value
    return None


def select(c: Value, t: Value, f: Value) -> Value:
    if t is None or f is None:
        return None
    if c is not None and not exact(c):
        # per tile, a side the condition never takes there (decided, or its operand's range
        # narrowed empty by the condition) drops out of the result
        t_never = np.asarray((c[1] == 0) | (t[0] > t[1]))
        f_never = np.asarray((c[0] != 0) | (f[0] > f[1])) & ~t_never
        if t_never.any() or f_never.any():
            lo = np.where(t_never, f[0], np.where(f_never, t[0], np.minimum(t[0], f[0])))
            hi = np.where(t_never, f[1], np.where(f_never, t[1], np.maximum(t[1], f[1])))
            return _settle(lo if lo.ndim else lo[()], hi if hi.ndim else hi[()])
    if c is not None and exact(c):
        flag = np.asarray(c[0]) != 0
        if flag.ndim == 0:
            return t if bool(flag) else f
        lo, hi = np.where(flag, t[0], f[0]), np.where(flag, t[1], f[1])
        return point(lo) if exact(t) and exact(f) else (lo, hi)
    return (np.minimum(t[0], f[0]), np.maximum(t[1], f[1]))


def affine_value(expr: AffineExpr, dims: Sequence[Value], syms: Sequence[Value]) -> Value:
    """An affine expression of ranges (`floordiv`, `mod`, `ceildiv` by constants)."""
    match expr:
        case AffineConstantExpr(value=value):
            return _tame(point(value))
        case AffineDimExpr(position=position):
            return dims[position]
        case AffineSymExpr(position=position):
            return syms[position]
        case AffineBinaryOpExpr(kind=kind, lhs=lhs, rhs=rhs):
            a, b = affine_value(lhs, dims, syms), affine_value(rhs, dims, syms)
            if kind == AffineBinaryOpKind.Add:
                return add(a, b)
            if kind == AffineBinaryOpKind.Mul:
                return mul(a, b)
            if kind == AffineBinaryOpKind.FloorDiv:
                return floordiv(a, b)
            if kind == AffineBinaryOpKind.CeilDiv:
                return ceildiv(a, b)
            if kind == AffineBinaryOpKind.Mod:
                return rem(a, b)
    return None


def affine_exact(expr: AffineExpr, dims: Sequence[Scalar], syms: Sequence[Scalar],
                 op: Operation) -> Scalar:
    """An affine expression of exact values (tile coordinates as arrays), for the map of `op`;
    Unproven where a value leaves the range of indices (beyond 2^40)."""
    value = affine_value(expr, [point(d) for d in dims], [point(s) for s in syms])
    if value is None or not exact(value):
        raise Unproven(op, f"the map's {expr} takes values beyond {INDEX_LIMIT} on these tiles")
    return value[0]


def _unsigned(signed: Callable[[Value, Value], Value]) -> Callable[[Value, Value], Value]:
    """An unsigned op is its signed counterpart on operands known not to be negative; a
    negative operand is a huge unsigned value (minui(-1, 3) is 3), unknown here."""

    def evaluate(a: Value, b: Value) -> Value:
        if a is None or b is None or not (bool(np.all(np.asarray(a[0]) >= 0))
                                           and bool(np.all(np.asarray(b[0]) >= 0))):
            return None
        return signed(a, b)

    return evaluate


_BINARY: dict[type, Callable[[Value, Value], Value]] = {
    arith.AddiOp: add,
    arith.SubiOp: sub,
    arith.MuliOp: mul,
    arith.DivUIOp: _unsigned(floordiv),
    arith.DivSIOp: truncdiv,
    arith.FloorDivSIOp: floordiv,
    arith.CeilDivSIOp: ceildiv,
    arith.CeilDivUIOp: _unsigned(ceildiv),
    arith.RemUIOp: _unsigned(rem),
    arith.RemSIOp: lambda a, b: rem(a, b, truncated=True),
    arith.MinSIOp: minimum,
    arith.MaxSIOp: maximum,
    arith.MinUIOp: _unsigned(minimum),
    arith.MaxUIOp: _unsigned(maximum),
    arith.AndIOp: _bitwise("and"),
    arith.OrIOp: _bitwise("or"),
    arith.XOrIOp: _bitwise("xor"),
    arith.ShLIOp: shift_left,
    arith.ShRUIOp: _unsigned(shift_right),
    arith.ShRSIOp: shift_right,
}
_I1_LOGIC: dict[type, Callable[[Value, Value], Value]] = {
    arith.AndIOp: _boolean("and"),
    arith.OrIOp: _boolean("or"),
    arith.XOrIOp: _boolean("xor"),
}
_BOOLEAN_OPS = (arith.AndIOp, arith.OrIOp, arith.XOrIOp, arith.MinUIOp, arith.MaxUIOp)
"""The binary ops whose i1 results the 0-or-1 reading of an i1 gets right."""
SYNC_OPS = (sync.WaitOp, sync.PostOp, sync.LoadPointOp)


def constant_index(value: SSAValue) -> int | None:
    """The integer an `arith.constant` gives `value`, else None."""
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


# ---------------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------------


class BatchRun:
    """One abstract run of `func` for the tiles `tiles` (an (n, rank) int64 array) of a
    stage with `grid` and `block` extents. `state` is what subclasses keep per path (copied
    into regions that may not run)."""

    UNROLLED: tuple[type[Operation], ...] = SYNC_OPS
    """A loop holding one of these ops (with constant bounds) is unrolled; a run that reacts
    to fewer of them (a producer's: posts only) follows other loops as one abstract run."""

    def __init__(self, func: gpu.FuncOp, tiles: np.ndarray, grid: Sequence[int],
                 block: Sequence[int]):
        self._relevant: frozenset[Operation] | bool | None = False  # not sliced yet
        self.func = func
        self.tiles = tiles
        self.size = len(tiles)
        self.grid = (*grid, 1, 1, 1)[:3]
        self.block = (*block, 1, 1, 1)[:3]
        self.env: dict[SSAValue, Value] = {}
        self.definite = True
        """Whether the ops now run certainly run (not in a region that may not, or that runs
        abstractly)."""
        self.threads: frozenset[int] | None = None
        """The thread indices that run the current path, where a branch on the thread index
        split the block (None: every thread)."""

    # -- hooks ---------------------------------------------------------------------------
    def on_wait(self, op: sync.WaitOp, state: Any, definite: bool) -> None: ...

    def on_post(self, op: sync.PostOp, state: Any, definite: bool) -> None: ...

    def on_load_point(self, op: sync.LoadPointOp, state: Any) -> None: ...

    def on_probe(self, op: sync.ProbeOp, state: Any) -> None:
        """A probe's answer is not known: it stays unknown (None)."""

    def leave_thread_side(self, side: Any, state: Any) -> None:
        """A side of a branch on the thread index ran on `side`, a copy of `state` (the state
        after the branch)."""

    def on_op(self, op: Operation, state: Any) -> None:
        """Before any other op is evaluated (its operands are known)."""

    def slice_roots(self) -> Collection[Operation] | None:
        """The ops besides synchronization and control flow whose operands the run looks at
        (the loads or stores it checks): only they and what their operands, the
        synchronization's and the control flow's are computed from run (`relevant_ops`);
        None: every op runs."""
        return None

    def copy_state(self, state: Any) -> Any:
        return state

    def enter_iteration(self, state: Any, outer: Any) -> None:
        """An unrolled iteration begins (`outer`: the state before the loop)."""

    def leave_loop(self, state: Any, outer: Any) -> None:
        """An unrolled loop is over."""

    # -- values --------------------------------------------------------------------------
    def value(self, v: SSAValue) -> Value:
        return self.env.get(v)

    def known(self, v: SSAValue) -> int | None:
        """The one exact value of `v` over the batch, else None."""
        value = self.env.get(v)
        if value is None or not exact(value):
            return None
        return uniform(value[0])

    def exact_values(self, values: Sequence[SSAValue]) -> list[Scalar] | None:
        found = []
        for v in values:
            value = self.env.get(v)
            if value is None or not exact(value):
                return None
            found.append(value[0])
        return found

    def evaluate(self, op: Operation) -> None:
        kind = type(op)
        binary = _BINARY.get(kind)
        if binary is not None:
            width = _bit_width(op.results[0].type)
            if width == 1 and kind not in _BOOLEAN_OPS:
                self.env[op.results[0]] = None  # i1 arithmetic: true is -1 signed, 1 + 1 = 0
                return
            binary = _I1_LOGIC.get(kind, binary) if width == 1 else binary
            try:
                result = binary(self.value(op.operands[0]), self.value(op.operands[1]))
            except (ZeroDivisionError, FloatingPointError):
                result = None
            self.env[op.results[0]] = _within(result, width)
            return
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, op)
            return
        for result in op.results:
            self.env[result] = None

    def _tile(self, op: sync.TileOp) -> None:
        if len(op.coords) != self.tiles.shape[1]:
            raise Unproven(op, f"sync.tile yields {len(op.coords)} coordinates but the "
                               f"stage grid has {self.tiles.shape[1]}")
        for d, result in enumerate(op.coords):
            self.env[result] = point(self.tiles[:, d])

    def _constant(self, op: arith.ConstantOp) -> None:
        attr = op.value
        if isinstance(attr, IntegerAttr):
            v = attr.value.data
            if isinstance(attr.type, IntegerType) and attr.type.width.data == 1:
                v = int(v != 0)
            self.env[op.result] = _tame(point(v))
        else:
            self.env[op.result] = None

    def _cast(self, op: Operation) -> None:
        """Extensions keep the value (a zero extension only of a value known not negative);
        a truncation only of a value its narrower type holds (an i1 as 0 or 1): else it
        wraps, unknown."""
        value = self.value(op.operands[0])
        if isinstance(op, arith.ExtSIOp | arith.IndexCastOp) and \
                _bit_width(op.operands[0].type) == 1:
            value = _signed_i1(value)  # true sign-extends to -1
        if value is not None:
            lo, hi = value
            width = _bit_width(op.results[0].type)
            if isinstance(op, arith.ExtUIOp):
                fits = np.all(np.asarray(lo) >= 0)
            elif width is None or width >= (_bit_width(op.operands[0].type) or 64):
                fits = True
            else:
                least, most = (0, 1) if width == 1 else (-(1 << (width - 1)),
                                                         (1 << (width - 1)) - 1)
                fits = np.all(np.asarray(lo) >= least) and np.all(np.asarray(hi) <= most)
            value = value if fits else None
        self.env[op.results[0]] = value

    def _cmpi(self, op: arith.CmpiOp) -> None:
        lhs, rhs = self.value(op.lhs), self.value(op.rhs)
        if _bit_width(op.lhs.type) == 1 and 2 <= op.predicate.value.data <= 5:
            lhs, rhs = _signed_i1(lhs), _signed_i1(rhs)  # signed, true is -1
        self.env[op.result] = compare(op.predicate.value.data, lhs, rhs)

    def _select(self, op: arith.SelectOp) -> None:
        # each operand is chosen where the condition says so: a guard narrows it there (a
        # clamp `select (x < n), x, n - 1` stays below n)
        sides = []
        for operand, taken in ((op.lhs, True), (op.rhs, False)):
            narrowed = guard_bounds(op.cond, taken, self.value).get(operand)
            sides.append(self.value(operand) if narrowed is None else narrowed)
        self.env[op.result] = select(self.value(op.cond), *sides)

    def _apply(self, op: affine.ApplyOp) -> None:
        m = op.map.data
        operands = [self.value(v) for v in op.mapOperands]
        self.env[op.result] = affine_value(m.results[0], operands[: m.num_dims],
                                           operands[m.num_dims:])

    def _thread_id(self, op: gpu.ThreadIdOp) -> None:
        extent = self.block[_DIMS[op.dimension.data]]
        self.env[op.result] = point(0) if extent == 1 else (0, extent - 1)

    def _block_dim(self, op: gpu.BlockDimOp) -> None:
        self.env[op.result] = point(self.block[_DIMS[op.dimension.data]])

    def _grid_dim(self, op: gpu.GridDimOp) -> None:
        self.env[op.result] = point(self.grid[_DIMS[op.dimension.data]])

    def _block_id(self, op: gpu.BlockIdOp) -> None:
        extent = self.grid[_DIMS[op.dimension.data]]
        self.env[op.result] = point(0) if extent == 1 else (0, extent - 1)

    def _lane_id(self, op: gpu.LaneIdOp) -> None:
        self.env[op.result] = (0, 31)

    # -- execution -----------------------------------------------------------------------
    def run(self, state: Any) -> Any:
        self.run_block(self.func.body.blocks.first, state, True)  # type: ignore[arg-type]
        return state

    def run_block(self, block: Block, state: Any, definite: bool) -> None:
        outer, self.definite = self.definite, definite
        try:
            for op in block.ops:
                self.step(op, state, definite)
        finally:
            self.definite = outer

    def run_region_copy(self, op: Operation, state: Any) -> None:
        """Run every block of every region of `op` once on a copy of `state`: what it does is
        checked, but not relied upon after it (it may not run, or run with other values)."""
        for region in op.regions:
            for block in region.blocks:
                for arg in block.args:
                    self.env[arg] = None
                self.run_block(block, self.copy_state(state), False)

    def step(self, op: Operation, state: Any, definite: bool) -> None:
        if self._relevant is False:
            roots = self.slice_roots()
            self._relevant = None if roots is None else relevant_ops(self.func, roots)
        if self._relevant is not None and op not in self._relevant:
            for result in op.results:  # a kernel's data: nothing the run looks at reads it
                self.env[result] = None
            return
        if self.budget is not None:
            self.budget.spend(op)
        kind = type(op)
        if kind in (sync.WaitOp, sync.PostOp, sync.ProbeOp):
            self._check_participants(op)
        if kind is sync.ProbeOp:
            self.on_probe(op, state)  # type: ignore[arg-type]
            self.env[op.results[0]] = None
        elif kind is sync.WaitOp:
            self.on_wait(op, state, definite)  # type: ignore[arg-type]
        elif kind is sync.PostOp:
            self.on_post(op, state, definite)  # type: ignore[arg-type]
        elif kind is sync.LoadPointOp:
            self.on_load_point(op, state)  # type: ignore[arg-type]
        elif kind is scf.ForOp:
            self.on_for(op, state, definite)  # type: ignore[arg-type]
        elif kind is scf.IfOp:
            self.on_if(op, state, definite)  # type: ignore[arg-type]
        else:
            self.on_op(op, state)
            if op.regions:
                self.run_region_copy(op, state)
                for result in op.results:
                    self.env[result] = None
            else:
                self.evaluate(op)

    def _decide(self, op: Operation, value: Value) -> int | None:
        """The one exact value all tiles agree on; Divergent when they disagree; None when
        the value is not exact."""
        if value is None or not exact(value):
            return None
        x = value[0]
        one = uniform(x)
        if one is not None:
            return one
        raise Divergent(op, [np.flatnonzero(x == v) for v in np.unique(x)])

    def _split_decided(self, op: Operation, value: Value) -> None:
        """Divergent where the condition is decided for some tiles of the batch and not for
        others (`tile_ok and lane_ok`): the tiles for which it is false skip the side it
        guards."""
        if value is None or exact(value):
            return
        lo, hi = np.broadcast_arrays(np.asarray(value[0]), np.asarray(value[1]))
        if lo.ndim == 0:
            return
        kinds = np.where(hi == 0, 0, np.where(lo != 0, 1, 2))
        if len(np.unique(kinds)) > 1:
            raise Divergent(op, [np.flatnonzero(kinds == k) for k in np.unique(kinds)])

    def on_if(self, op: scf.IfOp, state: Any, definite: bool) -> None:
        self.on_op(op, state)
        self._split_decided(op, self.value(op.cond))
        c = self._decide(op, self.value(op.cond))
        sides = self._thread_roles(op) if c is None else None
        if sides is not None:
            # Threads of every block take each side that some thread index satisfies (a
            # warp-specialized kernel's roles): what a side does, the block does; each side
            # starts from the state before the branch, and neither's waits count after it,
            # since the other threads did not wait.
            outer = self.threads
            tid = op.cond.owner.lhs  # type: ignore[union-attr]
            before = self.env.get(tid)
            for takers, region in zip(sides, (op.true_region, op.false_region), strict=True):
                if takers and region.blocks:
                    self.threads = takers if outer is None else takers & outer
                    # the thread index, on this side, is one of its takers'
                    self.env[tid] = (min(self.threads), max(self.threads)) \
                        if self.threads else before
                    try:
                        side = self.copy_state(state)
                        self.run_block(region.blocks.first,  # type: ignore[arg-type]
                                       side, definite)
                        self.leave_thread_side(side, state)
                    finally:
                        self.threads = outer
                        self.env[tid] = before
        elif c is None:
            # each side runs where its condition holds: the values the condition bounds are
            # narrowed there (a guarded load of row r - 1 reads no row -1)
            for taken, region in ((True, op.true_region), (False, op.false_region)):
                narrowed = guard_bounds(op.cond, taken, self.value)
                saved = {v: self.env.get(v) for v in narrowed}
                self.env.update(narrowed)
                try:
                    for block in region.blocks:
                        for arg in block.args:
                            self.env[arg] = None
                        self.run_block(block, self.copy_state(state), False)
                finally:
                    self.env.update(saved)
        else:
            region = op.true_region if c else op.false_region
            if region.blocks:
                self.run_block(region.blocks.first, state, definite)  # type: ignore[arg-type]
        for result in op.results:
            self.env[result] = None

    def _check_participants(self, op: Operation) -> None:
        """A wait or post that only some threads reach (`self.threads`) must say so: a wait
        spins in its one thread (`single_thread`: no block barrier), a post synchronizes its
        threads (`threads N`: a named barrier of the block's first N, then thread 0 releases),
        exactly the threads that reach it; a `threads N` post that every thread reaches must
        have N the whole block."""
        block = self.block[0] * self.block[1] * self.block[2]
        if self.threads is None:
            if isinstance(op, sync.PostOp) and op.threads is not None and \
                    op.threads.value.data != block:
                raise Unproven(op, f"every thread of the block ({block}) reaches this sync.post "
                                   f"of `threads {op.threads.value.data}`: its named barrier "
                                   f"would not count them (put it where only those threads go)")
            return
        if isinstance(op, sync.ProbeOp):
            raise Unproven(op, "a sync.probe inside a branch on the thread index: its block "
                               "barrier needs every thread of the block")
        if isinstance(op, sync.WaitOp):
            if op.single_thread is None:
                raise Unproven(op, "a block-wide sync.wait inside a branch on the thread "
                                   "index: the threads that do not take it never reach its "
                                   "block barrier (a wait of one thread is `single_thread`)")
            return
        assert isinstance(op, sync.PostOp)
        n = None if op.threads is None else op.threads.value.data
        if n is None or self.threads != frozenset(range(n)):
            have = sorted(self.threads)
            span = f"{len(have)} thread{'s' if len(have) > 1 else ''} ({have[0]}..{have[-1]})"
            raise Unproven(op, f"a sync.post that {span} reach must be `threads N` for exactly "
                               f"the block's first N threads: its named barrier waits for N, "
                               f"thread 0 releases")

    def _thread_roles(self, op: scf.IfOp) -> tuple[frozenset[int], frozenset[int]] | None:
        """For `scf.if (thread_id.x <pred> constant)` in a block of one dimension: the thread
        indices that take the then side and those that take the else side (evaluated for every
        thread index); None for any other condition."""
        cmp = op.cond.owner
        if not isinstance(cmp, arith.CmpiOp) or self.block[1:] != (1, 1):
            return None
        tid = cmp.lhs.owner
        if not isinstance(tid, gpu.ThreadIdOp) or tid.dimension.data != gpu.DimensionEnum.X:
            return None
        bound = self.value(cmp.rhs)
        if bound is None or not exact(bound) or uniform(bound[0]) is None:
            return None
        then: set[int] = set()
        otherwise: set[int] = set()
        for t in range(self.block[0]):
            result = compare(cmp.predicate.value.data, point(t), bound)
            if not exact(result) or uniform(result[0]) is None:
                return None
            (then if uniform(result[0]) else otherwise).add(t)
        return frozenset(then), frozenset(otherwise)

    def on_for(self, op: scf.ForOp, state: Any, definite: bool) -> None:
        self.on_op(op, state)
        body = op.body.blocks.first
        assert body is not None
        for result in op.results:
            self.env[result] = None
        has_sync = any(isinstance(o, self.UNROLLED) for o in op.walk())
        lb, ub, st = self.value(op.lb), self.value(op.ub), self.value(op.step)
        if has_sync:
            bounds = [self._decide(op, v) for v in (lb, ub, st)]
            if None not in bounds and bounds[2] > 0:  # type: ignore[operator]
                first, last, stride = bounds  # type: ignore[misc]
                trips = max(0, -(-(last - first) // stride))
                if trips <= MAX_ITERATIONS:
                    self._unroll(body, first, stride, trips, state, definite)
                    return
        self._abstract_loop(op, body, lb, ub, st, state)

    def _unroll(self, body: Block, first: int, stride: int, trips: int, state: Any,
                definite: bool) -> None:
        outer = self.copy_state(state)
        for iteration in range(trips):
            self.env[body.args[0]] = point(first + iteration * stride)
            for arg in body.args[1:]:
                self.env[arg] = None
            self.enter_iteration(state, outer)
            self.run_block(body, state, definite)
        self.leave_loop(state, outer)

    def _abstract_loop(self, op: scf.ForOp, body: Block, lb: Value, ub: Value, st: Value,
                       state: Any) -> None:
        """One run of the body on a copy, the induction variable ranging over every
        iteration (unknown where the bounds are)."""
        iv: Value = None
        if lb is not None and ub is not None and st is not None and bool(np.all(st[0] > 0)):
            if bool(np.all(ub[1] <= lb[0])):
                return  # no iteration for any tile
            last = ub[1] - 1
            if exact(lb) and exact(st):  # the last iteration's value, a multiple of the step
                last = lb[0] + (np.maximum(last - lb[0], 0) // st[0]) * st[0]
            iv = (lb[0], np.maximum(lb[0], last))
            iv = _settle(*iv) if not isinstance(iv[0], np.ndarray) else iv
        self.env[body.args[0]] = iv
        for arg in body.args[1:]:
            self.env[arg] = None
        self.run_block(body, self.copy_state(state), False)


NO_SEMAPHORE = -1
"""A probe point's semaphore for the tiles whose producer tile lies outside the probe's
clipped grid: nobody posts it and nobody waits for it."""


def probe_semaphores(op: sync.ProbeOp, coords: Sequence[Scalar], size: int
                     ) -> tuple[np.ndarray, np.ndarray]:
    """The points of `op` for the batch of `size` tiles at `coords`: (semaphores, inside the
    clipped grid), each points x tiles, the points in the order of its parts, each's symbols
    row-major. A part's points are evaluated at once (its symbols as a column against the
    tiles' row), not one by one: a probe may have PROBE_POINT_LIMIT of them."""
    grid = op.clipped_to.get_values() if op.clipped_to is not None else None
    tiles = [np.asarray(c).reshape(1, -1) for c in coords]
    semaphores: list[np.ndarray] = []
    insides: list[np.ndarray] = []
    for amap, ranges in op.parts():
        axes = [np.arange(r.lo, r.hi, r.step, dtype=np.int64) for r in ranges]
        count = math.prod(len(axis) for axis in axes)
        if count == 0:
            continue
        syms = [m.reshape(-1, 1) for m in np.meshgrid(*axes, indexing="ij")]
        produced = [affine_exact(e, tiles, syms, op) for e in amap.results]
        inside: Scalar = np.ones((1, 1), bool)
        if grid is not None:
            for c, extent in zip(produced, grid, strict=True):
                inside = inside & (c >= 0) & (c < extent)
        semaphore = affine_exact(op.policy.sem_map.data.results[0], produced, (), op)
        semaphores.append(np.broadcast_to(semaphore, (count, size)))
        insides.append(np.broadcast_to(inside, (count, size)))
    if not semaphores:
        return np.zeros((0, size), np.int64), np.zeros((0, size), bool)
    return np.concatenate(semaphores), np.concatenate(insides)


def relevant_ops(func: Operation, roots: Collection[Operation]) -> frozenset[Operation]:
    """The ops of `func` a run must evaluate: those of the sync dialect, those with regions
    (control flow), `roots`, and every op whose result one of these reads, transitively. A
    value that leaves a region (a loop's or a branch's result, a loop-carried argument) is
    unknown to the run whatever its yield computed, so the slice stops there; the rest (a
    kernel's arithmetic on its data: fragments, exponentials, its stores' values) reaches
    nothing the run looks at."""
    relevant: set[Operation] = set()
    work: list[Operation] = [op for op in func.walk()
                             if op.name.startswith("sync.") or op.regions or op in roots]
    while work:
        op = work.pop()
        if op in relevant:
            continue
        relevant.add(op)
        for value in op.operands:
            owner = value.owner
            if isinstance(owner, Operation) and owner not in relevant:
                work.append(owner)
    return frozenset(relevant)


_HANDLERS: dict[type, Callable[[BatchRun, Any], None]] = {
    sync.TileOp: BatchRun._tile,
    arith.ConstantOp: BatchRun._constant,
    arith.IndexCastOp: BatchRun._cast,
    arith.ExtSIOp: BatchRun._cast,
    arith.ExtUIOp: BatchRun._cast,
    arith.TruncIOp: BatchRun._cast,
    arith.CmpiOp: BatchRun._cmpi,
    arith.SelectOp: BatchRun._select,
    affine.ApplyOp: BatchRun._apply,
    gpu.ThreadIdOp: BatchRun._thread_id,
    gpu.BlockDimOp: BatchRun._block_dim,
    gpu.GridDimOp: BatchRun._grid_dim,
    gpu.BlockIdOp: BatchRun._block_id,
    gpu.LaneIdOp: BatchRun._lane_id,
}


def run_batches(tiles: np.ndarray, attempt: Callable[[np.ndarray], Any],
                chunk: int = 4096) -> Iterator[tuple[np.ndarray, Any]]:
    """`attempt(indices)` for the tiles `tiles[indices]`, in chunks of at most `chunk`,
    splitting a batch whose tiles diverge (`Divergent`) into the groups that agree; yields
    (indices, result) in the order of each batch's first tile."""
    todo = [np.arange(start, min(start + chunk, len(tiles)))
            for start in range(0, len(tiles), chunk)]
    while todo:
        indices = todo.pop(0)
        try:
            result = attempt(indices)
        except Divergent as split:
            groups = sorted((indices[g] for g in split.groups), key=lambda g: int(g[0]))
            todo[:0] = groups
            continue
        yield indices, result

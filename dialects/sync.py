"""The `sync` dialect: cuSync's per-tile semaphores between dependent kernels.

Two levels live here:

* host level (stage ops at module level): `sync.stage` declares a kernel launch with its grid
  and tile order, `sync.dependency` says which producer tiles each consumer tile reads (the
  cuSyncGen DSL: affine expressions of the consumer tile with `forall` ranges), and
  `sync.launch` / `sync.wait_kernel` give the host launch plan in program order;
* kernel level (inside `gpu.func` bodies): `sync.tile` yields this block's tile coordinates,
  `sync.wait` / `sync.post` acquire / release a semaphore chosen by a policy.

A policy is ONE attribute, `#sync.policy`: an affine map from producer tile coordinates to a
semaphore index plus the number of posts that make that semaphore ready. TileSync, RowSync,
StridedSync and Conv2DTileSync are names given to the shapes of that map, never subclasses.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import (
    I32,
    I64,
    AffineMapAttr,
    ArrayAttr,
    BoolAttr,
    DenseArrayBase,
    FlatSymbolRefAttrConstr,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    UnitAttr,
    i1,
    i32,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, ParametrizedAttribute, SSAValue
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
    AffineMap,
    AffineSymExpr,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import SymbolOpInterface, SymbolTable
from xdsl.utils.exceptions import VerifyException

from tilesync.contract import (
    MAX_THREADS_PER_BLOCK,
    NUM_SEMAPHORES_ATTR,
    grid_error,
    launch_bounds_error,
    whole_warps_error,
)
from tilesync.dialects.tile import TensorMapType

# Above this many points a box is not enumerated; interval arithmetic decides instead.
ENUMERATION_LIMIT = 1_000_000
# The most semaphores one sync.probe names: its block tests them a round of threads at a time,
# and sync-verify enumerates them per tile.
PROBE_POINT_LIMIT = 1 << 16

# ---------------------------------------------------------------------------------------------
# Affine helpers shared by policies and dependencies
# ---------------------------------------------------------------------------------------------


def _linear_form(expr: AffineExpr) -> tuple[dict[AffineExpr, int], int] | None:
    """`expr` as {atom: coefficient} + constant, where an atom is a dim or symbol.

    None when the expression is not linear in dims and symbols (mod, floordiv, ceildiv).
    """
    match expr:
        case AffineConstantExpr(value=value):
            return {}, value
        case AffineDimExpr() | AffineSymExpr():
            return {expr: 1}, 0
        case AffineBinaryOpExpr(kind=AffineBinaryOpKind.Add, lhs=lhs, rhs=rhs):
            left, right = _linear_form(lhs), _linear_form(rhs)
            if left is None or right is None:
                return None
            coefficients = dict(left[0])
            for atom, coefficient in right[0].items():
                coefficients[atom] = coefficients.get(atom, 0) + coefficient
            return {a: c for a, c in coefficients.items() if c != 0}, left[1] + right[1]
        case AffineBinaryOpExpr(kind=AffineBinaryOpKind.Mul, lhs=lhs, rhs=rhs):
            left, right = _linear_form(lhs), _linear_form(rhs)
            if left is None or right is None:
                return None
            if not left[0]:
                scale, (coefficients, constant) = left[1], right
            elif not right[0]:
                scale, (coefficients, constant) = right[1], left
            else:
                return None
            scaled = {a: c * scale for a, c in coefficients.items() if c * scale != 0}
            return scaled, constant * scale
        case _:
            return None


def _interval(
    expr: AffineExpr, dims: Sequence[tuple[int, int]], syms: Sequence[tuple[int, int]]
) -> tuple[int, int]:
    """A sound [min, max] of `expr` over a box of closed ranges (exact when linear)."""
    linear = _linear_form(expr)
    if linear is not None:
        low = high = linear[1]
        for atom, coefficient in linear[0].items():
            lo, hi = (
                dims[atom.position]
                if isinstance(atom, AffineDimExpr)
                else (
                    syms[atom.position]  # type: ignore[union-attr]
                )
            )
            low += min(coefficient * lo, coefficient * hi)
            high += max(coefficient * lo, coefficient * hi)
        return low, high
    match expr:
        case AffineBinaryOpExpr(kind=kind, lhs=lhs, rhs=AffineConstantExpr(value=divisor)):
            lo, hi = _interval(lhs, dims, syms)
            if kind == AffineBinaryOpKind.Mod:
                if lo >= 0 and hi < divisor:
                    return lo, hi
                return 0, abs(divisor) - 1
            if kind == AffineBinaryOpKind.FloorDiv and divisor > 0:
                return lo // divisor, hi // divisor
            if kind == AffineBinaryOpKind.CeilDiv and divisor > 0:
                return -(-lo // divisor), -(-hi // divisor)
        case _:
            pass
    # Semi-affine forms (a product of two variables) are bounded by their corners only when
    # linear pieces are monotone; we refuse to guess and give an unbounded interval.
    return -(2**63), 2**63 - 1


Reader = Callable[[Sequence[int], Sequence[int]], "tuple[int, ...] | None"]
"""A dependency's `reader()`: (consumer tile, forall values) -> the producer tile read there,
None where a clipped dependency falls outside the producer grid."""

# (id(map), grid) -> (map, its evaluator): found without hashing the expressions.
_EVALUATORS: dict[tuple[int, tuple[int, ...] | None], tuple[AffineMap, Callable]] = {}


def map_evaluator(affine_map: AffineMap, within: Sequence[int] | None = None
                  ) -> Callable[[Sequence[int]], Any]:
    """`affine_map` as a Python function of its dims followed by its symbols, computing what
    `AffineMap.eval` does (compiled once: many times faster, and grids and forall boxes of a
    million points are enumerated with it). With `within` (a grid), a result outside it is
    None."""
    key = (id(affine_map), None if within is None else tuple(within))
    found = _EVALUATORS.get(key)
    if found is not None and found[0] is affine_map:
        return found[1]
    if len(_EVALUATORS) > 4096:
        _EVALUATORS.clear()
    parts = [_python_expression(e, affine_map.num_dims) for e in affine_map.results]
    names = [f"r{i}" for i in range(len(parts))]
    lines = ["def evaluate(point):"]
    lines += [f"    {name} = {part}" for name, part in zip(names, parts, strict=True)]
    if within is not None:
        inside = " and ".join(f"0 <= {name} < {int(extent)}"
                              for name, extent in zip(names, within, strict=False))
        lines.append(f"    if not ({inside or 'True'}):")
        lines.append("        return None")
    lines.append(f"    return ({', '.join(names)},)")
    # The text holds the map's integers and the names `point` and r<i> alone
    # (_python_expression), so running it defines `evaluate` and does nothing else.
    scope: dict[str, Any] = {}
    exec("\n".join(lines), {"__builtins__": {}}, scope)
    function = scope["evaluate"]
    _EVALUATORS[key] = (affine_map, function)
    return function


def _python_expression(expr: AffineExpr, num_dims: int) -> str:
    """`expr` as a Python expression over `point` (dims, then symbols). Python's // and % of
    integers round toward minus infinity, as MLIR's floordiv and mod do."""
    match expr:
        case AffineConstantExpr(value=value):
            return f"({int(value)})"
        case AffineDimExpr(position=position):
            return f"point[{int(position)}]"
        case AffineSymExpr(position=position):
            return f"point[{num_dims + int(position)}]"
        case AffineBinaryOpExpr(kind=kind, lhs=lhs, rhs=rhs):
            a, b = _python_expression(lhs, num_dims), _python_expression(rhs, num_dims)
            match kind:
                case AffineBinaryOpKind.Add:
                    return f"({a} + {b})"
                case AffineBinaryOpKind.Mul:
                    return f"({a} * {b})"
                case AffineBinaryOpKind.Mod:
                    return f"({a} % {b})"
                case AffineBinaryOpKind.FloorDiv:
                    return f"({a} // {b})"
                case _:
                    return f"(-(-{a} // {b}))"
        case _:
            raise ValueError(f"cannot evaluate {expr}")


def box_points(ranges: Sequence[tuple[int, int]]) -> Iterator[tuple[int, ...]]:
    """Every point of a box of half-open ranges [lo, hi), the last coordinate fastest: the one
    enumeration of forall boxes and (through `tilesync.analysis.grid`) of grids."""
    return itertools.product(*(range(lo, hi) for lo, hi in ranges))


def box_size(ranges: Sequence[tuple[int, int]]) -> int:
    """Points of the box `box_points(ranges)` enumerates."""
    return math.prod(max(hi - lo, 0) for lo, hi in ranges)


def affine_map_error(affine_map: AffineMap) -> str | None:
    """Why `affine_map` cannot be evaluated at every point, or None: a floordiv, ceildiv or
    mod needs a positive constant divisor, a product a constant factor."""
    for result in affine_map.results:
        for expr in result.dfs():
            if not isinstance(expr, AffineBinaryOpExpr):
                continue
            if expr.kind == AffineBinaryOpKind.Mul:
                if not isinstance(expr.lhs, AffineConstantExpr) and \
                        not isinstance(expr.rhs, AffineConstantExpr):
                    return f"{format_affine_expr(expr)} is not affine (a product of variables)"
            elif expr.kind != AffineBinaryOpKind.Add and not (
                    isinstance(expr.rhs, AffineConstantExpr) and expr.rhs.value > 0):
                return f"{format_affine_expr(expr)} needs a positive constant divisor"
    return None


_PRECEDENCE = {
    AffineBinaryOpKind.Add: 1,
    AffineBinaryOpKind.Mul: 2,
    AffineBinaryOpKind.Mod: 2,
    AffineBinaryOpKind.FloorDiv: 2,
    AffineBinaryOpKind.CeilDiv: 2,
}


def format_affine_expr(expr: AffineExpr, enclosing: int = 0) -> str:
    """MLIR-style text of an affine expression, with only the parentheses it needs
    (xDSL's `str` parenthesizes every binary node)."""
    if not isinstance(expr, AffineBinaryOpExpr):
        return str(expr)
    precedence = _PRECEDENCE[expr.kind]
    left = format_affine_expr(expr.lhs, precedence)
    # The right operand of a left-associative operator binds tighter than the operator.
    right = format_affine_expr(expr.rhs, precedence + 1)
    text = f"{left} {expr.kind.get_token()} {right}"
    return f"({text})" if precedence < enclosing else text


def format_affine_map(affine_map: AffineMap) -> str:
    dims = ", ".join(f"d{i}" for i in range(affine_map.num_dims))
    syms = ", ".join(f"s{i}" for i in range(affine_map.num_symbols))
    results = ", ".join(format_affine_expr(e) for e in affine_map.results)
    return f"({dims})" + (f"[{syms}]" if syms else "") + f" -> ({results})"


# ---------------------------------------------------------------------------------------------
# Attributes
# ---------------------------------------------------------------------------------------------

POLICY_KINDS = ("TileSync", "RowSync", "StridedSync", "Conv2DTileSync", "Custom")

# The column of a tile grid is d1, as in cuSync (tile.x = row, tile.y = column, tile.z = batch
# or split-K slice).
COLUMN_DIM = 1


def classify_policy_map(sem_map: AffineMap) -> str:
    """The name of a policy map, decided by the map's *shape* alone.

    The grid is not part of the attribute, so the name cannot depend on it; the shape rule is
    sound for every grid, and `PolicyAttr.verify_on_grid` checks the grid-dependent facts
    (bijection for TileSync, exactly `posts` tiles per semaphore) once a grid is known.

    The single result must be a sum `c + Σ k_i * atom_i` with positive k_i and atoms that are
    distinct dims `d_i` or `d1 mod m` / `d1 floordiv m` (m > 1), and with every dim but the
    column d1 present as a plain atom. Then, by how the column d1 enters:

    * plain `d1`, one atom has k = 1, constant 0 → TileSync (a linearization of the tile);
    * absent → RowSync (all tiles of a row share one semaphore);
    * `d1 mod m` → StridedSync (tiles m columns apart share one semaphore);
    * `d1 floordiv m` → Conv2DTileSync (m consecutive column tiles share one semaphore: the
      producer's output channels that one reduction tile of an implicit-GEMM conv reads).

    Anything else (symbols, other dims under mod/floordiv, several results...) is Custom.
    """
    if len(sem_map.results) != 1 or sem_map.num_symbols != 0:
        return "Custom"
    atoms: dict[int, str] = {}  # dim position → "plain" | "mod" | "floordiv"
    coefficients: list[int] = []
    constant = 0

    def collect(expr: AffineExpr, scale: int) -> bool:
        nonlocal constant
        match expr:
            case AffineConstantExpr(value=value):
                constant += scale * value
                return True
            case AffineDimExpr(position=position):
                if position in atoms:
                    return False
                atoms[position] = "plain"
                coefficients.append(scale)
                return True
            case AffineBinaryOpExpr(kind=AffineBinaryOpKind.Add, lhs=lhs, rhs=rhs):
                return collect(lhs, scale) and collect(rhs, scale)
            case AffineBinaryOpExpr(kind=AffineBinaryOpKind.Mul, lhs=lhs, rhs=rhs):
                if isinstance(rhs, AffineConstantExpr):
                    return collect(lhs, scale * rhs.value)
                if isinstance(lhs, AffineConstantExpr):
                    return collect(rhs, scale * lhs.value)
                return False
            case AffineBinaryOpExpr(
                kind=AffineBinaryOpKind.Mod | AffineBinaryOpKind.FloorDiv as kind,
                lhs=AffineDimExpr(position=position),
                rhs=AffineConstantExpr(value=divisor),
            ) if position == COLUMN_DIM and divisor > 1 and position not in atoms:
                atoms[position] = "mod" if kind == AffineBinaryOpKind.Mod else "floordiv"
                coefficients.append(scale)
                return True
            case _:
                return False

    if not collect(sem_map.results[0], 1) or any(k <= 0 for k in coefficients):
        return "Custom"
    others = [d for d in range(sem_map.num_dims) if d != COLUMN_DIM]
    if any(atoms.get(d) != "plain" for d in others) or sem_map.num_dims <= COLUMN_DIM:
        # A 1-D grid has no column: only the identity-like linearization is named.
        if sem_map.num_dims == 1 and atoms.get(0) == "plain" and coefficients == [1]:
            return "TileSync" if constant == 0 else "Custom"
        return "Custom"
    match atoms.get(COLUMN_DIM):
        case "plain":
            return "TileSync" if constant == 0 and 1 in coefficients else "Custom"
        case None:
            return "RowSync"
        case "mod":
            return "StridedSync"
        case "floordiv":
            return "Conv2DTileSync"
        case _:
            return "Custom"


@irdl_attr_definition
class PolicyAttr(ParametrizedAttribute):
    """`#sync.policy<Kind (d0, d1) -> (sem), posts = N>`: producer tile → semaphore.

    A tile whose semaphore index is `i` makes `sems[i]` ready after `posts` posts per launch:
    a wait of launch `epoch` succeeds once `sems[i] >= epoch * posts` (both counted modulo
    2^32: epochs never end, and no waiter is 2^31 counts from its target). The leading name is the
    classification of the map (see `classify_policy_map`); it is printed for readers and
    checked on parsing, not free to choose.
    """

    name = "sync.policy"

    declared_kind: StringAttr
    sem_map: AffineMapAttr
    posts: IntAttr

    def __init__(
        self, sem_map: AffineMap | AffineMapAttr, posts: int | IntAttr, kind: str | None = None
    ):
        if isinstance(sem_map, AffineMap):
            sem_map = AffineMapAttr(sem_map)
        if isinstance(posts, int):
            posts = IntAttr(posts)
        if kind is None:
            kind = classify_policy_map(sem_map.data)
        super().__init__(StringAttr(kind), sem_map, posts)

    @property
    def kind(self) -> str:
        return classify_policy_map(self.sem_map.data)

    @property
    def num_dims(self) -> int:
        return self.sem_map.data.num_dims

    def semaphore_index(self, tile: Sequence[int]) -> int:
        if len(tile) != self.num_dims:
            raise ValueError(f"policy takes {self.num_dims} tile coordinates, got {len(tile)}")
        return map_evaluator(self.sem_map.data)(tile)[0]

    def _grid_ranges(self, grid: Sequence[int]) -> list[tuple[int, int]]:
        if len(grid) != self.num_dims:
            raise ValueError(f"policy takes a {self.num_dims}-D grid, got {tuple(grid)}")
        return [(0, extent - 1) for extent in grid]

    def num_semaphores(self, grid: Sequence[int]) -> int:
        """Size of the semaphore array a producer of this grid needs (max index + 1)."""
        groupings = self.grouping_on(grid)
        if groupings is not None:  # numbered densely, `posts` tiles each
            return math.prod(grid) // grouped_policy(grid, groupings).posts.data
        _, high = _interval(self.sem_map.data.results[0], self._grid_ranges(grid), ())
        if box_size([(0, e) for e in grid]) <= ENUMERATION_LIMIT and (
            _linear_form(self.sem_map.data.results[0]) is None
        ):
            high = max(self.semaphore_index(t) for t in box_points([(0, e) for e in grid]))
        return high + 1

    def posts_per_semaphore(self, grid: Sequence[int]) -> Counter[int]:
        """How many tiles of `grid` post to each semaphore index (enumerates the grid, of at
        most ENUMERATION_LIMIT tiles)."""
        self._grid_ranges(grid)
        groupings = self.grouping_on(grid)
        if groupings is not None:
            posts = grouped_policy(grid, groupings).posts.data
            return Counter(dict.fromkeys(range(math.prod(grid) // posts), posts))
        if box_size([(0, e) for e in grid]) > ENUMERATION_LIMIT:
            raise ValueError(f"grid {tuple(grid)} has more than {ENUMERATION_LIMIT} tiles")
        index = map_evaluator(self.sem_map.data)
        return Counter(index(t)[0] for t in box_points([(0, e) for e in grid]))

    def grouping_on(self, grid: Sequence[int]) -> list[tuple[str, int]] | None:
        """The groupings `g` such that this policy is `grouped_policy(grid, g)` up to its
        `posts` (the same semaphore map, term by term), or None. Such a map sends the tiles
        of each group to one semaphore, numbered densely: correct by construction, on grids
        of any size."""
        terms = _grouping_terms(self.sem_map.data.results[0])
        if terms is None or terms[1] != 0 or len(grid) != self.num_dims:
            return None
        groupings: list[tuple[str, int]] = []
        for position in range(len(grid)):
            atoms = [(kind, m) for (p, kind, m) in terms[0] if p == position]
            if len(atoms) > 1:
                return None
            kind, m = atoms[0] if atoms else ("shared", 1)
            groupings.append(("distinct", 1) if kind == "plain" else (kind, m))
        try:
            grouped = grouped_policy(grid, groupings)
        except ValueError:  # a group that does not divide its extent
            return None
        return groupings if _grouping_terms(grouped.sem_map.data.results[0]) == terms else None

    def verify_on_grid(self, grid: Sequence[int]) -> None:
        """Grid-dependent soundness: indices ≥ 0, every semaphore gets exactly `posts` posts
        (fewer would hang a wait, more would let a wait pass early), and a TileSync map is a
        bijection of the grid onto 0..n-1. Decided from the map's shape where it is a grouped
        policy (`grouping_on`), else by enumerating the grid (of at most ENUMERATION_LIMIT
        tiles)."""
        groupings = self.grouping_on(grid)
        if groupings is not None:
            posts = grouped_policy(grid, groupings).posts.data
            if posts != self.posts.data:
                raise VerifyException(
                    f"policy {self.kind} on grid {tuple(grid)}: semaphore 0 receives {posts} "
                    f"posts per launch but the policy expects {self.posts.data}"
                )
            return
        tiles = box_size([(0, e) for e in grid])
        if tiles > ENUMERATION_LIMIT:
            raise VerifyException(
                f"policy {self.kind} {format_affine_map(self.sem_map.data)} on grid "
                f"{tuple(grid)}: cannot check a map of this shape on {tiles} tiles (at most "
                f"{ENUMERATION_LIMIT} are enumerated; the grouped shapes TileSync, RowSync, "
                f"StridedSync, Conv2DTileSync are checked on any grid)"
            )
        counts = self.posts_per_semaphore(grid)
        if min(counts) < 0:
            raise VerifyException(f"policy {self} maps a tile of grid {tuple(grid)} below 0")
        wrong = {i: n for i, n in counts.items() if n != self.posts.data}
        if wrong:
            index, count = min(wrong.items())
            raise VerifyException(
                f"policy {self.kind} on grid {tuple(grid)}: semaphore {index} receives "
                f"{count} posts per launch but the policy expects {self.posts.data}"
            )
        if self.kind == "TileSync" and sorted(counts) != list(range(math.prod(grid))):
            raise VerifyException(
                f"TileSync map is not a bijection of grid {tuple(grid)} "
                f"onto 0..{math.prod(grid) - 1}"
            )

    def verify(self) -> None:
        sem_map = self.sem_map.data
        text = format_affine_map(sem_map)
        if not 1 <= sem_map.num_dims <= 3:
            raise VerifyException(f"policy map takes 1 to 3 tile coordinates, got {text}")
        if sem_map.num_symbols != 0:
            raise VerifyException(f"policy map must not have symbols, got {text}")
        if len(sem_map.results) != 1:
            raise VerifyException(
                f"policy map must have exactly one result (the semaphore index), got {text}"
            )
        if (error := affine_map_error(sem_map)) is not None:
            raise VerifyException(f"policy map {text}: {error}")
        if self.posts.data < 1:
            raise VerifyException(f"policy posts must be positive, got {self.posts.data}")
        if self.posts.data >= 2**31:  # waits compare against epoch * posts in 32 bits
            raise VerifyException(f"policy posts must fit in i32, got {self.posts.data}")
        if self.declared_kind.data not in POLICY_KINDS:
            raise VerifyException(
                f"unknown policy name '{self.declared_kind.data}', expected one of "
                + ", ".join(POLICY_KINDS)
            )
        if self.declared_kind.data != self.kind:
            raise VerifyException(
                f"policy named {self.declared_kind.data} but its map {text} is {self.kind}"
            )
        if self.kind == "TileSync" and self.posts.data != 1:
            raise VerifyException(f"TileSync needs posts = 1, got {self.posts.data}")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            kind = parser.parse_identifier("policy name (TileSync, RowSync, ...)")
            sem_map = parser.parse_affine_map()
            parser.parse_punctuation(",")
            parser.parse_keyword("posts")
            parser.parse_punctuation("=")
            posts = parser.parse_integer(allow_boolean=False)
        return (StringAttr(kind), AffineMapAttr(sem_map), IntAttr(posts))

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(
            f"<{self.declared_kind.data} {format_affine_map(self.sem_map.data)}, "
            f"posts = {self.posts.data}>"
        )


def _grouping_terms(expr: AffineExpr) -> tuple[dict[tuple[int, str, int], int], int] | None:
    """`expr` as {(dim, "plain" | "mod" | "floordiv", m): coefficient} + constant, where an
    atom is a dim or a dim mod / floordiv a constant m; None for any other shape."""
    match expr:
        case AffineConstantExpr(value=value):
            return {}, value
        case AffineDimExpr(position=position):
            return {(position, "plain", 1): 1}, 0
        case AffineBinaryOpExpr(
            kind=AffineBinaryOpKind.Mod | AffineBinaryOpKind.FloorDiv as kind,
            lhs=AffineDimExpr(position=position),
            rhs=AffineConstantExpr(value=m),
        ) if m > 1:
            return {(position, "mod" if kind == AffineBinaryOpKind.Mod else "floordiv", m): 1}, 0
        case AffineBinaryOpExpr(kind=AffineBinaryOpKind.Add, lhs=lhs, rhs=rhs):
            left, right = _grouping_terms(lhs), _grouping_terms(rhs)
            if left is None or right is None:
                return None
            terms = dict(left[0])
            for atom, coefficient in right[0].items():
                terms[atom] = terms.get(atom, 0) + coefficient
            return {a: c for a, c in terms.items() if c}, left[1] + right[1]
        case AffineBinaryOpExpr(kind=AffineBinaryOpKind.Mul, lhs=lhs, rhs=rhs):
            constant, other = (lhs, rhs) if isinstance(lhs, AffineConstantExpr) else (rhs, lhs)
            inner = _grouping_terms(other)
            if not isinstance(constant, AffineConstantExpr) or inner is None:
                return None
            k = constant.value
            return {a: c * k for a, c in inner[0].items() if c * k}, inner[1] * k
        case _:
            return None


def _linearize(grid: Sequence[int], dims: Sequence[AffineExpr]) -> AffineExpr:
    """Row-major linear index of `dims` in a grid of those extents."""
    index: AffineExpr = AffineExpr.constant(0)
    for extent, dim in zip(grid, dims):
        index = index * extent + dim
    return index


def tile_sync(grid: Sequence[int]) -> PolicyAttr:
    """One semaphore per producer tile: the row-major index of the tile, posts = 1."""
    dims = [AffineExpr.dimension(i) for i in range(len(grid))]
    return PolicyAttr(AffineMap(len(grid), 0, (_linearize(grid, dims),)), 1)


def row_sync(grid: Sequence[int]) -> PolicyAttr:
    """One semaphore per row (the column d1 dropped), ready after all tiles of the row."""
    if len(grid) < 2:
        raise ValueError(f"RowSync needs a grid with a column dimension, got {tuple(grid)}")
    kept = [i for i in range(len(grid)) if i != COLUMN_DIM]
    dims = [AffineExpr.dimension(i) for i in kept]
    index = _linearize([grid[i] for i in kept], dims)
    return PolicyAttr(AffineMap(len(grid), 0, (index,)), grid[COLUMN_DIM])


def strided_sync(grid: Sequence[int], stride: int) -> PolicyAttr:
    """Columns `stride` apart share a semaphore (attention: Q, K, V column tiles of one head).

    The index is row-major over (row, column mod stride, other dims); each semaphore is ready
    after grid[1] / stride posts.
    """
    if len(grid) < 2 or stride < 2 or grid[COLUMN_DIM] % stride != 0:
        raise ValueError(
            f"StridedSync needs a 2-D or 3-D grid whose column extent is a multiple of a "
            f"stride > 1, got grid {tuple(grid)} and stride {stride}"
        )
    extents = [stride if i == COLUMN_DIM else grid[i] for i in range(len(grid))]
    dims = [
        AffineExpr.dimension(i) % stride if i == COLUMN_DIM else AffineExpr.dimension(i)
        for i in range(len(grid))
    ]
    index = _linearize(extents, dims)
    return PolicyAttr(AffineMap(len(grid), 0, (index,)), grid[COLUMN_DIM] // stride)


def conv2d_tile_sync(grid: Sequence[int], group: int) -> PolicyAttr:
    """Groups of `group` consecutive column tiles of a row share one semaphore, ready after
    `group` posts: an implicit-GEMM conv consumer whose reduction tile (C·R·S) spans `group`
    producer output-channel tiles waits once per group instead of once per tile."""
    if len(grid) < 2 or group < 2 or grid[COLUMN_DIM] % group != 0:
        raise ValueError(
            f"Conv2DTileSync needs a 2-D or 3-D grid whose column extent is a multiple of a "
            f"group > 1, got grid {tuple(grid)} and group {group}"
        )
    extents = [grid[COLUMN_DIM] // group if i == COLUMN_DIM else grid[i] for i in range(len(grid))]
    dims = [
        AffineExpr.dimension(i) // group if i == COLUMN_DIM else AffineExpr.dimension(i)
        for i in range(len(grid))
    ]
    return PolicyAttr(AffineMap(len(grid), 0, (_linearize(extents, dims),)), group)


# How one grid dimension maps its coordinates onto semaphores (cuSyncGen's per-dimension
# choice): every coordinate its own ("distinct"), all one ("shared"), coordinates `m` apart
# together ("mod", m), or `m` consecutive coordinates together ("floordiv", m).
GROUPING_KINDS = ("distinct", "shared", "mod", "floordiv")


def grouped_policy(grid: Sequence[int], groupings: Sequence[tuple[str, int]]) -> PolicyAttr:
    """The policy that groups each dimension of `grid` as `groupings` says.

    The semaphore index is row-major over the kept (grouped) coordinates, and `posts` is the
    number of tiles that share one semaphore. All distinct is `tile_sync`, the column shared
    `row_sync`, the column `mod` a stride `strided_sync`, the column `floordiv` a group
    `conv2d_tile_sync`; every other combination is the same attribute, printed as Custom.
    """
    if len(groupings) != len(grid):
        raise ValueError(f"{len(groupings)} groupings for a {len(grid)}-D grid {tuple(grid)}")
    extents: list[int] = []
    exprs: list[AffineExpr] = []
    posts = 1
    for position, (extent, (kind, m)) in enumerate(zip(grid, groupings)):
        dim = AffineExpr.dimension(position)
        if kind == "distinct":
            extents.append(extent)
            exprs.append(dim)
        elif kind == "shared":
            posts *= extent
        elif kind in ("mod", "floordiv"):
            if m < 1 or extent % m:
                raise ValueError(f"{kind} {m} does not divide extent {extent} of d{position}")
            extents.append(m if kind == "mod" else extent // m)
            exprs.append(dim % m if kind == "mod" else dim // m)
            posts *= extent // m if kind == "mod" else m
        else:
            raise ValueError(f"unknown grouping {kind!r}, expected one of {GROUPING_KINDS}")
    return PolicyAttr(AffineMap(len(grid), 0, (_linearize(extents, exprs),)), posts)


ORDER_KINDS = {
    # kind → allowed number of integer parameters (None: any)
    "row_major": 0,
    "column_major": 0,
    "strided": 1,  # tiles `stride` columns apart are taken consecutively
    "table": None,  # a host-built order table (parameters are free for the pass that makes it)
}


@irdl_attr_definition
class OrderAttr(ParametrizedAttribute):
    """`#sync.order<row_major>`, `#sync.order<strided<3>>`: the order tiles are taken in."""

    name = "sync.order"

    kind: StringAttr
    params: ArrayAttr[IntAttr]

    def __init__(self, kind: str | StringAttr, params: Sequence[int] = ()):
        if isinstance(kind, str):
            kind = StringAttr(kind)
        super().__init__(kind, ArrayAttr(IntAttr(p) for p in params))

    @property
    def values(self) -> tuple[int, ...]:
        return tuple(p.data for p in self.params)

    def verify(self) -> None:
        if self.kind.data not in ORDER_KINDS:
            raise VerifyException(
                f"unknown tile order '{self.kind.data}', expected one of " + ", ".join(ORDER_KINDS)
            )
        expected = ORDER_KINDS[self.kind.data]
        if expected is not None and len(self.params) != expected:
            raise VerifyException(
                f"tile order {self.kind.data} takes {expected} parameters, got {len(self.params)}"
            )
        if self.kind.data == "strided" and self.values[0] < 1:
            raise VerifyException(f"strided tile order needs a positive stride, got {self.values}")
        if self.kind.data == "table":
            wrong = next((v for v in self.values if not 0 <= v < 2**31), None)
            if wrong is not None:  # the kernel reads its tile id from an i32 table
                raise VerifyException(
                    f"tile order table entries are tile ids in [0, {2**31 - 1}], got {wrong}")

    def verify_on_grid(self, grid: Sequence[int]) -> None:
        """A `table` order must list every tile id of the grid exactly once: a tile listed
        twice posts twice, one left out is never computed and its consumers wait forever."""
        if self.kind.data != "table":
            return
        values, count = self.values, math.prod(grid)
        if len(values) != count:
            raise VerifyException(
                f"tile order table has {len(values)} entries but grid {tuple(grid)} has "
                f"{count} tiles"
            )
        seen = [False] * count
        for position, value in enumerate(values):
            if not 0 <= value < count:
                raise VerifyException(
                    f"tile order table entry {position} is {value}, outside the {count} tiles of "
                    f"grid {tuple(grid)}"
                )
            if seen[value]:
                raise VerifyException(
                    f"tile order table lists tile {value} twice: not a permutation of grid "
                    f"{tuple(grid)}"
                )
            seen[value] = True

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            kind = parser.parse_identifier("tile order (row_major, column_major, ...)")
            params: list[int] = []
            if parser.parse_optional_punctuation("<") is not None:
                params = parser.parse_comma_separated_list(
                    parser.Delimiter.NONE, parser.parse_integer
                )
                parser.parse_punctuation(">")
        return (StringAttr(kind), ArrayAttr(IntAttr(p) for p in params))

    def print_parameters(self, printer: Printer) -> None:
        params = f"<{', '.join(str(v) for v in self.values)}>" if self.params else ""
        printer.print_string(f"<{self.kind.data}{params}>")


# ---------------------------------------------------------------------------------------------
# Kernel-level ops
# ---------------------------------------------------------------------------------------------


@irdl_op_definition
class TileOp(IRDLOperation):
    """`%x, %y = sync.tile : index, index`: this block's tile coordinates (rank 1–3).

    Without an order the lowering reads the block ids; with one it takes the next slot of an
    atomic counter so tiles are handed out in dispatch order (cuSync's tile()).
    """

    name = "sync.tile"

    order = opt_prop_def(OrderAttr)
    coords = var_result_def(IndexType)

    assembly_format = "(`order` qualified($order)^)? attr-dict `:` type($coords)"

    def __init__(self, order: OrderAttr | None = None, rank: int = 2):
        super().__init__(result_types=[[IndexType()] * rank], properties={"order": order})

    def verify_(self) -> None:
        if not 1 <= len(self.coords) <= 3:
            raise VerifyException(f"sync.tile yields 1 to 3 coordinates, got {len(self.coords)}")


def _verify_semaphore_access(
    op: IRDLOperation, sems: SSAValue, tile: Sequence[SSAValue], policy: PolicyAttr
) -> None:
    _verify_semaphores(op, sems)
    if len(tile) != policy.num_dims:
        raise VerifyException(
            f"{op.name}: policy {policy.kind} takes {policy.num_dims} tile coordinates, "
            f"got {len(tile)}"
        )


def _verify_semaphores(op: IRDLOperation, sems: SSAValue) -> None:
    sems_type = sems.type
    if not (
        isinstance(sems_type, MemRefType)
        and len(sems_type.get_shape()) == 1
        and sems_type.get_element_type() == IntegerType(32)
    ):
        raise VerifyException(
            f"{op.name}: semaphores must be a rank-1 memref of i32, got {sems_type}"
        )


@irdl_op_definition
class WaitOp(IRDLOperation):
    """`sync.wait %sems[%x, %y] epoch %e policy #sync.policy<...> : memref<?xi32>`.

    The whole block waits until `sems[policy(tile)] >= epoch * policy.posts` (one thread spins
    on an acquire load, then a block barrier; compared modulo 2^32). `epoch` is the launch
    count, starting at 1, so semaphores never need a reset between launches, however many.
    `timeout_ns` bounds the spin in debug builds. With `single_thread` only the executing thread
    waits (it alone issues the loads that follow: a warp-specialized producer); with
    `async_proxy` those loads are bulk tensor copies, so the acquire is followed by
    `fence.proxy.async.global` (the async proxy does not see the generic proxy's acquire).
    `unless %ready` (a `sync.probe`'s answer, the same in every thread) skips the wait where the
    probe found every semaphore it tests ready, this one among them: the probe's acquire loads
    did what the wait would have.
    """

    name = "sync.wait"

    sems = operand_def(MemRefType)
    tile = var_operand_def(IndexType)
    epoch = operand_def(I32)
    unless = opt_operand_def(i1)
    policy = prop_def(PolicyAttr)
    timeout_ns = opt_prop_def(IntegerAttr[I64])
    single_thread = opt_prop_def(UnitAttr)
    async_proxy = opt_prop_def(UnitAttr)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    assembly_format = (
        "$sems `[` $tile `]` `epoch` $epoch `policy` qualified($policy) "
        "(`unless` $unless^)? (`timeout_ns` $timeout_ns^)? (`single_thread` $single_thread^)? "
        "(`async_proxy` $async_proxy^)? attr-dict `:` type($sems)"
    )

    def __init__(
        self,
        sems: SSAValue | Operation,
        tile: Sequence[SSAValue | Operation],
        policy: PolicyAttr,
        epoch: SSAValue | Operation,
        timeout_ns: int | None = None,
        single_thread: bool = False,
        async_proxy: bool = False,
        unless: SSAValue | Operation | None = None,
    ):
        super().__init__(
            operands=[sems, tile, epoch, [] if unless is None else [unless]],
            properties={
                "policy": policy,
                "timeout_ns": None if timeout_ns is None else IntegerAttr(timeout_ns, i64),
                "single_thread": UnitAttr() if single_thread else None,
                "async_proxy": UnitAttr() if async_proxy else None,
            },
        )

    def verify_(self) -> None:
        _verify_semaphore_access(self, self.sems, self.tile, self.policy)
        if self.timeout_ns is not None and self.timeout_ns.value.data <= 0:
            raise VerifyException(
                f"sync.wait: timeout_ns must be positive, got {self.timeout_ns.value.data}"
            )


@dataclass(frozen=True)
class ProbeRange:
    """A forall variable of a probe's part: lo, lo + step, ... below hi."""

    lo: int
    hi: int
    step: int

    @property
    def count(self) -> int:
        return -(-(self.hi - self.lo) // self.step)


@irdl_op_definition
class ProbeOp(IRDLOperation):
    """`%ready = sync.probe %sems[%x, %y] epoch %e policy #sync.policy<...> reads [maps]
    over [ranges] (clipped_to array<i64: grid>)? (until_ready)? : memref<?xi32>`.

    Whether every producer tile this tile reads is already posted, asked once and in
    parallel: part i of `reads` is a map (consumer tile)[forall values] → producer tile, its
    forall values the `over` entry i (lo, hi, step per symbol). The block's threads share the
    points, test one semaphore each (an acquire load, `sems[policy(tile)] >= epoch * posts`,
    never a spin) and AND their answers in a block barrier: `ready` is the same in every
    thread, and true only where every semaphore was ready. With `clipped_to`, producer tiles
    outside that grid are read by nobody and count as ready. A `sync.wait ... unless %ready`
    on one of these semaphores is then skipped: a tile that waits at many k-steps for tiles
    finished long before pays one round trip to memory instead of one per wait.

    With `until_ready` the probe waits instead of testing: each thread spins on its points (an
    acquire load first, as a wait's spin, with its timeout) and a block barrier follows, so
    `ready` is always true and the waits it guards never run. The tile then waits for all of
    the producer tiles at once, in parallel, before its first load of them: one round trip
    where they are posted, instead of one block-wide wait per step where the probe would
    have failed (a consumer launched early, with PDL, finds them not yet posted).
    """

    name = "sync.probe"

    sems = operand_def(MemRefType)
    tile = var_operand_def(IndexType)
    epoch = operand_def(I32)
    ready = result_def(i1)
    policy = prop_def(PolicyAttr)
    reads = prop_def(ArrayAttr[AffineMapAttr])
    over = prop_def(ArrayAttr[DenseArrayBase])
    clipped_to = opt_prop_def(DenseArrayBase)
    until_ready = opt_prop_def(UnitAttr)

    assembly_format = (
        "$sems `[` $tile `]` `epoch` $epoch `policy` qualified($policy) `reads` qualified($reads) "
        "`over` qualified($over) (`clipped_to` qualified($clipped_to)^)? "
        "(`until_ready` $until_ready^)? attr-dict `:` type($sems)"
    )

    def __init__(
        self,
        sems: SSAValue | Operation,
        tile: Sequence[SSAValue | Operation],
        policy: PolicyAttr,
        epoch: SSAValue | Operation,
        parts: Sequence[tuple[AffineMap, Sequence[ProbeRange]]],
        clipped_to: Sequence[int] | None = None,
        until_ready: bool = False,
    ):
        super().__init__(
            operands=[sems, tile, epoch],
            result_types=[i1],
            properties={
                "policy": policy,
                "reads": ArrayAttr([AffineMapAttr(m) for m, _ in parts]),
                "over": ArrayAttr([
                    DenseArrayBase.from_list(i64, [v for r in ranges
                                                   for v in (r.lo, r.hi, r.step)])
                    for _, ranges in parts]),
                "clipped_to": None if clipped_to is None else
                DenseArrayBase.from_list(i64, list(clipped_to)),
                "until_ready": UnitAttr() if until_ready else None,
            },
        )

    def parts(self) -> list[tuple[AffineMap, list[ProbeRange]]]:
        """Each part's map and the ranges of its symbols."""
        out = []
        for m, flat in zip(self.reads.data, self.over.data, strict=True):
            values = flat.get_values()
            out.append((m.data, [ProbeRange(*values[i:i + 3])
                                 for i in range(0, len(values), 3)]))
        return out

    def verify_(self) -> None:
        # its tile is the consumer's; each map below takes it to the policy's producer tiles
        _verify_semaphores(self, self.sems)
        if len(self.reads.data) != len(self.over.data):
            raise VerifyException(
                f"sync.probe: {len(self.reads.data)} maps but {len(self.over.data)} ranges")
        if not self.reads.data:
            raise VerifyException("sync.probe: reads no producer tile")
        for i, (m, flat) in enumerate(zip(self.reads.data, self.over.data)):
            amap, values = m.data, flat.get_values()
            if amap.num_dims != len(self.tile) or len(amap.results) != self.policy.num_dims:
                raise VerifyException(
                    f"sync.probe: map {i} takes {amap.num_dims} tile coordinates and gives "
                    f"{len(amap.results)}; the tile has {len(self.tile)} and the policy takes "
                    f"{self.policy.num_dims}")
            if len(values) != 3 * amap.num_symbols:
                raise VerifyException(
                    f"sync.probe: map {i} has {amap.num_symbols} symbols, so its range needs "
                    f"{3 * amap.num_symbols} values (lo, hi, step each), got {len(values)}")
            for lo, hi, step in zip(values[0::3], values[1::3], values[2::3]):
                if not lo < hi or step < 1:
                    raise VerifyException(
                        f"sync.probe: map {i}: range [{lo}, {hi}) step {step} is empty or "
                        "its step is not positive")
        points = sum(math.prod(r.count for r in ranges) for _, ranges in self.parts())
        if points > PROBE_POINT_LIMIT:
            raise VerifyException(
                f"sync.probe: {points} points, more than {PROBE_POINT_LIMIT} (a probe's block "
                "tests them a round of its threads at a time)")
        if self.clipped_to is not None:
            grid = self.clipped_to.get_values()
            if len(grid) != self.policy.num_dims or any(e < 1 for e in grid):
                raise VerifyException(
                    f"sync.probe: clipped_to {tuple(grid)} is not a grid of the policy's "
                    f"{self.policy.num_dims} dimensions")


@irdl_op_definition
class PostOp(IRDLOperation):
    """`sync.post %sems[%x, %y] epoch %e policy #sync.policy<...> : memref<?xi32>`.

    After all threads of the block have stored the tile (block barrier), one thread releases
    +1 on `sems[policy(tile)]` at gpu scope (fence then atomic add). `epoch` is carried for
    the lowering that may store `epoch * posts` directly when one tile owns the semaphore.
    With `threads N`, the tile was stored by the block's first N threads only (the consumer
    warpgroups of a warp-specialized kernel): they synchronize on named barrier
    SYNC_NAMED_BARRIER instead, and the first of them releases. With `async_proxy` the tile
    was stored by bulk tensor copies (TMA stores): each thread first waits for the writes of
    its own copies and orders them before the release (`cp.async.bulk.commit_group`, since
    wait_group waits for committed groups only, then `cp.async.bulk.wait_group 0` and
    `fence.proxy.async.global`; a thread without copies passes at once).
    """

    name = "sync.post"

    sems = operand_def(MemRefType)
    tile = var_operand_def(IndexType)
    epoch = operand_def(I32)
    policy = prop_def(PolicyAttr)
    threads = opt_prop_def(IntegerAttr[I32])
    async_proxy = opt_prop_def(UnitAttr)

    assembly_format = (
        "$sems `[` $tile `]` `epoch` $epoch `policy` qualified($policy) "
        "(`threads` $threads^)? (`async_proxy` $async_proxy^)? attr-dict `:` type($sems)"
    )

    def __init__(
        self,
        sems: SSAValue | Operation,
        tile: Sequence[SSAValue | Operation],
        policy: PolicyAttr,
        epoch: SSAValue | Operation,
        threads: int | None = None,
        async_proxy: bool = False,
    ):
        super().__init__(operands=[sems, tile, epoch], properties={
            "policy": policy,
            "threads": None if threads is None else IntegerAttr(threads, i32),
            "async_proxy": UnitAttr() if async_proxy else None})

    @property
    def timeout_ns(self) -> None:
        """Posts never block; present so waits and posts share an accessor set."""
        return None

    def verify_(self) -> None:
        _verify_semaphore_access(self, self.sems, self.tile, self.policy)
        _verify_threads(self, self.threads)


def _verify_threads(op: Operation, threads: IntegerAttr | None) -> None:
    error = whole_warps_error(threads.value.data) if threads is not None else None
    if error is not None:
        raise VerifyException(f"{op.name}: {error}")


def _enclosing_function_args(op: Operation) -> Sequence[SSAValue] | None:
    """The entry-block arguments of the function (gpu.func, func.func...) around `op`."""
    parent = op.parent_op()
    while parent is not None:
        if parent.name in ("gpu.func", "func.func", "llvm.func") and parent.regions:
            blocks = parent.regions[0].blocks
            return tuple(blocks.first.args) if blocks.first is not None else None
        parent = parent.parent_op()
    return None


@irdl_op_definition
class LoadPointOp(IRDLOperation):
    """`sync.load_point operand 0 [%x, %y] (step %k)?`: a kernel's hook before a load.

    "This block, computing consumer tile [%x, %y] (the coordinates of its sync.tile), is
    about to load data of kernel argument `operand`." With `step %k`, only the data that the
    dependency's first forall variable s0 = %k reaches (per-k-step loads of a GEMM); a tile
    runs its steps upward from the first of s0's range, so the waits of a step that only
    re-reads semaphores an earlier step read may be left out (sync-verify checks it).

    The hook costs nothing by itself: `sync-insert-post-wait` puts the waits that the declared
    dependencies require in front of it (and erases it where no stage produces the operand);
    a filled hook stays as the marker `sync-verify` checks the waits against, and
    `convert-sync-to-nvvm` erases it. `single_thread`: the hook sits in the one thread that
    issues the loads (its waits spin in that thread, without a block barrier); `async_proxy`:
    the loads are bulk tensor copies of a tensor-map argument (its waits add the proxy fence).
    """

    name = "sync.load_point"

    operand = prop_def(IntAttr)
    tile = var_operand_def(IndexType)
    step = opt_operand_def(IndexType)
    single_thread = opt_prop_def(UnitAttr)
    async_proxy = opt_prop_def(UnitAttr)

    irdl_options = (AttrSizedOperandSegments(as_property=True),)

    def __init__(
        self,
        operand: int,
        tile: Sequence[SSAValue | Operation],
        step: SSAValue | Operation | None = None,
        single_thread: bool = False,
        async_proxy: bool = False,
    ):
        super().__init__(
            operands=[list(tile), [] if step is None else [step]],
            properties={"operand": IntAttr(operand),
                        "single_thread": UnitAttr() if single_thread else None,
                        "async_proxy": UnitAttr() if async_proxy else None},
        )

    def verify_(self) -> None:
        if not 1 <= len(self.tile) <= 3:
            raise VerifyException(
                f"{self.name}: a tile has 1 to 3 coordinates, got {len(self.tile)}"
            )
        if self.operand.data < 0:
            raise VerifyException(f"{self.name}: operand index must be >= 0")
        args = _enclosing_function_args(self)
        if args is not None:
            if self.operand.data >= len(args):
                raise VerifyException(
                    f"{self.name}: operand {self.operand.data} is not an argument of the "
                    f"enclosing function, which has {len(args)}"
                )
            arg_type = args[self.operand.data].type
            if not isinstance(arg_type, MemRefType | TensorMapType):
                raise VerifyException(
                    f"{self.name}: operand {self.operand.data} must be a memref or tensor map "
                    f"argument (the buffer a producer writes), got {arg_type}"
                )
            if isinstance(arg_type, TensorMapType) and self.async_proxy is None:
                raise VerifyException(
                    f"{self.name}: operand {self.operand.data} is a tensor map: its loads are "
                    "bulk tensor copies, mark the hook async_proxy"
                )

    @classmethod
    def parse(cls, parser: Parser) -> LoadPointOp:
        parser.parse_keyword("operand")
        operand = parser.parse_integer(allow_boolean=False, allow_negative=False)
        tile = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, parser.parse_unresolved_operand
        )
        index = IndexType()
        step = None
        if parser.parse_optional_keyword("step") is not None:
            step = parser.resolve_operand(parser.parse_unresolved_operand(), index)
        single_thread = parser.parse_optional_keyword("single_thread") is not None
        async_proxy = parser.parse_optional_keyword("async_proxy") is not None
        attributes = parser.parse_optional_attr_dict()
        op = cls(operand, [parser.resolve_operand(t, index) for t in tile], step, single_thread,
                 async_proxy)
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(f" operand {self.operand.data} [")
        printer.print_list(self.tile, printer.print_operand)
        printer.print_string("]")
        if self.step is not None:
            printer.print_string(" step ")
            printer.print_operand(self.step)
        if self.single_thread is not None:
            printer.print_string(" single_thread")
        if self.async_proxy is not None:
            printer.print_string(" async_proxy")
        printer.print_op_attributes(self.attributes)


@irdl_op_definition
class StorePointOp(IRDLOperation):
    """`sync.store_point [%x, %y] (threads N)? (async_proxy)?`: a kernel's hook after its
    output tile is completely stored (or its stores issued, with `async_proxy`: bulk tensor
    copies whose writes the post waits for). `sync-insert-post-wait` makes it a `sync.post`
    when another stage depends on this one, and erases it otherwise. With `threads N`, the
    block's first N threads stored the tile and all of them reach the hook (the others do
    not: a warp-specialized kernel's producer)."""

    name = "sync.store_point"

    tile = var_operand_def(IndexType)
    threads = opt_prop_def(IntegerAttr[I32])
    async_proxy = opt_prop_def(UnitAttr)

    def __init__(self, tile: Sequence[SSAValue | Operation], threads: int | None = None,
                 async_proxy: bool = False):
        super().__init__(operands=[list(tile)], properties={
            "threads": None if threads is None else IntegerAttr(threads, i32),
            "async_proxy": UnitAttr() if async_proxy else None})

    @classmethod
    def parse(cls, parser: Parser) -> StorePointOp:
        tile = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, parser.parse_unresolved_operand
        )
        threads = None
        if parser.parse_optional_keyword("threads") is not None:
            threads = parser.parse_integer(allow_boolean=False, allow_negative=False)
        async_proxy = parser.parse_optional_keyword("async_proxy") is not None
        attributes = parser.parse_optional_attr_dict()
        op = cls([parser.resolve_operand(t, IndexType()) for t in tile], threads, async_proxy)
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(" [")
        printer.print_list(self.tile, printer.print_operand)
        printer.print_string("]")
        if self.threads is not None:
            printer.print_string(f" threads {self.threads.value.data}")
        if self.async_proxy is not None:
            printer.print_string(" async_proxy")
        printer.print_op_attributes(self.attributes)

    def verify_(self) -> None:
        if not 1 <= len(self.tile) <= 3:
            raise VerifyException(
                f"{self.name}: a tile has 1 to 3 coordinates, got {len(self.tile)}"
            )
        _verify_threads(self, self.threads)


HOOK_OPS = (LoadPointOp, StorePointOp)


# ---------------------------------------------------------------------------------------------
# Host-level (stage) ops
# ---------------------------------------------------------------------------------------------


def _extents(values: Sequence[int] | DenseArrayBase) -> DenseArrayBase:
    if isinstance(values, DenseArrayBase):
        return values
    return DenseArrayBase.from_list(i64, tuple(values))


def _verify_extents(op_name: str, what: str, extents: tuple[int, ...]) -> None:
    if not 1 <= len(extents) <= 3:
        raise VerifyException(f"{op_name}: {what} must have 1 to 3 dimensions, got {extents}")
    if any(e < 1 for e in extents):
        raise VerifyException(f"{op_name}: {what} extents must be positive, got {extents}")


# CUDA's limit on threads per block.


@irdl_op_definition
class StageOp(IRDLOperation):
    """`sync.stage @name {kernel = @mod::@func, grid = array<i64: ...>, block = ...,
    tile = ..., order = #sync.order<...>}`: one launch of a kernel, tile by tile.

    The grid is in tiles (one block per tile); its rank (1–3) is the number of tile
    coordinates that dependencies and policies of this stage use.

    Tile (i0, i1, ...) writes the box [i0·t0, (i0+1)·t0) × [i1·t1, (i1+1)·t1) × ... of the
    stage's output. `output_map` (optional) says where that array lies in the buffer its
    consumers read: each result is one of its dimensions plus a constant, each dimension used
    once, so `affine_map<(d0, d1, d2) -> (d2, d0, d1)>` is a batched GEMM whose grid's z is
    the batch of a [B, M, N] output and `affine_map<(d0, d1) -> (d0, d1 + 1024)>` a producer
    writing columns from 1024 on (Q, K and V GEMMs into one QKV buffer). Without it index d of
    the buffer is dimension d.
    """

    name = "sync.stage"

    sym_name = prop_def(SymbolNameConstraint())
    kernel = prop_def(SymbolRefAttr)
    grid = prop_def(DenseArrayBase.constr(i64))
    block = prop_def(DenseArrayBase.constr(i64))
    tile = prop_def(DenseArrayBase.constr(i64))
    order = opt_prop_def(OrderAttr)
    # The semaphore layout of this stage's output, set by sync-generate-policies (or
    # sync-select-policy); absent on a stage nobody depends on.
    policy = opt_prop_def(PolicyAttr)
    output_map = opt_prop_def(AffineMapAttr)

    traits = traits_def(SymbolOpInterface())
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$sym_name attr-dict"

    def __init__(
        self,
        name: str,
        kernel: SymbolRefAttr | str | Sequence[str],
        grid: Sequence[int],
        block: Sequence[int],
        tile: Sequence[int],
        order: OrderAttr | None = None,
        policy: PolicyAttr | None = None,
    ):
        if isinstance(kernel, str):
            kernel = SymbolRefAttr(kernel)
        elif not isinstance(kernel, SymbolRefAttr):
            kernel = SymbolRefAttr(kernel[0], list(kernel[1:]))
        super().__init__(
            properties={
                "sym_name": StringAttr(name),
                "kernel": kernel,
                "grid": _extents(grid),
                "block": _extents(block),
                "tile": _extents(tile),
                "order": order,
                "policy": policy,
            }
        )

    @property
    def grid_shape(self) -> tuple[int, ...]:
        return self.grid.get_values()

    @property
    def block_shape(self) -> tuple[int, ...]:
        return self.block.get_values()

    @property
    def tile_shape(self) -> tuple[int, ...]:
        return self.tile.get_values()

    @property
    def rank(self) -> int:
        return len(self.grid_shape)

    @property
    def semaphores(self) -> tuple[int, int]:
        """(words of this stage's semaphore buffer, posts each receives per launch): what
        the runtime allocates, so a post or wait at an index past it is out of bounds. The
        `num_semaphores` sync-insert-post-wait records, else its policy's count, else one
        semaphore a tile posted once."""
        grid = self.grid_shape
        if self.policy is None:
            return math.prod(grid), 1
        count = self.attributes.get(NUM_SEMAPHORES_ATTR)
        if isinstance(count, IntegerAttr):
            return count.value.data, self.policy.posts.data
        return self.policy.num_semaphores(grid), self.policy.posts.data

    @property
    def output_placement(self) -> tuple[tuple[int, int], ...] | None:
        """Per dimension of the output buffer, (the tile array's dimension, its offset): from
        `output_map`, None without one."""
        if self.output_map is None:
            return None
        placement = []
        for result in self.output_map.data.results:
            dims, offset = _dim_plus_constant(result)
            if len(dims) != 1:
                raise VerifyException(
                    f"{self.name} @{self.sym_name.data}: output_map result {result} is not one "
                    f"dimension plus a constant")
            placement.append((dims[0], offset))
        return tuple(placement)

    def verify_(self) -> None:
        _verify_extents(self.name, "grid", self.grid_shape)
        _verify_extents(self.name, "block", self.block_shape)
        _verify_extents(self.name, "tile", self.tile_shape)
        if math.prod(self.block_shape) > MAX_THREADS_PER_BLOCK:
            raise VerifyException(
                f"{self.name}: block {self.block_shape} has {math.prod(self.block_shape)} "
                f"threads, more than {MAX_THREADS_PER_BLOCK}"
            )
        for error in (grid_error(self.grid_shape), launch_bounds_error(block=self.block_shape)):
            if error is not None:
                raise VerifyException(f"{self.name}: {error}")
        # A kernel lives in a gpu.module: @module::@function, nothing deeper.
        if len(self.kernel.nested_references) != 1:
            raise VerifyException(
                f"{self.name}: kernel must be @gpu_module::@function, got {self.kernel}"
            )
        # When the module is in this symbol table, the function must be in it.
        module_ref = SymbolRefAttr(self.kernel.root_reference)
        if _lookup(self, module_ref) is not None and _lookup(self, self.kernel) is None:
            raise VerifyException(f"{self.name}: kernel {self.kernel} is not defined")
        if self.output_map is not None:
            self._verify_output_map()
        if self.order is not None:
            try:
                self.order.verify_on_grid(self.grid_shape)
            except VerifyException as e:
                raise VerifyException(f"{self.name} @{self.sym_name.data}: {e}") from e
        if self.policy is not None:
            if self.policy.num_dims != self.rank:
                raise VerifyException(
                    f"{self.name}: policy {self.policy.kind} takes {self.policy.num_dims} tile "
                    f"coordinates but the grid {self.grid_shape} has {self.rank}"
                )
            try:
                self.policy.verify_on_grid(self.grid_shape)
            except VerifyException as e:
                raise VerifyException(f"{self.name} @{self.sym_name.data}: {e}") from e


    def _verify_output_map(self) -> None:
        where = f"{self.name} @{self.sym_name.data}"
        amap = self.output_map.data  # type: ignore[union-attr]
        if amap.num_dims != self.rank or amap.num_symbols != 0:
            raise VerifyException(
                f"{where}: output_map {amap} must take the grid's {self.rank} dimensions and "
                f"no symbols")
        placement = self.output_placement
        assert placement is not None
        used = sorted(dim for dim, _offset in placement)
        if used != list(range(self.rank)):
            raise VerifyException(
                f"{where}: output_map {amap} must use each of the grid's {self.rank} "
                f"dimensions once (a permutation, each plus a constant)")
        if any(offset < 0 for _dim, offset in placement):
            raise VerifyException(f"{where}: output_map {amap} has a negative offset")


def _dim_plus_constant(expr: AffineExpr) -> tuple[list[int], int]:
    """(the dimensions added, the constant added) of a sum of dimensions and constants; a
    product or a division anywhere gives two dimensions' worth ([-1, -1]): no placement."""
    if isinstance(expr, AffineDimExpr):
        return [expr.position], 0
    if isinstance(expr, AffineConstantExpr):
        return [], expr.value
    if isinstance(expr, AffineBinaryOpExpr) and expr.kind == AffineBinaryOpKind.Add:
        (left, a), (right, b) = _dim_plus_constant(expr.lhs), _dim_plus_constant(expr.rhs)
        return left + right, a + b
    return [-1, -1], 0


def _lookup(op: Operation, ref: SymbolRefAttr) -> Operation | None:
    if op.parent_op() is None:
        return None
    try:
        return SymbolTable.lookup_symbol(op, ref)
    except ValueError:  # no symbol table above `op` (a detached op)
        return None


def _lookup_stage(op: Operation, ref: SymbolRefAttr, role: str) -> StageOp:
    stage = _lookup(op, ref)
    if not isinstance(stage, StageOp):
        found = "nothing" if stage is None else stage.name
        raise VerifyException(f"{op.name}: {role} {ref} must name a sync.stage, found {found}")
    return stage


@irdl_op_definition
class DependencyOp(IRDLOperation):
    """`sync.dependency @producer -> @consumer operand 0 tiles (d0, d1)[s0] -> (d0, s0)
    forall s0 in [0, 8)`: consumer tile (d0, d1) reads producer tiles (d0, s0) for every s0.

    The map's dims are the consumer tile coordinates, its symbols the `forall` variables, each
    with a half-open range, and its results a producer tile. `operand` is the consumer kernel
    argument that the producer writes, so one consumer can depend on several producers (and a
    producer feed several operands). The verifier proves that every producer tile reached lies
    in the producer's grid, unless the dependency is `clipped`: then tiles outside the grid
    are not read (a 3×3 convolution's halo rows at the image border are zero padding), e.g.
    `tiles (d0, d1)[s0] -> (d0 + s0 - 1, 0) forall s0 in [0, 3) clipped`.
    """

    name = "sync.dependency"

    producer = prop_def(SymbolRefAttr)
    consumer = prop_def(SymbolRefAttr)
    operand = prop_def(IntAttr)
    tiles = prop_def(AffineMapAttr)
    forall_ranges = prop_def(DenseArrayBase.constr(i64))  # lo0, hi0, lo1, hi1, ...
    clipped = opt_prop_def(UnitAttr)  # producer tiles outside the grid are not read

    def __init__(
        self,
        producer: str | SymbolRefAttr,
        consumer: str | SymbolRefAttr,
        operand: int,
        tiles_map: AffineMap | AffineMapAttr,
        forall_ranges: Sequence[tuple[int, int]] = (),
        clipped: bool = False,
    ):
        super().__init__(
            properties={
                "producer": SymbolRefAttr(producer) if isinstance(producer, str) else producer,
                "consumer": SymbolRefAttr(consumer) if isinstance(consumer, str) else consumer,
                "operand": IntAttr(operand),
                "tiles": AffineMapAttr(tiles_map)
                if isinstance(tiles_map, AffineMap)
                else tiles_map,
                "forall_ranges": DenseArrayBase.from_list(
                    i64, [bound for lo_hi in forall_ranges for bound in lo_hi]
                ),
                "clipped": UnitAttr() if clipped else None,
            }
        )

    @property
    def tiles_map(self) -> AffineMap:
        return self.tiles.data

    @property
    def ranges(self) -> list[tuple[int, int]]:
        """The `forall` ranges, half-open [lo, hi), one per symbol of the map."""
        flat = self.forall_ranges.get_values()
        return [(flat[i], flat[i + 1]) for i in range(0, len(flat), 2)]

    def producer_tiles(self, consumer_tile: Sequence[int]) -> list[tuple[int, ...]]:
        """Every producer tile consumer_tile reads, in forall order, without duplicates."""
        if len(consumer_tile) != self.tiles_map.num_dims:
            raise ValueError(
                f"dependency takes {self.tiles_map.num_dims} consumer coordinates, "
                f"got {tuple(consumer_tile)}"
            )
        read = self.reader()
        seen: dict[tuple[int, ...], None] = {}
        for forall_values in box_points(self.ranges):
            tile = read(consumer_tile, forall_values)
            if tile is not None:
                seen.setdefault(tile, None)
        return list(seen)

    def read(self, consumer_tile: Sequence[int],
             forall_values: Sequence[int]) -> tuple[int, ...] | None:
        """The producer tile read at these forall values; None where a clipped dependency
        falls outside the producer grid (nothing is read there)."""
        return self.reader()(consumer_tile, forall_values)

    def reader(self) -> Reader:
        """`read` with the map's evaluator and the producer's grid looked up once: for loops
        over many consumer tiles or forall points (a symbol lookup per point took most of
        the time of a wide clipped box)."""
        grid = None if self.clipped is None else self.producer_stage().grid_shape
        evaluate = map_evaluator(self.tiles_map, grid)
        return lambda consumer_tile, forall_values: evaluate((*consumer_tile, *forall_values))

    def producer_stage(self) -> StageOp:
        return _lookup_stage(self, self.producer, "producer")

    def consumer_stage(self) -> StageOp:
        return _lookup_stage(self, self.consumer, "consumer")

    def verify_(self) -> None:
        tiles_map = self.tiles_map
        if (error := affine_map_error(tiles_map)) is not None:
            raise VerifyException(
                f"{self.name}: map {format_affine_map(tiles_map)}: {error}")
        if len(self.forall_ranges) % 2 or len(self.ranges) != tiles_map.num_symbols:
            raise VerifyException(
                f"{self.name}: {tiles_map.num_symbols} forall variables need as many ranges, "
                f"got {self.ranges}"
            )
        for position, (lo, hi) in enumerate(self.ranges):
            if lo >= hi:
                raise VerifyException(f"{self.name}: forall s{position} in [{lo}, {hi}) is empty")
        if box_size(self.ranges) > ENUMERATION_LIMIT:
            raise VerifyException(
                f"{self.name}: each consumer tile reads {box_size(self.ranges)} points of the "
                f"forall box, more than {ENUMERATION_LIMIT}"
            )
        if self.operand.data < 0:
            raise VerifyException(f"{self.name}: operand index must be >= 0")
        if self.producer == self.consumer:
            raise VerifyException(f"{self.name}: a stage cannot depend on itself")
        producer, consumer = self.producer_stage(), self.consumer_stage()
        if tiles_map.num_dims != consumer.rank:
            raise VerifyException(
                f"{self.name}: map takes {tiles_map.num_dims} consumer tile coordinates but "
                f"consumer {self.consumer} has a {consumer.rank}-D grid {consumer.grid_shape}"
            )
        if len(tiles_map.results) != producer.rank:
            raise VerifyException(
                f"{self.name}: map yields {len(tiles_map.results)} producer tile coordinates "
                f"but producer {self.producer} has a {producer.rank}-D grid "
                f"{producer.grid_shape}"
            )
        if self.clipped is None:
            self._verify_in_producer_grid(consumer.grid_shape, producer.grid_shape)

    def _verify_in_producer_grid(
        self, consumer_grid: tuple[int, ...], producer_grid: tuple[int, ...]
    ) -> None:
        tiles_map = self.tiles_map
        dim_box = [(0, extent) for extent in consumer_grid]
        box = dim_box + self.ranges
        closed_dims = [(0, extent - 1) for extent in consumer_grid]
        closed_syms = [(lo, hi - 1) for lo, hi in self.ranges]
        for result, (expr, extent) in enumerate(zip(tiles_map.results, producer_grid)):
            low, high = _interval(expr, closed_dims, closed_syms)
            if 0 <= low and high < extent:
                continue
            witness = self._find_out_of_grid_point(expr, extent, box, closed_dims, closed_syms)
            if witness is None:
                if box_size(box) <= ENUMERATION_LIMIT or _linear_form(expr) is not None:
                    continue  # the enumeration (or exact interval) found nothing outside
                raise VerifyException(
                    f"{self.name}: cannot prove producer coordinate {result} "
                    f"({format_affine_expr(expr)}) within [0, {extent}): its range is "
                    f"[{low}, {high}] and the box has {box_size(box)} points, too many to "
                    f"enumerate"
                )
            dims, syms = witness[: tiles_map.num_dims], witness[tiles_map.num_dims :]
            producer_tile = tiles_map.eval(dims, syms)
            foralls = ", ".join(f"s{i} = {v}" for i, v in enumerate(syms))
            raise VerifyException(
                f"{self.name}: consumer tile {tuple(dims)} of {self.consumer}"
                + (f" with {foralls}" if foralls else "")
                + f" reads producer tile {tuple(producer_tile)} outside the grid "
                f"{producer_grid} of {self.producer}"
            )

    def _find_out_of_grid_point(
        self,
        expr: AffineExpr,
        extent: int,
        box: list[tuple[int, int]],
        closed_dims: list[tuple[int, int]],
        closed_syms: list[tuple[int, int]],
    ) -> tuple[int, ...] | None:
        """A point of the box (dims then symbols) where `expr` leaves [0, extent), if any."""
        linear = _linear_form(expr)
        num_dims = self.tiles_map.num_dims
        if linear is not None:
            # Exact: a linear form reaches its minimum and maximum at corners of the box.
            closed = closed_dims + closed_syms
            coefficients = [0] * len(closed)
            for atom, coefficient in linear[0].items():
                offset = 0 if isinstance(atom, AffineDimExpr) else num_dims
                coefficients[offset + atom.position] += coefficient  # type: ignore[union-attr]
            lowest = tuple(lo if c >= 0 else hi for c, (lo, hi) in zip(coefficients, closed))
            highest = tuple(hi if c >= 0 else lo for c, (lo, hi) in zip(coefficients, closed))
            for corner in (lowest, highest):
                value = expr.eval(corner[:num_dims], corner[num_dims:])
                if not 0 <= value < extent:
                    return corner
            return None
        if box_size(box) > ENUMERATION_LIMIT:
            return None
        for point in box_points(box):
            value = expr.eval(point[:num_dims], point[num_dims:])
            if not 0 <= value < extent:
                return point
        return None

    @classmethod
    def parse(cls, parser: Parser) -> DependencyOp:
        producer = parser.parse_symbol_name()
        parser.parse_punctuation("->")
        consumer = parser.parse_symbol_name()
        parser.parse_keyword("operand")
        operand = parser.parse_integer(allow_boolean=False, allow_negative=False)
        parser.parse_keyword("tiles")
        tiles_map = parser.parse_affine_map()
        ranges: list[tuple[int, int]] = []
        if parser.parse_optional_keyword("forall") is not None:

            def parse_bound() -> int:
                start = parser.pos
                bound = parser.parse_integer(allow_boolean=False)
                if not -(2**63) <= bound < 2**63:
                    parser.raise_error(f"forall bound {bound} does not fit in i64", start,
                                       parser.pos)
                return bound

            def parse_range() -> tuple[int, int]:
                symbol = parser.parse_identifier("forall variable (s0, s1, ...)")
                if symbol != f"s{len(ranges)}":
                    parser.raise_error(
                        f"forall ranges are given in symbol order: expected s{len(ranges)}, "
                        f"got {symbol}"
                    )
                parser.parse_keyword("in")
                parser.parse_punctuation("[")
                lo = parse_bound()
                parser.parse_punctuation(",")
                hi = parse_bound()
                parser.parse_punctuation(")")
                ranges.append((lo, hi))
                return lo, hi

            parser.parse_comma_separated_list(parser.Delimiter.NONE, parse_range)
        clipped = parser.parse_optional_keyword("clipped") is not None
        attributes = parser.parse_optional_attr_dict()
        op = cls(SymbolRefAttr(producer), SymbolRefAttr(consumer), operand, tiles_map, ranges,
                 clipped)
        op.attributes |= attributes
        return op

    def print(self, printer: Printer) -> None:
        printer.print_string(
            f" @{self.producer.root_reference.data} -> @{self.consumer.root_reference.data}"
            f" operand {self.operand.data} tiles {format_affine_map(self.tiles_map)}"
        )
        if self.ranges:
            printer.print_string(
                " forall "
                + ", ".join(f"s{i} in [{lo}, {hi})" for i, (lo, hi) in enumerate(self.ranges))
            )
        if self.clipped is not None:
            printer.print_string(" clipped")
        printer.print_op_attributes(self.attributes)


@irdl_op_definition
class LaunchOp(IRDLOperation):
    """`sync.launch @stage {stream = 0 : i64, priority = 0 : i64, pdl = false, fused = false}`:
    launch a stage's kernel on a stream, in program order. `pdl` launches it as a programmatic
    dependent of the previous launch on its stream; `priority` is the CUDA stream priority.

    `fused` (cuSync in one launch): the stage's blocks join the launch right before it on its
    stream in one grid, whose blocks take tickets from one atomic counter in dispatch order,
    that launch's stages' tiles first. A block holding a ticket of this stage thus knows every
    tile of the stages before it in the launch was taken by a block already running. The
    launch a fused one joins keeps its stream, priority and pdl; a fused launch has none of
    its own (`stage_graph.one_launch_groups`)."""

    name = "sync.launch"

    stage = prop_def(FlatSymbolRefAttrConstr)
    stream = prop_def(IntegerAttr[I64], default_value=IntegerAttr(0, i64))
    priority = prop_def(IntegerAttr[I64], default_value=IntegerAttr(0, i64))
    pdl = prop_def(BoolAttr, default_value=BoolAttr.from_bool(False))
    fused = prop_def(BoolAttr, default_value=BoolAttr.from_bool(False))

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$stage attr-dict"

    def __init__(self, stage: str, stream: int = 0, priority: int = 0, pdl: bool = False,
                 fused: bool = False):
        super().__init__(
            properties={
                "stage": SymbolRefAttr(stage),
                "stream": IntegerAttr(stream, i64),
                "priority": IntegerAttr(priority, i64),
                "pdl": BoolAttr.from_bool(pdl),
                "fused": BoolAttr.from_bool(fused),
            }
        )

    def verify_(self) -> None:
        if self.stream.value.data < 0:
            raise VerifyException(f"{self.name}: stream must be >= 0")
        _lookup_stage(self, self.stage, "stage")
        if self.fused.value.data:
            self._verify_fused()
        # A stage's semaphores count one launch's posts per epoch: a second launch in the
        # same run would post again into the epoch its waits compare against.
        earlier = self.prev_op
        while earlier is not None:
            if isinstance(earlier, LaunchOp) and earlier.stage == self.stage:
                raise VerifyException(f"{self.name}: {self.stage} is launched twice; a "
                                      f"program launches each stage once a run")
            earlier = earlier.prev_op

    def _verify_fused(self) -> None:
        stream = self.stream.value.data
        if self.pdl.value.data:
            raise VerifyException(f"{self.name}: a fused launch joins the launch before it "
                                  f"and has no pdl of its own")
        if self.priority.value.data != 0:
            raise VerifyException(f"{self.name}: a fused launch joins the launch before it "
                                  f"and has no priority of its own")
        earlier = self.prev_op
        while earlier is not None:
            if isinstance(earlier, WaitKernelOp) and earlier.stream.value.data == stream:
                raise VerifyException(
                    f"{self.name}: fused, but a sync.wait_kernel precedes it on stream "
                    f"{stream}: a fused launch joins the launch right before it")
            if isinstance(earlier, LaunchOp) and earlier.stream.value.data == stream:
                return
            earlier = earlier.prev_op
        raise VerifyException(f"{self.name}: fused, but no launch precedes it on stream "
                              f"{stream} to join")


@irdl_op_definition
class WaitKernelOp(IRDLOperation):
    """`sync.wait_kernel @producer {stream = 1 : i64}`: cuSync's wait-kernel, one thread
    spinning until every block of the producer stage has started, launched on the consumer's
    stream just before the consumer so consumer blocks cannot take SMs ahead of producers."""

    name = "sync.wait_kernel"

    producer = prop_def(FlatSymbolRefAttrConstr)
    stream = prop_def(IntegerAttr[I64], default_value=IntegerAttr(0, i64))

    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$producer attr-dict"

    def __init__(self, producer: str, stream: int = 0):
        super().__init__(
            properties={"producer": SymbolRefAttr(producer), "stream": IntegerAttr(stream, i64)}
        )

    def verify_(self) -> None:
        if self.stream.value.data < 0:
            raise VerifyException(f"{self.name}: stream must be >= 0")
        _lookup_stage(self, self.producer, "producer")


Sync = Dialect(
    "sync",
    [
        StageOp,
        DependencyOp,
        LaunchOp,
        WaitKernelOp,
        TileOp,
        WaitOp,
        ProbeOp,
        PostOp,
        LoadPointOp,
        StorePointOp,
    ],
    [PolicyAttr, OrderAttr],
)

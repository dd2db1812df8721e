"""What the cuSync passes derive from `sync.dependency` ops: who reads which producer tiles,
how a producer's tiles may share semaphores, and which forall variables a wait must loop over.

Everything here is exact enumeration over finite boxes (consumer grid × forall ranges), with
`ENUMERATION_LIMIT` points at most; above it the callers fall back to a structural (symbolic)
argument that is sound but coarser.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from xdsl.ir.affine import AffineExpr, AffineSymExpr

from tilesync.analysis.grid import Tile, grid_tiles
from tilesync.analysis.stage_graph import StageGraph
from tilesync.dialects import sync
from tilesync.dialects.sync import (
    ENUMERATION_LIMIT,
    PolicyAttr,
    Reader,
    box_points,
    box_size,
    map_evaluator,
)


def dependency_points(dep: sync.DependencyOp, consumer_grid: Sequence[int]) -> int:
    """Points (consumer tile, forall values) of a dependency."""
    return math.prod(consumer_grid) * box_size(dep.ranges)


def forall_points(dep: sync.DependencyOp, fixed: dict[int, int] | None = None) -> Iterator[Tile]:
    """The forall box of `dep`, with the symbols in `fixed` held at the given values."""
    ranges = [
        (fixed[i], fixed[i] + 1) if fixed and i in fixed else r for i, r in enumerate(dep.ranges)
    ]
    return box_points(ranges)


def tiles_read(
    dep: sync.DependencyOp, consumer_tile: Tile, fixed: dict[int, int] | None = None
) -> list[Tile]:
    """Producer tiles `consumer_tile` reads through `dep` (s_i held at fixed[i]), no repeats."""
    seen: dict[Tile, None] = {}
    read = dep.reader()
    for syms in forall_points(dep, fixed):
        tile = read(consumer_tile, syms)
        if tile is not None:  # a clipped dependency reads nothing outside the grid
            seen.setdefault(tile, None)
    return list(seen)


# --- policy generation ------------------------------------------------------------------------

GROUPING_PREFERENCE = {"distinct": 0, "shared": 1, "floordiv": 2, "mod": 3}


def _candidates(extent: int) -> list[tuple[str, int]]:
    """Every grouping of one dimension that PolicyAttr can express, coarsest first."""
    if extent == 1:
        return [("distinct", 1)]
    found: list[tuple[int, str, int]] = [(1, "shared", 1), (extent, "distinct", 1)]
    for m in range(2, extent):
        if extent % m == 0:
            found.append((m, "mod", m))  # m classes
            found.append((extent // m, "floordiv", m))  # extent / m classes
    found.sort(key=lambda c: (c[0], GROUPING_PREFERENCE[c[1]]))
    return [(kind, m) for _, kind, m in found]


def _class_of(kind: str, m: int, value: int) -> int:
    if kind == "distinct":
        return value
    if kind == "shared":
        return 0
    return value % m if kind == "mod" else value // m


def _refines(kind: str, m: int, reader_sets: Sequence[frozenset]) -> bool:
    """True when every class of the grouping holds coordinates with one same set of readers."""
    first: dict[int, frozenset] = {}
    for value, readers in enumerate(reader_sets):
        cls = _class_of(kind, m, value)
        if first.setdefault(cls, readers) != readers:
            return False
    return True


def _structural_groupings(
    grid: Sequence[int], deps: Sequence[sync.DependencyOp]
) -> list[tuple[str, int]]:
    """Above the enumeration limit: dimension j is shared when, in every dependency, producer
    coordinate j is a lone forall variable ranging over the whole dimension and used by no
    other coordinate (the consumer then reads every tile along j); otherwise distinct."""
    groupings: list[tuple[str, int]] = []
    for j, extent in enumerate(grid):
        shared = extent > 1
        for dep in deps:
            results = dep.tiles_map.results
            expr = results[j]
            if not isinstance(expr, AffineSymExpr) or dep.ranges[expr.position] != (0, extent):
                shared = False
                break
            if any(expr in _symbols(other) for k, other in enumerate(results) if k != j):
                shared = False
                break
        groupings.append(("shared", 1) if shared else ("distinct", 1))
    return groupings


def _symbols(expr: AffineExpr) -> set[AffineExpr]:
    found: set[AffineExpr] = set()

    def visit(e: AffineExpr) -> None:
        if isinstance(e, AffineSymExpr):
            found.add(e)
        for attr in ("lhs", "rhs"):
            child = getattr(e, attr, None)
            if child is not None:
                visit(child)

    visit(expr)
    return found


def generate_groupings(
    producer: sync.StageOp, deps: Sequence[sync.DependencyOp], graph: StageGraph
) -> tuple[list[tuple[str, int]], bool]:
    """Per dimension of the producer grid, the coarsest grouping of its coordinates onto
    semaphores such that a consumer tile that reads any tile of a group reads all of them
    (so no wait ever waits for a tile it does not read), over all outgoing dependencies at
    once (where they disagree, the finer grouping wins). Returns (groupings, enumerated)."""
    grid = producer.grid_shape
    points = sum(dependency_points(d, graph.consumer_of(d).grid_shape) for d in deps)
    # The reader sets below hold one entry per coordinate of every producer dimension.
    if points > ENUMERATION_LIMIT or sum(grid) > ENUMERATION_LIMIT:
        return _structural_groupings(grid, deps), False
    # readers[j][a] = {(reader, the other coordinates of the tile read)}: who reads a tile with
    # coordinate j = a. A reader is one block of one consumer loading one operand.
    readers: list[list[set]] = [[set() for _ in range(extent)] for extent in grid]
    for dep in deps:
        reader_id = (dep.consumer.root_reference.data, dep.operand.data)
        for consumer_tile in grid_tiles(graph.consumer_of(dep).grid_shape):
            for tile in tiles_read(dep, consumer_tile):
                for j, value in enumerate(tile):
                    readers[j][value].add((reader_id, consumer_tile, tile[:j] + tile[j + 1 :]))
    groupings: list[tuple[str, int]] = []
    for j, extent in enumerate(grid):
        sets = [frozenset(s) for s in readers[j]]
        for kind, m in _candidates(extent):
            if _refines(kind, m, sets):
                groupings.append((kind, m))
                break
    return groupings, True


def generate_policy(
    producer: sync.StageOp, deps: Sequence[sync.DependencyOp], graph: StageGraph
) -> PolicyAttr:
    groupings, _ = generate_groupings(producer, deps, graph)
    return sync.grouped_policy(producer.grid_shape, groupings)


# --- waits -----------------------------------------------------------------------------------


def semaphore_reader(policy: PolicyAttr, read: Reader) -> Callable[[Tile, Tile], int | None]:
    """(consumer tile, forall values) -> the semaphore of the producer tile `read` (a
    dependency's `reader()`) gives there (None: clipped, nothing read); the policy's evaluator
    looked up once, for the loops over every consumer tile and forall point."""
    index = map_evaluator(policy.sem_map.data)

    def semaphore(tile: Tile, syms: Tile) -> int | None:
        produced = read(tile, syms)
        return None if produced is None else index(produced)[0]

    return semaphore


@dataclass(frozen=True)
class WaitLoop:
    """How a wait covers forall variable s_i: not at all (the semaphore does not depend on
    it: `invariant`), or by a loop over its range with step `step` (each step of the loop
    reaches a new semaphore, the skipped values share the semaphore of the value before)."""

    symbol: int
    lo: int
    hi: int
    step: int
    invariant: bool


def wait_loops(
    policy: PolicyAttr,
    dep: sync.DependencyOp,
    consumer_grid: Sequence[int],
    bound: set[int] = frozenset(),  # type: ignore[assignment]
) -> list[WaitLoop]:
    """For each forall variable not in `bound` (a variable given by the kernel, the k-step),
    whether the waits must loop over it, and with what step, so that every semaphore a
    consumer tile needs is waited once (verified by enumeration; above the limit, every
    value of every variable is waited: sound, perhaps redundant)."""
    loops: list[WaitLoop] = []
    small = dependency_points(dep, consumer_grid) <= ENUMERATION_LIMIT
    for i, (lo, hi) in enumerate(dep.ranges):
        if i in bound:
            continue
        if not small:
            loops.append(WaitLoop(i, lo, hi, 1, False))
            continue
        if _periodic(policy, dep, consumer_grid, i, hi - lo):
            loops.append(WaitLoop(i, lo, hi, hi - lo, True))
            continue
        step = 1
        for m in range(hi - lo - 1, 1, -1):
            if (hi - lo) % m == 0 and _periodic(policy, dep, consumer_grid, i, m):
                step = m
                break
        loops.append(WaitLoop(i, lo, hi, step, False))
    return loops


@dataclass(frozen=True)
class WaitSteps:
    """The k-steps at which a consumer tile waits through one dependency: s0 = lo + m * period
    below lo + first. Every semaphore a tile reads at any step is read for the first time at
    one of them, so the loads of every other step are covered by waits already done."""

    first: int
    period: int = 1


def steps_to_wait(policy: PolicyAttr, dep: sync.DependencyOp,
                  consumer_grid: Sequence[int]) -> WaitSteps:
    """Which of a consumer tile's k-steps (s0 = lo, lo + 1, ...) need waits.

    `first`: every semaphore a tile reads at any step is read at one of its first steps: 1
    where the tiles read do not depend on s0 (a conv chain whose producer has one column of
    tiles), the period where they cycle (two columns: the k-steps alternate between them), the
    whole range otherwise, and also where the box is too large to enumerate. `period`: the
    greatest common divisor of the steps (from lo) at which some tile reads a semaphore for
    the first time: where a producer tile spans several k-steps (an MLP's GEMM2 reads one
    256-wide H tile over four 64-wide k-steps; attention's P · v one QKV tile row over four),
    the steps in between wait for nothing new, and each wait stalls the block on a load of
    the semaphore."""
    lo, hi = dep.ranges[0]
    if not any(AffineSymExpr(0) in _symbols(e) for e in dep.tiles_map.results):
        return WaitSteps(1)
    if dependency_points(dep, consumer_grid) > ENUMERATION_LIMIT:
        return WaitSteps(hi - lo)
    needed = 1
    period = 0  # gcd of the offsets of first reads so far (0: none past the first step)
    semaphore = semaphore_reader(policy, dep.reader())
    for tile in grid_tiles(consumer_grid):
        per_step = [{semaphore(tile, syms)
                     for syms in forall_points(dep, {0: s0})} - {None} for s0 in range(lo, hi)]
        every = set().union(*per_step)
        seen: set[int | None] = set()
        for offset, sems in enumerate(per_step):
            if sems - seen:
                period = math.gcd(period, offset)
                seen |= sems
            if len(seen) == len(every):
                needed = max(needed, offset + 1)
                break
        if needed == hi - lo and period == 1:
            break
    return WaitSteps(needed, max(period, 1))


def _periodic(
    policy: PolicyAttr, dep: sync.DependencyOp, consumer_grid: Sequence[int], i: int, m: int
) -> bool:
    """sem(..., s_i, ...) == sem(..., lo_i + m * ((s_i - lo_i) // m), ...) everywhere."""
    lo = dep.ranges[i][0]
    semaphore = semaphore_reader(policy, dep.reader())
    for tile in grid_tiles(consumer_grid):
        for syms in forall_points(dep):
            rep = list(syms)
            rep[i] = lo + m * ((syms[i] - lo) // m)
            if rep[i] == syms[i]:
                continue
            if semaphore(tile, syms) != semaphore(tile, rep):
                return False
    return True

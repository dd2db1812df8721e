"""sync-verify against the simulator on random stage programs: what verify proves must never
deadlock or read early, under adversarial and random block schedulers.

    python -m tilesync.tools.differential --programs 1000000 --jobs 2     # the nightly-sized run
    python -m tilesync.tools.differential --programs 200 --show-failures  # print failing programs

A program (`draw_program`) has 2–5 stages with random 1-D or 2-D grids, tiles, blocks per SM
and output layouts (the grid's rank, flattened to 1-D, or placed by an `output_map`: its
dimensions permuted and offset in a larger buffer; now and then the whole program batched, a
last grid dimension every dependency maps to the same or the next batch), random dependencies
between them
(a producer coordinate follows a consumer coordinate, is a `forall` over the whole dimension,
a constant, or a clipped 3-row halo; or, for a share of the coordinates, one of the richer
forms of real programs and cuSync's policies: `d * Q + s` (a consumer row over Q producer
rows), `d floordiv Q` (consumer tiles sharing a producer tile), `s floordiv R` (R k-steps per
producer tile), `(s * a + t * (a - 1)) floordiv b` (a k-step straddling two producer tiles),
strided `s * k + c` with c constant or `d mod k`, `mod` rotations and wrap-arounds, a forall
over part of a dimension, halos with a forall from -1 or over Q rows, several forall
variables in one map; now and then a back edge makes a cycle), and a random host
plan: launch order, streams, priorities, `pdl`, launches fused into the one before them on their
stream (one launch), hand-placed `sync.wait_kernel` ops, `coresident`
declarations (false ones only where the counts let verify see through them), `blocks_per_sm`
on the stages and the SM count given to verify or not. Each stage's kernel is real: per
produced operand a `scf.for` over the first forall variable with a `sync.load_point ... step`
and, for every point of the other forall variables (unrolled), a load of the producer tile's
elements (sometimes also of a tile the dependency does not declare: the reference cuSync's
halo bug; or, now and then, the tile declared for the next step: an off-by-one between the
wait and the read that only verify's per-step coverage refuses), guarded by an `scf.if` where a
clipped tile may fall outside the producer grid (`0 <= c < grid`, or `c != -1 and c != grid`;
or, unguarded, the tile at c clamped into the grid by selects: a read verify must place at the
edge tile, often one the step's wait does not cover); then a store of its own tile and a
`sync.store_point`. The program
then goes through the real passes (policies, maybe a named policy or a derived tile order,
post/wait insertion, then a random choice of sync-insert-wait-kernel, sync-use-pdl,
sync-one-launch and sync-drop-wait-kernel) and sync-verify. Where it proves the program, the
placed and batched producers' layouts are held against the generator's own store indices
(which tile writes which element: a truth neither verify nor the simulator computes, since
both map elements to tiles through the same layouts), then the simulator runs it.

Whatever verify proves is run by `analysis.simulator` on the true machine (its SM count and
every stage's blocks per SM, whether verify knew them or not), each block following its
compiled kernel: the waits it performs and then the tiles its loads read, step by step (where
a kernel cannot be followed, the stage reads its declared tiles and undeclared reads are added
as unguarded ones; the run reports how often), under the adversarial scheduler and random
ones, and must
finish with every read after its write and every semaphore at its count. A proved program with
a wait-kernel that cannot work (its producer does not post the start flag, or the wait-kernel
function is missing) fails too: on a GPU that wait never ends. So does a program on which a
pass crashes (an exception other than a `TilesyncError`): bad input must be refused with a
located diagnostic; the run goes on and reports the crash with its seed.
"""

from __future__ import annotations

import argparse
import functools
import math
import random
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from tilesync.tools.errors import non_negative_int, positive_int

# ---------------------------------------------------------------------------------------------
# Random programs
# ---------------------------------------------------------------------------------------------


class Draw(Protocol):
    """Where the random choices come from: `random.Random` or hypothesis."""

    def integer(self, lo: int, hi: int) -> int:
        """An integer in [lo, hi]."""
        ...


class RandomDraw:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)


def _chance(draw: Draw, percent: int) -> bool:
    return draw.integer(0, 99) < percent


GUARDS = ("if", "if", "ne", "clamp")
"""How a clipped read is kept inside the producer grid (Dependency.guard), half as `if`."""


def _pick(draw: Draw, options: Sequence):
    return options[draw.integer(0, len(options) - 1)]


@dataclass
class Stage:
    name: str
    grid: tuple[int, ...]
    tile: tuple[int, ...]
    blocks_per_sm: int  # the truth, for the simulator
    annotated: bool  # verify sees blocks_per_sm
    flat: bool  # its output is a rank-1 memref (row-major)
    coresident: bool = False
    # per buffer dimension (tile-array dimension, offset): the stage's output_map, if any
    placement: tuple[tuple[int, int], ...] = ()

    @property
    def extents(self) -> tuple[int, ...]:
        return tuple(g * t for g, t in zip(self.grid, self.tile))

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of its output buffer."""
        if self.flat:
            return (math.prod(self.extents),)
        if self.placement:
            return tuple(self.extents[dim] + offset for dim, offset in self.placement)
        return self.extents


@dataclass
class Dependency:
    producer: str
    consumer: str
    operand: int
    results: list[str]  # affine expression of each producer coordinate (d_i, s_i)
    ranges: list[tuple[int, int]]  # the half-open forall range of each symbol s_i
    clipped: bool
    extra: bool  # the kernel also reads a tile the dependency does not declare
    # the kernel's loads at step s0 read the tiles declared for the next step (the last step
    # the first's): an off-by-one between the wait and the read that only a per-step coverage
    # check refuses
    read_ahead: bool = False
    # how a clipped read that may leave the producer grid is kept inside it: "if" guards the
    # load by `0 <= c < grid`, "ne" by `c != -1 and c != grid` (the same where c never steps
    # further out), "clamp" reads the tile at `c` clamped into the grid by selects instead
    guard: str = "if"


@dataclass
class Program:
    sms: int
    verify_sms: int  # 0: verify is not told
    stages: list[Stage]
    deps: list[Dependency]
    # ("launch", stage, stream, priority, pdl, fused) | ("wait", producer, stream)
    plan: list[tuple]
    passes: list[str] = field(default_factory=list)

    def stage(self, name: str) -> Stage:
        return next(s for s in self.stages if s.name == name)


# How often a producer coordinate takes one of the richer map forms of `_rich_result`; the
# rest keep the original forms in their original proportions.
RICH_PERCENT = 30
# How often a dependency with a k-loop of two or more steps reads one step ahead of its waits
READ_AHEAD_PERCENT = 4
# How often a stage of a 2-D grid places its output with an output_map
PLACED_PERCENT = 15
# How often a whole program is batched: every grid gains a last dimension (the batch) that
# every dependency maps to the same batch or the next one
BATCHED_PERCENT = 10
# Points of one dependency's forall box at most: verify and the passes enumerate it per
# consumer tile, and the kernel unrolls every variable but s0.
FORALL_POINTS = 48


class _Symbols:
    """The forall variables of one dependency map as they are drawn: s0, s1, ..."""

    def __init__(self) -> None:
        self.ranges: list[tuple[int, int]] = []

    def room(self) -> int:
        """How many points a new variable may range over within FORALL_POINTS."""
        return FORALL_POINTS // math.prod(hi - lo for lo, hi in self.ranges)

    def new(self, lo: int, hi: int) -> str:
        self.ranges.append((lo, hi))
        return f"s{len(self.ranges) - 1}"


def _rich_result(draw: Draw, d: str, rows: int, extent: int,
                 symbols: _Symbols) -> tuple[str, bool] | None:
    """A producer coordinate in one of the forms real programs and cuSync's policies use, over
    consumer coordinate `d` (of `rows` values) into a producer dimension of `extent` tiles,
    never outside [0, extent) unless clipped; with whether it is clipped. None where no form
    fits the forall box left."""
    room = symbols.room()
    forms = ["share", "rotate"] if extent > 1 else ["share"]
    if room >= 3:
        forms += ["rows", "strided", "subrange", "wrap"]
    if room >= 2 * extent:
        forms.append("group")
    if room >= 4:
        forms += ["span", "halo_rows"]
    if room >= 3 and extent > 1:
        forms.append("halo_from_minus_one")
    form = _pick(draw, forms)
    if form == "share":  # several consumer tiles share one producer tile (d floordiv Q)
        q = draw.integer(2, 3)
        expr = f"{d} floordiv {q}"
        return (expr if (rows - 1) // q < extent else f"({expr}) mod {extent}"), False
    if form == "rotate":
        return f"({d} + {draw.integer(1, extent - 1)}) mod {extent}", False
    if form == "rows":  # a consumer row over Q producer rows: d * Q + s, s in [0, Q)
        q = draw.integer(2, 3)
        expr = f"{d} * {q} + {symbols.new(0, q)}"
        return (expr if rows * q <= extent else f"({expr}) mod {extent}"), False
    if form == "group":  # a k-loop step reads s floordiv R: R steps per producer tile
        r = draw.integer(2, min(3, room // extent))
        return f"{symbols.new(0, extent * r)} floordiv {r}", False
    if form == "span":
        # a k-step of a columns from column s * a, over producer tiles of b columns: its first
        # (t = 0) and last (t = 1) column may lie in two tiles, as the MLP on TMA kernels reads
        b = draw.integer(2, 4)
        a = draw.integer(2, 2 * b)
        steps = extent * b // a  # the last step's last column (steps * a - 1) stays inside
        if steps == 0 or 2 * steps > room:
            return None
        s, t = symbols.new(0, steps), symbols.new(0, 2)
        return f"({s} * {a} + {t} * {a - 1}) floordiv {b}", False
    if form == "strided":  # StridedSync: tiles a stride k apart from an offset c
        k = draw.integer(2, 3)
        if extent >= k and _chance(draw, 50):  # the offset from the consumer (a head)
            offset, count = f"{d} mod {k}", extent // k
        else:
            c = draw.integer(0, min(k, extent) - 1)
            offset, count = str(c), (extent - c + k - 1) // k
        return f"{symbols.new(0, min(count, room))} * {k} + {offset}", False
    if form == "subrange":  # a forall over part of the dimension
        lo = draw.integer(0, extent - 1)
        hi = draw.integer(lo + 1, min(extent, lo + room))
        return symbols.new(lo, hi), False
    if form == "wrap":  # a forall past the dimension, folded back into it
        return f"{symbols.new(0, min(extent + draw.integer(1, extent), room))} mod {extent}", \
            False
    base = d if rows <= extent else f"{d} mod {extent}"
    if form == "halo_from_minus_one":  # the 3-row halo with its forall from -1
        return f"{base} + {symbols.new(-1, 2)}", True
    # Conv2DTileSync: a consumer row over Q producer rows and one halo row either side
    q = draw.integer(1, min(2, room - 2))
    return f"{d} * {q} + {symbols.new(0, q + 2)} - 1", True


def _producer_results(draw: Draw, consumer: Stage, producer: Stage
                      ) -> tuple[list[str], list[tuple[int, int]], bool]:
    """One expression per producer coordinate, the forall ranges, and whether clipped."""
    results: list[str] = []
    symbols = _Symbols()
    clipped = False
    for extent in producer.grid:
        d = f"d{draw.integer(0, len(consumer.grid) - 1)}"
        k = int(d[1:])
        if _chance(draw, RICH_PERCENT):
            rich = _rich_result(draw, d, consumer.grid[k], extent, symbols)
            if rich is not None:
                results.append(rich[0])
                clipped |= rich[1]
                continue
        kinds = ["coord", "coord", "const"]
        if not symbols.ranges:
            kinds += ["all", "all"]
            if len(consumer.grid) > 0 and extent > 1:
                kinds.append("halo")
        kind = _pick(draw, kinds)
        if kind == "coord":
            results.append(d if consumer.grid[k] <= extent else f"{d} mod {extent}")
        elif kind == "const":
            results.append(str(draw.integer(0, extent - 1)))
        elif kind == "all":
            results.append(symbols.new(0, extent))
        else:
            clipped = True
            base = d if consumer.grid[k] <= extent else f"{d} mod {extent}"
            results.append(f"{base} + {symbols.new(0, 3)} - 1")
    return results, symbols.ranges, clipped


def draw_program(draw: Draw) -> Program:
    sms = _pick(draw, [1, 2, 3, 4, 8, 16])
    # a third of the programs lean on occupancy: every count known to verify, few wait-kernels
    # and PDL edges, so co-residency and the wave model decide (or W drops what they allow)
    occupancy = _chance(draw, 33)
    count = draw.integer(2, 5)
    stages = []
    for i in range(count):
        rank = draw.integer(1, 2)
        grid = tuple(draw.integer(1, 4) for _ in range(rank))
        flat = rank == 2 and _chance(draw, 30)
        tile = (1, draw.integer(1, 4)) if flat else tuple(draw.integer(1, 3) for _ in grid)
        stages.append(Stage(f"s{i}", grid, tile, draw.integer(1, 3),
                            occupancy or _chance(draw, 90), flat))

    deps: list[Dependency] = []
    operands: Counter[str] = Counter()
    for c in range(1, count):
        for p in range(c):
            if not _chance(draw, 45 if p == c - 1 else 20):
                continue
            results, ranges, clipped = _producer_results(draw, stages[c], stages[p])
            extra = not clipped and stages[p].grid[0] > 1 and _chance(draw, 10)
            ahead = bool(ranges) and ranges[0][1] - ranges[0][0] > 1 and \
                _chance(draw, READ_AHEAD_PERCENT)
            guard = _pick(draw, GUARDS) if clipped else "if"
            deps.append(Dependency(stages[p].name, stages[c].name, operands[stages[c].name],
                                   results, ranges, clipped, extra, ahead, guard))
            operands[stages[c].name] += 1
    if deps and _chance(draw, 4):  # a back edge: a cycle
        a, b = deps[draw.integer(0, len(deps) - 1)].producer, deps[0].consumer
        later, earlier = (a, b) if a > b else (b, a)
        if later != earlier:
            results, ranges, clipped = _producer_results(
                draw, next(s for s in stages if s.name == earlier),
                next(s for s in stages if s.name == later))
            deps.append(Dependency(later, earlier, operands[earlier], results, ranges, clipped,
                                   False))
            operands[earlier] += 1
    order = [s.name for s in stages]
    if _chance(draw, 20):  # a launch order that may put a consumer first
        for i in range(len(order) - 1, 0, -1):
            j = draw.integer(0, i)
            order[i], order[j] = order[j], order[i]
    plan: list[tuple] = []
    producers = {d.consumer: [] for d in deps}
    for d in deps:
        producers[d.consumer].append(d.producer)
    for name in order:
        stream = draw.integer(0, 2)
        for producer in producers.get(name, []):
            if _chance(draw, 10 if occupancy else 25):
                plan.append(("wait", producer, stream))
        previous = next((step for step in reversed(plan) if step[2] == stream), None)
        if previous is not None and previous[0] == "launch" and _chance(draw, 15):
            plan.append(("launch", name, stream, 0, False, True))  # one launch with previous
            continue
        plan.append(("launch", name, stream, -draw.integer(0, 1),
                     _chance(draw, 10 if occupancy else 30), False))
    verify_sms = sms if occupancy or _chance(draw, 80) else 0
    known = verify_sms > 0 and all(s.annotated for s in stages)
    fits = _all_resident([(math.prod(s.grid), s.blocks_per_sm) for s in stages], sms)
    for s in stages:  # a false declaration only where verify can count
        if _chance(draw, 15) and (fits or known):
            s.coresident = True
    passes = ["sync-generate-policies"]
    if _chance(draw, 20):
        passes.append(f"sync-select-policy{{policy={_pick(draw, ['tile', 'row'])}}}")
    if _chance(draw, 20):
        passes.append(f"sync-tile-order{{order={_pick(draw, ['generated', 'ready'])}}}")
    passes.append("sync-insert-post-wait")
    drop = f"sync-drop-wait-kernel{{sms={sms}}}"
    mechanisms = [drop, "sync-one-launch"] if occupancy else [
        "sync-insert-wait-kernel", "sync-use-pdl", "sync-one-launch", drop]
    for _ in range(draw.integer(0, 2)):
        passes.append(_pick(draw, mechanisms))
    passes.append(f"sync-verify{{sms={verify_sms}}}")
    # drawn last, so that a seed draws the program it drew before layouts could be placed or
    # programs batched
    for stage in stages:
        if len(stage.grid) == 2 and not stage.flat and _chance(draw, PLACED_PERCENT):
            dims = (1, 0) if _chance(draw, 50) else (0, 1)
            stage.placement = tuple((dim, draw.integer(0, 3)) for dim in dims)
    if _chance(draw, BATCHED_PERCENT):
        _batch(draw, stages, deps)
        # a declaration true of the grids before may not be of the batched ones: keep it only
        # where it still holds or verify can count
        if not (known or _all_resident([(math.prod(s.grid), s.blocks_per_sm) for s in stages],
                                       sms)):
            for s in stages:
                s.coresident = False
    return Program(sms, verify_sms, stages, deps, plan, passes)


def _batch(draw: Draw, stages: list[Stage], deps: list[Dependency]) -> None:
    """Give every stage a last grid dimension of B tiles of one element (a batch; the [B, M, N]
    output of a batched GEMM where its output_map puts it first) and every dependency the
    consumer's batch, or the next one."""
    batch = draw.integer(2, 3)
    rotate = _chance(draw, 30)
    ranks = {stage.name: len(stage.grid) for stage in stages}
    for stage in stages:
        rank = ranks[stage.name]
        stage.grid, stage.tile = (*stage.grid, batch), (*stage.tile, 1)
        # a flat output would put the batch fastest (row-major over the grid's order): a
        # tile's elements B apart, which verify bounds by an interval and refuses
        stage.flat = False
        if stage.placement:
            stage.placement = ((rank, 0), *stage.placement)
        elif _chance(draw, 50):
            stage.placement = ((rank, 0), *((dim, 0) for dim in range(rank)))
    for dep in deps:
        d = f"d{ranks[dep.consumer]}"
        dep.results = [*dep.results, f"({d} + 1) mod {batch}" if rotate else d]


def _all_resident(kernels: list[tuple[int, int]], sms: int) -> bool:
    from tilesync.contract import all_resident

    return all_resident(kernels, sms)


# ---------------------------------------------------------------------------------------------
# As IR (built with the dialects' constructors: parsing text would cost more than the rest)
# ---------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=8192)
def _affine(text: str, dims: int, symbols: int):
    """The AffineExpr of `text` (d_i, s_i, +, -, *, mod, floordiv) over `dims` dims and
    `symbols` symbols."""
    from xdsl.ir.affine import AffineExpr

    names = {f"d{i}": AffineExpr.dimension(i) for i in range(dims)}
    names |= {f"s{i}": AffineExpr.symbol(i) for i in range(symbols)}
    python = text.replace(" mod ", " % ").replace(" floordiv ", " // ")
    value = eval(python, {"__builtins__": {}}, names)
    return AffineExpr.constant(value) if isinstance(value, int) else value


def _may_leave_grid(program: Program, dep: Dependency, read: list[str],
                    inner: tuple[int, ...]) -> list[int]:
    """The producer coordinates of `read` (a clipped dependency's tile, the variables after
    s0 at `inner`) that fall outside the producer grid for some consumer tile and s0."""
    if not dep.clipped:
        return []
    from xdsl.ir.affine import AffineMap

    from tilesync.analysis.grid import grid_tiles

    consumer, producer = program.stage(dep.consumer), program.stage(dep.producer)
    rank = len(consumer.grid)
    tiles_map = AffineMap(rank, len(dep.ranges),
                          tuple(_affine(r, rank, len(dep.ranges)) for r in read))
    outside: set[int] = set()
    for tile in grid_tiles(consumer.grid):
        for s0 in range(*dep.ranges[0]):
            point = tiles_map.eval(list(tile), [s0, *inner])
            outside |= {j for j, (c, extent) in enumerate(zip(point, producer.grid))
                        if not 0 <= c < extent}
    return sorted(outside)


def _index_exprs(stage: Stage, coords: list[str], lanes: list[str]) -> list[str]:
    """Element indices (affine expressions) of tile `coords` of `stage`'s output, lane offsets
    `lanes` within the tile; one per memref dimension."""
    per_dim = [f"({c}) * {t} + {lane}" for c, t, lane in zip(coords, stage.tile, lanes)]
    if stage.placement:
        return [f"{per_dim[dim]} + {offset}" for dim, offset in stage.placement]
    if not stage.flat:
        return per_dim
    extents = stage.extents
    strides = [math.prod(extents[j + 1:]) for j in range(len(extents))]
    return [" + ".join(f"({e}) * {s}" for e, s in zip(per_dim, strides))]


def _memref_type(stage: Stage):
    return _memref_of_shape(stage.shape)


# Attributes are immutable, so programs share them: building them again for every program
# (types, affine maps) took a good part of the time of a check.
@functools.lru_cache(maxsize=1024)
def _memref_of_shape(shape: tuple[int, ...]):
    from xdsl.dialects.builtin import MemRefType, f32

    return MemRefType(f32, list(shape))


@functools.lru_cache(maxsize=8192)
def _apply_map(text: str, dims: int, symbols: int):
    """The AffineMapAttr of an affine.apply computing `text`."""
    from xdsl.dialects.builtin import AffineMapAttr
    from xdsl.ir.affine import AffineMap

    return AffineMapAttr(AffineMap(dims, symbols, (_affine(text, dims, symbols),)))


class _IndexConstants:
    """The index constants of one kernel, each value made once, at the end of `ops` (the
    kernel's top level, so every later op of it may use them)."""

    def __init__(self, ops: list):
        self.ops = ops
        self.made: dict = {}

    def __call__(self, value: int):
        from xdsl.dialects import arith
        from xdsl.dialects.builtin import IndexType, IntegerAttr

        if value not in self.made:
            self.made[value] = arith.ConstantOp(IntegerAttr(value, IndexType()))
            self.ops.append(self.made[value])
        return self.made[value].result


def build_module(program: Program):
    """The program as a builtin.module: one gpu.func per stage, the stages, dependencies and
    the plan."""
    from xdsl.dialects import affine, arith, gpu, memref, scf
    from xdsl.dialects.builtin import (
        AffineMapAttr,
        FloatAttr,
        IndexType,
        IntegerAttr,
        ModuleOp,
        StringAttr,
        UnitAttr,
        f32,
        i64,
    )
    from xdsl.ir import Block, Region
    from xdsl.ir.affine import AffineExpr, AffineMap

    from tilesync.dialects import sync
    from tilesync.dialects.sync import box_points

    index = IndexType()

    def apply(ops: list, text: str, dims: list, symbols: list):
        op = affine.ApplyOp([*dims, *symbols], _apply_map(text, len(dims), len(symbols)))
        ops.append(op)
        return op.result

    incoming = {s.name: [d for d in program.deps if d.consumer == s.name]
                for s in program.stages}
    funcs = []
    for stage in program.stages:
        deps = incoming[stage.name]
        inputs = [_memref_type(program.stage(d.producer)) for d in deps]
        block = Block(arg_types=[*inputs, _memref_type(stage)])
        rank = len(stage.grid)
        ops: list = []
        tile = sync.TileOp(rank=rank)
        tid = gpu.ThreadIdOp(gpu.DimensionAttr(gpu.DimensionEnum.X))
        c0, c1 = arith.ConstantOp(IntegerAttr(0, index)), arith.ConstantOp(IntegerAttr(1, index))
        zero = arith.ConstantOp(FloatAttr(0.0, f32))
        ops += [tile, tid, c0, c1, zero]
        coords = list(tile.results)
        constant = _IndexConstants(ops)
        for d in deps:
            producer = program.stage(d.producer)
            source = block.args[d.operand]
            body_ops: list = []
            step = None
            if d.ranges:  # the first forall variable is the loop's step (a GEMM's k-step)
                lower, upper = constant(d.ranges[0][0]), constant(d.ranges[0][1])
                loop_block = Block(arg_types=[index])
                step = loop_block.args[0]
            body_ops.append(sync.LoadPointOp(d.operand, coords, step))
            loaded_step = step
            if d.read_ahead and step is not None:
                lo, hi = d.ranges[0]
                loaded_step = apply(body_ops, f"(s0 - {lo} + 1) mod {hi - lo} + {lo}", [], [step])
            tid_name = f"s{len(d.ranges)}"
            # The other forall variables are unrolled: one load per point, with the variables
            # as constants, so each load reads exactly the tile the map gives there.
            for inner in box_points(d.ranges[1:]):
                symbols = [*([loaded_step] if step else []), *map(constant, inner),
                           tid.result]
                reads = [d.results]
                if d.extra:  # a tile the dependency leaves out: the next one along d0
                    reads.append([f"({d.results[0]} + 1) mod {producer.grid[0]}",
                                  *d.results[1:]])
                for read in reads:
                    load_ops: list = []
                    exprs = _index_exprs(producer, read,
                                         [f"{tid_name} mod {t}" for t in producer.tile])
                    indices = [apply(load_ops, e, coords, symbols) for e in exprs]
                    load_ops.append(memref.LoadOp.get(source, indices))
                    outside = _may_leave_grid(program, d, read, inner)
                    if not outside:
                        body_ops += load_ops
                        continue
                    if d.guard == "clamp":  # the coordinates clamped into the grid
                        clamped = list(read)
                        extra_symbols = []
                        for j in outside:
                            value = apply(body_ops, read[j], coords, symbols)
                            for bound, edge, predicate in (
                                    (c0.result, c0.result, "sge"),
                                    (constant(producer.grid[j]),
                                     constant(producer.grid[j] - 1), "slt")):
                                test = arith.CmpiOp(value, bound, predicate)
                                pick = arith.SelectOp(test.result, value, edge)
                                body_ops += [test, pick]
                                value = pick.result
                            clamped[j] = f"s{len(symbols) + len(extra_symbols)}"
                            extra_symbols.append(value)
                        exprs = _index_exprs(producer, clamped,
                                             [f"{tid_name} mod {t}" for t in producer.tile])
                        body_ops += [memref.LoadOp.get(source, [
                            apply(body_ops, e, coords, [*symbols, *extra_symbols])
                            for e in exprs])]
                        continue
                    # a clipped tile outside the grid is not read (a convolution's zero
                    # padding): the load is guarded by the coordinates that may leave it
                    in_grid = None
                    for j in outside:
                        value = apply(body_ops, read[j], coords, symbols)
                        bounds = ((c0.result, "sge"), (constant(producer.grid[j]), "slt")) \
                            if d.guard == "if" else ((constant(-1), "ne"),
                                                     (constant(producer.grid[j]), "ne"))
                        for bound, predicate in bounds:
                            test = arith.CmpiOp(value, bound, predicate)
                            body_ops.append(test)
                            if in_grid is not None:
                                test = arith.AndIOp(in_grid, test)
                                body_ops.append(test)
                            in_grid = test.result
                    body_ops.append(scf.IfOp(in_grid, [], [*load_ops, scf.YieldOp()]))
            if step is not None:
                loop_block.add_ops([*body_ops, scf.YieldOp()])
                ops.append(scf.ForOp(lower, upper, c1, [], Region(loop_block)))
            else:
                ops += body_ops
        own = _index_exprs(stage, [f"d{i}" for i in range(rank)],
                           [f"s0 mod {t}" for t in stage.tile])
        indices = [apply(ops, e, coords, [tid.result]) for e in own]
        ops.append(memref.StoreOp.get(zero, block.args[-1], indices))
        ops += [sync.StorePointOp(coords), gpu.ReturnOp([])]
        block.add_ops(ops)
        funcs.append(gpu.FuncOp(f"f_{stage.name}", (block.arg_types, []), Region(block),
                                kernel=True, known_block_size=[max(stage.tile), 1, 1]))
    host: list = []
    for stage in program.stages:
        op = sync.StageOp(stage.name, ["k", f"f_{stage.name}"], stage.grid, (max(stage.tile),),
                          stage.tile)
        if stage.annotated:
            op.attributes["blocks_per_sm"] = IntegerAttr(stage.blocks_per_sm, i64)
        if stage.coresident:
            op.attributes["coresident"] = UnitAttr()
        if stage.placement:
            op.properties["output_map"] = AffineMapAttr(AffineMap(
                len(stage.grid), 0, tuple(AffineExpr.dimension(dim) + offset
                                          for dim, offset in stage.placement)))
        host.append(op)
    for d in program.deps:
        rank = len(program.stage(d.consumer).grid)
        results = tuple(_affine(r, rank, len(d.ranges)) for r in d.results)
        host.append(sync.DependencyOp(d.producer, d.consumer, d.operand,
                                      AffineMap(rank, len(d.ranges), results), d.ranges,
                                      d.clipped))
    for step in program.plan:
        if step[0] == "wait":
            host.append(sync.WaitKernelOp(step[1], step[2]))
        else:
            _, name, stream, priority, pdl, fused = step
            host.append(sync.LaunchOp(name, stream, priority, pdl, fused))
    gmod = gpu.ModuleOp(StringAttr("k"), Region(Block(funcs)))  # type: ignore[arg-type]
    return ModuleOp([gmod, *host])


def program_text(program: Program) -> str:
    return str(build_module(program)) + "\n"


# ---------------------------------------------------------------------------------------------
# The check
# ---------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    proved: bool
    failure: str | None = None  # verify proved it, yet it fails; or a pass crashed
    refusal: str = ""  # why verify (or a pass) refused it
    guarantees: tuple[str, ...] = ()
    # why the simulator could not follow some consumer's kernel (it used the block-level
    # model of the declared dependencies there); empty where it followed every kernel
    unfollowed: tuple[str, ...] = ()

    @property
    def sound(self) -> bool:
        return self.failure is None


SCHEDULES = (("adversarial", 0, 1), ("random", 1, 2), ("random", 2, 1), ("in_order", 0, 1))


def check(program: Program) -> Outcome:
    """Compile `program` with its passes; where sync-verify proves it, simulate it."""
    from tilesync.api import run_passes
    from tilesync.contract import TilesyncError

    module = build_module(program)
    try:
        run_passes(module, program.passes)
    except TilesyncError as err:
        return Outcome(False, refusal=str(err))
    except Exception as err:  # a pass must refuse with a diagnostic, never crash
        return Outcome(False, f"{CRASHED}: {_innermost_frame(err)}: "
                              f"{type(err).__name__}: {err}")
    misplaced = _misplaced_elements(program, module)
    if misplaced is not None:
        return Outcome(True, f"proved, but {misplaced}")
    return _simulate_proved(program, module)


def _misplaced_elements(program: Program, module) -> str | None:
    """Where verify and the simulator place an element of a placed or batched producer's
    output in another tile than the one whose kernel stores it (the generator's own index
    expressions, evaluated for every tile and lane: a truth neither of them computes)."""
    from xdsl.ir.affine import AffineMap

    from tilesync.analysis.grid import grid_tiles
    from tilesync.analysis.operand_regions import OperandLayout, layout_for
    from tilesync.dialects import sync

    ops = {op.sym_name.data: op for op in module.walk() if isinstance(op, sync.StageOp)}
    producers = {d.producer for d in program.deps}
    for stage in program.stages:
        if stage.name not in producers or not (stage.placement or len(stage.grid) == 3):
            continue
        layout = layout_for(ops[stage.name], _memref_type(stage))
        if not isinstance(layout, OperandLayout):
            continue
        rank = len(stage.grid)
        exprs = _index_exprs(stage, [f"d{i}" for i in range(rank)],
                             [f"s0 mod {t}" for t in stage.tile])
        store = AffineMap(rank, 1, tuple(_affine(e, rank, 1) for e in exprs))
        for tile in grid_tiles(stage.grid):
            for lane in range(max(stage.tile)):
                element = list(store.eval(list(tile), [lane]))
                met = {tuple(int(c) for c in coords)
                       for coords, valid in layout.tiles(element, element) if bool(valid)}
                if met != {tuple(tile)}:
                    return (f"@{stage.name}'s tile {tuple(tile)} stores element {element}, "
                            f"which its layout places in tile(s) {sorted(met)}")
    return None


CRASHED = "a pass crashed instead of refusing with a diagnostic"


def _innermost_frame(err: BaseException) -> str:
    import traceback

    frame = traceback.extract_tb(err.__traceback__)[-1]
    return f"{frame.filename}:{frame.lineno} in {frame.name}"


def _working_wait_kernels(module) -> set[str] | None:
    """Producers whose wait-kernel can end (start flag posted on entry, the wait-kernel
    function present), read straight from the IR."""
    from xdsl.dialects import gpu

    from tilesync.contract import START_FLAG, WAIT_KERNEL
    from tilesync.dialects import sync
    from tilesync.dialects.kernel_args import role_arguments

    funcs = {op.sym_name.data: op for op in module.walk() if isinstance(op, gpu.FuncOp)}
    if WAIT_KERNEL not in funcs:
        return set()
    working = set()
    for stage in (op for op in module.walk() if isinstance(op, sync.StageOp)):
        func = funcs.get(stage.kernel.nested_references.data[0].data)
        if func is None:
            continue
        flags = {arg for arg, role in role_arguments(func).items() if role == START_FLAG}
        entry = func.body.blocks.first
        if any(isinstance(op, sync.PostOp) and op.sems in flags for op in entry.ops):
            working.add(stage.sym_name.data)
    return working


def _simulate_proved(program: Program, module) -> Outcome:
    from tilesync.analysis.simulator import (
        SimDependency,
        SimMachine,
        program_from_ir,
        simulate,
    )
    from tilesync.analysis.stage_graph import StageGraph, WaitKernel
    from tilesync.dialects import sync

    graph = StageGraph.of(module)
    kinds = tuple(sorted({
        part.split(": ", 1)[1].split(" (")[0].split(":")[0]
        for op in graph.stages.values() if "sync.progress" in op.attributes
        for part in op.attributes["sync.progress"].data.split("; ")}))
    working = _working_wait_kernels(module)
    for step in graph.plan:
        if isinstance(step, WaitKernel) and working is not None and step.producer not in working:
            return Outcome(True, f"proved, but the wait-kernel of @{step.producer} can never "
                                 f"end (no start flag or no wait-kernel function)", "", kinds)
    sim = program_from_ir(module, blocks_per_sm={s.name: s.blocks_per_sm
                                                 for s in program.stages}, follow_kernels=True)
    unfollowed = tuple(sorted(set(sim.unfollowed.values())))
    for d in program.deps:
        if not d.extra or d.consumer not in sim.unfollowed:
            continue  # a followed kernel's reads are its loads, the undeclared one among them
        op = next(o for o in graph.dependencies if o.producer.root_reference.data == d.producer
                  and o.consumer.root_reference.data == d.consumer
                  and o.operand.data == d.operand)
        grid = program.stage(d.producer).grid

        def shifted(tile, op: sync.DependencyOp = op, grid: tuple[int, ...] = grid):
            return list(dict.fromkeys(((t[0] + 1) % grid[0], *t[1:])
                                      for t in op.producer_tiles(tile)))

        sim.dependencies.append(SimDependency(d.producer, d.consumer, shifted, guarded=False))
    machine = SimMachine(program.sms)
    for scheduler, seed, launches in SCHEDULES:
        try:
            result = simulate(sim, machine, scheduler, seed=seed, launches=launches)
        except ValueError as err:
            return Outcome(True, f"proved, but the simulator cannot run it: {err}", "", kinds,
                           unfollowed)
        if not result.ok:
            problems = []
            if result.deadlock is not None:
                problems.append(result.deadlock.describe(3))
            problems += [str(v) for v in result.violations[:3]]
            problems += [f"{m.stage} semaphore {m.semaphore}: expected {m.expected}, seen "
                         f"{m.seen}" for m in result.semaphore_mismatches[:3]]
            if not problems:
                problems.append(f"{len(result.mismatched_tiles)} output tiles differ")
            return Outcome(True, f"proved, but under the {scheduler} scheduler (seed {seed}, "
                                 f"{launches} launches): " + "; ".join(problems), "", kinds,
                           unfollowed)
    return Outcome(True, None, "", kinds, unfollowed)


# ---------------------------------------------------------------------------------------------
# Many programs
# ---------------------------------------------------------------------------------------------


@dataclass
class Tally:
    programs: int = 0
    proved: int = 0
    failures: list[tuple[int, str, str]] = field(default_factory=list)  # seed, why, program
    guarantees: Counter = field(default_factory=Counter)
    refusals: Counter = field(default_factory=Counter)
    unfollowed: Counter = field(default_factory=Counter)  # proved programs, per reason
    # programs with a kernel reading a step ahead of its waits: drawn, and proved (sound only
    # where that tile was waited for already, which the simulator then confirms)
    read_ahead: Counter = field(default_factory=Counter)
    # programs with a clipped read kept inside the grid by each guard form other than `if`:
    # drawn, and proved (the selects' and inequalities' narrowing, held to the simulator)
    guards: Counter = field(default_factory=Counter)

    def add(self, seed: int, program: Program, outcome: Outcome) -> None:
        self.programs += 1
        self.proved += outcome.proved
        for kind in outcome.guarantees:
            self.guarantees[kind] += 1
        if not outcome.proved:
            self.refusals[_refusal_kind(outcome.refusal)] += 1
        for reason in outcome.unfollowed:
            self.unfollowed[reason] += 1
        if any(d.read_ahead for d in program.deps):
            self.read_ahead["drawn"] += 1
            self.read_ahead["proved"] += outcome.proved
        for form in {d.guard for d in program.deps} - {"if"}:
            self.guards[form, "drawn"] += 1
            self.guards[form, "proved"] += outcome.proved
        if outcome.failure is not None:
            self.failures.append((seed, outcome.failure, program_text(program)))

    def merge(self, other: Tally) -> None:
        self.programs += other.programs
        self.proved += other.proved
        self.failures += other.failures
        self.guarantees.update(other.guarantees)
        self.refusals.update(other.refusals)
        self.unfollowed.update(other.unfollowed)
        self.read_ahead.update(other.read_ahead)
        self.guards.update(other.guards)


def _refusal_kind(message: str) -> str:
    for key in ("cycle", "forward-progress", "never completes", "does not declare",
                "no wait on that semaphore", "cannot bound", "posts", "policy=", "strided"):
        if key in message:
            return key
    return "other"


def run_seeds(seeds: Sequence[int]) -> Tally:
    tally = Tally()
    for seed in seeds:
        program = draw_program(RandomDraw(seed))
        tally.add(seed, program, check(program))
    return tally


def _chunk(args: tuple[int, int]) -> Tally:
    start, stop = args
    return run_seeds(range(start, stop))


def run(programs: int, seed: int = 0, jobs: int = 1, chunk: int = 200,
        progress: bool = False, log_every: int = 10_000) -> Tally:
    """`programs` random programs (seeds `seed`, `seed` + 1, ...) over `jobs` processes."""
    ranges = [(start, min(start + chunk, seed + programs))
              for start in range(seed, seed + programs, chunk)]
    tally = Tally()
    started = time.perf_counter()
    if jobs <= 1:
        results = map(_chunk, ranges)
    else:
        import multiprocessing

        pool = multiprocessing.get_context("fork").Pool(jobs)
        results = pool.imap(_chunk, ranges)
    logged = 0
    for part in results:
        tally.merge(part)
        rate = tally.programs / (time.perf_counter() - started)
        line = (f"{tally.programs}/{programs} programs, {tally.proved} proved, "
                f"{len(tally.failures)} unsound or crashed, {rate:.0f}/s")
        if progress:
            print(f"\r{line}", end="", file=sys.stderr, flush=True)
        elif tally.programs - logged >= log_every:  # a log file: a line now and then
            logged = tally.programs
            print(line, file=sys.stderr, flush=True)
    if progress:
        print(file=sys.stderr)
    if jobs > 1:
        pool.close()
        pool.join()
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=positive_int, default=10_000)
    parser.add_argument("--seed", type=non_negative_int, default=0,
                        help="seed of the first program")
    parser.add_argument("--jobs", type=positive_int, default=1)
    parser.add_argument("--show-failures", action="store_true",
                        help="print every program verify proved and the simulator refuted")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    tally = run(args.programs, args.seed, args.jobs, progress=sys.stderr.isatty())
    seconds = time.perf_counter() - started
    crashes = sum(why.startswith(CRASHED) for _, why, _ in tally.failures)
    print(f"{tally.programs} programs (seeds {args.seed}..{args.seed + args.programs - 1}) in "
          f"{seconds:.0f} s ({tally.programs / seconds:.1f}/s, {args.jobs} jobs): "
          f"{tally.proved} proved, {tally.programs - tally.proved} refused, "
          f"{len(tally.failures) - crashes} proved but refuted by the simulator, "
          f"{crashes} crashed a pass")
    print("guarantees relied on: " + ", ".join(f"{k} {n}" for k, n in
                                               sorted(tally.guarantees.items())))
    print("refusals: " + ", ".join(f"{k} {n}" for k, n in sorted(tally.refusals.items())))
    print(f"kernels reading a step ahead of their waits: {tally.read_ahead['drawn']} programs, "
          f"{tally.read_ahead['proved']} proved")
    print("clipped reads kept in the grid by " + ", ".join(
        f"{form}: {tally.guards[form, 'drawn']} programs, {tally.guards[form, 'proved']} proved"
        for form in GUARDS[2:]))
    print(f"kernels not followed (block-level model) in {sum(tally.unfollowed.values())} proved "
          f"programs" + "".join(f"\n  {n}: {why}" for why, n in tally.unfollowed.most_common()))
    for seed, why, text in tally.failures[: None if args.show_failures else 3]:
        print(f"\n--- seed {seed}: {why}\n{text}")
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())

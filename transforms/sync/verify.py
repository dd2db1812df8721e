"""`sync-verify`: prove that a stage program's kernels synchronize what its dependencies say.

For every `sync.dependency @P -> @C operand N` the pass proves, by running the kernels
abstractly (integer evaluation of index arithmetic, `sync.tile` bound to each tile, `scf.for`
loops with constant bounds unrolled, `scf.if` taken when its condition is known):

1. **Coverage.** Every consumer tile of C, at each `sync.load_point operand N` (with
   `step %k`: for s0 = k), has already waited for every producer tile the dependency says it
   reads there: the tile's semaphore (where P's kernel posts it) was the target of a
   `sync.wait` on P's array (`sync.args` role `sems:@P`) executed before, on every path, with
   the kernel's epoch. A direct use of argument N with no load hook in scope must be covered
   for the whole tile. Waits inside a branch or loop that may not run do not count.
2. **Reachability.** Each of P's tiles posts exactly once, and each semaphore receives, per
   launch, exactly the number of posts that every wait on it expects (`posts` of the wait's
   policy): fewer expected and a wait passes early, more and it never passes.
3. **Forward progress.** The consumer's blocks cannot starve the producer's, by the rules of
   `analysis.forward_progress` over the host plan (without `sync.launch` ops: every stage on
   stream 0 in program order): stream order, `pdl = true` on C's launch right after P on P's
   stream, a `sync.wait_kernel @P` before C on C's stream, co-residency (`coresident` on C's
   stage or launch, or `blocks_per_sm` on every stage with the pass option `sms` such that all
   blocks of the program fit on the SMs at once), or the wave model's W rule. The guarantee
   used is recorded on C's stage as `sync.progress`.

Enumeration is exact up to `limit` consumer tiles per dependency; above it only the tiles on
the grid's boundary (each coordinate in {0, 1, n-2, n-1}) are checked, and the stage is marked
`sync.verified = "boundary"` instead of `"proved"` so a reader knows the proof is partial.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from xdsl.context import Context
from xdsl.dialects import affine, arith, gpu, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass

from tilesync.analysis.dependency_analysis import tiles_read
from tilesync.analysis.forward_progress import Guarantee, ProgressFacts, Residency, guarantees
from tilesync.analysis.grid import Tile, grid_tiles
from tilesync.analysis.stage_graph import StageGraph
from tilesync.contract import (
    BLOCKS_PER_SM_ATTR,
    CORESIDENT_ATTR,
    EPOCH,
    PROGRESS_ATTR,
    VERIFIED_ATTR,
    Role,
    VerifyError,
)
from tilesync.dialects import sync
from tilesync.dialects.kernel_args import lookup_kernel, role_arguments
from tilesync.dialects.locations import OpDiagnostic, diagnostic
from tilesync.dialects.sync import ENUMERATION_LIMIT

PASS = "sync-verify"
DEFAULT_LIMIT = 4096  # consumer tiles per dependency checked exhaustively
MAX_ITERATIONS = 1 << 16  # unrolled iterations of one loop before it is treated as unknown
# Abstract-execution steps (ops run, producer tiles enumerated) of one pass before it refuses:
# about 5 s, four times what the GPT-3 MLP example takes.
DEFAULT_STEPS = 500_000


@dataclass
class StepBudget:
    """What is left of the pass's abstract-execution steps."""

    total: int
    left: int = -1

    def __post_init__(self) -> None:
        self.left = self.total

    def spend(self, op: Operation, steps: int = 1) -> None:
        self.left -= steps
        if self.left < 0:
            raise Unproven(
                op,
                f"the proof takes more than {self.total} steps of abstract execution "
                f"(sync-verify{{steps=N}} allows more; limit=N checks only the boundary tiles "
                f"of grids above N tiles)",
            )

_CMP = {
    0: lambda a, b: a == b,
    1: lambda a, b: a != b,
    2: lambda a, b: a < b,
    3: lambda a, b: a <= b,
    4: lambda a, b: a > b,
    5: lambda a, b: a >= b,
    6: lambda a, b: a < b,
    7: lambda a, b: a <= b,
    8: lambda a, b: a > b,
    9: lambda a, b: a >= b,
}


def _floordiv(a: int, b: int) -> int:
    return a // b


def _ceildiv(a: int, b: int) -> int:
    return -(-a // b)


def _truncdiv(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _truncrem(a: int, b: int) -> int:
    return a - b * _truncdiv(a, b)


_BINARY = {
    arith.AddiOp: lambda a, b: a + b,
    arith.SubiOp: lambda a, b: a - b,
    arith.MuliOp: lambda a, b: a * b,
    arith.DivUIOp: _floordiv,
    arith.DivSIOp: _truncdiv,
    arith.FloorDivSIOp: _floordiv,
    arith.CeilDivSIOp: _ceildiv,
    arith.CeilDivUIOp: _ceildiv,
    arith.RemUIOp: lambda a, b: a % b,
    arith.RemSIOp: _truncrem,
    arith.MinSIOp: min,
    arith.MaxSIOp: max,
    arith.MinUIOp: min,
    arith.MaxUIOp: max,
    arith.AndIOp: lambda a, b: a & b,
    arith.OrIOp: lambda a, b: a | b,
    arith.XOrIOp: lambda a, b: a ^ b,
}


@dataclass(frozen=True)
class Waited:
    role: Role
    semaphore: int
    posts: int


@dataclass
class RunState:
    """What one block has definitely done so far on the current path."""

    waited: set[Waited] = field(default_factory=set)
    # operand → obligations (dependency index, producer tile) of the load hooks in scope
    in_scope: dict[int, set[tuple[int, Tile]]] = field(default_factory=dict)

    def copy(self) -> RunState:
        return RunState(set(self.waited), {k: set(v) for k, v in self.in_scope.items()})


class Unproven(Exception):
    """Abstract execution of a kernel cannot go on at `op` (reported as a refusal)."""

    def __init__(self, op: Operation, message: str):
        super().__init__(message)
        self.op = op


def refusal(op: Operation, message: str) -> OpDiagnostic:
    """sync-verify refuses the program at `op`: a VerifyError for the user."""
    return diagnostic(PASS, op, message, VerifyError)


@dataclass
class Obligations:
    """What a consumer kernel must wait for, per produced operand."""

    deps: list[sync.DependencyOp]
    # semaphore of each producer tile, per producer stage (from the producer's posts)
    semaphore_of: dict[str, dict[Tile, int]]
    # posts each semaphore receives per launch, per producer stage
    posts_to: dict[str, Counter[int]]


class KernelRun:
    """Abstract execution of one block of a kernel (its tile bound to concrete values)."""

    def __init__(self, func: gpu.FuncOp, tile: Tile, roles: dict[SSAValue, Role]):
        self.func = func
        self.tile = tile
        self.roles = roles
        self.env: dict[SSAValue, int | None] = {}
        self.posts: list[tuple[sync.PostOp, Role, int, bool]] = []  # op, role, sem, definite
        self.obligations: Obligations | None = None
        self.operand_args: dict[SSAValue, int] = {}  # produced kernel argument → operand N
        self.stage_name = ""
        self.budget: StepBudget | None = None

    # -- evaluation ----------------------------------------------------------------------
    def value(self, v: SSAValue) -> int | None:
        return self.env.get(v)

    def evaluate(self, op: Operation) -> None:
        if isinstance(op, sync.TileOp):
            if len(op.coords) != len(self.tile):
                raise Unproven(
                    op,
                    f"sync.tile yields {len(op.coords)} coordinates but the stage grid has "
                    f"{len(self.tile)}",
                )
            for result, coordinate in zip(op.coords, self.tile):
                self.env[result] = coordinate
            return
        if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
            self.env[op.result] = op.value.value.data
            return
        kind = _BINARY.get(type(op))
        if kind is not None:
            a, b = self.value(op.operands[0]), self.value(op.operands[1])
            try:
                self.env[op.results[0]] = None if a is None or b is None else kind(a, b)
            except ZeroDivisionError:
                self.env[op.results[0]] = None
            return
        if isinstance(op, arith.IndexCastOp | arith.ExtSIOp | arith.ExtUIOp | arith.TruncIOp):
            self.env[op.results[0]] = self.value(op.operands[0])
            return
        if isinstance(op, arith.CmpiOp):
            a, b = self.value(op.lhs), self.value(op.rhs)
            predicate = op.predicate.value.data
            self.env[op.result] = None if a is None or b is None else int(_CMP[predicate](a, b))
            return
        if isinstance(op, arith.SelectOp):
            c = self.value(op.cond)
            self.env[op.result] = None if c is None else self.value(op.lhs if c else op.rhs)
            return
        if isinstance(op, affine.ApplyOp):
            operands = [self.value(v) for v in op.mapOperands]
            if any(v is None for v in operands):
                self.env[op.result] = None
                return
            m = op.map.data
            self.env[op.result] = m.eval(
                tuple(operands[: m.num_dims]),
                tuple(operands[m.num_dims :]),  # type: ignore[arg-type]
            )[0]
            return
        for result in op.results:
            self.env[result] = None

    # -- execution -----------------------------------------------------------------------
    def run(self) -> RunState:
        state = RunState()
        self.run_block(self.func.body.blocks.first, state, True)  # type: ignore[arg-type]
        return state

    def run_block(self, block: Block, state: RunState, definite: bool) -> None:
        for op in block.ops:
            self.step(op, state, definite)

    def run_region_copy(self, op: Operation, state: RunState, definite: bool) -> None:
        """Run every block of every region of `op` once on a copy: its waits do not count
        after it (it may not run, or run with other values), its loads are checked, and its
        posts are only possible ones."""
        del definite
        for region in op.regions:
            for block in region.blocks:
                for arg in block.args:
                    self.env[arg] = None
                self.run_block(block, state.copy(), False)

    def step(self, op: Operation, state: RunState, definite: bool) -> None:
        if self.budget is not None:
            self.budget.spend(op)
        self.check_uses(op, state)
        if isinstance(op, sync.WaitOp):
            self.on_wait(op, state, definite)
        elif isinstance(op, sync.PostOp):
            self.on_post(op, definite)
        elif isinstance(op, sync.LoadPointOp):
            self.on_load_point(op, state)
        elif isinstance(op, scf.ForOp):
            self.on_for(op, state, definite)
        elif isinstance(op, scf.IfOp):
            c = self.value(op.cond)
            if c is None:
                self.run_region_copy(op, state, definite)
            else:
                region = op.true_region if c else op.false_region
                if region.blocks:
                    self.run_block(region.blocks.first, state, definite)  # type: ignore[arg-type]
            for result in op.results:
                self.env[result] = None
        elif op.regions:
            self.run_region_copy(op, state, definite)
            for result in op.results:
                self.env[result] = None
        else:
            self.evaluate(op)

    def on_for(self, op: scf.ForOp, state: RunState, definite: bool) -> None:
        lb, ub, st = self.value(op.lb), self.value(op.ub), self.value(op.step)
        body = op.body.blocks.first
        assert body is not None
        has_sync = any(
            isinstance(o, sync.WaitOp | sync.PostOp | sync.LoadPointOp) for o in op.walk()
        )
        for result in op.results:
            self.env[result] = None
        if lb is None or ub is None or st is None or st <= 0 or not has_sync:
            self.run_region_copy(op, state, definite)
            return
        trips = max(0, _ceildiv(ub - lb, st))
        if trips > MAX_ITERATIONS:
            self.run_region_copy(op, state, definite)
            return
        outer_scope = {k: set(v) for k, v in state.in_scope.items()}
        for iteration in range(trips):
            self.env[body.args[0]] = lb + iteration * st
            for arg in body.args[1:]:
                self.env[arg] = None
            # load hooks of an earlier iteration do not cover this iteration's loads
            state.in_scope = {k: set(v) for k, v in outer_scope.items()}
            self.run_block(body, state, definite)
        state.in_scope = outer_scope

    def on_wait(self, op: sync.WaitOp, state: RunState, definite: bool) -> None:
        # A wait that may not run is on a copied state (see run_region_copy): it covers the
        # loads after it on its own path only.
        role = self.roles.get(op.sems)
        coords = [self.value(v) for v in op.tile]
        if role is None or any(c is None for c in coords):
            return  # cannot tell which semaphore: it covers nothing
        if self.roles.get(op.epoch) != EPOCH:
            raise Unproven(op, "sync.wait does not compare against the kernel's epoch")
        semaphore = op.policy.semaphore_index(coords)  # type: ignore[arg-type]
        state.waited.add(Waited(role, semaphore, op.policy.posts.data))

    def on_post(self, op: sync.PostOp, definite: bool) -> None:
        role = self.roles.get(op.sems)
        coords = [self.value(v) for v in op.tile]
        if role is None or any(c is None for c in coords):
            raise Unproven(op, "cannot tell which semaphore this sync.post reaches")
        semaphore = op.policy.semaphore_index(coords)  # type: ignore[arg-type]
        self.posts.append((op, role, semaphore, definite))

    def on_load_point(self, op: sync.LoadPointOp, state: RunState) -> None:
        obligations = self.obligations
        if obligations is None:
            return
        operand = op.operand.data
        fixed: dict[int, int] | None = None
        if op.step is not None:
            step = self.value(op.step)
            if step is None:
                fixed = None  # unknown step: the whole tile must be covered
            else:
                fixed = {0: step}
        needed: set[tuple[int, Tile]] = set()
        coords = [self.value(v) for v in op.tile]
        if any(c is None for c in coords):
            raise Unproven(op, "cannot evaluate the tile of this sync.load_point")
        for index, dep in enumerate(obligations.deps):
            if dep.operand.data != operand:
                continue
            if fixed is not None and dep.tiles_map.num_symbols == 0:
                tiles = tiles_read(dep, tuple(coords))  # type: ignore[arg-type]
            else:
                lo_hi = dep.ranges[0] if dep.ranges else None
                if fixed is not None and lo_hi and not lo_hi[0] <= fixed[0] < lo_hi[1]:
                    continue  # a step past the forall range reads nothing produced
                tiles = tiles_read(dep, tuple(coords), fixed)  # type: ignore[arg-type]
            if self.budget is not None:
                self.budget.spend(op, len(tiles))
            needed |= {(index, t) for t in tiles}
        state.in_scope.setdefault(operand, set()).update(needed)
        self.check(op, state, needed, f"sync.load_point operand {operand}")

    def check_uses(self, op: Operation, state: RunState) -> None:
        if self.obligations is None or isinstance(op, sync.HOOK_OPS):
            return
        for operand_value in op.operands:
            n = self.operand_args.get(operand_value)
            if n is None:
                continue
            needed = state.in_scope.get(n)
            if not needed:
                needed = set()
                for index, dep in enumerate(self.obligations.deps):
                    if dep.operand.data == n:
                        tiles = tiles_read(dep, self.tile)
                        if self.budget is not None:
                            self.budget.spend(op, len(tiles))
                        needed |= {(index, t) for t in tiles}
                what = f"'{op.name}' reads operand {n} with no sync.load_point before it"
            else:
                what = f"'{op.name}' reads operand {n}"
            self.check(op, state, needed, what)

    def check(
        self, op: Operation, state: RunState, needed: set[tuple[int, Tile]], what: str
    ) -> None:
        assert self.obligations is not None
        for index, producer_tile in sorted(needed):
            dep = self.obligations.deps[index]
            producer = dep.producer.root_reference.data
            role = Role.semaphores(producer)
            semaphore = self.obligations.semaphore_of[producer].get(producer_tile)
            if semaphore is None:
                continue  # reported on the producer's side
            count = self.obligations.posts_to[producer][semaphore]
            waits = [w for w in state.waited if w.role == role and w.semaphore == semaphore]
            where = (
                f"consumer tile {self.tile} of @{self.stage_name}: {what}, which reads "
                f"producer tile {producer_tile} of @{producer} (semaphore {semaphore})"
            )
            if not waits:
                raise Unproven(op, f"{where}, but no wait on that semaphore precedes it")
            if all(w.posts < count for w in waits):
                raise Unproven(
                    op,
                    f"{where}, but the wait expects {max(w.posts for w in waits)} posts per "
                    f"launch and the semaphore receives {count}: it may pass before the tile "
                    f"is stored",
                )


def _boundary_tiles(grid: Sequence[int]) -> list[Tile]:
    axes = [sorted({c for c in (0, 1, n - 2, n - 1) if 0 <= c < n}) for n in grid]
    points: list[Tile] = [()]
    for axis in axes:
        points = [(*p, c) for p in points for c in axis]
    return points


@dataclass(frozen=True)
class VerifySyncPass(ModulePass):
    """Prove every read tile is waited for and every count reached; name the progress guarantee."""

    name = "sync-verify"

    sms: int = 0  # SMs of the target, for the co-residency guarantee (0: not given)
    limit: int = DEFAULT_LIMIT
    steps: int = DEFAULT_STEPS  # abstract-execution steps before the pass refuses

    def __post_init__(self) -> None:
        if self.sms < 0:
            raise ValueError(f"option 'sms' must not be negative, got {self.sms}")
        if self.limit < 1:
            raise ValueError(f"option 'limit' must be positive, got {self.limit}")
        if self.steps < 1:
            raise ValueError(f"option 'steps' must be positive, got {self.steps}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        graph = StageGraph.of(op)
        budget = StepBudget(self.steps)
        producers = {d.producer.root_reference.data for d in graph.dependencies}
        consumers = {d.consumer.root_reference.data for d in graph.dependencies}
        semaphore_of: dict[str, dict[Tile, int]] = {}
        posts_to: dict[str, Counter[int]] = {}
        exact: dict[str, bool] = {}
        for name in graph.stages:
            if name in producers:
                semaphore_of[name], posts_to[name], exact[name] = self.producer_posts(
                    op, graph, name, budget
                )
        progress = self.progress(graph)
        for name in graph.stages:
            if name in consumers:
                exact[name] = self.consumer_waits(op, graph, name, semaphore_of, posts_to,
                                                  budget)
                self.forward_progress(graph, name, progress)
        for name, is_exact in exact.items():
            graph.stages[name].attributes[VERIFIED_ATTR] = StringAttr(
                "proved" if is_exact else "boundary"
            )

    # -- posts -------------------------------------------------------------------------------
    def producer_posts(
        self, module: ModuleOp, graph: StageGraph, name: str, budget: StepBudget | None = None
    ) -> tuple[dict[Tile, int], Counter[int], bool]:
        stage = graph.stages[name]
        func = lookup_kernel(module, stage.kernel, f"sync.stage @{name}", stage)
        roles = role_arguments(func)
        role = Role.semaphores(name)
        if role not in roles.values():
            raise refusal(
                func,
                f"kernel {stage.kernel} of stage @{name} has no '{role}' parameter in its "
                f"sync.args: its consumers cannot be shown to wait on what it posts (run "
                f"sync-insert-post-wait)",
            )
        semaphore_of: dict[Tile, int] = {}
        counts: Counter[int] = Counter()
        grid = stage.grid_shape
        exact = math.prod(grid) <= self.limit
        tiles = list(grid_tiles(grid)) if exact else _boundary_tiles(grid)
        for tile in tiles:
            run = KernelRun(func, tile, roles)
            run.budget = budget
            try:
                run.run()
            except Unproven as e:
                raise refusal(e.op, f"producer @{name}, tile {tile}: {e}") from e
            mine = [(p, s, d) for p, r, s, d in run.posts if r == role]
            maybe = [p for p, s, d in mine if not d]
            if maybe:
                raise refusal(
                    maybe[0],
                    f"producer @{name}, tile {tile}: this sync.post may or may not run; "
                    f"cannot count the posts its semaphore receives",
                )
            if len(mine) != 1:
                raise refusal(
                    mine[1][0] if mine else stage,
                    f"producer @{name}, tile {tile} posts {len(mine)} times per launch; "
                    f"each tile must post exactly once",
                )
            semaphore_of[tile] = mine[0][1]
            counts[mine[0][1]] += 1
        if exact and stage.policy is not None:
            expected = stage.policy.posts.data
            wrong = {s: n for s, n in counts.items() if n != expected}
            if wrong:
                s, n = min(wrong.items())
                raise refusal(
                    stage,
                    f"semaphore {s} of @{name} receives {n} posts per launch but its policy "
                    f"{stage.policy.kind} expects {expected}",
                )
        if not exact and stage.policy is not None:
            if math.prod(grid) > ENUMERATION_LIMIT:
                raise refusal(stage, f"producer @{name} has {math.prod(grid)} tiles, more than "
                                     f"the {ENUMERATION_LIMIT} whose semaphores are enumerated")
            # Outside the sampled tiles, trust the policy's own count (checked on the grid by
            # the stage verifier).
            full = stage.policy.posts_per_semaphore(grid)
            counts = Counter(full)
            for tile in grid_tiles(grid):
                semaphore_of.setdefault(tile, stage.policy.semaphore_index(tile))
        return semaphore_of, counts, exact

    # -- waits -------------------------------------------------------------------------------
    def consumer_waits(
        self,
        module: ModuleOp,
        graph: StageGraph,
        name: str,
        semaphore_of: dict[str, dict[Tile, int]],
        posts_to: dict[str, Counter[int]],
        budget: StepBudget | None = None,
    ) -> bool:
        stage = graph.stages[name]
        func = lookup_kernel(module, stage.kernel, f"sync.stage @{name}", stage)
        roles = role_arguments(func)
        deps = graph.incoming(name)
        for dep in deps:
            role = Role.semaphores(dep.producer.root_reference.data)
            if role not in roles.values():
                raise refusal(
                    dep,
                    f"kernel {stage.kernel} of stage @{name} has no '{role}' parameter: it "
                    f"never waits for {dep.producer} (run sync-insert-post-wait)",
                )
        args = func.body.blocks.first.args  # type: ignore[union-attr]
        operand_args = {args[d.operand.data]: d.operand.data for d in deps}
        obligations = Obligations(deps, semaphore_of, posts_to)
        grid = stage.grid_shape
        exact = math.prod(grid) <= self.limit
        tiles = list(grid_tiles(grid)) if exact else _boundary_tiles(grid)
        for tile in tiles:
            run = KernelRun(func, tile, roles)
            run.budget = budget
            run.obligations = obligations
            run.operand_args = operand_args
            run.stage_name = name
            try:
                state = run.run()
            except Unproven as e:
                raise refusal(e.op, str(e)) from e
            for waited in state.waited:
                producer = waited.role.stage
                count = posts_to.get(producer, Counter())[waited.semaphore] if producer else 0
                if waited.posts > count:
                    owner = f"@{producer}" if producer else f"'{waited.role}'"
                    raise refusal(
                        stage,
                        f"consumer tile {tile} of @{name} waits for {waited.posts} posts per "
                        f"launch on semaphore {waited.semaphore} of {owner}, which "
                        f"receives {count}: the wait never passes",
                    )
        return exact

    # -- forward progress ----------------------------------------------------------------------
    def progress(self, graph: StageGraph) -> dict[tuple[str, str], Guarantee | None]:
        """The forward-progress guarantee of every dependency (`analysis.forward_progress`)."""
        residency: dict[str, Residency] = {}
        declared: set[str] = set()
        for name, stage in graph.stages.items():
            per_sm = stage.attributes.get(BLOCKS_PER_SM_ATTR)
            if isinstance(per_sm, IntegerAttr) and per_sm.value.data > 0:
                residency[name] = Residency(math.prod(stage.grid_shape), per_sm.value.data)
            launch = graph.launch(name)
            if CORESIDENT_ATTR in stage.attributes or (
                launch is not None and launch.op is not None
                and CORESIDENT_ATTR in launch.op.attributes
            ):
                declared.add(name)
        facts = ProgressFacts(list(graph.stages), graph.dependent_pairs(), graph.plan,
                              residency, max(self.sms, 0), declared)
        return guarantees(facts)

    def forward_progress(
        self, graph: StageGraph, name: str, progress: dict[tuple[str, str], Guarantee | None]
    ) -> None:
        stage = graph.stages[name]
        launch = graph.launch(name)
        found: list[str] = []
        for producer in graph.producers(name):
            guarantee = progress[(producer, name)]
            if guarantee is None:
                raise refusal(
                    launch.op if launch is not None and launch.op is not None else stage,
                    f"no forward-progress guarantee for @{name} waiting on @{producer}: "
                    f"launch a sync.wait_kernel @{producer} before @{name} on its stream, "
                    f"launch @{name} with pdl = true right after @{producer} on its stream, or "
                    f"show that all stages are co-resident (coresident, or blocks_per_sm on "
                    f"every stage and sms=N)",
                )
            found.append(f"@{producer}: {guarantee}")
        stage.attributes[PROGRESS_ATTR] = StringAttr("; ".join(found))

"""`sync-verify`: prove that a stage program's kernels synchronize what its dependencies say,
that they read nothing the dependencies leave out, and that the whole program makes progress.

The kernels are run abstractly (`analysis.kernel_eval`: every tile of a stage at once, index
arithmetic as exact integers or intervals per tile, `scf.for` loops around synchronization
unrolled, `scf.if` taken when its condition is known and otherwise both sides run, each with
the values its comparison bounds narrowed; tiles that take different paths run apart, so the
cost grows with the classes of tiles that behave alike, not with the grid).
For every `sync.dependency @P -> @C operand N` the pass proves:

1. **Coverage.** Every consumer tile of C, at each `sync.load_point operand N` (with
   `step %k`: for s0 = k), has already waited for every producer tile the dependency says it
   reads there: the tile's semaphore (where P's kernel posts it) was the target of a
   `sync.wait` on P's array (`sync.args` role `sems:@P`) executed before, on every path, with
   the kernel's epoch. A direct use of argument N with no load hook in scope must be covered
   for the whole tile. Waits inside a branch or loop that may not run do not count.
2. **Loads.** The dependency is not trusted: every access to operand N (`memref.load`,
   `memref.store`, `tile.cp_async`, `tile.take_acc`, `tile.store_acc`) is bounded by interval
   arithmetic, mapped to the producer tiles that write those elements
   (`analysis.operand_regions`: P's grid and tile over the operand's layout, placed by P's
   `output_map` where it has one), and each of them must have been waited for. P's own writes
   (`operand_access.WRITE_OPS`, TMA stores included, to any argument that may be the buffer:
   a memref of the elements a consumer's tensor map reads too) must lie in the region of the
   tile that posts them. An access whose indices cannot be bounded, one that may pass the end
   of a dimension after the first of a static shape unmasked (row-major, another element of
   the buffer), a view of the same rank with other rows, or any other use of operand N, is
   refused by name.
3. **Reachability.** Each of P's tiles posts exactly once, and each semaphore receives, per
   launch, exactly the number of posts that every wait on it expects (`posts` of the wait's
   policy): fewer expected and a wait passes early, more and it never passes.
4. **Forward progress** of the whole program (`analysis.forward_progress.analyze`, the rules
   the simulator uses): no dependency cycle (the message names it); for each dependency stream
   order, `pdl = true` on C's launch right after P on P's stream, a working
   `sync.wait_kernel @P` before C on C's stream (P's kernel posts its start flag at flag[0],
   the wait-kernel function waits for it: `waits_for_every_block`), co-residency of every
   block of the program (`coresident` on C's stage or launch, checked where `blocks_per_sm`
   and the pass option `sms` allow, or `blocks_per_sm` on every stage with `sms`), or the
   wave model's W rule. Without any `sync.launch` every stage runs on stream 0 in program
   order. The guarantee used is recorded on C's stage as `sync.progress`. Every step of the
   host plan must be able to run to its end: a wait-kernel that does not work, or waits for
   a stage never launched, or a launch behind a cycle of launches is refused even where no
   dependency relies on it.
5. **Barriers.** No block-wide barrier of a stage's kernel (a `gpu.barrier`, a block-wide
   wait, probe or post) sits under control flow that depends on the thread index and lets
   some threads pass it by (`analysis.barrier_divergence`): the block would hang at it,
   holding its SM slot.
6. **Declared semaphores.** A stage's kernel posts only its own semaphores and waits only on
   those of the producers its dependencies name, never on a memref that is no sync parameter:
   the counts of 3 are the producer's own posts, the progress of 4 is the declared
   dependencies'.
7. **Proxies.** A tile written by bulk tensor stores (`tile.tma_store`) is posted
   `async_proxy` (the post waits for those writes and orders them before its release); a
   bulk tensor load (`tile.tma_load`) of a produced operand follows waits that are
   `async_proxy`, or a `tile.fence_proxy_async global` after them in its thread: the async
   proxy does not see the generic proxy's acquire and release.
8. **Tile orders.** The order a kernel hands its tiles out in (its `sync.tile` order, else
   the first of its stages' orders) is a permutation of every grid launching it and the
   stage's own order where it names one (`analysis.tile_order.kernel_order_error`).

Enumeration is exact up to `limit` tiles per stage; above it only the tiles on the grid's
boundary (each coordinate in {0, 1, n-2, n-1}) are checked, and the stage is marked
`sync.verified = "boundary"` instead of `"proved"` so a reader knows the proof is partial; a
consumer checked against a producer so sampled is marked "boundary" too (the posts of the
producer's tiles not run are the policy's, taken on trust), and a producer so sampled without
a policy is refused. Diagnostics name the first failing tile in row-major order, the same
under any hash seed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, gpu, memref, scf
from xdsl.dialects.builtin import IntegerAttr, MemRefType, ModuleOp, StringAttr
from xdsl.ir import Operation, OpResult, SSAValue
from xdsl.passes import ModulePass

from tilesync.analysis.barrier_divergence import divergent_barrier
from tilesync.analysis.dependency_analysis import tiles_read
from tilesync.analysis.forward_progress import (
    ProgressReport,
    Residency,
    analyze,
    format_cycle,
    program_facts,
)
from tilesync.analysis.grid import Tile, grid_tiles
from tilesync.analysis.kernel_eval import (
    NO_SEMAPHORE,
    BatchRun,
    Scalar,
    StepBudget,
    Unproven,
    Value,
    affine_exact,
    constant_index,
    exact,
    probe_semaphores,
    run_batches,
)
from tilesync.analysis.operand_access import (
    NO_ELEMENT_OPS,
    WRITE_OPS,
    access,
    access_box,
    reads_im2col,
)
from tilesync.analysis.operand_regions import OperandLayout, layout_for
from tilesync.analysis.stage_graph import StageGraph
from tilesync.analysis.tile_order import kernel_order_error
from tilesync.contract import (
    BLOCKS_PER_SM_ATTR,
    EPOCH,
    EPOCH_COUNTER,
    FUSED_INTO_ATTR,
    PROGRESS_ATTR,
    START_FLAG,
    VERIFIED_ATTR,
    WAIT_BLOCKS,
    WAIT_FLAG,
    WAIT_KERNEL,
    WAIT_TARGET,
    Role,
    RoleKind,
    VerifyError,
    most_blocks_per_sm,
)
from tilesync.dialects import sync
from tilesync.dialects.kernel_args import lookup_kernel, role_arguments
from tilesync.dialects.locations import OpDiagnostic, diagnostic
from tilesync.dialects.sync import ENUMERATION_LIMIT
from tilesync.dialects.tile import BULK_READS, BULK_WRITES, FenceProxyAsyncOp, TensorMapType

PASS = "sync-verify"


def kernel_roles(func: gpu.FuncOp) -> dict[SSAValue, Role]:
    """The values of `func` that play a sync role: its role arguments, and the epoch loaded
    from the device word that sync-epoch-in-memory passes instead of the epoch itself (so
    the proof holds before and after that pass)."""
    roles: dict[SSAValue, Role] = dict(role_arguments(func))
    for counter in [arg for arg, role in roles.items() if role == EPOCH_COUNTER]:
        loads = [use.operation for use in counter.uses]
        # the epoch is the word at [0] as the host's bump left it: a kernel that writes the
        # counter (or passes it on) may compare against anything
        if not all(isinstance(op, memref.LoadOp) for op in loads):
            continue
        for op in loads:
            if all(constant_index(i) == 0 for i in op.indices):
                roles[op.res] = EPOCH
    return roles



def waits_for_every_block(func: gpu.FuncOp) -> bool:
    """Whether wait-kernel `func` spins, on every path, until its flag holds one post of every
    producer block of the run: a sync.wait at the top of its body (not in a branch) on flag[0],
    one post per count, for the target the host passes (epoch × producer blocks) or, after
    sync-epoch-in-memory, the epoch it loads times the producer blocks passed. Anything else
    may end before the producer is dispatched, or never."""
    roles = kernel_roles(func)
    for op in func.body.blocks.first.ops:  # type: ignore[union-attr]
        if not isinstance(op, sync.WaitOp) or roles.get(op.sems) != WAIT_FLAG or \
                op.unless is not None or len(op.tile) != 1 or op.policy.posts.data != 1:
            continue
        if constant_index(op.tile[0]) != 0 or op.policy.sem_map.data.eval([0], []) != (0,):
            continue
        target = op.epoch.owner
        if roles.get(op.epoch) == WAIT_TARGET or (isinstance(target, arith.MuliOp) and {
                roles.get(target.lhs), roles.get(target.rhs)} == {EPOCH, WAIT_BLOCKS}):
            return True
    return False


DEFAULT_LIMIT = 1 << 20  # tiles per stage checked exhaustively
# Abstract-execution steps of one pass before it refuses (ops run, in any batch of tiles): a few
# seconds; the largest MLP program of the bench (GPT-3, M = 2048, its wgmma GEMMs in RowSync
# with PDL) takes 4,505, its TMA GEMMs 1,771, with or without WAITS_PER_STEP's charge.
DEFAULT_STEPS = 150_000
# A read's check compares it with every wait its tile made so far: a step per this many waits
# compared, so that a loop of thousands of distinct waits (quadratic to check) runs out of steps
# in seconds (a fuzzed 65,536-iteration loop had run for minutes).
WAITS_PER_STEP = 64
_FEW_POINTS = 16  # forall boxes up to this many points are enumerated point by point
STEPS_HINT = ("sync-verify{steps=N} allows more; limit=N checks only the boundary tiles of "
              "grids above N tiles")


def refusal(op: Operation, message: str) -> OpDiagnostic:
    """sync-verify refuses the program at `op`: a VerifyError for the user."""
    return diagnostic(PASS, op, message, VerifyError)


def _tile_of(tiles: np.ndarray, i: int) -> Tile:
    return tuple(int(c) for c in tiles[i])


def _at(x: Scalar, i: int) -> int:
    return int(x[i]) if isinstance(x, np.ndarray) and x.ndim else int(x)


def _linear(coords: Sequence[Scalar], grid: Sequence[int]) -> Scalar:
    index: Scalar = 0
    for c, extent in zip(coords, grid):
        index = index * extent + np.minimum(np.maximum(c, 0), extent - 1)
    return index


# ---------------------------------------------------------------------------------------------
# Producers: which semaphore each tile posts, how many posts each semaphore receives
# ---------------------------------------------------------------------------------------------


@dataclass
class ProducerFacts:
    grid: tuple[int, ...]
    semaphore: np.ndarray  # per linear tile id
    counts: np.ndarray  # posts per launch, per semaphore index
    start_flag: bool  # every block posts its start flag once, on every path
    exact: bool

    def received(self, semaphore: Scalar) -> Scalar:
        """Posts per launch that `semaphore` receives (0 past the array)."""
        s = np.asarray(semaphore)
        if not len(self.counts):
            return np.zeros_like(s)
        inside = (s >= 0) & (s < len(self.counts))
        return np.where(inside, self.counts[np.clip(s, 0, len(self.counts) - 1)], 0)


class Settled(Exception):
    """Every tile of a batch has met its first failure: running it on can record nothing."""


class CheckedRun(BatchRun):
    """A batch run that keeps each tile's first failure (`failures`) and stops (`Settled`)
    once every tile has one, so a kernel that fails at its first read is refused there, not
    after a long loop has run out the step budget."""

    def __init__(self, func: gpu.FuncOp, tiles: np.ndarray, grid: Sequence[int],
                 block: Sequence[int]):
        super().__init__(func, tiles, grid, block)
        self.failed = np.zeros(self.size, bool)
        self.failures: list[Failure] = []

    def fail(self, bad: np.ndarray, op: Operation, message: Callable[[int], str]) -> None:
        """Tiles `bad` (none failed before) fail at `op`."""
        self.failed |= bad
        self.failures.append(Failure(bad, op, message))
        if self.failed.all():
            raise Settled()


class ProducerRun(CheckedRun):
    """Records every sync.post: (op, role, semaphore, definite); checks that every store to
    an output its consumers read lies in the tile's region of it (`outputs`: argument →
    layout), so the producer-tile → region map the consumers' loads are checked with holds.
    Loops without a post run abstractly: a producer's waits are the consumer run's to check
    (a fused attention's loop over key blocks, unrolled, cost most of its proof). A store to
    such an output that runs after a post of the stage's semaphores, on any path the run has
    taken so far, is refused: a consumer's acquire could see the post before the data (the
    post releases the stores before it, not after)."""

    UNROLLED = (sync.PostOp,)

    def __init__(self, func: gpu.FuncOp, tiles: np.ndarray, stage: sync.StageOp,
                 roles: dict[SSAValue, Role], outputs: dict[SSAValue, OperandLayout]):
        super().__init__(func, tiles, stage.grid_shape, stage.block_shape)
        self.name = stage.sym_name.data
        self.roles = roles
        self.outputs = outputs
        self.writers = {use.operation for arg in outputs for use in arg.uses}
        self.posts: list[tuple[sync.PostOp, Role, Scalar, bool]] = []
        # the first post of the stage's semaphores the run has met (branches that may not run
        # included, in program order): a store to an output after it is refused
        self.posted: sync.PostOp | None = None
        # the first bulk tensor store to an output: the post after it must wait for its writes
        # and order them before its release (`async_proxy`)
        self.bulk_stored: Operation | None = None
        # the highest thread index that stores to an output: a `threads N` post orders only
        # the stores of the block's first N threads before its release
        self.last_writer = -1
        self.first_write: Operation | None = None

    def on_post(self, op: sync.PostOp, state: object, definite: bool) -> None:
        role = self.roles.get(op.sems)
        coords = self.exact_values(op.tile)
        if role is None or coords is None:
            raise Unproven(op, "cannot tell which semaphore this sync.post reaches")
        semaphore = affine_exact(op.policy.sem_map.data.results[0], coords, (), op)
        self.posts.append((op, role, semaphore, definite))
        if role == Role.semaphores(self.name) and self.posted is None:
            self.posted = op
            if op.threads is not None and self.last_writer >= op.threads.value.data:
                assert self.first_write is not None
                raise Unproven(op, f"thread {self.last_writer} stores to the tile this "
                                   f"sync.post releases ('{self.first_write.name}'), but a "
                                   f"`threads {op.threads.value.data}` post orders only the "
                                   f"stores of the block's first {op.threads.value.data} "
                                   f"threads before its release")
        if role == Role.semaphores(self.name) and self.bulk_stored is not None and \
                op.async_proxy is None:
            self._refuse_generic_post(op, self.bulk_stored)

    def slice_roots(self) -> set[Operation]:
        return self.writers

    def on_op(self, op: Operation, state: object) -> None:
        if op not in self.writers:
            return
        who = ""  # the refusal names the producer and tile
        for value, layout in self.outputs.items():
            if value not in op.operands or reads_im2col(op, value):
                continue  # an im2col copy reads (an input of the output's type, say)
            if access(op, value, who) is None:
                continue
            if not isinstance(op, WRITE_OPS):
                continue  # a read of its own output
            if self.posted is not None:
                self._refuse_late_store(op, value)
                continue
            writers = range(math.prod(self.block)) if self.threads is None else self.threads
            if max(writers, default=-1) > self.last_writer:
                self.last_writer, self.first_write = max(writers), op
            if isinstance(op, BULK_WRITES) and self.bulk_stored is None:
                self.bulk_stored = op
            box = access_box(self, op, value, value.index, who)  # type: ignore[attr-defined]
            assert box is not None
            lo, hi = box
            coords = [self.tiles[:, d] for d in range(self.tiles.shape[1])]
            bad = ~np.broadcast_to(layout.contains(coords, lo, hi), (self.size,)) & ~self.failed
            if not bad.any():
                continue

            def message(i: int, lo: list[Scalar] = lo, hi: list[Scalar] = hi,
                        layout: OperandLayout = layout, value: SSAValue = value) -> str:
                tile = _tile_of(self.tiles, i)
                box = ", ".join(f"[{_at(a, i)}, {_at(b, i)}]" for a, b in zip(lo, hi))
                return (f"producer tile {tile} of @{self.name}: '{op.name}' writes argument "
                        f"{value.index} at {box}, outside {layout.region(tile)}, the region "
                        f"of it its consumers wait for tile {tile} to have written (the "
                        f"stage's tile {layout.tile} over the operand's layout)")

            self.fail(bad, op, message)

    def _refuse_generic_post(self, post: sync.PostOp, store: Operation) -> None:
        self._refuse_every_tile(post, lambda tile: (
            f"producer tile {tile} of @{self.name}: its '{store.name}' writes the tile in the "
            f"async proxy, and this sync.post neither waits for those writes nor orders them "
            f"before its release: mark it async_proxy"))

    def _refuse_late_store(self, op: Operation, value: SSAValue) -> None:
        self._refuse_every_tile(op, lambda tile: (
            f"producer tile {tile} of @{self.name}: '{op.name}' writes argument {value.index} "
            f"(read by its consumers) after the tile's sync.post: a consumer could see the "
            f"post before the data (post after the tile's last store)"))

    def _refuse_every_tile(self, op: Operation, message: Callable[[Tile], str]) -> None:
        """`op` fails for every tile of the batch not failed yet."""
        bad = ~self.failed
        if bad.any():
            self.fail(bad, op, lambda i: message(_tile_of(self.tiles, i)))


# ---------------------------------------------------------------------------------------------
# Consumers: waits, obligations, reads
# ---------------------------------------------------------------------------------------------


def _under_probe_branch(op: Operation) -> bool:
    """Whether `op` runs in a branch of an scf.if whose condition a sync.probe's answer
    decides (directly or through the ops that compute it)."""
    parent = op.parent_op()
    while parent is not None:
        if isinstance(parent, scf.IfOp) and _derives_from_probe(parent.cond):
            return True
        parent = parent.parent_op()
    return False


def _derives_from_probe(value: SSAValue) -> bool:
    seen: set[SSAValue] = set()
    pending = [value]
    while pending:
        v = pending.pop()
        if v in seen or not isinstance(v, OpResult):
            continue
        seen.add(v)
        if isinstance(v.op, sync.ProbeOp):
            return True
        if not v.op.regions:  # a value a loop or branch yields is not followed
            pending.extend(v.op.operands)
    return False


def _reshaped(producer: object, consumer: object) -> bool:
    """Whether memrefs of static shapes and the same rank view one buffer with rows of other
    lengths (8x8 read as 16x4): an index names different elements in each. A first dimension
    alone may differ (the rows are the same, one view has more of them)."""
    if not (isinstance(producer, MemRefType) and isinstance(consumer, MemRefType)):
        return False
    shapes = producer.get_shape(), consumer.get_shape()
    if len(shapes[0]) != len(shapes[1]) or min((*shapes[0], *shapes[1]), default=0) < 0:
        return False
    return shapes[0][1:] != shapes[1][1:]


def _same_buffer(producer: object, consumer: object) -> bool:
    """Whether a producer's argument of type `producer` can be the buffer a consumer reads as
    `consumer`: the same type, or memrefs of the same elements, as many where both shapes are
    static, or a dynamic shape on either side (which may be any of them); a tensor map on
    either side (TMA copies of a global tensor) may be any buffer of its elements."""
    if producer == consumer:
        return True
    if isinstance(producer, TensorMapType | MemRefType) and \
            isinstance(consumer, TensorMapType | MemRefType) and \
            TensorMapType in (type(producer), type(consumer)):
        return producer.element_type == consumer.element_type
    if not (isinstance(producer, MemRefType) and isinstance(consumer, MemRefType)):
        return False
    if producer.element_type != consumer.element_type:
        return False
    sizes = [producer.get_shape(), consumer.get_shape()]
    return any(min(shape, default=0) < 0 for shape in sizes) or \
        math.prod(sizes[0]) == math.prod(sizes[1])


@dataclass(frozen=True)
class Waited:
    role: Role
    semaphore: Scalar  # per tile of the batch (NO_SEMAPHORE: that tile waited for none)
    posts: int
    async_proxy: bool = False
    """Whether bulk copies after it are ordered after its acquire too (an `async_proxy` wait,
    or a `tile.fence_proxy_async global` since): the async proxy does not see the generic
    proxy's acquire (DESIGN.md, memory model)."""
    through_barrier: bool = False  # another thread's wait, passed on by a block barrier


@dataclass(frozen=True)
class Need:
    """Producer tile `coords` of dependency `dep` must have been waited for, where `valid`."""

    dep: int
    coords: tuple[Scalar, ...]
    valid: Scalar


@dataclass(frozen=True)
class Probed:
    """The semaphores a sync.probe tested: `semaphores[p]` and `valid[p]` (a point outside
    the clipped grid tests nothing) per point p, one column per tile of the batch."""

    role: Role
    posts: int
    semaphores: np.ndarray
    valid: np.ndarray

    def tests(self, semaphore: Scalar) -> np.ndarray:
        """Per tile of the batch: whether the probe tested `semaphore`."""
        return np.any((self.semaphores == np.asarray(semaphore)) & self.valid, axis=0)


@dataclass
class State:
    """What the blocks of a batch have definitely done so far on the current path."""

    waited: dict[tuple, Waited] = field(default_factory=dict)
    in_scope: dict[int, list[Need]] = field(default_factory=dict)  # operand → load hooks
    # the waits of some threads (a branch on the thread index), which cover the block's loads
    # after the next block barrier: their acquire, then bar.sync (cuSync's wait_till)
    before_barrier: dict[tuple, Waited] = field(default_factory=dict)

    def copy(self) -> State:
        return State(dict(self.waited), {k: list(v) for k, v in self.in_scope.items()},
                     dict(self.before_barrier))


@dataclass
class Failure:
    """Tiles `mask` fail at `op`; `message(i)` says why for tile i of the batch."""

    mask: np.ndarray
    op: Operation
    message: Callable[[int], str]


class ConsumerRun(CheckedRun):
    """Coverage at the load hooks, the waits in force at every access of a produced operand,
    and each tile's first failure (`failures`), for the tiles of one batch."""

    def __init__(self, verifier: Verifier, func: gpu.FuncOp, tiles: np.ndarray,
                 stage: sync.StageOp, roles: dict[SSAValue, Role]):
        super().__init__(func, tiles, stage.grid_shape, stage.block_shape)
        self.v = verifier
        self.stage_name = stage.sym_name.data
        self.roles = roles
        self.deps = verifier.deps[self.stage_name]
        args = func.body.blocks.first.args  # type: ignore[union-attr]
        self.operand_args = {args[d.operand.data]: d.operand.data for d in self.deps
                             if d.operand.data < len(args)}
        self.readers = {use.operation for arg in self.operand_args for use in arg.uses}
        self.proxy_fences = {o for o in func.walk() if isinstance(o, FenceProxyAsyncOp)
                             and o.global_memory is not None}
        self.barriers = {o for o in func.walk() if isinstance(o, gpu.BarrierOp)}
        # the waits grouped by role, for the state.waited they were made of (which only grows)
        self._groups: tuple | None = None
        self.probes: dict[SSAValue, Probed] = {}  # a probe's answer → what it tested
        # the `single_thread` waits in a branch on the thread index (role, semaphore): they
        # order their own thread's loads only, which a refusal elsewhere should say
        self.thread_waits: list[tuple[Role, Scalar]] = []

    def copy_state(self, state: State) -> State:
        return state.copy()

    def enter_iteration(self, state: State, outer: State) -> None:
        # load hooks of an earlier iteration do not cover this iteration's loads
        state.in_scope = {k: list(v) for k, v in outer.in_scope.items()}

    def leave_loop(self, state: State, outer: State) -> None:
        state.in_scope = outer.in_scope

    def tile(self, i: int) -> Tile:
        return _tile_of(self.tiles, i)

    # -- synchronization -------------------------------------------------------------------
    def on_wait(self, op: sync.WaitOp, state: State, definite: bool) -> None:
        # A wait that may not run is on a copied state (see run_region_copy): it covers the
        # loads after it on its own path only.
        role = self.roles.get(op.sems)
        coords = self.exact_values(op.tile)
        if role is None or coords is None:
            # it covers nothing, and nothing shows that it ever passes
            raise Unproven(op, "cannot tell which semaphore this sync.wait waits on: it may "
                               "never pass")
        if self.roles.get(op.epoch) != EPOCH:
            raise Unproven(op, "sync.wait does not compare against the kernel's epoch")
        semaphore = affine_exact(op.policy.sem_map.data.results[0], coords, (), op)
        self.refuse_out_of_bounds(op, role, semaphore, True)
        posts = op.policy.posts.data
        if op.unless is not None:
            # skipped where the probe answered ready: it covers its semaphore only if the
            # probe's acquire loads tested that semaphore, against the same target
            probed = self.probes.get(op.unless)
            tested = np.broadcast_to(
                probed.tests(semaphore) if probed is not None and probed.role == role
                and probed.posts == posts else False, (self.size,))
            if not tested.all():
                i = int(np.flatnonzero(~tested)[0])
                raise Unproven(op, f"consumer tile {self.tile(i)} of @{self.stage_name} skips "
                                   f"this wait on semaphore {_at(semaphore, i)} of {role} "
                                   f"`unless` a sync.probe that did not test that semaphore: "
                                   f"its loads would not be ordered after the tile's post")
        if self.threads is not None:
            self.thread_waits.append((role, semaphore))
        same = semaphore.tobytes() if isinstance(semaphore, np.ndarray) else int(semaphore)
        proxy = op.async_proxy is not None
        state.waited.setdefault((role, posts, same, proxy),
                                Waited(role, semaphore, posts, proxy))

    def refuse_out_of_bounds(self, op: Operation, role: Role, semaphore: Scalar,
                             valid: Scalar) -> None:
        """A wait or probe on a semaphore past the end of its stage's buffer reads another
        buffer's words (the runtime allocates `StageOp.semaphores`)."""
        stage = self.v.graph.stages.get(role.stage) if role.kind == RoleKind.SEMAPHORES \
            else None
        if stage is None:
            return
        size = stage.semaphores[0]
        bad = np.broadcast_to(valid & ((semaphore < 0) | (semaphore >= size)),
                              np.broadcast_shapes(np.shape(semaphore), np.shape(valid)))
        if bad.any():
            where = np.argwhere(bad)[0]
            i = int(where[-1]) if bad.ndim else 0
            index = int(np.asarray(semaphore)[tuple(where)]) if np.ndim(semaphore) else \
                int(semaphore)
            raise Unproven(op, f"consumer tile {self.tile(i)} of @{self.stage_name} "
                               f"{'probes' if isinstance(op, sync.ProbeOp) else 'waits on'} "
                               f"semaphore {index} of @{role.stage}, whose buffer has {size}: "
                               f"it reads past its end")

    def leave_thread_side(self, side: State, state: State) -> None:
        # a bulk copy after the barrier needs its own proxy fence: the waits stay generic
        for key, w in side.waited.items():
            if key not in state.waited:
                role, posts, same, _ = key
                state.before_barrier.setdefault((role, posts, same, False),
                                                replace(w, async_proxy=False,
                                                        through_barrier=True))
        for key, w in side.before_barrier.items():
            state.before_barrier.setdefault(key, w)

    def on_block_barrier(self, state: State) -> None:
        """A gpu.barrier of the whole block: the waits some threads made before it cover the
        loads of every thread after it."""
        for key, w in state.before_barrier.items():
            state.waited.setdefault(key, w)
        state.before_barrier.clear()

    def on_proxy_fence(self, state: State) -> None:
        """`tile.fence_proxy_async global`: the waits before it order bulk copies too."""
        for (role, posts, same, proxy), w in list(state.waited.items()):
            if not proxy:
                state.waited.setdefault((role, posts, same, True),
                                        Waited(w.role, w.semaphore, w.posts, True))

    def on_probe(self, op: sync.ProbeOp, state: State) -> None:
        self.probes.pop(op.ready, None)
        role = self.roles.get(op.sems)
        coords = self.exact_values(op.tile)
        if role is None or coords is None or self.roles.get(op.epoch) != EPOCH:
            return  # tests nothing known: a wait skipped by it is refused
        semaphores, valid = probe_semaphores(op, coords, self.size)
        self.refuse_out_of_bounds(op, role, semaphores, valid)
        self.probes[op.ready] = Probed(role, op.policy.posts.data, semaphores, valid)
        if op.until_ready is not None:  # it waited for every point: each one is waited for
            posts = op.policy.posts.data
            # points that name the same semaphore for every tile are one wait (65,536 points
            # of a row's semaphore: four waits, not 65,536)
            every = np.unique(np.where(valid, semaphores, NO_SEMAPHORE), axis=0)
            for waited in every:
                state.waited.setdefault((role, posts, waited.tobytes(), False),
                                        Waited(role, waited, posts))

    def on_load_point(self, op: sync.LoadPointOp, state: State) -> None:
        operand = op.operand.data
        coords = self.exact_values(op.tile)
        if coords is None:
            raise Unproven(op, "cannot evaluate the tile of this sync.load_point")
        step: Value = None
        if op.step is not None:
            step = self.value(op.step)
            if step is not None and not exact(step):
                step = None  # unknown step: the whole tile must be covered
        fixed = None if op.step is None or step is None else step[0]
        needs: list[Need] = []
        for index, dep in enumerate(self.deps):
            if dep.operand.data != operand:
                continue
            if fixed is not None and dep.tiles_map.num_symbols == 0:
                needs += self.dependency_needs(index, coords, None)
            else:
                needs += self.dependency_needs(index, coords, fixed)
        state.in_scope.setdefault(operand, []).extend(needs)
        self.check(op, state, needs, f"sync.load_point operand {operand}")

    def dependency_needs(self, index: int, coords: Sequence[Scalar],
                         fixed: Scalar | None) -> list[Need]:
        """The producer tiles dependency `index` reads from consumer tiles `coords` (with
        s0 = `fixed` where given; nothing where it lies outside the forall range)."""
        dep = self.deps[index]
        ranges = list(dep.ranges)
        in_range: Scalar = True
        if fixed is not None and ranges:
            lo, hi = ranges[0]
            in_range = (fixed >= lo) & (fixed < hi)
            ranges[0] = (0, 1)
        grid = self.v.graph.producer_of(dep).grid_shape
        needs = []
        for syms in self._points_in_grid(dep, ranges, coords, fixed, in_range, grid):
            values: list[Scalar] = list(syms)
            if fixed is not None and values:
                values[0] = fixed
            produced = tuple(affine_exact(e, coords, values, dep)
                             for e in dep.tiles_map.results)
            valid: Scalar = in_range
            if dep.clipped is not None:
                for c, extent in zip(produced, grid):
                    valid = valid & (c >= 0) & (c < extent)
            if not np.any(valid):  # no tile of the batch reads there: nothing to cover
                continue
            needs.append(Need(index, produced, valid))
        return needs

    @staticmethod
    def _points_in_grid(dep: sync.DependencyOp, ranges: list[tuple[int, int]],
                        coords: Sequence[Scalar], fixed: Scalar | None, in_range: Scalar,
                        grid: Sequence[int]) -> list[tuple[int, ...]]:
        """The forall points of `ranges` at which some tile of the batch reads inside the
        producer grid: all of them, but for a clipped dependency only those (the box's map
        evaluated at every point at once, a wide clipped box mostly falling outside)."""
        points = list(sync.box_points(ranges))
        if dep.clipped is None or len(points) <= _FEW_POINTS:
            return points
        box = np.array(points, dtype=np.int64).reshape(len(points), -1)
        values: list[Scalar] = [box[:, j:j + 1] for j in range(box.shape[1])]
        if fixed is not None and values:
            values[0] = np.asarray(fixed)[None, ...] if np.ndim(fixed) else fixed
        valid: Scalar = np.asarray(in_range)[None, ...] if np.ndim(in_range) else in_range
        for e, extent in zip(dep.tiles_map.results, grid):
            c = affine_exact(e, coords, values, dep)
            valid = valid & (c >= 0) & (c < extent)
        valid = np.broadcast_to(valid, np.broadcast_shapes(np.shape(valid), (len(points), 1)))
        keep = np.any(valid.reshape(len(points), -1), axis=1)
        return [point for point, kept in zip(points, keep) if kept]

    # -- reads -----------------------------------------------------------------------------
    def slice_roots(self) -> set[Operation]:
        return self.readers | self.proxy_fences | self.barriers

    def on_op(self, op: Operation, state: State) -> None:
        if op in self.proxy_fences:
            self.on_proxy_fence(state)
            return
        if op in self.barriers:
            if self.threads is None:  # in a branch on the thread index it is no block barrier
                self.on_block_barrier(state)
            return
        if op not in self.readers or isinstance(op, (*sync.HOOK_OPS, *NO_ELEMENT_OPS)):
            return
        used = [(v, self.operand_args[v]) for v in op.operands if v in self.operand_args]
        if not used:
            return
        all_needed = {}
        for _value, n in used:
            needed = state.in_scope.get(n)
            if not needed:
                needed = []
                for index, dep in enumerate(self.deps):
                    if dep.operand.data == n:
                        needed += self.dependency_needs(
                            index, [self.tiles[:, d] for d in range(self.tiles.shape[1])], None)
                what = f"'{op.name}' reads operand {n} with no sync.load_point before it"
            else:
                what = f"'{op.name}' reads operand {n}"
            self.check(op, state, needed, what)
            all_needed[n] = needed
        self.check_region(op, state, used)
        if isinstance(op, BULK_READS):
            self.check_proxy(op, state, all_needed)

    def check_region(self, op: Operation, state: State, used: list[tuple[SSAValue, int]]
                     ) -> None:
        for value, n in used:
            box = access_box(self, op, value, n, f"consumer @{self.stage_name}")
            if box is None:
                continue
            lo, hi = box
            for index, dep in enumerate(self.deps):
                if dep.operand.data != n:
                    continue
                layout = self.v.layouts[self.stage_name][index]
                if isinstance(layout, str):
                    raise Unproven(op, f"consumer @{self.stage_name}: '{op.name}' reads "
                                       f"operand {n}, but {layout}")
                needs = [Need(index, coords, valid) for coords, valid in layout.tiles(lo, hi)]
                self.check(op, state, needs, f"'{op.name}' reads operand {n}", (lo, hi, layout))

    def check_proxy(self, op: Operation, state: State, needed: dict[int, list[Need]]) -> None:
        """A bulk copy reads in the async proxy: the waits that cover it must be ordered
        before it for that proxy too (`Waited.async_proxy`), not for the generic one only."""
        waited = [w for w in state.waited.values() if w.async_proxy]
        groups = self._by_role(waited)
        for n, needs in needed.items():
            bad = np.zeros(self.size, bool)
            for need in needs:
                _, _, enough = self._status(need, groups)
                bad |= np.asarray(need.valid, bool) & ~enough
            bad &= ~self.failed
            if not bad.any():
                continue
            fix = ("mark the wait async_proxy (or put a tile.fence_proxy_async global after it "
                   "in the thread issuing the copy)")
            if any(w.through_barrier for w in state.waited.values()):
                fix = ("a wait of another thread reaches it through a gpu.barrier, which "
                       "orders the generic proxy only: put a tile.fence_proxy_async global "
                       "after the barrier in the thread issuing the copy")
            self.fail(bad, op, lambda i, n=n, fix=fix: (
                f"consumer tile {self.tile(i)} of @{self.stage_name}: '{op.name}' reads "
                f"operand {n} in the async proxy, which the waits' generic acquire does not "
                f"order: {fix}"))

    # -- checking ----------------------------------------------------------------------------
    def check(self, op: Operation, state: State, needs: list[Need], what: str,
              region: tuple[list[Scalar], list[Scalar], OperandLayout] | None = None) -> None:
        if not needs:
            return
        cached = self._groups
        if cached is not None and cached[0] is state.waited and cached[1] == len(state.waited):
            waited, groups = cached[2], cached[3]
        else:
            waited = list(state.waited.values())
            groups = self._by_role(waited)
            self._groups = (state.waited, len(state.waited), waited, groups)
        if self.budget is not None:  # each need is compared with every wait so far
            self.budget.spend(op, len(needs) * len(waited) // WAITS_PER_STEP)
        bad = np.zeros(self.size, bool)
        for need in needs:
            _, _, enough = self._status(need, groups)
            bad |= np.asarray(need.valid, bool) & ~enough
        bad &= ~self.failed
        if not bad.any():
            return
        self.fail(bad, op, lambda i: self._explain(i, needs, waited, what, region, op))

    def _by_role(self, waited: list[Waited]) -> dict[Role, tuple[np.ndarray, np.ndarray]]:
        """The waits of each role: their semaphores (waits x tiles) and posts (waits x 1)."""
        found: dict[Role, list[Waited]] = {}
        for w in waited:
            found.setdefault(w.role, []).append(w)
        groups = {}
        for role, ws in found.items():
            semaphores = np.empty((len(ws), self.size), np.int64)
            for row, w in zip(semaphores, ws, strict=True):
                row[...] = w.semaphore
            groups[role] = (semaphores, np.array([[w.posts] for w in ws]))
        return groups

    def _status(self, need: Need, groups: dict[Role, tuple[np.ndarray, np.ndarray]]
                ) -> tuple[Scalar, Scalar, np.ndarray]:
        """(semaphore, posts it receives, covered) of a need, per tile of the batch."""
        dep = self.deps[need.dep]
        producer = dep.producer.root_reference.data
        facts = self.v.producers[producer]
        semaphore = facts.semaphore[_linear(need.coords, facts.grid)]
        count = facts.received(semaphore)
        group = groups.get(Role.semaphores(producer))
        if group is None:
            return semaphore, count, np.zeros(self.size, bool)
        semaphores, posts = group
        enough = ((semaphores == semaphore) & (posts >= count)).any(axis=0)
        return semaphore, count, enough

    def _explain(self, i: int, needs: list[Need], waited: list[Waited], what: str,
                 region: tuple[list[Scalar], list[Scalar], OperandLayout] | None,
                 reader: Operation) -> str:
        """Why tile i fails: its first uncovered producer tile, in (dependency, tile) order."""
        failing = []
        groups = self._by_role(waited)
        for need in needs:
            if not _at(need.valid, i):
                continue
            semaphore, count, enough = self._status(need, groups)
            if enough[i]:
                continue
            tile = tuple(_at(c, i) for c in need.coords)
            failing.append((need.dep, tile, _at(semaphore, i), _at(count, i)))
        index, producer_tile, semaphore, count = min(failing)
        dep = self.deps[index]
        producer = dep.producer.root_reference.data
        role = Role.semaphores(producer)
        tile = self.tile(i)
        if region is not None:
            lo, hi, layout = region
            box = ", ".join(f"[{_at(a, i)}, {_at(b, i)}]" for a, b in zip(lo, hi))
            undeclared = "" if producer_tile in tiles_read(dep, tile) else \
                "a tile its sync.dependency does not declare; "
            where = (f"consumer tile {tile} of @{self.stage_name}: {what} at {box}, where "
                     f"producer tile {producer_tile} of @{producer} wrote "
                     f"{layout.region(producer_tile)} ({undeclared}semaphore {semaphore})")
        else:
            where = (f"consumer tile {tile} of @{self.stage_name}: {what}, which reads "
                     f"producer tile {producer_tile} of @{producer} (semaphore {semaphore})")
        posts = [w.posts for w in waited if w.role == role and _at(w.semaphore, i) == semaphore]
        if not posts:
            hint = ""
            if any(r == role and _at(s, i) == semaphore for r, s in self.thread_waits):
                hint = (" (the `single_thread` wait on it, in a branch on the thread index, "
                        "covers the block's loads only after a gpu.barrier of the whole block "
                        "that follows it)")
            elif _under_probe_branch(reader):
                hint = (" (a sync.probe's answer orders reads only as the `unless` of the "
                        "sync.wait it lets the block skip)")
            return f"{where}, but no wait on that semaphore precedes it{hint}"
        return (f"{where}, but the wait expects {max(posts)} posts per launch and the semaphore "
                f"receives {count}: it may pass before the tile is stored")

    def check_never_passing(self, state: State, stage: sync.StageOp) -> None:
        """A wait for more posts than its semaphore receives never passes."""
        for w in state.waited.values():
            producer = w.role.stage
            facts = self.v.producers.get(producer) if producer else None
            count = facts.received(w.semaphore) if facts is not None else np.zeros(self.size,
                                                                                   int)
            bad = np.broadcast_to((w.posts > count) & (np.asarray(w.semaphore) != NO_SEMAPHORE),
                                  (self.size,)) & ~self.failed
            if not bad.any():
                continue
            owner = f"@{producer}" if producer else f"'{w.role}'"

            def message(i: int, w: Waited = w, count: Scalar = count, owner: str = owner) -> str:
                return (f"consumer tile {self.tile(i)} of @{self.stage_name} waits for "
                        f"{w.posts} posts per launch on semaphore {_at(w.semaphore, i)} of "
                        f"{owner}, which receives {_at(count, i)}: the wait never passes")

            self.fail(bad, stage, message)


# ---------------------------------------------------------------------------------------------
# The pass
# ---------------------------------------------------------------------------------------------


def _boundary_tiles(grid: Sequence[int]) -> list[Tile]:
    axes = [sorted({c for c in (0, 1, n - 2, n - 1) if 0 <= c < n}) for n in grid]
    points: list[Tile] = [()]
    for axis in axes:
        points = [(*p, c) for p in points for c in axis]
    return points


@dataclass
class Verifier:
    module: ModuleOp
    graph: StageGraph
    limit: int
    sms: int
    budget: StepBudget | None = None
    producers: dict[str, ProducerFacts] = field(default_factory=dict)
    deps: dict[str, list[sync.DependencyOp]] = field(default_factory=dict)
    layouts: dict[str, list[OperandLayout | str]] = field(default_factory=dict)

    def tiles(self, grid: Sequence[int]) -> tuple[np.ndarray, bool]:
        exact = math.prod(grid) <= self.limit
        tiles = list(grid_tiles(grid)) if exact else _boundary_tiles(grid)
        return np.array(tiles, dtype=np.int64).reshape(len(tiles), len(grid)), exact

    # -- posts -------------------------------------------------------------------------------
    def kernel_of(self, name: str) -> Operation:
        """The stage's kernel, whose barriers every thread they wait for reaches (a block
        stuck at one holds its SM slot, and the waits that need it never end)."""
        stage = self.graph.stages[name]
        func = lookup_kernel(self.module, stage.kernel, f"sync.stage @{name}", stage)
        divergent = divergent_barrier(func, tuple(stage.block_shape), roles_of_sync_ops=True)
        if divergent is not None:
            raise refusal(divergent[0], f"stage @{name}: {divergent[1]}")
        return func

    def producer_posts(self, name: str) -> ProducerFacts:
        stage = self.graph.stages[name]
        func = self.kernel_of(name)
        roles = kernel_roles(func)
        role = Role.semaphores(name)
        if role not in roles.values():
            raise refusal(
                func,
                f"kernel {stage.kernel} of stage @{name} has no '{role}' parameter in its "
                f"sync.args: its consumers cannot be shown to wait on what it posts (run "
                f"sync-insert-post-wait)",
            )
        grid = stage.grid_shape
        if math.prod(grid) > ENUMERATION_LIMIT:  # the semaphore of every tile is kept
            raise refusal(stage, f"producer @{name} has {math.prod(grid)} tiles, more than "
                                 f"the {ENUMERATION_LIMIT} whose semaphores are enumerated")
        tiles, exact_ = self.tiles(grid)
        semaphore = np.zeros(math.prod(grid), dtype=np.int64)
        seen = np.zeros(math.prod(grid), dtype=bool)
        size = stage.semaphores[0]  # the runtime's buffer
        start_flag = True

        outputs = self.outputs_of(name, func, roles)

        def attempt(indices: np.ndarray) -> ProducerRun:
            run = ProducerRun(func, tiles[indices], stage, roles, outputs)
            run.budget = self.budget
            try:
                run.run(None)
            except Settled:
                pass
            except Unproven as e:
                raise refusal(e.op, f"producer @{name}, tile {_tile_of(tiles, int(indices[0]))}: "
                                    f"{e}") from e
            return run

        worst: tuple[int, Failure, int] | None = None
        for indices, run in run_batches(tiles, attempt):
            for failure in run.failures:
                i = int(np.flatnonzero(failure.mask)[0])
                if worst is None or int(indices[i]) < worst[0]:
                    worst = (int(indices[i]), failure, i)
            if worst is not None:
                continue
            first = _tile_of(tiles, int(indices[0]))
            mine = [(p, s, d) for p, r, s, d in run.posts if r == role]
            maybe = [p for p, s, d in mine if not d]
            if maybe:
                raise refusal(
                    maybe[0],
                    f"producer @{name}, tile {first}: this sync.post may or may not run; "
                    f"cannot count the posts its semaphore receives",
                )
            if len(mine) != 1:
                raise refusal(
                    mine[1][0] if mine else stage,
                    f"producer @{name}, tile {first} posts {len(mine)} times per launch; "
                    f"each tile must post exactly once",
                )
            ids = [int(x) for x in _linear([tiles[indices, d] for d in range(len(grid))], grid)] \
                if len(indices) else []
            semaphore[ids] = np.broadcast_to(mine[0][1], (len(indices),))
            seen[ids] = True
            past = [i for i in ids if semaphore[i] >= size]
            if past:
                tile = tuple(int(c) for c in np.unravel_index(past[0], grid))
                raise refusal(mine[0][0], f"producer @{name}, tile {tile} posts semaphore "
                                          f"{int(semaphore[past[0]])}, but its buffer has {size} "
                                          f"(its num_semaphores, else its policy's count, else "
                                          f"one a tile): the post writes past its end")
            flags = [(s, d) for p, r, s, d in run.posts if r == START_FLAG]
            # the wait-kernel counts one post of every block on flag[0] (the runtime's flag
            # has that one word)
            start_flag &= len(flags) == 1 and flags[0][1] and bool(np.all(flags[0][0] == 0))
        if worst is not None:
            _, failure, i = worst
            raise refusal(failure.op, failure.message(i))
        if (semaphore[seen] < 0).any():
            raise refusal(stage, f"producer @{name} posts a semaphore below index 0")

        if seen.any() and int(semaphore[seen].max()) >= ENUMERATION_LIMIT:
            raise refusal(stage, f"producer @{name} posts semaphore {int(semaphore[seen].max())}"
                                 f", beyond the {ENUMERATION_LIMIT} whose posts are counted")
        counts = np.bincount(semaphore[seen]) if seen.any() else np.zeros(0, np.int64)
        if exact_ and stage.policy is not None:
            expected = stage.policy.posts.data
            wrong = np.flatnonzero((counts != expected) & (counts > 0))
            if len(wrong):
                s = int(wrong[0])
                raise refusal(
                    stage,
                    f"semaphore {s} of @{name} receives {int(counts[s])} posts per launch but "
                    f"its policy {stage.policy.kind} expects {expected}",
                )
        if not exact_ and stage.policy is None:
            raise refusal(stage, f"producer @{name} has {math.prod(grid)} tiles, more than the "
                                 f"limit of {self.limit} run one by one, and no policy: the "
                                 f"semaphores the tiles not run post are unknown (raise "
                                 f"`limit`, or give the stage its policy)")
        if not exact_:
            # Outside the sampled tiles, trust the policy's own count (checked on the grid by
            # the stage verifier).
            for tile in grid_tiles(grid):
                lin = int(_linear(tile, grid))
                if not seen[lin]:
                    semaphore[lin] = stage.policy.semaphore_index(tile)
            full = stage.policy.posts_per_semaphore(grid)
            counts = np.zeros(max(full) + 1, np.int64)
            for s, n in full.items():
                counts[s] = n
        return ProducerFacts(tuple(grid), semaphore, counts, start_flag, exact_)

    def outputs_of(self, name: str, func: gpu.FuncOp, roles: dict[SSAValue, Role]
                   ) -> dict[SSAValue, OperandLayout]:
        """The arguments of producer `name`'s kernel that its consumers read: those of the
        type of a consumer's produced operand (the runtime binds one buffer to both), or a
        memref of its elements viewed in another shape (a fused attention writes O as B x T
        x C where the output GEMM reads B·T x C), each with the layout of its tiles over it
        (over the producer's own shape: leading dimensions collapse into rows)."""
        stage = self.graph.stages[name]
        types = []
        for dep in self.graph.outgoing(name):
            consumer = self.graph.consumer_of(dep)
            kernel = lookup_kernel(self.module, consumer.kernel,
                                   f"sync.stage @{consumer.sym_name.data}", consumer)
            args = kernel.body.blocks.first.args  # type: ignore[union-attr]
            if dep.operand.data < len(args):
                types.append(args[dep.operand.data].type)
        outputs = {}
        for arg in func.body.blocks.first.args:  # type: ignore[union-attr]
            if arg in roles or not any(_same_buffer(arg.type, t) for t in types):
                continue
            written = any(isinstance(use.operation, WRITE_OPS) for use in arg.uses)
            for t in types:
                if written and _reshaped(arg.type, t):
                    raise refusal(func, f"producer @{name} writes argument {arg.index} as "
                                        f"{arg.type}, which a consumer reads as {t}: a view of "
                                        f"the same rank but other rows maps other elements to "
                                        f"the same indices (read it in @{name}'s shape, or "
                                        f"with fewer dimensions that collapse into its rows)")
            layout = layout_for(stage, arg.type)
            if not isinstance(layout, OperandLayout):
                if not written:
                    continue  # never written here: nothing to place in a tile's region
                raise refusal(func, f"producer @{name} writes argument {arg.index}, which its "
                                    f"consumers may read, but {layout}: which tile writes "
                                    f"what cannot be checked")
            outputs[arg] = layout
        return outputs

    # -- waits -------------------------------------------------------------------------------
    def consumer_waits(self, name: str) -> bool:
        stage = self.graph.stages[name]
        func = self.kernel_of(name)
        roles = kernel_roles(func)
        deps = self.deps[name]
        args = func.body.blocks.first.args  # type: ignore[union-attr]
        for dep in deps:
            if dep.operand.data >= len(args):
                raise refusal(dep, f"kernel {stage.kernel} of stage @{name} has no argument "
                                   f"{dep.operand.data} (it takes {len(args)}): the operand "
                                   f"this dependency orders does not exist")
            role = Role.semaphores(dep.producer.root_reference.data)
            if role not in roles.values():
                raise refusal(
                    dep,
                    f"kernel {stage.kernel} of stage @{name} has no '{role}' parameter: it "
                    f"never waits for {dep.producer} (run sync-insert-post-wait)",
                )
        self.layouts[name] = [layout_for(self.graph.producer_of(d), args[d.operand.data].type)
                              for d in deps]
        tiles, exact_ = self.tiles(stage.grid_shape)

        def attempt(indices: np.ndarray) -> ConsumerRun:
            run = ConsumerRun(self, func, tiles[indices], stage, roles)
            run.budget = self.budget
            try:
                state = run.run(State())
                run.check_never_passing(state, stage)
            except Settled:
                pass
            except Unproven as e:
                raise refusal(e.op, str(e)) from e
            return run

        worst: tuple[int, Failure, ConsumerRun, int] | None = None
        for indices, run in run_batches(tiles, attempt):
            for failure in run.failures:
                for i in np.flatnonzero(failure.mask):
                    position = int(indices[i])
                    if worst is None or position < worst[0]:
                        worst = (position, failure, run, int(i))
                    break  # the first failing tile of this failure, in batch order
        if worst is not None:
            _, failure, run, i = worst
            raise refusal(failure.op, failure.message(i))
        return exact_

    # -- forward progress ----------------------------------------------------------------------
    def working_wait_kernels(self) -> set[str]:
        """Producers whose wait-kernel really works: the producer kernel posts its start
        flag once per block on every path, at flag[0], and every wait-kernel function of the
        module waits for it (`waits_for_every_block`)."""
        found = [op for op in self.module.walk()
                 if isinstance(op, gpu.FuncOp) and op.sym_name.data == WAIT_KERNEL]
        if not found or not all(waits_for_every_block(f) for f in found):
            return set()
        working = set()
        for name in self.graph.stages:
            facts = self.producers.get(name)
            if facts is not None and facts.start_flag:
                working.add(name)
        return working

    def progress(self) -> ProgressReport:
        residency: dict[str, Residency] = {}
        for name, stage in self.graph.stages.items():
            per_sm = stage.attributes.get(BLOCKS_PER_SM_ATTR)
            if isinstance(per_sm, IntegerAttr) and per_sm.value.data > 0:
                threads = math.prod(stage.block_shape)
                most = most_blocks_per_sm(threads)
                if per_sm.value.data > most:  # co-residency would be counted on slots
                    raise refusal(stage, f"stage @{name} has {BLOCKS_PER_SM_ATTR} = "
                                         f"{per_sm.value.data}, but an SM holds at most {most} "
                                         f"blocks of {threads} threads")
                residency[name] = Residency(math.prod(stage.grid_shape), per_sm.value.data)
        facts = program_facts(self.graph, residency, self.sms,
                              working_wait_kernels=self.working_wait_kernels())
        return analyze(facts)

    def forward_progress(self, name: str, report: ProgressReport) -> None:
        stage = self.graph.stages[name]
        launch = self.graph.launch(name)
        found: list[str] = []
        for producer in self.graph.producers(name):
            guarantee = report.guarantees[(producer, name)]
            if guarantee is None:
                raise refusal(
                    launch.op if launch is not None and launch.op is not None else stage,
                    f"no forward-progress guarantee for @{name} waiting on @{producer}: "
                    f"{report.reasons[(producer, name)]}",
                )
            found.append(f"@{producer}: {guarantee}")
        stage.attributes[PROGRESS_ATTR] = StringAttr("; ".join(found))


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
        self.refuse_cycles(graph)
        misordered = kernel_order_error(op)
        if misordered is not None:
            raise refusal(*misordered)
        self.refuse_fused_stages(op, graph)
        self.refuse_undeclared_semaphores(op, graph)
        verifier = Verifier(op, graph, self.limit, self.sms,
                            StepBudget(self.steps, STEPS_HINT))
        producers = {d.producer.root_reference.data for d in graph.dependencies}
        consumers = {d.consumer.root_reference.data for d in graph.dependencies}
        for name in graph.stages:
            verifier.deps[name] = graph.incoming(name)
        exact: dict[str, bool] = {}
        for name in graph.stages:
            if name in producers:
                facts = verifier.producer_posts(name)
                verifier.producers[name] = facts
                exact[name] = facts.exact
        report = verifier.progress()
        for name in graph.stages:
            if name in consumers:
                # a consumer checked against a sampled producer's tiles is sampled too
                exact[name] = verifier.consumer_waits(name) and exact.get(name, True) and \
                    all(verifier.producers[d.producer.root_reference.data].exact
                        for d in verifier.deps[name])
                verifier.forward_progress(name, report)
        # a wait-kernel whose producer's start flags were sampled (limit=) may never end, and
        # any launch of the program may come after it: nothing is proved past the sample
        if any(not verifier.producers[w.producer].exact for w in graph.wait_kernels()
               if w.producer in verifier.producers):
            exact = dict.fromkeys(exact, False)
        for step, why in report.stuck:  # a launch or wait-kernel that never ends
            where = step.op if step.op is not None else op
            raise refusal(where, f"the host plan never completes: {why}")
        for name, is_exact in exact.items():
            graph.stages[name].attributes[VERIFIED_ATTR] = StringAttr(
                "proved" if is_exact else "boundary"
            )

    @staticmethod
    def refuse_fused_stages(module: ModuleOp, graph: StageGraph) -> None:
        """A stage of a dependency whose kernel was fused into another (sync-fuse-launches,
        dataflow-persistent-kernel) has a lone return for a body: its posts and waits run in a
        branch of the fused kernel, which the proof does not follow. The pipeline verifies
        before it fuses."""
        synchronized = {d.producer.root_reference.data for d in graph.dependencies}
        synchronized |= {d.consumer.root_reference.data for d in graph.dependencies}
        for name, stage in graph.stages.items():
            if name not in synchronized:
                continue
            func = lookup_kernel(module, stage.kernel, f"sync.stage @{name}", stage)
            fused = func.attributes.get(FUSED_INTO_ATTR)
            if fused is not None:
                raise refusal(stage, f"stage @{name}'s kernel was fused into {fused} (its body "
                                     f"is a lone return): sync-verify runs before "
                                     f"sync-fuse-launches, on the stages' own kernels")

    @staticmethod
    def refuse_undeclared_semaphores(module: ModuleOp, graph: StageGraph) -> None:
        """The proof counts the posts a stage's own tiles make and the progress of declared
        dependencies only: a stage's kernel may post only its own semaphores (another's extra
        posts would let that stage's waits pass early), wait only on those of a stage its
        sync.dependency ops name (an undeclared wait has no progress guarantee), and neither
        on a memref that is no sync parameter (no one can tell who posts it)."""
        for name, stage in graph.stages.items():
            func = lookup_kernel(module, stage.kernel, f"sync.stage @{name}", stage)
            if FUSED_INTO_ATTR in func.attributes:
                continue  # no dependency (refuse_fused_stages): nothing of it to prove
            roles = kernel_roles(func)
            producers = {d.producer.root_reference.data for d in graph.incoming(name)}
            for sync_op in func.walk():
                if not isinstance(sync_op, sync.PostOp | sync.WaitOp | sync.ProbeOp):
                    continue
                role = roles.get(sync_op.sems)
                what = "posts" if isinstance(sync_op, sync.PostOp) else "waits on"
                if role is None:
                    raise refusal(sync_op, f"stage @{name}'s kernel {what} a memref that is "
                                           f"no sync parameter ('sems:@stage' in its "
                                           f"sync.args): no one can tell who posts it")
                if role.kind != RoleKind.SEMAPHORES:
                    continue  # a start or wait flag: the progress checks follow those
                if isinstance(sync_op, sync.PostOp) and role.stage != name:
                    raise refusal(sync_op, f"stage @{name}'s kernel posts the semaphores of "
                                           f"@{role.stage} ('{role}'): only @{role.stage}'s "
                                           f"tiles post them, and every wait on them counts "
                                           f"@{role.stage}'s posts per launch")
                if not isinstance(sync_op, sync.PostOp) and role.stage not in producers:
                    raise refusal(sync_op, f"stage @{name}'s kernel waits on the semaphores "
                                           f"of @{role.stage} ('{role}'), but no "
                                           f"sync.dependency @{role.stage} -> @{name} declares "
                                           f"it: only declared dependencies are proved to "
                                           f"make progress")

    @staticmethod
    def refuse_cycles(graph: StageGraph) -> None:
        from tilesync.analysis.forward_progress import dependency_cycle

        cycle = dependency_cycle(list(graph.stages), graph.dependent_pairs())
        if cycle is None:
            return
        first = next(d for d in graph.dependencies
                     if (d.producer.root_reference.data, d.consumer.root_reference.data)
                     == (cycle[0], cycle[1]))
        raise refusal(first, f"the dependencies form a cycle {format_cycle(cycle)}: each stage "
                             f"of it waits for the next one's tiles, so none can finish first "
                             f"and the program can never make progress")

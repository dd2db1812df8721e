"""`sync-select-policy{policy=tile|row|strided|auto}`: override the generated policies with a
named instance of the one policy attribute (paper §V: the user picks TileSync, RowSync or
StridedSync per workload).

* `tile`: one semaphore per producer tile (`tile_sync`), always legal;
* `row`: one semaphore per row of the producer grid (`row_sync`), legal on 2-D and 3-D grids;
* `strided`: tiles `stride` columns apart share one (`strided_sync`); the stride is the option
  `stride`, or the generated policy's when that is already strided; it must divide the column
  extent;
* `auto`: chosen by the wave model (needs `blocks_per_sm` from sync-annotate-occupancy on the
  producer; without it the generated policy stays). The generated policy shares a semaphore
  wherever every reader reads all tiles it covers, e.g. RowSync for GEMM → GEMM: fewest
  semaphores and waits. It costs overlap only when a consumer could have started on part of a
  shared group: the consumer loads the operand step by step (its load hook has a `step`), and
  one shared group (a row) spans at least half a wave of the producer, so waiting for the
  whole group idles the consumer for that long (paper §V-E: TileSync wins while the grid has
  one block row, RowSync from larger batches on). Then `auto` takes TileSync; otherwise the
  generated policy.

Any of these is *correct* — a coarser semaphore only makes a consumer wait for more tiles than
it reads, never fewer, and producers never wait on consumers, so no cycle appears — but one
that cannot be built on a stage's grid is refused with the stage's location. `stage=NAME`
restricts the override to one producer. Stages not read by any dependency are left alone.
Run it after sync-generate-policies and before sync-insert-post-wait.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.passes import ModulePass
from xdsl.traits import SymbolTable
from xdsl.utils.exceptions import DiagnosticException

from tilesync.analysis.dependency_analysis import generate_policy
from tilesync.analysis.stage_graph import StageGraph
from tilesync.contract import BLOCKS_PER_SM_ATTR, NUM_SEMAPHORES_ATTR
from tilesync.dialects import sync
from tilesync.dialects.locations import diagnostic
from tilesync.dialects.sync import COLUMN_DIM

PASS = "sync-select-policy"
CHOICES = ("tile", "row", "strided", "auto")


def _strided_of(policy: sync.PolicyAttr | None) -> int | None:
    """The stride of a StridedSync policy (the modulus on the column), else None."""
    if policy is None or policy.kind != "StridedSync":
        return None
    text = sync.format_affine_map(policy.sem_map.data)
    marker = "d1 mod "
    start = text.index(marker) + len(marker)
    digits = ""
    for ch in text[start:]:
        if not ch.isdigit():
            break
        digits += ch
    return int(digits)


def _kernel_ops(module: ModuleOp, stage: sync.StageOp):
    kernel = SymbolTable.lookup_symbol(module, stage.kernel)
    return kernel.walk() if kernel is not None else ()


@dataclass(frozen=True)
class SelectPolicyPass(ModulePass):
    """Replace the generated policies by policy=tile, row, strided (stride=N) or auto."""

    name = "sync-select-policy"

    policy: str = "auto"
    stride: int | None = None  # policy=strided: tiles `stride` columns apart share a semaphore
    stage: str = ""
    sms: int = 132  # for `auto`

    def __post_init__(self) -> None:
        if self.policy not in CHOICES:
            raise ValueError(f"option 'policy' is one of {', '.join(CHOICES)}, got "
                             f"'{self.policy}'")
        if self.stride is not None and self.policy != "strided":
            raise ValueError("option 'stride' applies only with policy=strided")
        if self.stride is not None and self.stride < 2:
            raise ValueError(f"option 'stride' must be at least 2, got {self.stride}")
        if self.sms < 1:
            raise ValueError(f"option 'sms' must be positive, got {self.sms}")

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        graph = StageGraph.of(op)
        if self.stage and self.stage not in graph.stages:
            raise DiagnosticException(f"{PASS}: no sync.stage @{self.stage}")
        for name, stage in graph.stages.items():
            deps = graph.outgoing(name)
            if not deps or (self.stage and name != self.stage):
                continue
            if stage.policy is None:
                stage.policy = generate_policy(stage, deps, graph)
            chosen = self.choose(stage, graph, op)
            stage.policy = chosen
            if NUM_SEMAPHORES_ATTR in stage.attributes:
                stage.attributes[NUM_SEMAPHORES_ATTR] = IntegerAttr(
                    chosen.num_semaphores(stage.grid_shape), i64
                )

    def by_wave_model(self, stage: sync.StageOp, graph: StageGraph,
                      module: ModuleOp) -> sync.PolicyAttr:
        """`auto` (see the module docstring): TileSync where a shared group of the generated
        policy spans half a wave or more and a consumer waits on it step by step."""
        assert stage.policy is not None
        generated = stage.policy
        per_sm = stage.attributes.get(BLOCKS_PER_SM_ATTR)
        posts = generated.posts.data  # tiles sharing one semaphore
        if posts <= 1 or not isinstance(per_sm, IntegerAttr):
            return generated
        wave = self.sms * per_sm.value.data
        if 2 * posts < wave:
            return generated
        name = stage.sym_name.data
        stepped = any(
            isinstance(hook, sync.LoadPointOp) and hook.step is not None
            and hook.operand.data == dep.operand.data
            for dep in graph.outgoing(name)
            for consumer in [graph.stages[dep.consumer.root_reference.data]]
            for hook in _kernel_ops(module, consumer)
        )
        return sync.tile_sync(stage.grid_shape) if stepped else generated

    def choose(self, stage: sync.StageOp, graph: StageGraph,
               module: ModuleOp) -> sync.PolicyAttr:
        grid = stage.grid_shape
        name = stage.sym_name.data
        assert stage.policy is not None
        if self.policy == "auto":
            return self.by_wave_model(stage, graph, module)
        if self.policy == "tile":
            return sync.tile_sync(grid)
        if len(grid) <= COLUMN_DIM:
            raise diagnostic(
                PASS,
                stage,
                f"policy={self.policy} is not legal for @{name}: its grid {grid} has no "
                f"column dimension to share",
            )
        if self.policy == "row":
            return sync.row_sync(grid)
        stride = self.stride if self.stride is not None else _strided_of(stage.policy)
        if stride is None:
            raise diagnostic(
                PASS,
                stage,
                f"policy=strided is not legal for @{name}: no stride given (stride=N) and the "
                f"generated policy {stage.policy.kind} is not strided",
            )
        if stride < 2 or grid[COLUMN_DIM] % stride or grid[COLUMN_DIM] // stride < 2:
            raise diagnostic(
                PASS,
                stage,
                f"policy=strided is not legal for @{name}: stride {stride} does not divide "
                f"its {grid[COLUMN_DIM]} column tiles into groups of at least 2",
            )
        return sync.strided_sync(grid, stride)

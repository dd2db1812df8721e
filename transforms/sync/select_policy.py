"""`sync-select-policy{policy=tile|row|strided|auto}`: override the generated policies with a
named instance of the one policy attribute (paper §V: the user picks TileSync, RowSync or
StridedSync per workload).

* `tile`: one semaphore per producer tile (`tile_sync`), always legal;
* `row`: one semaphore per row of the producer grid (`row_sync`), legal on 2-D and 3-D grids;
* `strided`: tiles `stride` columns apart share one (`strided_sync`); the stride is the option
  `stride`, or the generated policy's when that is already strided; it must divide the column
  extent;
* `auto`: keep the policy `sync-generate-policies` produced. (A choice by the wave model —
  fewer semaphores when the grid has many rows, finer ones for a single wave — can be made
  here later; today `auto` is the generated, finest-sharing-free policy.)

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
from xdsl.utils.exceptions import DiagnosticException

from tilesync.dialects import sync
from tilesync.dialects.sync import COLUMN_DIM
from tilesync.transforms.sync.dependency_analysis import StageGraph, diagnostic, generate_policy

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


@dataclass(frozen=True)
class SelectPolicyPass(ModulePass):
    name = "sync-select-policy"

    policy: str = "auto"
    stride: int = 0
    stage: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.policy not in CHOICES:
            raise DiagnosticException(
                f"{PASS}: unknown policy '{self.policy}', expected one of {', '.join(CHOICES)}"
            )
        graph = StageGraph.of(op)
        if self.stage and self.stage not in graph.stages:
            raise DiagnosticException(f"{PASS}: no sync.stage @{self.stage}")
        for name, stage in graph.stages.items():
            deps = graph.outgoing(name)
            if not deps or (self.stage and name != self.stage):
                continue
            if stage.policy is None:
                stage.policy = generate_policy(stage, deps, graph)
            chosen = self.choose(stage)
            stage.policy = chosen
            if "num_semaphores" in stage.attributes:
                stage.attributes["num_semaphores"] = IntegerAttr(
                    chosen.num_semaphores(stage.grid_shape), i64
                )

    def choose(self, stage: sync.StageOp) -> sync.PolicyAttr:
        grid = stage.grid_shape
        name = stage.sym_name.data
        assert stage.policy is not None
        if self.policy == "auto":
            return stage.policy
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
        stride = self.stride or _strided_of(stage.policy)
        if stride is None:
            raise diagnostic(
                PASS,
                stage,
                f"policy=strided is not legal for @{name}: no stride given (stride=N) and the "
                f"generated policy {stage.policy.kind} is not strided",
            )
        if stride < 2 or grid[COLUMN_DIM] % stride:
            raise diagnostic(
                PASS,
                stage,
                f"policy=strided is not legal for @{name}: stride {stride} does not divide "
                f"its {grid[COLUMN_DIM]} column tiles into groups of at least 2",
            )
        return sync.strided_sync(grid, stride)

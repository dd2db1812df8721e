"""`sync-generate-policies`: one semaphore layout (policy) per producer stage, from its
dependencies (cuSyncGen, paper §IV-A "Generating Policies").

For each stage that some `sync.dependency` reads, and for each dimension of its grid, the
pass picks how the tiles along that dimension share semaphores: one semaphore per tile, or
one shared by tiles that every reader reads together (all of them, tiles a stride apart, or
runs of consecutive tiles). A group is shared only when every consumer tile that reads any
tile of the group reads all of them, so sharing never makes a consumer wait for a tile it
does not read. All outgoing dependencies of a producer are taken together: where they
disagree the finer grouping wins. The result is one `#sync.policy` stored on the producer's
`sync.stage` (property `policy`); its printed name (TileSync for GEMM tile-for-tile,
RowSync for GEMM→GEMM, StridedSync for attention's Q/K/V, Conv2DTileSync for grouped
channels) is the classification of that one attribute, never a special case.

The decision is exact by enumeration of (consumer tile × forall box) up to
`ENUMERATION_LIMIT` points; beyond it a structural rule is used (a dimension is shared only
when its producer coordinate is a lone forall variable spanning the whole dimension), which
is sound and may be finer than necessary.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from tilesync.analysis.dependency_analysis import generate_policy
from tilesync.analysis.stage_graph import StageGraph


@dataclass(frozen=True)
class GeneratePoliciesPass(ModulePass):
    """Derive each producer's policy (TileSync, RowSync, StridedSync, ...) from its dependencies."""

    name = "sync-generate-policies"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        graph = StageGraph.of(op)
        for name, stage in graph.stages.items():
            deps = graph.outgoing(name)
            if deps:
                stage.policy = generate_policy(stage, deps, graph)

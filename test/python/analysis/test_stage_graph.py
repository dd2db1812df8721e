"""The one reader of a stage program: stages, dependencies and the host plan, read once; the
passes, the runtime and the simulator see the same plan."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.utils.exceptions import DiagnosticException

from tilesync.analysis.simulator import program_from_ir
from tilesync.analysis.stage_graph import Launch, StageGraph, WaitKernel, default_plan
from tilesync.api import parse
from tilesync.contract import CompiledProgram
from tilesync.dialects import sync
from tilesync.runtime.program import read_plan

PROGRAM = """
sync.stage @a {kernel = @k::@f, grid = array<i64: 2, 4>, block = array<i64: 128>, tile = array<i64: 64, 64>}
sync.stage @b {kernel = @k::@f, grid = array<i64: 2, 2>, block = array<i64: 128>, tile = array<i64: 64, 64>}
sync.stage @c {kernel = @k::@f, grid = array<i64: 2>, block = array<i64: 128>, tile = array<i64: 64>}
sync.dependency @a -> @b operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 4)
sync.dependency @a -> @b operand 1 tiles (d0, d1) -> (d0, d1)
sync.dependency @b -> @c operand 0 tiles (d0)[s0] -> (d0, s0) forall s0 in [0, 2)
sync.dependency @a -> @c operand 1 tiles (d0) -> (d0, 0)
%PLAN%
"""  # noqa: E501

PLAN = """sync.launch @a {priority = -1 : i64}
sync.wait_kernel @a {stream = 1 : i64}
sync.launch @c {stream = 2 : i64}
sync.launch @b {stream = 1 : i64, pdl = true}"""


def module(plan: str = PLAN) -> ModuleOp:
    return parse(PROGRAM.replace("%PLAN%", plan))


def test_one_walk_reads_stages_dependencies_and_the_plan_in_program_order():
    graph = StageGraph.of(module())
    assert list(graph.stages) == ["a", "b", "c"]
    assert all(isinstance(op, sync.StageOp) for op in graph.stages.values())
    assert [(d.producer.root_reference.data, d.consumer.root_reference.data)
            for d in graph.dependencies] == [("a", "b"), ("a", "b"), ("b", "c"), ("a", "c")]
    assert graph.steps == [
        Launch("a", 0, -1),
        WaitKernel("a", 1),
        Launch("c", 2),
        Launch("b", 1, pdl=True),
    ]
    assert isinstance(graph.steps[1].op, sync.WaitKernelOp)
    assert graph.plan == graph.steps


def test_pairs_producers_and_neighbours():
    graph = StageGraph.of(module())
    assert graph.dependent_pairs() == [("a", "b"), ("b", "c"), ("a", "c")]
    assert graph.producers("c") == ["b", "a"]
    assert len(graph.incoming("b")) == 2 and len(graph.outgoing("a")) == 3
    assert graph.producer_of(graph.dependencies[2]) is graph.stages["b"]
    assert graph.consumer_of(graph.dependencies[2]) is graph.stages["c"]


def test_launches_and_the_launch_a_wait_kernel_guards():
    graph = StageGraph.of(module())
    launch = graph.launch("b")
    assert launch == Launch("b", 1, pdl=True) and isinstance(launch.op, sync.LaunchOp)
    (wait,) = graph.wait_kernels()
    # the next launch on the wait-kernel's stream, past the launch of @c on stream 2
    assert graph.guarded_launch(wait) == Launch("b", 1, pdl=True)
    lonely = StageGraph.of(module("sync.launch @a\nsync.wait_kernel @a {stream = 3 : i64}"))
    assert lonely.guarded_launch(lonely.wait_kernels()[0]) is None
    assert lonely.launch("b") is None


def test_a_program_without_launches_runs_every_stage_on_stream_zero_in_order():
    graph = StageGraph.of(module(""))
    assert graph.steps == []
    assert graph.plan == default_plan(["a", "b", "c"]) == [Launch("a"), Launch("b"), Launch("c")]


def test_a_dependency_on_a_missing_stage_is_a_diagnostic():
    stage = sync.StageOp("a", "k::f", (2,), (32,), (1,))
    dep = sync.DependencyOp("a", "ghost", 0, AffineMap(1, 0, (AffineExpr.dimension(0),)))
    with pytest.raises(DiagnosticException, match=r"consumer @ghost is not a sync\.stage"):
        StageGraph.of(ModuleOp([stage, dep]))


@pytest.mark.parametrize("plan", [PLAN, ""])
def test_runtime_and_simulator_read_the_same_plan(plan):
    program = module(plan)
    graph = StageGraph.of(program)
    stages, steps = read_plan(CompiledProgram({}, {}, {}, program))
    assert steps == graph.plan
    assert list(stages) == ["a", "b", "c"] and stages["c"].grid == (2, 1, 1)
    simulated = program_from_ir(program, policies={"a": sync.tile_sync((2, 4)),
                                                   "b": sync.tile_sync((2, 2))})
    assert simulated.launch_plan() == graph.plan

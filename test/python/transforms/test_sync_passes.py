"""The cuSync passes from Python: generated policies never over-wait, generated waits are
proved by sync-verify for random dependencies, and removing any generated wait is caught."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException, VerifyException

from tilesync.dialects import all_dialects_with_xdsl, sync
from tilesync.transforms.sync.generate_policies import GeneratePoliciesPass
from tilesync.transforms.sync.insert_post_wait import InsertPostWaitPass
from tilesync.transforms.sync.reorder_loads import ReorderLoadsPass
from tilesync.transforms.sync.select_policy import SelectPolicyPass
from tilesync.transforms.sync.verify import VerifySyncPass


def context() -> Context:
    ctx = Context()
    for name, load in all_dialects_with_xdsl().items():
        ctx.register_dialect(name, load)
    return ctx


def parse(text: str) -> tuple[Context, ModuleOp]:
    ctx = context()
    module = Parser(ctx, text).parse_module()
    module.verify()
    return ctx, module


KERNELS = """
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>) kernel {
    %x, %y = sync.tile : index, index
    sync.store_point [%x, %y]
    gpu.return
  }
  gpu.func @c(%a: memref<?xf32>, %b: memref<?xf32>) kernel {
    %x, %y = sync.tile : index, index
    sync.load_point operand 1 [%x, %y]
    sync.load_point operand 0 [%x, %y]
    gpu.return
  }
}
"""


def program(pgrid, cgrid, tiles_map: str, ranges: str) -> str:
    forall = f" forall {ranges}" if ranges else ""
    return (
        KERNELS + f"sync.stage @p {{kernel = @k::@p, grid = array<i64: {pgrid[0]}, {pgrid[1]}>, "
        "block = array<i64: 64>, tile = array<i64: 64, 64>}\n"
        f"sync.stage @c {{kernel = @k::@c, grid = array<i64: {cgrid[0]}, {cgrid[1]}>, "
        "block = array<i64: 64>, tile = array<i64: 64, 64>, coresident}\n"
        f"sync.dependency @p -> @c operand 0 tiles {tiles_map}{forall}\n"
    )


ROW_EXPRS = ["d0", "s0", "0", "d0 + s0"]
COL_EXPRS = ["d1", "s1", "d1 * 2 + s1", "d1 + s1 * 2", "0", "s1 * 3"]


@st.composite
def dependencies(draw):
    cgrid = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    row, col = draw(st.sampled_from(ROW_EXPRS)), draw(st.sampled_from(COL_EXPRS))
    ranges = [(0, draw(st.integers(1, 3))), (0, draw(st.integers(1, 3)))]
    tiles_map = f"(d0, d1)[s0, s1] -> ({row}, {col})"
    text = ", ".join(f"s{i} in [{lo}, {hi})" for i, (lo, hi) in enumerate(ranges))
    # The producer grid is exactly what the map reaches (plus maybe spare tiles nobody reads).
    extents = [1, 1]
    for d0, d1, s0, s1 in itertools.product(
        range(cgrid[0]), range(cgrid[1]), range(ranges[0][1]), range(ranges[1][1])
    ):
        env = {"d0": d0, "d1": d1, "s0": s0, "s1": s1}
        for i, expr in enumerate((row, col)):
            extents[i] = max(extents[i], eval(expr, {}, env) + 1)
    spare = draw(st.integers(0, 2))
    pgrid = (extents[0], extents[1] + spare)
    return pgrid, cgrid, tiles_map, text


def compile_sync(text: str, *, policy: str = "auto") -> tuple[Context, ModuleOp]:
    ctx, module = parse(text)
    GeneratePoliciesPass().apply(ctx, module)
    if policy != "auto":
        SelectPolicyPass(policy=policy).apply(ctx, module)
    InsertPostWaitPass().apply(ctx, module)
    return ctx, module


def stage(module: ModuleOp, name: str) -> sync.StageOp:
    return next(
        op for op in module.walk() if isinstance(op, sync.StageOp) and op.sym_name.data == name
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dependencies(), st.sampled_from(["auto", "tile", "row"]))
def test_generated_waits_are_proved(dep, policy):
    pgrid, cgrid, tiles_map, ranges = dep
    ctx, module = compile_sync(program(pgrid, cgrid, tiles_map, ranges), policy=policy)
    VerifySyncPass().apply(ctx, module)
    assert stage(module, "c").attributes["sync.verified"].data == "proved"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dependencies())
def test_generated_policy_never_over_waits(dep):
    """Every producer tile sharing a semaphore with a tile a consumer reads is read too."""
    pgrid, cgrid, tiles_map, ranges = dep
    ctx, module = parse(program(pgrid, cgrid, tiles_map, ranges))
    GeneratePoliciesPass().apply(ctx, module)
    producer = stage(module, "p")
    policy = producer.policy
    assert policy is not None
    policy.verify_on_grid(pgrid)
    dep_op = next(op for op in module.walk() if isinstance(op, sync.DependencyOp))
    all_tiles = list(itertools.product(range(pgrid[0]), range(pgrid[1])))
    for tile in itertools.product(range(cgrid[0]), range(cgrid[1])):
        reads = set(dep_op.producer_tiles(tile))
        semaphores = {policy.semaphore_index(t) for t in reads}
        waited_for = {t for t in all_tiles if policy.semaphore_index(t) in semaphores}
        assert waited_for == reads, (tile, policy)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dependencies())
def test_dropping_a_generated_wait_is_caught(dep):
    pgrid, cgrid, tiles_map, ranges = dep
    ctx, module = compile_sync(program(pgrid, cgrid, tiles_map, ranges))
    waits = [op for op in module.walk() if isinstance(op, sync.WaitOp)]
    assume(waits)
    waits[0].detach()
    waits[0].erase()
    with pytest.raises(DiagnosticException, match="no wait on that semaphore precedes it"):
        VerifySyncPass().apply(ctx, module)


def test_policy_names_from_paper_workloads():
    cases = {
        ("(d0, d1)[s0] -> (d0, s0)", "s0 in [0, 48)", (4, 48), (4, 96)): "RowSync",
        ("(d0, d1)[s0] -> (d0, d1 + s0 * 3)", "s0 in [0, 3)", (4, 9), (4, 3)): "StridedSync",
        ("(d0, d1)[s0] -> (d0, d1 * 2 + s0)", "s0 in [0, 2)", (8, 8), (8, 4)): "Conv2DTileSync",
        ("(d0, d1) -> (d0, d1)", "", (8, 4), (8, 4)): "TileSync",
    }
    for (tiles_map, ranges, pgrid, cgrid), kind in cases.items():
        ctx, module = parse(program(pgrid, cgrid, tiles_map, ranges))
        GeneratePoliciesPass().apply(ctx, module)
        assert stage(module, "p").policy.kind == kind


def test_waits_for_every_produced_operand_and_reorder():
    producer_q = (
        "gpu.func @q(%out: memref<?xf32>) kernel {\n"
        "    %x, %y = sync.tile : index, index\n"
        "    sync.store_point [%x, %y]\n"
        "    gpu.return\n"
        "  }\n  "
    )
    text = KERNELS.replace("gpu.func @c(", producer_q + "gpu.func @c(")
    text += (
        "sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 2>, block = array<i64: 64>, "
        "tile = array<i64: 64, 64>}\n"
        "sync.stage @q {kernel = @k::@q, grid = array<i64: 2, 2>, block = array<i64: 64>, "
        "tile = array<i64: 64, 64>}\n"
        "sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 2>, block = array<i64: 64>, "
        "tile = array<i64: 64, 64>, coresident}\n"
        "sync.dependency @p -> @c operand 0 tiles (d0, d1) -> (d0, d1)\n"
        "sync.dependency @q -> @c operand 1 tiles (d0, d1) -> (d1, d0)\n"
    )
    ctx, module = parse(text)
    GeneratePoliciesPass().apply(ctx, module)
    ReorderLoadsPass().apply(ctx, module)  # both produced: nothing to move
    InsertPostWaitPass().apply(ctx, module)
    VerifySyncPass().apply(ctx, module)
    consumer = next(
        op
        for op in module.walk()
        if getattr(op, "sym_name", None) and op.sym_name.data == "c" and op.name == "gpu.func"
    )
    roles = [a.data for a in consumer.attributes["sync.args"].data]
    assert roles == ["sems:@p", "sems:@q", "epoch"]
    waited = [
        {v: k for k, v in zip(roles, consumer.body.blocks.first.args[-3:])}[w.sems]
        for w in consumer.walk()
        if isinstance(w, sync.WaitOp)
    ]
    assert waited == ["sems:@q", "sems:@p"]  # in the kernel's load order: operand 1 first


def test_select_row_on_1d_grid_is_refused():
    text = (
        "sync.stage @a {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 64>, "
        "tile = array<i64: 64>}\n"
        "sync.stage @b {kernel = @k::@f, grid = array<i64: 8>, block = array<i64: 64>, "
        "tile = array<i64: 64>}\n"
        "sync.dependency @a -> @b operand 0 tiles (d0) -> (d0)\n"
    )
    ctx, module = parse(text)
    with pytest.raises(DiagnosticException, match="policy=row is not legal for @a"):
        SelectPolicyPass(policy="row").apply(ctx, module)


def test_stage_policy_checked_on_grid():
    with pytest.raises(VerifyException, match="receives 32 posts per launch"):
        parse(
            "sync.stage @a {kernel = @k::@f, grid = array<i64: 4, 32>, block = array<i64: 64>, "
            "tile = array<i64: 64>, policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 48>}"
        )

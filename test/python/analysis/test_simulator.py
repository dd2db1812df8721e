"""The CPU simulator of stage programs: wave timing, policies that are right and wrong, epoch
arithmetic, deadlocks and the mechanisms that prevent them, the IR front end, and property
tests over random dependency programs."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.parser import Parser

from tilesync.analysis.grid import grid_tiles
from tilesync.analysis.simulator import (
    SCHEDULERS,
    SimDependency,
    SimMachine,
    SimPolicy,
    SimProgram,
    SimStage,
    SimulationError,
    program_from_ir,
    simulate,
)
from tilesync.analysis.stage_graph import Launch, WaitKernel
from tilesync.dialects.sync import (
    PolicyAttr,
    StageOp,
    Sync,
    conv2d_tile_sync,
    row_sync,
    tile_sync,
)

d0, d1 = AffineExpr.dimension(0), AffineExpr.dimension(1)
s0 = AffineExpr.symbol(0)


def identity(tile):
    return [tile]


def chain(grid, launches, policy=None, duration=10, consumer_grid=None, reads=identity, **consumer):
    """Producer p → consumer c."""
    return SimProgram(
        [
            SimStage("p", grid, duration=duration, policy=policy or tile_sync(grid)),
            SimStage("c", consumer_grid or grid, duration=duration, **consumer),
        ],
        [SimDependency("p", "c", reads)],
        launches,
    )


TWO_STREAMS = [Launch("p", 0), Launch("c", 1)]
CONSUMER_FIRST = [Launch("c", 1), Launch("p", 0)]


# --- timing: the wave model's Table I --------------------------------------------------------


def test_two_stages_of_one_point_two_waves():
    # 10 slots, 12 tiles per stage: stream order runs 2 + 2 waves; per-tile semaphores let the
    # consumer fill the producer's partial wave: 3 tile-times (cuSync Fig. 1, Table I).
    machine = SimMachine(sms=5, blocks_per_sm=2)
    stream_order = simulate(chain((12,), None), machine)
    tile_sync_run = simulate(chain((12,), TWO_STREAMS), machine)
    assert stream_order.ok and tile_sync_run.ok
    assert stream_order.makespan == 40
    assert tile_sync_run.makespan == 30
    assert stream_order.stage_spans == {"p": [(0, 20)], "c": [(20, 40)]}
    assert tile_sync_run.stage_spans == {"p": [(0, 20)], "c": [(10, 30)]}
    assert stream_order.guarantees == {("p", "c"): "stream-order"}
    # in-order dispatch put every producer block first, but nothing guarantees that
    assert tile_sync_run.guarantees == {("p", "c"): None}


def test_per_step_waits_overlap_compute_with_arriving_tiles():
    # One consumer tile reads a row of 4 producer tiles finishing at 10, 20, 30, 40.
    def program(policy, per_step):
        return SimProgram(
            [
                SimStage("p", (1, 4), duration=lambda t: 10 * (t[1] + 1), policy=policy),
                SimStage("c", (1, 1), duration=40, per_step=per_step),
            ],
            [SimDependency.affine("p", "c", AffineMap(2, 1, (d0, s0)), [(0, 4)])],
            TWO_STREAMS,
        )

    machine = SimMachine(sms=5)
    results = {
        (kind, per_step): simulate(program(policy, per_step), machine)
        for kind, policy in (("tile", tile_sync((1, 4))), ("row", row_sync((1, 4))))
        for per_step in (False, True)
    }
    assert all(r.ok for r in results.values())
    # a whole-row wait: 40 + 40; TileSync per step: 10 ticks of compute after each tile
    assert results["tile", False].makespan == 80
    assert results["row", False].makespan == 80
    assert results["row", True].makespan == 80  # the first step already waits for the row
    assert results["tile", True].makespan == 50


# --- the GPT-3 MLP: row dependency, RowSync and TileSync --------------------------------------


def mlp_program(policy_kind: str, per_step: bool, rows=4, cols1=12, cols2=24, k=3):
    """H = relu(X·W1), Y = H·W2 in 2×2 tiles; consumer tile (i, j) reads the row i of H
    (the cuSyncGen dependency (d0, d1)[s0] -> (d0, s0) forall s0 in [0, cols1))."""
    rng = np.random.default_rng(7)
    x = rng.integers(-3, 4, size=(2 * rows, k))
    w1 = rng.integers(-3, 4, size=(k, 2 * cols1))
    w2 = rng.integers(-3, 4, size=(2 * cols1, 2 * cols2))

    def gemm1(tile, epoch, inputs):
        i, j = tile
        return np.maximum(epoch * x[2 * i : 2 * i + 2] @ w1[:, 2 * j : 2 * j + 2], 0)

    def gemm2(tile, epoch, inputs):
        (h_row,) = inputs
        j = tile[1]
        return sum(h @ w2[2 * s : 2 * s + 2, 2 * j : 2 * j + 2] for s, h in enumerate(h_row))

    grid1 = (rows, cols1)
    policy = tile_sync(grid1) if policy_kind == "TileSync" else row_sync(grid1)
    program = SimProgram(
        [
            SimStage("mlp1", grid1, duration=lambda t: 5 + t[1] % 3, policy=policy, compute=gemm1),
            SimStage("mlp2", (rows, cols2), duration=4, per_step=per_step, compute=gemm2),
        ],
        [SimDependency.affine("mlp1", "mlp2", AffineMap(2, 1, (d0, s0)), [(0, cols1)])],
        [Launch("mlp1", 0, priority=-1), WaitKernel("mlp1", 1), Launch("mlp2", 1)],
    )

    def expected(epoch):
        return np.maximum(epoch * x @ w1, 0) @ w2

    return program, expected


def assemble(tiles, rows, cols):
    return np.block([[tiles[(i, j)] for j in range(cols)] for i in range(rows)])


@pytest.mark.parametrize("policy_kind", ["TileSync", "RowSync"])
@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_gpt3_mlp_row_dependency(policy_kind, scheduler):
    program, expected = mlp_program(policy_kind, per_step=scheduler == "random")
    result = simulate(program, SimMachine(sms=16, blocks_per_sm=2), scheduler, launches=2)
    result.check()
    assert result.guarantees == {("mlp1", "mlp2"): "wait-kernel"}
    for epoch in (1, 2):
        y = assemble(result.outputs[epoch - 1]["mlp2"], 4, 24)
        np.testing.assert_array_equal(y, expected(epoch))


@pytest.mark.parametrize("policy", [row_sync, tile_sync])
def test_gpt3_mlp_at_paper_grid_gains_a_wave(policy):
    # B = 384 (3 row tiles of 128), 6144/128 and 12288/128 column tiles, 132 SMs: 144 + 288
    # tiles take 2 + 3 waves in stream order but pack into 4 when the second GEMM starts on
    # rows the first has finished, if tiles are taken row by row.
    grid1, grid2 = (3, 48), (3, 96)

    def program(order_tables):
        return SimProgram(
            [
                SimStage(
                    "mlp1",
                    grid1,
                    duration=10,
                    policy=policy(grid1),
                    order=list(grid_tiles(grid1)) if order_tables else None,
                ),
                SimStage(
                    "mlp2",
                    grid2,
                    duration=10,
                    order=list(grid_tiles(grid2)) if order_tables else None,
                ),
            ],
            [SimDependency.affine("mlp1", "mlp2", AffineMap(2, 1, (d0, s0)), [(0, 48)])],
            [Launch("mlp1", 0), WaitKernel("mlp1", 1), Launch("mlp2", 1)],
        )

    machine = SimMachine(sms=132)
    serial = simulate(
        SimProgram(program(False).stages, program(False).dependencies), machine, launches=3
    )
    serial.check()
    assert serial.makespan == 3 * 50
    for scheduler in ("in_order", "adversarial"):
        synced = simulate(program(False), machine, scheduler, launches=3)
        synced.check()
        assert synced.makespan == 3 * 40
    # Blocks dispatched at random compute rows out of order and lose the gain; an order
    # table (tiles taken from an atomic counter in dispatch order) restores it.
    shuffled = simulate(program(False), machine, "random", launches=3, seed=1)
    ordered = simulate(program(True), machine, "random", launches=3, seed=1)
    shuffled.check()
    ordered.check()
    assert shuffled.makespan > ordered.makespan == 3 * 40


# --- wrong policies and unguarded reads ------------------------------------------------------


def test_row_sync_with_too_few_posts_reads_before_write():
    grid = (2, 4)
    short = PolicyAttr(AffineMap(2, 0, (d0,)), 3)  # RowSync's map, posts one short
    program = chain(grid, TWO_STREAMS, policy=short, reads=lambda t: [(t[0], s) for s in range(4)])
    result = simulate(program, SimMachine(sms=16), "in_order")
    assert not result.ok and result.deadlock is None
    assert result.violations, "the read of the row's last tile before it is stored"
    first = result.violations[0]
    assert first.kind == "read-before-write"
    assert (first.producer, first.consumer, first.found_epoch) == ("p", "c", 0)
    assert first.producer_tile[1] == 3  # the last tile of the row to finish
    assert {(m.semaphore, m.expected, m.seen) for m in result.semaphore_mismatches} == {
        (0, 3, 4),
        (1, 3, 4),
    }
    with pytest.raises(SimulationError, match="read-before-write"):
        result.check()


def test_wrong_group_map_is_caught():
    # The consumer reads column pairs (Conv2DTileSync's case); a policy that groups the pairs
    # but expects one post lets a consumer in after the first of its two tiles.
    grid = (2, 4)
    pairs = lambda t: [(t[0], 2 * t[1]), (t[0], 2 * t[1] + 1)]  # noqa: E731
    right = simulate(
        chain(
            grid, TWO_STREAMS, policy=conv2d_tile_sync(grid, 2), consumer_grid=(2, 2), reads=pairs
        ),
        SimMachine(sms=12),
        "adversarial",
    )
    right.check()
    one_post = PolicyAttr(AffineMap(2, 0, (d0 * 2 + d1 // 2,)), 1)
    wrong = simulate(
        chain(grid, TWO_STREAMS, policy=one_post, consumer_grid=(2, 2), reads=pairs),
        SimMachine(sms=12),
        "adversarial",
    )
    assert wrong.violations and not wrong.outputs_match


def test_unguarded_operand_is_a_race():
    # The reference cuSync's fault: waits guard only A although B is produced too.
    def program(guard_b):
        return SimProgram(
            [
                SimStage("a", (4,), duration=3, policy=tile_sync((4,))),
                SimStage("b", (4,), duration=5, policy=tile_sync((4,))),
                SimStage("gemm", (4,), duration=2),
            ],
            [
                SimDependency("a", "gemm", identity),
                SimDependency("b", "gemm", identity, guarded=guard_b),
            ],
            [Launch("a", 0), Launch("b", 1), Launch("gemm", 2)],
        )

    machine = SimMachine(sms=12)
    assert simulate(program(True), machine, "adversarial").ok
    racy = simulate(program(False), machine, "adversarial")
    assert {v.producer for v in racy.violations} == {"b"}
    assert not racy.outputs_match


# --- epochs ---------------------------------------------------------------------------------


def test_relaunches_without_reset_are_correct():
    result = simulate(
        chain(
            (3, 4),
            TWO_STREAMS,
            policy=row_sync((3, 4)),
            reads=lambda t: [(t[0], s) for s in range(4)],
        ),
        SimMachine(sms=24),
        "adversarial",
        launches=4,
    )
    result.check()
    assert len(result.stage_spans["c"]) == 4
    assert result.outputs[0]["c"] != result.outputs[3]["c"]  # launches compute different data


def test_forgotten_epoch_reads_the_previous_launch():
    program = chain((6,), TWO_STREAMS)
    result = simulate(
        program,
        SimMachine(sms=12),
        "adversarial",
        launches=3,
        wait_target=lambda epoch, posts: posts,
    )
    assert result.violations
    assert {v.epoch for v in result.violations} == {2, 3}  # launch 1 happens to be right
    assert all(v.found_epoch == v.epoch - 1 for v in result.violations)
    assert not result.outputs_match


def test_epoch_counted_from_zero_reads_before_the_first_write():
    result = simulate(
        chain((6,), TWO_STREAMS),
        SimMachine(sms=12),
        "adversarial",
        wait_target=lambda epoch, posts: (epoch - 1) * posts,
    )
    assert {(v.epoch, v.found_epoch) for v in result.violations} == {(1, 0)}


def test_over_counting_hangs_and_says_where():
    result = simulate(
        chain((4,), TWO_STREAMS),
        SimMachine(sms=8),
        launches=2,
        wait_target=lambda epoch, posts: (epoch + 1) * posts,
    )
    deadlock = result.deadlock
    assert deadlock is not None and deadlock.reason == "posts-never-arrive"
    assert {(w.stage, w.semaphore, w.expected, w.seen) for w in deadlock.waits} == {
        ("c", i, 2, 1) for i in range(4)
    }
    assert "expected 2, seen 1" in deadlock.describe()
    assert not result.outputs_match


def test_overlapping_relaunches_overwrite_unread_tiles():
    # Without a host barrier the producer's next launch (higher priority) runs ahead of the
    # previous launch's consumer and overwrites tiles it has not read.
    launches = [Launch("p", 0, priority=-1), Launch("c", 1)]
    program = chain((4,), launches, duration=1)
    machine = SimMachine(sms=4)
    racy = simulate(program, machine, launches=2, launch_barrier=False)
    assert any(v.kind == "read-after-overwrite" and v.epoch == 1 for v in racy.violations)
    simulate(program, machine, launches=2).check()


# --- forward progress ------------------------------------------------------------------------


@pytest.mark.parametrize("scheduler", ["in_order", "adversarial"])
def test_consumer_launched_first_deadlocks(scheduler):
    result = simulate(chain((12,), CONSUMER_FIRST), SimMachine(sms=5, blocks_per_sm=2), scheduler)
    deadlock = result.deadlock
    assert deadlock is not None and deadlock.reason == "slots-held-by-waiters"
    assert deadlock.free_slots == 0
    assert len(deadlock.waits) == 10 and all(w.stage == "c" for w in deadlock.waits)
    assert all((w.semaphore_stage, w.expected, w.seen) == ("p", 1, 0) for w in deadlock.waits)
    assert deadlock.pending_blocks["p@1"] == 12
    assert result.guarantees == {("p", "c"): None}
    with pytest.raises(SimulationError, match="waits on p semaphore"):
        result.check()


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_wait_kernel_and_pdl_prevent_the_deadlock(scheduler):
    machine = SimMachine(sms=5, blocks_per_sm=2)
    waited = [WaitKernel("p", 1), Launch("c", 1), Launch("p", 0)]
    pdl = [Launch("p", 0), Launch("c", 0, pdl=True)]
    for launches, guarantee in ((waited, "wait-kernel"), (pdl, "pdl")):
        result = simulate(chain((12,), launches), machine, scheduler, launches=2, seed=3)
        result.check()
        assert result.guarantees == {("p", "c"): guarantee}
        assert result.makespan == 2 * 30  # both overlap the partial wave


@pytest.mark.parametrize(
    "launches",
    [
        [Launch("p", 0), WaitKernel("p", 1), Launch("c", 1)],
        # the consumer first in program order: it still queues behind the started producer
        [WaitKernel("p", 1), Launch("c", 1), Launch("p", 0)],
    ],
)
def test_the_papers_wait_kernel_needs_in_order_dispatch(launches):
    # cuSync's wait-kernel ends when the producer's first block starts: enough while the
    # hardware dispatches grids in the order they were released, not against an adversary.
    machine = SimMachine(sms=5, blocks_per_sm=2)
    in_order = simulate(
        chain((12,), launches), machine, "in_order", wait_kernel_mode="first_started"
    )
    in_order.check()
    assert in_order.guarantees == {("p", "c"): "wait-kernel"}
    adversarial = simulate(
        chain((12,), launches), machine, "adversarial", wait_kernel_mode="first_started"
    )
    assert adversarial.deadlock is not None
    assert adversarial.deadlock.reason == "slots-held-by-waiters"
    assert adversarial.guarantees == {("p", "c"): None}
    # a consumer of higher priority overtakes the producer's remaining blocks
    urgent = [
        Launch(i.stage, i.stream, -1) if isinstance(i, Launch) and i.stage == "c" else i
        for i in launches
    ]
    overtaken = simulate(
        chain((12,), urgent), machine, "in_order", wait_kernel_mode="first_started"
    )
    assert overtaken.deadlock is not None and overtaken.guarantees == {("p", "c"): None}


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_one_launch_hands_out_producer_tiles_first(scheduler):
    # cuSync in one launch: p's and c's blocks in one grid, tickets p's first; each c tile reads
    # p's tiles backwards so that an early c block waits on the last p tile.
    one = [Launch("p", 0), Launch("c", 0, fused=True)]
    machine = SimMachine(sms=5, blocks_per_sm=2)
    for seed in range(4):
        result = simulate(chain((12,), one, reads=lambda t: [(11 - t[0],)]), machine,
                          scheduler, launches=3, seed=seed)
        result.check()
        assert result.guarantees == {("p", "c"): "one-launch"}
        # c's first blocks start on the slots p's partial second wave leaves free
        assert result.stage_spans["c"][-1][0] < result.stage_spans["p"][-1][1]


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_one_launch_with_the_consumers_tickets_first_deadlocks(scheduler):
    backwards = [Launch("c", 0), Launch("p", 0, fused=True)]
    result = simulate(chain((12,), backwards), SimMachine(sms=5, blocks_per_sm=2), scheduler)
    assert result.deadlock is not None and result.deadlock.reason == "slots-held-by-waiters"
    assert result.guarantees == {("p", "c"): None}
    # all of it resident at once: then any ticket order is safe
    roomy = simulate(chain((12,), backwards), SimMachine(sms=12, blocks_per_sm=2), scheduler)
    roomy.check()
    assert roomy.guarantees == {("p", "c"): "co-resident"}


def test_one_launch_holds_the_slots_of_its_largest_kernel():
    # c alone fits 2 blocks an SM, p one: the launch's one kernel fits one
    one = [Launch("p", 0), Launch("c", 0, fused=True)]
    program = SimProgram(
        [SimStage("p", (4,), duration=10, policy=tile_sync((4,)), blocks_per_sm=1),
         SimStage("c", (4,), duration=10, blocks_per_sm=2)],
        [SimDependency("p", "c", identity)], one)
    result = simulate(program, SimMachine(sms=4, blocks_per_sm=2))
    result.check()
    assert result.makespan == 20  # two waves of 4: p's blocks, then c's


@pytest.mark.parametrize("pdl", [False, True])
def test_a_launch_after_one_launch_waits_for_all_of_it(pdl):
    # c (short) ends long before p: d follows the whole launch, not its last grid
    one = [Launch("p", 0), Launch("c", 0, fused=True), Launch("d", 0, pdl=pdl)]
    program = SimProgram(
        [SimStage("p", (2,), duration=10), SimStage("c", (2,), duration=1),
         SimStage("d", (6,), duration=1)], [], one)
    result = simulate(program, SimMachine(sms=4), "adversarial")
    result.check()
    d_start = result.stage_spans["d"][0][0]
    # stream order: after all of it; pdl: once all of its blocks have started, on the first
    # slot free (c's blocks end at 1)
    assert d_start == (10 if not pdl else 1)


def test_consumer_before_producer_on_one_stream_is_launch_blocked():
    result = simulate(chain((4,), [Launch("c"), Launch("p")]), SimMachine(sms=8))
    assert result.deadlock is not None and result.deadlock.reason == "launch-blocked"
    assert result.deadlock.blocked_launches == ("p@1",)
    assert result.guarantees == {("p", "c"): None}


@pytest.mark.parametrize("scheduler", SCHEDULERS)
@pytest.mark.parametrize("order", [TWO_STREAMS, CONSUMER_FIRST])
def test_co_resident_programs_never_deadlock(scheduler, order):
    for seed in range(5):
        result = simulate(
            chain(
                (3, 4),
                order,
                reads=lambda t: [(t[0], s) for s in range(4)],
                policy=row_sync((3, 4)),
            ),
            SimMachine(sms=12, blocks_per_sm=2),
            scheduler,
            seed=seed,
            launches=2,
        )
        result.check()
        assert result.guarantees == {("p", "c"): "co-resident"}


def test_mixed_occupancy_counts_capacity_not_blocks():
    # 4 SMs of 2 slots; the consumer kernel fits only 1 block per SM.
    program = chain((4,), CONSUMER_FIRST, blocks_per_sm=1)
    # consumer blocks first take 4 whole SMs; the producer finds no room
    assert simulate(program, SimMachine(sms=4, blocks_per_sm=2), "adversarial").deadlock
    # 8 SMs: even with each producer block alone on an SM, 4 SMs stay whole for the consumer
    roomy = simulate(program, SimMachine(sms=8, blocks_per_sm=2), "adversarial")
    roomy.check()
    assert roomy.guarantees == {("p", "c"): "co-resident"}


# --- tile orders -----------------------------------------------------------------------------


def test_order_table_hands_tiles_out_in_dispatch_order():
    # One slot: blocks run one after another, so finish order = the order table, whatever
    # order the (random) scheduler dispatches block ids in.
    table = [(1, 2), (0, 0), (1, 0), (0, 2), (0, 1), (1, 1)]
    program = SimProgram([SimStage("s", (2, 3), duration=1, order=table)])
    for seed in range(3):
        result = simulate(program, SimMachine(sms=1), "random", seed=seed)
        finish_order = sorted(result.tile_spans["s"], key=lambda t: result.tile_spans["s"][t])
        assert finish_order == table


# --- from IR ---------------------------------------------------------------------------------

MLP_IR = """
builtin.module {
  sync.stage @mlp1 {kernel = @kernels::@gemm, grid = array<i64: 4, 8>, block = array<i64: 256, 1, 1>, tile = array<i64: 256, 128, 32>, order = #sync.order<row_major>}
  sync.stage @mlp2 {kernel = @kernels::@gemm, grid = array<i64: 4, 16>, block = array<i64: 256, 1, 1>, tile = array<i64: 256, 128, 32>}
  sync.dependency @mlp1 -> @mlp2 operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 8)
  %LAUNCHES%
}
"""  # noqa: E501


def parse_module(text):
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(Sync)
    return Parser(ctx, text).parse_module()


def test_program_from_ir_follows_the_launch_plan():
    launches = (
        "sync.launch @mlp1 {stream = 0 : i64, priority = -1 : i64}\n"
        "sync.wait_kernel @mlp1 {stream = 1 : i64}\n"
        "sync.launch @mlp2 {stream = 1 : i64}"
    )
    module = parse_module(MLP_IR.replace("%LAUNCHES%", launches))
    program = program_from_ir(
        module,
        policies={"mlp1": row_sync((4, 8))},
        durations={"mlp1": 3, "mlp2": 2},
        per_step=["mlp2"],
    )
    assert [s.name for s in program.stages] == ["mlp1", "mlp2"]
    assert program.stages[0].order == list(grid_tiles((4, 8)))
    assert program.stages[1].order is None and program.stages[1].block_tiles == "column_major"
    assert program.launches == [
        Launch("mlp1", 0, -1),
        WaitKernel("mlp1", 1),
        Launch("mlp2", 1),
    ]
    dependency = program.dependencies[0]
    assert dependency.reads((2, 5)) == [(2, s) for s in range(8)]
    result = simulate(program, SimMachine(sms=8, blocks_per_sm=2), "adversarial", launches=2)
    result.check()
    assert result.guarantees == {("mlp1", "mlp2"): "wait-kernel"}


def test_program_from_ir_without_launches_runs_in_stream_order():
    module = parse_module(MLP_IR.replace("%LAUNCHES%", ""))
    program = program_from_ir(module, policies={"mlp1": tile_sync((4, 8))}, durations=1)
    result = simulate(program, SimMachine(sms=32))
    result.check()
    # 32 then 64 tiles of one tick on 32 slots: 1 + 2 waves
    assert result.makespan == 3 and result.guarantees == {("mlp1", "mlp2"): "stream-order"}


def test_a_waited_on_stage_needs_a_policy():
    module = parse_module(MLP_IR.replace("%LAUNCHES%", ""))
    with pytest.raises(ValueError, match="mlp1 is waited on but has no policy"):
        simulate(program_from_ir(module), SimMachine(sms=4))


def test_program_from_ir_reads_the_stage_policy():
    if "policy" not in StageOp.get_irdl_definition().properties:
        pytest.skip("this sync dialect has no policy on sync.stage")
    text = MLP_IR.replace(
        "order = #sync.order<row_major>}",
        "order = #sync.order<row_major>, policy = #sync.policy<RowSync (d0, d1) -> (d0), "
        "posts = 8>}",
    ).replace("%LAUNCHES%", "sync.launch @mlp1\nsync.launch @mlp2 {stream = 1 : i64}")
    program = program_from_ir(parse_module(text))
    assert program.stages[0].policy == row_sync((4, 8))
    result = simulate(program, SimMachine(sms=96), "adversarial", launches=2)
    result.check()
    assert result.guarantees == {("mlp1", "mlp2"): "co-resident"}
    # a policy passed in wins over the IR's
    short = SimPolicy(lambda tile: tile[0], 7)
    wrong = simulate(
        program_from_ir(parse_module(text), policies={"mlp1": short}),
        SimMachine(sms=96),
        "adversarial",
    )
    assert wrong.violations


def test_invalid_programs_are_refused():
    machine = SimMachine(sms=4)
    outside = chain((4,), None, reads=lambda t: [(t[0] + 1,)])
    with pytest.raises(ValueError, match=r"reads p tile \(4,\) outside its grid"):
        simulate(outside, machine)
    twice = chain((4,), [Launch("p"), Launch("c"), Launch("c")])
    with pytest.raises(ValueError, match="launched exactly once"):
        simulate(twice, machine)
    cyclic = chain((4,), None)
    cyclic.dependencies.append(SimDependency("c", "p", identity))
    with pytest.raises(ValueError, match="cycle"):
        simulate(cyclic, machine)


# --- property tests over random dependency programs ------------------------------------------


def _clip(value, extent):
    return min(max(value, 0), extent - 1)


@st.composite
def dependency_kinds(draw, producer_grid):
    """A consumer grid and the tiles each of its tiles reads from the producer."""
    rows, cols = producer_grid
    kind = draw(st.sampled_from(["identity", "row", "column", "strided", "halo"]))
    if kind == "identity":
        return producer_grid, identity
    if kind == "row":  # GEMM A operand: the whole producer row
        return (rows, draw(st.integers(1, 4))), lambda t: [(t[0], s) for s in range(cols)]
    if kind == "column":  # GEMM B operand: the whole producer column
        return (draw(st.integers(1, 3)), cols), lambda t: [(s, t[1]) for s in range(rows)]
    if kind == "strided":  # attention: columns a stride apart (none when past the grid)
        stride = draw(st.integers(1, 3))
        return (rows, stride), lambda t: [(t[0], c) for c in range(t[1], cols, stride)]
    radius = draw(st.integers(0, 1))  # conv halo, clipped to the grid

    def halo(t):
        seen = {}
        for di, dj in itertools.product(range(-radius, radius + 1), repeat=2):
            seen[(_clip(t[0] + di, rows), _clip(t[1] + dj, cols))] = None
        return list(seen)

    return producer_grid, halo


MECHANISMS = ("stream-order", "pdl", "wait-kernel", "co-resident")


@st.composite
def programs(draw, mechanism=None):
    mechanism = mechanism or draw(st.sampled_from(MECHANISMS))
    grids = [(draw(st.integers(1, 3)), draw(st.integers(1, 4)))]
    dependencies = []
    count = draw(st.integers(2, 3))
    for k in range(1, count):
        grid, reads = draw(dependency_kinds(grids[-1]))
        grids.append(grid)
        dependencies.append(SimDependency(f"s{k - 1}", f"s{k}", reads))
    if count == 3 and draw(st.booleans()):  # a skip connection: stage 2 also reads stage 0
        r0, c0 = grids[0]
        dependencies.append(SimDependency("s0", "s2", lambda t: [(t[0] % r0, t[1] % c0)]))
    stages = []
    for k, grid in enumerate(grids):
        tiles = list(grid_tiles(grid))
        times = draw(st.lists(st.integers(1, 6), min_size=len(tiles), max_size=len(tiles)))
        by_tile = dict(zip(tiles, times))
        policy = draw(st.sampled_from([tile_sync(grid), row_sync(grid)]))
        order = draw(st.none() | st.permutations(tiles))
        stages.append(
            SimStage(
                f"s{k}",
                grid,
                duration=by_tile.__getitem__,
                policy=policy,
                order=order,
                per_step=draw(st.booleans()),
                # a heavier kernel fitting one block per SM where the machine fits two
                blocks_per_sm=draw(st.sampled_from([None, 1])),
            )
        )
    names = [s.name for s in stages]
    priority = {name: draw(st.integers(-2, 0)) for name in names}
    launches: list = []
    if mechanism in ("stream-order", "pdl"):
        launches = [
            Launch(n, 0, priority[n], pdl=mechanism == "pdl" and k > 0)
            for k, n in enumerate(names)
        ]
    else:
        # Separate streams, in any program order (a consumer may be launched first).
        for k in draw(st.permutations(range(count))):
            if mechanism == "wait-kernel":
                launches += [
                    WaitKernel(d.producer, k) for d in dependencies if d.consumer == names[k]
                ]
            launches.append(Launch(names[k], k, priority[names[k]]))
    blocks_per_sm = draw(st.integers(1, 2))
    total = sum(math.prod(g) for g in grids)
    mixed = blocks_per_sm == 2 and any(s.blocks_per_sm == 1 for s in stages)
    if mechanism == "co-resident":
        # mixed occupancies: one SM per block is what placement in any order can promise
        sms = (total if mixed else -(-total // blocks_per_sm)) + draw(st.integers(0, 2))
    else:
        sms = draw(st.integers(1, max(1, total // 2)))
    return SimProgram(stages, dependencies, launches), SimMachine(sms, blocks_per_sm)


def work_lower_bound(program, machine, launches):
    """No schedule beats the critical path of tile durations, nor total work over slots."""
    finish: dict = {}
    for stage in program.stages:
        inputs = [d for d in program.dependencies if d.consumer == stage.name]
        finish[stage.name] = {}
        for tile in grid_tiles(stage.grid):
            ready = max((finish[d.producer][t] for d in inputs for t in d.reads(tile)), default=0)
            own = stage.duration_of(tile)
            finish[stage.name][tile] = max(ready, own) if stage.per_step else ready + own
    path = max(max(f.values()) for f in finish.values())
    work = sum(s.duration_of(t) for s in program.stages for t in grid_tiles(s.grid))
    return launches * max(path, -(-work // machine.slots))


PROPERTY_SETTINGS = settings(
    max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


@PROPERTY_SETTINGS
@given(
    programs(),
    st.sampled_from(SCHEDULERS),
    st.integers(0, 2**16),
    st.integers(1, 3),
)
def test_programs_with_a_progress_guarantee_are_correct(case, scheduler, seed, launches):
    program, machine = case
    result = simulate(program, machine, scheduler, seed=seed, launches=launches)
    assert all(g is not None for g in result.guarantees.values()), result.guarantees
    result.check()
    assert result.ok
    assert result.makespan >= work_lower_bound(program, machine, launches)


@PROPERTY_SETTINGS
@given(programs(mechanism="co-resident"), st.data())
def test_an_under_counting_policy_is_detected(case, data):
    program, machine = case
    producers = sorted({d.producer for d in program.dependencies})
    victim = program.stage(data.draw(st.sampled_from(producers)))
    correct = victim.policy
    posts = correct.posts.data
    victim.policy = SimPolicy(correct.semaphore_index, posts - 1)
    # Semaphores never reset: launch e waits for e·(posts-1) but finds (e-1)·posts there,
    # so from launch `posts` on every wait on the victim passes at once.
    result = simulate(program, machine, "adversarial", launches=max(posts, 1))
    assert result.semaphore_mismatches, "the post count never matches"
    assert all(m.stage == victim.name for m in result.semaphore_mismatches)
    # A consumer tile that reads only victim tiles is dispatched at its launch's start and
    # reads before the victim stores: detection is certain there.
    reads_only_victim = any(
        any(
            d.reads(tile)
            for d in program.dependencies
            if d.consumer == stage.name and d.producer == victim.name
        )
        and not any(
            d.reads(tile)
            for d in program.dependencies
            if d.consumer == stage.name and d.producer != victim.name
        )
        for stage in program.stages
        for tile in grid_tiles(stage.grid)
    )
    early = [v for v in result.violations if v.kind == "read-before-write"]
    assert all(v.producer == victim.name for v in early)
    if reads_only_victim:
        assert early


@PROPERTY_SETTINGS
@given(
    programs(),
    st.booleans(),
    st.sampled_from(SCHEDULERS),
    st.sampled_from(["all_dispatched", "first_started"]),
    st.integers(0, 2**16),
)
def test_a_claimed_guarantee_holds(case, strip, scheduler, wait_kernel_mode, seed):
    # With the mechanism stripped (no wait-kernels, no PDL) many programs have none left;
    # whatever the check still claims must hold under every scheduler.
    program, machine = case
    if strip:
        program.launches = [
            Launch(i.stage, i.stream, i.priority)
            for i in program.launches
            if isinstance(i, Launch)
        ]
    result = simulate(program, machine, scheduler, seed=seed, wait_kernel_mode=wait_kernel_mode)
    if all(g is not None for g in result.guarantees.values()):
        result.check()
    else:
        assert not result.violations  # a correct policy never reads early, hang or not


def test_clipped_conv_halo_from_ir_runs_clean_and_catches_a_short_wait():
    """A 3×3 conv chain whose halo is clipped at the border, read from IR: correct under every
    scheduler with PDL; with the row policy's posts one short, the simulator reports it."""
    from tilesync.api import lower, parse

    text = (Path(__file__).parent / "Inputs" / "clipped_conv_chain.mlir").read_text()
    module = parse(text)
    lower(module, ["sync-generate-policies"])
    program = program_from_ir(module)
    for scheduler in ("in_order", "random", "adversarial"):
        result = simulate(program, SimMachine(sms=4, blocks_per_sm=2), scheduler=scheduler,
                          seed=1, launches=2)
        assert result.ok, (scheduler, result.violations, result.deadlock)
    stage = next(op for op in module.walk() if getattr(op, "sym_name", None) is not None
                 and op.name == "sync.stage" and op.sym_name.data == "conv1")
    short = SimPolicy(lambda tile: stage.policy.semaphore_index(tile), stage.policy.posts.data - 1)
    result = simulate(program_from_ir(module, policies={"conv1": short}),
                      SimMachine(sms=4, blocks_per_sm=2), scheduler="adversarial", seed=1)
    assert result.violations or result.semaphore_mismatches

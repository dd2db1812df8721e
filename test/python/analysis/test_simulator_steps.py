"""The simulator follows a compiled kernel's own order (`kernel_steps`): at each step the
waits the kernel performs, then the producer tiles its loads touch. A kernel whose load of
k-step k reads the tile it waits for only at step k + 1 reads early there, which the
block-level model (wait for every declared tile, then read) cannot see."""

from __future__ import annotations

import pytest

from tilesync.analysis.simulator import SimMachine, program_from_ir, simulate
from tilesync.api import parse, run_passes

# @c's one block reads @p's 4 tiles, one per k-step %k; its load reads tile `READ`
# (%k itself, or the next step's tile: an off-by-one between the wait and the read).
PROGRAM = """
builtin.module {
  gpu.module @k {
    gpu.func @f_p(%out: memref<4xf32>) kernel attributes {gpu.known_block_size = array<i32: 1, 1, 1>} {
      %t = sync.tile : index
      %zero = arith.constant 0.000000e+00 : f32
      memref.store %zero, %out[%t] : memref<4xf32>
      sync.store_point [%t]
      gpu.return
    }
    gpu.func @f_c(%in: memref<4xf32>, %out: memref<1xf32>) kernel attributes {gpu.known_block_size = array<i32: 1, 1, 1>} {
      %t = sync.tile : index
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      %zero = arith.constant 0.000000e+00 : f32
      LOOP
      memref.store %zero, %out[%t] : memref<1xf32>
      sync.store_point [%t]
      gpu.return
    }
  }
  sync.stage @p {kernel = @k::@f_p, grid = array<i64: 4>, block = array<i64: 1>, tile = array<i64: 1>}
  sync.stage @c {kernel = @k::@f_c, grid = array<i64: 1>, block = array<i64: 1>, tile = array<i64: 1>}
  sync.dependency @p -> @c operand 0 tiles (d0)[s0] -> (s0) forall s0 in [0, 4)
  sync.launch @p
  sync.launch @c {stream = 1 : i64}
}
"""  # noqa: E501

STEPPED = """scf.for %k = %c0 to %c4 step %c1 {
        sync.load_point operand 0 [%t] step %k
        %i = affine.apply affine_map<()[s0] -> (READ)> ()[%k]
        %v = memref.load %in[%i] : memref<4xf32>
      }"""
ON_TIME, AHEAD = "s0", "(s0 + 1) mod 4"

# every load in a loop without synchronization, which runs abstractly: which tile each
# iteration reads, and when, cannot be told
UNFOLLOWABLE = """sync.load_point operand 0 [%t]
      scf.for %k = %c0 to %c4 step %c1 {
        %v = memref.load %in[%k] : memref<4xf32>
      }"""


def _compiled(loop: str):
    module = parse(PROGRAM.replace("LOOP", loop))
    # one semaphore per tile: each step's wait covers only that step's tile
    run_passes(module, ["sync-generate-policies", "sync-select-policy{policy=tile}",
                        "sync-insert-post-wait"])
    return module


def _simulate(loop: str, follow_kernels: bool = True):
    # @p's tile t is stored at tick 10 (t + 1): @c's wait of step k passes at 10 (k + 1)
    program = program_from_ir(_compiled(loop), follow_kernels=follow_kernels,
                              durations={"p": lambda tile: 10 * (tile[0] + 1), "c": 4})
    return program, simulate(program, SimMachine(sms=8))


def test_a_followed_block_waits_and_reads_where_its_kernel_does():
    program, _ = _simulate(STEPPED.replace("READ", AHEAD))
    steps = program.stage("c").kernel_steps[(0,)]
    assert [(step.waits, step.reads) for step in steps] == [
        ((("p", k, 1),), (("p", ((k + 1) % 4,)),)) for k in range(4)]
    assert program.unfollowed == {}
    _, result = _simulate(STEPPED.replace("READ", AHEAD))
    assert result.followed == ("c",) and result.unfollowed == {}


def test_the_correct_kernel_runs_clean():
    _, result = _simulate(STEPPED.replace("READ", ON_TIME))
    assert result.ok, (result.violations, result.deadlock)


def test_a_read_before_its_wait_is_an_early_read():
    _, result = _simulate(STEPPED.replace("READ", AHEAD))
    early = [(v.time, v.producer_tile) for v in result.violations
             if v.kind == "read-before-write"]
    # step 0 waits for tile 0 (stored at 10) and reads tile 1 (stored at 20), and so on; the
    # last step reads tile 0, long stored
    assert early == [(10, (1,)), (20, (2,)), (30, (3,))]


def test_the_block_level_model_cannot_see_the_off_by_one():
    # why the simulator follows the kernel: waiting for every declared tile first, the
    # off-by-one read is always late enough
    _, result = _simulate(STEPPED.replace("READ", AHEAD), follow_kernels=False)
    assert result.ok


def test_an_unfollowable_kernel_keeps_the_block_level_model_and_says_why():
    program, result = _simulate(UNFOLLOWABLE)
    assert program.stage("c").kernel_steps is None
    assert "may or may not run" in program.unfollowed["c"]
    assert result.followed == () and result.unfollowed == program.unfollowed
    assert result.ok


@pytest.mark.parametrize("read, wrong", [(ON_TIME, []), (AHEAD, [(1, "c", (0,))])])
def test_the_reference_output_is_computed_from_the_followed_reads(read, wrong):
    # the same reads in the same order: the on-time kernel's output matches it, the early
    # reads' stale values reach the off-by-one kernel's
    _, result = _simulate(STEPPED.replace("READ", read))
    assert result.mismatched_tiles == wrong


def test_a_probe_until_ready_is_followed_as_its_waits_before_the_first_read():
    # the probe waits for all four tiles before step 0: the off-by-one read is late enough
    # (the waits of the steps, skipped on the GPU, are followed too and pass at once: step 0's
    # is one of the four)
    module = parse(PROGRAM.replace("LOOP", STEPPED.replace("READ", AHEAD)))
    run_passes(module, ["sync-generate-policies", "sync-select-policy{policy=tile}",
                        "sync-insert-post-wait{probe_until_ready=true}"])
    program = program_from_ir(module, follow_kernels=True,
                              durations={"p": lambda tile: 10 * (tile[0] + 1), "c": 4})
    steps = program.stage("c").kernel_steps[(0,)]
    assert steps[0].waits == tuple(("p", k, 1) for k in range(4))
    assert steps[0].reads == (("p", (1,)),)
    result = simulate(program, SimMachine(sms=8))
    assert result.ok and result.followed == ("c",), (result.violations, result.unfollowed)


def test_a_probes_points_are_evaluated_at_once_as_one_by_one():
    """kernel_eval.probe_semaphores evaluates a part's points together (a probe may name
    PROBE_POINT_LIMIT of them: point by point, 65,536 took seconds): the same semaphores and
    clipping as evaluating each point's map, in the parts' order, symbols row-major."""
    import itertools

    import numpy as np

    from tilesync.analysis.kernel_eval import affine_exact, probe_semaphores
    from tilesync.dialects import sync

    probe_line = (
        "%r = sync.probe %sp[%x, %y] epoch %epoch policy #sync.policy<TileSync (d0, d1) -> "
        "(d0 * 3 + d1), posts = 1> reads [affine_map<(d0, d1)[s0, s1] -> (d0 + s0, d1 * 2 + "
        "s1)>, affine_map<(d0, d1)[s0] -> (d0, s0)>] over [array<i64: -1, 3, 1, 0, 5, 2>, "
        "array<i64: 0, 2, 1>] clipped_to array<i64: 4, 3> : memref<?xi32>")
    module = parse(f"""
    gpu.module @k {{
      gpu.func @c(%sp: memref<?xi32>, %epoch: i32) kernel {{
        %x, %y = sync.tile : index, index
        {probe_line}
        gpu.return
      }}
    }}""")
    (probe,) = [op for op in module.walk() if isinstance(op, sync.ProbeOp)]
    coords = [np.array([0, 1, 3]), np.array([0, 1, 0])]
    semaphores, inside = probe_semaphores(probe, coords, 3)
    expected = []
    for amap, ranges in probe.parts():
        for syms in itertools.product(*(range(r.lo, r.hi, r.step) for r in ranges)):
            produced = [affine_exact(e, coords, list(syms), probe) for e in amap.results]
            valid = (produced[0] >= 0) & (produced[0] < 4) & (produced[1] >= 0) & \
                (produced[1] < 3)
            semaphore = affine_exact(probe.policy.sem_map.data.results[0], produced, (), probe)
            expected.append((np.broadcast_to(semaphore, 3), np.broadcast_to(valid, 3)))
    assert semaphores.shape == inside.shape == (4 * 3 + 2, 3)
    assert (semaphores == np.stack([s for s, _ in expected])).all()
    assert (inside == np.stack([v for _, v in expected])).all() and not inside.all()

"""The one forward-progress rule set: co-residency counted over the whole program, the ordering
guarantees of a host plan (PDL only after the previous launch on the same stream), the W rule;
sync-verify and the simulator agree because both ask it."""

from __future__ import annotations

import math
from functools import cache

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tilesync.analysis.forward_progress import (
    CO_RESIDENT,
    ONE_LAUNCH,
    PDL,
    STREAM_ORDER,
    WAIT_KERNEL,
    WAVE_MODEL,
    ProgressFacts,
    Residency,
    analyze,
    dependency_cycle,
    guarantees,
    wait_kernel_legality,
)
from tilesync.analysis.simulator import SimMachine, program_from_ir, simulate
from tilesync.analysis.stage_graph import Launch, WaitKernel
from tilesync.analysis.wave_model import StageWaves
from tilesync.api import lower, parse
from tilesync.contract import CompileError, all_resident

# --- co-residency ----------------------------------------------------------------------------


def test_all_resident_counts_blocks_against_the_smallest_occupancy_or_in_units():
    assert all_resident([(100, 2), (164, 2)], 132)  # 264 = 132 x 2
    assert not all_resident([(100, 2), (165, 2)], 132)
    # 100 whole-SM blocks and 40 quarter-SM blocks: the quarters may spread over 40 SMs
    assert not all_resident([(100, 1), (40, 4)], 132)
    assert all_resident([(92, 1), (40, 4)], 132)
    assert all_resident([], 1) and all_resident([(0, 1)], 1)
    assert not all_resident([(1, 0)], 8)  # a kernel that cannot run


@cache
def _adversary_wins(loads: tuple[int, ...], pending: tuple[int, ...], capacity: int) -> bool:
    """Whether some dispatch order and placement of the pending blocks (sizes in units) reaches
    a state where a pending block fits on no SM."""
    if not pending:
        return False
    for unit in set(pending):
        rest = list(pending)
        rest.remove(unit)
        fits = [sm for sm, load in enumerate(loads) if load + unit <= capacity]
        if not fits:
            return True
        for sm in fits:
            placed = list(loads)
            placed[sm] += unit
            if _adversary_wins(tuple(sorted(placed)), tuple(sorted(rest)), capacity):
                return True
    return False


@given(
    st.integers(1, 3),
    st.lists(st.tuples(st.integers(1, 4), st.integers(1, 4)), min_size=1, max_size=3),
)
def test_all_resident_is_sound_against_every_placement(sms, kernels):
    if not all_resident(kernels, sms):
        return
    capacity = math.lcm(*(b for _, b in kernels))
    pending = tuple(sorted(capacity // b for blocks, b in kernels for _ in range(blocks)))
    assert not _adversary_wins((0,) * sms, pending, capacity)


def test_co_residency_counts_every_stage_of_the_program():
    # Producer and consumer alone fit on 2 SMs x 2; a third stage's blocks do not leave room.
    pair = {"p": Residency(2, 2), "c": Residency(2, 2)}
    program = {**pair, "x": Residency(4, 2)}
    plan = [Launch("p", 0), Launch("c", 1), Launch("x", 2)]
    alone = guarantees(ProgressFacts(["p", "c"], [("p", "c")], plan[:2], pair, sms=2))
    assert alone[("p", "c")].kind == CO_RESIDENT
    whole = guarantees(ProgressFacts(list(program), [("p", "c")], plan, program, sms=2))
    assert whole[("p", "c")] is None


def test_unknown_occupancy_or_sms_shows_no_co_residency():
    residency = {"p": Residency(2, 2)}  # @c's occupancy unknown
    plan = [Launch("p", 0), Launch("c", 1)]
    assert guarantees(ProgressFacts(["p", "c"], [("p", "c")], plan, residency, 8)) == {
        ("p", "c"): None
    }
    declared = ProgressFacts(["p", "c"], [("p", "c")], plan, {}, declared_co_resident={"c"})
    assert str(guarantees(declared)[("p", "c")]) == "co-resident (declared)"


# --- ordering --------------------------------------------------------------------------------


def kind_of(plan, dependencies=(("p", "c"),), **facts):
    names = sorted({n for pair in dependencies for n in pair})
    result = guarantees(ProgressFacts(names, list(dependencies), plan, {}, **facts))
    found = result[dependencies[0]]
    return None if found is None else found.kind


@pytest.mark.parametrize(
    "plan, expected",
    [
        ([Launch("p"), Launch("c")], STREAM_ORDER),
        ([Launch("p"), Launch("c", pdl=True)], PDL),
        # PDL orders a launch after the previous launch on its own stream only
        ([Launch("p", 0), Launch("c", 1, pdl=True)], None),
        ([Launch("p", 0), Launch("x", 1), Launch("c", 1, pdl=True)], None),
        # a plain launch between them: the consumer waits for it to complete
        ([Launch("p"), Launch("x"), Launch("c", pdl=True)], STREAM_ORDER),
        ([Launch("p"), Launch("x", pdl=True), Launch("c", pdl=True)], PDL),
        # the step right after the producer decides: x starts once p's blocks all started,
        # c after x completed, which says nothing of p's completion
        ([Launch("p"), Launch("x", pdl=True), Launch("c")], PDL),
        ([Launch("p", 0), WaitKernel("p", 1), Launch("c", 1)], WAIT_KERNEL),
        ([Launch("p", 0), WaitKernel("p", 2), Launch("c", 1)], None),  # another stream
        ([WaitKernel("p", 1), Launch("c", 1), Launch("p", 0)], WAIT_KERNEL),
        # the consumer ahead of its producer on one stream: the producer never starts
        ([Launch("c", pdl=True), Launch("p")], None),
        ([Launch("p", 0)], None),  # the consumer is never launched
        # one launch: the producer's tickets first, or nothing orders them
        ([Launch("p"), Launch("c", fused=True)], ONE_LAUNCH),
        ([Launch("p", 1), Launch("x", 0), Launch("c", 1, fused=True)], ONE_LAUNCH),
        ([Launch("p"), Launch("x", fused=True), Launch("c", fused=True)], ONE_LAUNCH),
        ([Launch("c"), Launch("p", fused=True)], None),
        # a launch others join is one step of its stream, ordered as a whole
        ([Launch("p"), Launch("x"), Launch("c", fused=True)], STREAM_ORDER),
        ([Launch("p"), Launch("x", pdl=True), Launch("c", fused=True)], PDL),
        ([Launch("p"), Launch("x", fused=True), Launch("c")], STREAM_ORDER),
        ([Launch("p", 0), WaitKernel("p", 1), Launch("x", 1), Launch("c", 1, fused=True)],
         WAIT_KERNEL),
        # a wait-kernel between: the launch after it is its own (sync.launch refuses the IR)
        ([Launch("x"), WaitKernel("p"), Launch("c", fused=True), Launch("p", 1)], WAIT_KERNEL),
    ],
)
def test_ordering_guarantees(plan, expected):
    assert kind_of(plan) == expected


def test_one_launch_holds_the_slots_of_its_largest_kernel():
    # each stage alone fits 4 an SM (8 + 8 blocks on 4 SMs); p's kernel only 2: their one
    # kernel of blocks of one size fits 2 an SM, 8 blocks of the 16
    def kind(plan, sms, p_per_sm, threads=(128, 128)):
        residency = {"c": Residency(8, 4), "p": Residency(8, p_per_sm)}
        found = guarantees(ProgressFacts(["c", "p"], [("p", "c")], plan, residency, sms,
                                         block_threads=dict(zip("cp", threads))))
        return None if found[("p", "c")] is None else found[("p", "c")].kind

    backwards = [Launch("c"), Launch("p", fused=True)]
    assert kind(backwards, 4, 4) == CO_RESIDENT
    assert kind(backwards, 4, 2) is None
    assert kind(backwards, 8, 2) == CO_RESIDENT
    # blocks of two sizes: the kernel may hold one stage's registers in the other's larger
    # block, so it counts one block an SM (or block sizes unknown)
    assert kind(backwards, 8, 2, (128, 256)) is None
    assert kind(backwards, 16, 2, (128, 256)) == CO_RESIDENT
    assert kind(backwards, 8, 2, ()) is None


def test_a_launch_others_join_does_not_wait_for_its_own_stages():
    report = analyze(ProgressFacts(["p", "c", "d"], [("p", "c"), ("c", "d")],
                                   [Launch("p"), Launch("c", fused=True), Launch("d")], {}))
    assert not report.stuck and report.cycle is None
    assert {pair: g.kind for pair, g in report.guarantees.items()} == {
        ("p", "c"): ONE_LAUNCH, ("c", "d"): STREAM_ORDER}
    reversed_ = analyze(ProgressFacts(["p", "c"], [("p", "c")],
                                      [Launch("c"), Launch("p", fused=True)], {}))
    assert ("p", "c") not in reversed_.blocked  # co-residency could still save it
    assert "tickets first" in reversed_.reasons[("p", "c")]


def test_the_papers_wait_kernel_needs_in_order_dispatch_and_no_higher_priority():
    plan = [Launch("p", 0), WaitKernel("p", 1), Launch("c", 1)]
    assert kind_of(plan, wait_kernel_ends="first_started") is None
    assert kind_of(plan, wait_kernel_ends="first_started", in_order_dispatch=True) == WAIT_KERNEL
    urgent = [Launch("p", 0), WaitKernel("p", 1), Launch("c", 1, priority=-1)]
    assert kind_of(urgent, wait_kernel_ends="first_started", in_order_dispatch=True) is None


def test_a_wait_kernel_counts_only_where_it_works():
    plan = [Launch("p", 0), WaitKernel("p", 1), Launch("c", 1)]
    assert kind_of(plan, working_wait_kernels={"p"}) == WAIT_KERNEL
    report = analyze(ProgressFacts(["p", "c"], [("p", "c")], plan, {},
                                   working_wait_kernels=set()))
    assert report.guarantees[("p", "c")] is None
    assert "does not work" in report.reasons[("p", "c")]
    assert [why for _, why in report.stuck] == [
        "the wait-kernel of @p (stream 1) never ends: @p's kernel does not post its start flag "
        "once on entry at flag[0], or the module's wait-kernel function does not wait for that "
        "flag to reach the host's target (run sync-insert-wait-kernel)"]


def test_cycles_are_named():
    deps = [("a", "b"), ("b", "c"), ("c", "a"), ("x", "a")]
    assert dependency_cycle(["x", "a", "b", "c"], deps) == ("a", "b", "c", "a")
    assert dependency_cycle(["a", "b"], [("a", "b")]) is None
    plan = [Launch(n, i) for i, n in enumerate(["x", "a", "b", "c"])]
    report = analyze(ProgressFacts(["x", "a", "b", "c"], deps, plan, {},
                                   declared_co_resident={"a", "b", "c"}))
    assert report.cycle == ("a", "b", "c", "a")
    assert report.guarantees[("a", "b")] is None and ("a", "b") in report.blocked
    assert "cycle @a -> @b -> @c -> @a" in report.reasons[("a", "b")]
    # a consumer launched ahead of its producer on one stream: the chain of launches is named
    behind = analyze(ProgressFacts(["p", "c"], [("p", "c")], [Launch("c"), Launch("p")], {}))
    assert behind.reasons[("p", "c")] == ("the launch of @p cannot start before @c "
                                          "progresses: @p follows @c on stream 0")


def test_a_declared_co_residency_the_counts_contradict_is_refused():
    residency = {n: Residency(2, 1) for n in "abc"}
    plan = [Launch("a", 0), Launch("b", 1), Launch("c", 2)]
    deps = [("a", "b"), ("b", "c")]
    report = analyze(ProgressFacts(list("abc"), deps, plan, residency, sms=4,
                                   declared_co_resident={"b", "c"}))
    assert report.guarantees[("a", "b")] is None
    assert "declared coresident, but not all 6 blocks are co-resident" in \
        report.reasons[("a", "b")]
    # unknown counts: the declaration is taken as said
    trusted = analyze(ProgressFacts(list("abc"), deps, plan, {}, declared_co_resident={"b"}))
    assert str(trusted.guarantees[("a", "b")]) == "co-resident (declared)"


# --- W ---------------------------------------------------------------------------------------


def test_wait_kernel_legality_counts_the_other_stages():
    p, c = StageWaves(132, 2, 132), StageWaves(66, 2, 132)  # 0.5 + 0.25 waves
    assert wait_kernel_legality(p, c)
    # another stage's 200 blocks with the consumer's 66 can fill all 264 slots first
    verdict = wait_kernel_legality(p, c, [StageWaves(200, 2, 132)])
    assert not verdict and "blocks of other stages" in verdict.reason
    assert wait_kernel_legality(p, c, [StageWaves(10, 2, 132)])


def test_the_wave_model_rule_is_a_guarantee_of_last_resort():
    residency = {"p": Residency(132, 2), "c": Residency(66, 2)}
    plan = [Launch("p", 0), Launch("c", 1)]
    # 198 blocks do not fit in 80 x 2 slots, but 1.24 waves and 66 consumer blocks cannot
    # fill them first
    found = guarantees(ProgressFacts(["p", "c"], [("p", "c")], plan, residency, sms=80))
    assert found[("p", "c")].kind == WAVE_MODEL
    assert str(found[("p", "c")]).startswith("wave model: ")


# --- sync-verify and the simulator agree ------------------------------------------------------

KERNELS = """
gpu.module @k {
  gpu.func @p(%out: memref<?xf32>, %sems: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    sync.post %sems[%x, %y] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 4> : memref<?xi32>
    gpu.return
  }
  gpu.func @c(%a: memref<?xf32>, %sp: memref<?xi32>, %epoch: i32) kernel attributes {sync.args = ["sems:@p", "epoch"]} {
    %x, %y = sync.tile : index, index
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    scf.for %k = %c0 to %c4 step %c1 {
      sync.wait %sp[%x, %k] epoch %epoch policy #sync.policy<RowSync (d0, d1) -> (d0), posts = 4> : memref<?xi32>
      sync.load_point operand 0 [%x, %y] step %k
      %e = affine.apply affine_map<(d0, d1) -> (d0 * 16384 + d1 * 64)>(%x, %k)
      %v = memref.load %a[%e] : memref<?xf32>
    }
    gpu.return
  }
}
sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 4>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, policy = #sync.policy<RowSync (d0, d1) -> (d0), posts = 4>}
sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 2>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
sync.dependency @p -> @c operand 0 tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 4)
sync.launch @p
"""  # noqa: E501


@pytest.mark.parametrize(
    "consumer_launch, proved",
    [("sync.launch @c {pdl = true}", True),  # right after @p on its stream
     ("sync.launch @c {stream = 1 : i64, pdl = true}", False)],  # on another stream
)
def test_verify_and_the_simulator_agree_on_pdl(consumer_launch, proved):
    text = KERNELS + consumer_launch
    # the simulator: one slot, so a consumer block dispatched first starves the producer
    program = program_from_ir(parse(text))
    result = simulate(program, SimMachine(sms=1), "adversarial")
    assert result.guarantees == {("p", "c"): PDL if proved else None}
    assert (result.deadlock is None) == proved
    # sync-verify: the same rule, the same verdict
    module = parse(text)
    if proved:
        lower(module, ["sync-verify"])
        consumer = next(op for op in module.walk() if op.name == "sync.stage"
                        and op.sym_name.data == "c")
        assert consumer.attributes["sync.progress"].data == "@p: programmatic dependent launch"
    else:
        with pytest.raises(CompileError, match="no forward-progress guarantee for @c"):
            lower(module, ["sync-verify"])


@pytest.mark.parametrize("pdl_stream", [0, 1])
@pytest.mark.parametrize("scheduler", ["in_order", "random", "adversarial"])
def test_claimed_pdl_guarantees_hold_in_the_simulator(pdl_stream, scheduler):
    program = program_from_ir(parse(KERNELS + f"sync.launch @c {{stream = {pdl_stream} : i64, "
                                              f"pdl = true}}"))
    for seed in range(3):
        result = simulate(program, SimMachine(sms=2), scheduler, seed=seed, launches=2)
        if result.guarantees[("p", "c")] is not None:
            result.check()


def test_the_adversary_of_the_soundness_check_spreads_blocks():
    # Two half-SM blocks and a whole-SM block: on 2 SMs the halves may take one SM each, which
    # leaves the whole block nowhere (all_resident says so too); on 3 SMs there is room.
    assert _adversary_wins((0, 0), (1, 1, 2), 2)
    assert not all_resident([(2, 2), (1, 1)], 2)
    assert not _adversary_wins((0, 0, 0), (1, 1, 2), 2)
    assert all_resident([(2, 2), (1, 1)], 3)


def test_a_pipeline_in_clusters_needs_one_cluster_resident_not_the_grid():
    """Cluster queues wait only inside a cluster, which the hardware starts whole: 9 stages
    are past the portable cluster size, a block that fits nowhere never starts."""
    from tilesync.analysis.forward_progress import Residency, cluster_residency

    fits = cluster_residency(Residency(2, 1))
    assert fits and "clusters wait on no other" in fits.reason
    assert not cluster_residency(Residency(9, 4))
    assert not cluster_residency(Residency(2, 0))

"""The queue model of the simulator: for any pipeline whose CTAs are all resident, every ticket
reaches every sink once, filled, under adversarial orders and across launches, whether a CTA is
one queue worker or several (groups of threads, `threads N`); a wrong wait shows up as an early
read or an overwrite, a dropped release as a deadlock naming the queue, ticket and worker, and
a pipeline that does not fit as CTAs that never get a slot."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tilesync.analysis.simulator.queues import (
    QueueFaults,
    SimQueue,
    SimQueueStage,
    simulate_pipeline,
)


@st.composite
def pipelines(draw):
    """A chain source -> relay* -> sink, optionally a second sink on the first queue
    (multicast); every stage moves the same number of tiles per launch, its CTAs one, two or
    four queue workers each, drawing its next tickets ahead or not."""
    tiles = draw(st.integers(1, 12))
    relays = draw(st.integers(0, 2))
    queues = [SimQueue(f"q{i}", draw(st.integers(1, 4))) for i in range(relays + 1)]

    def shape() -> dict:
        splits = [(c, w) for c in range(1, 5) for w in (1, 2, 4) if tiles % (c * w) == 0]
        ctas, workers = draw(st.sampled_from(splits))
        return dict(ctas=ctas, iterations=tiles // (ctas * workers), workers=workers,
                    draw_ahead=draw(st.booleans()))

    stages = [SimQueueStage("source", outputs=("q0",), **shape())]
    for i in range(relays):
        stages.append(SimQueueStage(f"relay{i}", inputs=(f"q{i}",), outputs=(f"q{i + 1}",),
                                    relay=draw(st.booleans()), **shape()))
    stages.append(SimQueueStage("sink", inputs=(f"q{relays}",), **shape()))
    if draw(st.booleans()):
        stages.append(SimQueueStage("tap", inputs=("q0",), **shape()))
    return queues, stages, tiles


@settings(max_examples=150, deadline=None)
@given(pipelines(), st.sampled_from(["in_order", "random", "adversarial"]),
       st.integers(0, 10_000), st.integers(1, 3))
def test_resident_pipelines_deliver_every_ticket_once(pipeline, scheduler, seed, launches):
    queues, stages, tiles = pipeline
    result = simulate_pipeline(queues, stages, sms=64, scheduler=scheduler, seed=seed,
                               launches=launches)
    assert result.ok, (result.deadlock, result.violations[:3])
    for sink, tickets in result.delivered.items():
        assert sorted(tickets) == list(range(tiles * launches)), sink


@settings(max_examples=60, deadline=None)
@given(pipelines(), st.integers(0, 10_000))
def test_persistent_launch_of_a_pipeline_that_fits_never_deadlocks(pipeline, seed):
    queues, stages, _ = pipeline
    total = sum(s.ctas for s in stages)
    result = simulate_pipeline(queues, stages, sms=total, scheduler="adversarial", seed=seed,
                               persistent=True)
    assert result.ok


def _chain(entries=2, tiles=8, ctas=2, per_sm=1):
    queue = SimQueue("q", entries)
    return [queue], [SimQueueStage("source", ctas, tiles // ctas, outputs=("q",),
                                   blocks_per_sm=per_sm),
                     SimQueueStage("sink", ctas, tiles // ctas, inputs=("q",),
                                   blocks_per_sm=per_sm)]


def test_a_wait_one_short_reads_early():
    queues, stages = _chain()
    found = [simulate_pipeline(queues, stages, sms=8, scheduler="adversarial", seed=seed,
                               faults=QueueFaults(full_target_offset=-1)).violations
             for seed in range(5)]
    kinds = {v.kind for vs in found for v in vs}
    assert "early-read" in kinds


def test_a_producer_wait_one_short_overwrites_an_unread_entry():
    queues, stages = _chain(entries=1)
    found = [v for seed in range(10)
             for v in simulate_pipeline(queues, stages, sms=8, scheduler="random", seed=seed,
                                        faults=QueueFaults(empty_target_offset=-1)).violations]
    assert any(v.kind == "overwrite" and v.queue == "q" for v in found)


def test_a_dropped_release_deadlocks_naming_queue_ticket_and_what_it_waited_for():
    queues, stages = _chain(entries=2, tiles=8)
    result = simulate_pipeline(queues, stages, sms=8, seed=1,
                               faults=QueueFaults(drop_release="sink"))
    assert result.deadlock
    wait = next(w for w in result.deadlock if w.stage == "source")
    assert (wait.queue, wait.waits_for) == ("q", "free")
    assert wait.ticket >= 2 and wait.seen < wait.expected
    # the sink waits for a fill that the stuck source will never make
    assert all(w.waits_for == "full" for w in result.deadlock if w.stage == "sink")


def _residual(mid_ctas: int, relay: bool) -> tuple[list[SimQueue], list[SimQueueStage]]:
    """source -> p (and r, given p's ticket) ; mid: p -> c ; join: r and c, c given r's
    ticket. `relay`: mid gives c the ticket of the p tile it holds, else draws c's."""
    queues = [SimQueue("p", 2), SimQueue("r", 8), SimQueue("c", 1)]
    return queues, [
        SimQueueStage("source", 8, 0, outputs=("p", "r"), tiles=8, given=(("r", "p"),)),
        SimQueueStage("mid", mid_ctas, 0, inputs=("p",), outputs=("c",), tiles=8,
                      relay=relay),
        SimQueueStage("join", 1, 0, inputs=("r", "c"), tiles=8, given=(("c", "r"),))]


def test_a_join_of_tickets_that_name_different_tiles_is_caught():
    # mid's four CTAs draw c's tickets in the order they come: ticket t of c holds the data of
    # another p tile than ticket t of r, which the join pairs with it
    found = {v.kind for seed in range(20) for scheduler in ("random", "adversarial")
             for v in simulate_pipeline(*_residual(4, relay=False), sms=16,
                                        scheduler=scheduler, seed=seed,
                                        launches=2).violations}
    assert found == {"mismatched-join"}
    # relayed, or drawn by one worker in the order it takes p's tickets: every ticket one tile
    for ctas, relay in ((4, True), (1, False)):
        for seed in range(20):
            for scheduler in ("random", "adversarial"):
                result = simulate_pipeline(*_residual(ctas, relay), sms=16,
                                           scheduler=scheduler, seed=seed, launches=2)
                assert result.ok, (ctas, relay, result.deadlock, result.violations[:2])


def test_a_pipeline_that_does_not_fit_deadlocks_with_ctas_left_without_a_slot():
    # consumers dispatched first fill the only SM's slots and spin; the producer never runs
    queues, stages = _chain(entries=2, tiles=4, ctas=2, per_sm=2)
    result = simulate_pipeline(queues, stages, sms=1, scheduler="adversarial",
                               seed=0)
    assert result.deadlock is not None and result.undispatched == 2
    assert all(w.stage == "sink" and w.waits_for == "full" for w in result.deadlock)
    # a cooperative (persistent) launch is refused instead: nothing runs, nothing spins
    refused = simulate_pipeline(queues, stages, sms=1, scheduler="adversarial",
                                persistent=True)
    assert refused.steps == 0 and refused.undispatched == 4


def test_the_workers_of_a_cta_hold_entries_at_once_each_with_its_own_tickets():
    # one CTA per stage, two warpgroups each: the sink's two workers hold both entries of the
    # ring at once; with their releases dropped, every worker of both CTAs waits
    queue = SimQueue("q", 2)
    stages = [SimQueueStage("source", 1, 0, outputs=("q",), tiles=8, workers=2),
              SimQueueStage("sink", 1, 0, inputs=("q",), tiles=8, workers=2)]
    assert simulate_pipeline([queue], stages, sms=2, scheduler="adversarial").ok
    result = simulate_pipeline([queue], stages, sms=2, seed=3,
                               faults=QueueFaults(drop_release="sink"))
    assert result.deadlock is not None
    assert sorted((w.stage, w.cta, w.ticket, w.waits_for) for w in result.deadlock) == [
        ("sink", 0, 2, "full"), ("sink", 0, 3, "full"),
        ("source", 0, 2, "free"), ("source", 0, 3, "free")]
    for stage in ("source", "sink"):
        assert {w.worker for w in result.deadlock if w.stage == stage} == {0, 1}


def test_a_cta_keeps_its_slot_until_its_last_worker_is_done():
    # one SM slot, taken by the source's CTA: its worker with one tile finishes, the one with
    # two waits for a release by the sink, which never gets the slot
    queue = SimQueue("q", 2)
    stages = [SimQueueStage("source", 1, 0, outputs=("q",), tiles=3, workers=2),
              SimQueueStage("sink", 1, 0, inputs=("q",), tiles=3)]
    result = simulate_pipeline([queue], stages, sms=1, scheduler="in_order")
    assert result.deadlock is not None and result.undispatched == 1
    assert [(w.stage, w.ticket, w.waits_for) for w in result.deadlock] == [
        ("source", 2, "free")]
    assert simulate_pipeline([queue], stages, sms=2, scheduler="in_order").ok


def _pipeline_of_lit_program(name: str):
    """The queues and stages the simulator reads from a lowering lit test's pipeline."""
    from tilesync.analysis.simulator.queues import pipeline_from_ir
    from tilesync.api import parse
    from tilesync.dialects import dataflow

    root = Path(__file__).parents[2] / "filecheck" / "lowering"
    module = parse((root / name).read_text())
    pipeline = next(op for op in module.walk() if isinstance(op, dataflow.PipelineOp))
    return pipeline_from_ir(pipeline)


def test_workers_come_from_the_kernels_threads_and_block():
    _, stages = _pipeline_of_lit_program("dataflow_to_nvvm_threads.mlir")
    by_name = {s.name: s for s in stages}
    # 256 threads in groups of 128, 512 in groups of 64, the whole block
    assert {n: s.workers for n, s in by_name.items()} == {"src": 2, "mid": 8, "end": 1}
    # no `tiles`: one tile per worker and launch
    assert {n: s.tiles for n, s in by_name.items()} == {"src": 4, "mid": 16, "end": 2}
    # @relay hands on the ticket it consumed (`acquire_empty at %t`); nobody draws ahead
    assert {n: s.relay for n, s in by_name.items()} == {"src": False, "mid": True, "end": False}
    assert not any(s.draw_ahead for s in stages)


def test_stages_that_draw_ahead_are_read_from_their_kernels():
    queues, stages = _pipeline_of_lit_program("dataflow_to_nvvm_draw.mlir")
    by_name = {s.name: s for s in stages}
    # @source draws its producer tickets ahead, @relay its consumer tickets; @relay's output
    # takes the ticket it consumed, @source's the one it drew ahead (not a relay)
    assert {n: (s.draw_ahead, s.relay) for n, s in by_name.items()} == {
        "src": (True, False), "mid": (True, True), "end": (False, False)}
    stages = [dataclasses.replace(s, tiles=12) for s in stages]
    for scheduler in ("random", "adversarial"):
        result = simulate_pipeline(queues, stages, sms=8, scheduler=scheduler, launches=3)
        assert result.ok, (result.deadlock, result.violations[:3])
        assert sorted(result.delivered["end"]) == list(range(36))



def _designed_pipeline():
    """The insert-queues FileCheck program through the design passes."""
    from pathlib import Path

    from tilesync.api import lower, parse
    from tilesync.dialects import dataflow

    root = Path(__file__).parents[2] / "filecheck" / "transforms" / "dataflow"
    module = parse((root / "insert_queues.mlir").read_text())
    lower(module, ["dataflow-form-pipeline{pipeline=mlp}", "dataflow-split-reductions",
                   "dataflow-insert-queues"])
    return next(op for op in module.walk() if isinstance(op, dataflow.PipelineOp))


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(["random", "adversarial"]))
def test_the_designed_pipeline_runs_with_the_depths_the_analysis_chose(seed, scheduler):
    from tilesync.analysis.simulator.queues import pipeline_from_ir

    queues, stages = pipeline_from_ir(_designed_pipeline())
    result = simulate_pipeline(queues, stages, sms=400, scheduler=scheduler, seed=seed,
                               launches=2)
    assert result.ok, (result.deadlock, result.violations[:3])
    assert sorted(result.delivered["l3_final"]) == list(range(2 * 64))  # 2 partials x 32 tiles
    assert sorted(result.delivered["tap"]) == list(range(2 * 64))


def test_a_final_stage_ring_below_the_analysis_minimum_deadlocks():
    # a final tile holds its 2 partials (consecutive tickets) at once: one entry never fits both
    from dataclasses import replace

    from tilesync.analysis.simulator.queues import pipeline_from_ir

    queues, stages = pipeline_from_ir(_designed_pipeline())
    short = [replace(q, entries=1) if q.name == "l3_fanin_tiles" else q for q in queues]
    result = simulate_pipeline(short, stages, sms=400, scheduler="random", seed=0)
    assert result.deadlock
    assert any(w.queue == "l3_fanin_tiles" and w.waits_for == "free" for w in result.deadlock)
    # the minimum the analysis asks for (2 entries) is enough
    enough = [replace(q, entries=2) if q.name == "l3_fanin_tiles" else q for q in queues]
    assert all(simulate_pipeline(enough, stages, sms=400, scheduler="adversarial",
                                 seed=seed).ok for seed in range(5))


def test_a_pipeline_in_clusters_is_modelled_one_cluster_at_a_time():
    """Cluster queues: each cluster is one CTA a stage and a ring of its own; the model of
    cluster c takes the stage's tiles of CTA c (verify_cluster.mlir's pipeline: 16 each), runs
    clean, and an imbalanced cluster (its consumer takes 32) waits forever."""
    from tilesync.analysis.simulator.queues import pipeline_from_ir
    from tilesync.api import parse
    from tilesync.dialects import dataflow

    root = Path(__file__).parents[2] / "filecheck" / "transforms" / "dataflow"
    module = parse((root / "verify_cluster.mlir").read_text())
    pipeline = next(op for op in module.walk() if isinstance(op, dataflow.PipelineOp))
    for cluster in (0, 65):
        queues, stages = pipeline_from_ir(pipeline, cluster)
        assert [(s.ctas, s.tiles, s.workers) for s in stages] == [(1, 16, 1), (1, 16, 1)]
        assert [q.entries for q in queues] == [4]
        for scheduler in ("random", "adversarial"):
            # a cluster's CTAs start together: room for both
            result = simulate_pipeline(queues, stages, sms=2, scheduler=scheduler, launches=2)
            assert result.ok and sorted(result.delivered["drain"]) == list(range(32))
    short = [stages[0], dataclasses.replace(stages[1], tiles=32)]
    assert simulate_pipeline(queues, short, sms=2, scheduler="random").deadlock is not None
    with pytest.raises(ValueError, match="66 clusters, no cluster 66"):
        pipeline_from_ir(pipeline, 66)

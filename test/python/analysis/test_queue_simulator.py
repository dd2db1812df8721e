"""The queue model of the simulator: for any pipeline whose CTAs are all resident, every ticket
reaches every sink once, filled, under adversarial orders and across launches; a wrong wait
shows up as an early read or an overwrite, a dropped release as a deadlock naming the queue
and ticket, and a pipeline that does not fit as CTAs that never get a slot."""

from __future__ import annotations

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
    (multicast); every stage moves the same number of tiles per launch."""
    tiles = draw(st.integers(1, 12))
    relays = draw(st.integers(0, 2))
    queues = [SimQueue(f"q{i}", draw(st.integers(1, 4))) for i in range(relays + 1)]

    def ctas_for() -> tuple[int, int]:
        divisors = [d for d in range(1, 5) if tiles % d == 0]
        ctas = draw(st.sampled_from(divisors))
        return ctas, tiles // ctas

    ctas, iters = ctas_for()
    stages = [SimQueueStage("source", ctas, iters, outputs=("q0",))]
    for i in range(relays):
        ctas, iters = ctas_for()
        stages.append(SimQueueStage(f"relay{i}", ctas, iters, inputs=(f"q{i}",),
                                    outputs=(f"q{i + 1}",), relay=draw(st.booleans())))
    ctas, iters = ctas_for()
    stages.append(SimQueueStage("sink", ctas, iters, inputs=(f"q{relays}",)))
    if draw(st.booleans()):
        ctas, iters = ctas_for()
        stages.append(SimQueueStage("tap", ctas, iters, inputs=("q0",)))
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

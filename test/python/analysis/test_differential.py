"""sync-verify against the simulator (issue 13): hypothesis draws random stage programs (2–5
stages, grids, dependencies, policies, tile orders, streams, PDL, wait-kernels, co-residency
declarations, SM counts, tools/differential.py), the real passes and sync-verify compile them,
and every program verify proves must run in the simulator, under adversarial and random block
schedulers, without a deadlock, an early read or a wrong semaphore count.

At least 10^4 programs per run, in two processes (the CI machine's two cores), derandomized by
a fixed seed per process. The nightly-sized run is `python -m tilesync.tools.differential
--programs 1000000 --jobs 2`.
"""

from __future__ import annotations

import multiprocessing
from collections import Counter

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from tilesync.analysis import forward_progress
from tilesync.tools import differential

PROGRAMS = 10_000
JOBS = 2


class HypothesisDraw:
    # one strategy per range, made once: making it for every draw cost a tenth of the drawing
    strategies: dict[tuple[int, int], st.SearchStrategy[int]] = {}

    def __init__(self, data: st.DataObject):
        # `DataObject.draw` is `ConjectureData.draw` wrapped in what only a report needs (a
        # "Draw n: value" note, a check that the strategy left `random` alone, the span kept
        # for the explain phase, which this test does not run): two thirds of the drawing.
        # Drawing from the ConjectureData straight makes the same choices, spans and programs
        # (checked: the same 3,000 programs in a row), at a third of the cost. A program that
        # fails is printed by the assertion itself.
        self.draw = getattr(data, "conjecture_data", data).draw

    def integer(self, lo: int, hi: int) -> int:
        strategy = self.strategies.get((lo, hi))
        if strategy is None:
            strategy = self.strategies[(lo, hi)] = st.integers(lo, hi)
        return self.draw(strategy)


def _worker(job: tuple[int, int]) -> tuple[int, int, Counter, list[str]]:
    """Programs checked, proved, guarantees relied on, and failures (with the program)."""
    index, count = job
    tally = differential.Tally()
    # Hypothesis draws the same program more than once (different choices, same program: a
    # `_chance` draws 0..99 for a yes or no): 29% of the 5,000 of a process are repeats. A
    # program's outcome is a function of the program (the passes and the seeded schedulers
    # are deterministic), so each is compiled and simulated once and a repeat counts with the
    # outcome it had; the tally is the same as checking it again.
    outcomes: dict[str, differential.Outcome] = {}

    @seed(index)
    @settings(max_examples=count, deadline=None, database=None,
              phases=(Phase.generate, Phase.shrink),
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def prove_then_simulate(data: st.DataObject) -> None:
        program = differential.draw_program(HypothesisDraw(data))
        key = repr(program)
        outcome = outcomes.get(key)
        if outcome is None:
            outcome = outcomes[key] = differential.check(program)
        tally.add(index, program, outcome)
        assert outcome.sound, f"{outcome.failure}\n{differential.program_text(program)}"

    failures: list[str] = []
    try:
        prove_then_simulate()
    except AssertionError as err:
        failures.append(str(err))
    return tally.programs, tally.proved, tally.guarantees, failures


def test_what_verify_proves_never_deadlocks_or_reads_early_in_the_simulator():
    with multiprocessing.get_context("fork").Pool(JOBS) as pool:
        results = pool.map(_worker, [(i, PROGRAMS // JOBS) for i in range(JOBS)])
    programs = sum(r[0] for r in results)
    proved = sum(r[1] for r in results)
    kinds = sum((r[2] for r in results), Counter())
    failures = [f for r in results for f in r[3]]
    assert not failures, failures[0]
    assert programs >= PROGRAMS
    # not vacuous: a good share is proved, by every kind of guarantee
    assert proved >= programs // 4, (proved, programs)
    for kind in ("stream order", "programmatic dependent launch", "wait-kernel", "co-resident",
                 "wave model"):
        assert kinds[kind] > 0, kinds


def _unsound(count: int = 600) -> list[tuple[int, str, str]]:
    return differential.run_seeds(range(count)).failures


def test_the_differential_check_catches_pdl_credited_across_streams(monkeypatch):
    # Issue 13, class 2: PDL credited whenever the producer was launched earlier, any stream.
    original = forward_progress._ordering

    def any_stream_pdl(facts, plan, streams, producer, consumer, name):
        found, why = original(facts, plan, streams, producer, consumer, name)
        launch = plan[consumer]
        if found is None and launch.pdl and producer < consumer:
            return forward_progress.Guarantee(forward_progress.PDL), ""
        return found, why

    monkeypatch.setattr(forward_progress, "_ordering", any_stream_pdl)
    failures = _unsound()
    assert failures and "deadlock" in " ".join(why for _, why, _ in failures)


def test_the_differential_check_catches_one_launch_in_either_ticket_order(monkeypatch):
    # One launch credited whatever its stages' ticket order: a consumer's tickets first
    # may take every slot before a producer block exists.
    monkeypatch.setattr(forward_progress, "_one_launch", lambda *args: (
        forward_progress.Guarantee(forward_progress.ONE_LAUNCH), ""))
    failures = _unsound(1500)
    assert failures and "deadlock" in " ".join(why for _, why, _ in failures)


def test_the_differential_check_catches_coresidency_counted_per_pair(monkeypatch):
    # Issue 13, class 1: co-residency of the producer and consumer alone.
    original = forward_progress.analyze

    def per_pair(facts):
        report = original(facts)
        for (producer, consumer), guarantee in list(report.guarantees.items()):
            known = facts.residency.get(producer), facts.residency.get(consumer)
            if guarantee is None and facts.sms and None not in known and \
                    (producer, consumer) not in report.blocked and \
                    forward_progress.co_residency(list(known), facts.sms).legal:
                report.guarantees[(producer, consumer)] = forward_progress.Guarantee(
                    forward_progress.CO_RESIDENT, "pair")
        return report

    monkeypatch.setattr(forward_progress, "analyze", per_pair)
    from tilesync.transforms.sync import verify

    monkeypatch.setattr(verify, "analyze", per_pair)
    failures = _unsound(1500)
    assert failures and "deadlock" in " ".join(why for _, why, _ in failures)


def test_the_differential_check_catches_wait_kernels_without_their_mechanism(monkeypatch):
    # Issue 13, class 4: a sync.wait_kernel op counted whether or not it can work.
    from tilesync.transforms.sync import verify

    monkeypatch.setattr(verify.Verifier, "working_wait_kernels",
                        lambda self: set(self.graph.stages))
    failures = _unsound()
    assert failures and any("can never end" in why for _, why, _ in failures)


def _reads_ahead_and_nothing_undeclared(seed: int) -> bool:
    deps = differential.draw_program(differential.RandomDraw(seed)).deps
    return any(d.read_ahead for d in deps) and not any(d.extra for d in deps)


def test_the_differential_check_catches_reads_ahead_of_their_waits(monkeypatch):
    # A verifier that never checks which waits precede a load proves the kernels that read
    # k-step k + 1's tile at step k; the simulator follows their waits and loads step by step
    # and reads early, where the block-level model (every declared tile waited for first)
    # cannot. Only programs with such a kernel and no undeclared read, which both catch.
    from tilesync.analysis import simulator
    from tilesync.transforms.sync import verify

    seeds = [s for s in range(1000) if _reads_ahead_and_nothing_undeclared(s)]
    monkeypatch.setattr(verify.ConsumerRun, "check", lambda self, *args, **kwargs: None)
    failures = differential.run_seeds(seeds).failures
    assert failures and all("read-before-write" in why for _, why, _ in failures)

    following = simulator.program_from_ir
    monkeypatch.setattr(simulator, "program_from_ir",
                        lambda *args, **kwargs: following(*args, **{**kwargs,
                                                                     "follow_kernels": False}))
    assert not differential.run_seeds(seeds).failures


def test_a_pass_that_crashes_is_a_failure_not_a_refusal(monkeypatch):
    import tilesync.api

    def crashing(module, pipeline):
        raise KeyError("an unchecked lookup")

    monkeypatch.setattr(tilesync.api, "run_passes", crashing)
    outcome = differential.check(differential.draw_program(differential.RandomDraw(0)))
    assert not outcome.sound and not outcome.proved
    assert outcome.failure.startswith(differential.CRASHED), outcome.failure
    assert "KeyError" in outcome.failure and "in crashing" in outcome.failure


def test_the_differential_check_catches_a_placed_layout_that_meets_no_tile(monkeypatch):
    # A placed layout whose reads meet no producer tile: verify asks for no wait and the
    # simulator, mapping reads with the same layout, sees no early read; the generator's own
    # store indices (which tile writes which element) do.
    from tilesync.analysis.operand_regions import OperandLayout

    original = OperandLayout.tiles

    def nowhere(self, lo, hi):
        return iter(()) if self.placement else original(self, lo, hi)

    monkeypatch.setattr(OperandLayout, "tiles", nowhere)
    failures = _unsound(1500)
    assert failures and "which its layout places in tile(s) []" in " ".join(
        why for _, why, _ in failures)

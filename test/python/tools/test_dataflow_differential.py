"""dataflow-verify against the queue simulator (tools/dataflow_differential.py) at CI size: no
proved program hangs or loses a ticket in the simulator, a fair share of the programs is
proved, every mutant is refused, and each mutation is refused for its own reason on a program
that verify proves without it."""

from __future__ import annotations

import pytest

from tilesync.tools.dataflow_differential import (
    MUTATIONS,
    Program,
    Stage,
    check,
    draw_program,
    program_text,
    refused_for_mutation,
    run,
    simulate,
    verify_proves,
)


def test_a_few_hundred_programs_find_no_failure():
    tally = run(240, seed=7, jobs=1)
    assert tally.programs == 240
    assert not tally.failures, tally.failures[0][:2]
    mutants = sum(n for (_, what), n in tally.mutants.items() if what == "drawn")
    refused = sum(n for (_, what), n in tally.mutants.items() if what == "refused")
    caught = sum(n for (_, what), n in tally.mutants.items() if what == "caught")
    assert mutants >= 50 and refused == mutants
    assert caught >= 20  # refused for the mutation, where the program without it is proved
    unmutated = tally.programs - mutants
    assert tally.proved >= unmutated // 4
    # the forms are drawn, and proved now and then
    for feature in ("split reduction", "join", "fan-out", "relay", "threads", "draw-ahead",
                    "multicast", "cluster"):
        assert tally.features[feature, "proved"] >= 1, feature


@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_each_mutation_is_refused_for_its_reason(mutation):
    found = 0
    for seed in range(4000):
        program = draw_program(seed, mutation=mutation)
        if program.mutation != mutation:
            continue  # does not apply to this program
        if not verify_proves(draw_program(seed, mutate=False)):
            continue
        outcome = check(program)
        assert outcome.failure is None, (seed, outcome.failure)
        assert refused_for_mutation(program, outcome), (seed, outcome.refusal)
        found += 1
        if found == 2:
            return
    pytest.fail(f"no program of 4000 takes mutation {mutation} and is proved without it")


def _stage(name: str, **kw) -> Stage:
    defaults = dict(ctas=2, tiles=8, block=256, threads=64, registers=32, shared=0)
    return Stage(name, **{**defaults, **kw})


def _join_and_fan_out() -> Program:
    """A relay @m with four workers a CTA hands @p's ticket to @c, and fans out to @f with
    @c's ticket; @j joins @p and @c (given @p's ticket)."""
    source = _stage("src", outputs=["p"])
    relay = _stage("m", inputs=["p"], outputs=["c", "f"], relay=True)
    join = _stage("j", inputs=["p", "c"])
    tap = _stage("t", inputs=["f"], threads=None, ctas=1)
    return Program([source, relay, join, tap], {"p": 2, "c": 1, "f": 2}, sms=4)


def test_the_simulator_reads_tickets_given_by_another_queue():
    """`at` a ticket of another queue moves no counter: the model gives the join's second
    input, and the relay's outputs, the ticket their source holds (several workers draw in
    another order than they hold tickets)."""
    from tilesync.analysis.simulator.queues import pipeline_from_ir
    from tilesync.api import parse
    from tilesync.dialects import dataflow

    program = _join_and_fan_out()
    module = parse(program_text(program))
    pipeline = next(op for op in module.walk() if isinstance(op, dataflow.PipelineOp))
    _, stages = pipeline_from_ir(pipeline)
    by_name = {s.name: s for s in stages}
    assert by_name["m"].given == (("c", "p"), ("f", "p")) and by_name["m"].relay
    assert by_name["j"].given == (("c", "p"),) and not by_name["j"].relay
    assert by_name["src"].given == () and by_name["t"].given == ()
    outcome = check(program)
    assert outcome.proved and outcome.failure is None and outcome.runs_clean


def test_the_simulator_finds_the_hang_of_a_ring_too_small():
    """The oracle has teeth: a final stage taking 2 partials from a ring of 1 deadlocks."""
    from tilesync.api import parse
    from tilesync.dialects import dataflow

    program = Program([_stage("fan_in", outputs=["q"], tiles=8),
                       _stage("final", inputs=["q"], reads={"q": 2}, tiles=4, ctas=1,
                              threads=None)], {"q": 1}, sms=4)
    assert not verify_proves(program)
    pipeline = next(op for op in parse(program_text(program)).walk()
                    if isinstance(op, dataflow.PipelineOp))
    assert "deadlock" in (simulate(program, pipeline) or "")


def test_the_command_line_prints_a_summary_and_exits_zero(capsys):
    from tilesync.tools.dataflow_differential import main

    assert main(["--programs", "20", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("20 programs (seeds 3..22)") and "0 failures" in out


@pytest.mark.parametrize("tool", ["dataflow_differential", "differential"])
@pytest.mark.parametrize("args, expected", [
    (["--programs", "0"], "argument --programs: expected a positive integer, got 0"),
    (["--jobs", "-2"], "argument --jobs: expected a positive integer, got -2"),
    (["--seed", "-1"], "argument --seed: expected an integer >= 0, got -1"),
])
def test_the_differentials_refuse_counts_that_run_nothing(tool, args, expected, capsys):
    """A count of programs or jobs below one (which ran nothing, or one job, and reported it as
    a pass) is a usage error: one line, exit status 2."""
    import importlib

    main = importlib.import_module(f"tilesync.tools.{tool}").main
    with pytest.raises(SystemExit) as exit_:
        main(args)
    assert exit_.value.code == 2
    assert expected in capsys.readouterr().err

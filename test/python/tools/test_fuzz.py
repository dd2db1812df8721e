"""tools/fuzz.py: 2,000 mutated programs of a fixed seed through the five pipelines end in
success or a located diagnostic, never in a traceback, a dead process or a hang; and the
fuzzer itself tells those apart (a crash and a hang of a worker are caught, the campaign goes
on)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.utils.lexer import Input, Span

from tilesync.contract import CompileError, SourceLocation
from tilesync.tools.fuzz import (
    MUTATORS,
    PIPELINES,
    Outcome,
    classify,
    fuzz,
    load_seeds,
    main,
    make_input,
)

CI_SEED = 13
CI_INPUTS = 2000
ROOT = Path(__file__).resolve().parents[3]


def test_2000_inputs_end_in_success_or_a_located_diagnostic():
    summary = fuzz(seconds=600, seed=CI_SEED, inputs=CI_INPUTS, workers=2, limit=20)
    assert not summary.failures, summary.report()
    assert summary.inputs == CI_INPUTS
    assert all(summary.runs[p] > 0 for p in PIPELINES), summary.report()  # it went deep
    assert summary.outcomes["success"] > 0 and summary.outcomes["diagnostic"] > 0


def test_an_input_depends_on_the_seed_and_its_number_only():
    seeds = load_seeds()
    assert {s.name.split("/")[0] for s in seeds} == {"examples", "test"}
    assert any(s.valid for s in seeds) and not all(s.valid for s in seeds)
    assert make_input(seeds, 1, 7) == make_input(seeds, 1, 7)
    assert make_input(seeds, 1, 7) != make_input(seeds, 2, 7)


@pytest.mark.parametrize("name", list(MUTATORS))
def test_every_mutation_changes_a_program(name):
    import random

    text = (ROOT / "examples" / "gpt3_mlp_sync.mlir").read_text()
    changed = {MUTATORS[name][1](random.Random(n), text) for n in range(20)}
    assert None not in changed and len(changed - {text}) > 5  # (make_input retries a no-op)


def _raised(error: BaseException, cause: BaseException | None = None) -> BaseException:
    try:
        try:
            if cause is not None:
                raise cause
        except BaseException as inner:
            raise error from inner
        raise error
    except BaseException as caught:
        return caught


LOCATION = SourceLocation("x.mlir", 3, 5)


def test_classification():
    span = Span(0, 1, Input("x", "x.mlir"))
    assert classify(_raised(CompileError("bad", LOCATION), ParseError(span, "bad")))[0] == \
        "diagnostic"
    assert classify(_raised(CompileError("bad", LOCATION), VerifyException("bad")))[0] == \
        "diagnostic"
    kind, site, _ = classify(_raised(CompileError("KeyError: 'grid'", LOCATION),
                                     KeyError("grid")))
    assert kind == "traceback" and site.endswith("KeyError")  # a bug the driver worded
    kind, site, _ = classify(_raised(CompileError("internal error: ZeroDivisionError"),
                                     ZeroDivisionError()))
    assert kind == "traceback" and "ZeroDivisionError" in site
    kind, site, _ = classify(_raised(CompileError("no place")))
    assert kind == "traceback" and site.endswith("(no location)")
    assert classify(_raised(ValueError("not caught")))[0] == "traceback"


def _misbehaving(text: str, name: str):
    """Input 1 aborts its process, input 3 never ends, the others succeed."""
    number = int(name.removeprefix("fuzz-").removesuffix(".mlir"))
    if number == 1:
        os.abort()
    if number == 3:
        time.sleep(3600)
    yield Outcome("parse", "success")


def test_a_crash_and_a_hang_are_caught_and_the_campaign_goes_on():
    summary = fuzz(seconds=60, seed=0, inputs=6, workers=1, limit=2, runner=_misbehaving)
    assert summary.inputs == 6
    assert summary.outcomes["success"] == 4
    kinds = {f.kind: f for f in summary.failures.values()}
    assert set(kinds) == {"crash", "hang"}
    assert kinds["crash"].number == 1 and "signal 6" in kinds["crash"].message
    assert kinds["hang"].number == 3 and kinds["hang"].site.startswith("test/python/tools/")


def test_replay_prints_the_input(capsys):
    assert main(["--seed", "5", "--replay", "42"]) == 0
    printed = capsys.readouterr().out
    assert printed.split("\n", 1)[1] == make_input(load_seeds(), 5, 42).text

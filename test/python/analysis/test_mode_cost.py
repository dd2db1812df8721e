"""The mode cost model (analysis/mode_cost.py): tile times from a measured stream-sync run, the
wave model at tile resolution, the mechanisms' costs, the choice against the library, and the
choice recorded on a program."""

from __future__ import annotations

import math

import pytest
from xdsl.dialects.builtin import DictionaryAttr, FloatAttr, IntegerAttr, StringAttr, f64, i64

from tilesync.analysis import mode_cost
from tilesync.api import parse
from tilesync.contract import MODE_CHOICE_ATTR
from tilesync.dialects.locations import OpDiagnostic

# A producer of 2 x 3 tiles on 4 SMs (1.5 waves) and a consumer of as many tiles; `%POLICY%`
# is the producer's policy, `%READS%` what a consumer tile reads, `%LAUNCHES%` the plan.
PROGRAM = """
builtin.module {
  sync.stage @p {kernel = @k::@p, grid = array<i64: 2, 3>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>, policy = %POLICY%}
  sync.stage @c {kernel = @k::@c, grid = array<i64: 2, 3>, block = array<i64: 128, 1, 1>, tile = array<i64: 64, 64>}
  sync.dependency @p -> @c operand 0 %READS%
  %LAUNCHES%
}
"""  # noqa: E501
TILE = "#sync.policy<TileSync (d0, d1) -> (d0 * 3 + d1), posts = 1>"
ROW = "#sync.policy<RowSync (d0, d1) -> (d0), posts = 3>"
OWN_TILE = "tiles (d0, d1) -> (d0, d1)"
ROW_READS = "tiles (d0, d1)[s0] -> (d0, s0) forall s0 in [0, 3)"
STREAM = "sync.launch @p\nsync.launch @c"
PDL = "sync.launch @p\nsync.launch @c {pdl = true}"
ONE_LAUNCH = "sync.launch @p\nsync.launch @c {fused = true}"
WAIT_KERNEL = ("sync.launch @p\nsync.wait_kernel @p {stream = 1 : i64}\n"
               "sync.launch @c {stream = 1 : i64}")
SMS = 4
ZERO = mode_cost.MechanismCosts.zero()
WORK = {"p": 1.0, "c": 1.0}


def shape(policy=TILE, reads=OWN_TILE, launches=STREAM):
    text = PROGRAM.replace("%POLICY%", policy).replace("%READS%", reads)
    return mode_cost.mode_shape(parse(text.replace("%LAUNCHES%", launches)))


def test_the_plan_and_the_waits_are_read_from_the_program():
    stream, pdl, waiting = shape(), shape(launches=PDL), shape(launches=WAIT_KERNEL)
    assert (stream.stream_launches, stream.wait_kernels) == (1, 0)
    assert (pdl.stream_launches, pdl.wait_kernels) == (0, 0)
    assert (waiting.stream_launches, waiting.wait_kernels) == (0, 1)
    assert (stream.joined_launches, pdl.joined_launches, waiting.joined_launches) == (0, 0, 0)
    one = shape(launches=ONE_LAUNCH)
    assert (one.stream_launches, one.wait_kernels, one.joined_launches) == (0, 0, 1)
    assert set(stream.waits["c"].values()) == {1} and not stream.waits["p"]
    # a consumer tile reading a whole row waits on 3 semaphores under TileSync, 1 under RowSync
    assert set(shape(TILE, ROW_READS).waits["c"].values()) == {3}
    assert set(shape(ROW, ROW_READS).waits["c"].values()) == {1}


def test_tile_times_reproduce_the_measured_stream_sync_run():
    costs = mode_cost.MechanismCosts(0.04, 0.01, 0.001, 0.0)
    stream = shape()
    tau = mode_cost.tile_times(stream, 4.0, {"p": 1.0, "c": 3.0}, SMS, costs)
    assert tau["c"] == pytest.approx(3 * tau["p"])
    assert mode_cost.predict_ms(stream, tau, SMS, costs) == pytest.approx(4.0, rel=1e-6)


def test_fine_grained_sync_fills_the_producers_partial_wave():
    # stream sync: 2 + 2 waves of 1 ms; per-tile sync: the consumer tiles of the first wave's
    # producer tiles run in the 2 idle slots of the second wave: 3 (the wave model's bound)
    tau = mode_cost.tile_times(shape(), 4.0, WORK, SMS, ZERO)
    assert tau == pytest.approx({"p": 1.0, "c": 1.0})
    assert mode_cost.predict_ms(shape(launches=PDL), tau, SMS, ZERO) == pytest.approx(3.0)
    # a consumer tile that reads a whole row waits for the second wave: no gain
    whole_row = shape(ROW, ROW_READS, PDL)
    assert mode_cost.predict_ms(whole_row, tau, SMS, ZERO) == pytest.approx(4.0)


def test_each_mechanism_adds_its_cost():
    costs = mode_cost.MechanismCosts(0.04, 0.01, 0.001, 0.0)
    tau = {"p": 1.0, "c": 1.0}
    stream = mode_cost.predict_ms(shape(ROW, ROW_READS), tau, SMS, costs)
    pdl = mode_cost.predict_ms(shape(ROW, ROW_READS, PDL), tau, SMS, costs)
    waiting = mode_cost.predict_ms(shape(ROW, ROW_READS, WAIT_KERNEL), tau, SMS, costs)
    tile = mode_cost.predict_ms(shape(TILE, ROW_READS, PDL), tau, SMS, costs)
    assert stream - pdl == pytest.approx(0.04)
    assert waiting - pdl == pytest.approx(0.01)
    # 3 waits a consumer tile instead of 1, in each of the consumer's 2 waves
    assert tile - pdl == pytest.approx(2 * 2 * 0.001)


def test_the_choice_is_the_fastest_prediction_or_the_library():
    predicted = {"row+pdl": 1.0, "stream_sync": 1.1, "tile+pdl": 1.05}
    choice = mode_cost.choose(predicted, library_ms=1.2)
    assert choice.mode == "row+pdl" and "next tile+pdl" in choice.reason
    assert mode_cost.choose(predicted).mode == "row+pdl"
    # ours must be predicted below WIN_MARGIN of the library: a near tie goes to the library
    tied = mode_cost.choose(predicted, library_ms=1.0 / mode_cost.WIN_MARGIN)
    assert tied.mode == mode_cost.LIBRARY and "not below" in tied.reason
    assert mode_cost.choose(predicted, library_ms=0.9).mode == mode_cost.LIBRARY
    with pytest.raises(ValueError):
        mode_cost.choose({})


def test_the_costs_of_a_device():
    assert mode_cost.costs_for("NVIDIA H200") is mode_cost.MECHANISM_COSTS["H200"]
    assert mode_cost.costs_for(None) is mode_cost.MECHANISM_COSTS["H200"]
    assert all(c >= 0 for c in mode_cost.costs_for(None).as_tuple())


def test_the_prediction_is_its_makespan_and_its_launches():
    costs = mode_cost.MechanismCosts(0.04, 0.01, 0.001, 0.0)
    tau = {"p": 1.0, "c": 1.0}
    stream = shape(ROW, ROW_READS)
    makespan, launches = mode_cost.prediction_parts(stream, tau, SMS, costs)
    assert launches == pytest.approx(0.04)  # one stream-ordered launch
    assert makespan + launches == mode_cost.predict_ms(stream, tau, SMS, costs)


def recorded_choice() -> mode_cost.ChoiceRecord:
    choice = mode_cost.choose({"row+pdl": 1.0, "stream_sync": 1.1}, library_ms=1.2)
    return mode_cost.ChoiceRecord("row+pdl", choice, {"p": 0.5, "c": 0.25}, "stream_sync", 1.1,
                                  mode_cost.MechanismCosts(0.04, 0.01, 0.001, 0.2), SMS,
                                  "NVIDIA H200")


def test_a_choice_recorded_on_a_program_reads_back_after_printing():
    module = parse(PROGRAM.replace("%POLICY%", ROW).replace("%READS%", ROW_READS)
                   .replace("%LAUNCHES%", PDL))
    assert mode_cost.recorded(module) is None
    rec = recorded_choice()
    mode_cost.record(module, rec)
    assert mode_cost.recorded(parse(str(module))) == rec
    without_library = mode_cost.ChoiceRecord(
        rec.mode, mode_cost.choose(rec.choice.predicted_ms), rec.tile_ms, rec.baseline,
        rec.baseline_ms, rec.costs, rec.sms, "")
    mode_cost.record(module, without_library)
    assert mode_cost.recorded(parse(str(module))) == without_library


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d.pop("sms"), "'sms' is missing"),
    (lambda d: d.update(sms=StringAttr("many")), "'sms' must be an integer"),
    (lambda d: d.update(sms=IntegerAttr(0, i64)), "'sms' must be positive"),
    (lambda d: d.update(mode=IntegerAttr(1, i64)), "'mode' must be a string"),
    (lambda d: d.update(tile_ms=DictionaryAttr({"p": StringAttr("x")})),
     "'tile_ms.p' must be a finite float"),
    (lambda d: d.update(costs=DictionaryAttr({"wait_ms": FloatAttr(0.1, f64)})),
     "'costs' lacks stream_gap_ms, wait_kernel_ms, order_slowdown"),
    (lambda d: d.update(library_ms=StringAttr("fast")), "'library_ms' must be a float"),
    (lambda d: d.update(baseline_ms=FloatAttr(-1.0, f64)), "'baseline_ms' must be a finite float"),
    (lambda d: d.update(tile_ms=DictionaryAttr({"p": FloatAttr(math.inf, f64)})),
     "'tile_ms.p' must be a finite float"),
])
def test_a_malformed_record_is_a_diagnostic_naming_its_field(edit, message):
    module = parse(PROGRAM.replace("%POLICY%", ROW).replace("%READS%", ROW_READS)
                   .replace("%LAUNCHES%", PDL))
    mode_cost.record(module, recorded_choice())
    entries = dict(module.attributes[MODE_CHOICE_ATTR].data)
    edit(entries)
    module.attributes[MODE_CHOICE_ATTR] = DictionaryAttr(entries)
    with pytest.raises(OpDiagnostic, match=message):
        mode_cost.recorded(module)
    module.attributes[MODE_CHOICE_ATTR] = StringAttr("row+pdl")
    with pytest.raises(OpDiagnostic, match="must be a dictionary"):
        mode_cost.recorded(module)


def test_a_machine_larger_than_the_program_predicts_as_one_sm_a_block():
    # 12 blocks in all: SMs beyond them idle, and a model of 10^9 SMs is not simulated SM by SM
    tau = {"p": 1.0, "c": 1.0}
    costs = mode_cost.MechanismCosts(0.04, 0.01, 0.001, 0.0)
    stream = shape(ROW, ROW_READS)
    assert mode_cost.predict_ms(stream, tau, 10**9, costs) == \
        mode_cost.predict_ms(stream, tau, 12, costs) == pytest.approx(2.0 + 0.001 + 0.04)


def test_a_launch_joining_another_costs_what_was_measured_not_the_stream_gap():
    tau = {"p": 0.01, "c": 0.01}
    costs = mode_cost.MechanismCosts(0.04, 0.01, 0.0, 0.0, joined_launch_ms=0.003)
    one, pdl = shape(launches=ONE_LAUNCH), shape(launches=PDL)
    simulated, launches = mode_cost.prediction_parts(one, tau, SMS, costs)
    assert launches == pytest.approx(0.003)
    assert mode_cost.predict_ms(one, tau, SMS, costs) == pytest.approx(
        mode_cost.predict_ms(pdl, tau, SMS, costs) + 0.003)
    free = mode_cost.MechanismCosts(0.04, 0.01, 0.0, 0.0)  # a record made before the cost
    assert mode_cost.predict_ms(one, tau, SMS, free) == pytest.approx(simulated)

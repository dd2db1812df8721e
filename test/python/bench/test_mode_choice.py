"""The cost model's choice on a bench row (bench/mode_choice.py), without a GPU: the modes'
programs of a conv chain read back, tile times from the row's stream-sync time, the choice and
how far its measured time is from the best, and the choice recorded on a program."""

from __future__ import annotations

import pytest

from tilesync.analysis import mode_cost
from tilesync.api import lower, parse
from tilesync.bench import attention, conv, mode_choice
from tilesync.contract import BLOCKS_PER_SM_ATTR
from tilesync.dialects.sync import StageOp
from tilesync.tools.explain import explain

SHAPE = (1, 56, 64)
COSTS = mode_cost.MechanismCosts(stream_gap_ms=0.0015, wait_kernel_ms=0.001,
                                 wait_ms=0.0001, order_slowdown=0.2, joined_launch_ms=0.0007)


TWO_COLUMNS = (1, 56, 128)  # two column tiles: the TileSync modes too


def lowered_modes(shape):
    out = {}
    for mode in conv.modes_for(shape):
        module = conv.stage_module(shape, mode)
        lower(module, conv.mode_passes(mode))
        out[mode] = module
    return out


def mode_shapes(shape):
    return {mode: mode_cost.mode_shape(module) for mode, module in lowered_modes(shape).items()}


@pytest.fixture(scope="module")
def lowered():
    return lowered_modes(SHAPE)


@pytest.fixture(scope="module")
def shapes(lowered):
    return {mode: mode_cost.mode_shape(module) for mode, module in lowered.items()}


def test_blocks_per_sm_come_from_the_kernels_resources():
    spec = conv.chain_spec(SHAPE)
    configs = {"conv1": spec.conv1, "conv2": spec.conv2}
    # without nvJitLink's numbers: no registers, the tiles' shared memory (64 KB: 3 per SM)
    assert spec.conv1.gemm.shared_bytes == 65536
    assert mode_choice.stage_blocks_per_sm(configs, {}) == {"conv1": 3, "conv2": 3}
    small = {"conv1": (64, 40_000), "conv2": (255, 200_000)}
    assert mode_choice.stage_blocks_per_sm(configs, small) == {"conv1": 5, "conv2": 1}


def test_a_kernel_that_reallocates_registers_holds_its_launch_bounds_allotment():
    # nvJitLink drops setmaxnreg and reports 58 registers of a two-block TMA conv; the driver
    # loads it with the 128 its launch bounds allot (256 threads, 2 blocks an SM)
    spec = conv.mode_spec((8, 56, 64), "tma:row+pdl")
    configs = {"conv1": spec.conv1, "conv2": spec.conv2}
    assert spec.conv1.gemm.reallocates_registers and spec.conv1.gemm.blocks_per_sm == 2
    reported = {"conv1": (58, 20_000), "conv2": (58, 20_000)}
    assert mode_choice.stage_blocks_per_sm(configs, reported) == {"conv1": 2, "conv2": 2}
    # a cp.async conv holds what nvJitLink reports: 58 registers, 20 KB leave room for 4
    cp_async = conv.mode_spec((8, 56, 64), "row+pdl")
    assert not cp_async.conv1.gemm.reallocates_registers
    assert mode_choice.stage_blocks_per_sm({"conv1": cp_async.conv1}, reported)["conv1"] > 2


def test_a_tile_of_each_stage_carries_its_share_of_the_flops():
    spec = conv.chain_spec(SHAPE)
    work = mode_choice.tile_work("conv", SHAPE, "stream_sync")
    tiles = spec.conv1.grid[0] * spec.conv1.grid[1]
    assert work["conv1"] * tiles == pytest.approx(spec.conv1.flops)


def test_the_row_choice_is_measured_against_the_best(shapes):
    measured = {"stream_sync": 0.0136, "row+pdl": 0.0121, "row+order+pdl": 0.0151,
                "row+wait_kernel": 0.0145, "torch_graph": 0.0153}
    row = mode_choice.row_choice("conv", SHAPE, shapes, measured, 132, COSTS)
    predicted = row["predicted_ms"]
    assert predicted["stream_sync"] == pytest.approx(0.0136, rel=1e-4)  # its own measurement
    assert predicted["row+pdl"] < predicted["row+wait_kernel"] < predicted["stream_sync"]
    assert predicted["row+order+pdl"] > predicted["row+pdl"]  # its tiles slowed down
    assert row["chosen"] == "row+pdl" and row["best"] == "row+pdl"
    assert row["within"] == 1.0
    # the library measured faster than anything predicted of ours: it is chosen, and how far
    # that is from the best measured is what `within` reports
    slow = {**measured, "torch_graph": 0.0118}
    row = mode_choice.row_choice("conv", SHAPE, shapes, slow, 132, COSTS)
    assert row["chosen"] == "torch_graph" and row["within"] == 1.0
    wrong = {**measured, "torch_graph": 0.0110, "row+pdl": 0.0100}
    row = mode_choice.row_choice("conv", SHAPE, shapes, wrong, 132, COSTS)
    assert row["chosen"] == "torch_graph" and row["within"] == pytest.approx(1.1)


def test_the_fit_recovers_the_costs_that_made_the_times():
    # five cp.async modes besides their stream-sync baseline, six TMA ones besides theirs
    # (three of them one launch; tma:persistent is its own baseline, not measured here): more
    # equations than costs
    shapes = mode_shapes(TWO_COLUMNS)
    assert len(shapes) == 14
    measured = {"stream_sync": 0.0192, "tma:stream_sync": 0.0150}
    predicted = mode_choice.predictions("conv", TWO_COLUMNS, shapes, measured, 132, COSTS)
    assert set(predicted) == set(shapes) - {conv.PERSISTENT}
    fitted = mode_choice.fit([("conv", TWO_COLUMNS, shapes, predicted, 132, None)])
    assert fitted.as_tuple() == pytest.approx(COSTS.as_tuple(), rel=1e-2)


RATES = {"peak_tflops": 700.0, "copy_gbps": 4000.0}
ATTENTION = attention.GPU_TEST_SHAPES[0]


def test_an_attention_tile_is_its_floor_at_the_runs_rates():
    spec = attention.attention_spec(ATTENTION)
    work = mode_choice.tile_work("attention", ATTENTION, "stream_sync", RATES)
    assert set(work) == {"qkv", "scores", "softmax", "context", "out"}
    softmax = spec.softmax  # no flops: its rows read and written at the copy bandwidth
    blocks = softmax.grid[0] * softmax.grid[1]
    assert work["softmax"] == pytest.approx(softmax.bytes / blocks / 4000e9 * 1e3)
    cfg = spec.scores  # K = C: a tile of q · kT moves more than it computes at these rates
    bm, bn, _ = cfg.tile
    tiles = cfg.grid[0] * cfg.grid[1]
    moved = 2 * ((bm + bn) * cfg.K + bm * bn)
    assert moved / 4000e9 > cfg.flops / tiles / 700e12
    assert work["scores"] == pytest.approx(moved / 4000e9 * 1e3)
    fast_memory = {**RATES, "copy_gbps": 4e6}  # now every GEMM tile is its flops
    work = mode_choice.tile_work("attention", ATTENTION, "stream_sync", fast_memory)
    assert work["scores"] == pytest.approx(cfg.flops / tiles / 700e12 * 1e3)
    with pytest.raises(ValueError, match="rates"):
        mode_choice.tile_work("attention", ATTENTION, "stream_sync")


def test_a_fused_attention_tile_is_its_floor_at_the_runs_rates():
    """The fused program's stages: its attention tile moves its q and O blocks and the k and v
    of its keys (half of them, causal), and computes its share of the products."""
    cfg = attention.fused_spec(ATTENTION).attention
    work = mode_choice.tile_work("attention", ATTENTION, "fused:stream_sync", RATES)
    assert set(work) == {"qkv", "attention", "out"}
    tiles = cfg.grid[0] * cfg.grid[1]
    moved = 2 * cfg.head_width * (2 * cfg.block_m + 2 * cfg.tokens)
    assert work["attention"] == pytest.approx(
        max(cfg.flops / tiles / 700e12, moved / 4000e9) * 1e3)
    causal = (256, 128, 2, 512, 2, True)
    cfg = attention.fused_spec(causal).attention
    work = mode_choice.tile_work("attention", causal, "fused:row+pdl", RATES)
    moved = 2 * cfg.head_width * (2 * cfg.block_m + cfg.tokens)
    tiles = cfg.grid[0] * cfg.grid[1]
    assert work["attention"] == pytest.approx(
        max(cfg.flops / tiles / 700e12, moved / 4000e9) * 1e3)
    decoding = attention.GPU_TEST_SHAPES[-1]  # after a KV cache: the cached keys read too
    cfg = attention.fused_spec(decoding).attention
    work = mode_choice.tile_work("attention", decoding, "fused:row+pdl", RATES)
    moved = 2 * cfg.head_width * (2 * cfg.block_m + 2 * (cfg.cached + cfg.tokens))
    tiles = cfg.grid[0] * cfg.grid[1]
    assert work["attention"] == pytest.approx(
        max(cfg.flops / tiles / 700e12, moved / 4000e9) * 1e3)


def test_an_attention_row_is_chosen_like_the_others():
    shapes = {}
    for mode in attention.MODES:
        module = attention.stage_module(ATTENTION, mode)
        lower(module, attention.mode_passes(mode))
        shapes[mode] = mode_cost.mode_shape(module)
    measured = {"stream_sync": 0.0200, "row+pdl": 0.0160, "tile+pdl": 0.0190,
                "row+wait_kernel": 0.0300, "torch_graph": 0.0180}
    row = mode_choice.row_choice("attention", ATTENTION, shapes, measured, 132, COSTS,
                                 rates=RATES)
    predicted = row["predicted_ms"]
    assert predicted["stream_sync"] == pytest.approx(0.0200, rel=1e-4)
    assert not any(m.startswith(attention.FUSED) for m in predicted)  # no fused baseline
    with_fused = {**measured, "fused:stream_sync": 0.0150, "fused:row+pdl": 0.0130}
    fused = mode_choice.row_choice("attention", ATTENTION, shapes, with_fused, 132, COSTS,
                                   rates=RATES)["predicted_ms"]
    # each family predicted from its own stream sync
    assert fused["fused:stream_sync"] == pytest.approx(0.0150, rel=1e-4)
    assert fused["fused:row+pdl"] < fused["fused:stream_sync"]
    assert fused["row+pdl"] == pytest.approx(predicted["row+pdl"])
    # a mode that did not run (fused:tile+pdl: compiled, not measured) is no candidate
    assert "fused:tile+pdl" not in fused
    assert predicted["row+pdl"] < predicted["stream_sync"]  # four stream-ordered launches
    assert row["chosen"] == "row+pdl" and row["within"] == 1.0
    row = mode_choice.row_choice("attention", ATTENTION, shapes,
                                 {**measured, "torch_graph": 0.0100}, 132, COSTS, rates=RATES)
    assert row["chosen"] == "torch_graph"
    assert mode_choice.program_name("attention", ATTENTION) == "T256-C64.mlir"
    assert mode_choice.program_name("attention", (256, 768, 12, 768, 8, True)) == \
        "T256-C768-B8-causal.mlir"  # the same T and C over one sequence, not causal: another
    assert mode_choice.program_name("attention", (256, 768, 12, 768, 1, False)) == \
        "T256-C768.mlir"
    assert mode_choice.program_name("attention", (1, 1536, 12, 12288, 4, False, 2048)) == \
        "T1-C1536-B4-S2048.mlir"  # a KV cache's length names its row
    assert mode_choice._bench_of({"rows": [{"T": 256, "C": 64}]}) == "attention"


def test_the_table_line_says_what_was_chosen_and_why(shapes):
    measured = {"stream_sync": 0.0136, "row+pdl": 0.0121, "row+order+pdl": 0.0151,
                "row+wait_kernel": 0.0145, "torch_graph": 0.0153}
    row = {"mode_choice": mode_choice.row_choice("conv", SHAPE, shapes, measured, 132, COSTS)}
    line = mode_choice.table_line(row, "  ")
    assert line.startswith("  cost model chose row+pdl (0.0121 ms measured); best row+pdl")
    assert "why: row+pdl predicted" in line and "library measured 0.0153 ms" in line
    assert mode_choice.table_line({}, "") is None
    assert "FAILED: boom" in mode_choice.table_line({"mode_choice": {"error": "boom"}}, "")


def test_a_file_that_is_not_a_bench_result_is_one_line_and_status_1(tmp_path, capsys):
    bad = tmp_path / "x.json"
    bad.write_text("{\"rows\": [{\"modes\": {}}]}")
    assert mode_choice.main([str(bad)]) == 1
    assert mode_choice.main([str(tmp_path / "missing.json")]) == 1
    no_rates = tmp_path / "attention.json"  # an attention run without its measured rates
    no_rates.write_text("{\"rows\": [{\"T\": 256, \"C\": 64, \"modes\": {}}]}")
    assert mode_choice.main([str(no_rates)]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert "rates" in lines[-1] and len(lines) == 3
    assert lines[1] == f"{tmp_path / 'missing.json'}: error: cannot read it: No such file or " \
        "directory"
    assert all("not a bench mlp / conv / attention result" in ln for ln in lines[::2])


def test_the_choice_is_recorded_on_the_program_of_the_mode_predicted_fastest(lowered, tmp_path):
    # the compile entries a bench row has: its modes' programs, no kernel resources (so each
    # stage's blocks per SM come from its tiles' shared memory: 3)
    entries = {mode: {"host": str(module), "resources": {}} for mode, module in lowered.items()}
    measured = {"stream_sync": 0.0136, "row+pdl": 0.0121, "row+order+pdl": 0.0151,
                "row+wait_kernel": 0.0145, "torch_graph": 0.0118}
    shapes = mode_choice.mode_shapes("conv", SHAPE, entries)
    row = mode_choice.recorded_row_choice("conv", SHAPE, shapes, entries, measured, 132, COSTS,
                                          "NVIDIA H200")
    module = parse(row["program"])
    record = mode_cost.recorded(module)
    # the library measured faster than anything predicted of ours is chosen; the program is
    # still the mode of ours predicted fastest, and says why it is not run
    assert row["chosen"] == "torch_graph" and record.choice.mode == mode_cost.LIBRARY
    assert record.mode == "row+pdl" and record.choice.reason == row["reason"]
    assert record.choice.library_ms == 0.0118
    assert (record.baseline, record.baseline_ms) == ("stream_sync", 0.0136)
    assert record.choice.predicted_ms == pytest.approx(row["predicted_ms"], abs=1e-6)  # rounded
    assert record.costs == COSTS and record.sms == 132 and record.device == "NVIDIA H200"
    stages = [op for op in module.walk() if isinstance(op, StageOp)]
    assert [op.attributes[BLOCKS_PER_SM_ATTR].value.data for op in stages] == [3, 3]
    # explain predicts the program again from the record alone, and gets the recorded time
    text = explain(module)
    assert "mode choice (the cost model, on NVIDIA H200 with 132 SMs): chosen library; " \
        "this program is row+pdl" in text
    assert text.rstrip().endswith("; as recorded")

    result = {"device": {"name": "NVIDIA H200"},
              "rows": [{"N": 1, "H": 56, "C": 64, "modes": {}, "mode_choice": row},
                       {"N": 8, "H": 56, "C": 64, "modes": {}, "mode_choice": {"error": "x"}}]}
    directory = mode_choice.write_programs(result, tmp_path, "conv")
    assert directory == tmp_path / "conv-nvidia-h200-programs"
    assert [p.name for p in directory.iterdir()] == ["N1-H56-C64.mlir"]
    assert row["program"] == "conv-nvidia-h200-programs/N1-H56-C64.mlir"
    assert mode_cost.recorded(parse((tmp_path / row["program"]).read_text())) == record
    assert mode_choice.write_programs({"device": {"name": "x"}, "rows": []}, tmp_path,
                                      "mlp") is None


def _turns(even: float, odd: float, turns: int = 5, per_turn: int = 2) -> dict:
    """A mode's record timed in `turns` turns (bench.mlp.time_in_turns): `even` ms a run in
    turns 0, 2, 4, `odd` in 1, 3; its median over all of them."""
    import statistics

    samples = [even if turn % 2 == 0 else odd for turn in range(turns) for _ in range(per_turn)]
    return {"median_ms": statistics.median(samples), "samples_ms": samples, "turns": turns}


def test_the_held_out_check_chooses_on_even_turns_and_measures_on_odd_ones(shapes):
    # row+pdl is fastest in the even turns (and in the medians of all runs), slowest of ours in
    # the odd ones: in-sample it is within 1.000 of the best, held out 0.0160 / 0.0130
    modes = {"stream_sync": _turns(0.0136, 0.0130), "row+pdl": _turns(0.0121, 0.0160),
             "row+order+pdl": _turns(0.0151, 0.0150), "row+wait_kernel": _turns(0.0145, 0.0145),
             "torch_graph": _turns(0.0153, 0.0140)}
    measured = {m: r["median_ms"] for m, r in modes.items()}
    in_sample = mode_choice.row_choice("conv", SHAPE, shapes, measured, 132, COSTS)
    assert in_sample["chosen"] == "row+pdl" and in_sample["within"] == 1.0
    held = mode_choice.held_out_choice("conv", SHAPE, shapes, modes, 132, COSTS)
    assert held["chosen"] == "row+pdl" and held["chosen_ms"] == 0.0160
    assert held["chosen_ms_on_choosing_turns"] == 0.0121
    assert held["best"] == "stream_sync" and held["within"] == pytest.approx(0.0160 / 0.0130)
    # the stream-sync baseline is predicted from the choosing turns, not its own measurement
    assert held["predicted_ms"]["stream_sync"] == pytest.approx(0.0136, rel=1e-4)
    assert held["chosen_on"].startswith("even") and held["measured_on"].startswith("odd")
    line = mode_choice.table_line({"mode_choice": {**in_sample, "held_out": held}}, "")
    assert "1.000 of the best in-sample" in line
    assert "chose row+pdl, 1.231 of the best (stream_sync)" in line


def test_a_row_timed_in_one_turn_cannot_be_evaluated_held_out(shapes):
    one_block = {m: {**r, "turns": 1} for m, r in {
        "stream_sync": _turns(0.0136, 0.0130), "row+pdl": _turns(0.0121, 0.0160)}.items()}
    held = mode_choice.held_out_choice("conv", SHAPE, shapes, one_block, 132, COSTS)
    assert "one turn" in held["unavailable"] and "within" not in held
    before_turns = {"stream_sync": {"median_ms": 0.0136, "samples_ms": [0.0136] * 10},
                    "row+pdl": {"median_ms": 0.0121, "samples_ms": [0.0121] * 10}}
    held = mode_choice.held_out_choice("conv", SHAPE, shapes, before_turns, 132, COSTS)
    assert "one turn" in held["unavailable"]
    assert "held out: cannot be evaluated (stream_sync was timed in one turn" in \
        mode_choice.held_out_text({"held_out": held})
    # a record from before the held-out check renders, saying it lacks it
    assert mode_choice.held_out_text({"within": 1.0}) == "held out: not recorded"


def test_turns_split_as_time_in_turns_took_them():
    # 12 runs in 5 turns: the first 12 % 5 turns a run longer
    assert [len(t) for t in mode_choice.turn_samples(list(range(12)), 5)] == [3, 3, 2, 2, 2]
    assert mode_choice.turn_samples(list(range(12)), 5)[1] == [3, 4, 5]


def test_the_library_is_the_fastest_of_its_forms_the_row_measured():
    shapes = {}
    for mode in ("stream_sync", "row+pdl"):
        module = attention.stage_module(ATTENTION, mode)
        lower(module, attention.mode_passes(mode))
        shapes[mode] = mode_cost.mode_shape(module)
    # torch's SDPA in a graph beats the unfused chain in a graph and ours (row+pdl predicted
    # 0.0140 ms: below 0.99 of the chain's graph, not of SDPA's)
    measured = {"stream_sync": 0.0200, "row+pdl": 0.0160, "torch_graph": 0.0180,
                "torch_eager": 0.0300, "torch_sdpa_eager": 0.0200, "torch_sdpa_graph": 0.0135}
    row = mode_choice.row_choice("attention", ATTENTION, shapes, measured, 132, COSTS,
                                 rates=RATES)
    assert row["predicted_ms"]["row+pdl"] == pytest.approx(0.0140, rel=1e-3)
    assert row["library"] == "torch_sdpa_graph"
    assert row["chosen"] == "torch_sdpa_graph" and row["best"] == "torch_sdpa_graph"
    assert row["within"] == 1.0 and "0.0135" in row["reason"]
    # where SDPA is chosen but ours measured faster, ours is the best
    ours_faster = {**measured, "row+pdl": 0.0130}
    row = mode_choice.row_choice("attention", ATTENTION, shapes, ours_faster, 132, COSTS,
                                 rates=RATES)
    assert row["best"] == "row+pdl" and row["within"] == pytest.approx(0.0135 / 0.0130)
    assert mode_choice.fastest_library({"stream_sync": 0.01}) is None
    assert mode_choice.fastest_library(measured) == "torch_sdpa_graph"


def test_committed_records_still_read_and_render():
    import json
    from pathlib import Path

    results = Path(mode_choice.__file__).parent / "results"
    for name in ("mlp-nvidia-h200.json", "conv-nvidia-h100-80gb-hbm3.json",
                 "attention-nvidia-h100-80gb-hbm3.json"):
        result = json.loads((results / name).read_text())
        for _, _, row in mode_choice._rows(result):
            line = mode_choice.table_line(row, "")
            assert line is not None and "in-sample" in line and "held out: not recorded" in line
            held = mode_choice.half_medians(row["modes"])
            assert isinstance(held, tuple) == ("h100" in name), held  # H200's: one block a mode

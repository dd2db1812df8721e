"""The cost model's choice on a bench row (bench/mode_choice.py), without a GPU: the modes'
programs of a conv chain read back, tile times from the row's stream-sync time, the choice and
how far its measured time is from the best."""

from __future__ import annotations

import pytest

from tilesync.analysis import mode_cost
from tilesync.api import lower
from tilesync.bench import conv, mode_choice

SHAPE = (1, 56, 64)
COSTS = mode_cost.MechanismCosts(stream_gap_ms=0.0015, wait_kernel_ms=0.001,
                                 wait_ms=0.0001, order_slowdown=0.2)


TWO_COLUMNS = (1, 56, 128)  # two column tiles: the TileSync modes too


def mode_shapes(shape):
    out = {}
    for mode in conv.modes_for(shape):
        module = conv.stage_module(shape, mode)
        lower(module, conv.mode_passes(mode))
        out[mode] = mode_cost.mode_shape(module)
    return out


@pytest.fixture(scope="module")
def shapes():
    return mode_shapes(SHAPE)


def test_blocks_per_sm_come_from_the_kernels_resources():
    spec = conv.chain_spec(SHAPE)
    configs = {"conv1": spec.conv1, "conv2": spec.conv2}
    # without nvJitLink's numbers: no registers, the tiles' shared memory (64 KB: 3 per SM)
    assert spec.conv1.gemm.shared_bytes == 65536
    assert mode_choice.stage_blocks_per_sm(configs, {}) == {"conv1": 3, "conv2": 3}
    small = {"conv1": (64, 40_000), "conv2": (255, 200_000)}
    assert mode_choice.stage_blocks_per_sm(configs, small) == {"conv1": 5, "conv2": 1}


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
    # five modes besides the stream-sync baseline: as many equations as costs, and more
    shapes = mode_shapes(TWO_COLUMNS)
    assert len(shapes) == 6
    measured = {"stream_sync": 0.0192}
    predicted = mode_choice.predictions("conv", TWO_COLUMNS, shapes, measured, 132, COSTS)
    fitted = mode_choice.fit([("conv", TWO_COLUMNS, shapes, predicted, 132)])
    assert fitted.as_tuple() == pytest.approx(COSTS.as_tuple(), rel=1e-2)


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
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 2 and all("not a bench mlp / bench conv result" in ln for ln in lines)

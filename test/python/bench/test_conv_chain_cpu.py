"""The conv-chain benchmark's programs (bench/conv.py), without a GPU: the shapes graph-to-stages
accepts, every mode's program proved by sync-verify with the guarantee and policy the mode
names, and every mode of one shape compiled to PTX that nvJitLink accepts (compile_job validates
it). The GPU test is test_conv_chain_gpu.py."""

from __future__ import annotations

import math

import pytest

from tilesync.api import lower
from tilesync.bench import conv
from tilesync.dialects import sync
from tilesync.transforms.graph.graph_to_stages import conv_halo

PROGRESS = {"stream_sync": "stream order", "pdl": "programmatic dependent launch",
            "wait_kernel": "wait-kernel", "one_launch": "one launch"}


def test_the_bench_shapes_are_accepted_with_the_halo_of_their_tiles():
    for shape in conv.SHAPES:
        assert conv.refusal(shape) is None, shape
        spec = conv.chain_spec(shape)
        batch, size, c = shape
        assert spec.halo == conv_halo(spec.conv1.tile[0], size, size)
        assert spec.conv1.epilogue == "relu" and spec.conv2.epilogue is None
        assert spec.conv1.grid[:2] == spec.conv2.grid[:2] == \
            (math.ceil(batch * size * size / spec.conv1.tile[0]), c // spec.conv1.tile[1])


def test_a_shape_whose_tiles_straddle_images_is_refused_with_the_pass_reason():
    assert conv_halo(64, 28, 28) is None and conv_halo(128, 28, 28) is None
    why = conv.refusal((1, 28, 128))
    assert why is not None and "straddle images" in why


@pytest.mark.parametrize("shape", [(1, 56, 64), conv.GPU_TEST_SHAPES[0]])
def test_every_mode_is_proved_with_its_guarantee_and_policy(shape):
    modes = conv.modes_for(shape)
    one_column = conv.chain_spec(shape).conv1.grid[1] == 1
    assert any(m.startswith("tile+") for m in modes) != one_column
    assert {conv.pipeline_of(m) for m in modes} == {"cp_async", "tma_ws"}
    for mode in modes:
        module = conv.stage_module(shape, mode)
        lower(module, conv.mode_passes(mode))
        stages = {op.sym_name.data: op for op in module.ops if isinstance(op, sync.StageOp)}
        if mode == conv.PERSISTENT:  # no dependency, one stream: nothing for sync-verify
            assert not any(isinstance(op, sync.DependencyOp) for op in module.ops)
            assert all("sync.verified" not in s.attributes for s in stages.values())
            continue
        assert {n: s.attributes["sync.verified"].data for n, s in stages.items()} == \
            {"conv1": "proved", "conv2": "proved"}, mode
        sync_mode = mode.removeprefix(conv.TMA)
        guarantee = PROGRESS[sync_mode.rsplit("+", 1)[-1]]
        assert guarantee in stages["conv2"].attributes["sync.progress"].data, mode
        policy = stages["conv1"].policy
        expected = "TileSync" if sync_mode.startswith("tile+") or one_column else "RowSync"
        assert policy.kind == expected, (mode, policy)
        assert ("order" in mode) == (stages["conv1"].order is not None), mode
        launches = [op for op in module.ops if isinstance(op, sync.LaunchOp)]
        streams = {op.stream.value.data if op.stream else 0 for op in launches}
        assert (streams == {0}) == (sync_mode != "row+wait_kernel"), (mode, streams)
        assert [bool(op.fused.value.data) for op in launches] == \
            [False, sync_mode.endswith("one_launch")], mode


def test_the_tma_modes_run_the_tma_convs_and_the_others_the_cp_async_ones():
    shape = conv.GPU_TEST_SHAPES[0]
    assert [m for m in conv.modes_for(shape) if m.startswith(conv.TMA)] == list(conv.TMA_MODES)
    for mode in conv.MODES:
        spec = conv.mode_spec(shape, mode)
        assert spec.conv1.pipeline == spec.conv2.pipeline == \
            ("tma_ws" if mode in conv.TMA_MODES else "cp_async"), mode


def test_the_persistent_form_takes_128_row_tiles_where_they_leave_two_waves():
    """tma:persistent has no dependency: its tiles may straddle images (no halo), 128 rows
    where that leaves PERSISTENT_CONV_MIN_TILES tiles or more."""
    from tilesync.transforms.graph.graph_to_stages import (
        PERSISTENT_CONV_MIN_TILES,
        TMA_CONV_BLOCKS_PER_SM,
        conv_chain_stage_module,
    )

    wide = conv.mode_spec((8, 56, 256), conv.PERSISTENT)  # 196 x 2 tiles of 128 x 128
    assert wide.conv1.tile[:2] == (128, 128) and wide.halo is None
    with pytest.raises(ValueError, match="no halo dependency"):  # never tile-synchronized
        conv_chain_stage_module(wide)
    assert math.prod(wide.conv1.grid[:2]) >= PERSISTENT_CONV_MIN_TILES
    few = conv.mode_spec((8, 56, 128), conv.PERSISTENT)  # 196 tiles of 128 rows: too few
    assert few.conv1.tile[:2] == (64, 128) and few.halo == 2
    synced = conv.mode_spec((8, 56, 128), "tma:row+pdl").conv1
    assert few.conv1.tile == synced.tile  # the same tile; one block per SM walking tiles,
    assert few.conv1.blocks_per_sm == 1 and few.conv1.stages > synced.stages
    assert synced.blocks_per_sm == TMA_CONV_BLOCKS_PER_SM == 2  # or two blocks of one tile
    assert 2 * (synced.gemm.shared_bytes + synced.gemm.static_shared_bytes + 1024) <= 233472


def test_a_shape_is_refused_per_pipeline_with_each_reason():
    # 96 channels: neither the TMA convs' 64-channel k-tiles nor conv2's k-tile
    why = conv.refusals((1, 56, 96))
    assert set(why) == {"cp_async", "tma_ws"} and conv.modes_for((1, 56, 96)) == []
    assert "multiple of 64" in why["tma_ws"] and "multiple of 64" in why["cp_async"]
    assert conv.refusals((1, 56, 96), conv.CP_ASYNC_MODES).keys() == {"cp_async"}
    # one column of 64 channels: tma:tile+pdl would be tma:row+pdl's program
    assert [m for m in conv.modes_for((1, 56, 64)) if m.startswith(conv.TMA)] == \
        ["tma:stream_sync", "tma:row+pdl", "tma:row+wait_kernel", "tma:row+one_launch",
         "tma:persistent"]


def test_every_mode_compiles_to_ptx_nvjitlink_accepts():
    shape = conv.GPU_TEST_SHAPES[0]
    for mode in conv.modes_for(shape):
        entry = conv.compile_job((shape, mode, False), "sm_90")  # validates with nvJitLink
        assert entry["target"] == "sm_90a", mode  # wgmma
        assert set(entry["ptx_by_module"]) >= {"conv1_module", "conv2_module"}
        assert {"conv1", "conv2"} <= set(entry["resources"]), entry["resources"]
        assert conv.verdicts(entry["host"]) == \
            ({} if mode == conv.PERSISTENT else {"conv1": "proved", "conv2": "proved"})
        params = entry["kernels"]["conv1"].user_params
        assert params == (("tmap",) * 3 if mode.startswith(conv.TMA) else ("ptr",) * 3), \
            (mode, params)


def test_table_and_floor_from_a_result():
    spec = conv.chain_spec((1, 56, 64))
    slow, fast = {"peak_tflops": 1.0, "copy_gbps": 1e9}, {"peak_tflops": 1e9, "copy_gbps": 1.0}
    assert conv.floor_ms(spec, slow) == pytest.approx(conv.flops(spec) / 1e12 * 1e3)
    pixels = 56 * 56 * 64  # x, h (twice), y: one image of 64 channels each; two 64x576 filters
    assert conv.floor_ms(spec, fast) == pytest.approx(2 * (4 * pixels + 2 * 64 * 576) / 1e9 * 1e3)
    timing = {"median_ms": 0.02, "p10_ms": 0.019, "p90_ms": 0.021, "rel_error": 1e-3}
    modes = {"stream_sync": {**timing, "median_ms": 0.03}, "row+pdl": {**timing, "policy": "x"},
             "torch_graph": {**timing, "median_ms": 0.01}}
    result = {"library": "torch", "reps": 3, "warmup": 1, "sms": 132, "programs_compiled": 2,
              "compile_seconds": 1.0, "programs_cached": 0, "verify": "proved", "seconds": 2.0,
              "rates": {"peak_tflops": 700.0, "copy_gbps": 3000.0},
              "rows": [{"shape": "N=1 56x56 C=64", "config": "cfg", "floor_ms": 0.005,
                        "flops": conv.flops(spec), "modes": modes,
                        "speedup": conv.mlp.speedups(modes)},
                       {"shape": "N=1 28x28 C=128", "refused": "tiles straddle images",
                        "modes": {}}]}
    table = conv.conv_table(result)
    (row,) = [line for line in table.splitlines() if " row+pdl " in line]
    speedup, vs_graph, per_floor = row.split()[3:6]
    assert (float(speedup), float(vs_graph), float(per_floor)) == (1.5, 0.5, 4.0)
    assert "REFUSED: tiles straddle images" in table


def test_the_chain_of_tma_convs_is_proved_and_compiles():
    """conv-pipeline=tma_ws: the GPU test shape's chain of im2col TMA convs, RowSync + PDL,
    both stages proved and its PTX accepted by nvJitLink."""
    shape = conv.GPU_TEST_SHAPES[0]
    spec = conv.chain_spec(shape, "tma_ws")
    assert spec.conv1.pipeline == spec.conv2.pipeline == "tma_ws" and spec.conv1.tile[0] == 64
    entry = conv.compile_job((shape, "tma:row+pdl", True), "sm_90")
    assert conv.verdicts(entry["host"]) == {"conv1": "proved", "conv2": "proved"}
    ptx = "".join(entry["ptx_by_module"].values())
    assert ptx.count(".global.im2col.mbarrier::complete_tx::bytes") == 2

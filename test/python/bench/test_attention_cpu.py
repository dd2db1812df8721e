"""The attention benchmark's programs (bench/attention.py), without a GPU: the graph function
is the front end's pattern, every mode's program is proved by sync-verify with the guarantee it
names, and compiles to PTX that nvJitLink accepts (compile_job validates it); the floor's
arithmetic. The GPU test is test_attention_gpu.py."""

from __future__ import annotations

import pytest

from tilesync.api import lower
from tilesync.bench import attention
from tilesync.dialects import sync

PROGRESS = {"row+pdl": "programmatic dependent launch", "tile+pdl": "programmatic dependent "
            "launch", "row+wait_kernel": "wait-kernel"}


def test_the_bench_shapes_match_the_pattern():
    for shape in attention.SHAPES:
        spec = attention.attention_spec(shape)
        tokens, width = shape
        assert (spec.qkv.M, spec.qkv.N, spec.qkv.K) == (tokens, 3 * width, width)
        assert (spec.scores.M, spec.scores.N, spec.scores.K) == (tokens, tokens, width)
        assert (spec.context.M, spec.context.N, spec.context.K) == (tokens, width, tokens)
        assert (spec.out.M, spec.out.N, spec.out.K) == (tokens, width, width)


def test_p_v_takes_one_block_an_sm_and_the_narrow_tile_where_a_wave_holds_it():
    from tilesync.analysis.occupancy import blocks_per_sm
    from tilesync.kernels.config import H100_SMS

    widths = {}
    for shape in attention.SHAPES:
        context = attention.attention_spec(shape).context
        widths[shape[0]] = context.tile[1]
        tiles = context.grid[0] * context.grid[1]
        assert tiles <= H100_SMS or context.tile[1] == 32
        # its ring alone keeps a second block off the SM (under PDL two would share it)
        assert blocks_per_sm(128, 0, context.shared_bytes).blocks_per_sm == 1
    assert widths == {512: 16, 1024: 16, 2048: 16, 4096: 32}


def test_flops_and_floor():
    t, c = 1024, 128
    assert attention.flops((t, c)) == 2 * t * c * (3 * c) + 2 * (2 * t * t * c) + 2 * t * c * c
    rates = {"peak_tflops": 1e-9, "copy_gbps": 1e9}  # flops bound: 1 flop a ms
    assert attention.floor_ms((t, c), rates) == pytest.approx(attention.flops((t, c)))
    rates = {"peak_tflops": 1e9, "copy_gbps": 1e-6}  # bytes bound: 1 byte a ms
    elements = t * c + 4 * c * c + 2 * (3 * t * c + 2 * t * t + t * c) + t * c
    assert attention.floor_ms((t, c), rates) == pytest.approx(2 * elements)


@pytest.mark.parametrize("mode", attention.MODES)
def test_every_mode_is_proved_with_its_guarantee(mode):
    shape = attention.GPU_TEST_SHAPES[0]
    module = attention.stage_module(shape, mode)
    lower(module, attention.mode_passes(mode))
    stages = {op.sym_name.data: op for op in module.walk() if isinstance(op, sync.StageOp)}
    launches = [op for op in module.walk() if isinstance(op, sync.LaunchOp)]
    assert list(stages) == list(attention.STAGES)
    assert all(s.attributes["sync.verified"].data == "proved" for s in stages.values())
    if mode == "stream_sync":
        assert {op.stream.value.data for op in launches} == {0}
        assert not any(op.pdl is not None and op.pdl.value.data for op in launches)
    else:
        for name in attention.STAGES[1:]:
            assert PROGRESS[mode] in stages[name].attributes["sync.progress"].data


def test_one_mode_compiles_to_ptx_nvjitlink_accepts():
    entry = attention.compile_job((attention.GPU_TEST_SHAPES[0], "row+pdl", False), "sm_90")
    assert entry["target"] == "sm_90a" and set(entry["ptx_by_module"]) == {
        f"{name}_module" for name in attention.STAGES}
    assert all(name in entry["resources"] for name in attention.STAGES)


def test_each_stage_takes_the_tensors_graph_to_stages_binds():
    from types import SimpleNamespace

    from tilesync.transforms.graph.graph_to_stages import attention_bindings

    data = SimpleNamespace(x="x", w_qkv="w_qkv", w_out="w_out", qkv="QKV", s="S", p="P",
                           o="O", y="y", binds=attention_bindings(
                               attention.attention_match(attention.GPU_TEST_SHAPES[0])))
    assert attention.AttentionData.kernel_args(data) == {
        "qkv": ["x", "w_qkv", "QKV"], "scores": ["QKV", "QKV", "S"], "softmax": ["S", "P"],
        "context": ["P", "QKV", "O"], "out": ["O", "w_out", "y"]}

"""kernels/softmax.py: the softmax kernel's sync hooks (what graph-to-stages' attention chain
synchronizes), and that without them the kernel has none."""

from __future__ import annotations

import re

import pytest
from xdsl.dialects import gpu, memref

from tilesync.dialects import sync
from tilesync.kernels.config import softmax_config
from tilesync.kernels.softmax import softmax_module


def _kernel(cfg) -> gpu.FuncOp:
    return next(op for op in softmax_module(cfg).walk() if isinstance(op, gpu.FuncOp))


def test_hooks_wrap_the_rows_of_the_block():
    cfg = softmax_config(64, 128, sync_hooks=True)
    # a hooked kernel is another kernel (the repr keys the compile cache)
    assert repr(cfg) == repr(softmax_config(64, 128))[:-1] + ", sync_hooks=True)"
    body = list(_kernel(cfg).body.block.ops)
    tile = next(op for op in body if isinstance(op, sync.TileOp))
    load = next(op for op in body if isinstance(op, sync.LoadPointOp))
    store = next(op for op in body if isinstance(op, sync.StorePointOp))
    # at the top level of the kernel, where every thread reaches the barrier of a wait or post
    assert body.index(tile) < body.index(load) < body.index(store) == len(body) - 2
    assert load.operand.data == 0 and load.step is None
    assert list(load.tile) == list(store.tile) == list(tile.results)
    assert cfg.tile == (4, 128) and cfg.grid == (16, 1, 1)


def test_no_hooks_by_default():
    ops = list(_kernel(softmax_config(64, 128)).walk())
    assert not any(isinstance(op, sync.TileOp | sync.LoadPointOp | sync.StorePointOp)
                   for op in ops)
    assert any(isinstance(op, gpu.BlockIdOp) for op in ops)
    assert sum(isinstance(op, memref.StoreOp) for op in ops) == 4


def test_scale_names_the_config_where_set():
    # the repr keys the compile cache and the PTX digests: scale 1 keeps the old name
    assert "scale" not in repr(softmax_config(64, 128, scale=1.0))
    assert repr(softmax_config(64, 128, scale=0.125)) == \
        repr(softmax_config(64, 128))[:-1] + ", scale=0.125)"


LOG2E = "0f3FB8AA3B"  # exp(d) lowers to ex2(d · log2(e))


def _exp_arguments(ptx: str) -> list[str]:
    """Per exp, what its argument d is in the PTX's register dataflow: "x - max" (a sub.f32
    result) or "(x - max) * <constant>"."""
    by_constant = {dst: (src, const) for dst, src, const in re.findall(
        r"mul\.rn\.f32\s+(%r\d+), (%r\d+), (0f[0-9A-F]{8});", ptx)}
    differences = set(re.findall(r"sub\.rn\.f32\s+(%r\d+),", ptx))
    found = []
    for src, const in by_constant.values():
        if const != LOG2E:
            continue
        if src in differences:
            found.append("x - max")
        elif src in by_constant and by_constant[src][0] in differences:
            found.append(f"(x - max) * {by_constant[src][1]}")
        else:
            found.append("?")
    return found


def test_scale_multiplies_before_the_exp_in_ptx():
    from tilesync.harness.compile import compile_kernel

    per_lane = 256 // 32
    scaled = compile_kernel(softmax_config(64, 256, scale=0.125)).ptx
    assert _exp_arguments(scaled) == ["(x - max) * 0f3E000000"] * per_lane  # 0.125's bits
    plain = compile_kernel(softmax_config(64, 256)).ptx
    assert _exp_arguments(plain) == ["x - max"] * per_lane
    assert plain.count("ex2.approx.ftz.f32") == scaled.count("ex2.approx.ftz.f32") == per_lane


def test_causal_names_the_config_and_takes_whole_sequences():
    assert "causal" not in repr(softmax_config(64, 128))
    assert repr(softmax_config(256, 128, causal=True)) == \
        repr(softmax_config(256, 128))[:-1] + ", causal=True)"
    with pytest.raises(ValueError, match="whole sequences of 128 queries, got 192 rows"):
        softmax_config(192, 128, causal=True)


def test_causal_masks_each_value_before_the_maximum_in_ptx():
    from tilesync.harness.compile import compile_kernel

    per_lane = 256 // 32
    causal = compile_kernel(softmax_config(512, 256, causal=True)).ptx
    # each of a lane's values: -inf (0fFF800000) where its column is past the row's query
    assert len(re.findall(r"selp\.f32\s+%r\d+, 0fFF800000, %r\d+, %p\d+;", causal)) == per_lane
    # and it is read at min(column, query): nothing past the diagonal is loaded
    assert causal.count("min.u64") == causal.count("ld.global") == per_lane
    assert "0fFF800000" not in compile_kernel(softmax_config(512, 256)).ptx

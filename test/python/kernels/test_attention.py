"""kernels/attention.py without a GPU: the configuration's checks and sizes, the kernel's
arguments and sync hooks, its PTX (nvJitLink accepts it), and the register ordering its wgmma
form needs. test_fused_attention_gpu.py runs it."""

from __future__ import annotations

import re

import pytest
from xdsl.dialects import gpu, scf

from tilesync.dialects import sync
from tilesync.dialects import tile as tl
from tilesync.kernels.attention import attention_module
from tilesync.kernels.config import SharedMemoryExceeded, attention_config


def _kernel(cfg) -> gpu.FuncOp:
    return next(op for op in attention_module(cfg).walk() if isinstance(op, gpu.FuncOp))


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(tokens=256, head_width=96), "head width must be 64 or 128"),
    (dict(tokens=200, head_width=64), "multiple of the block's 64 queries"),
    (dict(tokens=192, head_width=64, block_n=128), "multiple of the block's 64 queries and "
                                                   "128 keys"),
    (dict(tokens=256, head_width=64, block_m=32), "64 or 128 queries"),
    (dict(tokens=256, head_width=64, scale=0.0), "scale must be positive"),
    (dict(tokens=256, head_width=64, mma="wmma"), "mma must be 'sync' or 'wgmma'"),
    (dict(tokens=256, head_width=64, stages=5), "2-4 stages"),
])
def test_the_config_refuses_what_the_kernel_cannot_do(kwargs, message):
    with pytest.raises(ValueError, match=message):
        attention_config(**kwargs)


def test_shared_memory_beyond_a_block_is_refused():
    with pytest.raises(SharedMemoryExceeded):
        attention_config(512, 128, block_m=128, block_n=128, stages=4)


def test_sizes():
    cfg = attention_config(1024, 128, heads=12, sequences=2, block_m=128, mma="wgmma")
    assert cfg.grid == (16, 12, 1) and cfg.block == (256, 1, 1) and cfg.tile == (128, 128)
    assert cfg.width == 1536 and cfg.rows == 2048 and cfg.target == "sm_90a"
    assert cfg.shared_bytes == 2 * 128 * (128 + 2 * 2 * 64)
    assert cfg.signature == ("ptr",) * 4
    # q · kᵀ and P · v: 2 T² D multiply-adds a head and sequence; causal: the pairs at or
    # before each query
    assert cfg.flops == 4 * 1024 * 1024 * 128 * 12 * 2
    causal = attention_config(1024, 128, heads=12, sequences=2, causal=True)
    assert causal.flops == 4 * (1024 * 1025 // 2) * 128 * 12 * 2
    assert attention_config(256, 64).target is None  # mma.sync: any sm_80+


@pytest.mark.parametrize("mma", ["sync", "wgmma"])
def test_hooks_name_q_k_v_as_operands_of_their_own(mma):
    cfg = attention_config(512, 64, heads=2, causal=True, mma=mma, sync_hooks=True)
    kernel = _kernel(cfg)
    assert [arg.name_hint for arg in kernel.body.block.args] == ["Q", "K", "V", "O"]
    points = [op for op in kernel.walk() if isinstance(op, sync.LoadPointOp)]
    # q once, then k and v of the prologue's key block and of the loop's
    assert [(p.operand.data, p.step is not None) for p in points] == \
        [(0, False), (1, True), (2, True), (1, True), (2, True)]
    body = list(kernel.body.block.ops)
    assert isinstance(body[-2], sync.StorePointOp)
    assert not any(isinstance(op, gpu.BlockIdOp) for op in kernel.walk())


def test_no_hooks_by_default():
    ops = list(_kernel(attention_config(256, 64)).walk())
    assert not any(isinstance(op, sync.TileOp | sync.LoadPointOp | sync.StorePointOp)
                   for op in ops)


@pytest.mark.parametrize("causal", [False, True])
def test_one_loop_over_the_key_blocks(causal):
    """Causal masking is a bound chosen per key block inside the one loop: the same steps as a
    second, masked loop after the first gave wrong results with wgmma on an H200."""
    kernel = _kernel(attention_config(512, 64, block_m=128, causal=causal, mma="wgmma"))
    loops = [op for op in kernel.walk() if isinstance(op, scf.ForOp)]
    assert len(loops) == 1
    selects = [op for op in loops[0].walk() if op.name == "arith.select"]
    # causal: each of the BN/8 tiles' 4 values, and the two rows' bounds
    assert len(selects) == (64 // 8 * 4 + 2 if causal else 0)


def test_p_stays_in_registers():
    """P · v reads P as A fragments made from the softmax's accumulators: no P in memory."""
    kernel = _kernel(attention_config(256, 128, mma="wgmma"))
    assert any(isinstance(op, tl.AccToAOp) for op in kernel.walk())
    reg_a = [op for op in kernel.walk() if isinstance(op, tl.WgmmaRegAOp)]
    assert reg_a and all(op.trans_b is not None and op.n == 64 for op in reg_a)
    stores = [op for op in kernel.walk() if isinstance(op, tl.StoreAccOp)]
    assert len(stores) == 128 // 8  # O's tiles, once


def _wgmma_register_writes_after_fence(ptx: str) -> list[str]:
    """Instructions between a wgmma.fence and the wgmma.mma_async after it that write a
    register that wgmma reads (its A fragment or accumulators)."""
    lines = ptx.splitlines()
    found = []
    for i, line in enumerate(lines):
        if "wgmma.fence" not in line:
            continue
        j = i + 1
        while "wgmma.mma_async" not in lines[j]:
            j += 1
        read = set(re.findall(r"%r\d+", lines[j].split("k16", 1)[1]))
        for between in lines[i + 1:j]:
            written = re.match(r"\s*[a-z][\w.]*\s+(%r\d+)", between)
            if written and written.group(1) in read:
                found.append(between.strip())
    return found


@pytest.mark.parametrize("kwargs", [
    dict(tokens=512, head_width=64, block_m=128, causal=True),
    dict(tokens=1024, head_width=128, block_m=128, block_n=128, heads=2),
])
def test_wgmma_registers_are_written_before_their_fence(kwargs):
    """Every register a wgmma reads is written before the wgmma.fence that precedes it (PTX:
    a register access between the fence and the wgmma is undefined); the fragments pass
    through the fence, so no copy of them lands after it."""
    from tilesync.harness.compile import compile_kernel

    ptx = compile_kernel(attention_config(**kwargs, mma="wgmma"), validate=True).ptx
    assert ptx.count("wgmma.fence.sync.aligned") == 2  # q · kᵀ's and P · v's
    assert _wgmma_register_writes_after_fence(ptx) == []


@pytest.mark.parametrize("kwargs", [
    dict(tokens=256, head_width=64, heads=2, causal=True),
    dict(tokens=256, head_width=128, sequences=2, dtype="bf16", stages=3),
    dict(tokens=256, head_width=64, mma="wgmma", block_n=128, sync_hooks=False),
])
def test_ptx_nvjitlink_accepts(kwargs):
    from tilesync.harness.compile import compile_kernel

    cfg = attention_config(**kwargs)
    ptx = compile_kernel(cfg, validate=True).ptx
    assert ptx.count("ex2.approx.ftz.f32") > 0
    assert ("wgmma.mma_async" in ptx) == (cfg.mma == "wgmma")
    assert ("mma.sync" in ptx) == (cfg.mma == "sync")


# After a KV cache: S' cached keys a sequence (two more arguments), any count of new tokens.

@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(tokens=1, head_width=64, cached=96), "96 cached tokens: a multiple of the block's 64"),
    (dict(tokens=1, head_width=64, cached=-64), "a multiple of the block's 64 keys"),
    (dict(tokens=0, head_width=64, cached=64), "any count after a KV cache"),
])
def test_the_cached_config_refuses_what_the_kernel_cannot_do(kwargs, message):
    with pytest.raises(ValueError, match=message):
        attention_config(**kwargs)


def test_cached_sizes():
    """A sequence's new tokens take ceil(T / BM) blocks; every query sees the S' cached keys."""
    cfg = attention_config(1, 128, heads=12, sequences=4, cached=2048, mma="wgmma")
    assert cfg.grid == (4, 12, 1) and cfg.rows == 4 and cfg.signature == ("ptr",) * 6
    assert cfg.flops == 4 * 2049 * 128 * 12 * 4
    chunk = attention_config(70, 64, sequences=2, causal=True, cached=128)
    assert chunk.grid == (4, 1, 1)
    assert chunk.flops == 4 * (70 * 128 + 70 * 71 // 2) * 64 * 2


@pytest.mark.parametrize("causal", [False, True])
def test_cached_keys_are_read_without_load_points_and_o_stored_masked(causal):
    cfg = attention_config(3, 64, heads=2, sequences=2, causal=causal, cached=256,
                           sync_hooks=True)
    kernel = _kernel(cfg)
    assert [arg.name_hint for arg in kernel.body.block.args] == \
        ["Q", "K", "V", "O", "K_cache", "V_cache"]
    o_type = kernel.body.block.args[3].type
    assert list(o_type.get_shape()) == [2, 3, 128]  # B x T x C: padding rows lie outside
    copies = [op for op in kernel.walk() if isinstance(op, tl.CpAsyncOp)]
    sources = {op.src.name_hint for op in copies}
    assert sources == {"Q", "K", "V", "K_cache", "V_cache"}
    points = [op for op in kernel.walk() if isinstance(op, sync.LoadPointOp)]
    assert sorted({p.operand.data for p in points}) == [0, 1, 2]  # the caches are inputs
    stores = [op for op in kernel.walk() if isinstance(op, tl.StoreAccOp)]
    assert stores and all(op.masked is not None for op in stores)
    # the new tokens' keys are clamped to the last token (padding reads it)
    assert any(op.name == "arith.minui" for op in kernel.walk())


@pytest.mark.parametrize("kwargs", [
    dict(tokens=1, head_width=128, heads=2, sequences=3, cached=512),
    dict(tokens=5, head_width=64, heads=2, causal=True, cached=128, sync_hooks=True),
    dict(tokens=1, head_width=128, heads=4, cached=1024, mma="wgmma", block_n=128),
    dict(tokens=70, head_width=64, sequences=2, causal=True, cached=256, mma="wgmma",
         dtype="bf16"),
])
def test_cached_ptx_nvjitlink_accepts(kwargs):
    from tilesync.harness.compile import compile_kernel

    cfg = attention_config(**kwargs)
    ptx = compile_kernel(cfg, validate=True).ptx
    assert ("wgmma.mma_async" in ptx) == (cfg.mma == "wgmma")
    if cfg.mma == "wgmma":
        assert _wgmma_register_writes_after_fence(ptx) == []


# Split keys (flash-decoding): a (sequence, head)'s key blocks over several blocks, merged.

@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(tokens=1, head_width=64, splits=2), "after a KV cache"),
    (dict(tokens=1, head_width=64, cached=512, causal=True, splits=2), "not causal"),
    (dict(tokens=70, head_width=64, cached=512, splits=2), "one block of 64"),
    (dict(tokens=1, head_width=64, cached=256, splits=4), "4 splits of 5 key blocks, 2 a split"),
])
def test_splits_are_refused_where_a_split_would_be_empty_or_not_decoding(kwargs, message):
    with pytest.raises(ValueError, match=message):
        attention_config(**kwargs)


def test_split_sizes():
    cfg = attention_config(1, 128, heads=12, cached=2048, block_n=128, splits=9,
                           mma="wgmma")
    assert (cfg.key_blocks, cfg.keys_per_split) == (17, 2)  # the last split: key block 16
    assert cfg.grid == (9, 12, 1) and cfg.combine.grid == (1, 12, 1)
    assert cfg.signature == ("ptr",) * 7 and cfg.parts_rows == 9 * 64
    # unsplit after a cache, a block's rows of O are its sequence's T new tokens
    assert attention_config(1, 128, cached=2048).tile == (1, 128)
    assert attention_config(200, 128, cached=2048, block_m=128).tile == (128, 128)


def test_a_split_writes_its_partial_o_and_stats():
    from tilesync.kernels.attention import attention_combine_module

    cfg = attention_config(2, 64, heads=2, sequences=3, cached=256, splits=3, sync_hooks=True)
    kernel = _kernel(cfg)
    names = [arg.name_hint for arg in kernel.body.block.args]
    assert names == ["Q", "K", "V", "O", "K_cache", "V_cache", "Stats"]
    o_type, stats = kernel.body.block.args[3].type, kernel.body.block.args[6].type
    # a block's rows of both at x · BM (its region as the stage's tile says), fp32
    assert o_type == stats and list(o_type.get_shape()) == [3 * 3 * 64, 128]
    assert o_type.element_type.bitwidth == 32 and cfg.tile == (64, 64)
    combine = next(op for op in attention_combine_module(cfg.combine).walk()
                   if isinstance(op, gpu.FuncOp))
    assert [arg.name_hint for arg in combine.body.block.args] == ["Parts", "Stats", "O"]
    points = [op for op in combine.walk() if isinstance(op, sync.LoadPointOp)]
    assert [p.operand.data for p in points] == [0, 1]
    assert isinstance(list(combine.body.block.ops)[-2], sync.StorePointOp)


@pytest.mark.parametrize("kwargs", [
    dict(tokens=1, head_width=128, heads=2, sequences=2, cached=1024, block_n=128, splits=3,
         mma="wgmma"),
    dict(tokens=3, head_width=64, heads=2, cached=512, splits=5, sync_hooks=True),
])
def test_split_and_combine_ptx_nvjitlink_accepts(kwargs):
    from tilesync.harness.compile import compile_kernel

    cfg = attention_config(**kwargs)
    ptx = compile_kernel(cfg, validate=True).ptx
    assert ("wgmma.mma_async" in ptx) == (cfg.mma == "wgmma")
    combined = compile_kernel(cfg.combine, validate=True).ptx
    assert "ex2.approx" in combined

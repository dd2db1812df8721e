"""kernels/config.py: what the kernel configurations accept and the sizes they derive."""

from __future__ import annotations

import pytest

from tilesync.kernels.config import conv2d_config, gemm_config, softmax_config


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(M=64, N=64, K=60), "K .* must be a multiple of 8"),
        (dict(M=64, N=60, K=64), "multiple of 8"),
        (dict(M=64, N=64, K=64, tile=(128, 256, 64), warps=(2, 4), stages=5),
         "more than the 232448 a block can have"),
        (dict(M=64, N=64, K=64, dtype="f32"), "dtype must be one of"),
        (dict(M=64, N=64, K=64, epilogue="sigmoid"), "epilogue must be one of"),
        (dict(M=64, N=64, K=64, warps=(3, 2)), "does not split into 3x2 warp tiles"),
        (dict(M=64, N=64, K=64, stages=1), "stages must be at least 2"),
        (dict(M=64, N=64, K=64, tile=(16, 64, 32), warps=(1, 4), stages=10),
         "at most 7 pending groups"),
    ],
)
def test_config_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        gemm_config(**kwargs)


@pytest.mark.parametrize("kwargs, message", [
    (dict(M=64, N=256, K=96, split_k=4), "split_k=4 must be 1 to the 3 k-tiles"),
    (dict(M=64, N=136, K=64, epilogue="swiglu"), "swiglu pairs"),
    (dict(M=64, N=256, K=64, dropout=0.0), "keep probability"),
])
def test_new_config_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        gemm_config(**kwargs)


@pytest.mark.parametrize("kwargs, message", [
    (dict(tile=(128, 128, 32), warps=(8, 1)), "BK = 64"),
    (dict(tile=(128, 128, 64), warps=(2, 2)), r"warps = \(BM / 16, 1\)"),
    (dict(tile=(128, 128, 64), warps=(8, 1), b_layout="row"), "b_layout='col'"),
    (dict(tile=(128, 128, 64), warps=(8, 1), stages=2), "at least 3 stages"),
])
def test_wgmma_config_errors(kwargs, message):
    kwargs = {"b_layout": "col", **kwargs}
    with pytest.raises(ValueError, match=message):
        gemm_config(256, 256, 256, mma="wgmma", **kwargs)


@pytest.mark.parametrize("kwargs, message", [
    (dict(mma="sync", tile=(128, 128, 32), warps=(2, 2)), "staged_store stages a wgmma tile"),
    (dict(split_k=2), "split_k=1 and no swiglu"),
    (dict(epilogue="swiglu"), "split_k=1 and no swiglu"),
    (dict(tile=(128, 96, 64)), "BN a multiple of 64"),
    (dict(tile=(128, 256, 64), stages=3), "at least BN / 64 stages"),
    (dict(N=260), "N a multiple of 8"),
])
def test_staged_store_config_errors(kwargs, message):
    kwargs = {"N": 256, "tile": (128, 128, 64), "warps": (8, 1), "stages": 4, "mma": "wgmma",
              **kwargs}
    with pytest.raises(ValueError, match=message):
        gemm_config(256, kwargs.pop("N"), 256, b_layout="col", staged_store=True, **kwargs)


@pytest.mark.parametrize("kwargs, message", [
    (dict(a_head=32), "whole k-tiles"),
    (dict(a_head=256), "whole k-tiles"),  # all of K: nothing left of A
    (dict(split_k=2), "without split-K"),
    (dict(pipeline="tma_ws", mma="wgmma", tile=(128, 128, 64), warps=(8, 1)),
     "cp_async pipeline"),
])
def test_a_head_config_errors(kwargs, message):
    kwargs = {"a_head": 64, "tile": (128, 128, 64), **kwargs}
    with pytest.raises(ValueError, match=message):
        gemm_config(256, 256, 256, b_layout="col", **kwargs)


def test_col_layout_b_needs_no_aligned_n():
    cfg = gemm_config(64, 60, 64, b_layout="col")
    assert cfg.grid == (1, 1, 1)


@pytest.mark.parametrize("kwargs, message", [
    (dict(C=12), "C must be a multiple of 8"),
    (dict(epilogue="swiglu"), "swiglu is a GEMM epilogue"),
    (dict(tile=(128, 128, 48)), "BK must be 16, 32, 64 or 128"),  # the GEMM view's check
])
def test_conv_config_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        conv2d_config(**{"N": 1, "H": 7, "W": 7, "C": 64, "K": 64, **kwargs})


def test_conv_config_is_its_gemm_view():
    cfg = conv2d_config(2, 14, 14, 64, 128, tile=(128, 128, 64), warps=(8, 1), stages=4,
                        mma="wgmma")
    gemm = cfg.gemm
    assert (gemm.M, gemm.N, gemm.K, gemm.b_layout) == (2 * 14 * 14, 128, 9 * 64, "col")
    assert cfg.grid == gemm.grid == (4, 1, 1) and cfg.block == gemm.block
    assert cfg.target == gemm.target == "sm_90a"
    assert conv2d_config(1, 7, 7, 64, 64).target is None


@pytest.mark.parametrize("kwargs, message", [
    (dict(rows=0, cols=1024), "rows positive"),
    (dict(rows=8, cols=1000), "multiple of 32"),
    (dict(rows=8, cols=1024, dropout=1.5), "keep probability"),
    (dict(rows=8, cols=1024, scale=0.0), "scale must be positive and finite"),
    (dict(rows=8, cols=1024, scale=float("inf")), "scale must be positive and finite"),
])
def test_softmax_config_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        softmax_config(**kwargs)


def test_softmax_config_sizes():
    cfg = softmax_config(1000, 1024, dropout=0.9)
    assert cfg.grid == (250, 1, 1) and cfg.block == (128, 1, 1)
    assert cfg.signature == ("ptr", "ptr", "i32") and cfg.target is None
    assert softmax_config(8, 64).signature == ("ptr", "ptr")


def test_sync_hooks_name_the_config_where_set():
    """The repr keys the compile cache: a kernel with hooks is another kernel, while every
    config without them keeps the name its PTX digest was recorded under."""
    from tilesync.harness.compile import _kernel_key
    from tilesync.kernels.config import conv2d_config, softmax_config

    for plain, hooked in [(softmax_config(128, 512), softmax_config(128, 512, sync_hooks=True)),
                          (conv2d_config(1, 56, 56, 64, 64),
                           conv2d_config(1, 56, 56, 64, 64, sync_hooks=True))]:
        assert "sync_hooks" not in repr(plain) and "sync_hooks=True" in repr(hooked)
        assert _kernel_key(plain, "sm_90") != _kernel_key(hooked, "sm_90")


@pytest.mark.parametrize("kwargs, message", [
    (dict(split_k=1), "2 to 8 slices"),
    (dict(split_k=16, K=2048), "2 to 8 slices"),
    (dict(sync_hooks=True), "no sync hooks"),
    (dict(pipeline="tma_ws", mma="wgmma", tile=(128, 128, 64), warps=(8, 1), b_layout="col"),
     "tma_ws takes split_k=1"),
])
def test_split_cluster_config_errors(kwargs, message):
    kwargs = {"split_k": 4, "K": 512, **kwargs}
    with pytest.raises(ValueError, match=message):
        gemm_config(256, 256, kwargs.pop("K"), split_cluster=True, **kwargs)


def test_split_cluster_needs_no_workspace_and_holds_its_tile_in_shared_memory():
    """The slices meet in the first CTA's f32 buffer: no workspace or counters among the
    parameters, a (1, 1, split) cluster on the (M, N, split) grid, BM x BN x 4 more bytes of
    shared memory; the name shows the field only where set (earlier configs keep theirs)."""
    plain = gemm_config(256, 256, 512, split_k=4)
    cfg = gemm_config(256, 256, 512, split_k=4, split_cluster=True)
    assert plain.params[-2:] == ("workspace", "counters") and plain.split_workspace
    assert cfg.params == ("A", "B", "C") and not cfg.split_workspace
    assert cfg.grid == (2, 2, 4) and cfg.cluster_dims == (1, 1, 4)
    assert plain.cluster_dims is None
    assert cfg.shared_bytes - plain.shared_bytes == 128 * 128 * 4
    assert "split_cluster" not in repr(plain) and "split_cluster=True" in repr(cfg)
    conv = conv2d_config(8, 7, 7, 512, 512, tile=(64, 64, 64), warps=(4, 1), stages=6,
                         split_k=2, mma="wgmma", split_cluster=True)
    assert conv.gemm.split_cluster and "split_cluster=True" in repr(conv)
    assert "split_cluster" not in repr(conv2d_config(8, 7, 7, 512, 512))


@pytest.mark.parametrize("kwargs, message", [
    (dict(tma_store=False), "of a tma_store tile"),
    (dict(staging_boxes=3), "a divisor of the output tile's 4 boxes"),
    (dict(staging_boxes=4), "fewer than all"),
])
def test_staging_boxes_config_errors(kwargs, message):
    from tilesync.kernels.config import tma_ws_config

    kwargs = {"tma_store": True, "staging_boxes": 2, **kwargs}
    with pytest.raises(ValueError, match=message):
        tma_ws_config(1024, 1024, 1024, tile=(128, 256, 64), stages=4, **kwargs)


@pytest.mark.parametrize("kwargs, message", [
    (dict(sync_hooks=False), "one tile a block"),  # persistent: one block per SM
    (dict(blocks_per_sm=5), "blocks_per_sm 1 to 4"),
    (dict(blocks_per_sm=0), "blocks_per_sm 1 to 4"),
    (dict(stages=6), "2 blocks of .* bytes of shared memory each exceed"),
])
def test_blocks_per_sm_config_errors(kwargs, message):
    from tilesync.kernels.config import tma_ws_config

    kwargs = {"sync_hooks": True, "blocks_per_sm": 2, "stages": 3, "tma_store": True,
              "producer_warps": 4, **kwargs}
    with pytest.raises(ValueError, match=message):
        tma_ws_config(4096, 256, 576, tile=(64, 128, 64), **kwargs)


def test_blocks_per_sm_is_the_tma_pipelines():
    with pytest.raises(ValueError, match="blocks_per_sm is the tma_ws pipeline's"):
        gemm_config(4096, 256, 576, tile=(64, 128, 64), warps=(4, 1), stages=3, mma="wgmma",
                    b_layout="col", blocks_per_sm=2)


def test_blocks_per_sm_names_the_config_where_set():
    from tilesync.kernels.config import tma_ws_config

    one = tma_ws_config(4096, 256, 576, tile=(64, 128, 64), stages=3, sync_hooks=True)
    two = tma_ws_config(4096, 256, 576, tile=(64, 128, 64), stages=3, sync_hooks=True,
                        blocks_per_sm=2)
    assert "blocks_per_sm" not in repr(one) and "blocks_per_sm=2" in repr(two)
    conv = conv2d_config(8, 56, 56, 128, 128, tile=(64, 128, 64), warps=(4, 1), stages=3,
                         mma="wgmma", pipeline="tma_ws", tma_store=True, sync_hooks=True,
                         blocks_per_sm=2)
    assert conv.gemm.blocks_per_sm == 2 and "blocks_per_sm=2" in repr(conv)


def test_a_triangular_a_names_the_config_and_takes_one_sequence_of_keys():
    """P · v of a causal softmax: A (P) is zero past each row's position, so a tile's k-loop
    ends early; K must be the sequence's keys, in one slice."""
    plain = gemm_config(512, 128, 256, (128, 32, 64), (4, 1), 8)
    causal = gemm_config(512, 128, 256, (128, 32, 64), (4, 1), 8, triangular_a=256)
    assert "triangular_a" not in repr(plain)
    assert repr(causal) == repr(plain)[:-1] + ", triangular_a=256)"
    with pytest.raises(ValueError, match="A's K is the 256 keys of one sequence"):
        gemm_config(512, 128, 256, (128, 32, 64), (4, 1), 8, triangular_a=128)
    with pytest.raises(ValueError, match="one slice of K"):
        gemm_config(512, 128, 256, (128, 32, 64), (4, 1), 8, split_k=2, triangular_a=256)


def test_a_triangular_c_names_the_config_and_takes_one_sequence_of_keys():
    """q · kᵀ under a causal softmax: a tile wholly above the diagonal computes nothing; N
    must be the sequence's keys, in one slice of K."""
    plain = gemm_config(512, 256, 64, (128, 128, 64), (8, 1), 3, mma="wgmma", b_layout="col")
    causal = gemm_config(512, 256, 64, (128, 128, 64), (8, 1), 3, mma="wgmma", b_layout="col",
                         triangular_c=256)
    assert repr(causal) == repr(plain)[:-1] + ", triangular_c=256)"
    with pytest.raises(ValueError, match="C's N is the 256 keys of one sequence"):
        gemm_config(512, 256, 64, (128, 128, 64), (8, 1), 3, mma="wgmma", b_layout="col",
                    triangular_c=128)


def test_split_k_need_not_divide_the_k_tiles():
    """Slices differ by one k-tile at most (3 of 128: 42, 43, 43), each at least one k-tile."""
    cfg = gemm_config(16, 5632, 8192, tile=(16, 64, 64), warps=(1, 4), stages=8,
                      b_layout="col", epilogue="swiglu", split_k=3, split_cluster=True)
    assert cfg.grid == (1, 88, 3) and cfg.cluster_dims == (1, 1, 3)
    with pytest.raises(ValueError, match="split_k=11 must be 1 to the 10 k-tiles"):
        gemm_config(16, 256, 640, tile=(16, 64, 64), warps=(1, 4), stages=4, split_k=11)

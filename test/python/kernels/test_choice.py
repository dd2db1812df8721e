"""The wave model's proposals for the warp-specialized GEMM (kernels/choice.py): valid
configs that fill the SMs (widths that are not powers of two where they do), clusters only
where two tile rows can share B, and a predicted time that counts the persistent rounds."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tilesync.kernels.choice import predicted_seconds, propose_tma_configs, stages_for
from tilesync.kernels.config import H100_SMS, MAX_SHARED_PER_BLOCK, tma_ws_config


def test_proposals_are_valid_tma_configs_that_fit_shared_memory():
    for M, N, K, epilogue in [(4096, 4096, 4096, None), (256, 6144, 12288, "gelu"),
                              (512, 5632, 8192, "swiglu"), (16, 8192, 2816, None)]:
        proposals = propose_tma_configs(M, N, K, epilogue=epilogue, limit=3)
        assert proposals
        for cfg in proposals:
            assert cfg.warp_specialized and cfg.epilogue == epilogue
            assert cfg.shared_bytes + cfg.stage_alignment + cfg.static_shared_bytes <= \
                MAX_SHARED_PER_BLOCK


def test_a_width_that_is_not_a_power_of_two_fills_the_sms():
    """GPT-3 FC1 at M = 256: 128 x 96 tiles are 128 tiles on 132 SMs (128 x 128: 96)."""
    (best, *_) = propose_tma_configs(256, 6144, 12288, epilogue="gelu", limit=3,
                                     cluster_limit=0)
    assert best.tile[:2] == (128, 96) and best.tiles == 128
    square = replace(best, tile=(128, 128, 64), stages=stages_for(128, 128, 128))
    assert predicted_seconds(best) < predicted_seconds(square)


def test_clusters_only_where_two_tile_rows_share_b():
    assert all(c.cluster_m == 1 for c in propose_tma_configs(64, 6144, 12288, limit=4))
    proposals = propose_tma_configs(4096, 4096, 4096, limit=2, cluster_limit=2)
    assert [c.cluster_m for c in proposals] == [1, 1, 2, 2]
    # with twins, then the deeper twins of the first two (no clusters)
    proposals = propose_tma_configs(4096, 4096, 4096, limit=2, cluster_limit=2, twins=2)
    assert [c.cluster_m for c in proposals] == [1, 1, 2, 2, 1, 1]
    assert [bool(c.staging_boxes) for c in proposals] == [False] * 4 + [True] * 2


def test_the_tma_store_epilogue_where_the_output_tile_allows_it():
    """Boxes of 64, 32, 16 or 8 columns: every tile width the model proposes (multiples of
    16; SwiGLU's output tiles are half as wide) stores through TMA, with the producer
    warpgroup (its registers go to the consumers) and room for the staging buffer."""
    for cfg in propose_tma_configs(1024, 5632, 8192, epilogue="swiglu", limit=8):
        assert cfg.tma_store and cfg.producer_warps == 4
        assert cfg.staging_box[1] == max(w for w in (8, 16, 32, 64) if cfg.out_tile_cols % w == 0)
        assert cfg.shared_bytes + cfg.stage_alignment <= MAX_SHARED_PER_BLOCK
    direct = tma_ws_config(8192, 8192, 8192, stages=4)
    staged = replace(direct, tma_store=True, producer_warps=4, stages=3)
    assert predicted_seconds(staged) < predicted_seconds(direct)  # the store overlaps
    assert stages_for(128, 256, 256) == 3 and stages_for(128, 192, 96) == 5


def test_a_partial_round_costs_a_whole_round():
    one = tma_ws_config(128 * 132, 256, 4096)  # 132 tiles: one round
    more = tma_ws_config(128 * 133, 256, 4096)  # 133 tiles: two rounds
    assert predicted_seconds(more) > 1.9 * predicted_seconds(one)


def test_stages_fill_shared_memory():
    assert stages_for(128, 256) == 4 and stages_for(128, 128) == 7 and stages_for(64, 64) == 8


def test_a_config_whose_barriers_pass_the_shared_limit_is_refused():
    """64x144 with 8 stages and a TMA-store staging buffer: its dynamic array alone fits, with
    its 16 mbarriers it did not, and the launch failed (kernels bench at fb6fecb); refused at
    construction, and the proposals for that GEMM leave room for the barriers."""
    with pytest.raises(ValueError, match="more than the 232448 a block can have"):
        tma_ws_config(16, 12288, 6144, tile=(64, 144, 64), stages=8, tma_store=True)
    for cfg in propose_tma_configs(16, 12288, 6144, limit=8):
        assert cfg.dynamic_shared_bytes + cfg.static_shared_bytes <= MAX_SHARED_PER_BLOCK


def test_conv_splits_reduce_through_the_workspace_or_in_a_cluster():
    """Each split-K conv candidate comes twice: its slices add into the workspace, or meet in
    a cluster (with the stages that leave room for the tile's f32 buffer)."""
    from tilesync.kernels.choice import conv_candidates

    candidates = conv_candidates(8, 7, 7, 512, 512)
    split = [c for c in candidates if c.split_k > 1]
    in_cluster = [c for c in split if c.split_cluster]
    assert in_cluster and len(in_cluster) * 2 == len(split)
    assert not any(c.split_cluster for c in candidates if c.split_k == 1)
    for cfg in in_cluster:
        assert cfg.gemm.shared_bytes + cfg.gemm.stage_alignment <= MAX_SHARED_PER_BLOCK
    assert not any(c.split_cluster for c in conv_candidates(8, 7, 7, 512, 512,
                                                            sync_hooks=True))


def test_a_smaller_staging_buffer_buys_a_stage():
    """The twin of a TMA-store proposal keeps the most boxes that still free a stage's room:
    a 128 x 256 tile (3 stages beside its 64 KB buffer) stages 2 of its 4 boxes and gets a
    fourth stage; a tile already at the most stages, or without the TMA store, has none."""
    from tilesync.kernels.choice import MAX_STAGES, deeper_twin

    wide = tma_ws_config(512, 8192, 2816, tile=(128, 256, 64), stages=3, tma_store=True,
                         producer_warps=4)
    twin = deeper_twin(wide)
    assert twin is not None and (twin.stages, twin.staging_boxes) == (4, 2)
    assert twin.dynamic_shared_bytes + twin.static_shared_bytes <= MAX_SHARED_PER_BLOCK
    assert deeper_twin(tma_ws_config(512, 8192, 2816, tile=(128, 256, 64), stages=3)) is None
    assert deeper_twin(tma_ws_config(512, 8192, 2816, tile=(64, 64, 64), stages=MAX_STAGES,
                                     tma_store=True)) is None
    assert not any(c.staging_boxes for c in propose_tma_configs(512, 8192, 2816, limit=5))
    proposals = propose_tma_configs(512, 8192, 2816, limit=5, twins=3)
    twins = [c for c in proposals if c.staging_boxes]
    assert twins and all(deeper_twin(replace(c, staging_boxes=0,
                                                         stages=c.stages - 1)) is not None
                         for c in twins)


def test_a_few_rows_stream_the_weights_on_most_sms_without_splitting_k():
    from tilesync.kernels.choice import STREAMING_FILL, STREAMING_ROWS, streaming_config

    # (N, K, width, stages): as many stages as leave every tile resident in one round (192
    # tiles: two blocks an SM), no more than K's k-tiles
    for n, k, width, stages in ((4608, 12288, 48, 8), (12288, 1536, 64, 5),
                                (3072, 8192, 32, 8), (768, 512, 16, 4), (512, 128, 16, 2)):
        cfg = streaming_config(4, n, k, epilogue="bias", sync_hooks=True)
        assert cfg.tile == (16, width, 128) and cfg.warps == (1, width // 16)
        assert cfg.stages == stages
        assert cfg.b_layout == "col" and cfg.split_k == 1 and cfg.sync_hooks
        # the widest whose tiles reach STREAMING_FILL of the SMs (or the narrowest)
        assert width == 16 or cfg.grid[1] >= STREAMING_FILL * H100_SMS
        wider = {16: 32, 32: 48, 48: 64}.get(width)
        assert wider is None or -(-n // wider) < STREAMING_FILL * H100_SMS
    with pytest.raises(ValueError, match="at most 16 rows"):
        streaming_config(STREAMING_ROWS + 1, 4608, 12288)


def test_an_n_major_twin_reads_b_k_by_n_where_the_tile_allows():
    from tilesync.kernels.choice import n_major_twin
    from tilesync.kernels.config import tma_ws_config

    cfg = tma_ws_config(256, 12288, 6144, tile=(128, 192, 64), stages=4)
    twin = n_major_twin(cfg)
    assert twin == replace(cfg, b_layout="row")
    assert twin.tensor_map_boxes["B"] == (64, 64) and n_major_twin(twin) is None
    # B's boxes are 64 columns: a 176-wide tile, a cluster sharing B, an L2 prefetch cannot
    assert n_major_twin(tma_ws_config(256, 5632, 8192, tile=(128, 176, 64), stages=4)) is None
    assert n_major_twin(replace(cfg, cluster_m=2)) is None
    assert n_major_twin(tma_ws_config(256, 12288, 6144, tile=(128, 192, 64), stages=4,
                                      l2_prefetch=2)) is None


def test_the_first_proposals_are_also_proposed_reading_b_k_by_n_with_their_deeper_twins():
    from tilesync.kernels.choice import deeper_twin, n_major_twin

    plain = propose_tma_configs(256, 12288, 6144, limit=5, twins=3)
    both = propose_tma_configs(256, 12288, 6144, limit=5, twins=3, n_major=2)
    extra = both[len(plain):]
    assert both[:len(plain)] == plain
    firsts = [n_major_twin(c) for c in plain[:5] if n_major_twin(c) is not None][:2]
    assert extra == [*firsts, *filter(None, map(deeper_twin, firsts))]
    assert all(c.b_layout == "row" for c in extra) and len(extra) > 2

"""The TMA sweep's shape filter and its N-major twins (no GPU: what it would measure)."""

from tilesync.bench.tma_sweep import candidates, n_major_twins, problems


def test_only_and_ms_pick_the_shapes():
    names = [name for name, _ in problems(False, only=["fc2"], ms=[64, 512])]
    assert names == ["gpt3_fc2 M=64", "llama_fc2 M=64", "gpt3_fc2 M=512", "llama_fc2 M=512"]
    assert [p.M for _, p in problems(False, only=["fc2"], ms=[64, 512])] == [64, 64, 512, 512]


def test_n_major_twins_keep_the_tiles_that_can_read_b_k_by_n():
    (_, problem), = problems(False, only=["llama_fc2 M=256"])
    found = candidates(problem)
    twins = n_major_twins(found)
    assert twins and all(t.b_layout == "row" for t in twins)
    assert all(t.tile[1] % 64 == 0 and t.cluster_m == 1 and not t.l2_prefetch for t in twins)
    # every candidate that can take B K x N has its twin, with nothing else changed
    from dataclasses import replace
    able = [c for c in found if c.tile[1] % 64 == 0 and c.cluster_m == 1 and not c.l2_prefetch]
    assert [replace(t, b_layout="col") for t in twins] == list(dict.fromkeys(able))

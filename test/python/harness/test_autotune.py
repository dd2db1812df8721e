"""The autotuner's bookkeeping (harness/autotune.py), without a GPU: the measured fastest
candidate is chosen and cached on disk under the problem, the architecture, the candidates a
caller gave and the compiler's source digest; a second call measures nothing; a candidate that
fails is reported, and a problem where none runs is an error; the progress bar goes to
stderr."""

from __future__ import annotations

import pytest

from tilesync.harness import autotune
from tilesync.harness.autotune import GemmProblem, choose_gemm, tuning_key
from tilesync.kernels.config import tma_ws_config

PROBLEM = GemmProblem(4096, 4096, 4096)
FAST = tma_ws_config(4096, 4096, 4096)
SLOW = tma_ws_config(4096, 4096, 4096, tile=(128, 128, 64), stages=7)
BROKEN = tma_ws_config(4096, 4096, 4096, cluster_m=2)


def test_the_fastest_candidate_is_chosen_and_remembered(tmp_path, monkeypatch):
    calls = []

    def fake_measure(configs, problem, **_):
        calls.append(list(configs))
        times = {FAST: 0.2, SLOW: 0.3}
        return [(c, times.get(c, "TilesyncRuntimeError: no cluster slot")) for c in configs]

    monkeypatch.setattr(autotune, "measure", fake_measure)
    first = choose_gemm(PROBLEM, [SLOW, BROKEN, FAST], arch="sm_90", cache_dir=tmp_path)
    assert first.config == FAST and first.median_ms == 0.2 and not first.from_cache
    assert [ms for _, ms in first.measured][1].startswith("TilesyncRuntimeError")
    again = choose_gemm(PROBLEM, [SLOW, BROKEN, FAST], arch="sm_90", cache_dir=tmp_path)
    assert again.from_cache and again.config == FAST and len(calls) == 1
    # another architecture or problem is another entry
    choose_gemm(PROBLEM, [SLOW, FAST], arch="sm_90a", cache_dir=tmp_path)
    assert len(calls) == 2


def test_the_key_names_shape_dtype_layout_epilogue_and_arch():
    key = tuning_key(GemmProblem(256, 6144, 12288, "bf16", "gelu"), "sm_90")
    for part in ("256", "6144", "12288", "bf16", "gelu", "col", "sm_90"):
        assert part in key


def test_a_choice_among_given_candidates_is_not_the_default_proposals_choice(tmp_path,
                                                                          monkeypatch):
    calls = []

    def measured(configs, problem, **_):
        calls.append(list(configs))
        return [(c, 0.1 + i) for i, c in enumerate(configs)]

    monkeypatch.setattr(autotune, "measure", measured)
    assert choose_gemm(PROBLEM, [FAST, SLOW], arch="sm_90", cache_dir=tmp_path).config == FAST
    # the default proposals are measured, not answered from the given candidates' entry
    default = choose_gemm(PROBLEM, arch="sm_90", cache_dir=tmp_path)
    assert len(calls) == 2 and not default.from_cache
    assert choose_gemm(PROBLEM, [SLOW, FAST], arch="sm_90", cache_dir=tmp_path).from_cache


def test_no_candidate_that_runs_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setattr(autotune, "measure",
                        lambda configs, problem, **_: [(c, "failed") for c in configs])
    with pytest.raises(RuntimeError, match="no candidate ran"):
        choose_gemm(PROBLEM, [BROKEN], arch="sm_90", cache_dir=tmp_path)


def test_progress_bar(capsys):
    autotune._progress("4096x4096x4096", 3, 6)
    autotune._progress("4096x4096x4096", 6, 6)
    err = capsys.readouterr().err
    assert "[############............] 3/6" in err and err.endswith("6/6\n")


def test_a_conv_takes_every_tile_and_split_of_its_candidates_and_keys_apart(tmp_path,
                                                                            monkeypatch):
    from tilesync.harness.autotune import ConvProblem, choose
    from tilesync.kernels.choice import conv_candidates

    seen = []

    def fake_measure(configs, problem, **_):
        seen.append((problem, list(configs)))
        return [(c, 0.01 * (1 + c.split_k) + 1e-4 * c.tile[1]) for c in configs]

    monkeypatch.setattr(autotune, "measure", fake_measure)
    problem = ConvProblem(8, 14, 14, 256, 256)
    choice = choose(problem, arch="sm_90", cache_dir=tmp_path)
    (measured_problem, configs), = seen
    assert measured_problem == problem and configs == conv_candidates(8, 14, 14, 256, 256)
    copied = [c for c in configs if c.pipeline == "cp_async"]
    assert {c.split_k for c in copied} == {1, 2, 3, 4, 6} and {c.tile[:2] for c in copied} \
        == {(64, 64), (64, 128), (128, 64), (128, 128)}
    assert {c.tile[:2] for c in configs if c.pipeline == "tma_ws"} == \
        {(128, 64), (128, 80), (128, 96), (128, 112), (64, 64), (64, 128)}  # im2col TMA
    assert choice.config.split_k == 1 and choice.config.tile[:2] in ((64, 64), (128, 64))
    assert tuning_key(problem, "sm_90") != tuning_key(ConvProblem(1, 14, 14, 256, 256), "sm_90")
    hooked = conv_candidates(8, 14, 14, 256, 256, sync_hooks=True)
    assert hooked and all(c.split_k == 1 and c.sync_hooks for c in hooked)

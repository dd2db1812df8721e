"""The autotuner's bookkeeping (harness/autotune.py), without a GPU: the measured fastest
candidate is chosen and cached on disk under the problem, the architecture, the candidates a
caller gave and the compiler's source digest; a second call measures nothing; a candidate that
fails is reported, and a problem where none runs is an error; a candidate whose output is
wrong is reported, neither timed nor chosen (the device faked by numpy buffers and runners);
the progress bar goes to stderr."""

from __future__ import annotations

import numpy as np
import pytest

from tilesync.harness import autotune
from tilesync.harness.autotune import GemmProblem, Measured, choose_gemm, tuning_key
from tilesync.kernels.config import tma_ws_config
from tilesync.kernels.reference import reference_gemm

PROBLEM = GemmProblem(4096, 4096, 4096)
FAST = tma_ws_config(4096, 4096, 4096)
SLOW = tma_ws_config(4096, 4096, 4096, tile=(128, 128, 64), stages=7)
BROKEN = tma_ws_config(4096, 4096, 4096, cluster_m=2)


def test_the_fastest_candidate_is_chosen_and_remembered(tmp_path, monkeypatch):
    calls = []

    def fake_measure(configs, problem, **_):
        calls.append(list(configs))
        times = {FAST: 0.2, SLOW: 0.3}
        return [Measured(c, times.get(c, "TilesyncRuntimeError: no cluster slot"))
                for c in configs]

    monkeypatch.setattr(autotune, "measure", fake_measure)
    first = choose_gemm(PROBLEM, [SLOW, BROKEN, FAST], arch="sm_90", cache_dir=tmp_path)
    assert first.config == FAST and first.median_ms == 0.2 and not first.from_cache
    assert first.measured[1].outcome.startswith("TilesyncRuntimeError")
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
        return [Measured(c, 0.1 + i) for i, c in enumerate(configs)]

    monkeypatch.setattr(autotune, "measure", measured)
    assert choose_gemm(PROBLEM, [FAST, SLOW], arch="sm_90", cache_dir=tmp_path).config == FAST
    # the default proposals are measured, not answered from the given candidates' entry
    default = choose_gemm(PROBLEM, arch="sm_90", cache_dir=tmp_path)
    assert len(calls) == 2 and not default.from_cache
    assert choose_gemm(PROBLEM, [SLOW, FAST], arch="sm_90", cache_dir=tmp_path).from_cache


def test_no_candidate_that_runs_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setattr(autotune, "measure",
                        lambda configs, problem, **_: [Measured(c, "failed") for c in configs])
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
        return [Measured(c, 0.01 * (1 + c.split_k) + 1e-4 * c.tile[1]) for c in configs]

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


# -- the check of each candidate's output, on a device of numpy buffers ---------------------

SMALL = GemmProblem(96, 64, 48, epilogue="gelu")
RIGHT = tma_ws_config(96, 64, 48, tile=(64, 64, 64), epilogue="gelu")
RIGHT_KXN = tma_ws_config(96, 64, 48, tile=(64, 64, 64), epilogue="gelu", b_layout="row")
WRONG = tma_ws_config(96, 64, 48, tile=(128, 64, 64), epilogue="gelu")  # fastest, and wrong
IDLE = tma_ws_config(96, 64, 48, tile=(64, 64, 64), stages=3, epilogue="gelu")  # writes nothing
TIMES = {RIGHT: 0.3, RIGHT_KXN: 0.25, WRONG: 0.1, IDLE: 0.05}


class _HostBuffer:
    """A DeviceBuffer kept in host memory."""

    def __init__(self, array):
        self.array = array

    @classmethod
    def from_numpy(cls, array):
        return cls(np.array(array))

    @classmethod
    def empty(cls, shape, dtype=np.float32):
        return cls(np.empty(shape, dtype))

    def fill_bytes(self, value):
        self.array.view(np.uint8)[...] = value

    def to_numpy(self):
        return self.array.copy()


class _HostRunner:
    """The GEMM of its config on the host: right (RIGHT, RIGHT_KXN), off by a tenth (WRONG), or
    not written at all (IDLE)."""

    launched: list = []

    def __init__(self, cfg, ptx=None):
        self.cfg = cfg

    def launch(self, a, b, c, bias=None):
        from tilesync.kernels.reference import host_array, host_values

        cfg = self.cfg
        self.launched.append(cfg)
        if cfg == IDLE:
            return
        b_values = host_values(b.array, cfg.dtype)
        b_values = b_values.reshape((cfg.K, cfg.N) if cfg.b_layout == "row" else (cfg.N, cfg.K))
        out = reference_gemm(cfg, host_values(a.array, cfg.dtype), b_values)
        c.array[...] = host_array(out * (1.1 if cfg == WRONG else 1.0), cfg.dtype)


@pytest.fixture
def host_device(monkeypatch):
    import importlib
    import types

    from tilesync.harness import runner
    from tilesync.runtime import buffers, device, timing

    launch = importlib.import_module("tilesync.runtime.launch")

    monkeypatch.setattr(device, "get_device", lambda: types.SimpleNamespace(
        arch="sm_90", l2_cache_bytes=1 << 10))
    monkeypatch.setattr(buffers, "DeviceBuffer", _HostBuffer)
    monkeypatch.setattr(runner, "GemmRunner", _HostRunner)
    monkeypatch.setattr(launch, "synchronize", lambda stream=None: None)
    monkeypatch.setattr(autotune, "_torch_on_gpu", lambda: None)  # references on the host
    timed = []

    def time_region(step, **_):
        step()
        timed.append(_HostRunner.launched[-1])
        return timing.Timing.from_samples([TIMES[timed[-1]]], 0)

    monkeypatch.setattr(timing, "time_region", time_region)
    return timed


def test_a_candidate_whose_output_is_wrong_is_neither_timed_nor_chosen(host_device, tmp_path):
    candidates = [RIGHT, WRONG, IDLE, RIGHT_KXN]
    choice = choose_gemm(SMALL, candidates, arch="sm_90", cache_dir=tmp_path,
                         ptx=["ptx"] * len(candidates))
    # the two faster ones are wrong: the fastest right one (reading B's bytes K x N) is chosen
    assert choice.config == RIGHT_KXN and choice.median_ms == 0.25
    assert choice.checked and choice.rel_error < autotune.TOLERANCE["f16"]
    assert host_device == [RIGHT, RIGHT_KXN]  # only the right ones were timed
    outcome = {m.config: m for m in choice.measured}
    assert outcome[WRONG].outcome.startswith("wrong output") and "tolerance 0.003" in \
        outcome[WRONG].outcome and outcome[WRONG].rel_error == pytest.approx(0.1, rel=0.05)
    assert outcome[IDLE].outcome.startswith("wrong output") and outcome[IDLE].rel_error == \
        float("inf")  # never written: the poison is still there
    # the cached choice says it was checked, and is not measured again
    again = choose_gemm(SMALL, candidates, arch="sm_90", cache_dir=tmp_path,
                        ptx=["ptx"] * len(candidates))
    assert again.from_cache and again.checked and again.config == RIGHT_KXN
    assert again.rel_error == choice.rel_error and len(host_device) == 2


def test_a_choice_cached_before_the_check_is_measured_again(host_device, tmp_path):
    from tilesync.harness.compile_cache import CompileCache

    key = tuning_key(SMALL, "sm_90", [WRONG, RIGHT])
    CompileCache(tmp_path, "autotune").store(key, (WRONG, 0.1, [(WRONG, 0.1), (RIGHT, 0.3)]))
    choice = choose_gemm(SMALL, [WRONG, RIGHT], arch="sm_90", cache_dir=tmp_path,
                         ptx=["ptx", "ptx"])
    assert not choice.from_cache and choice.config == RIGHT and choice.checked


def test_the_references_read_b_as_the_kernel_does_and_a_nan_is_infinitely_wrong():
    import torch

    rng = np.random.default_rng(0)
    a = rng.standard_normal((96, 48)).astype(np.float32)
    b = rng.standard_normal((48 * 64,)).astype(np.float32)  # B's bytes, read either way
    for cfg in (RIGHT, RIGHT_KXN):
        on_host = reference_gemm(cfg, a, b)
        with autotune.exact_fp32(torch):
            on_torch = reference_gemm(cfg, torch.from_numpy(a), torch.from_numpy(b))
        assert on_torch.dtype == torch.float32
        assert np.allclose(on_torch.numpy(), on_host, rtol=1e-4, atol=1e-4)
    assert not np.allclose(reference_gemm(RIGHT, a, b),
                           reference_gemm(RIGHT_KXN, a, b))
    got = torch.from_numpy(reference_gemm(RIGHT, a, b)).half()
    ref = torch.from_numpy(reference_gemm(RIGHT, a, b))
    assert 0 < autotune.relative_error(got, ref) < autotune.TOLERANCE["f16"]
    got[3, 5] = float("nan")
    assert autotune.relative_error(got, ref) == float("inf")
    assert autotune.relative_error(got.numpy(), ref.numpy()) == float("inf")
    with pytest.raises(autotune.WrongOutput, match="ours: wrong output"):
        autotune.checked_error("ours", 0.5, 1e-2)

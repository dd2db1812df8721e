"""What bench conv and bench attention share (bench/stage_bench.py), without a GPU: the modes of
a row and the library's paths (under their prefixes) timed together (a failure recorded, a CUDA
error ends the GPU work), the table's columns, a mode refused unless every stage is proved, and
the precompile summary."""

from __future__ import annotations

import pytest

from tilesync.bench import attention, mlp, stage_bench
from tilesync.runtime.errors import TilesyncRuntimeError

TIMING = {"median_ms": 0.02, "p10_ms": 0.019, "p90_ms": 0.021, "rel_error": 1e-3}


def test_modes_and_library_paths_are_timed_together(monkeypatch):
    """time_modes: each mode's form (`prepare`) and each library path's (mlp.torch_forms, under
    its prefix) timed in one mlp.time_forms call; a compile error, a mode that cannot be
    prepared and a library whose forms cannot be made are recorded, the others timed and
    completed by their finishers."""
    timed_together = []

    def time_forms(forms, warmup, reps):
        timed_together.append(sorted(forms))
        return {name: {"error": "AssertionError: wrong"} if name == "e" else
                dict(TIMING) for name in forms}

    def torch_forms(data, library, name=""):
        if library == "broken":
            raise RuntimeError("no kernel")
        return ({"torch_eager": library + " eager", "torch_graph": library + " graph"}
                if library != "eager only" else {"torch_eager": "eager"},
                {} if library != "eager only" else {"torch_graph": {"error": "capture"}})

    monkeypatch.setattr(mlp, "time_forms", time_forms)
    monkeypatch.setattr(mlp, "torch_forms", torch_forms)
    row = {"modes": {}}
    entries = {"a": {"error": "compile: boom"}, "b": {"host": ""}, "c": {"host": ""},
               "e": {"host": ""}}
    finished = []

    def prepare(entry, name):
        if name.endswith(" c"):
            raise AssertionError(f"{name}: sync-verify did not prove every stage")
        return name, lambda record: finished.append(name)

    lost = stage_bench.time_modes(row, list(entries), entries, prepare, "T=8", None, 1, 2,
                                  {"torch": "chain", "torch_sdpa": "eager only",
                                   "other": "broken"})
    assert lost is None
    assert timed_together == [sorted(["b", "e", "torch_eager", "torch_graph",
                                      "torch_sdpa_eager"])]
    assert row["modes"]["a"] == {"error": "compile: boom"} and row["modes"]["b"] == TIMING
    assert "did not prove" in row["modes"]["c"]["error"]
    assert row["modes"]["torch_sdpa_graph"] == {"error": "capture"}
    assert row["modes"]["other_eager"] == {"error": "RuntimeError: no kernel"}
    assert finished == ["T=8 b"]  # e failed its checks: nothing to complete
    assert list(row["modes"])[:4] == ["a", "b", "c", "e"]


def test_a_cuda_error_ends_the_gpu_work(monkeypatch):
    def time_forms(forms, warmup, reps):
        raise TilesyncRuntimeError("CUDA_ERROR_ILLEGAL_ADDRESS")

    monkeypatch.setattr(mlp, "time_forms", time_forms)
    row = {"modes": {}}
    entries = {"a": {"error": "compile: boom"}, "b": {"host": ""}}
    lost = stage_bench.time_modes(row, list(entries), entries,
                                  lambda entry, name: (name, lambda record: None), "T=8")
    assert lost is not None and "T=8" in lost and "ILLEGAL_ADDRESS" in lost
    assert row["modes"] == {"a": {"error": "compile: boom"}}


def test_the_table_gives_each_reference_its_column():
    """attention's: vs lib (the fastest of torch's forms, here SDPA in a graph) and vs graph
    (the chain as written in a graph)."""
    modes = {"stream_sync": {**TIMING, "median_ms": 0.03}, "row+pdl": {**TIMING, "policy": "x"},
             "torch_graph": {**TIMING, "median_ms": 0.01},
             "torch_sdpa_graph": {**TIMING, "median_ms": 0.008}, "tile+pdl": {"error": "e"}}
    row = {"shape": "T=512 C=128", "floor_ms": 0.005, "flops": 10**9, "modes": modes,
           "speedup": mlp.speedups(modes)}
    result = {"library": "torch", "reps": 3, "warmup": 1, "sms": 132, "programs_compiled": 2,
              "compile_seconds": 1.0, "programs_cached": 0, "verify": "proved", "seconds": 2.0,
              "rates": {"peak_tflops": 700.0, "copy_gbps": 3000.0}, "rows": [row]}
    table = attention.attention_table(result)
    (line,) = [ln for ln in table.splitlines() if " row+pdl " in ln]
    speedup, vs_lib, vs_graph, per_floor, tflops = line.split()[3:8]
    assert (float(speedup), float(vs_lib), float(vs_graph), float(per_floor)) == \
        (1.5, 0.4, 0.5, 4.0)
    assert float(tflops) == pytest.approx(50.0)  # 1 GFLOP in 20 us
    assert "tile+pdl           FAILED: e" in table


def test_a_mode_runs_only_when_every_stage_is_proved():
    host = ('builtin.module {\n  sync.stage @a {sync.verified = "proved", kernel = @m::@a, '
            'grid = array<i64: 1, 1>, block = array<i64: 32, 1, 1>, tile = array<i64: 8, 8>}\n'
            '  sync.stage @b {kernel = @m::@b, grid = array<i64: 1, 1>, '
            'block = array<i64: 32, 1, 1>, tile = array<i64: 8, 8>}\n}')
    assert stage_bench.verdicts(host) == {"a": "proved"}
    with pytest.raises(AssertionError, match="did not prove every stage"):
        stage_bench.proved_form({"host": host}, None, {}, "x", ("a", "b"))


def test_precompile_says_what_failed():
    class Cache:
        hits = 1

    def compile_jobs(jobs, target, processes, cache):
        return {job: ({"error": "boom"} if job == "bad" else {}) for job in jobs}

    summary = stage_bench.precompile(["ok", "cached", "bad"], compile_jobs, Cache())
    assert summary["programs"] == 3 and summary["compiled"] == 2
    assert summary["failed"] == {"bad": "boom"}
